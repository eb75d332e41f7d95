//! The one table `wirespeed quick` prints: a row per test with its headline figures.

use std::io::{self, Write};

use wirespeed_model::Report;

use crate::kinds;

/// One row of the quick table: a test's name and its outcome.
#[derive(Debug)]
pub struct QuickRow {
    /// What ran, e.g. "TCP upload".
    pub name: String,
    /// The report, or why the test failed.
    pub outcome: Result<Report, String>,
    /// Set when the test could not run here for a reason that is not a failure (a missing
    /// privilege); `outcome` then holds the reason.
    pub skipped: bool,
}

/// Renders the quick table.
pub fn render(rows: &[QuickRow], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{:<22}{:>14}{:>14}  details", "test", "sent", "received")?;
    for row in rows {
        let lines = match &row.outcome {
            Err(why) => {
                let label = if row.skipped { "skipped" } else { "FAILED" };
                vec![(row.name.clone(), "-".into(), "-".into(), format!("{label}: {why}"))]
            }
            Ok(report) => kinds::view(&report.body.spec()).quick(&row.name, report),
        };
        for (name, first, second, details) in lines {
            writeln!(out, "{name:<22}{first:>14}{second:>14}  {details}")?;
        }
    }
    Ok(())
}
