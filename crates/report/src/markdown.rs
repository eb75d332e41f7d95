//! Runs as Markdown documents: a section per run with its facts, key figures, intervals, the
//! tester's diagnosis and options, ready to paste into an issue or a wiki.

use std::io::{self, Write};

use wirespeed_model::{Event, Report};

use crate::diagnosis;
use crate::digest::{self, RunLabel};
use crate::Renderer;

/// One run's section, headed at level `##`.
pub fn run_section(report: &Report, label: &RunLabel) -> String {
    let mut out = format!("## {}\n\n", digest::title(report, label));
    for row in digest::facts(report, label).rows {
        out.push_str(&format!("- **{}:** {}\n", row[0], row[1].replace('|', "\\|")));
    }
    out.push_str("\n### Key figures\n\n");
    out.push_str(&digest::key_figures(report).markdown());
    if let Some(t) = digest::intervals(report) {
        out.push_str("\n### Intervals\n\n");
        out.push_str(&t.markdown());
    }
    if let Some(d) = &report.meta.diagnosis {
        out.push_str("\n### Tester\n\n");
        for line in diagnosis::findings(d) {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
        out.push_str(&diagnosis::threads(d).markdown());
    }
    out.push_str("\n### Options\n\n");
    out.push_str(&digest::spec(report).markdown());
    out
}

/// Several runs in one document.
pub fn document(runs: &[(&Report, RunLabel)]) -> String {
    let mut out = String::from("# wirespeed results\n\n");
    for (i, (r, label)) in runs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&run_section(r, label));
    }
    out
}

/// The `--format md` renderer of a live run: the document, once the run has ended.
#[derive(Debug, Default)]
pub struct Markdown;

impl Renderer for Markdown {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        if let Event::End(report) = event {
            out.write_all(document(&[(report, RunLabel::default())]).as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;

    #[test]
    fn tcp_bidir_document() {
        let r = fixtures::report(Protocol::Tcp, Direction::Bidir);
        let label = RunLabel { id: Some(7), tag: Some("lab|rack".into()) };
        insta::assert_snapshot!(document(&[(&r, label)]));
    }
}
