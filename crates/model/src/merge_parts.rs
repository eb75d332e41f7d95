//! What a kind's merge is made of ([`crate::merge`] merges the members' reports of one run):
//! each kind implements [`MergeRuns`] with these helpers — its members' reports as [`Part`]s,
//! the histograms summed by name and by interval, the merged intervals, rates over summed
//! counts — and says what its report counts ([`Samples`]) so a member whose counts its
//! histograms cannot hold is refused. This module knows no kind, so the kinds and the merge's
//! dispatcher do not import each other.

use std::collections::BTreeMap;

use crate::histogram::{EncodedHistograms, HistogramError, LatencyStats, RttHistogram};

/// What a kind does to merge its members' reports into the run's: one impl per kind
/// (`crate::kinds`), asked by [`crate::merge::merge`] through one line per kind. A kind that
/// measures a path rather than making load keeps the defaults: it counts nothing to check,
/// and has no merge.
pub(crate) trait MergeRuns: Sized {
    /// The kind's spec: the whole run's, which the merged report carries.
    type Spec;

    /// What this report counts, to check against the histograms its member kept; `None` for a
    /// kind that keeps none. The merge keeps the sums of a kind's histograms when it has some.
    fn samples(&self) -> Option<Samples> {
        None
    }

    /// The run's report from its members' (in index order); `Ok(None)` for a kind that has no
    /// merge.
    fn merge(parts: &[Part<'_, Self>], spec: &Self::Spec) -> Result<Option<Self>, HistogramError> {
        let _ = (parts, spec);
        Ok(None)
    }
}

/// One member's report as a kind's merge sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part<'a, R> {
    /// The kind's report.
    pub report: &'a R,
    /// Its histograms (for the kinds that keep them).
    pub histograms: &'a EncodedHistograms,
}

/// What a member's report counts, to check against the histograms it kept: each interval's
/// span, whether it was the warm-up, and the samples it counts; the summary's duration and
/// samples. Each kind that keeps histograms says this of its report.
#[derive(Debug, Clone, Default)]
pub(crate) struct Samples {
    /// `(start_ns, end_ns, warm-up, samples)` of each interval.
    pub intervals: Vec<(u64, u64, bool, u64)>,
    /// The summary's measured time.
    pub duration_ns: u64,
    /// The summary's samples.
    pub count: u64,
}

/// Whether a member's `samples` add up with its `histograms`: an interval histogram for each
/// interval holding that interval's samples, a total holding the summary's, and a duration
/// its measured intervals cover. An edited `received` merged to "1003001 round trips" over
/// histograms holding 6004 samples; a member without interval histograms showed one member's
/// rate under a two-member summary; a duration ×1000 merged to "2/s".
pub(crate) fn check_samples(
    samples: &Samples,
    histograms: &EncodedHistograms,
) -> Result<(), String> {
    // A sample taken as an interval closes can land in one interval's count and the next one's
    // histogram (the two are read a moment apart, thread by thread): a few either way, and a
    // hundredth for the busiest, is a boundary, not an edit.
    let agree = |count: u64, held: u64| count.abs_diff(held) <= held.max(count) / 100 + 8;
    let (ivs, kept) = (&samples.intervals, &histograms.intervals);
    if kept.len() != ivs.len() {
        return Err(format!(
            "it has {} intervals but keeps {} interval histograms",
            ivs.len(),
            kept.len()
        ));
    }
    for (k, ((_, _, _, count), text)) in ivs.iter().zip(kept).enumerate() {
        let held = RttHistogram::decode(text).map_err(|e| e.to_string())?.len();
        if !agree(*count, held) {
            return Err(format!("interval {k} counts {count} samples, its histogram holds {held}"));
        }
    }
    let total = histograms.get("total").map_err(|e| e.to_string())?.map_or(0, |h| h.len());
    if !agree(samples.count, total) {
        return Err(format!(
            "its summary counts {} samples, its histograms hold {total}",
            samples.count
        ));
    }
    let measured: Vec<_> = ivs.iter().filter(|iv| !iv.2).collect();
    if let (Some(first), Some(last)) = (measured.first(), measured.last()) {
        let span = last.1.saturating_sub(first.0);
        let slack = (span / 10).max(500_000_000);
        if samples.duration_ns.abs_diff(span) > slack {
            return Err(format!(
                "its summary says it measured {:.3} s, its intervals cover {:.3} s",
                samples.duration_ns as f64 / 1e9,
                span as f64 / 1e9
            ));
        }
    }
    Ok(())
}

/// The sum of every part's histogram `name`; `None` when no part kept one.
pub(crate) fn sum_named<R>(
    parts: &[Part<'_, R>],
    name: &str,
) -> Result<Option<RttHistogram>, HistogramError> {
    let mut sum: Option<RttHistogram> = None;
    for p in parts {
        if let Some(h) = p.histograms.get(name)? {
            sum.get_or_insert_with(RttHistogram::default).add(&h);
        }
    }
    Ok(sum)
}

/// The sum of every part's interval `k` histogram.
pub(crate) fn sum_interval<R>(
    parts: &[Part<'_, R>],
    k: usize,
) -> Result<RttHistogram, HistogramError> {
    let mut sum = RttHistogram::default();
    for p in parts {
        if let Some(text) = p.histograms.intervals.get(k) {
            sum.add(&RttHistogram::decode(text)?);
        }
    }
    Ok(sum)
}

/// The merged run's intervals: for every index any member reached, `make` is given that
/// interval of the first member that has it (its span and flags), every member's interval of
/// that index, and the index.
pub(crate) fn each_interval<R, I, T, E>(
    parts: &[Part<'_, R>],
    intervals_of: fn(&R) -> &[I],
    mut make: impl FnMut(&I, &[&I], usize) -> Result<T, E>,
) -> Result<Vec<T>, E> {
    let count = parts.iter().map(|p| intervals_of(p.report).len()).max().unwrap_or(0);
    (0..count)
        .map(|k| {
            let of_k: Vec<&I> =
                parts.iter().filter_map(|p| intervals_of(p.report).get(k)).collect();
            // k is below the longest member's count, so one member at least has it.
            make(of_k[0], &of_k, k)
        })
        .collect()
}

/// Statistics of a summed histogram (empty when there is none).
pub(crate) fn stats_of(h: &Option<RttHistogram>) -> LatencyStats {
    h.as_ref().map(RttHistogram::stats).unwrap_or_default()
}

/// `count` per second over `ns`.
pub(crate) fn per_second(count: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / ns as f64
    }
}

/// Adds `more` into `into`, key by key.
pub(crate) fn add_counts(into: &mut BTreeMap<String, u64>, more: &BTreeMap<String, u64>) {
    for (k, v) in more {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// The merged histograms to keep in a merged report: the sums of every name and interval.
pub(crate) fn merged_histograms<R>(
    parts: &[Part<'_, R>],
    intervals: usize,
) -> Result<EncodedHistograms, HistogramError> {
    let mut out = EncodedHistograms::new();
    let names: std::collections::BTreeSet<&String> =
        parts.iter().flat_map(|p| p.histograms.named.keys()).collect();
    for name in names {
        if let Some(h) = sum_named(parts, name)? {
            out.keep(name, &h);
        }
    }
    for k in 0..intervals {
        out.intervals.push(sum_interval(parts, k)?.encode());
    }
    Ok(out)
}
