//! `--format iperf3-json`: a bandwidth report in the schema of `iperf3 -J` (3.x), so scripts and
//! dashboards that parse iperf3's JSON read wirespeed runs unchanged. One document at the end.
//!
//! Filled as iperf3 fills them: `start` (connected, version, system_info, timestamp,
//! connecting_to, target_bitrate, sock_bufsize, test_start), `intervals` (streams, sum,
//! sum_bidir_reverse; TCP snd_cwnd, rtt, rttvar, retransmits; UDP packets, jitter_ms,
//! lost_packets, lost_percent) and `end` (streams, sum_sent, sum_received, their
//! `_bidir_reverse` twins, UDP sum, cpu_utilization_percent, sender/receiver_tcp_congestion).
//! Deviations: `socket` is the stream number, not a file descriptor; `connected` lists the
//! control connection's addresses for each stream; `pmtu`, `snd_wnd`, `max_snd_wnd`, `cookie`,
//! `tcp_mss_default`, `sndbuf_actual` and `rcvbuf_actual` are not measured and left out.
//! Everything is in `docs/metrics.md`.

use std::io::{self, Write};

use serde_json::{json, Map, Value};
use wirespeed_model::kinds::bandwidth::Figures;
use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthReport, CpuUsage, FlowFigures, FlowSummary,
};
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction, End, Flow};
use wirespeed_model::report::Meta;
use wirespeed_model::rules::Protocol;
use wirespeed_model::units::CivilTime;
use wirespeed_model::{Event, ReportBody};

use crate::Renderer;

/// The renderer; it writes nothing until the run ends.
#[derive(Debug, Default)]
pub(crate) struct Iperf3Json;

impl Renderer for Iperf3Json {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        if let Event::End(report) = event {
            let ReportBody::Bandwidth(b) = &report.body else {
                return Err(io::Error::other(format!(
                    "--format iperf3-json renders bandwidth tests only, not {} tests",
                    report.kind()
                )));
            };
            serde_json::to_writer_pretty(&mut *out, &document(b, &report.meta))?;
            writeln!(out)?;
        }
        Ok(())
    }
}

/// The whole `-J` document.
pub(crate) fn document(b: &BandwidthReport, meta: &Meta) -> Value {
    json!({
        "start": start(&b.spec, meta),
        "intervals": b.intervals.iter().map(|iv| interval(&b.spec, iv)).collect::<Vec<_>>(),
        "end": end(b),
    })
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn host_port(addr: Option<&str>) -> (String, u16) {
    let Some(addr) = addr else { return (String::new(), 0) };
    match addr.rsplit_once(':') {
        Some((h, p)) => (h.trim_matches(['[', ']']).to_string(), p.parse().unwrap_or(0)),
        None => (addr.to_string(), 0),
    }
}

fn start(spec: &BandwidthSpec, meta: &Meta) -> Value {
    let (local_host, local_port) = host_port(meta.local_addr.as_deref());
    let (remote_host, remote_port) = host_port(meta.remote_addr.as_deref());
    let streams = Flow::of(spec.direction).len() as u16 * spec.parallel;
    let connected: Vec<Value> = (1..=streams)
        .map(|socket| {
            json!({"socket": socket, "local_host": local_host, "local_port": local_port,
                   "remote_host": remote_host, "remote_port": remote_port})
        })
        .collect();
    let timesecs = meta.start_unix_ms / 1000;
    json!({
        "connected": connected,
        "version": format!("wirespeed {}", meta.version),
        "system_info": meta.host,
        "timestamp": {"time": rfc1123(timesecs), "timesecs": timesecs},
        "connecting_to": {"host": spec.target, "port": remote_port},
        "target_bitrate": spec.bitrate_bps,
        "sock_bufsize": spec.window.unwrap_or(0),
        "test_start": {
            "protocol": spec.protocol.label(),
            "num_streams": spec.parallel,
            "blksize": spec.length,
            "omit": spec.omit_ns / 1_000_000_000,
            "duration": if spec.bytes.is_some() { 0 } else { spec.duration_ns / 1_000_000_000 },
            "bytes": spec.bytes.unwrap_or(0),
            "blocks": 0,
            "reverse": u8::from(spec.direction == Direction::Download),
            "bidir": u8::from(spec.direction == Direction::Bidir),
            "tos": spec.dscp.map_or(0, |d| u32::from(d) << 2),
            "target_bitrate": spec.bitrate_bps,
        },
    })
}

/// iperf3 labels figures by whether the client sent them: `sender` is true for the client's
/// sending streams.
fn client_sends(flow: Flow) -> bool {
    flow.sender() == End::Client
}

/// One interval entry: the client's view, as iperf3's client prints it (the sender's counts
/// on flows it sends, the receiver's on flows it receives).
fn interval_entry(
    spec: &BandwidthSpec,
    f: &Figures,
    flow: Flow,
    iv: &BandwidthInterval,
    socket: Option<u16>,
) -> Value {
    let sending = client_sends(flow);
    let (bytes, bps) =
        if sending { (f.sent_bytes, f.sent_bps) } else { (f.received_bytes, f.received_bps) };
    let mut m = timed_entry(socket, secs(iv.start_ns), secs(iv.end_ns));
    m.insert("bytes".into(), bytes.into());
    m.insert("bits_per_second".into(), bps.into());
    match spec.protocol {
        // QUIC's sender figures come from its connection as TCP's from TCP_INFO.
        Protocol::Tcp | Protocol::Quic if sending => {
            m.insert("retransmits".into(), f.retransmits.unwrap_or(0).into());
            if socket.is_some() {
                m.insert("snd_cwnd".into(), f.cwnd_bytes.unwrap_or(0).into());
                m.insert("rtt".into(), (f.rtt_ns.unwrap_or(0) / 1000).into());
                m.insert("rttvar".into(), (f.rttvar_ns.unwrap_or(0) / 1000).into());
            }
        }
        Protocol::Tcp | Protocol::Quic => {}
        Protocol::Udp if sending => {
            m.insert("packets".into(), f.sent_packets.unwrap_or(0).into());
        }
        Protocol::Udp => udp_receiver_fields(&mut m, f),
    }
    m.insert("omitted".into(), iv.omitted.into());
    m.insert("sender".into(), sending.into());
    Value::Object(m)
}

fn udp_receiver_fields(m: &mut Map<String, Value>, f: &Figures) {
    let lost = f.lost_packets.unwrap_or(0);
    // iperf3's receiver total is its highest sequence number: what arrived plus the gaps.
    let total = f.received_packets.unwrap_or(0) + lost;
    m.insert("jitter_ms".into(), (f.jitter_ns.unwrap_or(0.0) / 1e6).into());
    m.insert("lost_packets".into(), lost.into());
    m.insert("packets".into(), total.into());
    m.insert(
        "lost_percent".into(),
        if total == 0 { 0.0 } else { 100.0 * lost as f64 / total as f64 }.into(),
    );
}

/// Socket numbers: streams numbered 1.. in iperf3's creation order (upload first in bidir).
fn socket_of(spec: &BandwidthSpec, flow: Flow, id: u16) -> u16 {
    let offset = if spec.direction == Direction::Bidir && flow == Flow::Download {
        spec.parallel
    } else {
        0
    };
    offset + id
}

fn flow_of(flows: &[FlowFigures], flow: Flow) -> Option<&FlowFigures> {
    flows.iter().find(|f| f.flow == flow)
}

fn interval(spec: &BandwidthSpec, iv: &BandwidthInterval) -> Value {
    let mut streams = Vec::new();
    for f in &iv.flows {
        for s in &f.streams {
            streams.push(interval_entry(
                spec,
                &s.figures,
                f.flow,
                iv,
                Some(socket_of(spec, f.flow, s.id)),
            ));
        }
    }
    let (primary, reverse) = match spec.direction {
        Direction::Upload => (Flow::Upload, None),
        Direction::Download => (Flow::Download, None),
        Direction::Bidir => (Flow::Upload, Some(Flow::Download)),
    };
    let mut m = Map::new();
    m.insert("streams".into(), streams.into());
    if let Some(f) = flow_of(&iv.flows, primary) {
        m.insert("sum".into(), interval_entry(spec, &f.total, f.flow, iv, None));
    }
    if let Some(f) = reverse.and_then(|r| flow_of(&iv.flows, r)) {
        m.insert("sum_bidir_reverse".into(), interval_entry(spec, &f.total, f.flow, iv, None));
    }
    Value::Object(m)
}

/// The fields every iperf3 entry starts with: the stream's socket (none for sums) and the span.
fn timed_entry(socket: Option<u16>, start: f64, end: f64) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(s) = socket {
        m.insert("socket".into(), s.into());
    }
    m.insert("start".into(), start.into());
    m.insert("end".into(), end.into());
    m.insert("seconds".into(), (end - start).into());
    m
}

/// A summary figure from one end's view: `sent` picks the sender's counts.
fn end_entry(f: &Figures, flow: &FlowSummary, sent: bool, socket: Option<u16>, tcp: bool) -> Value {
    let mut m = timed_entry(socket, 0.0, secs(flow.duration_ns));
    let (bytes, bps) =
        if sent { (f.sent_bytes, f.sent_bps) } else { (f.received_bytes, f.received_bps) };
    m.insert("bytes".into(), bytes.into());
    m.insert("bits_per_second".into(), bps.into());
    if tcp && sent {
        m.insert("retransmits".into(), f.retransmits.unwrap_or(0).into());
    }
    m.insert("sender".into(), client_sends(flow.flow).into());
    Value::Object(m)
}

fn udp_end_entry(f: &Figures, flow: &FlowSummary, socket: Option<u16>) -> Value {
    let mut m = timed_entry(socket, 0.0, secs(flow.duration_ns));
    m.insert("bytes".into(), f.received_bytes.into());
    m.insert("bits_per_second".into(), f.received_bps.into());
    let lost = f.lost_packets.unwrap_or(0);
    let sent = f.sent_packets.unwrap_or(0);
    m.insert("jitter_ms".into(), (f.jitter_ns.unwrap_or(0.0) / 1e6).into());
    m.insert("lost_packets".into(), lost.into());
    m.insert("packets".into(), sent.into());
    m.insert("lost_percent".into(), (f.loss_ratio.unwrap_or(0.0) * 100.0).into());
    if socket.is_some() {
        m.insert("out_of_order".into(), f.out_of_order_packets.unwrap_or(0).into());
    }
    m.insert("sender".into(), client_sends(flow.flow).into());
    Value::Object(m)
}

fn end(b: &BandwidthReport) -> Value {
    let spec = &b.spec;
    let tcp = spec.protocol == Protocol::Tcp;
    let flows: Vec<&FlowSummary> =
        std::iter::once(&b.summary.primary).chain(b.summary.reverse.as_ref()).collect();
    let mut streams = Vec::new();
    for f in &flows {
        for s in &f.streams {
            let socket = Some(socket_of(spec, f.flow, s.id));
            streams.push(if tcp {
                let mut sender = end_entry(&s.figures, f, true, socket, true);
                if let Value::Object(m) = &mut sender {
                    m.insert("max_snd_cwnd".into(), s.figures.cwnd_bytes.unwrap_or(0).into());
                    if let Some(r) = f.rtt_range_ns {
                        m.insert("max_rtt".into(), (r.max / 1000).into());
                        m.insert("min_rtt".into(), (r.min / 1000).into());
                        m.insert("mean_rtt".into(), (r.mean / 1000).into());
                    }
                }
                json!({"sender": sender, "receiver": end_entry(&s.figures, f, false, socket, true)})
            } else {
                json!({"udp": udp_end_entry(&s.figures, f, socket)})
            });
        }
    }
    let mut m = Map::new();
    m.insert("streams".into(), streams.into());
    for (f, suffix) in flows.iter().zip(["", "_bidir_reverse"]) {
        m.insert(
            format!("sum_sent{suffix}"),
            if tcp {
                end_entry(&f.total, f, true, None, true)
            } else {
                udp_end_entry(&f.total, f, None)
            },
        );
        m.insert(
            format!("sum_received{suffix}"),
            if tcp {
                end_entry(&f.total, f, false, None, true)
            } else {
                udp_end_entry(&f.total, f, None)
            },
        );
        if !tcp {
            m.insert(format!("sum{suffix}"), udp_end_entry(&f.total, f, None));
        }
    }
    let pct = |c: &CpuUsage| (c.total_ratio * 100.0, c.user_ratio * 100.0, c.system_ratio * 100.0);
    let (ht, hu, hs) = pct(&b.summary.client_cpu);
    let (rt, ru, rs) = b.summary.server_cpu.as_ref().map_or((0.0, 0.0, 0.0), pct);
    m.insert(
        "cpu_utilization_percent".into(),
        json!({"host_total": ht, "host_user": hu, "host_system": hs,
               "remote_total": rt, "remote_user": ru, "remote_system": rs}),
    );
    if tcp {
        let cc = spec.congestion.clone().unwrap_or_default();
        m.insert("sender_tcp_congestion".into(), cc.clone().into());
        m.insert("receiver_tcp_congestion".into(), cc.into());
    }
    Value::Object(m)
}

/// `timesecs` as RFC 1123 in GMT, the way iperf3 writes `start.timestamp.time`.
fn rfc1123(timesecs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let c = CivilTime::from_unix(timesecs as i64);
    let (h, m, s) = c.hms;
    format!(
        "{}, {:02} {} {:04} {h:02}:{m:02}:{s:02} GMT",
        DAYS[c.weekday as usize],
        c.day,
        MONTHS[(c.month - 1) as usize],
        c.year
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::report;
    use crate::{render_report, Format};

    #[test]
    fn dates_are_rfc1123() {
        assert_eq!(rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(rfc1123(1_796_212_800), "Wed, 02 Dec 2026 12:00:00 GMT");
    }

    #[test]
    fn tcp_and_udp_documents_have_iperf3s_keys() {
        for (protocol, direction) in [
            (Protocol::Tcp, Direction::Upload),
            (Protocol::Tcp, Direction::Bidir),
            (Protocol::Udp, Direction::Download),
            (Protocol::Udp, Direction::Bidir),
        ] {
            let r = report(protocol, direction);
            let mut out = Vec::new();
            render_report(&r, Format::Iperf3Json, false, &mut out).unwrap();
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert!(v["start"]["test_start"]["num_streams"].is_u64());
            assert!(v["intervals"][0]["sum"]["bits_per_second"].is_f64());
            assert!(v["end"]["sum_received"]["bytes"].is_u64());
            assert!(v["end"]["cpu_utilization_percent"]["host_total"].is_f64());
            if direction == Direction::Bidir {
                assert!(v["end"]["sum_sent_bidir_reverse"]["bytes"].is_u64());
                assert!(v["intervals"][0]["sum_bidir_reverse"].is_object());
            }
            if protocol == Protocol::Udp {
                assert!(v["end"]["sum"]["lost_percent"].is_f64());
                assert!(v["end"]["streams"][0]["udp"]["jitter_ms"].is_f64());
            } else {
                assert!(v["end"]["streams"][0]["sender"]["max_snd_cwnd"].is_u64());
            }
        }
    }
}
