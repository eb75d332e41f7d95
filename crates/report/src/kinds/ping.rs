//! How ping runs read in every format: a line per probe as `ping` prints them, then `ping`'s
//! summary (sent, received, loss, min/avg/max/mdev) and the percentiles. The live panel and the
//! quick table take their figures from the same view.

use std::io::{self, Write};

use wirespeed_model::kinds::ping::{PingMode, PingProbe, PingReport, PingSpec, ProbeOutcome};

use crate::csv::{record, secs};
use crate::percentiles::{stats_cells, stats_table, STATS_COLUMNS};
use crate::units::{nanos, percent};
use wirespeed_model::Meta;

use super::{one_line, KindView, LiveSample, QuickLine};
use crate::text::Style;

/// "ICMP echo to 127.0.0.1, 56 data bytes, every 1 s, 5 probes" and the like.
pub(crate) fn describe(spec: &PingSpec) -> String {
    let what = match &spec.mode {
        PingMode::Icmp => format!("ICMP echo to {}, {} data bytes", spec.target, spec.size),
        PingMode::Tcp { port } => format!("TCP connect to {} port {port}", spec.target),
        PingMode::Udp { .. } => {
            format!("UDP echo from the wirespeed server at {}, {} bytes", spec.target, spec.size)
        }
        PingMode::Http { url } => format!("HTTP GET {url}, time to first byte"),
    };
    let count = spec.count.map_or(String::new(), |n| format!(", {n} probes"));
    format!("{what}, every {}{count}", nanos(spec.interval_ns as f64))
}

/// One probe's line; `peer` is the address probed.
pub(crate) fn line(spec: &PingSpec, peer: &str, p: &PingProbe) -> String {
    match &p.outcome {
        ProbeOutcome::Reply { rtt_ns, bytes, ttl, status } => {
            let time = nanos(*rtt_ns as f64);
            let ttl = ttl.map_or(String::new(), |t| format!(" ttl={t}"));
            match &spec.mode {
                PingMode::Icmp | PingMode::Udp { .. } => format!(
                    "{} bytes from {peer}: seq={}{ttl} time={time}",
                    bytes.unwrap_or(0),
                    p.seq
                ),
                PingMode::Tcp { .. } => format!("connected to {peer}: seq={} time={time}", p.seq),
                PingMode::Http { .. } => format!(
                    "{peer}: seq={} status={} first byte after {time}",
                    p.seq,
                    status.unwrap_or(0)
                ),
            }
        }
        ProbeOutcome::Lost => {
            format!("seq={}: no answer within {}", p.seq, nanos(spec.timeout_ns as f64))
        }
        ProbeOutcome::Error { reason } => format!("seq={}: {reason}", p.seq),
    }
}

/// The summary block, as `ping` ends.
pub(crate) fn summary(r: &PingReport, out: &mut dyn Write) -> io::Result<()> {
    let s = &r.summary;
    writeln!(out, "--- {} ping statistics ---", r.spec.target)?;
    let errors = match s.errors {
        0 => String::new(),
        1 => ", 1 error".to_string(),
        n => format!(", {n} errors"),
    };
    writeln!(
        out,
        "{} probes sent, {} received{errors}, {} loss, time {:.2} s",
        s.sent,
        s.received,
        percent(s.loss_ratio),
        s.duration_ns as f64 / 1e9
    )?;
    if s.received == 0 {
        return Ok(());
    }
    let ms = |ns: f64| format!("{:.3}", ns / 1e6);
    writeln!(
        out,
        "rtt min/avg/max/mdev = {}/{}/{}/{} ms",
        ms(s.rtt.min_ns as f64),
        ms(s.rtt.mean_ns),
        ms(s.rtt.max_ns as f64),
        ms(s.rtt.stddev_ns)
    )?;
    stats_table(&s.rtt, out)
}

/// CSV columns for ping runs: probe rows fill the first group, the summary row the second.
pub(crate) fn csv_columns() -> String {
    format!(
        "row,seq,sent_s,outcome,rtt_ns,bytes,ttl,status,reason,sent,received,errors,loss_ratio,{STATS_COLUMNS}"
    )
}

/// One CSV row per probe.
pub(crate) fn csv_probe(p: &PingProbe) -> String {
    let opt = |v: Option<String>| v.unwrap_or_default();
    let (outcome, rtt, bytes, ttl, status, reason) = match &p.outcome {
        ProbeOutcome::Reply { rtt_ns, bytes, ttl, status } => (
            "reply",
            rtt_ns.to_string(),
            opt(bytes.map(|b| b.to_string())),
            opt(ttl.map(|t| t.to_string())),
            opt(status.map(|s| s.to_string())),
            String::new(),
        ),
        ProbeOutcome::Lost => {
            ("lost", String::new(), String::new(), String::new(), String::new(), String::new())
        }
        ProbeOutcome::Error { reason } => {
            ("error", String::new(), String::new(), String::new(), String::new(), reason.clone())
        }
    };
    let cells = [
        "probe".to_string(),
        p.seq.to_string(),
        secs(p.sent_ns),
        outcome.to_string(),
        rtt,
        bytes,
        ttl,
        status,
        reason,
    ];
    // The summary's columns and the statistics stay empty on a probe's row.
    let empty = 4 + STATS_COLUMNS.split(',').count();
    record(cells.into_iter().chain(std::iter::repeat_n(String::new(), empty)))
}

/// The CSV summary row.
pub(crate) fn csv_summary(r: &PingReport) -> String {
    let s = &r.summary;
    let none = String::new;
    let head = [
        "summary".to_string(),
        none(),
        secs(s.duration_ns),
        none(),
        none(),
        none(),
        none(),
        none(),
        none(),
        s.sent.to_string(),
        s.received.to_string(),
        s.errors.to_string(),
        s.loss_ratio.to_string(),
    ];
    record(head.into_iter().chain(stats_cells(&s.rtt)))
}

/// How a ping is shown; the address probed comes with the run's start.
pub(crate) struct PingView {
    spec: PingSpec,
    peer: String,
}

impl PingView {
    pub(crate) fn new(spec: &PingSpec) -> Self {
        Self { spec: spec.clone(), peer: spec.target.clone() }
    }
}

impl KindView for PingView {
    type Report = PingReport;

    fn describe(&self) -> String {
        describe(&self.spec)
    }

    fn text_start(&mut self, meta: &Meta, _: &Style, _: &mut dyn Write) -> io::Result<()> {
        self.peer = meta.remote_addr.clone().unwrap_or_else(|| self.spec.target.clone());
        Ok(())
    }

    fn text_step(&mut self, p: &PingProbe, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", line(&self.spec, &self.peer, p))
    }

    fn text_end(&mut self, p: &PingReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        summary(p, out)
    }

    fn csv_columns(&self) -> String {
        csv_columns()
    }

    fn csv_rows(&self, p: &PingProbe) -> Vec<String> {
        vec![csv_probe(p)]
    }

    fn csv_summary(&self, p: &PingReport) -> Vec<String> {
        vec![csv_summary(p)]
    }

    fn live(&self, p: &PingProbe) -> Option<LiveSample> {
        let (value, current) = match &p.outcome {
            ProbeOutcome::Reply { rtt_ns, .. } => (*rtt_ns as f64, nanos(*rtt_ns as f64)),
            ProbeOutcome::Lost => (0.0, "lost".into()),
            ProbeOutcome::Error { reason } => (0.0, reason.clone()),
        };
        let current = format!("seq {} {current}", p.seq);
        Some(LiveSample { end_ns: p.sent_ns, value, current, details: Vec::new() })
    }

    fn quick(&self, name: &str, p: &PingReport) -> Vec<QuickLine> {
        let s = &p.summary;
        one_line(
            name,
            format!("{}/{} answered", s.received, s.sent),
            format!(
                "RTT p50 {}, max {}, {} loss",
                nanos(s.rtt.p50_ns as f64),
                nanos(s.rtt.max_ns as f64),
                percent(s.loss_ratio)
            ),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use wirespeed_model::histogram::RttHistogram;
    use wirespeed_model::kinds::ping::*;
    use wirespeed_model::{Meta, Report, ReportBody};

    use crate::Format;

    pub(crate) fn report() -> Report {
        let mut spec = PingSpec::new("192.0.2.7", PingMode::Icmp);
        spec.count = Some(3);
        let reply =
            |rtt_ns| ProbeOutcome::Reply { rtt_ns, bytes: Some(64), ttl: Some(57), status: None };
        let probes = vec![
            PingProbe { seq: 1, sent_ns: 0, outcome: reply(12_400_000) },
            PingProbe { seq: 2, sent_ns: 1_000_000_000, outcome: ProbeOutcome::Lost },
            PingProbe {
                seq: 3,
                sent_ns: 2_000_000_000,
                outcome: ProbeOutcome::Error {
                    reason: "host unreachable (from 198.51.100.1), again".into(),
                },
            },
        ];
        let mut h = RttHistogram::default();
        h.record(12_400_000);
        let summary = PingSummary {
            address: "192.0.2.7".into(),
            duration_ns: 3_000_000_000,
            sent: 3,
            received: 1,
            errors: 1,
            loss_ratio: 2.0 / 3.0,
            rtt: h.stats(),
            histogram: h.buckets(),
        };
        Report {
            body: ReportBody::Ping(PingReport { spec, probes, summary }),
            meta: Meta {
                version: "0.1.0".into(),
                remote_addr: Some("192.0.2.7".into()),
                ..Default::default()
            },
        }
    }

    fn render(format: Format) -> String {
        crate::fixtures::render(&report(), format)
    }

    #[test]
    fn text() {
        insta::assert_snapshot!(render(Format::Text));
    }

    #[test]
    fn csv_quotes_reasons_and_rows_are_even() {
        let csv = render(Format::Csv);
        assert!(csv.contains("\"host unreachable (from 198.51.100.1), again\""), "{csv}");
        insta::assert_snapshot!(csv);
    }
}
