//! How latency runs read in every format: a header, one line per interval, and the summary's
//! percentiles. The live panel and the quick table take their figures from the same view.

use std::io::{self, Write};

use wirespeed_model::histogram::LatencyStats;
use wirespeed_model::kinds::latency::{LatencyInterval, LatencyReport, LatencySpec};

use crate::csv::{interval_cells, opt, record};
use crate::percentiles::{stats_cells, stats_table};
use crate::units::nanos;
use wirespeed_model::Meta;

use super::{one_line, KindView, LiveSample, QuickLine};
use crate::live::rated;
use crate::text::Style;

/// "TCP, 1 connection, 16-byte messages, 10 s" and the like.
pub(crate) fn describe(spec: &LatencySpec) -> String {
    let proto = spec.protocol.label();
    let streams = if spec.parallel == 1 {
        "1 connection".to_string()
    } else {
        format!("{} connections", spec.parallel)
    };
    let limit = match spec.count {
        Some(n) => format!("{n} round trips"),
        None => format!("{} s", spec.duration_ns as f64 / 1e9),
    };
    let model = match spec.rate {
        Some(r) => format!(", {r} messages/s per connection (from the scheduled send time)"),
        None => String::new(),
    };
    let poll = if spec.busy_poll { ", busy-polling" } else { "" };
    let to = if spec.external { " to an echo service" } else { "" };
    format!("{proto} latency{to}, {streams}, {}-byte messages, {limit}{model}{poll}", spec.length)
}

/// The interval table's header.
pub(crate) fn header() -> String {
    format!(
        "{:<15}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}",
        "Interval", "msgs/s", "min", "p50", "p90", "p99", "max", "lost"
    )
}

/// One interval line.
pub(crate) fn row(iv: &LatencyInterval) -> String {
    let r = &iv.rtt;
    let line = format!(
        "{:<15}{:>10.0}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}",
        format!("{:.2}-{:.2} s", iv.start_ns as f64 / 1e9, iv.end_ns as f64 / 1e9),
        iv.messages_per_second,
        nanos(r.min_ns as f64),
        nanos(r.p50_ns as f64),
        nanos(r.p90_ns as f64),
        nanos(r.p99_ns as f64),
        nanos(r.max_ns as f64),
        iv.lost.map_or("-".into(), |l| l.to_string())
    );
    if iv.omitted {
        format!("{line}  (warm-up)")
    } else {
        line
    }
}

/// The summary block.
pub(crate) fn summary(r: &LatencyReport, out: &mut dyn Write) -> io::Result<()> {
    let s = &r.summary;
    let st: &LatencyStats = &s.rtt;
    writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -")?;
    let lost = s.lost.map_or(String::new(), |l| format!(", {l} lost"));
    writeln!(
        out,
        "{} round trips in {:.2} s ({:.0}/s), {} sent{lost}",
        s.received,
        s.duration_ns as f64 / 1e9,
        s.messages_per_second,
        s.sent
    )?;
    stats_table(st, out)
}

/// CSV columns for latency runs.
pub(crate) const CSV_COLUMNS: &str =
    "row,index,start_s,end_s,omitted,messages_per_second,sent,received,lost,\
count,min_ns,mean_ns,p50_ns,p90_ns,p95_ns,p99_ns,p999_ns,p9999_ns,max_ns,stddev_ns";

/// One CSV row per interval.
pub(crate) fn csv_interval(iv: &LatencyInterval) -> String {
    let head = interval_cells(iv.index, iv.start_ns, iv.end_ns, iv.omitted);
    let rate = [format!("{:.1}", iv.messages_per_second), String::new(), String::new()];
    record(head.into_iter().chain(rate).chain([opt(iv.lost)]).chain(stats_cells(&iv.rtt)))
}

/// The CSV summary row.
pub(crate) fn csv_summary(r: &LatencyReport) -> String {
    let s = &r.summary;
    let start = r.spec.warmup_ns as f64 / 1e9;
    let head = [
        "summary".to_string(),
        String::new(),
        format!("{start:.3}"),
        format!("{:.3}", start + s.duration_ns as f64 / 1e9),
        "false".to_string(),
        format!("{:.1}", s.messages_per_second),
        s.sent.to_string(),
        s.received.to_string(),
        opt(s.lost),
    ];
    record(head.into_iter().chain(stats_cells(&s.rtt)))
}

/// How a latency run is shown.
pub(crate) struct LatencyView(pub(crate) LatencySpec);

impl KindView for LatencyView {
    type Report = LatencyReport;

    fn describe(&self) -> String {
        describe(&self.0)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&header()))
    }

    fn text_step(
        &mut self,
        iv: &LatencyInterval,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        {
            writeln!(out, "{}", style.maybe_dim(iv.omitted, &row(iv)))
        }
    }

    fn text_end(&mut self, l: &LatencyReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        summary(l, out)
    }

    fn csv_columns(&self) -> String {
        CSV_COLUMNS.to_string()
    }

    fn csv_rows(&self, iv: &LatencyInterval) -> Vec<String> {
        vec![csv_interval(iv)]
    }

    fn csv_summary(&self, l: &LatencyReport) -> Vec<String> {
        vec![csv_summary(l)]
    }

    fn live(&self, iv: &LatencyInterval) -> Option<LiveSample> {
        let lost = format!("lost {}", iv.lost.unwrap_or(0));
        Some(rated(iv.end_ns, iv.messages_per_second, "msg/s", "p50", &iv.rtt, lost))
    }

    fn quick(&self, name: &str, l: &LatencyReport) -> Vec<QuickLine> {
        let s = &l.summary;
        one_line(
            name,
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
}

#[cfg(test)]
pub(crate) mod tests {
    use wirespeed_model::histogram::RttHistogram;
    use wirespeed_model::kinds::latency::{
        LatencyInterval, LatencyReport, LatencySpec, LatencySummary,
    };
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::{Report, ReportBody};

    use crate::Format;

    /// A UDP run of two intervals after a warm-up one, with loss, round trips 20–90 µs.
    pub(crate) fn report() -> Report {
        let mut spec = LatencySpec::new("192.0.2.7", Protocol::Udp);
        spec.duration_ns = 2_000_000_000;
        spec.warmup_ns = 1_000_000_000;
        let mut total = RttHistogram::default();
        let mut intervals = Vec::new();
        for index in 0..3u32 {
            let mut h = RttHistogram::default();
            for i in 0..1000u64 {
                h.record(20_000 + (i % 71) * 1_000 + u64::from(index) * 500);
            }
            if index > 0 {
                total.add(&h);
            }
            intervals.push(LatencyInterval {
                index,
                start_ns: u64::from(index) * 1_000_000_000,
                end_ns: u64::from(index + 1) * 1_000_000_000,
                omitted: index == 0,
                messages_per_second: 1000.0,
                lost: Some(u64::from(index)),
                rtt: h.stats(),
            });
        }
        let summary = LatencySummary {
            duration_ns: 2_000_000_000,
            sent: 2003,
            received: 2000,
            lost: Some(3),
            messages_per_second: 1000.0,
            rtt: total.stats(),
            histogram: total.buckets(),
        };
        let body = ReportBody::Latency(LatencyReport { spec, intervals, summary });
        crate::fixtures::report_against(body, "192.0.2.7:5201")
    }

    #[test]
    fn text() {
        insta::assert_snapshot!(crate::fixtures::render(&report(), Format::Text));
    }

    #[test]
    fn csv_rows_are_even() {
        let csv = crate::fixtures::render(&report(), Format::Csv);
        let records = crate::fixtures::assert_even_rows(&csv);
        assert_eq!(records.len(), 4, "three intervals and the summary: {csv}");
        insta::assert_snapshot!(csv);
    }
}
