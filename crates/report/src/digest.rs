//! A run as tables, for the formats that are documents rather than streams (Markdown, HTML):
//! the facts of the run, its key figures (with the spread of their per-interval samples), its
//! intervals and its spec. Every kind goes through the same [`metrics`](wirespeed_model::metrics)
//! functions, so a new kind gets these tables for free.

use std::collections::BTreeMap;

use wirespeed_model::compare::{flat_spec, median};
use wirespeed_model::metrics::Unit;
use wirespeed_model::Report;

use crate::table::Table;
use crate::units::figure;

/// What the store knows about a run that the report does not: its id and tag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunLabel {
    /// The saved run's id.
    pub id: Option<i64>,
    /// Its tag.
    pub tag: Option<String>,
}

impl RunLabel {
    /// The short name of the run in tables and legends: `#12`, or `run 1` without an id.
    pub fn short(&self, position: usize) -> String {
        match self.id {
            Some(id) => format!("#{id}"),
            None => format!("run {}", position + 1),
        }
    }
}

/// A heading for the run: `Run #12: bandwidth, 127.0.0.1`.
pub fn title(report: &Report, label: &RunLabel) -> String {
    let id = label.id.map(|i| format!(" #{i}")).unwrap_or_default();
    format!("Run{id}: {} to {}", report.kind(), report.target())
}

/// When, where and with what the run happened.
pub fn facts(report: &Report, label: &RunLabel) -> Table {
    let m = &report.meta;
    let mut t = Table::new(&["", ""]);
    let mut add = |k: &str, v: String| {
        if !v.is_empty() {
            t.push(vec![k.into(), v]);
        }
    };
    add("Started", m.start_time.clone());
    add("Host", m.host.clone());
    add("wirespeed", m.version.clone());
    add("Local address", m.local_addr.clone().unwrap_or_default());
    add("Remote address", m.remote_addr.clone().unwrap_or_default());
    add("Server version", m.server_version.clone().unwrap_or_default());
    add("Tag", label.tag.clone().unwrap_or_default());
    for n in &m.notes {
        add("Note", n.clone());
    }
    t
}

/// The key figures: the run's value, and the median, minimum and maximum of its intervals.
pub fn key_figures(report: &Report) -> Table {
    let mut t = Table::new(&["Figure", ">Run", ">Interval median", ">Min", ">Max", ">Intervals"]);
    for m in report.metrics() {
        let spread = |f: fn(f64, f64) -> f64| {
            m.samples.iter().copied().reduce(f).map_or("-".into(), |v| figure(v, m.unit))
        };
        let med =
            if m.samples.is_empty() { "-".into() } else { figure(median(&m.samples), m.unit) };
        t.push(vec![
            m.label.into(),
            figure(m.value, m.unit),
            med,
            spread(f64::min),
            spread(f64::max),
            m.samples.len().to_string(),
        ]);
    }
    t
}

/// One row per interval end: every rate and latency line of the run, side by side.
pub fn intervals(report: &Report) -> Option<Table> {
    let s = report.series();
    let lines: Vec<_> = s.rate.iter().chain(&s.latency).filter(|l| !l.points.is_empty()).collect();
    if lines.is_empty() || s.per_probe {
        return None;
    }
    // Keyed by the interval's end in ms, so lines that skip an interval stay aligned.
    let mut rows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (k, line) in lines.iter().enumerate() {
        for &(t, v) in &line.points {
            let row = rows
                .entry((t * 1000.0).round() as u64)
                .or_insert_with(|| vec!["-".into(); lines.len()]);
            row[k] = figure(v, line.unit);
        }
    }
    let headers: Vec<String> = std::iter::once("End (s)".to_string())
        .chain(lines.iter().map(|l| match l.unit {
            Unit::Nanos => format!("Latency {}", l.label),
            _ => l.label.clone(),
        }))
        .collect();
    let mut t = Table { numeric: vec![true; headers.len()], headers, rows: Vec::new() };
    for (ms, cells) in rows {
        let mut row = vec![format!("{:.1}", ms as f64 / 1000.0)];
        row.extend(cells);
        t.push(row);
    }
    Some(t)
}

/// What the run was asked to do, field by field.
pub fn spec(report: &Report) -> Table {
    let mut t = Table::new(&["Option", "Value"]);
    for (k, v) in flat_spec(report) {
        t.push(vec![k, v.trim_matches('"').to_string()]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;

    #[test]
    fn tables_of_a_bandwidth_run() {
        let r = fixtures::report(Protocol::Udp, Direction::Upload);
        insta::assert_snapshot!("key_figures", key_figures(&r).text());
        insta::assert_snapshot!("intervals", intervals(&r).unwrap().markdown());
        assert!(spec(&r).rows.iter().any(|row| row[0] == "protocol" && row[1] == "udp"));
        let label = RunLabel { id: Some(12), tag: Some("lab".into()) };
        assert_eq!(title(&r, &label), "Run #12: bandwidth to 127.0.0.1");
        assert!(facts(&r, &label).rows.contains(&vec!["Tag".to_string(), "lab".to_string()]));
    }
}
