//! The results store: the only crate with SQL. Every run's [`Report`] is saved whole, as JSON,
//! next to the columns that history queries filter and list on (kind, target, time, tag and the
//! headline figure). The schema is versioned with SQLite's `user_version` (`migrate`); the
//! database runs in WAL mode, so a process killed mid-save loses only that save.
//!
//! Opening never writes to a file it does not recognise: a corrupt file, another program's
//! database and one from a newer wirespeed are refused before anything is changed.

mod migrate;
mod query;
mod retention;
mod web;

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};
use wirespeed_model::Report;

pub use migrate::MIGRATIONS;
pub use query::{RunFilter, RunRow};
pub use retention::Retention;
pub use web::{WebFilter, WebPolicy};

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (file unreadable, disk full, locked).
    #[error("results database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database's directory could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        /// The directory.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not an SQLite database, or is damaged.
    #[error("{path} is not a readable results database (corrupt, or not SQLite); it was left as it is — move it away or pass another --db")]
    NotADatabase {
        /// The file.
        path: String,
    },
    /// The file is an SQLite database of some other program.
    #[error("{path} is an SQLite database, but not wirespeed's (it has other tables); it was left as it is")]
    Foreign {
        /// The file.
        path: String,
    },
    /// A saved report no longer parses (written by an incompatible version, or edited).
    #[error("saved run {id} cannot be read: {source}")]
    Corrupt {
        /// The run.
        id: i64,
        /// Why.
        source: serde_json::Error,
    },
    /// The database was written by a newer wirespeed.
    #[error("{path} is at schema version {found}, newer than this wirespeed understands ({known}); it was left as it is — upgrade wirespeed to read it")]
    TooNew {
        /// The file.
        path: String,
        /// Version in the file.
        found: i64,
        /// Newest version known here.
        known: i64,
    },
}

/// An open results database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: String,
}

impl Store {
    /// The default location: `$XDG_DATA_HOME/wirespeed/results.db` (or the platform's equivalent).
    pub fn default_path() -> Option<PathBuf> {
        Some(dirs::data_dir()?.join("wirespeed").join("results.db"))
    }

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
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
    pub fn open_in_memory() -> Result<Self, StoreError> {
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
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.sql(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
    }

    /// Saves a finished run in one transaction, then applies the retention policy; returns its id.
    pub fn save(&self, report: &Report, tag: Option<&str>) -> Result<i64, StoreError> {
        Ok(self.save_all(&[(report, tag)])?[0])
    }

    /// Saves runs in one transaction (all or none), then applies the retention policy once;
    /// returns their ids.
    pub fn save_all(&self, runs: &[(&Report, Option<&str>)]) -> Result<Vec<i64>, StoreError> {
        let rows = runs
            .iter()
            .map(|(r, tag)| {
                Ok((
                    *r,
                    *tag,
                    serde_json::to_string(r)
                        .map_err(|source| StoreError::Corrupt { id: 0, source })?,
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let ids = self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            let mut ids = Vec::with_capacity(rows.len());
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO runs (kind, target, started_at_ms, version, tag, headline_key, headline, headline_unit)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )?;
                let mut insert_report = tx.prepare_cached("INSERT INTO reports (run_id, report) VALUES (?1, ?2)")?;
                for (report, tag, json) in &rows {
                    let head = report.headline();
                    insert.execute(params![
                        report.kind().name(),
                        report.target(),
                        report.meta.start_unix_ms as i64,
                        report.meta.version,
                        tag,
                        head.key,
                        head.value,
                        head.unit.code()
                    ])?;
                    let id = tx.last_insert_rowid();
                    insert_report.execute(params![id, json])?;
                    ids.push(id);
                }
            }
            tx.commit()?;
            Ok(ids)
        })?;
        let policy = self.retention()?;
        if !policy.is_off() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let newest = runs.iter().map(|r| r.0.meta.start_unix_ms as i64).max().unwrap_or(0);
            self.prune(&policy, now.max(newest))?;
        }
        Ok(ids)
    }

    /// The report of run `id`, if there is one.
    pub fn get(&self, id: i64) -> Result<Option<Report>, StoreError> {
        let json: Option<String> = self.sql(|c| {
            c.query_row("SELECT report FROM reports WHERE run_id = ?1", [id], |r| r.get(0))
                .optional()
        })?;
        json.map(|j| serde_json::from_str(&j).map_err(|source| StoreError::Corrupt { id, source }))
            .transpose()
    }

    /// The tag of run `id` (`None` without one, or without the run).
    pub fn tag(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.sql(|c| {
            c.query_row("SELECT tag FROM runs WHERE id = ?1", [id], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map(Option::flatten)
        })
    }

    /// Deletes the runs `ids`; returns those that were not there.
    pub fn remove(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
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

    /// How many runs are saved.
    pub fn count(&self) -> Result<u64, StoreError> {
        self.sql(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
    }
}

/// A rusqlite error on `path`, with damaged files told apart.
fn error(path: &str, source: rusqlite::Error) -> StoreError {
    match source.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::NotADatabase { path: path.to_string() }
        }
        _ => StoreError::Sqlite { path: path.to_string(), source },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use wirespeed_model::kinds::bandwidth::Figures;
    use wirespeed_model::kinds::bandwidth::{
        BandwidthInterval, BandwidthReport, BandwidthSummary, CpuUsage, FlowFigures, FlowSummary,
    };
    use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
    use wirespeed_model::report::Meta;
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::ReportBody;

    /// A bandwidth report started at `ms` that moved `bps`.
    pub(crate) fn report(ms: u64, bps: f64) -> Report {
        let figures = Figures { received_bps: bps, ..Default::default() };
        Report {
            body: ReportBody::Bandwidth(BandwidthReport {
                spec: BandwidthSpec::new("127.0.0.1", Protocol::Tcp),
                intervals: vec![BandwidthInterval {
                    index: 0,
                    start_ns: 0,
                    end_ns: 1_000_000_000,
                    omitted: false,
                    measured_at: None,
                    flows: vec![FlowFigures {
                        flow: Flow::Upload,
                        total: figures.clone(),
                        streams: vec![],
                    }],
                }],
                summary: BandwidthSummary {
                    primary: FlowSummary {
                        flow: Flow::Upload,
                        sender: End::Client,
                        duration_ns: 1,
                        total: figures,
                        rtt_range_ns: None,
                        cwnd_max_bytes: None,
                        streams: vec![],
                    },
                    reverse: None,
                    client_cpu: CpuUsage::default(),
                    server_cpu: None,
                },
            }),
            meta: Meta { version: "0.1.0".into(), start_unix_ms: ms, ..Default::default() },
        }
    }

    #[test]
    fn save_get_remove_in_memory() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as i64);
        let a = s.save(&report(1, 1e9), None).unwrap();
        let b = s.save(&report(2, 2e9), Some("lab")).unwrap();
        assert_eq!(s.get(a).unwrap().unwrap(), report(1, 1e9));
        assert!(s.get(999).unwrap().is_none());
        let rows = s.list(&RunFilter::default()).unwrap();
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, a]);
        assert_eq!(rows[0].tag.as_deref(), Some("lab"));
        assert_eq!(rows[0].kind, "bandwidth");
        assert_eq!(rows[0].headline, Some(2e9));
        assert_eq!(rows[0].headline_unit.as_deref(), Some("bit/s"));
        assert_eq!(s.remove(&[a, 999]).unwrap(), vec![999]);
        assert_eq!(s.count().unwrap(), 1);
        assert!(s.get(a).unwrap().is_none());
    }

    #[test]
    fn reopening_a_file_keeps_runs_and_skips_done_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/results.db");
        let id = Store::open(&path).unwrap().save(&report(5, 1.0), None).unwrap();
        let again = Store::open(&path).unwrap();
        assert_eq!(again.get(id).unwrap().unwrap(), report(5, 1.0));
        let mode: String =
            again.sql(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0))).unwrap();
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
            s.sql(|c| c.pragma_update(None, "wal_checkpoint", "TRUNCATE")).unwrap();
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
