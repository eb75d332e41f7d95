//! How bandwidth runs read as text: iperf3's interval table (a row per stream with several,
//! then the flow's), and a summary with both ends' figures and CPU use.

use std::io::{self, Write};

use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthSpec, BandwidthSummary, CpuUsage, Direction, End, Figures, Flow,
    FlowSummary, LoadedLatency,
};
use wirespeed_model::rules::Protocol;

use crate::text::Style;
use crate::units::{bytes, nanos, packet_rate, percent, rate};

fn flow_label(flow: Flow, bidir: bool) -> &'static str {
    match (flow, bidir) {
        (Flow::Upload, false) | (Flow::Download, false) => "",
        (Flow::Upload, true) => "up ",
        (Flow::Download, true) => "dn ",
    }
}

/// "TCP, 1 stream, upload (client → server), 10 s, 128 KiB writes" and the like.
pub(super) fn describe(spec: &BandwidthSpec) -> String {
    let proto = spec.protocol.label();
    let dir = match spec.direction {
        Direction::Upload => "upload (client → server)",
        Direction::Download => "download (server → client, -R)",
        Direction::Bidir => "both directions (--bidir)",
    };
    let streams = if spec.parallel == 1 {
        "1 stream".to_string()
    } else {
        format!("{} streams", spec.parallel)
    };
    let limit = match spec.bytes {
        Some(b) => bytes(b),
        None => format!("{} s", spec.duration_ns as f64 / 1e9),
    };
    let rate_part = if spec.bitrate_bps > 0 {
        format!(", {} per stream", rate(spec.bitrate_bps as f64))
    } else {
        String::new()
    };
    let unit = match spec.protocol {
        Protocol::Tcp | Protocol::Quic => format!("{} writes", bytes(u64::from(spec.length))),
        Protocol::Udp => format!("{}-byte datagrams", spec.length),
    };
    format!("{proto}, {streams}, {dir}, {limit}, {unit}{rate_part}")
}

/// The interval table's heading.
pub(super) fn header(protocol: Protocol) -> String {
    if protocol == Protocol::Udp {
        format!(
            "{:<9}{:<15}{:>11}{:>14}{:>14}{:>12}",
            "[ ID]", "Interval", "Transfer", "Bitrate", "Lost/Total", "Jitter"
        )
    } else {
        format!(
            "{:<9}{:<15}{:>11}{:>14}{:>7}{:>11}{:>10}",
            "[ ID]",
            "Interval",
            "Transfer",
            "Bitrate",
            resent(protocol).0,
            "Cwnd",
            "RTT"
        )
    }
}

/// What a sender's resent data is called, in a column heading and in words: TCP's
/// retransmitted segments, QUIC's packets declared lost (their data goes again in new ones).
pub(super) fn resent(protocol: Protocol) -> (&'static str, &'static str) {
    match protocol {
        Protocol::Quic => ("Lost", "lost packets"),
        _ => ("Retr", "retransmits"),
    }
}

/// Which end's counts an interval row shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum View {
    Sender,
    Receiver,
}

/// The view of a row: the receiver's for UDP and the sender's for TCP (as iperf3), unless only
/// one end measured the interval.
fn view_of(udp: bool, flow: Flow, measured_at: Option<End>) -> View {
    match measured_at {
        Some(end) if flow.sender() == end => View::Sender,
        Some(_) => View::Receiver,
        None if udp => View::Receiver,
        None => View::Sender,
    }
}

/// One interval row.
fn row(
    id: &str,
    start: f64,
    end: f64,
    f: &Figures,
    udp: bool,
    view: View,
    one_sided: bool,
) -> String {
    let span = format!("{start:.2}-{end:.2} s");
    let (moved, bitrate) = match view {
        View::Sender => (f.sent_bytes, f.sent_bps),
        View::Receiver => (f.received_bytes, f.received_bps),
    };
    if udp {
        let (lost, jitter) = match view {
            View::Receiver => (
                format!("{}/{}", f.lost_packets.unwrap_or(0), {
                    // Without the sender's count, the total is what arrived plus the gaps.
                    let seen = f.received_packets.unwrap_or(0) + f.lost_packets.unwrap_or(0);
                    if one_sided {
                        seen
                    } else {
                        f.sent_packets.unwrap_or(0)
                    }
                }),
                nanos(f.jitter_ns.unwrap_or(0.0)),
            ),
            // Loss and jitter are the receiver's to measure.
            View::Sender => (format!("-/{}", f.sent_packets.unwrap_or(0)), "-".into()),
        };
        // Millions of datagrams overflow the column; keep the cells apart.
        let lost = if lost.len() >= 14 { format!(" {lost}") } else { lost };
        format!(
            "{:<9}{:<15}{:>11}{:>14}{:>14}{:>12}",
            id,
            span,
            bytes(moved),
            rate(bitrate),
            lost,
            jitter
        )
    } else {
        let tcp = |v: Option<String>| match view {
            View::Sender => v.unwrap_or_else(|| "-".into()),
            View::Receiver => "-".into(),
        };
        format!(
            "{:<9}{:<15}{:>11}{:>14}{:>7}{:>11}{:>10}",
            id,
            span,
            bytes(moved),
            rate(bitrate),
            tcp(f.retransmits.map(|r| r.to_string())),
            tcp(f.cwnd_bytes.map(bytes)),
            tcp(f.rtt_ns.map(|r| nanos(r as f64)))
        )
    }
}

/// The lines of one interval: each stream's (with several) and the flow's.
pub(super) fn interval(
    style: &Style,
    spec: &BandwidthSpec,
    iv: &BandwidthInterval,
    out: &mut dyn Write,
) -> io::Result<()> {
    let udp = spec.protocol == Protocol::Udp;
    let bidir = spec.direction == Direction::Bidir;
    let (start, end) = (iv.start_ns as f64 / 1e9, iv.end_ns as f64 / 1e9);
    for flow in &iv.flows {
        let label = flow_label(flow.flow, bidir);
        let view = view_of(udp, flow.flow, iv.measured_at);
        let one_sided = iv.measured_at.is_some();
        if spec.parallel > 1 {
            for s in &flow.streams {
                writeln!(
                    out,
                    "{}",
                    style.maybe_dim(
                        iv.omitted,
                        &row(
                            &format!("[{label}{:>2}]", s.id),
                            start,
                            end,
                            &s.figures,
                            udp,
                            view,
                            one_sided
                        )
                    )
                )?;
            }
        }
        let id =
            if spec.parallel > 1 { format!("[{label}SUM]") } else { format!("[{label}{:>2}]", 1) };
        let mut line = row(&id, start, end, &flow.total, udp, view, one_sided);
        if iv.omitted {
            line.push_str("  (omitted)");
        }
        writeln!(out, "{}", style.maybe_dim(iv.omitted, &line))?;
    }
    // `--latency`: the probes of this interval, under its load.
    if let Some(p) = &iv.probe_rtt {
        let mut line = match p.count {
            0 => format!("[RTT]    {start:.2}-{end:.2} s   no new connection answered"),
            n => format!(
                "[RTT]    {start:.2}-{end:.2} s   new-connection RTT p50 {} max {} ({n} probes)",
                nanos(p.p50_ns as f64),
                nanos(p.max_ns as f64)
            ),
        };
        if let Some(u) = &iv.probe_udp_rtt {
            line.push_str(&match u.count {
                0 => "   UDP echo: none answered".to_string(),
                n => format!(
                    "   UDP echo p50 {} max {} ({n})",
                    nanos(u.p50_ns as f64),
                    nanos(u.max_ns as f64)
                ),
            });
        }
        // Beside them, what the sender's kernel made of the path (TCP_INFO at the end of the
        // interval, first flow): the rate it measured delivered, and the rate it paced at.
        let first = iv.flows.first().map(|f| &f.total);
        if let Some(f) = first.filter(|f| f.delivery_bps.is_some() || f.pacing_bps.is_some()) {
            let shown = |r: Option<u64>| r.map_or("-".into(), |r| rate(r as f64));
            line.push_str(&format!(
                "   delivery {} pacing {}",
                shown(f.delivery_bps),
                shown(f.pacing_bps)
            ));
        }
        writeln!(out, "{}", style.maybe_dim(iv.omitted, &line))?;
    }
    Ok(())
}

/// A `Latency` line of the summary: `label`'s idle against loaded round trips.
fn latency_line(label: &str, l: &LoadedLatency, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{label:<11}idle p50 {} ({} probes)   under load p50 {} p99 {} ({} probes)   added {}{}",
        nanos(l.idle.p50_ns as f64),
        l.idle.count,
        nanos(l.loaded.p50_ns as f64),
        nanos(l.loaded.p99_ns as f64),
        l.loaded.count,
        nanos(l.added_ns as f64),
        if l.failed > 0 { format!("   {} probes failed", l.failed) } else { String::new() }
    )
}

/// The summary: each flow's totals and both ends' CPU use.
pub(super) fn summary(
    style: &Style,
    spec: &BandwidthSpec,
    s: &BandwidthSummary,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "{}", "- ".repeat(36).trim_end())?;
    for flow in s.flows() {
        flow_summary(style, spec, flow, out)?;
    }
    writeln!(
        out,
        "CPU        client {}{}",
        cpu(&s.client_cpu),
        s.server_cpu.map_or(String::new(), |c| format!("   server {}", cpu(&c)))
    )?;
    if let Some(l) = &s.latency {
        latency_line("Latency", l, out)?;
    }
    if let Some(l) = &s.udp_latency {
        latency_line("  UDP echo", l, out)?;
    }
    Ok(())
}

fn flow_summary(
    style: &Style,
    spec: &BandwidthSpec,
    f: &FlowSummary,
    out: &mut dyn Write,
) -> io::Result<()> {
    let udp = spec.protocol == Protocol::Udp;
    let (from, to) = match f.sender {
        End::Client => ("client", "server"),
        End::Server => ("server", "client"),
    };
    let what = match f.flow {
        Flow::Upload => "upload",
        Flow::Download => "download",
    };
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "{what} ({from} → {to}), measured over {:.2} s",
            f.duration_ns as f64 / 1e9
        ))
    )?;
    let t = &f.total;
    let mut sender = format!("  sender   {:>11} {:>14}", bytes(t.sent_bytes), rate(t.sent_bps));
    let mut receiver =
        format!("  receiver {:>11} {:>14}", bytes(t.received_bytes), rate(t.received_bps));
    if udp {
        sender.push_str(&format!(
            "   {} datagrams ({})",
            t.sent_packets.unwrap_or(0),
            packet_rate(t.sent_pps.unwrap_or(0.0))
        ));
        receiver.push_str(&format!(
            "   {} datagrams ({})  lost {}/{} ({})  jitter {}  out of order {}  duplicates {}",
            t.received_packets.unwrap_or(0),
            packet_rate(t.received_pps.unwrap_or(0.0)),
            t.lost_packets.unwrap_or(0),
            t.sent_packets.unwrap_or(0),
            percent(t.loss_ratio.unwrap_or(0.0)),
            nanos(t.jitter_ns.unwrap_or(0.0)),
            t.out_of_order_packets.unwrap_or(0),
            t.duplicate_packets.unwrap_or(0)
        ));
    } else {
        if let Some(r) = t.retransmits {
            sender.push_str(&format!("   {} {r}", resent(spec.protocol).1));
        }
        if let Some(c) = f.cwnd_max_bytes {
            sender.push_str(&format!("  cwnd max {}", bytes(c)));
        }
        if let Some(rtt) = f.rtt_range_ns {
            sender.push_str(&format!(
                "  RTT min/mean/max {}/{}/{}",
                nanos(rtt.min as f64),
                nanos(rtt.mean as f64),
                nanos(rtt.max as f64)
            ));
        }
    }
    writeln!(out, "{sender}")?;
    writeln!(out, "{receiver}")?;
    if spec.parallel > 1 {
        for s in &f.streams {
            writeln!(
                out,
                "  [{:>2}]     sent {:>11} {:>14}   received {:>11} {:>14}",
                s.id,
                bytes(s.figures.sent_bytes),
                rate(s.figures.sent_bps),
                bytes(s.figures.received_bytes),
                rate(s.figures.received_bps)
            )?;
        }
    }
    Ok(())
}

fn cpu(c: &CpuUsage) -> String {
    format!(
        "{} (user {}, system {})",
        percent(c.total_ratio),
        percent(c.user_ratio),
        percent(c.system_ratio)
    )
}

#[cfg(test)]
mod tests {
    use crate::fixtures::report;
    use crate::{render_report, Format};
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;

    fn render(p: Protocol, d: Direction) -> String {
        let mut out = Vec::new();
        render_report(&report(p, d), Format::Text, false, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn tcp_upload() {
        insta::assert_snapshot!(render(Protocol::Tcp, Direction::Upload));
    }

    #[test]
    fn udp_bidir() {
        insta::assert_snapshot!(render(Protocol::Udp, Direction::Bidir));
    }
}
