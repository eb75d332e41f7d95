//! `wirespeed quick`: the main job. Runs every test kind against servers started in-process on
//! loopback (`wirespeed_runner::quick`), prints one table, saves every run.

use std::io::Write;

use anyhow::{Context, Result};
use wirespeed_model::units::parse_duration;
use wirespeed_report::digest::RunLabel;
use wirespeed_report::Format;
use wirespeed_runner::quick::{self, Timing};

use crate::exit;
use crate::flags::QuickArgs;
use crate::output;

pub(super) async fn run(args: QuickArgs) -> Result<u8> {
    let time = parse_duration(&args.time).with_context(|| format!("--time {}", args.time))?;
    let store = output::open_shared_store(&args.output)?;
    let cancel = super::interrupt_token();
    let rows = quick::run(Timing::of(time), &cancel).await?;
    let reports: Vec<_> = rows.iter().filter_map(|r| r.outcome.as_ref().ok()).collect();
    let format = output::format_of(args.output.format);
    let mut out = std::io::stdout().lock();
    let labelled = || reports.iter().map(|r| (*r, RunLabel::default())).collect::<Vec<_>>();
    match format {
        Format::Text => wirespeed_report::quick::render(&rows, &mut out)?,
        // One document for all the runs, not one per run.
        Format::Markdown => {
            out.write_all(wirespeed_report::markdown::document(&labelled()).as_bytes())?
        }
        Format::Html => {
            out.write_all(wirespeed_report::html::runs_document(&labelled()).as_bytes())?
        }
        other => {
            for r in &reports {
                wirespeed_report::render_report(r, other, false, &mut out)?;
            }
        }
    }
    drop(out);
    if let Some(path) = &args.output.chart {
        // Every run's charts, one above the other, each titled with its row's name.
        let charts: Vec<_> = rows
            .iter()
            .filter_map(|r| Some((&r.name, r.outcome.as_ref().ok()?)))
            .flat_map(|(name, report)| {
                wirespeed_report::charts::run_charts(report).into_iter().map(move |mut c| {
                    c.title = format!("{name}: {}", c.title);
                    c
                })
            })
            .collect();
        if let Err(e) = crate::saved::write_chart(path, &charts) {
            eprintln!("wirespeed: warning: no chart written: {e:#}");
        }
    }
    let failed = rows.iter().any(|r| r.outcome.is_err() && !r.skipped);
    if let Err(e) = output::save(&args.output, store.as_ref(), &reports) {
        eprintln!("wirespeed: warning: results not saved: {e:#}");
        return Ok(exit::NOT_SAVED);
    }
    Ok(if cancel.is_cancelled() {
        exit::INTERRUPTED
    } else if failed {
        exit::FAILED
    } else {
        exit::OK
    })
}
