//! The history listing: one compact row per saved run, newest first.

use wirespeed_model::metrics::Unit;
use wirespeed_model::units::CivilTime;

use crate::table::Table;
use crate::units::figure;

/// What the history shows of one run (the store's listing columns).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    /// Run id.
    pub id: i64,
    /// Start, ms since the epoch.
    pub started_at_ms: i64,
    /// Test kind.
    pub kind: String,
    /// What was measured.
    pub target: String,
    /// Headline figure and its unit code, when known.
    pub headline: Option<(f64, String)>,
    /// Free-text tag.
    pub tag: Option<String>,
    /// How it ended when it did not finish (`interrupted`, `aborted`).
    pub ended: Option<String>,
}

/// `2026-12-02 10:00:00` in UTC.
pub fn utc(ms: i64) -> String {
    let t = CivilTime::from_unix(ms.div_euclid(1000));
    let (h, m, s) = t.hms;
    format!("{:04}-{:02}-{:02} {h:02}:{m:02}:{s:02}", t.year, t.month, t.day)
}

/// The headline in its unit; `-` when the run predates headlines or its unit is unknown.
fn headline(h: &Option<(f64, String)>) -> String {
    match h {
        Some((v, code)) => {
            Unit::from_code(code).map_or_else(|| format!("{v} {code}"), |u| figure(*v, u))
        }
        None => "-".into(),
    }
}

/// The rows as a table; `raw` keeps the headline unformatted, its unit in a column of its own
/// (for CSV). Takes the rows, so their text moves into the table rather than being copied (a
/// history can be 100 000 rows long).
pub fn table(rows: Vec<HistoryRow>, raw: bool) -> Table {
    let mut t = if raw {
        Table::new(&[">ID", "Started (UTC)", "Kind", "Target", ">Result", "Unit", "Tag"])
    } else {
        Table::new(&[">ID", "Started (UTC)", "Kind", "Target", ">Result", "Tag"])
    };
    t.rows.reserve(rows.len());
    for r in rows {
        let mut row = Vec::with_capacity(7);
        row.extend([r.id.to_string(), utc(r.started_at_ms)]);
        if raw {
            let (v, unit) =
                r.headline.map_or((String::new(), String::new()), |(v, u)| (v.to_string(), u));
            row.extend([r.kind, r.target, v, unit]);
        } else {
            // A cut run's figure covers only what ran: marked, so it is not read as a whole.
            let shown = match &r.ended {
                Some(how) => format!("{} ({how})", headline(&r.headline)),
                None => headline(&r.headline),
            };
            row.extend([r.kind, r.target, shown]);
        }
        row.push(r.tag.unwrap_or_default());
        t.push(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<HistoryRow> {
        vec![
            HistoryRow {
                id: 12,
                started_at_ms: 1_796_205_600_000,
                kind: "bandwidth".into(),
                target: "127.0.0.1".into(),
                headline: Some((9.41e9, "bit/s".into())),
                tag: Some("lab, rack 2".into()),
                ended: None,
            },
            HistoryRow {
                id: 3,
                started_at_ms: 1_796_100_000_000,
                kind: "dns".into(),
                target: "::1".into(),
                headline: Some((624_000.0, "q/s".into())),
                tag: None,
                ended: Some("interrupted".into()),
            },
            HistoryRow {
                id: 1,
                started_at_ms: 0,
                kind: "ping".into(),
                target: "localhost".into(),
                headline: None,
                tag: None,
                ended: None,
            },
        ]
    }

    #[test]
    fn history_text() {
        insta::assert_snapshot!(table(rows(), false).text());
    }

    #[test]
    fn history_markdown() {
        insta::assert_snapshot!(table(rows(), false).markdown());
    }

    #[test]
    fn history_csv() {
        insta::assert_snapshot!(table(rows(), true).csv());
    }
}
