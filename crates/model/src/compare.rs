//! Comparing runs: each run's `metrics` set against the first run's, as a ratio of per-interval
//! medians with a bootstrap confidence interval, and a verdict that counts a change only when it
//! is both significant (the interval excludes 1) and beyond a noise threshold, as criterion
//! does. Randomness is a seeded generator passed in, so a comparison is reproducible.

use std::collections::BTreeMap;

use crate::diagnosis::FindingCode;
use crate::kind::Kind;
use crate::metrics::{Better, Metric};
use crate::report::Report;

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Changes smaller than this fraction are noise (0.01 = 1 %).
    pub noise: f64,
    /// Confidence level of the interval (0.95).
    pub confidence: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of the resampling generator.
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self { noise: 0.01, confidence: 0.95, resamples: 2000, seed: 0x5eed_cafe }
    }
}

/// Fewest samples on each side for a confidence interval.
pub const MIN_SAMPLES: usize = 3;

/// What a comparison says about one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Beyond the noise, in the good direction.
    Better,
    /// Beyond the noise, in the bad direction.
    Worse,
    /// The interval includes no change, or the change is under the noise threshold.
    NoChange,
    /// Too few samples (or a zero baseline) to say.
    Unknown,
}

impl Verdict {
    /// The word printed for it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoChange => "within noise",
            Verdict::Unknown => "too few samples",
        }
    }
}

/// One figure of one run against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricChange {
    /// The figure in this run.
    pub metric: Metric,
    /// The baseline's figure (summary value).
    pub base_value: f64,
    /// Median of this run's samples over the baseline's (or the summary ratio without samples).
    pub ratio: f64,
    /// Confidence interval of `ratio`, when both sides have [`MIN_SAMPLES`].
    pub interval: Option<(f64, f64)>,
    /// What it means.
    pub verdict: Verdict,
}

impl MetricChange {
    /// Half the interval's width: the `±` printed after the ratio.
    pub fn plus_minus(&self) -> Option<f64> {
        self.interval.map(|(lo, hi)| (hi - lo) / 2.0)
    }
}

/// A field whose value differs between the runs' specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecDifference {
    /// Dotted path into the spec (`parallel`, `rate`, `headers.0`).
    pub field: String,
    /// Each run's value, as JSON text (`-` when absent).
    pub values: Vec<String>,
}

/// Runs side by side: the first is the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The baseline's figures.
    pub baseline: Vec<Metric>,
    /// For each later run, its figures against the baseline's (same order).
    pub others: Vec<Vec<MetricChange>>,
    /// Where the runs were not asked the same thing.
    pub spec_differences: Vec<SpecDifference>,
    /// Each run's limits of the tester (the codes of its diagnosis' findings), when the runs'
    /// differ; empty when every run found the same (or none).
    pub diagnosis_differences: Vec<Vec<FindingCode>>,
}

/// Why runs cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// Fewer than two runs.
    #[error("compare needs at least two runs")]
    TooFew,
    /// Different test kinds.
    #[error("cannot compare a {0} run with a {1} run")]
    Kinds(Kind, Kind),
}

/// Compares `runs[1..]` with `runs[0]`.
pub fn compare(runs: &[&Report], options: &CompareOptions) -> Result<Comparison, CompareError> {
    let (base, rest) = runs.split_first().ok_or(CompareError::TooFew)?;
    if rest.is_empty() {
        return Err(CompareError::TooFew);
    }
    if let Some(other) = rest.iter().find(|r| r.kind() != base.kind()) {
        return Err(CompareError::Kinds(base.kind(), other.kind()));
    }
    let baseline = base.metrics();
    let mut rng = SplitMix(options.seed);
    let others = rest
        .iter()
        .map(|run| {
            let mine = run.metrics();
            mine.into_iter()
                .filter_map(|m| {
                    let b = baseline.iter().find(|b| b.key == m.key)?;
                    Some(change(b, m, options, &mut rng))
                })
                .collect()
        })
        .collect();
    Ok(Comparison {
        baseline,
        others,
        spec_differences: spec_differences(runs),
        diagnosis_differences: crate::diagnosis::differences(
            &runs.iter().map(|r| r.meta.diagnosis.as_ref()).collect::<Vec<_>>(),
        ),
    })
}

/// One figure against its baseline.
fn change(
    base: &Metric,
    metric: Metric,
    options: &CompareOptions,
    rng: &mut SplitMix,
) -> MetricChange {
    let sampled = !base.samples.is_empty() && !metric.samples.is_empty();
    let (a, b) = if sampled {
        (median(&base.samples), median(&metric.samples))
    } else {
        (base.value, metric.value)
    };
    let ratio = ratio_of(b, a);
    let interval = (base.samples.len() >= MIN_SAMPLES
        && metric.samples.len() >= MIN_SAMPLES
        && ratio.is_finite())
    .then(|| bootstrap(&base.samples, &metric.samples, options, rng))
    .flatten();
    let verdict = match interval {
        _ if !ratio.is_finite() => Verdict::Unknown,
        None => Verdict::Unknown,
        Some((lo, hi)) => {
            let significant = lo > 1.0 || hi < 1.0;
            if !significant || (ratio - 1.0).abs() <= options.noise {
                Verdict::NoChange
            } else if (ratio > 1.0) == (metric.better == Better::Higher) {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
    };
    MetricChange { base_value: base.value, ratio, interval, verdict, metric }
}

/// `b / a`, with 0/0 as no change and x/0 as infinite.
fn ratio_of(b: f64, a: f64) -> f64 {
    if a == 0.0 && b == 0.0 {
        1.0
    } else if a == 0.0 {
        f64::INFINITY
    } else {
        b / a
    }
}

/// The percentile interval of median(B*)/median(A*) over resamples of each side.
fn bootstrap(
    a: &[f64],
    b: &[f64],
    options: &CompareOptions,
    rng: &mut SplitMix,
) -> Option<(f64, f64)> {
    let mut ratios = Vec::with_capacity(options.resamples);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..options.resamples {
        for x in ra.iter_mut() {
            *x = a[rng.below(a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.below(b.len())];
        }
        let r = ratio_of(median(&rb), median(&ra));
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.len() < options.resamples / 2 {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - options.confidence) / 2.0;
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    Some((at(tail), at(1.0 - tail)))
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// A report's spec as `dotted.path → JSON value` pairs (absent options left out).
pub fn flat_spec(report: &Report) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(serde_json::Value::Object(mut doc)) = serde_json::to_value(report) {
        if let Some(spec) = doc.remove("spec") {
            flatten("", &spec, &mut out);
        }
    }
    out
}

/// Fields whose values differ across the runs' specs.
pub fn spec_differences(runs: &[&Report]) -> Vec<SpecDifference> {
    let flat: Vec<BTreeMap<String, String>> = runs.iter().map(|r| flat_spec(r)).collect();
    let mut fields: Vec<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter_map(|f| {
            let values: Vec<String> =
                flat.iter().map(|m| m.get(f).cloned().unwrap_or_else(|| "-".into())).collect();
            values
                .iter()
                .any(|v| *v != values[0])
                .then(|| SpecDifference { field: f.clone(), values })
        })
        .collect()
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    let join = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&join(k), v, out)),
        serde_json::Value::Array(a) if !a.is_empty() && a.iter().all(|x| x.is_object()) => {
            a.iter().enumerate().for_each(|(i, v)| flatten(&join(&i.to_string()), v, out))
        }
        serde_json::Value::Null => {}
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// A tiny seeded generator (SplitMix64): enough for resampling, and reproducible.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Unit;

    fn m(samples: &[f64], better: Better) -> Metric {
        Metric {
            key: "x",
            label: "X",
            unit: Unit::BitsPerSecond,
            better,
            value: median(samples),
            samples: samples.to_vec(),
        }
    }

    /// Samples around `centre` with a fixed ±2 % spread.
    fn around(centre: f64, n: usize) -> Vec<f64> {
        (0..n).map(|i| centre * (1.0 + 0.02 * ((i % 5) as f64 - 2.0) / 2.0)).collect()
    }

    fn judge(a: &[f64], b: &[f64], better: Better) -> MetricChange {
        change(&m(a, better), m(b, better), &CompareOptions::default(), &mut SplitMix(1))
    }

    #[test]
    fn a_clear_gain_is_better_and_its_interval_holds_the_true_ratio() {
        let c = judge(&around(100.0, 20), &around(132.0, 20), Better::Higher);
        assert_eq!(c.verdict, Verdict::Better);
        assert!((c.ratio - 1.32).abs() < 0.01, "{}", c.ratio);
        let (lo, hi) = c.interval.unwrap();
        assert!(lo <= 1.32 && 1.32 <= hi && hi - lo < 0.1, "{lo} {hi}");
    }

    #[test]
    fn the_same_gain_in_latency_is_worse() {
        assert_eq!(
            judge(&around(100.0, 20), &around(132.0, 20), Better::Lower).verdict,
            Verdict::Worse
        );
    }

    #[test]
    fn equal_runs_are_within_noise() {
        let c = judge(&around(100.0, 20), &around(100.0, 20), Better::Higher);
        assert_eq!(c.verdict, Verdict::NoChange);
        assert!((c.ratio - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_significant_change_under_the_noise_threshold_is_noise() {
        // Every sample 0.5 % higher: significant, but under the 1 % threshold.
        let a = vec![100.0; 20];
        let b = vec![100.5; 20];
        let c = judge(&a, &b, Better::Higher);
        assert_eq!(c.interval, Some((1.005, 1.005)));
        assert_eq!(c.verdict, Verdict::NoChange);
    }

    #[test]
    fn noisy_runs_with_a_small_shift_are_not_called() {
        let a: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 50.0 } else { 150.0 }).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        assert_eq!(judge(&a, &b, Better::Higher).verdict, Verdict::NoChange);
    }

    #[test]
    fn too_few_samples_give_a_ratio_but_no_verdict() {
        let c = judge(&[100.0, 101.0], &[150.0, 151.0], Better::Higher);
        assert_eq!(c.verdict, Verdict::Unknown);
        assert!(c.interval.is_none());
        assert!((c.ratio - 1.4950).abs() < 0.01);
    }

    #[test]
    fn zero_baselines() {
        assert_eq!(judge(&[0.0; 5], &[0.0; 5], Better::Lower).verdict, Verdict::NoChange);
        let c = judge(&[0.0; 5], &[1.0; 5], Better::Lower);
        assert!(c.ratio.is_infinite());
        assert_eq!(c.verdict, Verdict::Unknown);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn the_generator_is_uniform_enough_and_seeded() {
        let mut r = SplitMix(7);
        let mut counts = [0u32; 4];
        for _ in 0..4000 {
            counts[r.below(4)] += 1;
        }
        assert!(counts.iter().all(|&c| (900..1100).contains(&c)), "{counts:?}");
        assert_eq!(SplitMix(7).next_u64(), SplitMix(7).next_u64());
    }
}
