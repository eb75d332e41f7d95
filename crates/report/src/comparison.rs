//! How a comparison is printed: a warning for every spec field that differs, then one row per
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
            "1".into(),
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
    json!({ "baseline": labels[0], "runs": labels, "spec_differences": diffs, "figures": figures })
}
