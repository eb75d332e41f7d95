//! The one table `wirespeed quick` prints: a row per test with its headline figures.

use std::io::{self, Write};

use wirespeed_model::kinds::bandwidth::Direction;
use wirespeed_model::rules::Protocol;
use wirespeed_model::{Report, ReportBody};

use crate::units::{nanos, packet_rate, percent, rate};

/// One row of the quick table: a test's name and its outcome.
#[derive(Debug)]
pub struct QuickRow {
    /// What ran, e.g. "TCP upload".
    pub name: String,
    /// The report, or why the test failed.
    pub outcome: Result<Report, String>,
    /// Set when the test could not run here for a reason that is not a failure (a missing
    /// privilege); `outcome` then holds the reason.
    pub skipped: bool,
}

/// One line of the table: test name, two figures, details.
type Line = (String, String, String, String);

/// Renders the quick table.
pub fn render(rows: &[QuickRow], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{:<22}{:>14}{:>14}  details", "test", "sent", "received")?;
    for row in rows {
        let lines = match &row.outcome {
            Err(why) => {
                let label = if row.skipped { "skipped" } else { "FAILED" };
                vec![(row.name.clone(), "-".into(), "-".into(), format!("{label}: {why}"))]
            }
            Ok(report) => lines(&row.name, report),
        };
        for (name, first, second, details) in lines {
            writeln!(out, "{name:<22}{first:>14}{second:>14}  {details}")?;
        }
    }
    Ok(())
}

/// A run's headline figures: a line per flow for bandwidth, one line for the other kinds.
fn lines(name: &str, report: &Report) -> Vec<Line> {
    let one =
        |first: String, details: String| vec![(name.to_string(), first, String::new(), details)];
    match &report.body {
        ReportBody::Bandwidth(b) => b
            .summary
            .flows()
            .map(|f| {
                let name = if b.spec.direction == Direction::Bidir {
                    format!("{name} ({})", format!("{:?}", f.flow).to_lowercase())
                } else {
                    name.to_string()
                };
                let t = &f.total;
                let details = match b.spec.protocol {
                    Protocol::Tcp => format!(
                        "retransmits {}, RTT {}",
                        t.retransmits.unwrap_or(0),
                        f.rtt_range_ns.map_or("-".into(), |r| nanos(r.mean as f64))
                    ),
                    Protocol::Udp => format!(
                        "loss {}, jitter {}, {} received",
                        percent(t.loss_ratio.unwrap_or(0.0)),
                        nanos(t.jitter_ns.unwrap_or(0.0)),
                        packet_rate(t.received_pps.unwrap_or(0.0))
                    ),
                };
                (name, rate(t.sent_bps), rate(t.received_bps), details)
            })
            .collect(),
        ReportBody::Latency(l) => {
            let s = &l.summary;
            one(
                format!("{:.0} msg/s", s.messages_per_second),
                format!(
                    "RTT p50 {}, p99 {}, max {}{}",
                    nanos(s.rtt.p50_ns as f64),
                    nanos(s.rtt.p99_ns as f64),
                    nanos(s.rtt.max_ns as f64),
                    s.lost.map_or(String::new(), |l| format!(", {l} lost"))
                ),
            )
        }
        ReportBody::Cps(c) => {
            let s = &c.summary;
            one(
                format!("{:.0} conn/s", s.connections_per_second),
                format!(
                    "connect p50 {}, p99 {}; failed: {}",
                    nanos(s.connect.p50_ns as f64),
                    nanos(s.connect.p99_ns as f64),
                    s.failures.describe()
                ),
            )
        }
        ReportBody::Ping(p) => {
            let s = &p.summary;
            one(
                format!("{}/{} answered", s.received, s.sent),
                format!(
                    "RTT p50 {}, max {}, {} loss",
                    nanos(s.rtt.p50_ns as f64),
                    nanos(s.rtt.max_ns as f64),
                    percent(s.loss_ratio)
                ),
            )
        }
        ReportBody::Trace(t) => {
            let s = &t.summary;
            one(
                String::new(),
                format!(
                    "{} in {}, last hop avg {}",
                    if s.reached { "reached" } else { "not reached" },
                    crate::trace::hops_text(s.hops.len()),
                    s.hops.last().map_or("-".into(), |h| nanos(h.rtt.mean_ns))
                ),
            )
        }
        ReportBody::Dns(d) => {
            let s = &d.summary;
            one(
                format!("{:.0} qps", s.queries_per_second),
                format!(
                    "p50 {}, p99 {}, {} of {} answered, {} lost",
                    nanos(s.latency.p50_ns as f64),
                    nanos(s.latency.p99_ns as f64),
                    s.completed,
                    s.sent,
                    s.lost
                ),
            )
        }
        ReportBody::Http(h) => {
            let s = &h.summary;
            let secs = s.duration_ns as f64 / 1e9;
            // Large bodies (a speed test's downloads and uploads): throughput is the headline,
            // in the column of the way the bodies went; requests' and responses' heads the
            // other way are not the transfer, and would read as its figure.
            let per_request = s.bytes_in.max(s.bytes_out) as f64 / s.responses.max(1) as f64;
            if per_request >= 64.0 * 1024.0 && secs > 0.0 {
                let (sent, received) = if s.bytes_in >= s.bytes_out {
                    ("-".to_string(), rate(s.bytes_in as f64 * 8.0 / secs))
                } else {
                    (rate(s.bytes_out as f64 * 8.0 / secs), "-".to_string())
                };
                return vec![(
                    name.to_string(),
                    sent,
                    received,
                    format!(
                        "{:.0} req/s, p50 {}, {} succeeded",
                        s.requests_per_second,
                        nanos(s.latency.p50_ns as f64),
                        percent(s.success_ratio)
                    ),
                )];
            }
            one(
                format!("{:.0} req/s", s.requests_per_second),
                format!(
                    "p50 {}, p99 {}, {} succeeded",
                    nanos(s.latency.p50_ns as f64),
                    nanos(s.latency.p99_ns as f64),
                    percent(s.success_ratio)
                ),
            )
        }
    }
}
