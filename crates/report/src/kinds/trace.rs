//! How trace runs read in every format: one table row per hop, mtr's columns (loss, sent, last,
//! avg, best, worst, stddev) with every address that answered, and the destination's row
//! marked. The live panel and the quick table take their figures from the same view.

use std::io::{self, Write};

use wirespeed_model::kinds::trace::{HopStats, TraceProtocol, TraceReport, TraceRound, TraceSpec};

use crate::csv::{opt, record};
use crate::percentiles::{stats_cells, STATS_COLUMNS};
use crate::units::{nanos, percent};
use wirespeed_model::Meta;

use super::{one_line, KindView, LiveSample, QuickLine};
use crate::text::Style;

/// "trace to 192.0.2.7 with ICMP probes, at most 30 hops, 3 probes per hop" and the like.
pub(crate) fn describe(spec: &TraceSpec) -> String {
    let probes = match spec.protocol {
        TraceProtocol::Icmp => "ICMP echo probes".to_string(),
        TraceProtocol::Udp => format!("UDP probes to ports {}+", spec.port),
        TraceProtocol::Tcp => format!("TCP SYN probes to port {}", spec.port),
    };
    let rounds = match (spec.mtr, spec.rounds) {
        (true, Some(n)) => format!("mtr mode, {n} rounds"),
        (true, None) => "mtr mode, until interrupted".to_string(),
        (false, n) => format!("{} probes per hop", n.unwrap_or(1)),
    };
    format!("trace to {} with {probes}, at most {} hops, {rounds}", spec.target, spec.max_hops)
}

/// The table: a header and a line per hop.
pub(crate) fn table(hops: &[HopStats]) -> Vec<String> {
    let mut lines = vec![format!(
        "{:>3}  {:<40}{:>7}{:>5}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "Hop", "Address", "Loss", "Snt", "Last", "Avg", "Best", "Worst", "StDev"
    )];
    for h in hops {
        let who = if h.addresses.is_empty() { "???".to_string() } else { h.addresses.join(" ") };
        let who = match (&h.note, h.reached) {
            (Some(n), _) => format!("{who} {n}"),
            (None, true) => format!("{who} (destination)"),
            (None, false) => who,
        };
        let t = |v: f64| if h.received == 0 { "-".to_string() } else { nanos(v) };
        lines.push(format!(
            "{:>3}  {:<40}{:>7}{:>5}{:>10}{:>10}{:>10}{:>10}{:>10}",
            h.ttl,
            who,
            percent(h.loss_ratio),
            h.sent,
            h.last_ns.map_or("-".into(), |l| nanos(l as f64)),
            t(h.rtt.mean_ns),
            t(h.rtt.min_ns as f64),
            t(h.rtt.max_ns as f64),
            t(h.rtt.stddev_ns),
        ));
    }
    lines
}

/// The line after the table.
pub(crate) fn verdict(r: &TraceReport) -> String {
    let s = &r.summary;
    let hops = hops_text(s.hops.len());
    if s.reached {
        format!(
            "{} reached in {hops}, {} rounds in {:.2} s",
            s.address,
            s.rounds,
            s.duration_ns as f64 / 1e9
        )
    } else {
        format!(
            "{} not reached within {} hops, {} rounds in {:.2} s",
            s.address,
            r.spec.max_hops,
            s.rounds,
            s.duration_ns as f64 / 1e9
        )
    }
}

/// "1 hop", "3 hops".
pub(crate) fn hops_text(n: usize) -> String {
    if n == 1 {
        "1 hop".to_string()
    } else {
        format!("{n} hops")
    }
}

/// CSV columns for trace runs: one row per hop.
pub(crate) fn csv_columns() -> String {
    format!("row,ttl,addresses,reached,note,sent,received,loss_ratio,last_ns,{STATS_COLUMNS}")
}

/// The CSV rows of a finished trace.
pub(crate) fn csv_rows(r: &TraceReport) -> Vec<String> {
    r.summary
        .hops
        .iter()
        .map(|h| {
            let head = [
                "hop".to_string(),
                h.ttl.to_string(),
                h.addresses.join(" "),
                h.reached.to_string(),
                h.note.clone().unwrap_or_default(),
                h.sent.to_string(),
                h.received.to_string(),
                h.loss_ratio.to_string(),
                opt(h.last_ns),
            ];
            record(head.into_iter().chain(stats_cells(&h.rtt)))
        })
        .collect()
}

/// How a trace is shown; mtr's table is redrawn in place while it runs.
pub(crate) struct TraceView {
    spec: TraceSpec,
    /// True for an mtr run shown on a terminal.
    live_table: bool,
    /// Lines of mtr's live table on the terminal, to be drawn over by the next round.
    live_lines: usize,
}

impl TraceView {
    pub(crate) fn new(spec: &TraceSpec) -> Self {
        Self { spec: spec.clone(), live_table: false, live_lines: 0 }
    }

    /// Moves the cursor back over the live table and clears it.
    fn erase_live(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.live_lines > 0 {
            write!(out, "\x1b[{}A\x1b[J", self.live_lines)?;
            self.live_lines = 0;
        }
        Ok(())
    }
}

impl KindView for TraceView {
    type Report = TraceReport;

    fn describe(&self) -> String {
        describe(&self.spec)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, _: &mut dyn Write) -> io::Result<()> {
        // mtr's table is redrawn in place, so only where a person watches (colour is asked
        // for exactly when stdout is a terminal).
        self.live_table = self.spec.mtr && style.color;
        Ok(())
    }

    fn text_step(&mut self, round: &TraceRound, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        if self.live_table {
            self.erase_live(out)?;
            let lines = table(&round.hops);
            for l in &lines {
                writeln!(out, "{l}")?;
            }
            writeln!(out, "round {}", round.rounds)?;
            self.live_lines = lines.len() + 1;
        }
        Ok(())
    }

    fn text_end(&mut self, t: &TraceReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        self.erase_live(out)?;
        for l in table(&t.summary.hops) {
            writeln!(out, "{l}")?;
        }
        writeln!(out, "{}", verdict(t))
    }

    fn csv_columns(&self) -> String {
        csv_columns()
    }

    /// A trace's rows are its final hops, written at the end.
    fn csv_rows(&self, _: &TraceRound) -> Vec<String> {
        Vec::new()
    }

    fn csv_summary(&self, t: &TraceReport) -> Vec<String> {
        csv_rows(t)
    }

    fn live(&self, _: &TraceRound) -> Option<LiveSample> {
        None
    }

    fn quick(&self, name: &str, t: &TraceReport) -> Vec<QuickLine> {
        let s = &t.summary;
        one_line(
            name,
            String::new(),
            format!(
                "{} in {}, last hop avg {}",
                if s.reached { "reached" } else { "not reached" },
                hops_text(s.hops.len()),
                s.hops.last().map_or("-".into(), |h| nanos(h.rtt.mean_ns))
            ),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use wirespeed_model::histogram::RttHistogram;
    use wirespeed_model::kinds::trace::*;
    use wirespeed_model::{Event, Meta, Report, ReportBody};

    use crate::Format;

    fn hop(ttl: u8, addresses: &[&str], received: u64, rtt_us: u64) -> HopStats {
        let mut h = RttHistogram::default();
        for _ in 0..received {
            h.record(rtt_us * 1000);
        }
        HopStats {
            ttl,
            addresses: addresses.iter().map(|a| a.to_string()).collect(),
            sent: 3,
            received,
            loss_ratio: (3 - received) as f64 / 3.0,
            last_ns: (received > 0).then_some(rtt_us * 1000),
            rtt: h.stats(),
            reached: false,
            note: None,
        }
    }

    pub(crate) fn report() -> Report {
        let spec = TraceSpec::new("192.0.2.9", TraceProtocol::Udp);
        let mut last = hop(3, &["192.0.2.9"], 3, 900);
        last.reached = true;
        let hops = vec![hop(1, &["10.0.0.1"], 3, 150), hop(2, &[], 0, 0), last];
        let summary = TraceSummary {
            address: "192.0.2.9".into(),
            reached: true,
            rounds: 3,
            duration_ns: 1_200_000_000,
            hops,
        };
        Report {
            body: ReportBody::Trace(TraceReport { spec, summary }),
            meta: Meta {
                version: "0.1.0".into(),
                remote_addr: Some("192.0.2.9".into()),
                ..Default::default()
            },
        }
    }

    #[test]
    fn text() {
        insta::assert_snapshot!(crate::fixtures::render(&report(), Format::Text));
    }

    #[test]
    fn mtr_on_a_terminal_redraws_the_table_in_place_and_leaves_one_behind() {
        let mut r = report();
        let ReportBody::Trace(t) = &mut r.body else { unreachable!() };
        t.spec.mtr = true;
        let round = TraceRound { rounds: 1, hops: t.summary.hops.clone() };
        let mut events = Event::replay(&r);
        let end = events.pop().unwrap();
        events.extend([Event::TraceRound(round.clone()), Event::TraceRound(round), end]);
        let mut live = Vec::new();
        let mut text = crate::renderer(Format::Text, true);
        for e in &events {
            text.on_event(e, &mut live).unwrap();
        }
        let live = String::from_utf8(live).unwrap();
        // Two rounds drawn (a header, 3 hops and a round line each), each erased by the next
        // drawing (cursor up 5 lines, clear), and the final table once.
        assert_eq!(live.matches("\x1b[5A\x1b[J").count(), 2, "{live:?}");
        assert_eq!(live.matches("round 1").count(), 2);
        assert_eq!(live.matches("reached in 3 hops").count(), 1);
        // Not on a terminal: no escape codes, just the final table.
        let plain = crate::fixtures::render(&r, Format::Text);
        assert!(!plain.contains('\x1b') && plain.contains("reached in 3 hops"));
    }

    #[test]
    fn csv_has_a_row_per_hop() {
        let csv = crate::fixtures::render(&report(), Format::Csv);
        assert_eq!(csv.lines().filter(|l| l.starts_with("hop,")).count(), 3);
        crate::fixtures::assert_even_rows(&csv);
    }

    /// A note with a comma and a quote survives the round trip whole, quoted by the writer
    /// (it used to have its commas turned into semicolons).
    #[test]
    fn csv_quotes_a_note_and_reads_back_whole() {
        let mut r = report();
        let ReportBody::Trace(t) = &mut r.body else { unreachable!() };
        t.summary.hops[1].note = Some("admin, \"prohibited\"".into());
        let csv = crate::fixtures::render(&r, Format::Csv);
        assert!(csv.contains(",\"admin, \"\"prohibited\"\"\","), "{csv}");
        let records = crate::fixtures::assert_even_rows(&csv);
        assert_eq!(&records[1][4], "admin, \"prohibited\"");
    }
}
