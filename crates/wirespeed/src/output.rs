//! Where events and reports go: the chosen renderer on stdout, a live panel on stderr when it
//! is a terminal, and the store.

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use tokio::sync::mpsc::UnboundedReceiver;
use wirespeed_model::{Event, Report};
use wirespeed_report::live::Panel;
use wirespeed_report::Format;
use wirespeed_store::{Location, Store};

use crate::flags::{FormatArg, OutputArgs};

/// The renderer format for a flag value.
pub(crate) fn format_of(f: FormatArg) -> Format {
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
pub(crate) fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Renders events as they arrive until the channel closes (on stderr with `--format vegeta`,
/// whose stdout carries the result lines). On a terminal, unless `--quiet`, a live panel sits
/// on stderr below the output and is erased before the final report.
pub(crate) fn spawn_printer(
    args: &OutputArgs,
    mut events: UnboundedReceiver<Event>,
    member: Option<wirespeed_runner::member::Started>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let format_arg = args.format;
    let format = format_of(format_arg);
    let to_stderr = format_arg == FormatArg::Vegeta;
    let color = color() && !to_stderr;
    let live = !args.quiet && std::io::stderr().is_terminal();
    tokio::task::spawn_blocking(move || {
        let mut renderer = wirespeed_report::renderer(format, color);
        let mut panel = LivePanel::new(live);
        let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
        while let Some(mut ev) = events.blocking_recv() {
            if let Some(started) = &member {
                wirespeed_runner::member::stamp(&mut ev, started);
            }
            // Off the screen while the output is written, so it never lands inside a line.
            panel.erase();
            // One write per event, not one per line (a JSON report is thousands of lines).
            let mut out: Box<dyn Write> = if to_stderr {
                Box::new(std::io::BufWriter::new(stderr.lock()))
            } else {
                Box::new(std::io::BufWriter::new(stdout.lock()))
            };
            renderer.on_event(&ev, &mut out)?;
            out.flush()?;
            drop(out);
            if !matches!(ev, Event::End(_)) {
                panel.update(&ev);
            }
        }
        panel.erase();
        Ok(())
    })
}

/// The live panel on stderr: drawn after each event, erased before any output.
struct LivePanel {
    panel: Option<Panel>,
    drawn: usize,
}

impl LivePanel {
    fn new(on: bool) -> Self {
        Self { panel: on.then(Panel::new), drawn: 0 }
    }

    fn update(&mut self, ev: &Event) {
        let Some(panel) = &mut self.panel else { return };
        panel.on_event(ev);
        let lines = panel.lines(terminal_width().saturating_sub(1));
        if lines.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", lines.join("\n"));
        let _ = err.flush();
        self.drawn = lines.len();
    }

    fn erase(&mut self) {
        if self.drawn == 0 {
            return;
        }
        let mut err = std::io::stderr().lock();
        // Clear the line the cursor is on, then each line above that the panel used.
        let _ = write!(err, "\r\x1b[2K{}", "\x1b[1A\x1b[2K".repeat(self.drawn - 1));
        let _ = err.flush();
        self.drawn = 0;
    }
}

/// Columns of the terminal on stderr (80 when it cannot be asked).
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize; a failed call leaves it zeroed, handled below.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(80)
    }
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to standard output"),
    }
}

/// Opens a shared (PostgreSQL) results database before a test runs, so a wrong URL, password
/// or schema costs no measurement; `None` for an SQLite file (opened when saving, so a test that
/// fails leaves no empty file behind) or with `--no-save`.
pub(crate) fn open_shared_store(args: &OutputArgs) -> Result<Option<Store>> {
    match &args.db {
        Some(location @ Location::Postgres(_)) if !args.no_save => {
            Ok(Some(Store::open_at(location)?))
        }
        _ => Ok(None),
    }
}

/// Saves reports unless `--no-save`, into `opened` if the store was opened before the test;
/// returns the ids.
pub(crate) fn save(
    args: &OutputArgs,
    opened: Option<&Store>,
    reports: &[&Report],
) -> Result<Vec<i64>> {
    if args.no_save || reports.is_empty() {
        return Ok(Vec::new());
    }
    let file;
    let store = match opened {
        Some(store) => store,
        None => {
            file = Store::open_at(&crate::saved::db_location(&args.db)?)?;
            &file
        }
    };
    reports.iter().map(|r| store.save(r, args.tag.as_deref()).map_err(Into::into)).collect()
}
