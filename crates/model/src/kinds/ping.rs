//! The ping test's plain data: what it is asked to do ([`PingSpec`] with its [`PingMode`]:
//! ICMP echo, TCP connect, UDP echo against a wirespeed server, HTTP time to first byte),
//! one line per probe ([`PingProbe`]) and the summary `ping` users expect, with percentiles
//! ([`PingSummary`]). Round-trip times reuse the latency test's HDR histogram.

use serde::{Deserialize, Serialize};

use crate::histogram::{HistogramBucket, LatencyStats, MAX_RTT_NS};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::ShareRun;
use crate::metrics::{metric, non_empty, secs, Better, Metric, RunSeries, Series, Unit};
use crate::rules::SpecError;

/// Most payload bytes a probe may carry.
pub const MAX_PING_SIZE: u32 = 65_000;
/// Most probes a report lists one by one; the summary always counts them all.
pub const MAX_LISTED_PROBES: usize = 100_000;

/// What a probe is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum PingMode {
    /// ICMP (or ICMPv6) echo request and reply.
    Icmp,
    /// A TCP handshake to this port, closed at once with RST.
    Tcp {
        /// The port.
        port: u16,
    },
    /// A UDP datagram echoed by a wirespeed server on this port.
    Udp {
        /// The server's port.
        port: u16,
    },
    /// An HTTP GET on a new connection, timed to the first byte of the response.
    Http {
        /// The URL.
        url: String,
    },
}

impl PingMode {
    /// The mode's name, as in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Icmp => "icmp",
            Self::Tcp { .. } => "tcp",
            Self::Udp { .. } => "udp",
            Self::Http { .. } => "http",
        }
    }
}

/// What a ping is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingSpec {
    /// The host as the user wrote it.
    pub target: String,
    /// What each probe is.
    pub mode: PingMode,
    /// Stop after this many probes; `None` runs until interrupted (or `deadline_ns`).
    pub count: Option<u64>,
    /// Time between probes, nanoseconds.
    pub interval_ns: u64,
    /// How long to wait for each answer, nanoseconds.
    pub timeout_ns: u64,
    /// Payload bytes of an ICMP or UDP probe (ICMP: after the 8-byte header, like ping's -s).
    pub size: u32,
    /// Stop after this long whatever the count, nanoseconds (ping's -w).
    pub deadline_ns: Option<u64>,
}

impl PingSpec {
    /// A spec with ping's defaults: 1 s apart, 1 s to answer, 56-byte ICMP payload.
    pub fn new(target: impl Into<String>, mode: PingMode) -> Self {
        Self {
            target: target.into(),
            mode,
            count: None,
            interval_ns: 1_000_000_000,
            timeout_ns: 1_000_000_000,
            size: 56,
            deadline_ns: None,
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.count == Some(0) {
            return fail("the count (-c) must be above 0".into());
        }
        // Faster than 1 ms is a flood, which is another tool's job.
        if self.interval_ns < 1_000_000 || self.interval_ns > 3_600_000_000_000 {
            return fail("the interval (-i) must be between 1 ms and 1 h".into());
        }
        if self.timeout_ns == 0 || self.timeout_ns > MAX_RTT_NS {
            return fail("the timeout (-W) must be above 0 and at most 60 s".into());
        }
        let min_size = if matches!(self.mode, PingMode::Udp { .. }) { 8 } else { 0 };
        if self.size < min_size || self.size > MAX_PING_SIZE {
            return fail(format!(
                "the payload size (-s) must be {min_size}..={MAX_PING_SIZE} bytes, got {}",
                self.size
            ));
        }
        if self.deadline_ns == Some(0) {
            return fail("the deadline (-w) must be above 0".into());
        }
        if self.target.len() > 1024 {
            return fail("the target name is too long".into());
        }
        Ok(())
    }
}

/// How one probe ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// An answer came back.
    Reply {
        /// Round trip (ICMP, UDP), handshake time (TCP) or time to first byte (HTTP), ns.
        rtt_ns: u64,
        /// Bytes in the answer (ICMP: message after the IP header; UDP: datagram).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u32>,
        /// TTL or hop limit of the reply, where the socket reports it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl: Option<u8>,
        /// HTTP status code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
    },
    /// Nothing came back within the timeout.
    Lost,
    /// The probe failed with an answer that is not a reply (refused, unreachable, a broken
    /// HTTP response): the host may be up, but the probe did not succeed.
    Error {
        /// What happened.
        reason: String,
    },
}

/// One probe's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingProbe {
    /// Sequence number, from 1.
    pub seq: u64,
    /// When it was sent, nanoseconds since the test began.
    pub sent_ns: u64,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: ProbeOutcome,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingSummary {
    /// The address probed.
    pub address: String,
    /// Time from the first probe to the last answer or timeout, nanoseconds.
    pub duration_ns: u64,
    /// Probes sent.
    pub sent: u64,
    /// Probes answered with a reply.
    pub received: u64,
    /// Probes that ended in an error.
    pub errors: u64,
    /// `(sent - received) / sent`.
    pub loss_ratio: f64,
    /// Statistics of the replies' times; `mean_ns` and `stddev_ns` are ping's avg and mdev.
    pub rtt: LatencyStats,
    /// The full histogram of reply times.
    pub histogram: Vec<HistogramBucket>,
}

/// A ping run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingReport {
    /// What was asked.
    pub spec: PingSpec,
    /// Every probe in order (the first [`MAX_LISTED_PROBES`] of a longer run).
    pub probes: Vec<PingProbe>,
    /// Totals.
    pub summary: PingSummary,
}

impl KindSpec for PingSpec {
    fn kind(&self) -> Kind {
        Kind::Ping
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn planned_ns(&self) -> Option<u64> {
        let ns = self.deadline_ns.or_else(|| Some(self.count? * self.interval_ns))?;
        (ns > 0).then_some(ns)
    }
}

/// A ping measures a path, not load: it does not run as a member.
impl ShareRun for PingSpec {}

/// Nor does it merge: no member ever ran one.
impl crate::merge_parts::MergeRuns for PingReport {
    type Spec = PingSpec;
}

impl KindReport for PingReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let rtts: Vec<f64> = self
            .probes
            .iter()
            .filter_map(|pr| match pr.outcome {
                ProbeOutcome::Reply { rtt_ns, .. } => Some(rtt_ns as f64),
                _ => None,
            })
            .collect();
        vec![
            metric("rtt_p50_ns", "Round trip p50", Unit::Nanos, Better::Lower)
                .of(self.summary.rtt.p50_ns as f64, rtts.clone()),
            metric("rtt_mean_ns", "Round trip mean", Unit::Nanos, Better::Lower)
                .of(self.summary.rtt.mean_ns, rtts),
            metric("loss_ratio", "Loss", Unit::Ratio, Better::Lower)
                .of(self.summary.loss_ratio, Vec::new()),
        ]
    }

    fn series(&self) -> RunSeries {
        let points = self
            .probes
            .iter()
            .filter_map(|pr| match pr.outcome {
                ProbeOutcome::Reply { rtt_ns, .. } => Some((secs(pr.sent_ns), rtt_ns as f64)),
                _ => None,
            })
            .collect();
        RunSeries {
            rate: Vec::new(),
            latency: vec![Series { label: "round trip".into(), unit: Unit::Nanos, points }],
            per_probe: true,
        }
    }

    fn histogram(&self) -> Option<&[HistogramBucket]> {
        non_empty(&self.summary.histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = PingSpec::new("h", PingMode::Icmp);
        assert!(base.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut PingSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.count = Some(0)),
            Box::new(|s| s.interval_ns = 10),
            Box::new(|s| s.timeout_ns = 0),
            Box::new(|s| s.size = MAX_PING_SIZE + 1),
            Box::new(|s| {
                s.mode = PingMode::Udp { port: 5201 };
                s.size = 4;
            }),
            Box::new(|s| s.deadline_ns = Some(0)),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }

    #[test]
    fn a_probe_serialises_flat() {
        let p = PingProbe {
            seq: 1,
            sent_ns: 0,
            outcome: ProbeOutcome::Reply {
                rtt_ns: 5,
                bytes: Some(64),
                ttl: Some(64),
                status: None,
            },
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["outcome"], "reply");
        assert_eq!(v["rtt_ns"], 5);
        assert!(v.get("status").is_none());
        let back: PingProbe = serde_json::from_value(v).unwrap();
        assert_eq!(back, p);
    }
}
