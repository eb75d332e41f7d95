//! How HTTP load runs read in every format: a header, one line per interval, then the summary:
//! responses and rate, success ratio, status codes, errors by cause, bytes, and the latency
//! percentiles. The live panel and the quick table take their figures from the same view.

use std::io::{self, Write};

use wirespeed_model::histogram::HistogramBucket;
use wirespeed_model::kinds::http::{HttpInterval, HttpReport, HttpSpec, HttpSummary};

use crate::csv::{interval_cells, record};
use crate::percentiles::{stats_cells, stats_table, STATS_COLUMNS};
use crate::units::{bytes, nanos, percent, rate};
use wirespeed_model::Meta;

use super::{one_line, KindView, LiveSample, QuickLine};
use crate::live::rated;
use crate::text::Style;

/// "GET http://h/: 10 connections on 1 thread, keep-alive, 10 s" and the like.
pub(crate) fn describe(spec: &HttpSpec) -> String {
    let limit = match spec.count {
        Some(n) => format!("{n} requests"),
        None => format!("{} s", spec.duration_ns as f64 / 1e9),
    };
    let each = if spec.rates.len() > 1 { " each" } else { "" };
    let reuse = if spec.keepalive { "keep-alive" } else { "a connection per request" };
    let threads =
        if spec.threads == 1 { "1 thread".into() } else { format!("{} threads", spec.threads) };
    let load = match spec.rates.as_slice() {
        [] if spec.multiplexed() => {
            format!("{} connections × {} streams", spec.connections, spec.streams)
        }
        [] => format!("{} connections", spec.connections),
        rates => {
            let list: Vec<String> = rates.iter().map(|r| format!("{r}")).collect();
            let pool = if spec.multiplexed() {
                format!("{} connections", spec.connections)
            } else {
                format!("up to {} connections", spec.max_connections)
            };
            format!("{} req/s (open model, {pool})", list.join(", "))
        }
    };
    let mut text =
        format!("{} {}: {load} on {threads}, {reuse}, {limit}{each}", spec.method, spec.url);
    if spec.http2 {
        text.push_str(", HTTP/2");
    }
    if spec.http3 {
        text.push_str(", HTTP/3");
    }
    if spec.alt_svc {
        text.push_str(" found by Alt-Svc");
    }
    if spec.zero_rtt {
        text.push_str(", 0-RTT");
    }
    if let Some(path) = &spec.unix_socket {
        text.push_str(&format!(", via unix:{path}"));
    }
    if let Some(t) = &spec.targets {
        text.push_str(&format!(", {} requests from {} round-robin", t.count, t.path));
    }
    if spec.max_redirects > 0 {
        text.push_str(&format!(", following up to {} redirects", spec.max_redirects));
    }
    text
}

/// The interval table's header.
pub(crate) fn header() -> String {
    format!(
        "{:<15}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}",
        "Interval", "req/s", "p50", "p90", "p99", "max", "errors"
    )
}

/// One interval line.
pub(crate) fn row(iv: &HttpInterval) -> String {
    let l = &iv.latency;
    let line = format!(
        "{:<15}{:>10.0}{:>10}{:>10}{:>10}{:>10}{:>9}",
        format!("{:.2}-{:.2} s", iv.start_ns as f64 / 1e9, iv.end_ns as f64 / 1e9),
        iv.requests_per_second,
        nanos(l.p50_ns as f64),
        nanos(l.p90_ns as f64),
        nanos(l.p99_ns as f64),
        nanos(l.max_ns as f64),
        iv.errors
    );
    if iv.omitted {
        format!("{line}  (warm-up)")
    } else {
        line
    }
}

/// What "latency" means in this run.
pub(crate) fn latency_meaning(spec: &HttpSpec) -> &'static str {
    if spec.is_open() {
        "scheduled send time to last response byte read, so waiting counts (coordinated omission corrected)"
    } else {
        "first request byte written to last response byte read"
    }
}

/// The summary block.
pub(crate) fn summary(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let s = &r.summary;
    writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -")?;
    writeln!(
        out,
        "{} responses in {:.2} s ({:.1}/s), {} succeeded (2xx/3xx), {} connections opened",
        s.responses,
        s.duration_ns as f64 / 1e9,
        s.requests_per_second,
        percent(s.success_ratio),
        s.connections_opened
    )?;
    if r.spec.zero_rtt {
        writeln!(
            out,
            "0-RTT: {} of {} connections sent their first request as early data, {} accepted",
            s.early_data, s.connections_opened, s.early_data_accepted
        )?;
    }
    if let Some(target) = s.target_rate {
        writeln!(
            out,
            "rate: target {target:.1}/s, sent {:.1}/s ({}), {} late (sent > 1 ms after schedule)",
            s.sent_per_second,
            percent(s.sent_per_second / target),
            s.late
        )?;
    }
    let status: Vec<String> = s.status.iter().map(|(c, n)| format!("{c} × {n}")).collect();
    writeln!(out, "status: {}", if status.is_empty() { "none".into() } else { status.join(", ") })?;
    let errors: Vec<String> = s.errors.iter().map(|(c, n)| format!("{c} × {n}")).collect();
    writeln!(out, "errors: {}", if errors.is_empty() { "none".into() } else { errors.join(", ") })?;
    writeln!(out, "bytes: in {}, out {}", bytes(s.bytes_in), bytes(s.bytes_out))?;
    writeln!(out, "latency ({}):", latency_meaning(&r.spec))?;
    stats_table(&s.latency, out)?;
    breakdown(r, out)?;
    histogram(&s.histogram, out)?;
    if !r.steps.is_empty() {
        sweep(r, out)?;
    }
    Ok(())
}

/// Where the time went: each part's median, p99 and maximum.
fn breakdown(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let b = &r.summary.breakdown;
    writeln!(out, "breakdown:{:>14}{:>10}{:>10}{:>10}", "count", "p50", "p99", "max")?;
    if r.spec.unix_socket.is_none() {
        writeln!(out, "  {:<12}{:>10}{:>10}", "DNS", 1, nanos(b.dns_ns as f64))?;
    }
    let mut part = |name: &str, l: &wirespeed_model::histogram::LatencyStats| {
        writeln!(
            out,
            "  {name:<12}{:>10}{:>10}{:>10}{:>10}",
            l.count,
            nanos(l.p50_ns as f64),
            nanos(l.p99_ns as f64),
            nanos(l.max_ns as f64)
        )
    };
    // QUIC's handshake is its transport's and TLS's at once.
    part(if r.spec.http3 { "QUIC setup" } else { "connect" }, &b.connect)?;
    if b.tls.count > 0 {
        part("TLS", &b.tls)?;
    }
    if r.spec.is_open() {
        part("queue", &b.queue)?;
    }
    part("first byte", &b.first_byte)?;
    part("total", &r.summary.latency)
}

/// A latency histogram in ten bars, like hey's: each bar is the responses at or below its
/// bound (linear steps from the fastest to the slowest).
fn histogram(buckets: &[HistogramBucket], out: &mut dyn Write) -> io::Result<()> {
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else { return Ok(()) };
    let (lo, hi) = (first.value_ns as f64, last.value_ns as f64);
    if buckets.len() < 2 || hi <= lo {
        return Ok(());
    }
    let mut bars = [0u64; 10];
    for b in buckets {
        let i = (((b.value_ns as f64 - lo) / (hi - lo)) * 10.0).ceil() as usize;
        bars[i.clamp(1, 10) - 1] += b.count;
    }
    let most = bars.iter().copied().max().unwrap_or(1).max(1);
    writeln!(out, "histogram:")?;
    for (i, n) in bars.iter().enumerate() {
        let bound = lo + (hi - lo) * (i + 1) as f64 / 10.0;
        let width = ((*n as f64 / most as f64) * 40.0).ceil() as usize;
        writeln!(out, "  ≤ {:>9} {:>10} {}", nanos(bound), n, "■".repeat(width))?;
    }
    Ok(())
}

/// A sweep's latency-vs-rate table.
fn sweep(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "latency vs rate:")?;
    writeln!(
        out,
        "{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}{:>8}",
        "rate", "sent/s", "req/s", "p50", "p90", "p99", "p99.9", "max", "errors", "late"
    )?;
    for step in &r.steps {
        let (s, l) = (&step.summary, &step.summary.latency);
        writeln!(
            out,
            "{:>10}{:>10.1}{:>10.1}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}{:>8}",
            step.rate,
            s.sent_per_second,
            s.requests_per_second,
            nanos(l.p50_ns as f64),
            nanos(l.p90_ns as f64),
            nanos(l.p99_ns as f64),
            nanos(l.p999_ns as f64),
            nanos(l.max_ns as f64),
            s.errors.values().sum::<u64>(),
            s.late
        )?;
    }
    Ok(())
}

/// CSV columns for HTTP runs.
pub(crate) fn csv_columns() -> String {
    format!("row,index,start_s,end_s,omitted,target_rate,requests_per_second,sent,late,responses,errors,succeeded,bytes_in,bytes_out,{STATS_COLUMNS}")
}

/// One CSV row per interval.
pub(crate) fn csv_interval(iv: &HttpInterval) -> String {
    let none = String::new;
    let head = interval_cells(iv.index, iv.start_ns, iv.end_ns, iv.omitted);
    let counts = [
        none(),
        format!("{:.1}", iv.requests_per_second),
        iv.sent.to_string(),
        iv.late.to_string(),
        iv.responses.to_string(),
        iv.errors.to_string(),
        none(),
        none(),
        none(),
    ];
    record(head.into_iter().chain(counts).chain(stats_cells(&iv.latency)))
}

/// The CSV summary row, after one row per step of a sweep.
pub(crate) fn csv_summary(r: &HttpReport) -> String {
    let mut rows: Vec<String> = r
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| csv_totals("step", &i.to_string(), step.start_ns, &step.summary))
        .collect();
    rows.push(csv_totals("summary", "", r.spec.warmup_ns, &r.summary));
    rows.join("\n")
}

/// A totals row whose measured part began `start_ns` into the test.
fn csv_totals(row: &str, index: &str, start_ns: u64, s: &HttpSummary) -> String {
    let start = start_ns as f64 / 1e9;
    let head = [
        row.to_string(),
        index.to_string(),
        format!("{start:.3}"),
        format!("{:.3}", start + s.duration_ns as f64 / 1e9),
        "false".to_string(),
        s.target_rate.map(|r| format!("{r}")).unwrap_or_default(),
        format!("{:.1}", s.requests_per_second),
        s.sent.to_string(),
        s.late.to_string(),
        s.responses.to_string(),
        s.errors.values().sum::<u64>().to_string(),
        s.succeeded.to_string(),
        s.bytes_in.to_string(),
        s.bytes_out.to_string(),
    ];
    record(head.into_iter().chain(stats_cells(&s.latency)))
}

/// How an HTTP load run is shown.
pub(crate) struct HttpView(pub(crate) HttpSpec);

impl KindView for HttpView {
    type Report = HttpReport;

    fn describe(&self) -> String {
        describe(&self.0)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&header()))
    }

    fn text_step(
        &mut self,
        iv: &HttpInterval,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        writeln!(out, "{}", style.maybe_dim(iv.omitted, &row(iv)))
    }

    fn text_end(&mut self, h: &HttpReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        summary(h, out)
    }

    fn csv_columns(&self) -> String {
        csv_columns()
    }

    fn csv_rows(&self, iv: &HttpInterval) -> Vec<String> {
        vec![csv_interval(iv)]
    }

    fn csv_summary(&self, h: &HttpReport) -> Vec<String> {
        vec![csv_summary(h)]
    }

    fn live(&self, iv: &HttpInterval) -> Option<LiveSample> {
        let errors = format!("errors {}", iv.errors);
        Some(rated(iv.end_ns, iv.requests_per_second, "req/s", "p50", &iv.latency, errors))
    }

    fn quick(&self, name: &str, h: &HttpReport) -> Vec<QuickLine> {
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
        one_line(
            name,
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

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use wirespeed_model::histogram::RttHistogram;
    use wirespeed_model::kinds::http::{
        HttpBreakdown, HttpInterval, HttpReport, HttpSpec, HttpStep, HttpSummary,
    };
    use wirespeed_model::{Report, ReportBody};

    use crate::Format;

    /// Latencies of `n` responses spread over 0.5–5.5 ms.
    fn histogram(n: u64) -> RttHistogram {
        let mut h = RttHistogram::default();
        for i in 0..n {
            h.record(500_000 + (i * 7_919) % 5_000_000);
        }
        h
    }

    fn summary(rate: Option<f64>, responses: u64) -> HttpSummary {
        let h = histogram(responses);
        HttpSummary {
            duration_ns: 1_000_000_000,
            responses,
            succeeded: responses - 2,
            success_ratio: (responses - 2) as f64 / (responses + 1) as f64,
            status: BTreeMap::from([("200".into(), responses - 2), ("503".into(), 2)]),
            errors: BTreeMap::from([("timeout".into(), 1)]),
            requests_per_second: responses as f64,
            bytes_in: responses * 615,
            bytes_out: 0,
            connections_opened: 4,
            latency: h.stats(),
            histogram: h.buckets(),
            target_rate: rate,
            sent: responses + 1,
            sent_per_second: (responses + 1) as f64,
            late: 3,
            breakdown: HttpBreakdown {
                dns_ns: 12_000,
                connect: histogram(4).stats(),
                first_byte: h.stats(),
                queue: histogram(responses).stats(),
                ..HttpBreakdown::default()
            },
            early_data: 0,
            early_data_accepted: 0,
        }
    }

    /// An open-model sweep over two rates, an interval each.
    pub(crate) fn report() -> Report {
        let mut spec = HttpSpec::new("http://192.0.2.7:8080/index.html");
        spec.rates = vec![100.0, 200.0];
        spec.duration_ns = 1_000_000_000;
        let intervals = (0..2u32)
            .map(|index| HttpInterval {
                index,
                start_ns: u64::from(index) * 1_000_000_000,
                end_ns: u64::from(index + 1) * 1_000_000_000,
                omitted: false,
                requests_per_second: 100.0 * f64::from(index + 1),
                responses: 100 * u64::from(index + 1),
                errors: u64::from(index),
                sent: 100 * u64::from(index + 1) + 1,
                late: 1,
                latency: histogram(100 * u64::from(index + 1)).stats(),
            })
            .collect();
        let steps = vec![
            HttpStep { rate: 100.0, start_ns: 0, summary: summary(Some(100.0), 100) },
            HttpStep { rate: 200.0, start_ns: 1_000_000_000, summary: summary(Some(200.0), 200) },
        ];
        let mut total = summary(None, 300);
        total.duration_ns = 2_000_000_000;
        let body = ReportBody::Http(HttpReport { spec, intervals, summary: total, steps });
        crate::fixtures::report_against(body, "192.0.2.7:8080")
    }

    #[test]
    fn text() {
        insta::assert_snapshot!(crate::fixtures::render(&report(), Format::Text));
    }

    #[test]
    fn csv_rows_are_even() {
        let csv = crate::fixtures::render(&report(), Format::Csv);
        let records = crate::fixtures::assert_even_rows(&csv);
        assert_eq!(records.len(), 5, "two intervals, two steps and the summary: {csv}");
        insta::assert_snapshot!(csv);
    }
}
