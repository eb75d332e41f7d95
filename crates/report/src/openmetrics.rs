//! `export --format openmetrics`: saved runs as OpenMetrics text, for a Prometheus
//! Pushgateway or node_exporter's textfile collector. Each figure a run is judged by becomes
//! a gauge in Prometheus' base units (seconds, bytes per second), one sample per run labelled with the
//! run's id, kind, target and tag; `wirespeed_run_start_timestamp_seconds` says when each
//! ran. Samples carry no timestamps, since both consumers refuse them; the text is also valid
//! in Prometheus' older format (the `# UNIT` and `# EOF` lines are comments there).

use std::collections::BTreeMap;
use std::fmt::Write;

use wirespeed_model::metrics::Unit;
use wirespeed_model::Report;

use crate::digest::RunLabel;

/// One family: its help, its unit (OpenMetrics' `# UNIT`, the name's last word) and samples.
struct Family {
    help: String,
    unit: Option<&'static str>,
    samples: Vec<(String, f64)>,
}

/// The runs as one OpenMetrics exposition, ending in `# EOF`.
pub fn runs(runs: &[(&Report, RunLabel)]) -> String {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut add = |name: String, help: String, unit, labels: &str, value: f64| {
        families
            .entry(name)
            .or_insert_with(|| Family { help, unit, samples: Vec::new() })
            .samples
            .push((labels.to_string(), value));
    };
    for (report, label) in runs {
        let labels = run_labels(report, label);
        add(
            "wirespeed_run_start_timestamp_seconds".into(),
            "When the run started, seconds since the Unix epoch.".into(),
            Some("seconds"),
            &labels,
            report.meta.start_unix_ms as f64 / 1e3,
        );
        for m in report.metrics() {
            if !m.value.is_finite() {
                continue;
            }
            let (name, unit, scale) = family_name(m.key, m.unit);
            let help = format!("{} of saved runs, {}.", m.label, in_words(m.unit));
            add(format!("wirespeed_run_{name}"), help, unit, &labels, m.value * scale);
        }
    }
    let mut out = String::new();
    for (name, f) in &families {
        let _ = writeln!(out, "# TYPE {name} gauge");
        if let Some(unit) = f.unit {
            let _ = writeln!(out, "# UNIT {name} {unit}");
        }
        let _ = writeln!(out, "# HELP {name} {}", escape(&f.help, false));
        for (labels, value) in &f.samples {
            let _ = writeln!(out, "{name}{{{labels}}} {}", number(*value));
        }
    }
    out.push_str("# EOF\n");
    out
}

/// The labels every sample of a run carries.
fn run_labels(report: &Report, label: &RunLabel) -> String {
    let mut pairs = vec![
        ("run", label.id.map_or_else(|| "unsaved".to_string(), |id| id.to_string())),
        ("kind", report.kind().name().to_string()),
        ("target", report.target().to_string()),
    ];
    // Every sample of a family has the same label names (Pushgateway checks): no tag is "".
    pairs.push(("tag", label.tag.clone().unwrap_or_default()));
    pairs.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v, true))).collect::<Vec<_>>().join(",")
}

/// What a family's values count, for its help text: the base unit its name ends in, or what
/// the figure counts.
fn in_words(unit: Unit) -> &'static str {
    match unit {
        Unit::Nanos => "seconds",
        Unit::BitsPerSecond => "bytes per second",
        Unit::Ratio => "ratio",
        Unit::PerSecond(_) => "per second",
        Unit::Rpm => "round trips per minute",
        Unit::Count => "a count",
    }
}

/// A figure's family name, the unit that name ends in, and the factor to that base unit:
/// `latency_p99_ns` in nanoseconds is `latency_p99_seconds` in seconds, and throughput in
/// bits per second is in bytes per second (Prometheus' base unit for data).
fn family_name(key: &str, unit: Unit) -> (String, Option<&'static str>, f64) {
    let stem = |suffix: &str| key.strip_suffix(suffix).unwrap_or(key).to_string();
    match unit {
        Unit::Nanos => (format!("{}_seconds", stem("_ns")), Some("seconds"), 1e-9),
        Unit::BitsPerSecond => {
            (format!("{}_bytes_per_second", stem("_bps")), Some("bytes_per_second"), 1.0 / 8.0)
        }
        Unit::Ratio => (format!("{}_ratio", stem("_ratio")), Some("ratio"), 1.0),
        Unit::PerSecond(_) => (format!("{}_per_second", stem("_per_second")), None, 1.0),
        Unit::Count | Unit::Rpm => (key.to_string(), None, 1.0),
    }
}

/// A label value (`in_label`) or help text, escaped as both formats ask.
fn escape(s: &str, in_label: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if in_label => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// A sample value as both formats read it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_named_in_base_units() {
        assert_eq!(
            family_name("latency_p99_ns", Unit::Nanos),
            ("latency_p99_seconds".into(), Some("seconds"), 1e-9)
        );
        assert_eq!(
            family_name("throughput_bps", Unit::BitsPerSecond),
            ("throughput_bytes_per_second".into(), Some("bytes_per_second"), 0.125)
        );
        assert_eq!(family_name("loss_ratio", Unit::Ratio).0, "loss_ratio");
        let qps = Unit::PerSecond(wirespeed_model::metrics::Events::Queries);
        assert_eq!(family_name("queries_per_second", qps).0, "queries_per_second");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd", true), "a\\\"b\\\\c\\nd");
        assert_eq!(escape("say \"hi\"", false), "say \"hi\"");
    }
}
