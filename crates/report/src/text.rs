//! The human format: an iperf3-style interval table while the test runs, then a summary with
//! both ends' figures. Colour (bold headings, dim warm-up rows) only when asked for, which the
//! binary does on a TTY without `NO_COLOR`.

use std::io::{self, Write};

use wirespeed_model::{Event, Meta};

use crate::kinds::{self, View};
use crate::Renderer;

/// How text is styled: bold headings and dim warm-up rows, with ANSI colour or without.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// True when ANSI colour is wanted (the binary asks for it on a terminal).
    pub(crate) color: bool,
}

impl Style {
    /// `s` in bold.
    pub(crate) fn bold(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// `s` dimmed when `dim` (a warm-up row).
    pub(crate) fn maybe_dim(&self, dim: bool, s: &str) -> String {
        if dim && self.color {
            format!("\x1b[2m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// The text renderer.
pub struct Text {
    style: Style,
    /// The notes the banner printed; the end prints only the ones that came later.
    noted: Vec<String>,
    /// How the run's kind is shown, from its start.
    view: Option<Box<dyn View>>,
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Text").field("style", &self.style).finish_non_exhaustive()
    }
}

impl Text {
    /// A text renderer, with ANSI colour when `color`.
    pub fn new(color: bool) -> Self {
        Self { style: Style { color }, noted: Vec::new(), view: None }
    }
}

/// The lines every run starts with: who talks to whom, what the test is, and the notes.
fn banner(meta: &Meta, target: &str, what: &str, out: &mut dyn Write) -> io::Result<()> {
    let server = meta.server_version.as_deref().map_or(String::new(), |v| format!(" (server {v})"));
    writeln!(
        out,
        "wirespeed {} → {}{server}",
        meta.version,
        meta.remote_addr.as_deref().unwrap_or(target),
    )?;
    writeln!(out, "{what}")?;
    for n in &meta.notes {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}

impl Renderer for Text {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        match event {
            Event::Start { spec, meta } => {
                self.noted.clone_from(&meta.notes);
                let view = self.view.insert(kinds::view(spec));
                banner(meta, spec.target(), &view.describe(), out)?;
                view.text_start(meta, &self.style, out)?;
            }
            Event::Notice(n) => writeln!(out, "note: {n}")?,
            Event::End(report) => {
                for n in report.meta.notes.iter().filter(|n| !self.noted.contains(n)) {
                    writeln!(out, "note: {n}")?;
                }
                let view = self.view.get_or_insert_with(|| kinds::view(&report.body.spec()));
                view.text_end(report, &self.style, out)?;
                if let Some(d) = &report.meta.diagnosis {
                    for line in crate::diagnosis::lines(d) {
                        writeln!(out, "{line}")?;
                    }
                }
            }
            running => {
                if let Some(view) = &mut self.view {
                    view.text_event(running, &self.style, out)?;
                }
            }
        }
        Ok(())
    }
}
