//! A scenario's results as tables. An unswept workload is one row per system; a sweep is shown
//! as the studies show it: rows are the swept values (1, 10, …, 4000 req/s; 1, 8, 64 clients)
//! and columns are the systems, one table per figure (the headline, each baseline's
//! percentage, p50 and p99 latency), then every cell's details in one table.

use wirespeed_model::metrics::Unit;

use super::{baseline_of, first_seen, median, percent_of, BenchCell, Group};
use crate::table::Table;
use crate::units::figure;

/// The tables of one group of cells under their headings.
pub(super) fn of_group(group: &Group, baselines: &[&str]) -> Vec<(String, Table)> {
    let base = &group.base;
    match &group.keys {
        None => vec![(base.clone(), per_system(&group.cells, baselines))],
        Some(keys) => {
            let by = keys.join(", ");
            let mut out: Vec<(String, Table)> = sweep(group, baselines)
                .into_iter()
                .map(|(what, t)| (format!("{base}: {what} by {by}"), t))
                .collect();
            out.push((format!("{base}: every cell"), details(group)));
            out
        }
    }
}

/// The headline's label with "(median)", from a cell that has one (a system whose runs were
/// all skipped has none).
fn headline(cells: &[&BenchCell]) -> Option<(String, Unit)> {
    cells.iter().find(|c| !c.figure.is_empty()).map(|c| (c.figure.clone(), c.unit))
}

/// Whether latency goes beside the headline: it was measured, and is not the headline already
/// (a fixed-rate workload's headline is its latency).
fn latency_beside(cells: &[&BenchCell]) -> bool {
    cells.iter().any(|c| !c.p99_ns.is_empty())
        && headline(cells).is_some_and(|(_, unit)| unit != Unit::Nanos)
}

fn shown_median(c: &BenchCell) -> String {
    median(&c.values).map_or("-".into(), |v| figure(v, c.unit))
}

fn shown_percent(c: &BenchCell, base: Option<&BenchCell>) -> String {
    percent_of(c, base).map_or("-".into(), |p| format!("{p:.1} %"))
}

fn shown_latency(v: &[f64]) -> String {
    median(v).map_or("-".into(), |ns| figure(ns, Unit::Nanos))
}

/// The load's median CPU per unit of work (`3.1 µs/request`).
pub(super) fn shown_load_cpu(c: &BenchCell) -> String {
    match (median(&c.load_cpu_per_unit), &c.work_unit) {
        (Some(s), Some(unit)) => format!("{}/{unit}", figure(s * 1e9, Unit::Nanos)),
        _ => "-".into(),
    }
}

/// Whether any cell's load ran as a process of its own, so its CPU per unit is known.
fn load_cpu_known(cells: &[&BenchCell]) -> bool {
    cells.iter().any(|c| !c.load_cpu_per_unit.is_empty())
}

/// Spread, runs, memory and CPU: the columns that say how far a median can be trusted.
fn particulars(c: &BenchCell) -> [String; 4] {
    let shown = |v: f64| figure(v, c.unit);
    let spread = c.spread().map_or("-".into(), |(lo, hi)| format!("{} – {}", shown(lo), shown(hi)));
    let memory: Vec<String> = c
        .memory
        .iter()
        .map(|(role, b)| format!("{role} {:.1} MiB", b / (1 << 20) as f64))
        .collect();
    let cpu: Vec<String> = c.cpu.iter().map(|(role, secs)| format!("{role} {secs:.2} s")).collect();
    [spread, c.runs(), memory.join(", "), cpu.join(", ")]
}

/// One workload, a row per system.
pub(super) fn per_system(cells: &[&BenchCell], baselines: &[&str]) -> Table {
    let head = headline(cells).map_or("Result".into(), |(f, _)| format!("{f} (median)"));
    let latency = latency_beside(cells);
    let mut header = vec!["System".to_string(), format!(">{head}"), ">Spread".into()];
    if latency {
        header.extend([">p50".to_string(), ">p99".into()]);
    }
    header.extend(baselines.iter().map(|b| format!(">% of {b}")));
    let load_cpu = load_cpu_known(cells);
    if load_cpu {
        header.push(">Load CPU".into());
    }
    header.extend([">Runs".to_string(), "Peak RSS".into(), "CPU".into()]);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let bases: Vec<Option<&BenchCell>> =
        baselines.iter().map(|b| baseline_of(cells, Some(b))).collect();
    let mut t = Table::new(&header);
    for c in cells {
        let [spread, runs, memory, cpu] = particulars(c);
        let mut row = vec![c.system.clone(), shown_median(c), spread];
        if latency {
            row.extend([shown_latency(&c.p50_ns), shown_latency(&c.p99_ns)]);
        }
        row.extend(bases.iter().map(|b| shown_percent(c, *b)));
        if load_cpu {
            row.push(shown_load_cpu(c));
        }
        row.extend([runs, memory, cpu]);
        t.push(row);
    }
    t
}

/// A sweep's value rows: each workload cell's label (its swept values) and its cells.
fn value_rows<'a>(group: &'a Group) -> Vec<(String, Vec<&'a BenchCell>)> {
    first_seen(group.cells.iter().map(|c| c.workload.as_str()))
        .into_iter()
        .map(|w| {
            let cells: Vec<&BenchCell> =
                group.cells.iter().copied().filter(|c| c.workload == w).collect();
            let label = cells[0].swept.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>();
            (label.join(", "), cells)
        })
        .collect()
}

/// A table of swept values against systems, a column per system and name in `names`, filled
/// by `cell` from a system's cell and its row's cells (`-` where it has none).
fn grid(
    group: &Group,
    names: &[&str],
    cell: impl Fn(&[&BenchCell], &BenchCell) -> Vec<String>,
) -> Table {
    let systems = first_seen(group.cells.iter().map(|c| c.system.as_str()));
    let keys = group.keys.as_deref().unwrap_or_default().join(", ");
    let mut header = vec![keys];
    for s in &systems {
        header.extend(names.iter().map(|n| {
            if n.is_empty() {
                format!(">{s}")
            } else {
                format!(">{s} {n}")
            }
        }));
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    for (label, cells) in value_rows(group) {
        let mut row = vec![label];
        for s in &systems {
            match cells.iter().copied().find(|c| c.system == *s) {
                Some(this) => row.extend(cell(&cells, this)),
                None => row.extend(names.iter().map(|_| "-".to_string())),
            }
        }
        t.push(row);
    }
    t
}

/// The figure tables of a sweep, each with what it shows.
fn sweep(group: &Group, baselines: &[&str]) -> Vec<(String, Table)> {
    let cells = &group.cells;
    let mut out = Vec::new();
    let Some((figure_label, unit)) = headline(cells) else { return out };
    if unit != Unit::Nanos {
        let t = grid(group, &[""], |_, c| vec![shown_median(c)]);
        out.push((format!("{figure_label} (median of repeats)"), t));
    }
    for b in baselines {
        let t = grid(group, &[""], |row, c| vec![shown_percent(c, baseline_of(row, Some(b)))]);
        out.push((format!("{figure_label} as % of {b}"), t));
    }
    if cells.iter().any(|c| !c.p99_ns.is_empty()) {
        let t = grid(group, &["p50", "p99"], |_, c| {
            vec![shown_latency(&c.p50_ns), shown_latency(&c.p99_ns)]
        });
        out.push(("latency p50 and p99 (median of repeats)".into(), t));
    }
    if load_cpu_known(cells) {
        let t = grid(group, &[""], |_, c| vec![shown_load_cpu(c)]);
        out.push(("the load's CPU per unit of work (median of repeats)".into(), t));
    }
    out
}

/// Every cell of a sweep in one table: its values, system, median, spread, runs, memory, CPU.
fn details(group: &Group) -> Table {
    let head = headline(&group.cells).map_or("Result".into(), |(f, _)| format!("{f} (median)"));
    let keys = group.keys.as_deref().unwrap_or_default().join(", ");
    let mut header = vec![keys, "System".into(), format!(">{head}"), ">Spread".into()];
    let load_cpu = load_cpu_known(&group.cells);
    if load_cpu {
        header.push(">Load CPU".into());
    }
    header.extend([">Runs".to_string(), "Peak RSS".into(), "CPU".into()]);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    for (label, cells) in value_rows(group) {
        for c in cells {
            let [spread, runs, memory, cpu] = particulars(c);
            let mut row = vec![label.clone(), c.system.clone(), shown_median(c), spread];
            if load_cpu {
                row.push(shown_load_cpu(c));
            }
            row.extend([runs, memory, cpu]);
            t.push(row);
        }
    }
    t
}
