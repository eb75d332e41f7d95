//! The one table `wirespeed quick` prints: a row per test with its headline figures.

use std::io::{self, Write};

use wirespeed_model::spec::{Direction, Protocol};
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

/// Renders the quick table.
pub fn render(rows: &[QuickRow], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{:<22}{:>14}{:>14}  details", "test", "sent", "received")?;
    for row in rows {
        match &row.outcome {
            Err(why) if row.skipped => {
                writeln!(out, "{:<22}{:>14}{:>14}  skipped: {why}", row.name, "-", "-")?
            }
            Err(why) => writeln!(out, "{:<22}{:>14}{:>14}  FAILED: {why}", row.name, "-", "-")?,
            Ok(report) => {
                let b = match &report.body {
                    ReportBody::Bandwidth(b) => b,
                    ReportBody::Latency(l) => {
                        let s = &l.summary;
                        let details = format!(
                            "RTT p50 {}, p99 {}, max {}{}",
                            nanos(s.rtt.p50_ns as f64),
                            nanos(s.rtt.p99_ns as f64),
                            nanos(s.rtt.max_ns as f64),
                            s.lost.map_or(String::new(), |l| format!(", {l} lost"))
                        );
                        let per_s = format!("{:.0} msg/s", s.messages_per_second);
                        writeln!(out, "{:<22}{:>14}{:>14}  {details}", row.name, per_s, "")?;
                        continue;
                    }
                    ReportBody::Ping(p) => {
                        let s = &p.summary;
                        let details = format!(
                            "RTT p50 {}, max {}, {} loss",
                            nanos(s.rtt.p50_ns as f64),
                            nanos(s.rtt.max_ns as f64),
                            percent(s.loss_ratio)
                        );
                        let answered = format!("{}/{} answered", s.received, s.sent);
                        writeln!(out, "{:<22}{:>14}{:>14}  {details}", row.name, answered, "")?;
                        continue;
                    }
                    ReportBody::Http(h) => {
                        let s = &h.summary;
                        let details = format!(
                            "p50 {}, p99 {}, {} succeeded",
                            nanos(s.latency.p50_ns as f64),
                            nanos(s.latency.p99_ns as f64),
                            percent(s.success_ratio)
                        );
                        let per_s = format!("{:.0} req/s", s.requests_per_second);
                        writeln!(out, "{:<22}{:>14}{:>14}  {details}", row.name, per_s, "")?;
                        continue;
                    }
                    ReportBody::Trace(t) => {
                        let s = &t.summary;
                        let last = s.hops.last();
                        let details = format!(
                            "{} in {}, last hop avg {}",
                            if s.reached { "reached" } else { "not reached" },
                            crate::trace::hops_text(s.hops.len()),
                            last.map_or("-".into(), |h| nanos(h.rtt.mean_ns))
                        );
                        writeln!(out, "{:<22}{:>14}{:>14}  {details}", row.name, "", "")?;
                        continue;
                    }
                    ReportBody::Cps(c) => {
                        let s = &c.summary;
                        let details = format!(
                            "connect p50 {}, p99 {}; failed: {}",
                            nanos(s.connect.p50_ns as f64),
                            nanos(s.connect.p99_ns as f64),
                            s.failures.describe()
                        );
                        let per_s = format!("{:.0} conn/s", s.connections_per_second);
                        writeln!(out, "{:<22}{:>14}{:>14}  {details}", row.name, per_s, "")?;
                        continue;
                    }
                };
                for f in b.summary.flows() {
                    let name = if b.spec.direction == Direction::Bidir {
                        format!("{} ({:?})", row.name, f.flow).to_lowercase()
                    } else {
                        row.name.clone()
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
                    writeln!(
                        out,
                        "{:<22}{:>14}{:>14}  {details}",
                        name,
                        rate(t.sent_bps),
                        rate(t.received_bps)
                    )?;
                }
            }
        }
    }
    Ok(())
}
