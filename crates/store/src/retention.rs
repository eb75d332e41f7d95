//! The retention policy: keep at most N runs and/or none older than an age. It is a setting in
//! the database, applied after every save, and can also be applied once (`prune`).

use rusqlite::{params, OptionalExtension};

use crate::{Store, StoreError};

/// Which runs to keep. Both limits may be set; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep only the newest this many.
    pub keep: Option<u64>,
    /// Delete runs that started longer ago than this, milliseconds.
    pub max_age_ms: Option<i64>,
}

impl Retention {
    /// True when nothing is ever deleted.
    pub fn is_off(&self) -> bool {
        self.keep.is_none() && self.max_age_ms.is_none()
    }
}

const KEEP: &str = "retention.keep";
const MAX_AGE: &str = "retention.max_age_ms";

impl Store {
    /// The saved retention policy (off unless set).
    pub fn retention(&self) -> Result<Retention, StoreError> {
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
    pub fn set_retention(&self, policy: &Retention) -> Result<(), StoreError> {
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
    pub fn prune(&self, policy: &Retention, now_ms: i64) -> Result<u64, StoreError> {
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

#[cfg(test)]
mod tests {
    use crate::tests::report;
    use crate::{Retention, RunFilter, Store};

    #[test]
    fn a_saved_policy_prunes_after_each_save() {
        let s = Store::open_in_memory().unwrap();
        assert!(s.retention().unwrap().is_off());
        let policy = Retention { keep: Some(2), max_age_ms: None };
        s.set_retention(&policy).unwrap();
        assert_eq!(s.retention().unwrap(), policy);
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
                as u64;
        for i in 0..5 {
            s.save(&report(now + i, 1.0), None).unwrap();
        }
        let left: Vec<i64> =
            s.list(&RunFilter::default()).unwrap().iter().map(|r| r.started_at_ms).collect();
        assert_eq!(left, [(now + 4) as i64, (now + 3) as i64]);
        s.set_retention(&Retention::default()).unwrap();
        assert!(s.retention().unwrap().is_off());
    }

    #[test]
    fn prune_by_age_and_count() {
        let s = Store::open_in_memory().unwrap();
        for ms in [1_000, 2_000, 3_000, 4_000] {
            s.save(&report(ms, 1.0), None).unwrap();
        }
        assert_eq!(s.prune(&Retention { keep: None, max_age_ms: Some(1_500) }, 4_000).unwrap(), 2);
        assert_eq!(s.prune(&Retention { keep: Some(1), max_age_ms: None }, 4_000).unwrap(), 1);
        assert_eq!(s.list(&RunFilter::default()).unwrap()[0].started_at_ms, 4_000);
    }
}
