//! A scenario's results as tables: for each workload, one row per system with the median of
//! its headline figure over the repeats, the spread (lowest–highest), the percentage of the
//! baseline system's median (the DNS study's "% of BIND"), the runs that counted, and each
//! role's peak memory. Markdown for people, CSV and JSON for the rest.

use serde::Serialize;
use wirespeed_model::metrics::Unit;

use crate::charts::{axis, display_unit, Chart, ChartKind, ChartSeries};
use crate::table::Table;
use crate::units::figure;

/// One system's results for one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchCell {
    /// The workload (with its swept values).
    pub workload: String,
    /// The system.
    pub system: String,
    /// The headline figure's label (`Throughput`).
    pub figure: String,
    /// Its unit.
    #[serde(serialize_with = "unit_code")]
    pub unit: Unit,
    /// Its value in each finished run, in repeat order.
    pub values: Vec<f64>,
    /// Runs planned.
    pub planned: usize,
    /// Runs skipped (a program missing).
    pub skipped: usize,
    /// Runs failed.
    pub failed: usize,
    /// Each role's peak RSS (bytes), the median over the finished runs.
    pub memory: Vec<(String, f64)>,
}

fn unit_code<S: serde::Serializer>(u: &Unit, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(u.code())
}

/// The median of `v` (of two middle values, their mean).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

impl BenchCell {
    /// Lowest and highest value.
    pub fn spread(&self) -> Option<(f64, f64)> {
        let lo = self.values.iter().copied().reduce(f64::min)?;
        let hi = self.values.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    }

    fn runs(&self) -> String {
        let done = self.values.len();
        let mut s = format!("{done}/{}", self.planned);
        if self.skipped > 0 {
            s.push_str(&format!(", {} skipped", self.skipped));
        }
        if self.failed > 0 {
            s.push_str(&format!(", {} failed", self.failed));
        }
        s
    }
}

/// Median of `cell` as a percentage of the baseline's median for the same workload.
fn percent_of(cell: &BenchCell, baseline: Option<&BenchCell>) -> Option<f64> {
    let (m, b) = (median(&cell.values)?, median(&baseline?.values)?);
    (b != 0.0).then(|| m / b * 100.0)
}

/// The workloads, in the order they first appear.
fn workloads(cells: &[BenchCell]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for c in cells {
        if !seen.contains(&c.workload.as_str()) {
            seen.push(&c.workload);
        }
    }
    seen
}

fn table(cells: &[&BenchCell], baseline: Option<&str>, raw: bool) -> Table {
    let base = cells.iter().find(|c| Some(c.system.as_str()) == baseline).copied();
    // A system whose runs were all skipped has no figure; the header comes from one that has.
    let first = cells
        .iter()
        .find(|c| !c.figure.is_empty())
        .map_or("Result".into(), |c| format!("{} (median)", c.figure));
    let pct = format!("% of {}", baseline.unwrap_or("baseline"));
    let mut t = Table::new(&[
        "System",
        &format!(">{first}"),
        ">Spread",
        &format!(">{pct}"),
        ">Runs",
        "Peak RSS",
    ]);
    for c in cells {
        let shown = |v: f64| if raw { v.to_string() } else { figure(v, c.unit) };
        let spread =
            c.spread().map_or("-".into(), |(lo, hi)| format!("{} – {}", shown(lo), shown(hi)));
        let memory: Vec<String> = c
            .memory
            .iter()
            .map(|(role, b)| format!("{role} {:.1} MiB", b / (1 << 20) as f64))
            .collect();
        t.push(vec![
            c.system.clone(),
            median(&c.values).map_or("-".into(), shown),
            spread,
            percent_of(c, base).map_or("-".into(), |p| format!("{p:.1} %")),
            c.runs(),
            memory.join(", "),
        ]);
    }
    t
}

/// The results as a Markdown document: a table per workload.
pub fn markdown(title: &str, baseline: Option<&str>, cells: &[BenchCell]) -> String {
    let mut out = format!("# {title}\n");
    for w in workloads(cells) {
        let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
        out.push_str(&format!("\n## {w}\n\n"));
        out.push_str(&table(&rows, baseline, false).markdown());
    }
    out
}

/// Bars per system for each workload (the median, whiskers from lowest to highest), and each
/// system's peak RSS by role.
pub fn charts(cells: &[BenchCell]) -> Vec<Chart> {
    let mut out = Vec::new();
    for w in workloads(cells) {
        let rows: Vec<&BenchCell> =
            cells.iter().filter(|c| c.workload == w && !c.values.is_empty()).collect();
        let Some(first) = rows.first() else { continue };
        let max = rows.iter().filter_map(|c| c.spread()).map(|s| s.1).fold(0.0, f64::max);
        let (div, unit) = display_unit(first.unit, max);
        out.push(Chart {
            title: format!("{w}: {} (median of repeats)", first.figure),
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
        });
    }
    // Memory: the largest median peak of each role on each system, over the workloads.
    let mut systems: Vec<&str> = Vec::new();
    let mut roles: Vec<&str> = Vec::new();
    for c in cells.iter().filter(|c| !c.memory.is_empty()) {
        if !systems.contains(&c.system.as_str()) {
            systems.push(&c.system);
        }
        for (r, _) in &c.memory {
            if !roles.contains(&r.as_str()) {
                roles.push(r);
            }
        }
    }
    if !systems.is_empty() {
        let peak = |s: &str, r: &str| {
            cells
                .iter()
                .filter(|c| c.system == s)
                .flat_map(|c| c.memory.iter().filter(|(role, _)| role == r).map(|(_, b)| *b))
                .fold(0.0, f64::max)
        };
        out.push(Chart {
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
        });
    }
    out
}

/// The results as a self-contained HTML page: the tables and interactive charts.
pub fn html(title: &str, baseline: Option<&str>, cells: &[BenchCell]) -> String {
    let sections: Vec<(String, Table)> = workloads(cells)
        .into_iter()
        .map(|w| {
            let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
            (w.to_string(), table(&rows, baseline, false))
        })
        .collect();
    crate::html::bench_document(title, &sections, charts(cells))
}

/// The results as CSV: a row per workload and system, numbers unformatted.
pub fn csv(baseline: Option<&str>, cells: &[BenchCell]) -> String {
    let mut out = String::from("workload,system,figure,unit,median,min,max,percent_of_baseline,runs_done,runs_planned,skipped,failed\n");
    for w in workloads(cells) {
        let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
        let base = rows.iter().find(|c| Some(c.system.as_str()) == baseline).copied();
        for c in &rows {
            let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let (lo, hi) = c.spread().unzip();
            let cells = [
                crate::table::csv_cell(&c.workload),
                crate::table::csv_cell(&c.system),
                crate::table::csv_cell(&c.figure),
                c.unit.code().to_string(),
                num(median(&c.values)),
                num(lo),
                num(hi),
                num(percent_of(c, base)),
                c.values.len().to_string(),
                c.planned.to_string(),
                c.skipped.to_string(),
                c.failed.to_string(),
            ];
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells() -> Vec<BenchCell> {
        let cell = |w: &str, s: &str, values: Vec<f64>, failed: usize, skipped: usize| BenchCell {
            workload: w.into(),
            system: s.into(),
            figure: "Throughput".into(),
            unit: Unit::BitsPerSecond,
            planned: 3,
            failed,
            skipped,
            memory: if s == "direct" {
                vec![]
            } else {
                vec![("server".into(), 12.5 * (1 << 20) as f64)]
            },
            values,
        };
        vec![
            cell("tcp-bw[parallel=1]", "direct", vec![9.4e9, 9.5e9, 9.3e9], 0, 0),
            cell("tcp-bw[parallel=1]", "rathole-tcp", vec![4.7e9, 4.6e9], 1, 0),
            cell("tcp-bw[parallel=1]", "gost-tcp", vec![], 0, 3),
            cell("tcp-bw[parallel=4]", "direct", vec![2.0e10, 2.2e10, 2.1e10], 0, 0),
        ]
    }

    #[test]
    fn bench_markdown() {
        insta::assert_snapshot!(markdown("transports", Some("direct"), &cells()));
    }

    #[test]
    fn bench_csv() {
        insta::assert_snapshot!(csv(Some("direct"), &cells()));
    }

    #[test]
    fn charts_have_a_bar_per_finished_system_and_memory_by_role() {
        let c = charts(&cells());
        assert_eq!(c.len(), 3, "two workloads and memory");
        assert_eq!(c[0].categories, ["direct", "rathole-tcp"], "gost-tcp has no runs");
        assert_eq!(c[0].y_label, "Throughput (Gbit/s)");
        assert_eq!(c[0].series[0].points, [(0.0, 9.4), (1.0, 4.65)]);
        assert_eq!(c[0].series[0].whiskers.len(), 2);
        assert_eq!(c[2].categories, ["rathole-tcp", "gost-tcp"]);
        assert_eq!(c[2].series[0].points[0], (0.0, 12.5));
    }

    #[test]
    fn medians_and_percentages() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let c = cells();
        let p = percent_of(&c[1], Some(&c[0])).unwrap();
        assert!((p - 4.65e9 / 9.4e9 * 100.0).abs() < 1e-9);
    }
}
