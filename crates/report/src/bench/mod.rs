//! A scenario's results: for each workload, each system's headline figure over the repeats
//! (median, spread), its percentage of each baseline system's median (the DNS study's "% of
//! BIND", or of each workload's fastest), latency beside it, the runs that counted, and each
//! role's peak memory and CPU. A sweep is one group, tabled and charted with the swept values
//! as rows or along the axis (`tables`, `charts`). Markdown for people, CSV and JSON for the
//! rest.

mod charts;
pub mod goals;
pub mod ratios;
mod tables;

use serde::{Deserialize, Serialize};
use wirespeed_model::metrics::{Unit, FASTEST};

use crate::charts::Chart;
use crate::table::Table;

/// One system's results for one workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchCell {
    /// The workload (with its swept values).
    pub workload: String,
    /// The workload's own name, without swept values (cells of one sweep share it).
    pub base: String,
    /// The swept options and their values in this cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swept: Vec<(String, String)>,
    /// The system.
    pub system: String,
    /// The headline figure's label (`Throughput`).
    pub figure: String,
    /// Its unit.
    #[serde(serialize_with = "unit_code", deserialize_with = "unit_of_code")]
    pub unit: Unit,
    /// Whether more of it is better (a rate) or less (a time).
    pub higher_is_better: bool,
    /// Its value in each finished run, in repeat order.
    pub values: Vec<f64>,
    /// Median latency (ns) of each finished run, when its kind measures latency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub p50_ns: Vec<f64>,
    /// 99th percentile latency (ns) of each finished run, when its kind measures latency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub p99_ns: Vec<f64>,
    /// Runs planned.
    pub planned: usize,
    /// Runs skipped (a program missing).
    pub skipped: usize,
    /// Runs failed.
    pub failed: usize,
    /// Each role's peak resident memory (bytes): the largest VmHWM sampled in a run (VmRSS when
    /// the peak was not sampled), the median over the finished runs.
    pub memory: Vec<(String, f64)>,
    /// Each role's CPU time in a run (seconds, user and system), the median over the runs;
    /// `load` is the load's own process, where it ran as one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu: Vec<(String, f64)>,
    /// The load's CPU seconds per unit of its work in each finished run that ran it as a
    /// process of its own (per request, per GB received).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_cpu_per_unit: Vec<f64>,
    /// That unit (`request`, `GB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_unit: Option<String>,
    /// Every number of each finished run's summary, by its path in the report's JSON
    /// (`latency.mean_ns`, `success_ratio`), in repeat order: what `figures.csv` keeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<(String, Vec<f64>)>,
    /// Each role's RSS over the first finished run: `(seconds, bytes)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<(String, Vec<(f64, f64)>)>,
    /// For a system whose load is another tool's client, the system with wirespeed's own
    /// client it is compared with (the same system but for its client, or the scenario's one
    /// system with our client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<String>,
}

fn unit_code<S: serde::Serializer>(u: &Unit, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(u.code())
}

fn unit_of_code<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Unit, D::Error> {
    let code = String::deserialize(d)?;
    Unit::from_code(&code).ok_or_else(|| serde::de::Error::custom(format!("no unit {code:?}")))
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

/// The baseline among one workload's `cells`: the system named `baseline`, or with
/// [`FASTEST`] (and no system of that name), the one with the best median.
fn baseline_of<'a>(cells: &[&'a BenchCell], baseline: Option<&str>) -> Option<&'a BenchCell> {
    let named = cells.iter().find(|c| Some(c.system.as_str()) == baseline).copied();
    if named.is_some() || baseline != Some(FASTEST) {
        return named;
    }
    let ranked = cells.iter().filter_map(|c| Some((*c, median(&c.values)?)));
    let best = |a: &(&BenchCell, f64), b: &(&BenchCell, f64)| {
        let order = a.1.total_cmp(&b.1);
        if a.0.higher_is_better {
            order
        } else {
            order.reverse()
        }
    };
    ranked.max_by(best).map(|(c, _)| c)
}

/// Each distinct item of `items`, in the order it first appears.
fn first_seen<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

/// The cells of one workload: every swept value of it when it is a sweep.
pub(crate) struct Group<'a> {
    /// The workload's own name.
    pub base: String,
    /// The options it sweeps, when it is a sweep.
    pub keys: Option<Vec<String>>,
    /// Its cells, in order.
    pub cells: Vec<&'a BenchCell>,
}

/// The cells grouped by workload, in the order they first appear.
fn groups(cells: &[BenchCell]) -> Vec<Group<'_>> {
    first_seen(cells.iter().map(|c| c.base.as_str()))
        .into_iter()
        .map(|base| {
            let mine: Vec<&BenchCell> = cells.iter().filter(|c| c.base == base).collect();
            let swept = mine.iter().find(|c| !c.swept.is_empty());
            Group {
                base: base.to_string(),
                keys: swept.map(|c| c.swept.iter().map(|(k, _)| k.clone()).collect()),
                cells: mine,
            }
        })
        .collect()
}

/// What a system's program said its version was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramVersion {
    /// The system's cells, joined.
    pub systems: String,
    /// The command that printed it.
    pub command: String,
    /// The line that says the version, or why there is none.
    pub printed: String,
    /// The text the scenario expected in it.
    pub expected: Option<String>,
    /// Whether the line held it (or nothing was expected).
    pub as_expected: bool,
}

/// Every group's tables under their headings, then the programs' versions.
fn sections(
    cells: &[BenchCell],
    baselines: &[&str],
    versions: &[ProgramVersion],
) -> Vec<(String, Table)> {
    let mut out: Vec<(String, Table)> =
        groups(cells).iter().flat_map(|g| tables::of_group(g, baselines)).collect();
    if !versions.is_empty() {
        let mut t = Table::new(&["System", "Command", "Printed", "Expected"]);
        for v in versions {
            let expected = match (&v.expected, v.as_expected) {
                (Some(e), true) => e.clone(),
                (Some(e), false) => format!("{e} (NOT what it printed)"),
                (None, _) => "-".into(),
            };
            t.push(vec![
                v.systems.clone(),
                format!("`{}`", v.command),
                v.printed.clone(),
                expected,
            ]);
        }
        out.push(("Versions".into(), t));
    }
    out
}

/// The results as a Markdown document: a table per workload, several per sweep, and the
/// versions the programs printed.
pub fn markdown(
    title: &str,
    baselines: &[&str],
    cells: &[BenchCell],
    versions: &[ProgramVersion],
) -> String {
    let mut out = format!("# {title}\n");
    for (heading, table) in sections(cells, baselines, versions) {
        out.push_str(&format!("\n## {heading}\n\n"));
        out.push_str(&table.markdown());
    }
    out
}

/// The charts, grouped as the tables are.
pub fn charts(cells: &[BenchCell]) -> Vec<Chart> {
    charts::all(&groups(cells), cells)
}

/// The results as a self-contained HTML page: the tables and interactive charts.
pub fn html(
    title: &str,
    baselines: &[&str],
    cells: &[BenchCell],
    versions: &[ProgramVersion],
) -> String {
    crate::html::bench_document(title, &sections(cells, baselines, versions), charts(cells))
}

/// The results as CSV: a row per workload and system, numbers unformatted, a percentage
/// column per baseline.
pub fn csv(baselines: &[&str], cells: &[BenchCell]) -> String {
    let mut out = String::from("workload,system,figure,unit,median,min,max,p50_ns,p99_ns");
    for b in baselines {
        out.push_str(&format!(",percent_of_{b}"));
    }
    out.push_str(",runs_done,runs_planned,skipped,failed\n");
    let workloads = first_seen(cells.iter().map(|c| c.workload.as_str()));
    for w in workloads {
        let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
        let bases: Vec<Option<&BenchCell>> =
            baselines.iter().map(|b| baseline_of(&rows, Some(b))).collect();
        for c in &rows {
            let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let (lo, hi) = c.spread().unzip();
            let mut fields = vec![
                c.workload.clone(),
                c.system.clone(),
                c.figure.clone(),
                c.unit.code().to_string(),
                num(median(&c.values)),
                num(lo),
                num(hi),
                num(median(&c.p50_ns)),
                num(median(&c.p99_ns)),
            ];
            fields.extend(bases.iter().map(|b| num(percent_of(c, *b))));
            fields.extend([
                c.values.len().to_string(),
                c.planned.to_string(),
                c.skipped.to_string(),
                c.failed.to_string(),
            ]);
            out.push_str(&crate::csv::record(fields));
            out.push('\n');
        }
    }
    out
}

/// Each role's peak memory and CPU time as CSV: a row per workload, system and role, MiB and
/// seconds unrounded (the medians over the finished runs, as the summary's columns).
pub fn resources_csv(cells: &[BenchCell]) -> String {
    let mut out = String::from("workload,system,role,peak_rss_mib,cpu_s\n");
    for c in cells {
        let mut roles: Vec<&str> = c.memory.iter().map(|(r, _)| r.as_str()).collect();
        roles.extend(
            c.cpu.iter().map(|(r, _)| r.as_str()).filter(|r| !c.memory.iter().any(|(m, _)| m == r)),
        );
        for role in roles {
            let find = |v: &[(String, f64)]| v.iter().find(|(r, _)| r == role).map(|(_, x)| *x);
            let mib =
                find(&c.memory).map_or(String::new(), |b| (b / f64::from(1u32 << 20)).to_string());
            let cpu = find(&c.cpu).map_or(String::new(), |s| s.to_string());
            out.push_str(&crate::csv::record([c.workload.as_str(), &c.system, role, &mib, &cpu]));
            out.push('\n');
        }
    }
    out
}

/// Every summary figure of every cell as CSV: a row per workload, system and figure (its path
/// in the report's JSON summary), the median, lowest and highest over the finished runs.
pub fn figures_csv(cells: &[BenchCell]) -> String {
    let mut out = String::from("workload,system,figure,median,min,max,runs\n");
    for c in cells {
        for (figure, values) in &c.figures {
            let (Some(m), Some(lo), Some(hi)) = (
                median(values),
                values.iter().copied().reduce(f64::min),
                values.iter().copied().reduce(f64::max),
            ) else {
                continue;
            };
            let fields = [
                &c.workload,
                &c.system,
                figure,
                &m.to_string(),
                &lo.to_string(),
                &hi.to_string(),
                &values.len().to_string(),
            ];
            out.push_str(&crate::csv::record(fields));
            out.push('\n');
        }
    }
    out
}

/// Each role's memory over the first finished run of each cell as CSV: a row per sample,
/// seconds from the start and MiB.
pub fn memory_csv(cells: &[BenchCell]) -> String {
    let mut out = String::from("workload,system,role,seconds,rss_mib\n");
    for c in cells {
        for (role, points) in &c.timeline {
            for (seconds, bytes) in points {
                let mib = (bytes / f64::from(1u32 << 20)).to_string();
                out.push_str(&crate::csv::record([
                    &c.workload,
                    &c.system,
                    role,
                    &seconds.to_string(),
                    &mib,
                ]));
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::ChartKind;

    fn cells() -> Vec<BenchCell> {
        let cell = |w: &str, s: &str, values: Vec<f64>, failed: usize, skipped: usize| BenchCell {
            workload: w.into(),
            base: "tcp-bw".into(),
            swept: vec![("parallel".into(), w[w.len() - 2..w.len() - 1].into())],
            system: s.into(),
            figure: "Throughput".into(),
            unit: Unit::BitsPerSecond,
            higher_is_better: true,
            p50_ns: vec![],
            load_cpu_per_unit: vec![],
            work_unit: None,
            compared_with: None,
            p99_ns: vec![],
            figures: vec![],
            timeline: vec![],
            planned: 3,
            failed,
            skipped,
            memory: if s == "direct" {
                vec![]
            } else {
                vec![("server".into(), 12.5 * (1 << 20) as f64)]
            },
            cpu: if s == "direct" { vec![] } else { vec![("server".into(), 1.25)] },
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
        insta::assert_snapshot!(markdown("transports", &["direct"], &cells(), &[]));
    }

    #[test]
    fn the_loads_cpu_per_unit_is_a_column_where_any_load_ran_alone() {
        let plain = markdown("transports", &["direct"], &cells(), &[]);
        assert!(!plain.contains("Load CPU"), "{plain}");
        let mut c = cells();
        c[0].load_cpu_per_unit = vec![4e-6, 2e-6, 3e-6];
        c[0].work_unit = Some("request".into());
        let shown = markdown("transports", &["direct"], &c, &[]);
        assert!(shown.contains("Load CPU") && shown.contains("3.00 µs/request"), "{shown}");
    }

    #[test]
    fn bench_csv() {
        insta::assert_snapshot!(csv(&["direct"], &cells()));
    }

    #[test]
    fn figures_and_memory_are_rows_of_their_own() {
        let mut c = cells();
        c[0].figures = vec![("latency.mean_ns".into(), vec![3.0, 1.0, 2.0])];
        c[0].timeline = vec![("server".into(), vec![(0.0, 1_048_576.0), (1.0, 2_097_152.0)])];
        let figures = figures_csv(&c);
        assert_eq!(figures.lines().next(), Some("workload,system,figure,median,min,max,runs"));
        assert!(
            figures.contains(&format!("{},{},latency.mean_ns,2,1,3,3", c[0].workload, c[0].system)),
            "{figures}"
        );
        let memory = memory_csv(&c);
        assert!(
            memory.contains(&format!("{},{},server,1,2", c[0].workload, c[0].system)),
            "{memory}"
        );
    }

    #[test]
    fn resources_are_a_row_per_role_in_mib_and_seconds() {
        let text = resources_csv(&cells());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "workload,system,role,peak_rss_mib,cpu_s");
        assert!(lines.contains(&"tcp-bw[parallel=1],rathole-tcp,server,12.5,1.25"), "{text}");
        assert!(!text.contains(",direct,"), "direct has no roles sampled: {text}");
    }

    #[test]
    fn a_sweep_of_two_values_is_bars_grouped_by_value_and_memory_by_role_too() {
        let c = charts(&cells());
        assert_eq!(c.len(), 2, "the sweep's grouped bars, and memory");
        assert_eq!(c[0].kind, ChartKind::Bar);
        assert_eq!(c[0].categories, ["1", "4"], "a group per swept value");
        let labels: Vec<&str> = c[0].series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["direct", "rathole-tcp"], "a bar per system; gost-tcp has no runs");
        assert_eq!(c[0].series[0].points, [(0.0, 9.4), (1.0, 21.0)]);
        assert_eq!(c[0].series[1].points, [(0.0, 4.65)]);
        assert_eq!(c[0].y_label, "Throughput (Gbit/s)");
        assert_eq!(c[1].categories, ["rathole-tcp", "gost-tcp"]);
        assert_eq!(c[1].series[0].points[0], (0.0, 12.5));
    }

    #[test]
    fn unswept_workloads_get_bars_and_memory_over_time() {
        let mut cells = cells();
        cells.truncate(3);
        for c in &mut cells {
            c.workload = "tcp-bw".into();
            c.swept.clear();
        }
        cells[1].timeline = vec![("server".into(), vec![(0.0, 1048576.0), (1.0, 2097152.0)])];
        let c = charts(&cells);
        assert_eq!(c.len(), 3, "bars, memory over time, peak memory");
        assert_eq!(c[0].kind, ChartKind::Bar);
        assert_eq!(c[0].categories, ["direct", "rathole-tcp"]);
        assert_eq!(c[0].series[0].points, [(0.0, 9.4), (1.0, 4.65)]);
        assert_eq!(c[0].series[0].whiskers.len(), 2);
        assert_eq!(c[1].series[0].label, "rathole-tcp server");
        assert_eq!(c[1].series[0].points, [(0.0, 1.0), (1.0, 2.0)]);
    }

    #[test]
    fn a_rate_sweep_draws_latency_against_rate_on_log_axes() {
        let cells = rate_sweep(Unit::PerSecond(wirespeed_model::metrics::Events::Requests));
        let c = charts(&cells);
        assert_eq!(c.len(), 2, "achieved rate, and latency");
        assert_eq!(c[0].kind, ChartKind::Line);
        assert_eq!(c[0].x_label, "rate");
        assert_eq!(c[0].series[0].points, [(1.0, 0.001), (100.0, 0.1), (4000.0, 4.0)]);
        assert_eq!(c[0].y_label, "Requests (kreq/s)");
        assert!(c[1].log_x && c[1].log_y);
        assert_eq!(c[1].y_label, "Latency (ms)");
        let rathole = c[1].series.iter().find(|s| s.label == "rathole p99").unwrap();
        assert_eq!(rathole.points, [(1.0, 0.4), (100.0, 0.5), (4000.0, 30.0)]);
        assert_eq!(c[1].series.len(), 4);
    }

    /// An HTTP rate sweep of two systems at 1, 100 and 4000 req/s whose headline is `unit`.
    fn rate_sweep(unit: Unit) -> Vec<BenchCell> {
        let cell = |rate: u32, system: &str, p99_ms: f64| BenchCell {
            workload: format!("lat[rate={rate}]"),
            base: "lat".into(),
            swept: vec![("rate".into(), rate.to_string())],
            system: system.into(),
            figure: if unit == Unit::Nanos { "Latency p50" } else { "Requests" }.into(),
            unit,
            higher_is_better: unit != Unit::Nanos,
            values: vec![if unit == Unit::Nanos { p99_ms * 1e5 } else { rate as f64 }],
            p50_ns: vec![p99_ms * 1e5],
            load_cpu_per_unit: vec![],
            work_unit: None,
            compared_with: None,
            p99_ns: vec![p99_ms * 1e6],
            planned: 1,
            skipped: 0,
            failed: 0,
            memory: vec![],
            cpu: vec![],
            figures: vec![],
            timeline: vec![],
        };
        vec![
            cell(1, "direct", 0.2),
            cell(1, "rathole", 0.4),
            cell(100, "direct", 0.3),
            cell(100, "rathole", 0.5),
            cell(4000, "direct", 1.0),
            cell(4000, "rathole", 30.0),
        ]
    }

    #[test]
    fn a_sweep_is_one_table_with_a_row_per_swept_value_and_a_column_per_system() {
        let cells = rate_sweep(Unit::PerSecond(wirespeed_model::metrics::Events::Requests));
        let md = markdown("rates", &["direct"], &cells, &[]);
        let sections: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(
            sections,
            [
                "## lat: Requests (median of repeats) by rate",
                "## lat: Requests as % of direct by rate",
                "## lat: latency p50 and p99 (median of repeats) by rate",
                "## lat: every cell",
            ]
        );
        assert!(
            md.contains("| rate | direct p50 | direct p99 | rathole p50 | rathole p99 |"),
            "{md}"
        );
        assert!(md.contains("| 4000 | 100 µs | 1.00 ms | 3.00 ms | 30.0 ms |"), "{md}");
        assert!(md.contains("| 100 | 100.0 % | 100.0 % |"), "{md}");
    }

    #[test]
    fn a_fixed_rate_sweep_leads_with_latency_and_draws_it_once() {
        let cells = rate_sweep(Unit::Nanos);
        let md = markdown("rates", &[], &cells, &[]);
        let sections: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(
            sections,
            ["## lat: latency p50 and p99 (median of repeats) by rate", "## lat: every cell"]
        );
        let c = charts(&cells);
        assert_eq!(c.len(), 1, "latency against rate, not its p50 twice");
        assert_eq!(c[0].series.len(), 4);
    }

    #[test]
    fn several_baselines_each_get_their_column() {
        let c = cells();
        let rows: Vec<&BenchCell> = c.iter().take(3).collect();
        let t = tables::per_system(&rows, &["rathole-tcp", FASTEST]);
        assert!(t.headers.contains(&"% of rathole-tcp".to_string()));
        assert!(t.headers.contains(&"% of fastest".to_string()));
        let at = |h: &str| t.headers.iter().position(|x| x == h).unwrap();
        assert_eq!(t.rows[0][at("% of rathole-tcp")], "202.2 %");
        assert_eq!(t.rows[0][at("% of fastest")], "100.0 %");
        assert_eq!(t.rows[1][at("% of fastest")], "49.5 %");
        assert_eq!(t.rows[2][at("% of fastest")], "-", "skipped: no figure");
        let csv = csv(&["rathole-tcp", FASTEST], &c);
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .contains(",percent_of_rathole-tcp,percent_of_fastest,"));
    }

    #[test]
    fn the_fastest_baseline_is_the_best_median_each_way() {
        let c = cells();
        let rows: Vec<&BenchCell> = c.iter().take(3).collect();
        assert_eq!(baseline_of(&rows, Some(FASTEST)).unwrap().system, "direct");
        let mut slow = c[..3].to_vec();
        for cell in &mut slow {
            cell.higher_is_better = false;
        }
        let rows: Vec<&BenchCell> = slow.iter().collect();
        assert_eq!(baseline_of(&rows, Some(FASTEST)).unwrap().system, "rathole-tcp");
        assert_eq!(baseline_of(&rows, Some("direct")).unwrap().system, "direct");
        assert!(baseline_of(&rows, None).is_none());
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
