//! The one table `wirespeed quick` prints: a row per test with its headline figures, then
//! each test's findings on whether the tester was the limit.

use std::io::{self, Write};

use wirespeed_model::diagnosis::FindingCode;
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

/// A limit of the tester as the table marks it, and the one line that explains it beneath.
fn limit_of(code: FindingCode) -> (&'static str, &'static str) {
    match code {
        FindingCode::SaturatedCore | FindingCode::CpuWait => (
            "cpu",
            "a thread kept a core busy or waited for one: on loopback the client and the server \
             share this machine's cores, so these rows measure the machine as much as the path",
        ),
        FindingCode::TimerSlack => {
            ("timer", "sleeps woke late against the pacing: spacing and jitter are the timer's")
        }
        FindingCode::SocketBufferFull => (
            "buffers",
            "the kernel dropped data at a full socket buffer on this machine: some loss was the \
             receiver's, not the path's",
        ),
        FindingCode::AcceptQueueFull => {
            ("accept", "the kernel dropped connections at a full accept queue")
        }
        FindingCode::PortCeiling => {
            ("ports", "local ports ran out, or TIME_WAIT held most of them")
        }
        FindingCode::LostResults => ("late", "interval lines came late or are missing"),
    }
}

/// Renders the quick table: a row per test, marked `[limit: …]` where the tester was the
/// limit, then one line per kind of limit (23 lines of findings, most of them the same advice
/// about a 2-core machine, read as a wall of defects); each run's own findings are in
/// `wirespeed show`.
pub fn render(rows: &[QuickRow], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{:<22}{:>14}{:>14}  details", "test", "sent", "received")?;
    // Each kind of limit, in the order first met, with the rows it marks.
    let mut limits: Vec<(&'static str, &'static str, Vec<&str>)> = Vec::new();
    for row in rows {
        let mut marks: Vec<&'static str> = Vec::new();
        let lines = match &row.outcome {
            Err(why) => {
                let label = if row.skipped { "skipped" } else { "FAILED" };
                vec![(row.name.clone(), "-".into(), "-".into(), format!("{label}: {why}"))]
            }
            Ok(report) => {
                for f in report.meta.diagnosis.iter().flat_map(|d| &d.findings) {
                    let (mark, why) = limit_of(f.code);
                    if !marks.contains(&mark) {
                        marks.push(mark);
                        match limits.iter_mut().find(|l| l.0 == mark) {
                            Some(l) => l.2.push(&row.name),
                            None => limits.push((mark, why, vec![&row.name])),
                        }
                    }
                }
                kinds::view(&report.body.spec()).quick(&row.name, report)
            }
        };
        let tag = if marks.is_empty() {
            String::new()
        } else {
            format!("  [limit: {}]", marks.join(", "))
        };
        for (name, first, second, details) in lines {
            writeln!(out, "{name:<22}{first:>14}{second:>14}  {details}{tag}")?;
        }
    }
    if limits.is_empty() {
        writeln!(out, "\ntester: no limit of the tester found in any test")?;
        return Ok(());
    }
    writeln!(out, "\ntester limits (each run's findings: `wirespeed show RUN`):")?;
    for (mark, why, names) in &limits {
        let n = names.len();
        writeln!(out, "  {mark}: {why} ({n} {})", if n == 1 { "test" } else { "tests" })?;
    }
    Ok(())
}
