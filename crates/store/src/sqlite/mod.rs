//! The embedded SQLite database, the default store: one file, versioned with SQLite's
//! `user_version` (`migrate`), in WAL mode so a process killed mid-save loses only that save.

mod migrate;
mod query;
mod retention;
mod web;

use std::path::Path;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

pub use migrate::MIGRATIONS;

use crate::members::MemberRow;
use crate::rows::NewRun;
use crate::StoreError;

/// An open SQLite results database.
#[derive(Debug)]
pub(crate) struct Sqlite {
    conn: Connection,
    path: String,
}

impl Sqlite {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|source| StoreError::Dir { path: dir.display().to_string(), source })?;
        }
        let name = path.display().to_string();
        let conn = Connection::open(path)
            .map_err(|source| StoreError::Sqlite { path: name.clone(), source })?;
        Self::init(conn, name)
    }

    /// An empty database in memory, for tests.
    pub(crate) fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory()
            .map_err(|source| StoreError::Sqlite { path: ":memory:".into(), source })?;
        Self::init(conn, ":memory:".into())
    }

    fn init(conn: Connection, path: String) -> Result<Self, StoreError> {
        let mut store = Self { conn, path };
        store.sql(|c| c.busy_timeout(std::time::Duration::from_secs(5)))?;
        // Read before writing anything: a file we must refuse stays byte for byte as it was.
        let found = store.schema_version()?;
        let known = MIGRATIONS.len() as i64;
        if found > known {
            return Err(StoreError::TooNew { path: store.path.clone(), found, known });
        }
        if found == 0 && store.has_tables()? {
            return Err(StoreError::Foreign { path: store.path.clone() });
        }
        store.sql(|c| {
            // WAL: readers never block the writer, and a crash mid-write loses only that write.
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            // Deleting a run deletes its report (ON DELETE CASCADE).
            c.pragma_update(None, "foreign_keys", true)
        })?;
        migrate::to_latest(&mut store.conn, &store.path)?;
        Ok(store)
    }

    /// Runs `f`, naming the file in any error and telling a damaged file from other failures.
    fn sql<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        f(&self.conn).map_err(|source| error(&self.path, source))
    }

    fn has_tables(&self) -> Result<bool, StoreError> {
        self.sql(|c| c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)))
            .map(|n| n > 0)
    }

    /// The schema version of the open database.
    pub(crate) fn schema_version(&self) -> Result<i64, StoreError> {
        self.sql(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
    }

    /// Where the file is.
    pub(crate) fn describe(&self) -> String {
        self.path.clone()
    }

    /// Inserts runs in one transaction (all or none); returns their ids.
    pub(crate) fn insert_runs(&self, rows: &[NewRun]) -> Result<Vec<i64>, StoreError> {
        self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            let mut ids = Vec::with_capacity(rows.len());
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO runs (kind, target, started_at_ms, version, tag, headline_key, headline, headline_unit, member_run, member_index, ended, merged_run)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )?;
                let mut insert_report = tx.prepare_cached("INSERT INTO reports (run_id, report) VALUES (?1, ?2)")?;
                let mut replace_merge = tx.prepare_cached("DELETE FROM runs WHERE merged_run = ?1")?;
                for r in rows {
                    // A run is merged into one saved run: a new merge replaces the earlier.
                    if let Some(merged) = &r.merged {
                        replace_merge.execute([merged])?;
                    }
                    insert.execute(params![
                        r.kind,
                        r.target,
                        r.started_at_ms,
                        r.version,
                        r.tag,
                        r.headline_key,
                        r.headline,
                        r.headline_unit,
                        r.member.as_ref().map(|m| &m.0),
                        r.member.as_ref().map(|m| m.1),
                        r.ended,
                        r.merged
                    ])?;
                    let id = tx.last_insert_rowid();
                    insert_report.execute(params![id, r.json])?;
                    ids.push(id);
                }
            }
            tx.commit()?;
            Ok(ids)
        })
    }

    /// The saved JSON of run `id`'s report.
    pub(crate) fn report_json(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.sql(|c| {
            c.query_row("SELECT report FROM reports WHERE run_id = ?1", [id], |r| r.get(0))
                .optional()
        })
    }

    /// The tag of run `id` (`None` without one, or without the run).
    pub(crate) fn tag(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.sql(|c| {
            c.query_row("SELECT tag FROM runs WHERE id = ?1", [id], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map(Option::flatten)
        })
    }

    /// Deletes the runs `ids`; returns those that were not there.
    pub(crate) fn remove(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            let mut missing = Vec::new();
            {
                let mut stmt = tx.prepare("DELETE FROM runs WHERE id = ?1")?;
                for &id in ids {
                    if stmt.execute([id])? == 0 {
                        missing.push(id);
                    }
                }
            }
            tx.commit()?;
            Ok(missing)
        })
    }

    /// The saved run merged from member run `run_id`, if any.
    pub(crate) fn merge_of(&self, run_id: &str) -> Result<Option<i64>, StoreError> {
        self.sql(|c| {
            c.query_row("SELECT max(id) FROM runs WHERE merged_run = ?1", [run_id], |r| r.get(0))
        })
    }

    /// The saved reports of run `run_id`'s members, by index.
    pub(crate) fn member_rows(&self, run_id: &str) -> Result<Vec<MemberRow>, StoreError> {
        self.sql(|c| {
            let mut stmt = c.prepare(
                "SELECT runs.id, runs.member_index, reports.report FROM runs
                 JOIN reports ON reports.run_id = runs.id
                 WHERE runs.member_run = ?1 ORDER BY runs.member_index, runs.id",
            )?;
            let rows = stmt.query_map([run_id], |r| {
                Ok(MemberRow { id: r.get(0)?, index: r.get::<_, i64>(1)? as u32, json: r.get(2)? })
            })?;
            rows.collect()
        })
    }

    /// The run ids members saved reports under.
    pub(crate) fn member_run_ids(&self) -> Result<Vec<String>, StoreError> {
        self.sql(|c| {
            let mut stmt = c.prepare(
                "SELECT DISTINCT member_run FROM runs WHERE member_run IS NOT NULL ORDER BY 1",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// How many runs are saved.
    pub(crate) fn count(&self) -> Result<u64, StoreError> {
        self.sql(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
    }
}

/// A rusqlite error on `path`, with damaged files told apart.
pub(super) fn error(path: &str, source: rusqlite::Error) -> StoreError {
    match source.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::NotADatabase { path: path.to_string() }
        }
        _ => StoreError::Sqlite { path: path.to_string(), source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::report;
    use crate::{RunFilter, Store};

    #[test]
    fn reopening_a_file_keeps_runs_and_skips_done_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/results.db");
        let id = Store::open(&path).unwrap().save(&report(5, 1.0), None).unwrap();
        let again = Store::open(&path).unwrap();
        assert_eq!(again.get(id).unwrap().unwrap(), report(5, 1.0));
        let mode: String = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    /// The bytes of every file of the database (main file, WAL, shared memory).
    fn snapshot(path: &Path) -> Vec<(String, Vec<u8>)> {
        let dir = path.parent().unwrap();
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    }

    #[test]
    fn a_newer_schema_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        Store::open(&path).unwrap().save(&report(1, 1.0), None).unwrap();
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        drop(c);
        let before = snapshot(&path);
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
        assert!(err.to_string().contains("newer than this wirespeed"), "{err}");
        assert_eq!(snapshot(&path), before);
    }

    #[test]
    fn a_corrupt_file_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        std::fs::write(&path, b"this is not a database, it is a shopping list\n".repeat(200))
            .unwrap();
        let before = snapshot(&path);
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::NotADatabase { .. }), "{err}");
        assert_eq!(snapshot(&path), before);
    }

    #[test]
    fn a_damaged_page_is_reported_not_panicked_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        {
            let s = Store::open(&path).unwrap();
            for i in 0..200 {
                s.save(&report(i, 1.0), None).unwrap();
            }
            Connection::open(&path)
                .unwrap()
                .pragma_update(None, "wal_checkpoint", "TRUNCATE")
                .unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        // Keep the header (so it is still SQLite), scribble over the pages after it.
        for b in &mut bytes[4096..] {
            *b = 0xA5;
        }
        std::fs::write(&path, &bytes).unwrap();
        let outcome = Store::open(&path).and_then(|s| s.list(&RunFilter::default()));
        let err = outcome.unwrap_err();
        assert!(matches!(err, StoreError::NotADatabase { .. }), "{err}");
    }

    #[test]
    fn another_programs_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        Connection::open(&path).unwrap().execute_batch("CREATE TABLE notes (t TEXT)").unwrap();
        let before = snapshot(&path);
        assert!(matches!(Store::open(&path), Err(StoreError::Foreign { .. })));
        assert_eq!(snapshot(&path), before);
    }
}
