//! CSV: a header, a row per interval (or probe) as the run goes, then the summary rows; the
//! columns are each kind's (`crate::kinds`). The helpers here quote and spell cells alike
//! for every kind.

use std::io::{self, Write};

use wirespeed_model::Event;

use crate::kinds::{self, View};
use crate::Renderer;

/// The CSV renderer: the header of the run's kind, its rows as they come, then its summary.
#[derive(Default)]
pub struct Csv {
    /// How the run's kind is written, from its start.
    view: Option<Box<dyn View>>,
}

impl std::fmt::Debug for Csv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Csv").field("started", &self.view.is_some()).finish()
    }
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

impl Renderer for Csv {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        let rows = match event {
            Event::Start { spec, .. } => {
                if self.view.is_some() {
                    return Ok(());
                }
                let view = self.view.insert(kinds::view(spec));
                vec![view.csv_columns()]
            }
            Event::Notice(_) => Vec::new(),
            Event::End(report) => {
                let view = self.view.get_or_insert_with(|| kinds::view(&report.body.spec()));
                view.csv_summary(report)
            }
            running => self.view.as_ref().map_or_else(Vec::new, |v| v.csv_rows(running)),
        };
        for row in rows {
            writeln!(out, "{row}")?;
        }
        Ok(())
    }
}
