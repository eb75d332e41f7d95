//! `wirespeed history`: saved runs, newest first, as a compact table.

use std::io::Write;

use anyhow::Result;
use wirespeed_report::history::{self, HistoryRow};
use wirespeed_store::RunFilter;

use crate::exit;
use crate::flags::{HistoryArgs, TableFormat};
use crate::saved;

/// Lists the runs the filters match.
pub(super) fn run(args: HistoryArgs) -> Result<u8> {
    if args.format == TableFormat::Html {
        anyhow::bail!(
            "history has no html format; use `wirespeed export RUN... -f html` for a report"
        );
    }
    let filter = RunFilter {
        kind: args.kind.clone(),
        target: args.target.clone(),
        tag: args.tag.clone(),
        since_ms: args.since.as_deref().map(saved::when_ms).transpose()?,
        until_ms: args.until.as_deref().map(saved::when_ms).transpose()?,
        limit: (args.limit > 0).then_some(args.limit),
    };
    let location = saved::db_location(&args.db.db)?;
    // No database yet is an empty history, not an error.
    let rows = if location.exists() {
        wirespeed_store::Store::open_at(&location)?.list(&filter)?
    } else {
        Vec::new()
    };
    let rows: Vec<HistoryRow> = rows
        .into_iter()
        .map(|r| HistoryRow {
            id: r.id,
            started_at_ms: r.started_at_ms,
            kind: r.kind,
            target: r.target,
            headline: r.headline.zip(r.headline_unit),
            tag: r.tag,
            ended: r.ended,
        })
        .collect();
    let out = match args.format {
        TableFormat::Text if rows.is_empty() => "no saved runs match\n".to_string(),
        TableFormat::Text => history::table(rows, false).text(),
        TableFormat::Md => history::table(rows, false).markdown(),
        TableFormat::Csv => history::table(rows, true).csv(),
        TableFormat::Json | TableFormat::Html => {
            let list: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "id": r.id,
                        "started_at_ms": r.started_at_ms,
                        "started_at": history::utc(r.started_at_ms),
                        "kind": r.kind,
                        "target": r.target,
                        "headline": r.headline.as_ref().map(|h| h.0),
                        "headline_unit": r.headline.as_ref().map(|h| &h.1),
                        "tag": r.tag,
                        "ended": r.ended,
                    })
                })
                .collect();
            serde_json::to_string_pretty(&list)? + "\n"
        }
    };
    crate::output::write_stdout(out.as_bytes())?;
    let _ = std::io::stdout().flush();
    Ok(exit::OK)
}
