//! Bandwidth runs (and `pps`, which are bandwidth runs) in every format: iperf3's interval
//! table as text ([`text`]), CSV rows per flow ([`csv`]), iperf3's `-J` document
//! ([`iperf3_json`]), the live panel's throughput and the quick table's line per flow.

mod csv;
pub(crate) mod iperf3_json;
mod text;

use std::io::{self, Write};

use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthReport, BandwidthSpec, Direction, LoadedLatency,
};
use wirespeed_model::rules::Protocol;
use wirespeed_model::Meta;

use super::{KindView, LiveSample, QuickLine};
use crate::text::Style;
use crate::units::{nanos, packet_rate, percent, rate};

/// How a bandwidth run is shown.
pub(crate) struct BandwidthView {
    spec: BandwidthSpec,
}

impl BandwidthView {
    pub(crate) fn new(spec: &BandwidthSpec) -> Self {
        Self { spec: spec.clone() }
    }
}

impl KindView for BandwidthView {
    type Report = BandwidthReport;

    fn describe(&self) -> String {
        text::describe(&self.spec)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&text::header(self.spec.protocol)))
    }

    fn text_step(
        &mut self,
        iv: &BandwidthInterval,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        text::interval(style, &self.spec, iv, out)
    }

    fn text_end(
        &mut self,
        b: &BandwidthReport,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        text::summary(style, &b.spec, &b.summary, out)
    }

    fn csv_columns(&self) -> String {
        csv::COLUMNS.to_string()
    }

    fn csv_rows(&self, iv: &BandwidthInterval) -> Vec<String> {
        csv::interval_rows(iv)
    }

    fn csv_summary(&self, b: &BandwidthReport) -> Vec<String> {
        csv::summary_rows(b)
    }

    fn live(&self, iv: &BandwidthInterval) -> Option<LiveSample> {
        let bps: f64 = iv.flows.iter().map(|f| f.total.received_bps).sum();
        let mut details: Vec<String> = iv
            .flows
            .iter()
            .map(|f| format!("{:?} {}", f.flow, rate(f.total.received_bps)))
            .collect();
        let lost: u64 = iv.flows.iter().filter_map(|f| f.total.lost_packets).sum();
        let retr: u64 = iv.flows.iter().filter_map(|f| f.total.retransmits).sum();
        if iv.flows.iter().any(|f| f.total.lost_packets.is_some()) {
            details.push(format!("lost {lost}"));
        } else {
            details.push(format!("{} {retr}", text::resent(self.spec.protocol).1));
        }
        if iv.omitted {
            details.push("(warm-up)".into());
        }
        Some(LiveSample { end_ns: iv.end_ns, value: bps, current: rate(bps), details })
    }

    /// A line per flow: what was sent and received, and TCP's or UDP's own figures.
    fn quick(&self, name: &str, b: &BandwidthReport) -> Vec<QuickLine> {
        b.summary
            .flows()
            .map(|f| {
                let name = if b.spec.direction == Direction::Bidir {
                    format!("{name} ({})", format!("{:?}", f.flow).to_lowercase())
                } else {
                    name.to_string()
                };
                let t = &f.total;
                let details = match b.spec.protocol {
                    Protocol::Tcp | Protocol::Quic => format!(
                        "{} {}, RTT {}",
                        text::resent(b.spec.protocol).1,
                        t.retransmits.unwrap_or(0),
                        f.rtt_range_ns.map_or("-".into(), |r| nanos(r.mean as f64))
                    ),
                    // Unpaced, a sender outruns one receiving thread on any machine: what
                    // it offered and what arrived, said as such, not a "loss" of the path.
                    Protocol::Udp if b.spec.bitrate_bps == 0 => format!(
                        "unpaced: {} offered, {} delivered ({})",
                        packet_rate(t.sent_pps.unwrap_or(0.0)),
                        packet_rate(t.received_pps.unwrap_or(0.0)),
                        match t.loss_ratio.unwrap_or(0.0) {
                            0.0 => "every one".to_string(),
                            r => format!("{} of them more than the receiver took", percent(r)),
                        }
                    ),
                    Protocol::Udp => format!(
                        "loss {}, jitter {}, {} received",
                        percent(t.loss_ratio.unwrap_or(0.0)),
                        nanos(t.jitter_ns.unwrap_or(0.0)),
                        packet_rate(t.received_pps.unwrap_or(0.0))
                    ),
                };
                // Idle and loaded median round trips, where the run probed them.
                let medians = |l: &LoadedLatency| {
                    (nanos(l.idle.p50_ns as f64), nanos(l.loaded.p50_ns as f64))
                };
                let mut details = details;
                if let Some((idle, loaded)) = b.summary.latency.as_ref().map(medians) {
                    details.push_str(&format!("; idle RTT {idle}, loaded {loaded}"));
                }
                if let Some((idle, loaded)) = b.summary.udp_latency.as_ref().map(medians) {
                    details.push_str(&format!(" (UDP {idle}, {loaded})"));
                }
                (name, rate(t.sent_bps), rate(t.received_bps), details)
            })
            .collect()
    }
}
