//! The one table `wirespeed quick` prints: a row per test with its headline figures, then
//! each test's findings on whether the tester was the limit.

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
    // Whether the tester was the limit, test by test: on loopback the client and the server
    // share the machine, so a busy core is the rule for the load tests.
    let mut limited = 0;
    for row in rows {
        let Ok(report) = &row.outcome else { continue };
        for f in report.meta.diagnosis.iter().flat_map(|d| &d.findings) {
            if limited == 0 {
                writeln!(out, "\ntester limits (see `wirespeed show` for each run's threads):")?;
            }
            limited += 1;
            writeln!(out, "  {}: {} ({}): {}", row.name, f.side.word(), f.code.name(), f.text)?;
        }
    }
    if limited == 0 {
        writeln!(out, "\ntester: no limit of the tester found in any test")?;
    }
    Ok(())
}
