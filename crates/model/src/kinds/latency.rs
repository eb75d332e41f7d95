//! The latency test's plain data: what it is asked to do ([`LatencySpec`]) and what the report
//! says ([`LatencyInterval`], [`LatencySummary`]); round trips go in the shared
//! [`RttHistogram`](crate::histogram::RttHistogram).

use serde::{Deserialize, Serialize};

use crate::histogram::{HistogramBucket, LatencyStats};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::{Member, ShareError, ShareRun};
use crate::metrics::{
    latency_metrics, load_series, metric, non_empty, Better, Events, Metric, Percentiles,
    RunSeries, Unit,
};
use crate::rules::{check_run, Protocol, SpecError, MAX_PARALLEL};

/// Largest message a latency test sends (one UDP datagram over IPv4).
pub const MAX_LATENCY_LENGTH: u32 = 65_507;
/// Default message size in bytes.
pub const DEFAULT_LATENCY_LENGTH: u32 = 16;

/// What a latency test is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LatencySpec {
    /// The host (and port) as the user wrote it.
    pub target: String,
    /// True when the target is any echo service (RFC 862 echo, socat, an echo behind a
    /// proxy) rather than a wirespeed server: no control connection, the bytes go straight to
    /// it and must come back unchanged.
    #[serde(default)]
    pub external: bool,
    /// TCP (default) or UDP request/response.
    pub protocol: Protocol,
    /// Bytes per message, echoed back whole.
    pub length: u32,
    /// Concurrent connections (or UDP sockets), each with one message in flight.
    pub parallel: u16,
    /// Stop after this many round trips in total instead of after a time.
    pub count: Option<u64>,
    /// How long to measure after the warm-up, in nanoseconds; ignored when `count` is set.
    pub duration_ns: u64,
    /// Warm-up whose round trips are left out of the summary, in nanoseconds.
    pub warmup_ns: u64,
    /// Messages per second per connection on a fixed schedule (open model); `None` sends the
    /// next message as soon as the previous answer arrives (closed model).
    pub rate: Option<f64>,
    /// Length of one reporting interval in nanoseconds.
    pub interval_ns: u64,
    /// How long a UDP message may go unanswered before it counts as lost, in nanoseconds.
    pub timeout_ns: u64,
    /// Wait for each answer by polling the socket without sleeping (like sockperf), so the
    /// figures leave out the scheduler's wake-up; costs a full CPU per connection.
    #[serde(default)]
    pub busy_poll: bool,
}

impl LatencySpec {
    /// A spec with the defaults: TCP, 16-byte messages, one connection, 10 s.
    pub fn new(target: impl Into<String>, protocol: Protocol) -> Self {
        Self {
            target: target.into(),
            external: false,
            protocol,
            length: DEFAULT_LATENCY_LENGTH,
            parallel: 1,
            count: None,
            duration_ns: 10_000_000_000,
            warmup_ns: 0,
            rate: None,
            interval_ns: 1_000_000_000,
            timeout_ns: 1_000_000_000,
            busy_poll: false,
        }
    }

    /// Checks every field's range; the server runs this on what a client sent.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if !(1..=MAX_LATENCY_LENGTH).contains(&self.length) {
            return fail(format!(
                "message length must be 1..={MAX_LATENCY_LENGTH} bytes, got {}",
                self.length
            ));
        }
        if self.protocol == Protocol::Quic && self.external {
            return fail("--external needs a plain echo service: TCP or UDP, not QUIC".into());
        }
        if self.parallel == 0 || self.parallel > MAX_PARALLEL {
            return fail(format!(
                "parallel connections must be 1..={MAX_PARALLEL}, got {}",
                self.parallel
            ));
        }
        check_run(
            self.count,
            self.duration_ns,
            "-t",
            self.interval_ns,
            self.timeout_ns,
            "the timeout",
        )?;
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0 && r <= 10_000_000.0) {
                return fail(format!(
                    "the rate must be above 0 and at most 10M messages/s, got {r}"
                ));
            }
        }
        if self.target.len() > 1024 {
            return fail("the target name is too long".into());
        }
        Ok(())
    }

    /// Total wall time a time-based test runs, warm-up included.
    pub fn total_ns(&self) -> u64 {
        self.warmup_ns.saturating_add(self.duration_ns)
    }
}

/// One reporting interval of a latency test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyInterval {
    /// Position, from 0.
    pub index: u32,
    /// Start, nanoseconds since the test began.
    pub start_ns: u64,
    /// End, nanoseconds since the test began.
    pub end_ns: u64,
    /// True when inside the warm-up.
    pub omitted: bool,
    /// Round trips completed per second in the interval.
    pub messages_per_second: f64,
    /// UDP messages that went unanswered within the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Statistics of the interval's round trips.
    pub rtt: LatencyStats,
}

/// The whole measured part of a latency test (after the warm-up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    /// Measured time, nanoseconds.
    pub duration_ns: u64,
    /// Messages sent.
    pub sent: u64,
    /// Round trips completed.
    pub received: u64,
    /// UDP messages that went unanswered within the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Round trips completed per second.
    pub messages_per_second: f64,
    /// Statistics of every measured round trip.
    pub rtt: LatencyStats,
    /// The full histogram of measured round trips.
    pub histogram: Vec<HistogramBucket>,
}

/// A latency run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyReport {
    /// What was asked.
    pub spec: LatencySpec,
    /// One entry per reporting interval, warm-up included (marked `omitted`).
    pub intervals: Vec<LatencyInterval>,
    /// Totals over the measured part.
    pub summary: LatencySummary,
}

impl KindSpec for LatencySpec {
    fn kind(&self) -> Kind {
        Kind::Latency
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn planned_ns(&self) -> Option<u64> {
        self.count.is_none().then(|| self.total_ns())
    }

    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    fn pacing_ns(&self) -> Option<u64> {
        // Each connection's thread keeps its own schedule.
        self.rate.map(|r| (1e9 / r) as u64)
    }

    fn busy_polls(&self) -> bool {
        self.busy_poll
    }
}

/// A latency run's members each hold their part of the connections and send their part of a
/// count.
impl ShareRun for LatencySpec {
    fn share(&self, member: &Member) -> Result<Self, ShareError> {
        let mut s = self.clone();
        s.parallel = member.part_of_each("connections", "-P", s.parallel)?;
        s.count = member.part_of_count(s.count)?;
        Ok(s)
    }
}

impl KindReport for LatencyReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let measured: Vec<_> = self.intervals.iter().filter(|i| !i.omitted).collect();
        let names = Percentiles {
            p50: ("rtt_p50_ns", "Round trip p50"),
            p99: ("rtt_p99_ns", "Round trip p99"),
        };
        let mut out = latency_metrics(names, &self.summary.rtt, measured.iter().map(|i| &i.rtt));
        out.push(
            metric(
                "messages_per_second",
                "Messages/s",
                Unit::PerSecond(Events::Messages),
                Better::Higher,
            )
            .of(self.summary.messages_per_second, measured.iter().map(|i| i.messages_per_second)),
        );
        out
    }

    fn series(&self) -> RunSeries {
        let points = self.intervals.iter().map(|i| (i.end_ns, i.messages_per_second, &i.rtt));
        load_series("messages/s", Events::Messages, points)
    }

    fn work(&self) -> Option<crate::kind::Work> {
        Some(crate::kind::Work { count: self.summary.received as f64, unit: "round trip" })
    }

    fn histogram(&self) -> Option<&[HistogramBucket]> {
        non_empty(&self.summary.histogram)
    }
}

impl crate::merge_parts::MergeRuns for LatencyReport {
    type Spec = LatencySpec;

    fn samples(&self) -> Option<crate::merge_parts::Samples> {
        Some(samples(self))
    }

    fn merge(
        parts: &[crate::merge_parts::Part<'_, Self>],
        spec: &LatencySpec,
    ) -> Result<Option<Self>, crate::histogram::HistogramError> {
        merge(parts, spec).map(Some)
    }
}

/// The members' reports of one latency run merged (see [`crate::merge`]): messages and losses
/// summed, rates over the longest member's time, round trips from the summed histograms.
/// What a merge checks against a member's histograms: round trips an interval counts (its
/// rate over its span) and the summary's received.
fn samples(r: &LatencyReport) -> crate::merge_parts::Samples {
    crate::merge_parts::Samples {
        intervals: r
            .intervals
            .iter()
            .map(|i| {
                let span = i.end_ns.saturating_sub(i.start_ns) as f64;
                let count = (i.messages_per_second * span / 1e9).round() as u64;
                (i.start_ns, i.end_ns, i.omitted, count)
            })
            .collect(),
        duration_ns: r.summary.duration_ns,
        count: r.summary.received,
    }
}

fn merge(
    parts: &[crate::merge_parts::Part<'_, LatencyReport>],
    spec: &LatencySpec,
) -> Result<LatencyReport, crate::histogram::HistogramError> {
    use crate::merge_parts::{each_interval, per_second, stats_of, sum_interval, sum_named};
    let lost_sum = |v: Vec<Option<u64>>| -> Option<u64> {
        v.iter().any(Option::is_some).then(|| v.iter().flatten().sum())
    };
    let intervals = each_interval(
        parts,
        |r| &r.intervals,
        |shape, of_k, k| {
            let rtt = sum_interval(parts, k)?.stats();
            Ok(LatencyInterval {
                messages_per_second: per_second(
                    rtt.count,
                    shape.end_ns.saturating_sub(shape.start_ns),
                ),
                lost: lost_sum(of_k.iter().map(|i| i.lost).collect()),
                rtt,
                ..shape.clone()
            })
        },
    )?;
    let all: Vec<&LatencySummary> = parts.iter().map(|p| &p.report.summary).collect();
    let duration_ns = all.iter().map(|s| s.duration_ns).max().unwrap_or(0);
    let received = all.iter().map(|s| s.received).sum();
    let total = sum_named(parts, "total")?;
    let summary = LatencySummary {
        duration_ns,
        sent: all.iter().map(|s| s.sent).sum(),
        received,
        lost: lost_sum(all.iter().map(|s| s.lost).collect()),
        messages_per_second: per_second(received, duration_ns),
        rtt: stats_of(&total),
        histogram: total.map(|h| h.buckets()).unwrap_or_default(),
    };
    Ok(LatencyReport { spec: spec.clone(), intervals, summary })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Protocol;

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = LatencySpec::new("h", Protocol::Tcp);
        assert!(base.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut LatencySpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.length = 0),
            Box::new(|s| s.length = 70_000),
            Box::new(|s| s.parallel = 0),
            Box::new(|s| s.count = Some(0)),
            Box::new(|s| s.duration_ns = 0),
            Box::new(|s| s.rate = Some(f64::NAN)),
            Box::new(|s| s.rate = Some(-1.0)),
            Box::new(|s| s.interval_ns = 1),
            Box::new(|s| s.timeout_ns = 0),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }
}
