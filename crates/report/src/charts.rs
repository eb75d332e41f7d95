//! What to draw, decided once: a run or a comparison becomes a list of [`Chart`]s (titles, axis
//! labels with units, scaled values, log scales where latency spans decades). The SVG/PNG
//! painter ([`crate::plot`]) and the HTML report's Chart.js code both draw these same charts.

use serde::Serialize;
use wirespeed_model::compare::Comparison;
use wirespeed_model::histogram::HistogramBucket;
use wirespeed_model::metrics::{Metric, Series, Unit};
use wirespeed_model::Report;

/// How a chart draws its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartKind {
    /// Lines through `(x, y)` points.
    Line,
    /// One bar per category (`categories`), one value per series and category.
    Bar,
}

/// One line, or one set of bars.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartSeries {
    /// Legend text.
    pub label: String,
    /// `(x, y)` for lines; `(category index, y)` for bars.
    pub points: Vec<(f64, f64)>,
    /// Bars: the low and high end of each bar's confidence interval, in `points` order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub whiskers: Vec<(f64, f64)>,
}

/// A chart, in display units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chart {
    /// Title above it.
    pub title: String,
    /// Lines or bars.
    pub kind: ChartKind,
    /// X axis label, with its unit.
    pub x_label: String,
    /// Y axis label, with its unit.
    pub y_label: String,
    /// X on a log scale.
    pub log_x: bool,
    /// Y on a log scale.
    pub log_y: bool,
    /// Bars: the category names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// What is drawn.
    pub series: Vec<ChartSeries>,
}

/// The divisor and unit text that keep values of magnitude `max` readable.
pub fn display_unit(unit: Unit, max: f64) -> (f64, String) {
    let steps = |base: &str, prefixes: &[(f64, &str)]| {
        let (d, p) = prefixes.iter().rev().find(|(d, _)| max >= *d).copied().unwrap_or(prefixes[0]);
        (d, format!("{p}{base}"))
    };
    match unit {
        Unit::BitsPerSecond => {
            steps("bit/s", &[(1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")])
        }
        Unit::PerSecond(events) => steps(events.name(), &[(1.0, ""), (1e3, "k"), (1e6, "M")]),
        Unit::Nanos => {
            let (d, u) = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")]
                .into_iter()
                .rev()
                .find(|(d, _)| max >= *d)
                .unwrap_or((1.0, "ns"));
            (d, u.to_string())
        }
        Unit::Ratio => (0.01, "%".into()),
        Unit::Count => (1.0, String::new()),
        Unit::Rpm => (1.0, "RPM".into()),
    }
}

/// An axis label: `what (unit)`, or `what` without a unit.
pub(crate) fn axis(what: &str, unit: &str) -> String {
    if unit.is_empty() {
        what.to_string()
    } else {
        format!("{what} ({unit})")
    }
}

/// Lines of one unit, scaled together.
fn line_chart(title: &str, what: &str, unit: Unit, lines: &[Series], log_y: bool) -> Option<Chart> {
    let max = lines.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    if lines.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    let (div, unit_text) = display_unit(unit, max);
    Some(Chart {
        title: title.into(),
        kind: ChartKind::Line,
        x_label: "Time (s)".into(),
        y_label: axis(what, &unit_text),
        log_x: false,
        log_y: log_y && spans_decades(lines.iter().flat_map(|s| s.points.iter().map(|p| p.1))),
        categories: Vec::new(),
        series: lines
            .iter()
            .map(|s| ChartSeries {
                label: s.label.clone(),
                points: s.points.iter().map(|&(x, y)| (x, y / div)).collect(),
                whiskers: Vec::new(),
            })
            .collect(),
    })
}

/// True when the positive values span at least a decade: only then does a log axis help (and
/// it has tick labels to show). A log axis of zeros would have nothing to draw.
pub(crate) fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    hi / lo >= 10.0
}

/// Histogram buckets merged into at most `bins` log-spaced bins: `(upper edge ns, count)`.
pub fn log_bins(histogram: &[HistogramBucket], bins: usize) -> Vec<(f64, u64)> {
    let lo = histogram.iter().map(|b| b.value_ns.max(1)).min().unwrap_or(1) as f64;
    let hi = histogram.iter().map(|b| b.value_ns.max(1)).max().unwrap_or(1) as f64;
    if histogram.len() <= bins || hi <= lo {
        return histogram.iter().map(|b| (b.value_ns.max(1) as f64, b.count)).collect();
    }
    let step = (hi / lo).ln() / bins as f64;
    let mut out: Vec<(f64, u64)> = (1..=bins).map(|i| (lo * (step * i as f64).exp(), 0)).collect();
    for b in histogram {
        let v = b.value_ns.max(1) as f64;
        let i = (((v / lo).ln() / step).ceil() as usize).clamp(1, bins) - 1;
        out[i].1 += b.count;
    }
    out.retain(|b| b.1 > 0);
    out
}

/// The charts of one run: rate over time, latency percentiles over time, the latency
/// histogram and its CDF (each where the kind has it).
pub fn run_charts(report: &Report) -> Vec<Chart> {
    let series = report.series();
    let mut out = Vec::new();
    if let Some(first) = series.rate.first() {
        let what = match first.unit {
            Unit::BitsPerSecond => "Throughput",
            _ => "Rate",
        };
        out.extend(line_chart(
            &format!("{what} per interval"),
            what,
            first.unit,
            &series.rate,
            false,
        ));
    }
    out.extend(line_chart(
        "Latency percentiles per interval",
        "Latency",
        Unit::Nanos,
        &series.latency,
        true,
    ));
    if let Some(h) = report.histogram() {
        out.extend(histogram_charts(h));
    }
    out
}

/// The histogram as counts over log-spaced latency, and as a CDF.
fn histogram_charts(h: &[HistogramBucket]) -> Vec<Chart> {
    let binned = log_bins(h, 60);
    let max = binned.iter().map(|b| b.0).fold(0.0, f64::max);
    let (div, unit) = display_unit(Unit::Nanos, max);
    let total: u64 = binned.iter().map(|b| b.1).sum();
    let log_x = spans_decades(binned.iter().map(|b| b.0));
    let mut seen = 0;
    let cdf: Vec<(f64, f64)> = binned
        .iter()
        .map(|&(v, c)| {
            seen += c;
            (v / div, seen as f64 / total.max(1) as f64 * 100.0)
        })
        .collect();
    vec![
        Chart {
            title: "Latency histogram".into(),
            kind: ChartKind::Line,
            x_label: axis("Latency", &unit),
            y_label: "Samples per bin".into(),
            log_x,
            log_y: false,
            categories: Vec::new(),
            series: vec![ChartSeries {
                label: "samples".into(),
                points: binned.iter().map(|&(v, c)| (v / div, c as f64)).collect(),
                whiskers: Vec::new(),
            }],
        },
        Chart {
            title: "Latency CDF".into(),
            kind: ChartKind::Line,
            x_label: axis("Latency", &unit),
            y_label: "Samples at or below (%)".into(),
            log_x,
            log_y: false,
            categories: Vec::new(),
            series: vec![ChartSeries { label: "CDF".into(), points: cdf, whiskers: Vec::new() }],
        },
    ]
}

/// The charts of a comparison: a bar chart per figure (median per run, with the confidence
/// interval as whiskers), then every run's rate over time on one chart.
pub fn comparison_charts(runs: &[&Report], labels: &[String], cmp: &Comparison) -> Vec<Chart> {
    let mut out = Vec::new();
    for base in cmp.baseline.iter().take(4) {
        let mut values = vec![(0.0, centre(base))];
        let mut whiskers = vec![(centre(base), centre(base))];
        for (i, other) in cmp.others.iter().enumerate() {
            let Some(c) = other.iter().find(|c| c.metric.key == base.key) else { continue };
            let v = centre(&c.metric);
            values.push(((i + 1) as f64, v));
            let b = centre(base);
            whiskers.push(c.interval.map_or((v, v), |(lo, hi)| (lo * b, hi * b)));
        }
        let max =
            whiskers.iter().map(|w| w.1).chain(values.iter().map(|v| v.1)).fold(0.0, f64::max);
        let (div, unit) = display_unit(base.unit, max);
        out.push(Chart {
            title: format!("{} (median of intervals)", base.label),
            kind: ChartKind::Bar,
            x_label: "Run".into(),
            y_label: axis(base.label, &unit),
            log_x: false,
            log_y: false,
            categories: labels.to_vec(),
            series: vec![ChartSeries {
                label: base.label.into(),
                points: values.iter().map(|&(x, y)| (x, y / div)).collect(),
                whiskers: whiskers.iter().map(|&(lo, hi)| (lo / div, hi / div)).collect(),
            }],
        });
    }
    let lines: Vec<Series> = runs
        .iter()
        .zip(labels)
        .filter_map(|(r, label)| {
            let s = r.series().rate.into_iter().next()?;
            Some(Series { label: label.clone(), ..s })
        })
        .collect();
    if let Some(first) = lines.first() {
        out.extend(line_chart("Rate per interval, by run", "Rate", first.unit, &lines, false));
    }
    let latency: Vec<Series> = runs
        .iter()
        .zip(labels)
        .filter_map(|(r, label)| {
            let s = r
                .series()
                .latency
                .into_iter()
                .find(|s| s.label == "p99" || s.label == "round trip")?;
            Some(Series { label: format!("{label} {}", s.label), ..s })
        })
        .collect();
    out.extend(line_chart(
        "Latency p99 per interval, by run",
        "Latency",
        Unit::Nanos,
        &latency,
        true,
    ));
    out
}

/// A metric's middle: the median of its samples, or its summary value without samples.
fn centre(m: &Metric) -> f64 {
    if m.samples.is_empty() {
        m.value
    } else {
        wirespeed_model::compare::median(&m.samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_units_follow_magnitude() {
        assert_eq!(display_unit(Unit::BitsPerSecond, 9.4e9), (1e9, "Gbit/s".into()));
        assert_eq!(display_unit(Unit::Nanos, 45_000.0), (1e3, "µs".into()));
        assert_eq!(
            display_unit(Unit::PerSecond(wirespeed_model::metrics::Events::Queries), 12.0),
            (1.0, "q/s".into())
        );
        assert_eq!(display_unit(Unit::Ratio, 0.5).1, "%");
    }

    #[test]
    fn log_scales_only_across_decades() {
        assert!(spans_decades([20.0, 50.0, 300.0].into_iter()));
        assert!(!spans_decades([20.0, 50.0, 0.0].into_iter()));
        assert!(!spans_decades([0.0, 0.0].into_iter()));
    }

    #[test]
    fn log_bins_keep_every_sample() {
        let h: Vec<HistogramBucket> =
            (1..=1000).map(|i| HistogramBucket { value_ns: i * 1000, count: i % 7 + 1 }).collect();
        let bins = log_bins(&h, 50);
        assert!(bins.len() <= 50);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), h.iter().map(|b| b.count).sum::<u64>());
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
