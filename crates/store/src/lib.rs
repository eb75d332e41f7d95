//! The results store: the only crate with SQL. Every run's [`Report`] is saved whole, as JSON,
//! next to the columns that history queries filter on. The schema is versioned with SQLite's
//! `user_version`; [`MIGRATIONS`] are applied in order, each in its own transaction.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use wirespeed_model::Report;

/// Schema migrations, applied in order; migration `i` brings the schema to version `i + 1`.
pub const MIGRATIONS: &[&str] = &[include_str!("migrations/0001_init.sql")];

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (file unreadable, disk full, locked, corrupt).
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
    /// A saved report no longer parses (written by an incompatible version).
    #[error("saved run {id} cannot be read: {source}")]
    Corrupt {
        /// The run.
        id: i64,
        /// Why.
        source: serde_json::Error,
    },
    /// The database was written by a newer wirespeed.
    #[error("results database is at schema version {found}, newer than this wirespeed understands ({known})")]
    TooNew {
        /// Version in the file.
        found: i64,
        /// Newest version known here.
        known: i64,
    },
}

/// One row of the history: enough to list runs without parsing their reports.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        store.sql(|c| {
            // WAL: readers never block the writer, and a crash mid-write loses only that write.
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            c.busy_timeout(std::time::Duration::from_secs(5))
        })?;
        store.migrate()?;
        Ok(store)
    }

    fn sql<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        f(&self.conn).map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.sql(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let known = MIGRATIONS.len() as i64;
        let found = self.schema_version()?;
        if found > known {
            return Err(StoreError::TooNew { found, known });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let path = self.path.clone();
            let tx = self
                .conn
                .transaction()
                .map_err(|source| StoreError::Sqlite { path: path.clone(), source })?;
            tx.execute_batch(sql)
                .and_then(|()| tx.pragma_update(None, "user_version", i as i64 + 1))
                .and_then(|()| tx.commit())
                .map_err(|source| StoreError::Sqlite { path, source })?;
        }
        Ok(())
    }

    /// Saves a finished run in one transaction; returns its id.
    pub fn save(&self, report: &Report, tag: Option<&str>) -> Result<i64, StoreError> {
        let json = serde_json::to_string(report)
            .map_err(|source| StoreError::Corrupt { id: 0, source })?;
        self.sql(|c| {
            c.execute(
                "INSERT INTO runs (kind, target, started_at_ms, version, tag, report) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![report.kind(), report.target(), report.meta.start_unix_ms as i64, report.meta.version, tag, json],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// The report of run `id`, if there is one.
    pub fn get(&self, id: i64) -> Result<Option<Report>, StoreError> {
        let json: Option<String> = self.sql(|c| {
            c.query_row("SELECT report FROM runs WHERE id = ?1", [id], |r| r.get(0)).optional()
        })?;
        json.map(|j| serde_json::from_str(&j).map_err(|source| StoreError::Corrupt { id, source }))
            .transpose()
    }

    /// The newest `limit` runs, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        self.sql(|c| {
            let mut stmt =
                c.prepare("SELECT id, kind, target, started_at_ms, tag FROM runs ORDER BY started_at_ms DESC, id DESC LIMIT ?1")?;
            let rows = stmt.query_map([limit as i64], |r| {
                Ok(RunRow { id: r.get(0)?, kind: r.get(1)?, target: r.get(2)?, started_at_ms: r.get(3)?, tag: r.get(4)? })
            })?;
            rows.collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::report::{BandwidthReport, BandwidthSummary, CpuUsage, FlowSummary, Meta};
    use wirespeed_model::spec::{BandwidthSpec, End, Flow, Protocol};
    use wirespeed_model::ReportBody;

    fn report(ms: u64) -> Report {
        Report {
            body: ReportBody::Bandwidth(BandwidthReport {
                spec: BandwidthSpec::new("127.0.0.1", Protocol::Tcp),
                intervals: vec![],
                summary: BandwidthSummary {
                    primary: FlowSummary {
                        flow: Flow::Upload,
                        sender: End::Client,
                        duration_ns: 1,
                        total: Default::default(),
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
    fn save_get_list_in_memory() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as i64);
        let a = s.save(&report(1), None).unwrap();
        let b = s.save(&report(2), Some("lab")).unwrap();
        assert_eq!(s.get(a).unwrap().unwrap(), report(1));
        assert!(s.get(999).unwrap().is_none());
        let rows = s.list(10).unwrap();
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, a]);
        assert_eq!(rows[0].tag.as_deref(), Some("lab"));
        assert_eq!(rows[0].kind, "bandwidth");
    }

    #[test]
    fn reopening_a_file_keeps_runs_and_skips_done_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/results.db");
        let id = Store::open(&path).unwrap().save(&report(5), None).unwrap();
        let again = Store::open(&path).unwrap();
        assert_eq!(again.get(id).unwrap().unwrap(), report(5));
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        drop(Store::open(&path).unwrap());
        Connection::open(&path).unwrap().pragma_update(None, "user_version", 99).unwrap();
        assert!(matches!(Store::open(&path), Err(StoreError::TooNew { found: 99, .. })));
    }
}
