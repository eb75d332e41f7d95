//! The figures a run is judged by, named once for every consumer: the history's headline
//! column, `compare`'s ratios, the key-figure tables of Markdown and HTML, and the charts.
//!
//! [`metrics`] lists a report's comparable figures, headline first, each with its per-interval
//! samples (the spread `compare` turns into a confidence interval); [`series`] gives the time
//! series a chart draws; [`histogram`] the latency distribution, where the kind keeps one.

use crate::histogram::{HistogramBucket, LatencyStats};
use crate::kinds::bandwidth::FlowFigures;
use crate::kinds::ping::ProbeOutcome;
use crate::report::{Report, ReportBody};
use crate::rules::Protocol;

/// What a figure counts, so renderers know how to print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bits per second.
    BitsPerSecond,
    /// Events per second; the text names the events (`req/s`, `q/s`, `conn/s`, `msg/s`).
    PerSecond(&'static str),
    /// Nanoseconds.
    Nanos,
    /// A fraction of 1 (loss, success).
    Ratio,
    /// A plain count.
    Count,
}

impl Unit {
    /// A short stable name, as stored in the results database.
    pub fn code(self) -> &'static str {
        match self {
            Unit::BitsPerSecond => "bit/s",
            Unit::PerSecond(events) => events,
            Unit::Nanos => "ns",
            Unit::Ratio => "ratio",
            Unit::Count => "count",
        }
    }

    /// The unit [`Unit::code`] names.
    pub fn from_code(code: &str) -> Option<Unit> {
        Some(match code {
            "bit/s" => Unit::BitsPerSecond,
            "ns" => Unit::Nanos,
            "ratio" => Unit::Ratio,
            "count" => Unit::Count,
            "msg/s" => Unit::PerSecond("msg/s"),
            "conn/s" => Unit::PerSecond("conn/s"),
            "req/s" => Unit::PerSecond("req/s"),
            "q/s" => Unit::PerSecond("q/s"),
            _ => return None,
        })
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
}

fn metric(key: &'static str, label: &'static str, unit: Unit, better: Better) -> Metric {
    Metric { key, label, unit, better, value: 0.0, samples: Vec::new() }
}

impl Metric {
    fn of(mut self, value: f64, samples: impl IntoIterator<Item = f64>) -> Self {
        self.value = value;
        self.samples = samples.into_iter().collect();
        self
    }
}

/// Seconds at an interval's end.
fn secs(end_ns: u64) -> f64 {
    end_ns as f64 / 1e9
}

/// Which end of a flow measures a figure.
#[derive(Clone, Copy)]
enum Side {
    Sender,
    Receiver,
}

/// The comparable figures of `report`, headline first.
pub fn metrics(report: &Report) -> Vec<Metric> {
    match &report.body {
        ReportBody::Bandwidth(b) => {
            let measured: Vec<_> = b.intervals.iter().filter(|i| !i.omitted).collect();
            // A figure's samples come only from intervals where the end that measures it did:
            // against an iperf3 peer one end shares nothing until the summary.
            let flow_samples = |k: usize, by: Side, f: &dyn Fn(&FlowFigures) -> Option<f64>| {
                measured
                    .iter()
                    .filter_map(|i| {
                        let flow = i.flows.get(k)?;
                        let end = match by {
                            Side::Sender => flow.flow.sender(),
                            Side::Receiver => flow.flow.receiver(),
                        };
                        if i.measured_by(end) {
                            f(flow)
                        } else {
                            None
                        }
                    })
                    .collect::<Vec<_>>()
            };
            let rate_samples = |k: usize| {
                measured
                    .iter()
                    .filter_map(|i| i.flows.get(k).map(|f| i.measured_bps(f)))
                    .collect::<Vec<_>>()
            };
            let primary = &b.summary.primary.total;
            let mut out =
                vec![metric("throughput_bps", "Throughput", Unit::BitsPerSecond, Better::Higher)
                    .of(primary.received_bps, rate_samples(0))];
            if let Some(rev) = &b.summary.reverse {
                out.push(
                    metric(
                        "reverse_throughput_bps",
                        "Reverse throughput",
                        Unit::BitsPerSecond,
                        Better::Higher,
                    )
                    .of(rev.total.received_bps, rate_samples(1)),
                );
            }
            if b.spec.protocol == Protocol::Udp {
                out.push(metric("loss_ratio", "Datagram loss", Unit::Ratio, Better::Lower).of(
                    primary.loss_ratio.unwrap_or(0.0),
                    flow_samples(0, Side::Receiver, &|f| f.total.loss_ratio),
                ));
                out.push(metric("jitter_ns", "Jitter", Unit::Nanos, Better::Lower).of(
                    primary.jitter_ns.unwrap_or(0.0),
                    flow_samples(0, Side::Receiver, &|f| f.total.jitter_ns),
                ));
            } else if let Some(r) = primary.retransmits {
                out.push(metric("retransmits", "Retransmits", Unit::Count, Better::Lower).of(
                    r as f64,
                    flow_samples(0, Side::Sender, &|f| f.total.retransmits.map(|r| r as f64)),
                ));
            }
            out
        }
        ReportBody::Latency(l) => {
            let measured: Vec<_> = l.intervals.iter().filter(|i| !i.omitted).collect();
            let mut out =
                latency_metrics(&l.summary.rtt, measured.iter().map(|i| &i.rtt), "Round trip");
            out.push(
                metric(
                    "messages_per_second",
                    "Messages/s",
                    Unit::PerSecond("msg/s"),
                    Better::Higher,
                )
                .of(l.summary.messages_per_second, measured.iter().map(|i| i.messages_per_second)),
            );
            out
        }
        ReportBody::Cps(c) => {
            let measured: Vec<_> = c.intervals.iter().filter(|i| !i.omitted).collect();
            let mut out = vec![metric(
                "connections_per_second",
                "Connections/s",
                Unit::PerSecond("conn/s"),
                Better::Higher,
            )
            .of(
                c.summary.connections_per_second,
                measured.iter().map(|i| i.connections_per_second),
            )];
            out.extend(latency_metrics(
                &c.summary.connect,
                measured.iter().map(|i| &i.connect),
                "Connect",
            ));
            out
        }
        ReportBody::Ping(p) => {
            let rtts: Vec<f64> = p
                .probes
                .iter()
                .filter_map(|pr| match pr.outcome {
                    ProbeOutcome::Reply { rtt_ns, .. } => Some(rtt_ns as f64),
                    _ => None,
                })
                .collect();
            let mut out = vec![metric("rtt_p50_ns", "Round trip p50", Unit::Nanos, Better::Lower)
                .of(p.summary.rtt.p50_ns as f64, rtts.clone())];
            out.push(
                metric("rtt_mean_ns", "Round trip mean", Unit::Nanos, Better::Lower)
                    .of(p.summary.rtt.mean_ns, rtts),
            );
            out.push(
                metric("loss_ratio", "Loss", Unit::Ratio, Better::Lower)
                    .of(p.summary.loss_ratio, Vec::new()),
            );
            out
        }
        ReportBody::Trace(t) => {
            let last = t.summary.hops.last();
            vec![
                metric("hops", "Hops", Unit::Count, Better::Lower)
                    .of(t.summary.hops.len() as f64, Vec::new()),
                metric("rtt_mean_ns", "Last hop round trip", Unit::Nanos, Better::Lower)
                    .of(last.map_or(0.0, |h| h.rtt.mean_ns), Vec::new()),
            ]
        }
        ReportBody::Http(h) => {
            let measured: Vec<_> = h.intervals.iter().filter(|i| !i.omitted).collect();
            let mut out = vec![metric(
                "requests_per_second",
                "Requests/s",
                Unit::PerSecond("req/s"),
                Better::Higher,
            )
            .of(h.summary.requests_per_second, measured.iter().map(|i| i.requests_per_second))];
            out.extend(latency_metrics(
                &h.summary.latency,
                measured.iter().map(|i| &i.latency),
                "Latency",
            ));
            out.push(
                metric("success_ratio", "Success", Unit::Ratio, Better::Higher).of(
                    h.summary.success_ratio,
                    measured
                        .iter()
                        .filter(|i| i.responses + i.errors > 0)
                        .map(|i| 1.0 - i.errors as f64 / (i.responses + i.errors) as f64),
                ),
            );
            out
        }
        ReportBody::Dns(d) => {
            let mut out = vec![metric(
                "queries_per_second",
                "Queries/s",
                Unit::PerSecond("q/s"),
                Better::Higher,
            )
            .of(d.summary.queries_per_second, d.intervals.iter().map(|i| i.queries_per_second))];
            out.extend(latency_metrics(
                &d.summary.latency,
                d.intervals.iter().map(|i| &i.latency),
                "Latency",
            ));
            let lost =
                |sent: u64, lost: u64| if sent == 0 { 0.0 } else { lost as f64 / sent as f64 };
            out.push(metric("lost_ratio", "Lost", Unit::Ratio, Better::Lower).of(
                lost(d.summary.sent, d.summary.lost),
                d.intervals.iter().filter(|i| i.sent > 0).map(|i| lost(i.sent, i.lost)),
            ));
            out
        }
    }
}

/// p50 and p99 of a latency summary, with per-interval samples from intervals that saw any.
fn latency_metrics<'a>(
    summary: &LatencyStats,
    intervals: impl Iterator<Item = &'a LatencyStats> + Clone,
    what: &'static str,
) -> Vec<Metric> {
    let (p50_label, p99_label, p50_key, p99_key) = match what {
        "Round trip" => ("Round trip p50", "Round trip p99", "rtt_p50_ns", "rtt_p99_ns"),
        "Connect" => ("Connect p50", "Connect p99", "connect_p50_ns", "connect_p99_ns"),
        _ => ("Latency p50", "Latency p99", "latency_p50_ns", "latency_p99_ns"),
    };
    let seen = intervals.filter(|s| s.count > 0);
    vec![
        metric(p50_key, p50_label, Unit::Nanos, Better::Lower)
            .of(summary.p50_ns as f64, seen.clone().map(|s| s.p50_ns as f64)),
        metric(p99_key, p99_label, Unit::Nanos, Better::Lower)
            .of(summary.p99_ns as f64, seen.map(|s| s.p99_ns as f64)),
    ]
}

/// The headline figure of a run (the first of [`metrics`]).
pub fn headline(report: &Report) -> Metric {
    metrics(report).swap_remove(0)
}

/// Percentile lines p50, p90 and p99 over `(end_ns, stats)` points that saw any samples.
fn percentile_lines<'a>(
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

fn rate_line(
    label: impl Into<String>,
    unit: Unit,
    points: impl Iterator<Item = (u64, f64)>,
) -> Series {
    Series { label: label.into(), unit, points: points.map(|(t, v)| (secs(t), v)).collect() }
}

/// The time series of `report` (warm-up included, so a chart shows it).
pub fn series(report: &Report) -> RunSeries {
    match &report.body {
        ReportBody::Bandwidth(b) => {
            let flows = b.intervals.first().map_or(0, |i| i.flows.len());
            let rate = (0..flows)
                .map(|k| {
                    let label = b.intervals[0].flows[k].flow;
                    rate_line(
                        format!("{label:?}"),
                        Unit::BitsPerSecond,
                        b.intervals
                            .iter()
                            .filter_map(|i| Some((i.end_ns, i.measured_bps(i.flows.get(k)?)))),
                    )
                })
                .collect();
            RunSeries { rate, latency: Vec::new() }
        }
        ReportBody::Latency(l) => RunSeries {
            rate: vec![rate_line(
                "messages/s",
                Unit::PerSecond("msg/s"),
                l.intervals.iter().map(|i| (i.end_ns, i.messages_per_second)),
            )],
            latency: percentile_lines(l.intervals.iter().map(|i| (i.end_ns, &i.rtt))),
        },
        ReportBody::Cps(c) => RunSeries {
            rate: vec![rate_line(
                "connections/s",
                Unit::PerSecond("conn/s"),
                c.intervals.iter().map(|i| (i.end_ns, i.connections_per_second)),
            )],
            latency: percentile_lines(c.intervals.iter().map(|i| (i.end_ns, &i.connect))),
        },
        ReportBody::Http(h) => RunSeries {
            rate: vec![rate_line(
                "requests/s",
                Unit::PerSecond("req/s"),
                h.intervals.iter().map(|i| (i.end_ns, i.requests_per_second)),
            )],
            latency: percentile_lines(h.intervals.iter().map(|i| (i.end_ns, &i.latency))),
        },
        ReportBody::Dns(d) => RunSeries {
            rate: vec![rate_line(
                "queries/s",
                Unit::PerSecond("q/s"),
                d.intervals.iter().map(|i| (i.end_ns, i.queries_per_second)),
            )],
            latency: percentile_lines(d.intervals.iter().map(|i| (i.end_ns, &i.latency))),
        },
        ReportBody::Ping(p) => RunSeries {
            rate: Vec::new(),
            latency: vec![Series {
                label: "round trip".into(),
                unit: Unit::Nanos,
                points: p
                    .probes
                    .iter()
                    .filter_map(|pr| match pr.outcome {
                        ProbeOutcome::Reply { rtt_ns, .. } => {
                            Some((secs(pr.sent_ns), rtt_ns as f64))
                        }
                        _ => None,
                    })
                    .collect(),
            }],
        },
        ReportBody::Trace(_) => RunSeries::default(),
    }
}

/// The run's latency histogram, where its kind keeps one.
pub fn histogram(report: &Report) -> Option<&[HistogramBucket]> {
    let h = match &report.body {
        ReportBody::Latency(l) => &l.summary.histogram,
        ReportBody::Cps(c) => &c.summary.histogram,
        ReportBody::Ping(p) => &p.summary.histogram,
        ReportBody::Http(h) => &h.summary.histogram,
        ReportBody::Dns(d) => &d.summary.histogram,
        ReportBody::Bandwidth(_) | ReportBody::Trace(_) => return None,
    };
    (!h.is_empty()).then_some(h.as_slice())
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
