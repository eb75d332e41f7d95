//! How DNS load runs read in every format: a header, one line per interval (dnsperf's `-S`
//! figure and more), then dnsperf's statistics block, laid out as dnsperf prints it so eyes and
//! scripts used to it find every figure, followed by what dnsperf does not report: truncated
//! and stray answers, send errors, percentiles, connections. The live panel and the quick table
//! take their figures from the same view.

use std::io::{self, Write};

use wirespeed_model::kinds::dns::{
    DnsInterval, DnsReport, DnsSpec, DnsSummary, DnsTransport, DohMethod,
};

use crate::csv::{self, record};
use crate::percentiles::{stats_cells, stats_table, STATS_COLUMNS};
use crate::units::{nanos, percent};
use wirespeed_model::Meta;

use super::{one_line, KindView, LiveSample, QuickLine};
use crate::live::rated;
use crate::text::Style;

/// "127.0.0.1:53 over UDP: 1 client on 1 thread, …" and the like.
pub(crate) fn describe(spec: &DnsSpec) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let clients = match spec.transport {
        DnsTransport::Udp => plural(u64::from(spec.clients), "socket", "sockets"),
        _ => plural(u64::from(spec.clients), "connection", "connections"),
    };
    let load = match (spec.rate, spec.max_qps) {
        (Some(r), _) => format!("{r} queries/s (open loop)"),
        (None, Some(q)) => format!("up to {} in flight, at most {q}/s", spec.max_outstanding),
        (None, None) => format!("up to {} in flight", spec.max_outstanding),
    };
    let from = match &spec.datafile {
        Some(path) => format!("{} queries from {path}", spec.queries),
        None => format!("{} built-in queries", spec.queries),
    };
    let limit = match (spec.effective_passes(), spec.duration_ns) {
        (Some(p), Some(d)) => format!("{} or {} s", plural(p, "pass", "passes"), d as f64 / 1e9),
        (Some(p), None) => plural(p, "pass", "passes"),
        (None, Some(d)) => format!("{} s", d as f64 / 1e9),
        (None, None) => String::new(),
    };
    let mut text = format!(
        "{}:{} over {}: {clients} on {}, {load}, {from}, {limit}, timeout {} s",
        spec.server,
        spec.port,
        spec.transport.name(),
        plural(u64::from(spec.threads), "thread", "threads"),
        spec.timeout_ns as f64 / 1e9
    );
    if let Some(size) = spec.edns_size {
        text.push_str(&format!(", EDNS {size}"));
    }
    if spec.dnssec_ok {
        text.push_str(", DO");
    }
    if spec.tc_retry {
        text.push_str(", truncated answers re-asked over TCP");
    }
    if spec.transport == DnsTransport::Doh {
        let method = if spec.doh_method == DohMethod::Post { "POST" } else { "GET" };
        let version = if spec.doh_http3 { "HTTP/3" } else { "HTTP/2" };
        text.push_str(&format!(", {method} over {version}"));
    }
    text
}

/// The interval table's header.
pub(crate) fn header() -> String {
    format!(
        "{:<15}{:>11}{:>10}{:>10}{:>8}{:>8}{:>10}{:>10}{:>10}",
        "Interval", "qps", "sent", "answered", "lost", "TC", "p50", "p99", "max"
    )
}

/// One interval line.
pub(crate) fn row(iv: &DnsInterval) -> String {
    let l = &iv.latency;
    format!(
        "{:<15}{:>11.0}{:>10}{:>10}{:>8}{:>8}{:>10}{:>10}{:>10}",
        format!("{:.2}-{:.2} s", iv.start_ns as f64 / 1e9, iv.end_ns as f64 / 1e9),
        iv.queries_per_second,
        iv.sent,
        iv.completed,
        iv.lost,
        iv.truncated,
        nanos(l.p50_ns as f64),
        nanos(l.p99_ns as f64),
        nanos(l.max_ns as f64)
    )
}

/// A count and its share of `of`, dnsperf's way: `12 (0.10%)`.
fn share(n: u64, of: u64) -> String {
    let pct = if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
    format!("{n} ({pct:.2}%)")
}

/// Seconds with six decimals, as dnsperf prints latencies and the run time.
fn secs(ns: f64) -> String {
    format!("{:.6}", ns / 1e9)
}

/// The summary block.
pub(crate) fn summary(r: &DnsReport, out: &mut dyn Write) -> io::Result<()> {
    let s = &r.summary;
    writeln!(out, "[Status] Testing complete ({})", s.end_reason)?;
    writeln!(out)?;
    writeln!(out, "Statistics:")?;
    writeln!(out)?;
    writeln!(out, "  Queries sent:         {}", s.sent)?;
    writeln!(out, "  Queries completed:    {}", share(s.completed, s.sent))?;
    writeln!(out, "  Queries lost:         {}", share(s.lost, s.sent))?;
    if s.interrupted > 0 {
        writeln!(out, "  Queries interrupted:  {}", share(s.interrupted, s.sent))?;
    }
    writeln!(out)?;
    let codes: Vec<String> =
        s.rcodes.iter().map(|c| format!("{} {}", c.name, share(c.count, s.completed))).collect();
    writeln!(out, "  Response codes:       {}", codes.join(", "))?;
    let avg = |bytes: u64, n: u64| bytes.checked_div(n).unwrap_or(0);
    writeln!(
        out,
        "  Average packet size:  request {}, response {}",
        avg(s.request_bytes, s.sent),
        avg(s.response_bytes, s.completed)
    )?;
    writeln!(out, "  Run time (s):         {}", secs(s.duration_ns as f64))?;
    writeln!(out, "  Queries per second:   {:.6}", s.queries_per_second)?;
    writeln!(out)?;
    writeln!(
        out,
        "  Average Latency (s):  {} (min {}, max {})",
        secs(s.exact.mean_ns),
        secs(s.exact.min_ns as f64),
        secs(s.exact.max_ns as f64)
    )?;
    if s.completed > 1 {
        writeln!(out, "  Latency StdDev (s):   {}", secs(s.exact.stddev_ns))?;
    }
    writeln!(out)?;
    extras(s, out)?;
    writeln!(out, "latency (query sent to answer received, answered queries only):")?;
    stats_table(&s.latency, out)
}

/// What dnsperf does not report.
fn extras(s: &DnsSummary, out: &mut dyn Write) -> io::Result<()> {
    let mut tc = share(s.truncated, s.completed);
    if s.tc_retried > 0 || s.truncated > 0 && s.connections.is_some() {
        tc.push_str(&format!(
            ", {} re-asked over TCP, {} answered",
            s.tc_retried, s.tc_retry_completed
        ));
    }
    writeln!(out, "  Truncated (TC=1):     {tc}")?;
    let st = &s.stray;
    let stray = if st.total() == 0 {
        "none".to_string()
    } else {
        format!(
            "{} (mismatched {}, duplicate {}, late {}, unexpected {}, malformed {})",
            st.total(),
            st.mismatched,
            st.duplicate,
            st.late,
            st.unexpected,
            st.malformed
        )
    };
    writeln!(out, "  Stray answers:        {stray}")?;
    if s.send_errors > 0 {
        writeln!(out, "  Send errors:          {}", s.send_errors)?;
    }
    if s.stream_errors > 0 {
        writeln!(out, "  Stream errors (DoQ, DoH): {}", s.stream_errors)?;
    }
    if s.unsent > 0 {
        writeln!(out, "  Never sent:           {}", s.unsent)?;
    }
    if let Some(c) = &s.connections {
        writeln!(
            out,
            "  Connection attempts:  {} ({} successful, {:.2}%)",
            c.attempts,
            c.successful,
            if c.attempts == 0 { 0.0 } else { c.successful as f64 * 100.0 / c.attempts as f64 }
        )?;
        if let Some(why) = &c.last_failure {
            writeln!(out, "  Last failed connection: {why}")?;
        }
        if c.setup.count > 0 {
            writeln!(
                out,
                "  Connection setup:     avg {}, p99 {}, max {}",
                nanos(c.setup.mean_ns),
                nanos(c.setup.p99_ns as f64),
                nanos(c.setup.max_ns as f64)
            )?;
        }
    }
    writeln!(out)
}

/// CSV columns for DNS runs.
pub(crate) fn csv_columns() -> String {
    format!("row,index,start_s,end_s,queries_per_second,sent,completed,lost,interrupted,truncated,stray,send_errors,unsent,request_bytes,response_bytes,{STATS_COLUMNS}")
}

/// One CSV row per interval.
pub(crate) fn csv_interval(iv: &DnsInterval) -> String {
    let none = String::new;
    let head = [
        "interval".to_string(),
        iv.index.to_string(),
        csv::secs(iv.start_ns),
        csv::secs(iv.end_ns),
        format!("{:.1}", iv.queries_per_second),
        iv.sent.to_string(),
        iv.completed.to_string(),
        iv.lost.to_string(),
        none(),
        iv.truncated.to_string(),
        none(),
        none(),
        none(),
        none(),
        none(),
    ];
    record(head.into_iter().chain(stats_cells(&iv.latency)))
}

/// The CSV summary row.
pub(crate) fn csv_summary(r: &DnsReport) -> String {
    let s = &r.summary;
    let head = [
        "summary".to_string(),
        String::new(),
        csv::secs(0),
        csv::secs(s.duration_ns),
        format!("{:.1}", s.queries_per_second),
        s.sent.to_string(),
        s.completed.to_string(),
        s.lost.to_string(),
        s.interrupted.to_string(),
        s.truncated.to_string(),
        s.stray.total().to_string(),
        s.send_errors.to_string(),
        s.unsent.to_string(),
        s.request_bytes.to_string(),
        s.response_bytes.to_string(),
    ];
    record(head.into_iter().chain(stats_cells(&s.latency)))
}

/// How a DNS load run is shown.
pub(crate) struct DnsView(pub(crate) DnsSpec);

impl KindView for DnsView {
    type Report = DnsReport;

    fn describe(&self) -> String {
        describe(&self.0)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&header()))
    }

    fn text_step(&mut self, iv: &DnsInterval, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", row(iv))
    }

    fn text_end(&mut self, d: &DnsReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        summary(d, out)
    }

    fn csv_columns(&self) -> String {
        csv_columns()
    }

    fn csv_rows(&self, iv: &DnsInterval) -> Vec<String> {
        vec![csv_interval(iv)]
    }

    fn csv_summary(&self, d: &DnsReport) -> Vec<String> {
        vec![csv_summary(d)]
    }

    fn live(&self, iv: &DnsInterval) -> Option<LiveSample> {
        let lost = percent(if iv.sent == 0 { 0.0 } else { iv.lost as f64 / iv.sent as f64 });
        let lost = format!("lost {lost}");
        Some(rated(iv.end_ns, iv.queries_per_second, "q/s", "p50", &iv.latency, lost))
    }

    fn quick(&self, name: &str, d: &DnsReport) -> Vec<QuickLine> {
        let s = &d.summary;
        one_line(
            name,
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
}

#[cfg(test)]
pub(crate) mod tests {
    use wirespeed_model::histogram::LatencyStats;
    use wirespeed_model::kinds::dns::*;
    use wirespeed_model::report::{Meta, Report, ReportBody};

    use crate::fixtures::{assert_even_rows, render};
    use crate::Format;

    pub(crate) fn report() -> Report {
        let mut spec = DnsSpec::new("127.0.0.1", 5300);
        spec.queries = 1005;
        spec.duration_ns = Some(2_000_000_000);
        spec.tc_retry = true;
        let latency = LatencyStats {
            count: 300_000,
            min_ns: 20_000,
            mean_ns: 234_000.0,
            p50_ns: 200_000,
            p90_ns: 400_000,
            p95_ns: 500_000,
            p99_ns: 900_000,
            p999_ns: 2_000_000,
            p9999_ns: 9_000_000,
            max_ns: 18_358_000,
            stddev_ns: 311_000.0,
        };
        let intervals = (0..2u32)
            .map(|i| DnsInterval {
                index: i,
                start_ns: u64::from(i) * 1_000_000_000,
                end_ns: u64::from(i + 1) * 1_000_000_000,
                sent: 150_010,
                completed: 150_000,
                lost: 10,
                truncated: 3,
                queries_per_second: 150_000.0,
                latency,
            })
            .collect();
        let summary = DnsSummary {
            duration_ns: 2_000_083_000,
            end_reason: "time limit".into(),
            sent: 300_020,
            completed: 300_000,
            lost: 20,
            interrupted: 0,
            rcodes: vec![
                RcodeCount { code: 0, name: "NOERROR".into(), count: 299_700 },
                RcodeCount { code: 3, name: "NXDOMAIN".into(), count: 300 },
            ],
            truncated: 6,
            tc_retried: 6,
            tc_retry_completed: 6,
            stray: StrayAnswers { late: 2, ..Default::default() },
            send_errors: 0,
            stream_errors: 0,
            unsent: 0,
            request_bytes: 300_020 * 37,
            response_bytes: 300_000 * 53,
            queries_per_second: 149_993.78,
            latency,
            exact: ExactLatency {
                mean_ns: 234_123.0,
                stddev_ns: 311_456.0,
                min_ns: 20_123,
                max_ns: 18_358_456,
            },
            histogram: vec![],
            connections: Some(DnsConnections {
                attempts: 1,
                successful: 1,
                setup: LatencyStats::default(),
                last_failure: None,
            }),
        };
        Report {
            body: ReportBody::Dns(DnsReport { spec, intervals, summary }),
            meta: Meta {
                version: "0.1.0".into(),
                host: "testhost".into(),
                start_time: "2026-12-02T10:00:00Z".into(),
                start_unix_ms: 1_796_205_600_000,
                remote_addr: Some("127.0.0.1:5300".into()),
                ..Default::default()
            },
        }
    }

    #[test]
    fn text() {
        insta::assert_snapshot!(render(&report(), Format::Text));
    }

    #[test]
    fn json_round_trips_and_the_stream_has_dns_intervals() {
        let r = report();
        let json = render(&r, Format::Json);
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["kind"], "dns");
        assert_eq!(v["summary"]["stray"]["late"], 2);
        let stream = render(&r, Format::JsonStream);
        let kinds: Vec<String> = stream
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(kinds, ["start", "dns_interval", "dns_interval", "end"]);
    }

    #[test]
    fn csv_rows_are_even() {
        let csv = render(&report(), Format::Csv);
        assert_even_rows(&csv);
        insta::assert_snapshot!(csv);
    }
}
