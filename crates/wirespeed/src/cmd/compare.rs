//! `wirespeed compare`: saved runs side by side, ratios to the first with confidence intervals,
//! verdicts, and warnings where the runs were not asked the same thing.

use anyhow::{bail, Result};
use wirespeed_model::compare::{compare, CompareOptions};
use wirespeed_model::Report;
use wirespeed_report::digest::RunLabel;
use wirespeed_report::{charts, comparison, html};

use crate::exit;
use crate::flags::{CompareArgs, TableFormat};
use crate::{output, saved};

/// Compares the named runs with the first.
pub(super) fn run(args: CompareArgs) -> Result<u8> {
    if !(0.0..100.0).contains(&args.noise) {
        bail!("--noise must be a percentage from 0 to 100, got {}", args.noise);
    }
    if !(args.confidence > 0.0 && args.confidence < 100.0) {
        bail!("--confidence must be a percentage between 0 and 100, got {}", args.confidence);
    }
    if let Some(path) = &args.chart {
        saved::chart_file(path)?;
    }
    let store = saved::open(&args.db)?;
    let runs = saved::load(&store, &args.runs)?;
    let reports: Vec<&Report> = runs.iter().map(|r| &r.0).collect();
    let options = CompareOptions {
        noise: args.noise / 100.0,
        confidence: args.confidence / 100.0,
        ..Default::default()
    };
    let cmp = compare(&reports, &options)?;
    let labels: Vec<String> = runs.iter().enumerate().map(|(i, (_, l))| label(l, i)).collect();
    let kind = reports[0].kind().name();
    let out = match args.format {
        TableFormat::Text => comparison::text(&cmp, &labels, kind),
        TableFormat::Md => comparison::markdown(&cmp, &labels, kind),
        TableFormat::Csv => comparison::table(&cmp, &labels).csv(),
        TableFormat::Json => {
            let ids: Vec<Option<i64>> = runs.iter().map(|r| r.1.id).collect();
            serde_json::to_string_pretty(&comparison::json(&cmp, &labels, &ids))? + "\n"
        }
        TableFormat::Html => {
            let refs: Vec<(&Report, RunLabel)> = runs.iter().map(|(r, l)| (r, l.clone())).collect();
            html::comparison_document(&refs, &labels, &cmp)
        }
    };
    output::write_stdout(out.as_bytes())?;
    if let Some(path) = &args.chart {
        saved::write_chart(path, &charts::comparison_charts(&reports, &labels, &cmp))?;
    }
    Ok(exit::OK)
}

/// `#12`, or `#12 lab` with a tag.
fn label(l: &RunLabel, position: usize) -> String {
    match &l.tag {
        Some(t) if !t.is_empty() => format!("{} {t}", l.short(position)),
        _ => l.short(position),
    }
}
