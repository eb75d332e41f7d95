//! Where events and reports go: the chosen renderer on stdout, a one-line live progress on
//! stderr when stderr is a terminal and stdout is not already showing intervals, and the store.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use tokio::sync::mpsc::UnboundedReceiver;
use wirespeed_model::{Event, Report};
use wirespeed_report::units::{nanos, rate};
use wirespeed_report::Format;
use wirespeed_store::Store;

use crate::flags::{FormatArg, OutputArgs};

/// The renderer format for a flag value.
pub fn format_of(f: FormatArg) -> Format {
    match f {
        FormatArg::Text => Format::Text,
        FormatArg::Json => Format::Json,
        FormatArg::JsonStream => Format::JsonStream,
        FormatArg::Csv => Format::Csv,
        FormatArg::Iperf3Json => Format::Iperf3Json,
        FormatArg::Md => Format::Markdown,
        FormatArg::Html => Format::Html,
        // The result lines are written by the test; the report is text, on stderr.
        FormatArg::Vegeta => Format::Text,
    }
}

/// True when text output may be coloured: stdout is a terminal and `NO_COLOR` is unset.
pub fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Renders events as they arrive until the channel closes (on stderr with `--format vegeta`,
/// whose stdout carries the result lines).
pub fn spawn_printer(
    format_arg: FormatArg,
    mut events: UnboundedReceiver<Event>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let format = format_of(format_arg);
    let to_stderr = format_arg == FormatArg::Vegeta;
    let color = color() && !to_stderr;
    let live = format != Format::Text && std::io::stderr().is_terminal();
    tokio::task::spawn_blocking(move || {
        let mut renderer = wirespeed_report::renderer(format, color);
        let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
        while let Some(ev) = events.blocking_recv() {
            let mut out: Box<dyn Write> =
                if to_stderr { Box::new(stderr.lock()) } else { Box::new(stdout.lock()) };
            renderer.on_event(&ev, &mut out)?;
            out.flush()?;
            if live {
                progress(&ev);
            }
        }
        Ok(())
    })
}

/// Rewrites one stderr line with the latest interval, and clears it at the end.
fn progress(ev: &Event) {
    let mut err = std::io::stderr().lock();
    match ev {
        Event::Interval(iv) => {
            let flows: Vec<String> = iv
                .flows
                .iter()
                .map(|f| format!("{:?} {}", f.flow, rate(f.total.received_bps)))
                .collect();
            let _ = write!(err, "\r\x1b[2K{:.1} s  {}", iv.end_ns as f64 / 1e9, flows.join("  "));
        }
        Event::LatencyInterval(iv) => {
            let _ = write!(
                err,
                "\r\x1b[2K{:.1} s  {:.0} msg/s  p50 {}  p99 {}",
                iv.end_ns as f64 / 1e9,
                iv.messages_per_second,
                nanos(iv.rtt.p50_ns as f64),
                nanos(iv.rtt.p99_ns as f64)
            );
        }
        Event::CpsInterval(iv) => {
            let _ = write!(
                err,
                "\r\x1b[2K{:.1} s  {:.0} conn/s  connect p50 {}  p99 {}  failed {}",
                iv.end_ns as f64 / 1e9,
                iv.connections_per_second,
                nanos(iv.connect.p50_ns as f64),
                nanos(iv.connect.p99_ns as f64),
                iv.failures.total()
            );
        }
        Event::HttpInterval(iv) => {
            let _ = write!(
                err,
                "\r\x1b[2K{:.1} s  {:.0} req/s  p50 {}  p99 {}  errors {}",
                iv.end_ns as f64 / 1e9,
                iv.requests_per_second,
                nanos(iv.latency.p50_ns as f64),
                nanos(iv.latency.p99_ns as f64),
                iv.errors
            );
        }
        Event::End(_) => {
            let _ = write!(err, "\r\x1b[2K");
        }
        _ => {}
    }
    let _ = err.flush();
}

/// The database path from the flags or the default location.
pub fn db_path(args: &OutputArgs) -> Result<PathBuf> {
    crate::saved::db_path(&args.db)
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to standard output"),
    }
}

/// Saves reports unless `--no-save`; returns the ids.
pub fn save(args: &OutputArgs, reports: &[&Report]) -> Result<Vec<i64>> {
    if args.no_save || reports.is_empty() {
        return Ok(Vec::new());
    }
    let path = db_path(args)?;
    let store = Store::open(&path)?;
    reports.iter().map(|r| store.save(r, args.tag.as_deref()).map_err(Into::into)).collect()
}
