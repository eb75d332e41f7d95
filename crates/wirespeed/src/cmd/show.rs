//! `wirespeed show` and `wirespeed export`: saved runs printed as if they had just run, or
//! written out as one document.

use std::path::Path;

use anyhow::{Context, Result};
use wirespeed_model::compare::median;
use wirespeed_model::Report;
use wirespeed_report::digest::RunLabel;
use wirespeed_report::table::Table;

use crate::exit;
use crate::flags::{ExportArgs, ExportFormat, FormatArg, ShowArgs};
use crate::{output, saved};

/// Prints one saved run in the format asked for.
pub(super) fn show(args: ShowArgs) -> Result<u8> {
    if args.format == FormatArg::Vegeta {
        anyhow::bail!(
            "--format vegeta needs every request's result, which a saved run does not keep"
        );
    }
    if let Some(path) = &args.chart {
        saved::chart_file(path)?;
    }
    let store = saved::open(&args.db)?;
    let (report, label) = saved::load(&store, std::slice::from_ref(&args.run))?.remove(0);
    let mut out = Vec::new();
    match args.format {
        // The documents name the run by its id and tag, which a live run did not know yet.
        FormatArg::Md => {
            out = wirespeed_report::markdown::document(&[(&report, label)]).into_bytes()
        }
        FormatArg::Html => {
            out = wirespeed_report::html::runs_document(&[(&report, label)]).into_bytes()
        }
        f => wirespeed_report::render_report(
            &report,
            output::format_of(f),
            output::color(),
            &mut out,
        )?,
    }
    output::write_stdout(&out)?;
    if let Some(path) = &args.chart {
        saved::write_chart(path, &wirespeed_report::charts::run_charts(&report))?;
    }
    Ok(exit::OK)
}

/// Writes saved runs out as one document.
pub(super) fn export(args: ExportArgs) -> Result<u8> {
    let store = saved::open(&args.db)?;
    let runs = saved::load(&store, &args.runs)?;
    let refs: Vec<(&Report, RunLabel)> = runs.iter().map(|(r, l)| (r, l.clone())).collect();
    let doc = match args.format {
        ExportFormat::Json => {
            let list: Vec<serde_json::Value> = runs
                .iter()
                .map(|(r, l)| serde_json::json!({ "id": l.id, "tag": l.tag, "report": r }))
                .collect();
            serde_json::to_string_pretty(&list)? + "\n"
        }
        ExportFormat::Csv => figures_table(&runs).csv(),
        ExportFormat::Md => wirespeed_report::markdown::document(&refs),
        ExportFormat::Html => wirespeed_report::html::runs_document(&refs),
        ExportFormat::OpenMetrics => wirespeed_report::openmetrics::runs(&refs),
    };
    match &args.output {
        Some(path) => write_file(path, doc.as_bytes())?,
        None => output::write_stdout(doc.as_bytes())?,
    }
    Ok(exit::OK)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// One row per run and figure, numbers unformatted: what a spreadsheet wants.
fn figures_table(runs: &[(Report, RunLabel)]) -> Table {
    let mut t = Table::new(&[
        "id",
        "kind",
        "target",
        "started_at",
        "tag",
        "figure",
        "unit",
        "value",
        "interval_median",
        "interval_min",
        "interval_max",
        "intervals",
    ]);
    for (r, label) in runs {
        for m in r.metrics() {
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let s = &m.samples;
            t.push(vec![
                label.id.map_or(String::new(), |i| i.to_string()),
                r.kind().name().into(),
                r.target().into(),
                r.meta.start_time.clone(),
                label.tag.clone().unwrap_or_default(),
                m.key.into(),
                m.unit.code().into(),
                m.value.to_string(),
                opt((!s.is_empty()).then(|| median(s))),
                opt(s.iter().copied().reduce(f64::min)),
                opt(s.iter().copied().reduce(f64::max)),
                s.len().to_string(),
            ]);
        }
    }
    t
}
