//! A scenario's results as charts, grouped as the tables are: a sweep of one number over three
//! values or more is lines against the swept value (the headline, and p50/p99 latency: latency
//! against rate), another sweep is bars grouped by swept value with a bar per system, and an
//! unswept workload is a bar per system with each role's memory over time; last, each system's
//! peak RSS by role.

use wirespeed_model::metrics::Unit;

use super::{first_seen, median, BenchCell, Group};
use crate::charts::{axis, display_unit, spans_decades, Chart, ChartKind, ChartSeries};

/// The charts of every group, then peak memory.
pub(super) fn all(groups: &[Group], cells: &[BenchCell]) -> Vec<Chart> {
    let mut out = Vec::new();
    for group in groups {
        let finished: Vec<&BenchCell> =
            group.cells.iter().copied().filter(|c| !c.values.is_empty()).collect();
        let Some(first) = finished.first() else { continue };
        match (&group.keys, numeric_sweep(group)) {
            (_, Some(key)) => out.extend(sweep_lines(group, key)),
            (Some(keys), None) => out.push(grouped_bars(group, &keys.join(", "), &finished)),
            (None, None) => {
                out.push(bars(&group.base, first, &finished));
                out.extend(memory_over_time(&group.base, &finished));
            }
        }
    }
    out.extend(peak_memory(cells));
    out
}

/// The median of each system's cell, whiskers from lowest to highest.
fn bars(title: &str, first: &BenchCell, rows: &[&BenchCell]) -> Chart {
    let max = rows.iter().filter_map(|c| c.spread()).map(|s| s.1).fold(0.0, f64::max);
    let (div, unit) = display_unit(first.unit, max);
    Chart {
        title: format!("{title}: {} (median of repeats)", first.figure),
        kind: ChartKind::Bar,
        x_label: "System".into(),
        y_label: axis(&first.figure, &unit),
        log_x: false,
        log_y: false,
        categories: rows.iter().map(|c| c.system.clone()).collect(),
        series: vec![ChartSeries {
            label: "median".into(),
            points: rows
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i as f64, median(&c.values)? / div)))
                .collect(),
            whiskers: rows
                .iter()
                .filter_map(|c| c.spread())
                .map(|(lo, hi)| (lo / div, hi / div))
                .collect(),
        }],
    }
}

/// A sweep that is not a line: the swept values along the axis, a bar per system at each.
fn grouped_bars(group: &Group, by: &str, finished: &[&BenchCell]) -> Chart {
    let first = finished[0];
    let values = first_seen(group.cells.iter().map(|c| c.workload.as_str()));
    let label = |w: &str| {
        let cell = group.cells.iter().find(|c| c.workload == w);
        cell.map(|c| c.swept.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let max = finished.iter().filter_map(|c| c.spread()).map(|s| s.1).fold(0.0, f64::max);
    let (div, unit) = display_unit(first.unit, max);
    let systems = first_seen(finished.iter().map(|c| c.system.as_str()));
    let series = systems
        .iter()
        .map(|s| {
            let mine: Vec<(usize, &BenchCell)> = values
                .iter()
                .enumerate()
                .filter_map(|(i, w)| {
                    Some((i, *finished.iter().find(|c| c.workload == *w && c.system == *s)?))
                })
                .collect();
            ChartSeries {
                label: s.to_string(),
                points: mine
                    .iter()
                    .filter_map(|(i, c)| Some((*i as f64, median(&c.values)? / div)))
                    .collect(),
                whiskers: mine
                    .iter()
                    .filter_map(|(_, c)| c.spread())
                    .map(|(lo, hi)| (lo / div, hi / div))
                    .collect(),
            }
        })
        .collect();
    Chart {
        title: format!("{}: {} by {by} (median of repeats)", group.base, first.figure),
        kind: ChartKind::Bar,
        x_label: by.to_string(),
        y_label: axis(&first.figure, &unit),
        log_x: false,
        log_y: false,
        categories: values.iter().map(|w| label(w)).collect(),
        series,
    }
}

/// The option a group sweeps, when it sweeps exactly one, over at least three numbers (two
/// are clearer as bars: one stream and four).
fn numeric_sweep<'g>(group: &'g Group) -> Option<&'g str> {
    let key = match group.keys.as_deref()? {
        [key] => key.as_str(),
        _ => return None,
    };
    let mut values: Vec<f64> = Vec::new();
    for c in &group.cells {
        let v: f64 = c.swept.first().filter(|(k, _)| k == key)?.1.parse().ok()?;
        if !values.contains(&v) {
            values.push(v);
        }
    }
    (values.len() >= 3).then_some(key)
}

/// A sweep's lines, one per system: the headline figure's median against the swept value
/// (unless it is latency, drawn next), and when latency was measured, p50 and p99 against it.
fn sweep_lines(group: &Group, key: &str) -> Vec<Chart> {
    let (rows, base) = (&group.cells, &group.base);
    let systems = first_seen(rows.iter().map(|c| c.system.as_str()));
    let x_of = |c: &BenchCell| c.swept.first().and_then(|(_, v)| v.parse::<f64>().ok());
    // (x, median of `values`) for each of a system's cells that has any, in x order.
    let line = |system: &str, values: fn(&BenchCell) -> &Vec<f64>| {
        let mut points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|c| c.system == system)
            .filter_map(|c| Some((x_of(c)?, median(values(c))?)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    };
    let xs: Vec<f64> = rows.iter().filter_map(|c| x_of(c)).collect();
    // Rates 1 to 4000 read best on a log axis; 1 to 8 clients on a plain one.
    let (lo, hi) = xs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    let log_x = lo > 0.0 && hi / lo >= 100.0;
    let mut out = Vec::new();
    let Some(first) = rows.iter().find(|c| !c.values.is_empty()) else { return out };
    let chart = |title: String,
                 y_label: String,
                 div: f64,
                 log_y: bool,
                 lines: Vec<(String, Vec<(f64, f64)>)>| Chart {
        title,
        kind: ChartKind::Line,
        x_label: key.to_string(),
        y_label,
        log_x,
        log_y,
        categories: Vec::new(),
        series: lines
            .into_iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|(label, p)| ChartSeries {
                label,
                points: p.into_iter().map(|(x, y)| (x, y / div)).collect(),
                whiskers: Vec::new(),
            })
            .collect(),
    };
    let latency: Vec<(String, Vec<(f64, f64)>)> = systems
        .iter()
        .flat_map(|s| {
            [
                (format!("{s} p50"), line(s, |c| &c.p50_ns)),
                (format!("{s} p99"), line(s, |c| &c.p99_ns)),
            ]
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if first.unit != Unit::Nanos || latency.is_empty() {
        let lines: Vec<(String, Vec<(f64, f64)>)> =
            systems.iter().map(|s| (s.to_string(), line(s, |c| &c.values))).collect();
        let max = lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)).fold(0.0, f64::max);
        let (div, unit) = display_unit(first.unit, max);
        out.push(chart(
            format!("{base}: {} against {key} (median of repeats)", first.figure),
            axis(&first.figure, &unit),
            div,
            false,
            lines,
        ));
    }
    if !latency.is_empty() {
        let all = latency.iter().flat_map(|(_, p)| p.iter().map(|p| p.1));
        let (div, unit) = display_unit(Unit::Nanos, all.clone().fold(0.0, f64::max));
        let log_y = spans_decades(all);
        out.push(chart(
            format!("{base}: latency against {key} (median of repeats)"),
            axis("Latency", &unit),
            div,
            log_y,
            latency,
        ));
    }
    out
}

/// Each system's roles' RSS over the first finished run of workload `w` (the rathole memory
/// graph, each line from its own process group).
fn memory_over_time(w: &str, rows: &[&BenchCell]) -> Option<Chart> {
    let series: Vec<ChartSeries> = rows
        .iter()
        .flat_map(|c| {
            c.timeline.iter().filter(|(_, p)| p.len() >= 2).map(|(role, p)| ChartSeries {
                label: format!("{} {role}", c.system),
                points: p.iter().map(|&(t, b)| (t, b / (1 << 20) as f64)).collect(),
                whiskers: Vec::new(),
            })
        })
        .collect();
    (!series.is_empty()).then(|| Chart {
        title: format!("{w}: memory over time (first run)"),
        kind: ChartKind::Line,
        x_label: "Time (s)".into(),
        y_label: "RSS (MiB)".into(),
        log_x: false,
        log_y: false,
        categories: Vec::new(),
        series,
    })
}

/// The largest median peak of each role on each system, over the workloads.
fn peak_memory(cells: &[BenchCell]) -> Option<Chart> {
    let with_memory = || cells.iter().filter(|c| !c.memory.is_empty());
    let systems = first_seen(with_memory().map(|c| c.system.as_str()));
    let roles = first_seen(with_memory().flat_map(|c| c.memory.iter().map(|(r, _)| r.as_str())));
    if systems.is_empty() {
        return None;
    }
    let peak = |s: &str, r: &str| {
        cells
            .iter()
            .filter(|c| c.system == s)
            .flat_map(|c| c.memory.iter().filter(|(role, _)| role == r).map(|(_, b)| *b))
            .fold(0.0, f64::max)
    };
    Some(Chart {
        title: "Peak memory by system".into(),
        kind: ChartKind::Bar,
        x_label: "System".into(),
        y_label: "Peak RSS (MiB)".into(),
        log_x: false,
        log_y: false,
        categories: systems.iter().map(|s| s.to_string()).collect(),
        series: roles
            .iter()
            .map(|r| ChartSeries {
                label: r.to_string(),
                points: systems
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i as f64, peak(s, r) / (1 << 20) as f64))
                    .collect(),
                whiskers: Vec::new(),
            })
            .collect(),
    })
}
