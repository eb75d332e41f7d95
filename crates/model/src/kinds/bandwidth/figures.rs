//! Mergeable figures. A [`Figures`] value describes what moved on one stream, or on all streams
//! of a flow, over one interval or a whole test; flows are built by merging stream figures with
//! [`Figures::merge`], so every total is computed the same way. [`Totals`] is the running count a
//! worker keeps; intervals are differences of two `Totals` snapshots.

use serde::{Deserialize, Serialize};

use crate::stats::{per_second, ratio, Mean};
use crate::units::bits_per_second;

/// Running counters of one stream end. Monotonic except for the gauges (`jitter_ns`, `tcp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Totals {
    /// Payload bytes written (sender) or read (receiver).
    pub bytes: u64,
    /// UDP datagrams sent, or distinct datagrams received.
    pub packets: u64,
    /// UDP datagrams the receiver has seen a gap for and not received since.
    pub lost: u64,
    /// UDP datagrams that arrived after a later one.
    pub out_of_order: u64,
    /// UDP datagrams received more than once.
    pub duplicates: u64,
    /// RFC 3550 interarrival jitter estimate, nanoseconds (a gauge).
    pub jitter_ns: f64,
    /// TCP state of a sending socket (a gauge plus a retransmit counter).
    pub tcp: Option<TcpSample>,
}

/// What `TCP_INFO` says about a sending socket at one moment.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TcpSample {
    /// Segments retransmitted since the connection opened (`tcpi_total_retrans`).
    pub retransmits: u64,
    /// Congestion window in bytes (`tcpi_snd_cwnd × tcpi_snd_mss`).
    pub cwnd_bytes: u64,
    /// Smoothed round-trip time in nanoseconds (`tcpi_rtt`).
    pub rtt_ns: u64,
    /// Round-trip time variation in nanoseconds (`tcpi_rttvar`).
    pub rttvar_ns: u64,
    /// The rate the kernel paces the socket at, bit/s (`tcpi_pacing_rate`; 0 when unknown,
    /// as from a peer older than the field).
    #[serde(default)]
    pub pacing_bps: u64,
    /// The rate the kernel last measured data being delivered at, bit/s
    /// (`tcpi_delivery_rate`; 0 when unknown).
    #[serde(default)]
    pub delivery_bps: u64,
}

/// What one side counted on a stream over a span of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideDelta {
    /// Bytes moved in the span.
    pub bytes: u64,
    /// Datagrams moved in the span (UDP).
    pub packets: u64,
    /// Datagrams newly counted lost in the span (receiver, UDP).
    pub lost: u64,
    /// Datagrams that arrived out of order in the span (receiver, UDP).
    pub out_of_order: u64,
    /// Datagrams received twice in the span (receiver, UDP).
    pub duplicates: u64,
    /// Jitter at the end of the span (receiver, UDP).
    pub jitter_ns: f64,
    /// Retransmits in the span and TCP gauges at its end (sender, TCP).
    pub tcp: Option<TcpSample>,
}

impl Totals {
    /// What changed from `earlier` to `self`.
    pub fn since(&self, earlier: &Totals) -> SideDelta {
        SideDelta {
            bytes: self.bytes.saturating_sub(earlier.bytes),
            packets: self.packets.saturating_sub(earlier.packets),
            lost: self.lost.saturating_sub(earlier.lost),
            out_of_order: self.out_of_order.saturating_sub(earlier.out_of_order),
            duplicates: self.duplicates.saturating_sub(earlier.duplicates),
            jitter_ns: self.jitter_ns,
            tcp: self.tcp.map(|now| TcpSample {
                retransmits: now
                    .retransmits
                    .saturating_sub(earlier.tcp.map_or(0, |t| t.retransmits)),
                ..now
            }),
        }
    }
}

/// The figures of one stream or one flow over one span: the sender's and the receiver's view.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figures {
    /// Bytes the sender wrote.
    pub sent_bytes: u64,
    /// Bytes the receiver read.
    pub received_bytes: u64,
    /// `sent_bytes × 8 / span`.
    pub sent_bps: f64,
    /// `received_bytes × 8 / span`.
    pub received_bps: f64,
    /// UDP: datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<u64>,
    /// UDP: `sent_packets / span`, datagrams per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_pps: Option<f64>,
    /// UDP: `received_packets / span`, datagrams per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_pps: Option<f64>,
    /// UDP: distinct datagrams received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_packets: Option<u64>,
    /// UDP: datagrams that never arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP: `lost_packets / sent_packets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_ratio: Option<f64>,
    /// UDP: datagrams that arrived after a later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order_packets: Option<u64>,
    /// UDP: datagrams received more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_packets: Option<u64>,
    /// UDP: RFC 3550 interarrival jitter, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ns: Option<f64>,
    /// TCP: segments the sender retransmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP: sender's congestion window at the end of the span (summed over streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// TCP: sender's smoothed RTT at the end of the span (mean over streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<u64>,
    /// TCP: sender's RTT variation at the end of the span (mean over streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_ns: Option<u64>,
    /// TCP: the rate the sender's kernel paced at, at the end of the span, bit/s (summed over
    /// streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_bps: Option<u64>,
    /// TCP: the delivery rate the sender's kernel last measured, at the end of the span,
    /// bit/s (summed over streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_bps: Option<u64>,
}

impl Figures {
    /// Figures of one UDP or TCP stream from the sender's and receiver's deltas over `span_ns`.
    ///
    /// Loss is `sent − received` when the sender's count is final (`final_loss`), because only
    /// then do tail losses show; during a test it is the receiver's gap count.
    pub fn from_sides(
        udp: bool,
        sent: &SideDelta,
        received: &SideDelta,
        span_ns: u64,
        final_loss: bool,
    ) -> Self {
        let mut f = Figures {
            sent_bytes: sent.bytes,
            received_bytes: received.bytes,
            sent_bps: bits_per_second(sent.bytes, span_ns),
            received_bps: bits_per_second(received.bytes, span_ns),
            ..Default::default()
        };
        if udp {
            let lost = if final_loss {
                sent.packets.saturating_sub(received.packets)
            } else {
                received.lost
            };
            f.sent_packets = Some(sent.packets);
            f.received_packets = Some(received.packets);
            f.sent_pps = Some(per_second(sent.packets, span_ns));
            f.received_pps = Some(per_second(received.packets, span_ns));
            f.lost_packets = Some(lost);
            f.loss_ratio = Some(ratio(lost, sent.packets.max(received.packets + lost)));
            f.out_of_order_packets = Some(received.out_of_order);
            f.duplicate_packets = Some(received.duplicates);
            f.jitter_ns = Some(received.jitter_ns);
        } else if let Some(tcp) = sent.tcp {
            f.retransmits = Some(tcp.retransmits);
            f.cwnd_bytes = Some(tcp.cwnd_bytes);
            f.rtt_ns = Some(tcp.rtt_ns);
            f.rttvar_ns = Some(tcp.rttvar_ns);
            f.pacing_bps = (tcp.pacing_bps > 0).then_some(tcp.pacing_bps);
            f.delivery_bps = (tcp.delivery_bps > 0).then_some(tcp.delivery_bps);
        }
        f
    }

    /// Merges the figures of several streams over the same span into one flow total.
    ///
    /// Counts and rates add up; the congestion window adds up (bytes in flight over all
    /// streams); RTT is the mean over streams; jitter is the mean weighted by datagrams received.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a Figures>) -> Figures {
        let mut out = Figures::default();
        let mut rtt = Mean::default();
        let mut rttvar = Mean::default();
        let mut jitter_weighted = 0.0;
        let mut jitter_weight = 0u64;
        let mut jitter_seen = 0usize;
        let mut jitter_sum = 0.0;
        for p in parts {
            out.sent_bytes += p.sent_bytes;
            out.received_bytes += p.received_bytes;
            out.sent_bps += p.sent_bps;
            out.received_bps += p.received_bps;
            add_opt(&mut out.sent_packets, p.sent_packets);
            add_opt_f(&mut out.sent_pps, p.sent_pps);
            add_opt_f(&mut out.received_pps, p.received_pps);
            add_opt(&mut out.received_packets, p.received_packets);
            add_opt(&mut out.lost_packets, p.lost_packets);
            add_opt(&mut out.out_of_order_packets, p.out_of_order_packets);
            add_opt(&mut out.duplicate_packets, p.duplicate_packets);
            add_opt(&mut out.retransmits, p.retransmits);
            add_opt(&mut out.cwnd_bytes, p.cwnd_bytes);
            add_opt(&mut out.pacing_bps, p.pacing_bps);
            add_opt(&mut out.delivery_bps, p.delivery_bps);
            if let Some(r) = p.rtt_ns {
                rtt.add(r);
            }
            if let Some(r) = p.rttvar_ns {
                rttvar.add(r);
            }
            if let Some(j) = p.jitter_ns {
                let w = p.received_packets.unwrap_or(0);
                jitter_weighted += j * w as f64;
                jitter_weight += w;
                jitter_sum += j;
                jitter_seen += 1;
            }
        }
        out.rtt_ns = rtt.get();
        out.rttvar_ns = rttvar.get();
        if jitter_seen > 0 {
            out.jitter_ns = Some(if jitter_weight > 0 {
                jitter_weighted / jitter_weight as f64
            } else {
                jitter_sum / jitter_seen as f64
            });
        }
        if let (Some(lost), Some(sent), Some(received)) =
            (out.lost_packets, out.sent_packets, out.received_packets)
        {
            out.loss_ratio = Some(ratio(lost, sent.max(received + lost)));
        }
        out
    }
}

fn add_opt(acc: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *acc = Some(acc.unwrap_or(0) + v);
    }
}

fn add_opt_f(acc: &mut Option<f64>, v: Option<f64>) {
    if let Some(v) = v {
        *acc = Some(acc.unwrap_or(0.0) + v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_subtracts_counters_and_keeps_gauges() {
        let a = Totals {
            bytes: 10,
            packets: 1,
            tcp: Some(TcpSample { retransmits: 3, ..Default::default() }),
            ..Default::default()
        };
        let b = Totals {
            bytes: 25,
            packets: 4,
            jitter_ns: 7.0,
            tcp: Some(TcpSample {
                retransmits: 5,
                cwnd_bytes: 100,
                rtt_ns: 9,
                rttvar_ns: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        let d = b.since(&a);
        assert_eq!((d.bytes, d.packets, d.jitter_ns), (15, 3, 7.0));
        assert_eq!(d.tcp.unwrap().retransmits, 2);
        assert_eq!(d.tcp.unwrap().cwnd_bytes, 100);
    }

    #[test]
    fn udp_final_loss_counts_the_tail() {
        let sent = SideDelta { bytes: 1000, packets: 10, ..Default::default() };
        let recv = SideDelta { bytes: 700, packets: 7, lost: 1, ..Default::default() };
        let live = Figures::from_sides(true, &sent, &recv, 1_000_000_000, false);
        assert_eq!(live.lost_packets, Some(1));
        let end = Figures::from_sides(true, &sent, &recv, 1_000_000_000, true);
        assert_eq!(end.lost_packets, Some(3));
        assert!((end.loss_ratio.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(end.sent_bps, 8000.0);
    }

    #[test]
    fn merge_adds_counts_and_weights_jitter() {
        let a = Figures {
            sent_bytes: 1,
            received_packets: Some(1),
            jitter_ns: Some(10.0),
            sent_packets: Some(1),
            lost_packets: Some(0),
            ..Default::default()
        };
        let b = Figures {
            sent_bytes: 2,
            received_packets: Some(3),
            jitter_ns: Some(2.0),
            sent_packets: Some(4),
            lost_packets: Some(1),
            ..Default::default()
        };
        let m = Figures::merge([&a, &b]);
        assert_eq!(m.sent_bytes, 3);
        assert_eq!(m.jitter_ns, Some(4.0));
        assert_eq!(m.loss_ratio, Some(0.2));
    }
}
