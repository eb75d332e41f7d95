//! The vocabulary of the figures a run is judged by, named once for every consumer: the
//! history's headline column, `compare`'s ratios, the key-figure tables of Markdown and HTML,
//! and the charts. Each kind says which figures it has
//! ([`KindReport::metrics`](crate::kind::KindReport::metrics), with per-interval samples: the
//! spread `compare` turns into a confidence interval) and which time series a chart draws
//! ([`KindReport::series`](crate::kind::KindReport::series)); the helpers here build them the
//! same way for every kind.

use crate::histogram::{HistogramBucket, LatencyStats};

/// What a figure counts, so renderers know how to print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bits per second.
    BitsPerSecond,
    /// Events per second.
    PerSecond(Events),
    /// Nanoseconds.
    Nanos,
    /// A fraction of 1 (loss, success).
    Ratio,
    /// A plain count.
    Count,
    /// Round trips per minute (responsiveness).
    Rpm,
}

impl Unit {
    /// A short stable name, as stored in the results database.
    pub fn code(self) -> &'static str {
        match self {
            Unit::BitsPerSecond => "bit/s",
            Unit::PerSecond(events) => events.name(),
            Unit::Nanos => "ns",
            Unit::Ratio => "ratio",
            Unit::Count => "count",
            Unit::Rpm => "RPM",
        }
    }

    /// The unit [`Unit::code`] names.
    pub fn from_code(code: &str) -> Option<Unit> {
        Some(match code {
            "bit/s" => Unit::BitsPerSecond,
            "ns" => Unit::Nanos,
            "ratio" => Unit::Ratio,
            "count" => Unit::Count,
            "RPM" => Unit::Rpm,
            other => Unit::PerSecond(Events::from_name(other)?),
        })
    }
}

crate::named! {
    /// What a per-second rate counts, named as its unit is printed.
    pub enum Events {
        /// Round trips of a latency test.
        Messages = "msg/s",
        /// TCP connections.
        Connections = "conn/s",
        /// HTTP requests.
        Requests = "req/s",
        /// DNS queries.
        Queries = "q/s",
        /// Datagrams of a packet-rate test (`wirespeed pps`).
        Packets = "pkt/s",
    }
}

/// A comparison's baseline meaning "the best of those compared" (by [`Better`]) rather than a
/// named one: `report.baseline = "fastest"` in a scenario, the DNS study's "% of the fastest".
pub const FASTEST: &str = "fastest";

/// Which way is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// More is better (throughput, rates).
    Higher,
    /// Less is better (latency, loss).
    Lower,
}

/// One comparable figure of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Stable name, as in JSON (`throughput_bps`, `latency_p99_ns`).
    pub key: &'static str,
    /// What people read (`Throughput`, `Latency p99`).
    pub label: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Which way is good.
    pub better: Better,
    /// The run's figure (from the summary).
    pub value: f64,
    /// The same figure for each measured interval (warm-up left out); empty when the kind
    /// keeps no intervals.
    pub samples: Vec<f64>,
}

/// A line on a chart: `(seconds since start, value)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Unit of the values.
    pub unit: Unit,
    /// The points, in time order.
    pub points: Vec<(f64, f64)>,
}

/// What a chart of one run draws: rates over time and latency percentiles over time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSeries {
    /// Throughput or request rate per interval (one unit for all lines).
    pub rate: Vec<Series>,
    /// Latency percentiles per interval, nanoseconds.
    pub latency: Vec<Series>,
    /// The points are single probes at their send times, not interval ends (a ping's): a table
    /// of intervals has nothing to show.
    pub per_probe: bool,
}

pub(crate) fn metric(key: &'static str, label: &'static str, unit: Unit, better: Better) -> Metric {
    Metric { key, label, unit, better, value: 0.0, samples: Vec::new() }
}

impl Metric {
    pub(crate) fn of(mut self, value: f64, samples: impl IntoIterator<Item = f64>) -> Self {
        self.value = value;
        self.samples = samples.into_iter().collect();
        self
    }
}

/// Seconds at an interval's end.
pub(crate) fn secs(end_ns: u64) -> f64 {
    end_ns as f64 / 1e9
}

/// The p50 and p99 figures of one latency distribution: their keys and labels.
pub(crate) struct Percentiles {
    /// Key and label of the median.
    pub(crate) p50: (&'static str, &'static str),
    /// Key and label of the 99th percentile.
    pub(crate) p99: (&'static str, &'static str),
}

/// p50 and p99 of a latency summary, with per-interval samples from intervals that saw any.
pub(crate) fn latency_metrics<'a>(
    names: Percentiles,
    summary: &LatencyStats,
    intervals: impl Iterator<Item = &'a LatencyStats> + Clone,
) -> Vec<Metric> {
    // No sample, no percentile (ethr's connections/s test times no connect): a 0 would read
    // as a measurement.
    if summary.count == 0 {
        return Vec::new();
    }
    let seen = intervals.filter(|s| s.count > 0);
    vec![
        metric(names.p50.0, names.p50.1, Unit::Nanos, Better::Lower)
            .of(summary.p50_ns as f64, seen.clone().map(|s| s.p50_ns as f64)),
        metric(names.p99.0, names.p99.1, Unit::Nanos, Better::Lower)
            .of(summary.p99_ns as f64, seen.map(|s| s.p99_ns as f64)),
    ]
}

/// Percentile lines p50, p90 and p99 over `(end_ns, stats)` points that saw any samples.
pub(crate) fn percentile_lines<'a>(
    points: impl Iterator<Item = (u64, &'a LatencyStats)> + Clone,
) -> Vec<Series> {
    let seen = points.filter(|(_, s)| s.count > 0);
    let line = |label: &str, f: fn(&LatencyStats) -> u64| Series {
        label: label.into(),
        unit: Unit::Nanos,
        points: seen.clone().map(|(t, s)| (secs(t), f(s) as f64)).collect(),
    };
    vec![line("p50", |s| s.p50_ns), line("p90", |s| s.p90_ns), line("p99", |s| s.p99_ns)]
}

/// What a chart of a load kind draws: its rate per interval (`label`, counting `events`)
/// and the latency percentiles of the same intervals, from `(end_ns, rate, stats)` points.
pub(crate) fn load_series<'a>(
    label: &str,
    events: Events,
    points: impl Iterator<Item = (u64, f64, &'a LatencyStats)> + Clone,
) -> RunSeries {
    RunSeries {
        rate: vec![rate_line(
            label,
            Unit::PerSecond(events),
            points.clone().map(|(t, r, _)| (t, r)),
        )],
        latency: percentile_lines(points.map(|(t, _, s)| (t, s))),
        per_probe: false,
    }
}

/// A line of rates over `(end_ns, value)` points.
pub(crate) fn rate_line(
    label: impl Into<String>,
    unit: Unit,
    points: impl Iterator<Item = (u64, f64)>,
) -> Series {
    Series { label: label.into(), unit, points: points.map(|(t, v)| (secs(t), v)).collect() }
}

/// A histogram as a report keeps it, `None` when empty.
pub(crate) fn non_empty(histogram: &[HistogramBucket]) -> Option<&[HistogramBucket]> {
    (!histogram.is_empty()).then_some(histogram)
}

/// The cumulative fraction at each bucket of `histogram`: `(value_ns, fraction ≤ value)`.
pub fn cdf(histogram: &[HistogramBucket]) -> Vec<(f64, f64)> {
    let total: u64 = histogram.iter().map(|b| b.count).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut seen = 0;
    histogram
        .iter()
        .map(|b| {
            seen += b.count;
            (b.value_ns as f64, seen as f64 / total as f64)
        })
        .collect()
}
