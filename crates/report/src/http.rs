//! How HTTP load runs read in the text and CSV formats: a header, one line per interval,
//! then the summary: responses and rate, success ratio, status codes, errors by cause, bytes,
//! and the latency percentiles. Used by [`crate::text`] and [`crate::csv`].

use std::io::{self, Write};

use wirespeed_model::http::{HttpInterval, HttpReport, HttpSpec};

use crate::latency::{stats_cells, STATS_COLUMNS};
use crate::units::{bytes, nanos, percent};

/// "GET http://h/ — 10 connections on 1 thread, keep-alive, 10 s" and the like.
pub fn describe(spec: &HttpSpec) -> String {
    let limit = match spec.count {
        Some(n) => format!("{n} requests"),
        None => format!("{} s", spec.duration_ns as f64 / 1e9),
    };
    let reuse = if spec.keepalive { "keep-alive" } else { "a connection per request" };
    let threads =
        if spec.threads == 1 { "1 thread".into() } else { format!("{} threads", spec.threads) };
    format!(
        "{} {}: {} connections on {threads}, {reuse}, {limit}",
        spec.method, spec.url, spec.connections
    )
}

/// The interval table's header.
pub fn header() -> String {
    format!(
        "{:<15}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}",
        "Interval", "req/s", "p50", "p90", "p99", "max", "errors"
    )
}

/// One interval line.
pub fn row(iv: &HttpInterval) -> String {
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

/// The summary block.
pub fn summary(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
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
    let status: Vec<String> = s.status.iter().map(|(c, n)| format!("{c} × {n}")).collect();
    writeln!(out, "status: {}", if status.is_empty() { "none".into() } else { status.join(", ") })?;
    let errors: Vec<String> = s.errors.iter().map(|(c, n)| format!("{c} × {n}")).collect();
    writeln!(out, "errors: {}", if errors.is_empty() { "none".into() } else { errors.join(", ") })?;
    writeln!(out, "bytes: in {}, out {}", bytes(s.bytes_in), bytes(s.bytes_out))?;
    writeln!(out, "latency (first request byte written to last response byte read):")?;
    crate::latency::stats_table(&s.latency, out)
}

/// CSV columns for HTTP runs.
pub fn csv_columns() -> String {
    format!("row,index,start_s,end_s,omitted,requests_per_second,responses,errors,succeeded,bytes_in,bytes_out,{STATS_COLUMNS}")
}

/// One CSV row per interval.
pub fn csv_interval(iv: &HttpInterval) -> String {
    format!(
        "interval,{},{:.3},{:.3},{},{:.1},{},{},,,,{}",
        iv.index,
        iv.start_ns as f64 / 1e9,
        iv.end_ns as f64 / 1e9,
        iv.omitted,
        iv.requests_per_second,
        iv.responses,
        iv.errors,
        stats_cells(&iv.latency)
    )
}

/// The CSV summary row.
pub fn csv_summary(r: &HttpReport) -> String {
    let s = &r.summary;
    let start = r.spec.warmup_ns as f64 / 1e9;
    format!(
        "summary,,{start:.3},{:.3},false,{:.1},{},{},{},{},{},{}",
        start + s.duration_ns as f64 / 1e9,
        s.requests_per_second,
        s.responses,
        s.errors.values().sum::<u64>(),
        s.succeeded,
        s.bytes_in,
        s.bytes_out,
        stats_cells(&s.latency)
    )
}
