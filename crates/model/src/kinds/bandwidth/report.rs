//! A finished bandwidth run: intervals of per-flow, per-stream figures, and the summary of the
//! measured part with each end's CPU use.

use serde::{Deserialize, Serialize};

use super::figures::Figures;
use super::spec::{BandwidthSpec, End, Flow};
use crate::histogram::LatencyStats;
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::{Member, ShareError, ShareRun};
use crate::metrics::{metric, rate_line, Better, Events, Metric, RunSeries, Unit};
use crate::rules::Protocol;
use crate::stats::GaugeStats;

/// A bandwidth run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BandwidthReport {
    /// What was asked.
    pub spec: BandwidthSpec,
    /// One entry per reporting interval, warm-up included (marked `omitted`).
    pub intervals: Vec<BandwidthInterval>,
    /// Totals over the measured (non-omitted) part.
    pub summary: BandwidthSummary,
}

/// One reporting interval of a bandwidth run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BandwidthInterval {
    /// Position, from 0.
    pub index: u32,
    /// Start, nanoseconds since the test began.
    pub start_ns: u64,
    /// End, nanoseconds since the test began.
    pub end_ns: u64,
    /// True when inside the `--omit` warm-up.
    pub omitted: bool,
    /// Set when only this end measured the interval: an iperf3 peer shares no interval
    /// figures, so the other end's side of each figure is zero (its totals are in the summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_at: Option<End>,
    /// One entry per flow (upload, download).
    pub flows: Vec<FlowFigures>,
    /// `--latency`: round trips of the probes (TCP handshakes on new connections) that ended
    /// in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_rtt: Option<LatencyStats>,
    /// `--latency`: round trips of the UDP echo probes that ended in this interval (absent
    /// where the server does not answer them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_udp_rtt: Option<LatencyStats>,
}

impl BandwidthInterval {
    /// A flow's throughput over this interval as the end that measured it saw it: the receiver's
    /// rate, unless only the sender measured the interval (an iperf3 peer shares no interval
    /// figures, so the receiver's side is zero there and its totals are only in the summary).
    pub fn measured_bps(&self, flow: &FlowFigures) -> f64 {
        if self.measured_by(flow.flow.receiver()) {
            flow.total.received_bps
        } else {
            flow.total.sent_bps
        }
    }

    /// Whether `end`'s side of the figures was measured in this interval (both ends' were,
    /// unless the interval is one-sided).
    pub fn measured_by(&self, end: End) -> bool {
        self.measured_at.is_none_or(|at| at == end)
    }
}

/// A flow's total and its streams over one span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowFigures {
    /// Which way the data moved.
    pub flow: Flow,
    /// All streams of the flow merged.
    #[serde(flatten)]
    pub total: Figures,
    /// Each stream on its own.
    pub streams: Vec<StreamFigures>,
}

/// One stream's figures over one span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamFigures {
    /// Stream number within its flow, from 1.
    pub id: u16,
    /// The figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The whole measured part of a bandwidth run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BandwidthSummary {
    /// The first flow (upload, or download with `-R`), flattened so `summary.received_bps` works.
    #[serde(flatten)]
    pub primary: FlowSummary,
    /// The download flow of a `--bidir` test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<FlowSummary>,
    /// CPU used by the client's data streams.
    pub client_cpu: CpuUsage,
    /// CPU used by the server's data streams for this test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<CpuUsage>,
    /// `--latency`: the path's round trip before the test and under its load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LoadedLatency>,
    /// `--latency`: the same from UDP echo probes (absent where the server does not answer
    /// them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_latency: Option<LoadedLatency>,
}

/// Round trips probed beside a bandwidth test (`--latency`): TCP handshakes with the server's
/// port on new connections, or UDP echoes the server answers, before the test (idle) and every
/// 100 ms during its measured part (loaded), as Flent's RRUL and the bufferbloat tests compare
/// them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadedLatency {
    /// Before the test.
    pub idle: LatencyStats,
    /// During the measured part (warm-up left out).
    pub loaded: LatencyStats,
    /// Loaded median less idle median, nanoseconds (0 when lower).
    pub added_ns: u64,
    /// Probes that failed or took over 2 s (a path so loaded a handshake times out).
    pub failed: u64,
}

impl BandwidthSummary {
    /// Every flow of the run, primary first.
    pub fn flows(&self) -> impl Iterator<Item = &FlowSummary> {
        std::iter::once(&self.primary).chain(self.reverse.as_ref())
    }
}

/// A flow's totals over the measured part of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowSummary {
    /// Which way the data moved.
    pub flow: Flow,
    /// Which end sent.
    pub sender: End,
    /// Measured time: from the end of the warm-up until the last byte was received.
    pub duration_ns: u64,
    /// Totals of all streams.
    #[serde(flatten)]
    pub total: Figures,
    /// TCP: smoothed RTT sampled each interval: min, mean and max over intervals and streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_range_ns: Option<GaugeStats>,
    /// TCP: largest congestion window seen on any stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_max_bytes: Option<u64>,
    /// Each stream's totals.
    pub streams: Vec<StreamFigures>,
}

/// Processor time used by one end, as a share of the test's wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuUsage {
    /// User-mode CPU seconds / wall seconds (can exceed 1 with several streams).
    pub user_ratio: f64,
    /// Kernel-mode CPU seconds / wall seconds.
    pub system_ratio: f64,
    /// `user_ratio + system_ratio`.
    pub total_ratio: f64,
}

impl CpuUsage {
    /// Usage from CPU nanoseconds (user, system) over `wall_ns`.
    pub fn from_nanos(user_ns: u64, system_ns: u64, wall_ns: u64) -> Self {
        if wall_ns == 0 {
            return Self::default();
        }
        let user_ratio = user_ns as f64 / wall_ns as f64;
        let system_ratio = system_ns as f64 / wall_ns as f64;
        Self { user_ratio, system_ratio, total_ratio: user_ratio + system_ratio }
    }
}

/// Which end of a flow measures a figure.
#[derive(Clone, Copy)]
enum Side {
    Sender,
    Receiver,
}

impl KindSpec for BandwidthSpec {
    fn kind(&self) -> Kind {
        Kind::Bandwidth
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn planned_ns(&self) -> Option<u64> {
        self.bytes.is_none().then(|| self.total_ns())
    }

    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    fn pacing_ns(&self) -> Option<u64> {
        // Each stream's thread paces its own writes (or datagrams) at the per-stream rate.
        (self.bitrate_bps > 0)
            .then(|| (f64::from(self.length) * 8.0 * 1e9 / self.bitrate_bps as f64) as u64)
    }
}

/// A bandwidth run's members each open their part of the streams and send their part of a
/// byte limit.
impl ShareRun for BandwidthSpec {
    fn share(&self, member: &Member) -> Result<Self, ShareError> {
        let mut s = self.clone();
        s.parallel = member.part_of_each("streams", "-P", s.parallel)?;
        s.bytes = member.part_of_count(s.bytes)?;
        Ok(s)
    }
}

impl KindReport for BandwidthReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let measured: Vec<_> = self.intervals.iter().filter(|i| !i.omitted).collect();
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
        let primary = &self.summary.primary.total;
        let mut out =
            vec![metric("throughput_bps", "Throughput", Unit::BitsPerSecond, Better::Higher)
                .of(primary.received_bps, rate_samples(0))];
        // A packet-rate run (`wirespeed pps`) is judged, listed and compared by its packets:
        // those that arrived, or where only the sender counted (ethr's client, which never
        // learns what arrived), those sent.
        if self.spec.per_packet {
            let received = |f: &FlowFigures| f.total.received_pps;
            let sent = |f: &FlowFigures| f.total.sent_pps;
            let (rate, samples) = match primary.received_pps {
                Some(r) => (r, flow_samples(0, Side::Receiver, &received)),
                None => (primary.sent_pps.unwrap_or(0.0), flow_samples(0, Side::Sender, &sent)),
            };
            let packets = metric(
                "packet_rate",
                "Packet rate",
                Unit::PerSecond(Events::Packets),
                Better::Higher,
            );
            out.insert(0, packets.of(rate, samples));
        }
        if let Some(rev) = &self.summary.reverse {
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
        if self.spec.protocol == Protocol::Udp {
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

    fn work(&self) -> Option<crate::kind::Work> {
        let flows = std::iter::once(&self.summary.primary).chain(&self.summary.reverse);
        if self.spec.per_packet {
            // Those that arrived; those sent where only the sender counted.
            let t = &self.summary.primary.total;
            let count = t.received_packets.or(t.sent_packets)? as f64;
            return Some(crate::kind::Work { count, unit: "packet" });
        }
        let bytes: u64 = flows.map(|f| f.total.received_bytes).sum();
        Some(crate::kind::Work { count: bytes as f64 / 1e9, unit: "GB" })
    }

    fn series(&self) -> RunSeries {
        let flows = self.intervals.first().map_or(0, |i| i.flows.len());
        let rate = (0..flows)
            .map(|k| {
                let label = self.intervals[0].flows[k].flow;
                rate_line(
                    format!("{label:?}"),
                    Unit::BitsPerSecond,
                    self.intervals
                        .iter()
                        .filter_map(|i| Some((i.end_ns, i.measured_bps(i.flows.get(k)?)))),
                )
            })
            .collect();
        RunSeries { rate, latency: Vec::new(), per_probe: false }
    }
}
