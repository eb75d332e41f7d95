//! What the subcommands on saved results share: opening the database, naming runs (`12`,
//! `last`, `last~2`), reading times and ages, and writing chart files.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use wirespeed_model::Report;
use wirespeed_report::charts::Chart;
use wirespeed_report::digest::RunLabel;
use wirespeed_store::{Location, RunFilter, Store};

use crate::flags::DbArgs;

/// A run name that matches no saved run (exit code 9).
#[derive(Debug, thiserror::Error)]
#[error("no saved run {0} (see `wirespeed history`)")]
pub(crate) struct NoSuchRun(pub String);

/// The database from `--db`, `WIRESPEED_DB` or the default location.
pub(crate) fn db_location(db: &Option<Location>) -> Result<Location> {
    match db {
        Some(l) => Ok(l.clone()),
        None => Store::default_path()
            .map(Location::File)
            .context("no data directory for the results database; pass --db PATH"),
    }
}

/// Opens the database for reading saved runs; a missing file is not created.
pub(crate) fn open(args: &DbArgs) -> Result<Store> {
    let location = db_location(&args.db)?;
    if !location.exists() {
        bail!(NoSuchRun(format!("database {location} (nothing has been saved yet)")));
    }
    Ok(Store::open_at(&location)?)
}

/// The id a run name stands for: a number, `last`, or `last~N`.
pub(crate) fn resolve_id(store: &Store, name: &str) -> Result<i64> {
    let back = match name.strip_prefix("last") {
        Some("") => 0,
        Some(rest) => match rest.strip_prefix('~').and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => bail!("bad run name {name:?}: use an id, `last` or `last~N`"),
        },
        None => {
            let id: i64 = name.parse().map_err(|_| {
                anyhow::anyhow!("bad run name {name:?}: use an id, `last` or `last~N`")
            })?;
            return Ok(id);
        }
    };
    let rows = store.list(&RunFilter { limit: Some(back + 1), ..Default::default() })?;
    rows.get(back).map(|r| r.id).ok_or_else(|| NoSuchRun(name.to_string()).into())
}

/// Loads the named runs with their labels, in the order given.
pub(crate) fn load(store: &Store, names: &[String]) -> Result<Vec<(Report, RunLabel)>> {
    names
        .iter()
        .map(|name| {
            let id = resolve_id(store, name)?;
            let report = store.get(id)?.ok_or_else(|| NoSuchRun(name.clone()))?;
            let tag = store.tag(id)?;
            Ok((report, RunLabel { id: Some(id), tag }))
        })
        .collect()
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// An age such as `30d` or `12h`, in milliseconds.
pub(crate) fn age_ms(text: &str) -> Result<i64> {
    let d = humantime::parse_duration(text).with_context(|| {
        format!("bad age {text:?}: use a number and a unit, like 12h, 7d or 30m")
    })?;
    Ok(d.as_millis().min(i64::MAX as u128) as i64)
}

/// A moment given as an age before now (`2h`) or a UTC time (`2026-12-01`, `2026-12-01T10:00:00Z`).
pub(crate) fn when_ms(text: &str) -> Result<i64> {
    if let Ok(d) = humantime::parse_duration(text) {
        return Ok(now_ms().saturating_sub(d.as_millis().min(i64::MAX as u128) as i64));
    }
    let full = if text.len() == 10 { format!("{text}T00:00:00Z") } else { text.to_string() };
    let t = humantime::parse_rfc3339_weak(full.trim_end_matches('Z'))
        .with_context(|| format!("bad time {text:?}: use an age (2h, 7d) or a UTC date/time (2026-12-01, 2026-12-01T10:00:00Z)"))?;
    Ok(t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64))
}

/// What a chart file's name asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChartFile {
    /// `.svg`
    Svg,
    /// `.png`
    Png,
}

/// The chart format of `path`, from its extension.
pub(crate) fn chart_file(path: &Path) -> Result<ChartFile> {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("svg") => Ok(ChartFile::Svg),
        Some("png") => Ok(ChartFile::Png),
        _ => bail!("--chart {}: the file name must end in .svg or .png", path.display()),
    }
}

/// Draws `charts` into `path`.
pub(crate) fn write_chart(path: &Path, charts: &[Chart]) -> Result<()> {
    let bytes = match chart_file(path)? {
        ChartFile::Svg => wirespeed_report::plot::svg(charts)?.into_bytes(),
        ChartFile::Png => wirespeed_report::plot::png(charts)?,
    };
    std::fs::write(path, bytes).with_context(|| format!("writing the chart to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_ages() {
        assert_eq!(age_ms("2h").unwrap(), 7_200_000);
        assert!(age_ms("soon").is_err());
        assert_eq!(when_ms("2026-12-02").unwrap(), 1_796_169_600_000);
        assert_eq!(when_ms("2026-12-02T10:00:00Z").unwrap(), 1_796_205_600_000);
        let ago = when_ms("1h").unwrap();
        assert!((now_ms() - ago - 3_600_000).abs() < 5_000);
        assert!(when_ms("yesterday-ish").is_err());
    }

    #[test]
    fn chart_names() {
        assert_eq!(chart_file(Path::new("a.SVG")).unwrap(), ChartFile::Svg);
        assert_eq!(chart_file(Path::new("a.png")).unwrap(), ChartFile::Png);
        assert!(chart_file(Path::new("a.jpg")).is_err());
    }
}
