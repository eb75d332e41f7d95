//! Flags of the subcommands that read saved results: history, show, export, rm, retention and
//! compare. A run is named by its id, or `last` (the newest) and `last~N` (N before it).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use wirespeed_store::Location;

use super::FormatArg;

/// The results database, for subcommands that only read or tidy it.
#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    /// Results database: an SQLite file (default: the user's data directory,
    /// wirespeed/results.db) or a shared PostgreSQL one (postgres://USER@HOST/DB).
    #[arg(long, value_name = "PATH|URL", env = "WIRESPEED_DB")]
    pub db: Option<Location>,
}

/// Formats of a listing or a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TableFormat {
    /// Aligned columns.
    Text,
    /// One JSON document.
    Json,
    /// Comma-separated rows, numbers unformatted.
    Csv,
    /// A Markdown table.
    #[value(alias = "markdown")]
    Md,
    /// A self-contained HTML page with charts (compare; for runs, `export -f html`).
    Html,
}

/// Formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// A JSON array of `{id, tag, report}`: every number the runs kept.
    Json,
    /// One row per run and figure (value, interval median, min, max), for spreadsheets.
    Csv,
    /// A Markdown document: each run's facts, key figures, intervals and options.
    #[value(alias = "markdown")]
    Md,
    /// A self-contained HTML page: the Markdown's tables plus interactive charts.
    Html,
    /// OpenMetrics text: each run's figures as gauges in base units, for a Prometheus
    /// Pushgateway (curl --data-binary @FILE URL/metrics/job/NAME) or a textfile collector.
    #[value(name = "openmetrics")]
    OpenMetrics,
}

/// `wirespeed history`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// Only runs of this kind (pps runs are bandwidth runs).
    #[arg(short, long,
          value_parser = clap::builder::PossibleValuesParser::new(wirespeed_model::kind::Kind::ALL.iter().map(|k| k.name())))]
    pub kind: Option<String>,
    /// Only runs whose target contains this text (any case).
    #[arg(long)]
    pub target: Option<String>,
    /// Only runs whose tag contains this text (any case).
    #[arg(long)]
    pub tag: Option<String>,
    /// Only runs started at or after this: an age (2h, 7d) or a UTC time (2026-12-01, 2026-12-01T10:00:00Z).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only runs started before this: an age or a UTC time, as for --since.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Show at most this many runs, newest first (0: all).
    #[arg(short = 'n', long, default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `wirespeed show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The run: its id, `last`, or `last~N`.
    pub run: String,
    /// Output format, as for the test itself.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Also draw the run's charts into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `wirespeed export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The runs: ids, `last`, or `last~N`.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `wirespeed rm`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["runs", "keep", "older_than"])))]
pub(crate) struct RmArgs {
    /// The runs to delete: ids, `last`, or `last~N`.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// Or: delete all but the newest N runs.
    #[arg(long, value_name = "N")]
    pub keep: Option<u64>,
    /// Or: delete runs started longer ago than this (e.g. 30d, 12h).
    #[arg(long, value_name = "AGE")]
    pub older_than: Option<String>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `wirespeed retention`.
#[derive(Debug, Args)]
pub(crate) struct RetentionArgs {
    /// Keep only the newest N runs (applied after every save; at least 1).
    #[arg(long, value_name = "N", conflicts_with = "off", value_parser = standing_keep)]
    pub keep: Option<u64>,
    /// Delete runs older than this after every save (e.g. 90d; more than 0).
    #[arg(long, value_name = "AGE", conflicts_with = "off", value_parser = standing_age)]
    pub max_age: Option<String>,
    /// Keep everything (the default).
    #[arg(long)]
    pub off: bool,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `wirespeed compare`.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The runs, baseline first: ids, `last`, or `last~N`.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,
    /// Changes smaller than this are noise (percent).
    #[arg(long, default_value_t = 1.0, value_name = "PERCENT")]
    pub noise: f64,
    /// Confidence level of the intervals (percent).
    #[arg(long, default_value_t = 95.0, value_name = "PERCENT")]
    pub confidence: f64,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
    /// Also draw the comparison's charts into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// A standing `--keep`: 0 would delete every run the moment it was saved.
fn standing_keep(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("0 would delete every run as soon as it is saved; keep at least 1 \
                      (`--off` keeps everything, `wirespeed rm --keep 0` deletes all once)"
            .into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a whole number of runs")),
    }
}

/// A standing `--max-age`: a zero age would delete every run the moment it was saved.
fn standing_age(text: &str) -> Result<String, String> {
    match humantime::parse_duration(text) {
        Ok(d) if d.is_zero() => Err("a zero age would delete every run as soon as it is saved \
                                     (`--off` keeps everything)"
            .into()),
        Ok(_) => Ok(text.to_string()),
        Err(_) => Err(format!("{text:?}: use a number and a unit, like 12h, 7d or 30m")),
    }
}
