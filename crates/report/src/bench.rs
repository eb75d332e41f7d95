//! A scenario's results as tables: for each workload, one row per system with the median of
//! its headline figure over the repeats, the spread (lowest–highest), the percentage of the
//! baseline system's median (the DNS study's "% of BIND", or of each workload's fastest), the
//! runs that counted, and each role's peak memory. Markdown for people, CSV and JSON for the
//! rest; charts of bars per system, of a sweep's figure and latency against the swept value
//! (latency against rate), and of each role's memory over time.

use serde::Serialize;
use wirespeed_model::metrics::{Unit, FASTEST};

use crate::charts::{axis, display_unit, Chart, ChartKind, ChartSeries};
use crate::table::Table;
use crate::units::figure;

/// One system's results for one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchCell {
    /// The workload (with its swept values).
    pub workload: String,
    /// The workload's own name, without swept values (cells of one sweep share it).
    pub base: String,
    /// The swept options and their values in this cell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub swept: Vec<(String, String)>,
    /// The system.
    pub system: String,
    /// The headline figure's label (`Throughput`).
    pub figure: String,
    /// Its unit.
    #[serde(serialize_with = "unit_code")]
    pub unit: Unit,
    /// Whether more of it is better (a rate) or less (a time).
    pub higher_is_better: bool,
    /// Its value in each finished run, in repeat order.
    pub values: Vec<f64>,
    /// Median latency (ns) of each finished run, when its kind measures latency.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub p50_ns: Vec<f64>,
    /// 99th percentile latency (ns) of each finished run, when its kind measures latency.
    #[serde(skip_serializing_if = "Vec::is_empty")]
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
    /// Each role's CPU time in a run (seconds, user and system), the median over the runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu: Vec<(String, f64)>,
    /// Each role's RSS over the first finished run: `(seconds, bytes)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<(String, Vec<(f64, f64)>)>,
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

/// The workloads, in the order they first appear.
fn workloads(cells: &[BenchCell]) -> Vec<&str> {
    first_seen(cells.iter().map(|c| c.workload.as_str()))
}

fn table(cells: &[&BenchCell], baseline: Option<&str>) -> Table {
    let base = baseline_of(cells, baseline);
    // A system whose runs were all skipped has no figure; the header comes from one that has.
    let first = cells.iter().find(|c| !c.figure.is_empty());
    let head = first.map_or("Result".into(), |c| format!("{} (median)", c.figure));
    // Latency beside a rate (an HTTP rate sweep); not twice when latency is the headline.
    let latency =
        cells.iter().any(|c| !c.p99_ns.is_empty()) && first.is_some_and(|c| c.unit != Unit::Nanos);
    let pct = format!("% of {}", baseline.unwrap_or("baseline"));
    let mut header = vec!["System".to_string(), format!(">{head}"), ">Spread".into()];
    if latency {
        header.extend([">p50".to_string(), ">p99".into()]);
    }
    header.extend([format!(">{pct}"), ">Runs".into(), "Peak RSS".into(), "CPU".into()]);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    for c in cells {
        let shown = |v: f64| figure(v, c.unit);
        let spread =
            c.spread().map_or("-".into(), |(lo, hi)| format!("{} – {}", shown(lo), shown(hi)));
        let memory: Vec<String> = c
            .memory
            .iter()
            .map(|(role, b)| format!("{role} {:.1} MiB", b / (1 << 20) as f64))
            .collect();
        let cpu: Vec<String> =
            c.cpu.iter().map(|(role, secs)| format!("{role} {secs:.2} s")).collect();
        let mut row = vec![c.system.clone(), median(&c.values).map_or("-".into(), shown), spread];
        if latency {
            for v in [&c.p50_ns, &c.p99_ns] {
                row.push(median(v).map_or("-".into(), |ns| figure(ns, Unit::Nanos)));
            }
        }
        row.extend([
            percent_of(c, base).map_or("-".into(), |p| format!("{p:.1} %")),
            c.runs(),
            memory.join(", "),
            cpu.join(", "),
        ]);
        t.push(row);
    }
    t
}

/// The results as a Markdown document: a table per workload.
pub fn markdown(title: &str, baseline: Option<&str>, cells: &[BenchCell]) -> String {
    let mut out = format!("# {title}\n");
    for w in workloads(cells) {
        let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
        out.push_str(&format!("\n## {w}\n\n"));
        out.push_str(&table(&rows, baseline).markdown());
    }
    out
}

/// For each workload: a line chart of the figure against the swept value when the workload is
/// a sweep of one number over three values or more (and of p50/p99 latency against it, when measured: latency against
/// rate), else bars per system (the median, whiskers from lowest to highest); each role's
/// memory over time in each unswept workload; and each system's peak RSS by role.
pub fn charts(cells: &[BenchCell]) -> Vec<Chart> {
    let mut out = Vec::new();
    let mut swept_done: Vec<&str> = Vec::new();
    for w in workloads(cells) {
        let rows: Vec<&BenchCell> =
            cells.iter().filter(|c| c.workload == w && !c.values.is_empty()).collect();
        let Some(first) = rows.first() else { continue };
        if let Some(key) = numeric_sweep(cells, &first.base) {
            if !swept_done.contains(&first.base.as_str()) {
                swept_done.push(&first.base);
                out.extend(sweep_charts(cells, &first.base, key));
            }
            continue;
        }
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
        out.extend(memory_over_time(w, &rows));
    }
    // Memory: the largest median peak of each role on each system, over the workloads.
    let with_memory = || cells.iter().filter(|c| !c.memory.is_empty());
    let systems = first_seen(with_memory().map(|c| c.system.as_str()));
    let roles = first_seen(with_memory().flat_map(|c| c.memory.iter().map(|(r, _)| r.as_str())));
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

/// The option a workload `base` sweeps, when it sweeps exactly one, over at least three
/// numbers (two are clearer as bars: one stream and four).
fn numeric_sweep<'a>(cells: &'a [BenchCell], base: &str) -> Option<&'a str> {
    let of_base: Vec<&BenchCell> = cells.iter().filter(|c| c.base == base).collect();
    let key = match of_base.first()?.swept.as_slice() {
        [(key, _)] => key.as_str(),
        _ => return None,
    };
    let mut values: Vec<f64> = Vec::new();
    for c in &of_base {
        let v: f64 = c.swept.first().filter(|(k, _)| k == key)?.1.parse().ok()?;
        if !values.contains(&v) {
            values.push(v);
        }
    }
    (values.len() >= 3).then_some(key)
}

/// A sweep's lines, one per system: the headline figure's median against the swept value, and
/// when latency was measured, p50 and p99 against it.
fn sweep_charts(cells: &[BenchCell], base: &str, key: &str) -> Vec<Chart> {
    let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.base == base).collect();
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
    let lines: Vec<(String, Vec<(f64, f64)>)> =
        systems.iter().map(|s| (s.to_string(), line(s, |c| &c.values))).collect();
    let max = lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)).fold(0.0, f64::max);
    let (div, unit) = display_unit(first.unit, max);
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
    out.push(chart(
        format!("{base}: {} against {key} (median of repeats)", first.figure),
        axis(&first.figure, &unit),
        div,
        false,
        lines,
    ));
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
    if !latency.is_empty() {
        let all = latency.iter().flat_map(|(_, p)| p.iter().map(|p| p.1));
        let (div, unit) = display_unit(Unit::Nanos, all.clone().fold(0.0, f64::max));
        let log_y = super::charts::spans_decades(all);
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

/// The results as a self-contained HTML page: the tables and interactive charts.
pub fn html(title: &str, baseline: Option<&str>, cells: &[BenchCell]) -> String {
    let sections: Vec<(String, Table)> = workloads(cells)
        .into_iter()
        .map(|w| {
            let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
            (w.to_string(), table(&rows, baseline))
        })
        .collect();
    crate::html::bench_document(title, &sections, charts(cells))
}

/// The results as CSV: a row per workload and system, numbers unformatted.
pub fn csv(baseline: Option<&str>, cells: &[BenchCell]) -> String {
    let mut out = String::from("workload,system,figure,unit,median,min,max,p50_ns,p99_ns,percent_of_baseline,runs_done,runs_planned,skipped,failed\n");
    for w in workloads(cells) {
        let rows: Vec<&BenchCell> = cells.iter().filter(|c| c.workload == w).collect();
        let base = baseline_of(&rows, baseline);
        for c in &rows {
            let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let (lo, hi) = c.spread().unzip();
            let cells = [
                c.workload.clone(),
                c.system.clone(),
                c.figure.clone(),
                c.unit.code().to_string(),
                num(median(&c.values)),
                num(lo),
                num(hi),
                num(median(&c.p50_ns)),
                num(median(&c.p99_ns)),
                num(percent_of(c, base)),
                c.values.len().to_string(),
                c.planned.to_string(),
                c.skipped.to_string(),
                c.failed.to_string(),
            ];
            out.push_str(&crate::csv::record(cells));
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
            base: "tcp-bw".into(),
            swept: vec![("parallel".into(), w[w.len() - 2..w.len() - 1].into())],
            system: s.into(),
            figure: "Throughput".into(),
            unit: Unit::BitsPerSecond,
            higher_is_better: true,
            p50_ns: vec![],
            p99_ns: vec![],
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
        insta::assert_snapshot!(markdown("transports", Some("direct"), &cells()));
    }

    #[test]
    fn bench_csv() {
        insta::assert_snapshot!(csv(Some("direct"), &cells()));
    }

    #[test]
    fn a_sweep_of_two_values_is_bars_and_memory_by_role_too() {
        let c = charts(&cells());
        assert_eq!(c.len(), 3, "two workload cells and memory");
        assert_eq!(c[0].kind, ChartKind::Bar);
        assert_eq!(c[0].categories, ["direct", "rathole-tcp"], "gost-tcp has no runs");
        assert_eq!(c[0].y_label, "Throughput (Gbit/s)");
        assert_eq!(c[2].categories, ["rathole-tcp", "gost-tcp"]);
        assert_eq!(c[2].series[0].points[0], (0.0, 12.5));
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
        let cell = |rate: u32, system: &str, p99_ms: f64| BenchCell {
            workload: format!("lat[rate={rate}]"),
            base: "lat".into(),
            swept: vec![("rate".into(), rate.to_string())],
            system: system.into(),
            figure: "Requests".into(),
            unit: Unit::PerSecond(wirespeed_model::metrics::Events::Requests),
            higher_is_better: true,
            values: vec![rate as f64],
            p50_ns: vec![p99_ms * 1e5],
            p99_ns: vec![p99_ms * 1e6],
            planned: 1,
            skipped: 0,
            failed: 0,
            memory: vec![],
            cpu: vec![],
            timeline: vec![],
        };
        let cells = [
            cell(1, "direct", 0.2),
            cell(1, "rathole", 0.4),
            cell(100, "direct", 0.3),
            cell(100, "rathole", 0.5),
            cell(4000, "direct", 1.0),
            cell(4000, "rathole", 30.0),
        ];
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
        let md = markdown("rates", Some("direct"), &cells);
        assert!(md.contains("| p50 | p99 | % of direct |"), "{md}");
        assert!(md.contains("| 3.00 ms | 30.0 ms |"), "{md}");
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
