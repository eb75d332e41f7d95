//! How cps runs read in every format: a header, one line per interval, then the summary with
//! connect-time percentiles and failures by cause. The live panel and the quick table take
//! their figures from the same view.

use std::io::{self, Write};

use wirespeed_model::histogram::LatencyStats;
use wirespeed_model::kinds::cps::{ConnectFailure, CpsInterval, CpsReport, CpsSpec, FailureCounts};

use crate::csv::record;
use crate::percentiles::{stats_cells, stats_table, STATS_COLUMNS};
use crate::units::nanos;
use wirespeed_model::Meta;

use super::{one_line, KindView, LiveSample, QuickLine};
use crate::live::rated;
use crate::text::Style;

/// "TCP connections/s to any TCP listener, 4 connections in flight on 1 thread, FIN close,
/// 10 s" and the like.
pub(crate) fn describe(spec: &CpsSpec) -> String {
    let target = if spec.external { "any TCP listener" } else { "a wirespeed server" };
    let plural = |n: u16, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let connectors = format!(
        "{} in flight on {}",
        plural(spec.parallel, "connection"),
        plural(spec.threads, "thread")
    );
    let close = if spec.rst { "RST close" } else { "FIN close" };
    let limit = match spec.count {
        Some(n) => format!("{n} attempts"),
        None => format!("{} s", spec.duration_ns as f64 / 1e9),
    };
    format!("TCP connections/s to {target}, {connectors}, {close}, {limit}")
}

/// The interval table's header.
pub(crate) fn header() -> String {
    format!(
        "{:<15}{:>10}{:>10}{:>10}{:>10}{:>10}  failed",
        "Interval", "conn/s", "min", "p50", "p99", "max"
    )
}

/// One interval line.
pub(crate) fn row(iv: &CpsInterval) -> String {
    let c = &iv.connect;
    let failed = iv.failures.total();
    let failed = if failed == 0 {
        "0".to_string()
    } else {
        format!("{failed} ({})", iv.failures.describe())
    };
    let line = format!(
        "{:<15}{:>10.0}{:>10}{:>10}{:>10}{:>10}  {failed}",
        format!("{:.2}-{:.2} s", iv.start_ns as f64 / 1e9, iv.end_ns as f64 / 1e9),
        iv.connections_per_second,
        nanos(c.min_ns as f64),
        nanos(c.p50_ns as f64),
        nanos(c.p99_ns as f64),
        nanos(c.max_ns as f64),
    );
    if iv.omitted {
        format!("{line}  (warm-up)")
    } else {
        line
    }
}

/// The summary block.
pub(crate) fn summary(r: &CpsReport, out: &mut dyn Write) -> io::Result<()> {
    let s = &r.summary;
    writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -")?;
    let server = s.server_accepted.map_or(String::new(), |n| format!(", server accepted {n}"));
    writeln!(
        out,
        "{} connections in {:.2} s ({:.0}/s) of {} attempts{server}",
        s.connected,
        s.duration_ns as f64 / 1e9,
        s.connections_per_second,
        s.attempts,
    )?;
    writeln!(out, "failed: {}", s.failures.describe())?;
    writeln!(out, "connect time:")?;
    stats_table(&s.connect, out)
}

/// CSV columns for cps runs.
pub(crate) fn csv_columns() -> String {
    let causes: Vec<String> =
        ConnectFailure::ALL.iter().map(|c| format!("failed_{}", c.name())).collect();
    format!(
        "row,index,start_s,end_s,omitted,connections_per_second,attempts,connected,{},{STATS_COLUMNS}",
        causes.join(",")
    )
}

fn csv_row(
    label: &str,
    index: String,
    span: (f64, f64),
    omitted: bool,
    cps: f64,
    counts: (u64, u64, &FailureCounts),
    stats: &LatencyStats,
) -> String {
    let head = [
        label.to_string(),
        index,
        format!("{:.3}", span.0),
        format!("{:.3}", span.1),
        omitted.to_string(),
        format!("{cps:.1}"),
        counts.0.to_string(),
        counts.1.to_string(),
    ];
    let failures = ConnectFailure::ALL.iter().map(|&c| counts.2.get(c).to_string());
    record(head.into_iter().chain(failures).chain(stats_cells(stats)))
}

/// One CSV row per interval.
pub(crate) fn csv_interval(iv: &CpsInterval) -> String {
    csv_row(
        "interval",
        iv.index.to_string(),
        (iv.start_ns as f64 / 1e9, iv.end_ns as f64 / 1e9),
        iv.omitted,
        iv.connections_per_second,
        (iv.attempts, iv.connected, &iv.failures),
        &iv.connect,
    )
}

/// The CSV summary row.
pub(crate) fn csv_summary(r: &CpsReport) -> String {
    let s = &r.summary;
    let start = r.spec.warmup_ns as f64 / 1e9;
    csv_row(
        "summary",
        String::new(),
        (start, start + s.duration_ns as f64 / 1e9),
        false,
        s.connections_per_second,
        (s.attempts, s.connected, &s.failures),
        &s.connect,
    )
}

/// How a connections-per-second run is shown.
pub(crate) struct CpsView(pub(crate) CpsSpec);

impl KindView for CpsView {
    type Report = CpsReport;

    fn describe(&self) -> String {
        describe(&self.0)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&header()))
    }

    fn text_step(
        &mut self,
        iv: &CpsInterval,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        writeln!(out, "{}", style.maybe_dim(iv.omitted, &row(iv)))
    }

    fn text_end(&mut self, c: &CpsReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        summary(c, out)
    }

    fn csv_columns(&self) -> String {
        csv_columns()
    }

    fn csv_rows(&self, iv: &CpsInterval) -> Vec<String> {
        vec![csv_interval(iv)]
    }

    fn csv_summary(&self, c: &CpsReport) -> Vec<String> {
        vec![csv_summary(c)]
    }

    fn live(&self, iv: &CpsInterval) -> Option<LiveSample> {
        let failed = format!("failed {}", iv.failures.total());
        let rate = iv.connections_per_second;
        Some(rated(iv.end_ns, rate, "conn/s", "connect p50", &iv.connect, failed))
    }

    fn quick(&self, name: &str, c: &CpsReport) -> Vec<QuickLine> {
        let s = &c.summary;
        one_line(
            name,
            format!("{:.0} conn/s", s.connections_per_second),
            format!(
                "connect p50 {}, p99 {}; failed: {}",
                nanos(s.connect.p50_ns as f64),
                nanos(s.connect.p99_ns as f64),
                s.failures.describe()
            ),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use wirespeed_model::histogram::RttHistogram;
    use wirespeed_model::kinds::cps::{CpsInterval, CpsReport, CpsSpec, CpsSummary, FailureCounts};
    use wirespeed_model::{Meta, Report, ReportBody};

    use crate::Format;

    pub(crate) fn report() -> Report {
        let mut spec = CpsSpec::new("127.0.0.1:80");
        spec.external = true;
        spec.parallel = 8;
        spec.duration_ns = 2_000_000_000;
        let mut h = RttHistogram::default();
        for i in 0..1000u64 {
            h.record(20_000 + i * 10);
        }
        let failures = FailureCounts { refused: 2, timeout: 1, ..Default::default() };
        let intervals = (0..2u32)
            .map(|i| CpsInterval {
                index: i,
                start_ns: u64::from(i) * 1_000_000_000,
                end_ns: u64::from(i + 1) * 1_000_000_000,
                omitted: false,
                connections_per_second: 500.0,
                attempts: 500 + u64::from(i) * 3,
                connected: 500,
                failures: if i == 1 { failures } else { FailureCounts::default() },
                connect: h.stats(),
            })
            .collect();
        let summary = CpsSummary {
            duration_ns: 2_000_000_000,
            attempts: 1003,
            connected: 1000,
            failures,
            connections_per_second: 500.0,
            server_accepted: None,
            connect: h.stats(),
            histogram: h.buckets(),
        };
        Report {
            body: ReportBody::Cps(CpsReport { spec, intervals, summary }),
            meta: Meta {
                version: "0.1.0".into(),
                remote_addr: Some("127.0.0.1:80".into()),
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
    fn csv_rows_are_even() {
        let csv = render(Format::Csv);
        crate::fixtures::assert_even_rows(&csv);
        insta::assert_snapshot!(csv);
    }
}
