//! How a comparison is printed: a warning for every spec field that differs and for runs
//! whose tester was limited differently, then one row per
//! figure and run with the median, the ratio to the baseline with its `±` (half the confidence
//! interval) and the verdict, then one hyperfine-style sentence for the headline figure.

use serde_json::{json, Value};
use wirespeed_model::compare::{median, Comparison, MetricChange};
use wirespeed_model::metrics::{Better, Metric};

use crate::table::Table;
use crate::units::figure;

fn centre(m: &Metric) -> f64 {
    if m.samples.is_empty() {
        m.value
    } else {
        median(&m.samples)
    }
}

/// `1.32 ± 0.04`, or just the ratio without an interval.
pub fn ratio_text(c: &MetricChange) -> String {
    if !c.ratio.is_finite() {
        return "-".into();
    }
    match c.plus_minus() {
        Some(pm) => format!("{:.2} ± {:.2}", c.ratio, pm),
        None => format!("{:.2}", c.ratio),
    }
}

/// Warnings about what differs between the runs' specs, one line each.
pub fn spec_warnings(cmp: &Comparison) -> Vec<String> {
    cmp.spec_differences
        .iter()
        .map(|d| {
            let values: Vec<&str> = d.values.iter().map(|v| v.trim_matches('"')).collect();
            format!("{}: {}", d.field, values.join(" → "))
        })
        .collect()
}

/// Warnings about runs whose diagnoses name different limits of the tester, one line per
/// run (`#12: saturated_core, cpu_wait`), or none when they agree.
pub fn diagnosis_warnings(cmp: &Comparison, labels: &[String]) -> Vec<String> {
    cmp.diagnosis_differences
        .iter()
        .zip(labels)
        .map(|(codes, label)| {
            let names: Vec<&str> = codes.iter().map(|c| c.name()).collect();
            let said = if names.is_empty() { "no limit".into() } else { names.join(", ") };
            format!("{label}: {said}")
        })
        .collect()
}

/// What the diagnosis warnings are headed with (after `warning:`).
pub const DIAGNOSIS_HEADING: &str =
    "the tester was limited differently in these runs, so they may \
     measure different things (`wirespeed show` says how):";

/// The comparison table: a row per figure and run.
pub fn table(cmp: &Comparison, labels: &[String]) -> Table {
    let mut t = Table::new(&["Figure", "Run", ">Median", ">Ratio", "Verdict"]);
    for base in &cmp.baseline {
        let better = match base.better {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        };
        t.push(vec![
            format!("{} ({better})", base.label),
            labels[0].clone(),
            figure(centre(base), base.unit),
            "1.00".into(),
            "baseline".into(),
        ]);
        for (i, other) in cmp.others.iter().enumerate() {
            if let Some(c) = other.iter().find(|c| c.metric.key == base.key) {
                t.push(vec![
                    String::new(),
                    labels[i + 1].clone(),
                    figure(centre(&c.metric), c.metric.unit),
                    ratio_text(c),
                    c.verdict.word().into(),
                ]);
            }
        }
    }
    t
}

/// One sentence per later run about the headline figure:
/// `#12 is 1.32 ± 0.04 times #11 in Throughput: better.`
pub fn verdicts(cmp: &Comparison, labels: &[String]) -> Vec<String> {
    let Some(head) = cmp.baseline.first() else { return Vec::new() };
    cmp.others
        .iter()
        .enumerate()
        .filter_map(|(i, other)| {
            let c = other.iter().find(|c| c.metric.key == head.key)?;
            Some(format!(
                "{} is {} times {} in {}: {}.",
                labels[i + 1],
                ratio_text(c),
                labels[0],
                head.label,
                c.verdict.word()
            ))
        })
        .collect()
}

/// The whole comparison as plain text.
pub fn text(cmp: &Comparison, labels: &[String], kind: &str) -> String {
    let mut out = format!("Comparing {} {kind} runs; baseline {}.\n", labels.len(), labels[0]);
    let warnings = spec_warnings(cmp);
    if !warnings.is_empty() {
        out.push_str("warning: the runs were not asked the same thing:\n");
        for w in &warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    let limits = diagnosis_warnings(cmp, labels);
    if !limits.is_empty() {
        out.push_str(&format!("warning: {DIAGNOSIS_HEADING}\n"));
        for w in &limits {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out.push('\n');
    out.push_str(&table(cmp, labels).text());
    out.push('\n');
    for v in verdicts(cmp, labels) {
        out.push_str(&v);
        out.push('\n');
    }
    out
}

/// The comparison as Markdown.
pub fn markdown(cmp: &Comparison, labels: &[String], kind: &str) -> String {
    let mut out =
        format!("# Comparison of {} {kind} runs\n\nBaseline: {}.\n\n", labels.len(), labels[0]);
    let warnings = spec_warnings(cmp);
    if !warnings.is_empty() {
        out.push_str("**Warning:** the runs were not asked the same thing:\n\n");
        for w in &warnings {
            out.push_str(&format!("- `{w}`\n"));
        }
        out.push('\n');
    }
    let limits = diagnosis_warnings(cmp, labels);
    if !limits.is_empty() {
        out.push_str(&format!("**Warning:** {DIAGNOSIS_HEADING}\n\n"));
        for w in &limits {
            out.push_str(&format!("- {w}\n"));
        }
        out.push('\n');
    }
    out.push_str(&table(cmp, labels).markdown());
    out.push('\n');
    for v in verdicts(cmp, labels) {
        out.push_str(&format!("- {v}\n"));
    }
    out
}

/// The comparison as one JSON document.
pub fn json(cmp: &Comparison, labels: &[String], ids: &[Option<i64>]) -> Value {
    let run = |m: &Metric, c: Option<&MetricChange>, i: usize| {
        json!({
            "run": labels[i],
            "id": ids[i],
            "value": m.value,
            "median": centre(m),
            "samples": m.samples.len(),
            "ratio": c.map_or(Some(1.0), |c| c.ratio.is_finite().then_some(c.ratio)),
            "ratio_low": c.and_then(|c| c.interval.map(|i| i.0)),
            "ratio_high": c.and_then(|c| c.interval.map(|i| i.1)),
            "verdict": c.map_or("baseline", |c| c.verdict.word()),
        })
    };
    let figures: Vec<Value> = cmp
        .baseline
        .iter()
        .map(|base| {
            let mut runs = vec![run(base, None, 0)];
            for (i, other) in cmp.others.iter().enumerate() {
                if let Some(c) = other.iter().find(|c| c.metric.key == base.key) {
                    runs.push(run(&c.metric, Some(c), i + 1));
                }
            }
            json!({
                "key": base.key,
                "label": base.label,
                "unit": base.unit.code(),
                "higher_is_better": base.better == Better::Higher,
                "runs": runs,
            })
        })
        .collect();
    let diffs: Vec<Value> = cmp
        .spec_differences
        .iter()
        .map(|d| json!({ "field": d.field, "values": d.values }))
        .collect();
    let limits: Vec<Vec<&str>> =
        cmp.diagnosis_differences.iter().map(|c| c.iter().map(|c| c.name()).collect()).collect();
    json!({
        "baseline": labels[0],
        "runs": labels,
        "spec_differences": diffs,
        "diagnosis_differences": limits,
        "figures": figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use wirespeed_model::compare::{compare, CompareOptions, Verdict};
    use wirespeed_model::diagnosis::{Diagnosis, Finding, FindingCode, Side};
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::{Report, ReportBody};

    /// A TCP upload run whose intervals moved `gbps[i]` Gbit/s, with `parallel` streams.
    fn run(gbps: &[f64], parallel: u16) -> Report {
        let mut r = fixtures::report(Protocol::Tcp, Direction::Upload);
        let ReportBody::Bandwidth(b) = &mut r.body else { unreachable!() };
        b.spec.parallel = parallel;
        let template = b.intervals[0].clone();
        b.intervals = gbps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let mut iv = template.clone();
                iv.index = i as u32;
                iv.flows[0].total.received_bps = g * 1e9;
                iv.flows[0].total.retransmits = Some(i as u64 % 2);
                iv
            })
            .collect();
        b.summary.primary.total.received_bps = gbps.iter().sum::<f64>() / gbps.len() as f64 * 1e9;
        r
    }

    fn labels() -> Vec<String> {
        vec!["#1".into(), "#2".into(), "#3".into()]
    }

    /// Base around 10 Gbit/s; a run 50 % faster; a run the same but with 4 streams.
    fn three() -> (Report, Report, Report) {
        let base = [9.8, 10.1, 10.0, 9.9, 10.2, 10.0, 9.9, 10.1];
        let faster: Vec<f64> = base.iter().map(|g| g * 1.5).collect();
        let same: Vec<f64> = base.iter().rev().copied().collect();
        (run(&base, 1), limited(run(&faster, 1)), run(&same, 4))
    }

    /// `r` with a diagnosis that found the client's core saturated.
    fn limited(mut r: Report) -> Report {
        r.meta.diagnosis = Some(Diagnosis {
            findings: vec![Finding {
                code: FindingCode::SaturatedCore,
                side: Side::Client,
                text: "the client kept a core busy".into(),
            }],
            ..Diagnosis::default()
        });
        r
    }

    #[test]
    fn runs_limited_differently_are_flagged() {
        let (a, b, c) = three();
        let cmp = compare(&[&a, &b, &c], &CompareOptions::default()).unwrap();
        assert_eq!(cmp.diagnosis_differences, [vec![], vec![FindingCode::SaturatedCore], vec![]]);
        assert_eq!(
            diagnosis_warnings(&cmp, &labels()),
            ["#1: no limit", "#2: saturated_core", "#3: no limit"]
        );
        let v = json(&cmp, &labels(), &[None, None, None]);
        assert_eq!(v["diagnosis_differences"][1][0], "saturated_core");
        // Runs limited alike are not flagged, whatever their figures.
        let cmp = compare(&[&a, &c], &CompareOptions::default()).unwrap();
        assert!(cmp.diagnosis_differences.is_empty());
        assert!(!text(&cmp, &labels()[..2], "bandwidth").contains("limited differently"));
    }

    #[test]
    fn known_differences_get_the_right_verdicts() {
        let (a, b, c) = three();
        let cmp = compare(&[&a, &b, &c], &CompareOptions::default()).unwrap();
        let head = |i: usize| &cmp.others[i][0];
        assert_eq!(head(0).verdict, Verdict::Better);
        assert!((head(0).ratio - 1.5).abs() < 0.01);
        assert_eq!(head(1).verdict, Verdict::NoChange);
        assert_eq!(cmp.spec_differences.len(), 1);
        assert_eq!(cmp.spec_differences[0].field, "parallel");
        assert_eq!(cmp.spec_differences[0].values, ["1", "1", "4"]);
    }

    #[test]
    fn comparison_text() {
        let (a, b, c) = three();
        let cmp = compare(&[&a, &b, &c], &CompareOptions::default()).unwrap();
        insta::assert_snapshot!(text(&cmp, &labels(), "bandwidth"));
    }

    #[test]
    fn comparison_markdown() {
        let (a, b, c) = three();
        let cmp = compare(&[&a, &b, &c], &CompareOptions::default()).unwrap();
        insta::assert_snapshot!(markdown(&cmp, &labels(), "bandwidth"));
    }

    #[test]
    fn comparison_csv() {
        let (a, b, c) = three();
        let cmp = compare(&[&a, &b, &c], &CompareOptions::default()).unwrap();
        let csv = table(&cmp, &labels()).csv();
        fixtures::assert_even_rows(&csv);
        insta::assert_snapshot!(csv);
    }

    #[test]
    fn json_carries_intervals_and_verdicts() {
        let (a, b, _) = three();
        let cmp = compare(&[&a, &b], &CompareOptions::default()).unwrap();
        let v = json(&cmp, &labels()[..2], &[Some(1), Some(2)]);
        let r = &v["figures"][0]["runs"][1];
        assert_eq!(r["verdict"], "better");
        assert!(
            r["ratio_low"].as_f64().unwrap() < 1.5
                && r["ratio_high"].as_f64().unwrap() > 1.5 - 0.05
        );
        assert_eq!(v["figures"][0]["higher_is_better"], true);
    }
}
