//! Listing saved runs: a filter turned into one indexed query over the listing columns, so the
//! history never parses a report.

use rusqlite::types::Value;

use super::Sqlite;
use crate::rows::{RunFilter, RunRow};
use crate::StoreError;

impl Sqlite {
    /// The runs `filter` matches, newest first.
    pub(crate) fn list(&self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let mut sql = String::from(
            "SELECT id, kind, target, started_at_ms, tag, headline_key, headline, headline_unit, ended FROM runs WHERE 1",
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
                    ended: r.get(8)?,
                })
            })?;
            rows.collect()
        })
    }
}
