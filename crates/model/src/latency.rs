//! The latency test's plain data: what it is asked to do ([`LatencySpec`]), the running
//! round-trip histogram ([`RttHistogram`], an HDR histogram with sub-microsecond resolution
//! that merges across streams and intervals), and what the report says ([`LatencyStats`],
//! [`LatencyInterval`], [`LatencySummary`]).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::spec::{check_run, Protocol, SpecError, MAX_PARALLEL};

/// Largest message a latency test sends (one UDP datagram over IPv4).
pub const MAX_LATENCY_LENGTH: u32 = 65_507;
/// Default message size in bytes.
pub const DEFAULT_LATENCY_LENGTH: u32 = 16;
/// Longest round trip the histogram records, in nanoseconds (60 s); longer ones are clamped.
pub const MAX_RTT_NS: u64 = 60_000_000_000;

/// What a latency test is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Round-trip times in nanoseconds, 1 ns to 60 s at three significant digits (so a 20 µs
/// round trip is resolved to 10 ns). Histograms of streams and intervals add up exactly.
#[derive(Debug, Clone)]
pub struct RttHistogram(Histogram<u64>);

impl Default for RttHistogram {
    fn default() -> Self {
        Self(
            Histogram::new_with_bounds(1, MAX_RTT_NS, 3)
                .unwrap_or_else(|_| unreachable!("valid bounds")),
        )
    }
}

impl RttHistogram {
    /// Records one round trip; values beyond the range are clamped to it.
    pub fn record(&mut self, rtt_ns: u64) {
        self.0.saturating_record(rtt_ns.clamp(1, MAX_RTT_NS));
    }

    /// Adds every sample of `other`.
    pub fn add(&mut self, other: &RttHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// Number of round trips recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets every sample (zeroing ~40 k counters, so an empty histogram is left alone).
    pub fn clear(&mut self) {
        if !self.0.is_empty() {
            self.0.reset();
        }
    }

    /// The summary statistics.
    pub fn stats(&self) -> LatencyStats {
        let h = &self.0;
        if h.is_empty() {
            return LatencyStats::default();
        }
        let q = |p: f64| h.value_at_quantile(p);
        LatencyStats {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p95_ns: q(0.95),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: h.max(),
            stddev_ns: h.stdev(),
        }
    }

    /// Every non-empty bucket: the highest value it stands for and how many samples fell in it.
    pub fn buckets(&self) -> Vec<HistogramBucket> {
        self.0
            .iter_recorded()
            .map(|v| HistogramBucket { value_ns: v.value_iterated_to(), count: v.count_at_value() })
            .collect()
    }

    /// A histogram rebuilt from [`Self::buckets`].
    pub fn from_buckets(buckets: &[HistogramBucket]) -> Self {
        let mut h = Self::default();
        for b in buckets {
            let _ = h.0.record_n(b.value_ns.clamp(1, MAX_RTT_NS), b.count);
        }
        h
    }
}

/// One histogram bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramBucket {
    /// The largest round trip (ns) this bucket stands for.
    pub value_ns: u64,
    /// Round trips that fell in it.
    pub count: u64,
}

/// Summary statistics of a set of round trips, all in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Round trips measured.
    pub count: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// 99.99th percentile.
    pub p9999_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Population standard deviation.
    pub stddev_ns: f64,
}

/// One reporting interval of a latency test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    /// What was asked.
    pub spec: LatencySpec,
    /// One entry per reporting interval, warm-up included (marked `omitted`).
    pub intervals: Vec<LatencyInterval>,
    /// Totals over the measured part.
    pub summary: LatencySummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_resolve_below_a_microsecond_and_merge_exactly() {
        let mut a = RttHistogram::default();
        let mut b = RttHistogram::default();
        for i in 0..1000u64 {
            a.record(20_000 + i); // 20.000–20.999 µs
            b.record(40_000 + i);
        }
        let sa = a.stats();
        assert_eq!(sa.count, 1000);
        assert!((sa.p50_ns as i64 - 20_500).abs() <= 20, "{sa:?}");
        assert_eq!(sa.min_ns, 20_000);
        a.add(&b);
        let s = a.stats();
        assert_eq!(s.count, 2000);
        assert!((s.p50_ns as i64 - 21_000).abs() <= 30, "{s:?}");
        assert!(s.p99_ns >= 40_900 && s.max_ns >= 40_990, "{s:?}");
        assert!((s.mean_ns - 30_499.5).abs() < 50.0, "{s:?}");
        // The buckets carry every sample and rebuild the same statistics.
        let rebuilt = RttHistogram::from_buckets(&a.buckets());
        assert_eq!(rebuilt.len(), 2000);
        assert_eq!(rebuilt.stats().p99_ns, s.p99_ns);
    }

    #[test]
    fn out_of_range_samples_are_clamped_not_lost() {
        let mut h = RttHistogram::default();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.len(), 2);
        assert!(h.stats().max_ns >= MAX_RTT_NS);
        assert!(RttHistogram::default().stats() == LatencyStats::default());
    }

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
