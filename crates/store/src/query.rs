//! Listing saved runs: a filter turned into one indexed query over the listing columns, so the
//! history never parses a report.

use rusqlite::types::Value;

use crate::{Store, StoreError};

/// One row of the history: enough to list runs without parsing their reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// Test kind.
    pub kind: String,
    /// What was measured.
    pub target: String,
    /// Start time, ms since the epoch.
    pub started_at_ms: i64,
    /// Free-text tag given at run time.
    pub tag: Option<String>,
    /// Which figure `headline` is (`throughput_bps`, `queries_per_second`, …).
    pub headline_key: Option<String>,
    /// The run's headline figure.
    pub headline: Option<f64>,
    /// Its unit's code (`bit/s`, `req/s`, `ns`, …).
    pub headline_unit: Option<String>,
}

/// Which runs to list. Empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Exactly this kind.
    pub kind: Option<String>,
    /// Target containing this text (any case).
    pub target: Option<String>,
    /// Tag containing this text (any case).
    pub tag: Option<String>,
    /// Started at or after this time, ms since the epoch.
    pub since_ms: Option<i64>,
    /// Started before this time, ms since the epoch.
    pub until_ms: Option<i64>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

impl Store {
    /// The runs `filter` matches, newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let mut sql = String::from(
            "SELECT id, kind, target, started_at_ms, tag, headline_key, headline, headline_unit FROM runs WHERE 1",
        );
        let mut args: Vec<Value> = Vec::new();
        let mut clause = |text: &str, v: Value| {
            sql.push_str(text);
            args.push(v);
        };
        if let Some(k) = &filter.kind {
            clause(" AND kind = ?", Value::Text(k.clone()));
        }
        if let Some(t) = &filter.target {
            clause(" AND instr(lower(target), lower(?)) > 0", Value::Text(t.clone()));
        }
        if let Some(t) = &filter.tag {
            clause(" AND instr(lower(coalesce(tag, '')), lower(?)) > 0", Value::Text(t.clone()));
        }
        if let Some(ms) = filter.since_ms {
            clause(" AND started_at_ms >= ?", Value::Integer(ms));
        }
        if let Some(ms) = filter.until_ms {
            clause(" AND started_at_ms < ?", Value::Integer(ms));
        }
        sql.push_str(" ORDER BY started_at_ms DESC, id DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {}", n.min(i64::MAX as usize)));
        }
        self.sql(|c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    target: r.get(2)?,
                    started_at_ms: r.get(3)?,
                    tag: r.get(4)?,
                    headline_key: r.get(5)?,
                    headline: r.get(6)?,
                    headline_unit: r.get(7)?,
                })
            })?;
            rows.collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::report;
    use crate::{RunFilter, Store};

    fn ids(s: &Store, f: RunFilter) -> Vec<i64> {
        s.list(&f).unwrap().into_iter().map(|r| r.id).collect()
    }

    #[test]
    fn filters_combine() {
        let s = Store::open_in_memory().unwrap();
        let a = s.save(&report(1000, 1.0), Some("Lab A")).unwrap();
        let b = s.save(&report(2000, 1.0), Some("lab b")).unwrap();
        let c = s.save(&report(3000, 1.0), None).unwrap();
        assert_eq!(ids(&s, RunFilter::default()), [c, b, a]);
        assert_eq!(ids(&s, RunFilter { tag: Some("LAB".into()), ..Default::default() }), [b, a]);
        assert_eq!(ids(&s, RunFilter { since_ms: Some(2000), ..Default::default() }), [c, b]);
        assert_eq!(ids(&s, RunFilter { until_ms: Some(2000), ..Default::default() }), [a]);
        assert_eq!(ids(&s, RunFilter { limit: Some(1), ..Default::default() }), [c]);
        assert_eq!(
            ids(&s, RunFilter { kind: Some("dns".into()), ..Default::default() }),
            Vec::<i64>::new()
        );
        assert_eq!(
            ids(
                &s,
                RunFilter {
                    kind: Some("bandwidth".into()),
                    target: Some("127.0".into()),
                    ..Default::default()
                }
            ),
            [c, b, a]
        );
        // Text filters are values, not SQL.
        assert!(
            ids(&s, RunFilter { tag: Some("' OR 1 --".into()), ..Default::default() }).is_empty()
        );
    }
}
