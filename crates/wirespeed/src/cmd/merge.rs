//! `wirespeed merge`: the reports of a run's members — from the shared database by run id,
//! from SQLite files, or from JSON reports — merged into the one report of the whole run
//! ([`wirespeed_model::merge`]), printed like a run that just finished, and saved.

use std::path::Path;

use anyhow::{bail, Context, Result};
use wirespeed_model::merge::MergeError;
use wirespeed_model::Report;
use wirespeed_store::Store;

use crate::flags::MergeArgs;
use crate::{exit, output, saved};

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

pub(super) fn run(args: MergeArgs) -> Result<u8> {
    let mut reports: Vec<(String, Report)> = Vec::new();
    let mut aborted = None;
    if args.sources.is_empty() {
        let Some(run_id) = &args.run_id else {
            bail!(
                "name the run (--run-id ID) to merge from the database, or give the members' files"
            );
        };
        let location = saved::db_location(&args.output.db)?;
        let store = Store::open_at(&location)?;
        reports.extend(from_store(&store, &location.to_string(), run_id)?);
        if let Some(state) = store.run_state(run_id)? {
            if state.is_aborted() {
                aborted = Some(state.reason.unwrap_or_default());
            }
        }
        if reports.is_empty() {
            bail!(saved::NoSuchRun(format!(
                "of run {run_id:?}: no member saved a report in {location}"
            )));
        }
    } else {
        for path in &args.sources {
            reports.extend(from_file(path, args.run_id.as_deref())?);
        }
    }
    if let Some(reason) = &aborted {
        if !args.allow_partial {
            return Err(MergeError::Mismatch(format!(
                "the run was aborted ({reason}); merge what was saved with --allow-partial"
            ))
            .into());
        }
    }
    let mut merged = wirespeed_model::merge::merge(&reports, args.allow_partial)?;
    if let Some(reason) = aborted {
        merged.meta.notes.push(format!("ABORTED: {reason}"));
        if let Some(m) = merged.meta.merged.as_mut() {
            m.partial = true;
        }
    }
    if let Some(m) = &merged.meta.merged {
        merged.meta.notes.push(format!(
            "merged {} of {} members of run {:?}; their starts were {} apart",
            m.merged.len(),
            m.members,
            m.run_id,
            wirespeed_runner::member::human_ns(m.start_skew_ns)
        ));
    }
    let mut out = Vec::new();
    wirespeed_report::render_report(
        &merged,
        output::format_of(args.output.format),
        output::color(),
        &mut out,
    )?;
    output::write_stdout(&out)?;
    if let Some(path) = &args.output.chart {
        saved::write_chart(path, &wirespeed_report::charts::run_charts(&merged))?;
    }
    if let Err(e) = save(&args.output, &merged) {
        eprintln!("wirespeed: warning: the merged run was not saved: {e:#}");
        return Ok(exit::NOT_SAVED);
    }
    Ok(exit::OK)
}

/// Saves the merged run; a run merged and saved before is replaced (a run is listed once),
/// and the user told which.
fn save(output: &crate::flags::OutputArgs, merged: &Report) -> Result<()> {
    if output.no_save {
        return Ok(());
    }
    let store = Store::open_at(&saved::db_location(&output.db)?)?;
    let run_id = merged.meta.merged.as_ref().map(|m| m.run_id.as_str());
    let earlier = match run_id {
        Some(run_id) => store.merge_of(run_id)?,
        None => None,
    };
    let saved = output::save(output, Some(&store), &[merged])?;
    if let (Some(earlier), Some(id)) = (earlier, saved.first()) {
        eprintln!(
            "wirespeed: run {:?} was merged before: its merge is now run {id}, in place of run \
             {earlier}",
            run_id.unwrap_or_default()
        );
    }
    Ok(())
}

/// The reports of run `run_id`'s members saved in `store`, named by where they came from.
fn from_store(store: &Store, name: &str, run_id: &str) -> Result<Vec<(String, Report)>> {
    store
        .member_rows(run_id)?
        .into_iter()
        .map(|row| {
            let report = serde_json::from_str(&row.json)
                .with_context(|| format!("{name}: saved run {} does not parse", row.id))?;
            Ok((format!("{name} run {} (member {})", row.id, row.index), report))
        })
        .collect()
}

/// The member reports in one file: an SQLite results file, or JSON (one report, or a list as
/// `wirespeed export` writes).
fn from_file(path: &Path, run_id: Option<&str>) -> Result<Vec<(String, Report)>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path.display().to_string();
    if bytes.starts_with(SQLITE_HEADER) {
        let store = Store::open(path)?;
        let ids = match run_id {
            Some(id) => vec![id.to_string()],
            None => store.member_run_ids()?,
        };
        if ids.len() > 1 {
            bail!(
                "{name} holds members of several runs ({}): choose one with --run-id",
                ids.join(", ")
            );
        }
        let mut found = Vec::new();
        for id in &ids {
            found.extend(from_store(&store, &name, id)?);
        }
        if found.is_empty() {
            let which = run_id.map(|r| format!(" of run {r:?}")).unwrap_or_default();
            bail!("{name} holds no member's report{which}");
        }
        return Ok(found);
    }
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{name} is neither a JSON report nor an SQLite results file"))?;
    let reports: Vec<serde_json::Value> = match value {
        serde_json::Value::Array(items) => {
            items.into_iter().map(|i| i.get("report").cloned().unwrap_or(i)).collect()
        }
        one => vec![one],
    };
    reports
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let report: Report = serde_json::from_value(v)
                .with_context(|| format!("{name}: item {i} is not a wirespeed report"))?;
            Ok((name.clone(), report))
        })
        .filter(|r| match (r, run_id) {
            (Ok((_, report)), Some(id)) => {
                report.meta.member.as_ref().is_none_or(|m| m.member.run_id == id)
            }
            _ => true,
        })
        .collect()
}
