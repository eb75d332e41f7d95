//! CSV: a header, one row per interval per flow (streams summed), then one summary row per
//! flow. Empty cells where a figure does not apply (TCP has no loss, UDP no retransmits).

use std::io::{self, Write};

use wirespeed_model::kinds::bandwidth::Figures;
use wirespeed_model::kinds::bandwidth::Flow;
use wirespeed_model::{Event, ReportBody, TestSpec};

use crate::Renderer;
use crate::{cps, dns, http, latency, ping, trace};

const COLUMNS: &str = "row,index,start_s,end_s,omitted,flow,sent_bytes,received_bytes,sent_bps,received_bps,\
sent_packets,received_packets,sent_pps,received_pps,lost_packets,loss_ratio,out_of_order_packets,duplicate_packets,jitter_ns,\
retransmits,cwnd_bytes,rtt_ns";

/// The CSV renderer.
#[derive(Debug, Default)]
pub struct Csv {
    header_done: bool,
}

/// One CSV record, without its line end: the cells quoted where RFC 4180 asks (a comma, a
/// quote or a line break in them) by the `csv` crate, so every producer quotes alike.
pub fn record<I, S>(cells: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<[u8]>,
{
    let mut writer = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to memory cannot fail; a record that could not be written stays empty.
    let _ = writer.write_record(cells);
    let mut bytes = writer.into_inner().unwrap_or_default();
    bytes.pop();
    String::from_utf8(bytes).unwrap_or_default()
}

/// The first cells of an interval's row: `interval`, its index, start and end (seconds), and
/// whether it was omitted (warm-up).
pub(crate) fn interval_cells(index: u32, start_ns: u64, end_ns: u64, omitted: bool) -> [String; 5] {
    ["interval".to_string(), index.to_string(), secs(start_ns), secs(end_ns), omitted.to_string()]
}

/// Seconds with three decimals, from nanoseconds.
pub(crate) fn secs(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

/// A cell that may be empty.
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn flow_name(f: Flow) -> &'static str {
    match f {
        Flow::Upload => "upload",
        Flow::Download => "download",
    }
}

fn cells(f: &Figures) -> [String; 16] {
    [
        f.sent_bytes.to_string(),
        f.received_bytes.to_string(),
        format!("{:.0}", f.sent_bps),
        format!("{:.0}", f.received_bps),
        opt(f.sent_packets),
        opt(f.received_packets),
        opt(f.sent_pps.map(|p| format!("{p:.1}"))),
        opt(f.received_pps.map(|p| format!("{p:.1}"))),
        opt(f.lost_packets),
        opt(f.loss_ratio),
        opt(f.out_of_order_packets),
        opt(f.duplicate_packets),
        opt(f.jitter_ns.map(|j| format!("{j:.0}"))),
        opt(f.retransmits),
        opt(f.cwnd_bytes),
        opt(f.rtt_ns),
    ]
}

impl Csv {
    /// Writes the header of `spec`'s kind, once.
    fn header(&mut self, spec: &TestSpec, out: &mut dyn Write) -> io::Result<()> {
        if !self.header_done {
            let columns = match spec {
                TestSpec::Bandwidth(_) => COLUMNS.to_string(),
                TestSpec::Latency(_) => latency::CSV_COLUMNS.to_string(),
                TestSpec::Cps(_) => cps::csv_columns(),
                TestSpec::Ping(_) => ping::csv_columns(),
                TestSpec::Trace(_) => trace::csv_columns(),
                TestSpec::Http(_) => http::csv_columns(),
                TestSpec::Dns(_) => dns::csv_columns(),
            };
            writeln!(out, "{columns}")?;
            self.header_done = true;
        }
        Ok(())
    }
}

impl Renderer for Csv {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        match event {
            Event::Start { spec, .. } => self.header(spec, out)?,
            Event::LatencyInterval(iv) => writeln!(out, "{}", latency::csv_interval(iv))?,
            Event::CpsInterval(iv) => writeln!(out, "{}", cps::csv_interval(iv))?,
            Event::PingProbe(p) => writeln!(out, "{}", ping::csv_probe(p))?,
            Event::HttpInterval(iv) => writeln!(out, "{}", http::csv_interval(iv))?,
            Event::DnsInterval(iv) => writeln!(out, "{}", dns::csv_interval(iv))?,
            // A trace's rows are its final hops, written at the end.
            Event::TraceRound(_) => {}
            Event::Interval(iv) => {
                for f in &iv.flows {
                    let head = interval_cells(iv.index, iv.start_ns, iv.end_ns, iv.omitted);
                    let flow = flow_name(f.flow).to_string();
                    let row = head.into_iter().chain([flow]).chain(cells(&f.total));
                    writeln!(out, "{}", record(row))?;
                }
            }
            Event::Notice(_) => {}
            Event::End(report) => match &report.body {
                ReportBody::Bandwidth(b) => {
                    let start = b.spec.omit_ns as f64 / 1e9;
                    for f in b.summary.flows() {
                        let head = [
                            "summary".to_string(),
                            String::new(),
                            format!("{start:.3}"),
                            format!("{:.3}", start + f.duration_ns as f64 / 1e9),
                            "false".to_string(),
                            flow_name(f.flow).to_string(),
                        ];
                        writeln!(out, "{}", record(head.into_iter().chain(cells(&f.total))))?;
                    }
                }
                ReportBody::Latency(l) => writeln!(out, "{}", latency::csv_summary(l))?,
                ReportBody::Cps(c) => writeln!(out, "{}", cps::csv_summary(c))?,
                ReportBody::Ping(p) => writeln!(out, "{}", ping::csv_summary(p))?,
                ReportBody::Http(h) => writeln!(out, "{}", http::csv_summary(h))?,
                ReportBody::Dns(d) => writeln!(out, "{}", dns::csv_summary(d))?,
                ReportBody::Trace(t) => {
                    for row in trace::csv_rows(t) {
                        writeln!(out, "{row}")?;
                    }
                }
            },
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::report;
    use crate::{render_report, Format};
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;

    #[test]
    fn tcp_bidir_rows() {
        let mut out = Vec::new();
        render_report(&report(Protocol::Tcp, Direction::Bidir), Format::Csv, false, &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let width = text.lines().next().unwrap().split(',').count();
        assert!(text.lines().all(|l| l.split(',').count() == width), "ragged rows");
        insta::assert_snapshot!(text);
    }
}
