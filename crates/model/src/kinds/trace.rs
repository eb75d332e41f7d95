//! The trace test's plain data: what it is asked to do ([`TraceSpec`]: probe protocol, hops,
//! rounds, mtr mode) and what it found, hop by hop ([`HopStats`]: who answered, loss, round
//! trip statistics), as each round ends ([`TraceRound`]) and at the end ([`TraceSummary`]).

use serde::{Deserialize, Serialize};

use crate::histogram::{LatencyStats, MAX_RTT_NS};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::ShareRun;
use crate::metrics::{metric, Better, Metric, RunSeries, Unit};
use crate::rules::SpecError;

/// Default first destination port of UDP probes (traceroute's).
pub const DEFAULT_UDP_PORT: u16 = 33434;
/// Default destination port of TCP probes.
pub const DEFAULT_TCP_PORT: u16 = 80;

/// What each probe is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TraceProtocol {
    /// ICMP echo requests; the destination answers with an echo reply.
    #[default]
    Icmp,
    /// UDP datagrams to unlikely ports; the destination answers "port unreachable".
    Udp,
    /// TCP SYNs; the destination answers SYN-ACK (open) or RST (closed).
    Tcp,
}

/// What a trace is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The host as the user wrote it.
    pub target: String,
    /// Probe protocol.
    pub protocol: TraceProtocol,
    /// Destination port: TCP's, or the first of UDP's (each UDP probe uses the next one).
    pub port: u16,
    /// TTL of the first hop probed.
    pub first_ttl: u8,
    /// Highest TTL probed.
    pub max_hops: u8,
    /// Rounds: each sends one probe to every hop. `None` (mtr mode only): until interrupted.
    pub rounds: Option<u32>,
    /// mtr mode: rounds keep coming, every `interval_ns`, and the table is refreshed.
    pub mtr: bool,
    /// Time between the starts of rounds, nanoseconds.
    pub interval_ns: u64,
    /// How long to wait for the answers of a round, nanoseconds.
    pub timeout_ns: u64,
}

impl TraceSpec {
    /// traceroute's defaults: ICMP, 30 hops, 3 probes per hop, 1 s wait.
    pub fn new(target: impl Into<String>, protocol: TraceProtocol) -> Self {
        Self {
            target: target.into(),
            protocol,
            port: match protocol {
                TraceProtocol::Tcp => DEFAULT_TCP_PORT,
                _ => DEFAULT_UDP_PORT,
            },
            first_ttl: 1,
            max_hops: 30,
            rounds: Some(3),
            mtr: false,
            interval_ns: 0,
            timeout_ns: 1_000_000_000,
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.first_ttl == 0 || self.first_ttl > self.max_hops {
            return fail(format!(
                "the first TTL must be 1..={} (--max-hops), got {}",
                self.max_hops, self.first_ttl
            ));
        }
        if self.max_hops == 0 {
            return fail("--max-hops must be at least 1".into());
        }
        if self.rounds == Some(0) || (self.rounds.is_none() && !self.mtr) {
            return fail("the number of probes per hop must be at least 1".into());
        }
        if self.timeout_ns == 0 || self.timeout_ns > MAX_RTT_NS {
            return fail("the wait (-W) must be above 0 and at most 60 s".into());
        }
        if self.interval_ns > 3_600_000_000_000 {
            return fail("the interval (-i) must be at most 1 h".into());
        }
        if self.protocol == TraceProtocol::Udp && u32::from(self.port) + 1000 > 65_535 {
            return fail("UDP probes need 1000 ports above --port; pick a lower one".into());
        }
        if self.target.len() > 1024 {
            return fail("the target name is too long".into());
        }
        Ok(())
    }
}

/// What was learned about one hop (one TTL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HopStats {
    /// The TTL.
    pub ttl: u8,
    /// Every address that answered at this TTL, first seen first (several with load balancing).
    pub addresses: Vec<String>,
    /// Probes sent.
    pub sent: u64,
    /// Probes answered.
    pub received: u64,
    /// `(sent - received) / sent`.
    pub loss_ratio: f64,
    /// The latest answer's round trip, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ns: Option<u64>,
    /// Round-trip statistics of the answers.
    pub rtt: LatencyStats,
    /// True when the destination itself answered at this TTL.
    pub reached: bool,
    /// An unreachable answer other than the expected one, like traceroute's `!H`, `!N`, `!X`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The hops as they stand after one round (cumulative).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceRound {
    /// Rounds finished so far.
    pub rounds: u32,
    /// Every hop probed so far, by TTL, up to the destination once it answered.
    pub hops: Vec<HopStats>,
}

/// The whole trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceSummary {
    /// The address traced to.
    pub address: String,
    /// True when the destination answered.
    pub reached: bool,
    /// Rounds run.
    pub rounds: u32,
    /// Wall time, nanoseconds.
    pub duration_ns: u64,
    /// Every hop, by TTL, up to the destination.
    pub hops: Vec<HopStats>,
}

/// A trace run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceReport {
    /// What was asked.
    pub spec: TraceSpec,
    /// What was found.
    pub summary: TraceSummary,
}

impl KindSpec for TraceSpec {
    fn kind(&self) -> Kind {
        Kind::Trace
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn planned_ns(&self) -> Option<u64> {
        None
    }
}

/// A trace measures a path, not load: it does not run as a member.
impl ShareRun for TraceSpec {}

/// Nor does it merge: no member ever ran one.
impl crate::merge_parts::MergeRuns for TraceReport {
    type Spec = TraceSpec;
}

impl KindReport for TraceReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let last = self.summary.hops.last();
        vec![
            metric("hops", "Hops", Unit::Count, Better::Lower)
                .of(self.summary.hops.len() as f64, Vec::new()),
            metric("rtt_mean_ns", "Last hop round trip", Unit::Nanos, Better::Lower)
                .of(last.map_or(0.0, |h| h.rtt.mean_ns), Vec::new()),
        ]
    }

    fn series(&self) -> RunSeries {
        RunSeries::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = TraceSpec::new("h", TraceProtocol::Udp);
        assert!(base.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut TraceSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.first_ttl = 0),
            Box::new(|s| s.first_ttl = 31),
            Box::new(|s| s.max_hops = 0),
            Box::new(|s| s.rounds = Some(0)),
            Box::new(|s| s.rounds = None),
            Box::new(|s| s.timeout_ns = 0),
            Box::new(|s| s.port = 65_000),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
        let mut mtr = base;
        mtr.mtr = true;
        mtr.rounds = None;
        assert!(mtr.validate().is_ok());
    }
}
