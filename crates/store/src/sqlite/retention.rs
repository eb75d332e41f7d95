//! The retention policy: keep at most N runs and/or none older than an age. It is a setting in
//! the database, applied after every save, and can also be applied once (`prune`).

use rusqlite::{params, OptionalExtension};

use super::Sqlite;
use crate::rows::Retention;
use crate::StoreError;

const KEEP: &str = "retention.keep";
const MAX_AGE: &str = "retention.max_age_ms";

impl Sqlite {
    /// The saved retention policy (off unless set).
    pub(crate) fn retention(&self) -> Result<Retention, StoreError> {
        let get = |name: &str| -> Result<Option<i64>, StoreError> {
            let v: Option<String> = self.sql(|c| {
                c.query_row("SELECT value FROM settings WHERE name = ?1", [name], |r| r.get(0))
                    .optional()
            })?;
            Ok(v.and_then(|v| v.parse().ok()))
        };
        Ok(Retention { keep: get(KEEP)?.map(|n| n.max(0) as u64), max_age_ms: get(MAX_AGE)? })
    }

    /// Saves `policy`, replacing the previous one.
    pub(crate) fn set_retention(&self, policy: &Retention) -> Result<(), StoreError> {
        self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            for (name, value) in
                [(KEEP, policy.keep.map(|n| n as i64)), (MAX_AGE, policy.max_age_ms)]
            {
                match value {
                    Some(v) => tx.execute(
                        "INSERT INTO settings (name, value) VALUES (?1, ?2)
                         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        params![name, v.to_string()],
                    )?,
                    None => tx.execute("DELETE FROM settings WHERE name = ?1", [name])?,
                };
            }
            tx.commit()
        })
    }

    /// Deletes what `policy` does not keep, as of `now_ms`; returns how many runs went.
    pub(crate) fn prune(&self, policy: &Retention, now_ms: i64) -> Result<u64, StoreError> {
        self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            let mut gone = 0;
            if let Some(age) = policy.max_age_ms {
                gone += tx.execute(
                    "DELETE FROM runs WHERE started_at_ms < ?1",
                    [now_ms.saturating_sub(age)],
                )?;
            }
            if let Some(keep) = policy.keep {
                gone += tx.execute(
                    "DELETE FROM runs WHERE id NOT IN
                       (SELECT id FROM runs ORDER BY started_at_ms DESC, id DESC LIMIT ?1)",
                    [keep.min(i64::MAX as u64) as i64],
                )?;
            }
            tx.commit()?;
            Ok(gone as u64)
        })
    }
}
