//! Saved runs on PostgreSQL: saving, reading, listing, removing, and the retention policy, with
//! the SQLite store's semantics (the same order, the same case-insensitive filters, the same
//! all-or-none saves).

use postgres::types::ToSql;

use super::Postgres;
use crate::rows::{NewRun, Retention, RunFilter, RunRow};
use crate::StoreError;

/// Serialises saves and pruning across every process on the database, so a retention policy
/// applied by one never races another's insert (any fixed number; "ws-runs!").
const RUNS_LOCK: i64 = 0x7773_2d72_756e_7321;

const KEEP: &str = "retention.keep";
const MAX_AGE: &str = "retention.max_age_ms";

/// A query parameter that can be moved to the connection's thread.
#[derive(Debug, Clone)]
pub(super) enum Arg {
    Text(String),
    Int(i64),
}

impl Arg {
    pub(super) fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Self::Text(t) => t,
            Self::Int(n) => n,
        }
    }
}

/// `text` as PostgreSQL can store it: its `text` type cannot hold a NUL character (SQLite's can),
/// so one becomes U+FFFD. Only listing columns pass through here; a report is stored as JSON,
/// where a NUL is the escape `\u0000`, and comes back whole.
pub(super) fn storable(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

impl Postgres {
    /// The schema version of the open database.
    pub(crate) fn schema_version(&self) -> Result<i64, StoreError> {
        self.call(|c| c.query_one("SELECT version FROM wirespeed.schema_version", &[])?.try_get(0))
    }

    /// Inserts runs in one transaction (all or none); returns their ids.
    pub(crate) fn insert_runs(&self, rows: &[NewRun]) -> Result<Vec<i64>, StoreError> {
        let rows: Vec<NewRun> = rows
            .iter()
            .map(|r| NewRun {
                kind: storable(&r.kind),
                target: storable(&r.target),
                version: storable(&r.version),
                tag: r.tag.as_deref().map(storable),
                ..r.clone()
            })
            .collect();
        self.call(move |c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&RUNS_LOCK])?;
            let insert = tx.prepare(
                "INSERT INTO runs (kind, target, started_at_ms, version, tag, headline_key, headline, headline_unit, member_run, member_index, ended, merged_run)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
            )?;
            let insert_report =
                tx.prepare("INSERT INTO reports (run_id, report) VALUES ($1, $2::text::json)")?;
            let replace_merge = tx.prepare("DELETE FROM runs WHERE merged_run = $1")?;
            let mut ids = Vec::with_capacity(rows.len());
            for r in &rows {
                // A run is merged into one saved run: a new merge replaces the earlier.
                let merged = r.merged.as_deref().map(storable);
                if let Some(merged) = &merged {
                    tx.execute(&replace_merge, &[merged])?;
                }
                let id: i64 = tx
                    .query_one(
                        &insert,
                        &[
                            &r.kind,
                            &r.target,
                            &r.started_at_ms,
                            &r.version,
                            &r.tag,
                            &r.headline_key,
                            &r.headline,
                            &r.headline_unit,
                            &r.member.as_ref().map(|m| storable(&m.0)),
                            &r.member.as_ref().map(|m| m.1 as i32),
                            &r.ended,
                            &merged,
                        ],
                    )?
                    .try_get(0)?;
                tx.execute(&insert_report, &[&id, &r.json])?;
                ids.push(id);
            }
            tx.commit()?;
            Ok(ids)
        })
    }

    /// The saved JSON of run `id`'s report.
    pub(crate) fn report_json(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.call(move |c| {
            c.query_opt("SELECT report::text FROM reports WHERE run_id = $1", &[&id])?
                .map(|r| r.try_get(0))
                .transpose()
        })
    }

    /// The tag of run `id` (`None` without one, or without the run).
    pub(crate) fn tag(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.call(move |c| {
            Ok(c.query_opt("SELECT tag FROM runs WHERE id = $1", &[&id])?
                .map(|r| r.try_get::<_, Option<String>>(0))
                .transpose()?
                .flatten())
        })
    }

    /// Deletes the runs `ids`; returns those that were not there.
    pub(crate) fn remove(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        let ids = ids.to_vec();
        self.call(move |c| {
            let mut tx = c.transaction()?;
            let delete = tx.prepare("DELETE FROM runs WHERE id = $1")?;
            let mut missing = Vec::new();
            for &id in &ids {
                if tx.execute(&delete, &[&id])? == 0 {
                    missing.push(id);
                }
            }
            tx.commit()?;
            Ok(missing)
        })
    }

    /// The saved run merged from member run `run_id`, if any.
    pub(crate) fn merge_of(&self, run_id: &str) -> Result<Option<i64>, StoreError> {
        let run_id = storable(run_id);
        self.call(move |c| {
            c.query_one("SELECT max(id) FROM runs WHERE merged_run = $1", &[&run_id])?.try_get(0)
        })
    }

    /// How many runs are saved.
    pub(crate) fn count(&self) -> Result<u64, StoreError> {
        self.call(|c| {
            Ok(c.query_one("SELECT count(*) FROM runs", &[])?.try_get::<_, i64>(0)? as u64)
        })
    }

    /// The runs `filter` matches, newest first.
    pub(crate) fn list(&self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let mut sql = String::from(
            "SELECT id, kind, target, started_at_ms, tag, headline_key, headline, headline_unit, ended FROM runs WHERE true",
        );
        let mut args = Vec::new();
        let mut clause = |text: &str, arg: Arg| {
            args.push(arg);
            sql.push_str(&text.replace('?', &format!("${}", args.len())));
        };
        if let Some(k) = &filter.kind {
            clause(" AND kind = ?", Arg::Text(k.clone()));
        }
        // strpos, not LIKE: the text is matched as it is, `%` and `_` included.
        if let Some(t) = &filter.target {
            clause(" AND strpos(lower(target), lower(?)) > 0", Arg::Text(t.clone()));
        }
        if let Some(t) = &filter.tag {
            clause(" AND strpos(lower(coalesce(tag, '')), lower(?)) > 0", Arg::Text(t.clone()));
        }
        if let Some(ms) = filter.since_ms {
            clause(" AND started_at_ms >= ?", Arg::Int(ms));
        }
        if let Some(ms) = filter.until_ms {
            clause(" AND started_at_ms < ?", Arg::Int(ms));
        }
        sql.push_str(" ORDER BY started_at_ms DESC, id DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {}", n.min(i64::MAX as usize)));
        }
        self.call(move |c| {
            let params: Vec<_> = args.iter().map(Arg::as_sql).collect();
            c.query(&sql, &params)?
                .iter()
                .map(|r| {
                    Ok(RunRow {
                        id: r.try_get(0)?,
                        kind: r.try_get(1)?,
                        target: r.try_get(2)?,
                        started_at_ms: r.try_get(3)?,
                        tag: r.try_get(4)?,
                        headline_key: r.try_get(5)?,
                        headline: r.try_get(6)?,
                        headline_unit: r.try_get(7)?,
                        ended: r.try_get(8)?,
                    })
                })
                .collect()
        })
    }

    /// The saved retention policy (off unless set).
    pub(crate) fn retention(&self) -> Result<Retention, StoreError> {
        self.call(|c| {
            let mut get = |name: &str| -> Result<Option<i64>, postgres::Error> {
                Ok(c.query_opt("SELECT value FROM settings WHERE name = $1", &[&name])?
                    .map(|r| r.try_get::<_, String>(0))
                    .transpose()?
                    .and_then(|v| v.parse().ok()))
            };
            let keep = get(KEEP)?.map(|n| n.max(0) as u64);
            Ok(Retention { keep, max_age_ms: get(MAX_AGE)? })
        })
    }

    /// Saves the retention policy; a `None` limit is removed.
    pub(crate) fn set_retention(&self, policy: &Retention) -> Result<(), StoreError> {
        let policy = *policy;
        self.call(move |c| {
            let mut tx = c.transaction()?;
            for (name, value) in [
                (KEEP, policy.keep.map(|n| n.min(i64::MAX as u64) as i64)),
                (MAX_AGE, policy.max_age_ms),
            ] {
                match value {
                    Some(v) => tx.execute(
                        "INSERT INTO settings (name, value) VALUES ($1, $2)
                         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        &[&name, &v.to_string()],
                    )?,
                    None => tx.execute("DELETE FROM settings WHERE name = $1", &[&name])?,
                };
            }
            tx.commit()
        })
    }

    /// Deletes the runs `policy` does not keep at `now_ms`; returns how many went.
    pub(crate) fn prune(&self, policy: &Retention, now_ms: i64) -> Result<u64, StoreError> {
        let policy = *policy;
        self.call(move |c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&RUNS_LOCK])?;
            let mut gone = 0;
            if let Some(age) = policy.max_age_ms {
                gone += tx.execute(
                    "DELETE FROM runs WHERE started_at_ms < $1",
                    &[&now_ms.saturating_sub(age)],
                )?;
            }
            if let Some(keep) = policy.keep {
                gone += tx.execute(
                    "DELETE FROM runs WHERE id IN
                       (SELECT id FROM runs ORDER BY started_at_ms DESC, id DESC OFFSET $1)",
                    &[&(keep.min(i64::MAX as u64) as i64)],
                )?;
            }
            tx.commit()?;
            Ok(gone)
        })
    }
}
