//! The connections-per-second test's plain data: what it is asked to do ([`CpsSpec`]), why a
//! connection attempt failed ([`ConnectFailure`], counted in [`FailureCounts`]), and what the
//! report says ([`CpsInterval`], [`CpsSummary`]). Connect times reuse the latency test's
//! HDR histogram and statistics.

use serde::{Deserialize, Serialize};

use crate::histogram::{HistogramBucket, LatencyStats};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::{Member, ShareError, ShareRun};
use crate::metrics::{
    latency_metrics, load_series, metric, non_empty, Better, Events, Metric, Percentiles,
    RunSeries, Unit,
};
use crate::rules::{check_run, SpecError};

/// Most connections a cps test may keep in flight at once.
pub const MAX_CONNECTORS: u16 = 1024;
/// Most threads a cps test may spread its connections over.
pub const MAX_CPS_THREADS: u16 = 64;

/// What a connections-per-second test is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpsSpec {
    /// The host (and port) as the user wrote it.
    pub target: String,
    /// True when the target is any TCP listener rather than a wirespeed server: no control
    /// connection, nothing is asked of the far end but to accept.
    pub external: bool,
    /// Connections in flight at once: each slot opens one, closes it and starts again.
    pub parallel: u16,
    /// Threads that share those slots (each runs its own epoll loop).
    pub threads: u16,
    /// Stop after this many attempts in total instead of after a time.
    pub count: Option<u64>,
    /// How long to measure after the warm-up, in nanoseconds; ignored when `count` is set.
    pub duration_ns: u64,
    /// Warm-up whose connections are left out of the summary, in nanoseconds.
    pub warmup_ns: u64,
    /// Length of one reporting interval in nanoseconds.
    pub interval_ns: u64,
    /// How long one connect may take before it counts as timed out, in nanoseconds.
    pub timeout_ns: u64,
    /// Close each connection with a reset (`SO_LINGER` 0) instead of a FIN, so the client
    /// keeps no socket in TIME_WAIT.
    pub rst: bool,
}

impl CpsSpec {
    /// A spec with the defaults: one connector, 10 s, 1 s connect timeout, FIN close.
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            external: false,
            parallel: 1,
            threads: 1,
            count: None,
            duration_ns: 10_000_000_000,
            warmup_ns: 0,
            interval_ns: 1_000_000_000,
            timeout_ns: 1_000_000_000,
            rst: false,
        }
    }

    /// Checks every field's range; the server runs this on what a client sent.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.parallel == 0 || self.parallel > MAX_CONNECTORS {
            return fail(format!(
                "concurrent connectors must be 1..={MAX_CONNECTORS}, got {}",
                self.parallel
            ));
        }
        if self.threads == 0 || self.threads > MAX_CPS_THREADS || self.threads > self.parallel {
            return fail(format!(
                "connector threads must be 1..={MAX_CPS_THREADS} and at most -P, got {}",
                self.threads
            ));
        }
        check_run(
            self.count,
            self.duration_ns,
            "-t",
            self.interval_ns,
            self.timeout_ns,
            "the connect timeout",
        )?;
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

/// Why one connection attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectFailure {
    /// The host answered with a reset: nothing listens on the port (ECONNREFUSED).
    Refused,
    /// No answer within the connect timeout (a full backlog or a silent host).
    Timeout,
    /// The connection was reset while it was being set up (ECONNRESET).
    Reset,
    /// No local port or address was free for another connection (EADDRNOTAVAIL).
    PortsExhausted,
    /// No route to the host or network (ENETUNREACH, EHOSTUNREACH).
    Unreachable,
    /// Anything else (out of file descriptors, …).
    Other,
}

impl ConnectFailure {
    /// Every cause, in report order.
    pub const ALL: [ConnectFailure; 6] = [
        Self::Refused,
        Self::Timeout,
        Self::Reset,
        Self::PortsExhausted,
        Self::Unreachable,
        Self::Other,
    ];

    /// The cause's name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Timeout => "timeout",
            Self::Reset => "reset",
            Self::PortsExhausted => "ports_exhausted",
            Self::Unreachable => "unreachable",
            Self::Other => "other",
        }
    }
}

/// Failed attempts by cause.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct FailureCounts {
    /// Connection refused.
    pub refused: u64,
    /// Connect timed out.
    pub timeout: u64,
    /// Reset during setup.
    pub reset: u64,
    /// Out of local ports.
    pub ports_exhausted: u64,
    /// No route.
    pub unreachable: u64,
    /// Anything else.
    pub other: u64,
}

impl FailureCounts {
    /// The count of one cause.
    pub fn get(&self, cause: ConnectFailure) -> u64 {
        match cause {
            ConnectFailure::Refused => self.refused,
            ConnectFailure::Timeout => self.timeout,
            ConnectFailure::Reset => self.reset,
            ConnectFailure::PortsExhausted => self.ports_exhausted,
            ConnectFailure::Unreachable => self.unreachable,
            ConnectFailure::Other => self.other,
        }
    }

    /// The counter of one cause.
    pub fn slot(&mut self, cause: ConnectFailure) -> &mut u64 {
        match cause {
            ConnectFailure::Refused => &mut self.refused,
            ConnectFailure::Timeout => &mut self.timeout,
            ConnectFailure::Reset => &mut self.reset,
            ConnectFailure::PortsExhausted => &mut self.ports_exhausted,
            ConnectFailure::Unreachable => &mut self.unreachable,
            ConnectFailure::Other => &mut self.other,
        }
    }

    /// Failures of every cause.
    pub fn total(&self) -> u64 {
        ConnectFailure::ALL.iter().map(|&c| self.get(c)).sum()
    }

    /// Counts accumulated since `earlier` (both running totals).
    pub fn since(&self, earlier: &FailureCounts) -> FailureCounts {
        let mut out = FailureCounts::default();
        for c in ConnectFailure::ALL {
            *out.slot(c) = self.get(c).saturating_sub(earlier.get(c));
        }
        out
    }

    /// Adds `other` cause by cause.
    pub fn add(&mut self, other: &FailureCounts) {
        for c in ConnectFailure::ALL {
            *self.slot(c) += other.get(c);
        }
    }

    /// "refused 3, timeout 1", or "none".
    pub fn describe(&self) -> String {
        let parts: Vec<String> = ConnectFailure::ALL
            .iter()
            .filter(|&&c| self.get(c) > 0)
            .map(|&c| format!("{} {}", c.name().replace('_', " "), self.get(c)))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

/// One reporting interval of a cps test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpsInterval {
    /// Position, from 0.
    pub index: u32,
    /// Start, nanoseconds since the test began.
    pub start_ns: u64,
    /// End, nanoseconds since the test began.
    pub end_ns: u64,
    /// True when inside the warm-up.
    pub omitted: bool,
    /// Connections established per second in the interval.
    pub connections_per_second: f64,
    /// Attempts that ended in the interval.
    pub attempts: u64,
    /// Attempts that connected.
    pub connected: u64,
    /// Attempts that failed, by cause.
    pub failures: FailureCounts,
    /// Connect times of the interval's successful attempts.
    pub connect: LatencyStats,
}

/// The whole measured part of a cps test (after the warm-up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpsSummary {
    /// Measured time, nanoseconds.
    pub duration_ns: u64,
    /// Attempts made.
    pub attempts: u64,
    /// Attempts that connected.
    pub connected: u64,
    /// Attempts that failed, by cause.
    pub failures: FailureCounts,
    /// Connections established per second.
    pub connections_per_second: f64,
    /// Connections the wirespeed server counted from this client during the test (not
    /// available against an external target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_accepted: Option<u64>,
    /// Statistics of every measured connect time.
    pub connect: LatencyStats,
    /// The full histogram of measured connect times.
    pub histogram: Vec<HistogramBucket>,
}

/// A cps run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpsReport {
    /// What was asked.
    pub spec: CpsSpec,
    /// One entry per reporting interval, warm-up included (marked `omitted`).
    pub intervals: Vec<CpsInterval>,
    /// Totals over the measured part.
    pub summary: CpsSummary,
}

impl KindSpec for CpsSpec {
    fn kind(&self) -> Kind {
        Kind::Cps
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
}

/// A connections/s run's members each keep their part of the connections in flight (with no
/// more threads than those) and make their part of a count.
impl ShareRun for CpsSpec {
    fn share(&self, member: &Member) -> Result<Self, ShareError> {
        let mut s = self.clone();
        s.parallel = member.part_of_each("connections in flight", "-P", s.parallel)?;
        s.threads = s.threads.min(s.parallel).max(1);
        s.count = member.part_of_count(s.count)?;
        Ok(s)
    }
}

impl KindReport for CpsReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let measured: Vec<_> = self.intervals.iter().filter(|i| !i.omitted).collect();
        let mut out = vec![metric(
            "connections_per_second",
            "Connections/s",
            Unit::PerSecond(Events::Connections),
            Better::Higher,
        )
        .of(
            self.summary.connections_per_second,
            measured.iter().map(|i| i.connections_per_second),
        )];
        let names = Percentiles {
            p50: ("connect_p50_ns", "Connect p50"),
            p99: ("connect_p99_ns", "Connect p99"),
        };
        out.extend(latency_metrics(
            names,
            &self.summary.connect,
            measured.iter().map(|i| &i.connect),
        ));
        out
    }

    fn series(&self) -> RunSeries {
        let points =
            self.intervals.iter().map(|i| (i.end_ns, i.connections_per_second, &i.connect));
        load_series("connections/s", Events::Connections, points)
    }

    fn histogram(&self) -> Option<&[HistogramBucket]> {
        non_empty(&self.summary.histogram)
    }

    fn work(&self) -> Option<crate::kind::Work> {
        Some(crate::kind::Work { count: self.summary.connected as f64, unit: "connection" })
    }

    fn ports_exhausted(&self) -> u64 {
        self.summary.failures.ports_exhausted
    }
}

impl crate::merge_parts::MergeRuns for CpsReport {
    type Spec = CpsSpec;

    fn samples(&self) -> Option<crate::merge_parts::Samples> {
        Some(samples(self))
    }

    fn merge(
        parts: &[crate::merge_parts::Part<'_, Self>],
        spec: &CpsSpec,
    ) -> Result<Option<Self>, crate::histogram::HistogramError> {
        merge(parts, spec).map(Some)
    }
}

/// The members' reports of one connections-per-second run merged (see [`crate::merge`]):
/// attempts, connections and failures summed, rates over the longest member's time, connect
/// times from the summed histograms.
/// What a merge checks against a member's histograms: connections made, with a connect time
/// each.
fn samples(r: &CpsReport) -> crate::merge_parts::Samples {
    crate::merge_parts::Samples {
        intervals: r
            .intervals
            .iter()
            .map(|i| (i.start_ns, i.end_ns, i.omitted, i.connected))
            .collect(),
        duration_ns: r.summary.duration_ns,
        count: r.summary.connected,
    }
}

fn merge(
    parts: &[crate::merge_parts::Part<'_, CpsReport>],
    spec: &CpsSpec,
) -> Result<CpsReport, crate::histogram::HistogramError> {
    use crate::merge_parts::{each_interval, per_second, stats_of, sum_interval, sum_named};
    let add_failures = |all: &mut FailureCounts, more: &FailureCounts| {
        for c in ConnectFailure::ALL {
            *all.slot(c) += more.get(c);
        }
    };
    let intervals = each_interval(
        parts,
        |r| &r.intervals,
        |shape, of_k, k| {
            let connected = of_k.iter().map(|i| i.connected).sum();
            let mut failures = FailureCounts::default();
            for i in of_k {
                add_failures(&mut failures, &i.failures);
            }
            Ok(CpsInterval {
                connections_per_second: per_second(
                    connected,
                    shape.end_ns.saturating_sub(shape.start_ns),
                ),
                attempts: of_k.iter().map(|i| i.attempts).sum(),
                connected,
                failures,
                connect: sum_interval(parts, k)?.stats(),
                ..shape.clone()
            })
        },
    )?;
    let all: Vec<&CpsSummary> = parts.iter().map(|p| &p.report.summary).collect();
    let duration_ns = all.iter().map(|s| s.duration_ns).max().unwrap_or(0);
    let connected = all.iter().map(|s| s.connected).sum();
    let mut failures = FailureCounts::default();
    for s in &all {
        add_failures(&mut failures, &s.failures);
    }
    let accepted: Vec<u64> = all.iter().filter_map(|s| s.server_accepted).collect();
    let total = sum_named(parts, "total")?;
    let summary = CpsSummary {
        duration_ns,
        attempts: all.iter().map(|s| s.attempts).sum(),
        connected,
        failures,
        connections_per_second: per_second(connected, duration_ns),
        server_accepted: (accepted.len() == all.len()).then(|| accepted.iter().sum()),
        connect: stats_of(&total),
        histogram: total.map(|h| h.buckets()).unwrap_or_default(),
    };
    Ok(CpsReport { spec: spec.clone(), intervals, summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_counts_subtract_add_and_describe_by_cause() {
        let mut later = FailureCounts::default();
        *later.slot(ConnectFailure::Refused) += 5;
        *later.slot(ConnectFailure::PortsExhausted) += 2;
        let mut earlier = FailureCounts::default();
        *earlier.slot(ConnectFailure::Refused) += 3;
        let d = later.since(&earlier);
        assert_eq!((d.refused, d.ports_exhausted, d.total()), (2, 2, 4));
        assert_eq!(d.describe(), "refused 2, ports exhausted 2");
        let mut sum = d;
        sum.add(&earlier);
        assert_eq!(sum, later);
        assert_eq!(FailureCounts::default().describe(), "none");
    }

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = CpsSpec::new("h:80");
        assert!(base.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut CpsSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.parallel = 0),
            Box::new(|s| s.parallel = MAX_CONNECTORS + 1),
            Box::new(|s| s.threads = 0),
            Box::new(|s| s.threads = 2), // more threads than connections
            Box::new(|s| s.count = Some(0)),
            Box::new(|s| s.duration_ns = 0),
            Box::new(|s| s.interval_ns = 1),
            Box::new(|s| s.timeout_ns = 0),
            Box::new(|s| s.target = "x".repeat(2000)),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }
}
