//! The results store: the only crate with SQL. Every run's [`Report`] is saved whole, as JSON,
//! next to the columns that history queries filter and list on (kind, target, time, tag and the
//! headline figure). Two databases hold it with the same schema versions and the same answers:
//! an embedded SQLite file (the default, module `sqlite`) and a shared PostgreSQL database
//! (module `postgres`) that a team, a fleet of CI runners or several `wirespeed web` instances write
//! to at once. [`Location`] says which, from `--db` or `WIRESPEED_DB`.
//!
//! Opening never writes to a database it does not recognise: a corrupt file, another program's
//! tables and a schema from a newer wirespeed are refused before anything is changed.

mod location;
pub mod members;
mod postgres;
mod rows;
#[cfg(test)]
mod sample;
#[cfg(test)]
mod semantics_tests;
mod sqlite;

use std::path::{Path, PathBuf};

use wirespeed_model::web::WebResult;
use wirespeed_model::Report;

pub use location::Location;
pub use rows::{Budget, Retention, RunFilter, RunRow, Taken, WebFilter, WebPolicy};
pub use sqlite::MIGRATIONS;

use crate::postgres::Postgres;
use crate::sqlite::Sqlite;

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
    /// The file is an SQLite database of some other program (or, on PostgreSQL, the
    /// `wirespeed` schema holds tables that are not ours).
    #[error(
        "{path} is a database, but not wirespeed's (it has other tables); it was left as it is"
    )]
    Foreign {
        /// The file, or the database's address.
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
        /// The file, or the database's address.
        path: String,
        /// Version in the database.
        found: i64,
        /// Newest version known here.
        known: i64,
    },
    /// The `--db` text is neither a file name nor a PostgreSQL connection string we can use.
    #[error("bad results database {text:?}: {why}")]
    BadLocation {
        /// What was given (any password hidden).
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// What was asked needs the shared (PostgreSQL) database.
    #[error(
        "{what} needs a shared PostgreSQL database (--db postgres://…); {path} is an SQLite file"
    )]
    NeedsShared {
        /// What was asked.
        what: String,
        /// The file that was given.
        path: String,
    },
    /// PostgreSQL could not be reached, refused the login, or failed a statement.
    #[error("results database {db}: {why}")]
    Postgres {
        /// The database's address, password hidden.
        db: String,
        /// What went wrong, with the server's own message where it sent one.
        why: String,
        /// The database cannot be used at all: the connection never came up (unreachable,
        /// refused, wrong credentials) or the role may not set up wirespeed's tables (no
        /// CREATE, a schema owned by another role), as opposed to a statement failing on a
        /// working connection.
        connect: bool,
    },
}

/// An open results database.
#[derive(Debug)]
pub struct Store {
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    Sqlite(Sqlite),
    Postgres(Postgres),
}

/// Calls the same method on whichever database is open; both implement every operation with
/// the same signature, so the two cannot drift apart in what they offer.
macro_rules! on_backend {
    ($store:expr, $db:ident => $call:expr) => {
        match &$store.backend {
            Backend::Sqlite($db) => $call,
            Backend::Postgres($db) => $call,
        }
    };
}

impl Store {
    /// The default location: `$XDG_DATA_HOME/wirespeed/results.db` (or the platform's equivalent).
    pub fn default_path() -> Option<PathBuf> {
        Some(dirs::data_dir()?.join("wirespeed").join("results.db"))
    }

    /// Opens (creating if needed) the SQLite database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self { backend: Backend::Sqlite(Sqlite::open(path)?) })
    }

    /// Opens the database at `location` (a file, or PostgreSQL) and brings its schema up to date.
    pub fn open_at(location: &Location) -> Result<Self, StoreError> {
        match location {
            Location::File(path) => Self::open(path),
            Location::Postgres(config) => {
                Ok(Self { backend: Backend::Postgres(Postgres::open(config)?) })
            }
        }
    }

    /// An empty SQLite database in memory, for tests.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Ok(Self { backend: Backend::Sqlite(Sqlite::open_in_memory()?) })
    }

    /// Where this database is, for messages (a PostgreSQL password is never shown).
    pub fn describe(&self) -> String {
        on_backend!(self, db => db.describe())
    }

    /// True for a PostgreSQL database (shared by every process that opens it).
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        on_backend!(self, db => db.schema_version())
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
            .map(|(report, tag)| rows::NewRun::of(report, *tag))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let ids = on_backend!(self, db => db.insert_runs(&rows))?;
        let policy = self.retention()?;
        if !policy.is_off() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let newest = rows.iter().map(|r| r.started_at_ms).max().unwrap_or(0);
            self.prune(&policy, now.max(newest))?;
        }
        Ok(ids)
    }

    /// The report of run `id`, if there is one.
    pub fn get(&self, id: i64) -> Result<Option<Report>, StoreError> {
        let json = on_backend!(self, db => db.report_json(id))?;
        json.map(|j| serde_json::from_str(&j).map_err(|source| StoreError::Corrupt { id, source }))
            .transpose()
    }

    /// The tag of run `id` (`None` without one, or without the run).
    pub fn tag(&self, id: i64) -> Result<Option<String>, StoreError> {
        on_backend!(self, db => db.tag(id))
    }

    /// Deletes the runs `ids`; returns those that were not there.
    pub fn remove(&self, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        on_backend!(self, db => db.remove(ids))
    }

    /// How many runs are saved.
    pub fn count(&self) -> Result<u64, StoreError> {
        on_backend!(self, db => db.count())
    }

    /// Saved runs matching `filter`, newest first (the later id first among equal times).
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        on_backend!(self, db => db.list(filter))
    }

    /// The saved retention policy (off when none was set).
    pub fn retention(&self) -> Result<Retention, StoreError> {
        on_backend!(self, db => db.retention())
    }

    /// Saves the retention policy; a `None` field is removed.
    pub fn set_retention(&self, policy: &Retention) -> Result<(), StoreError> {
        on_backend!(self, db => db.set_retention(policy))
    }

    /// Deletes the runs `policy` does not keep at `now_ms`; returns how many went.
    pub fn prune(&self, policy: &Retention, now_ms: i64) -> Result<u64, StoreError> {
        on_backend!(self, db => db.prune(policy, now_ms))
    }

    /// Saves a browser test's result under `policy`, in one transaction: the network's earlier
    /// rows go first unless several per network are allowed, then the oldest beyond the cap.
    pub fn save_web(&self, result: &WebResult, policy: WebPolicy) -> Result<(), StoreError> {
        on_backend!(self, db => db.save_web(result, policy))
    }

    /// Saved browser results matching `filter`, newest first.
    pub fn list_web(&self, filter: &WebFilter) -> Result<Vec<WebResult>, StoreError> {
        on_backend!(self, db => db.list_web(filter))
    }

    /// One saved browser result.
    pub fn get_web(&self, id: &str) -> Result<Option<WebResult>, StoreError> {
        on_backend!(self, db => db.get_web(id))
    }

    /// Deletes one saved browser result; false when it was not there.
    pub fn remove_web(&self, id: &str) -> Result<bool, StoreError> {
        on_backend!(self, db => db.remove_web(id))
    }

    /// The saved run merged from member run `run_id` (`wirespeed merge`), if any: saving
    /// another merge of that run replaces it.
    pub fn merge_of(&self, run_id: &str) -> Result<Option<i64>, StoreError> {
        on_backend!(self, db => db.merge_of(run_id))
    }

    /// The saved reports of run `run_id`'s members (`--members`), by index.
    pub fn member_rows(&self, run_id: &str) -> Result<Vec<members::MemberRow>, StoreError> {
        on_backend!(self, db => db.member_rows(run_id))
    }

    /// The runs that members saved reports of, by run id.
    pub fn member_run_ids(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .list_member_runs()?
            .into_iter()
            .collect::<std::collections::BTreeSet<String>>()
            .into_iter()
            .collect())
    }

    fn list_member_runs(&self) -> Result<Vec<String>, StoreError> {
        on_backend!(self, db => db.member_run_ids())
    }

    /// The PostgreSQL database, for what only it does (the members' barrier).
    fn shared(&self, what: &str) -> Result<&Postgres, StoreError> {
        match &self.backend {
            Backend::Postgres(p) => Ok(p),
            Backend::Sqlite(s) => {
                Err(StoreError::NeedsShared { what: what.into(), path: s.describe() })
            }
        }
    }

    /// One measurement of this host's clock against the database's: the local time before
    /// and after the query, and the database's, nanoseconds since the epoch.
    pub fn clock_sample(&self) -> Result<(i64, i64, i64), StoreError> {
        self.shared("measuring the clock")?.clock_sample()
    }

    /// A member arrives at its run's barrier; the last to arrive sets the start. The inner
    /// `Err` says why the barrier turned it away.
    pub fn barrier_join(
        &self,
        arrival: &members::Arrival,
    ) -> Result<Result<members::RunState, members::Refusal>, StoreError> {
        self.shared("the members' barrier")?.barrier_join(arrival)
    }

    /// Run `run_id`'s barrier state, after waiting up to `wait` for its start to be announced.
    pub fn barrier_poll(
        &self,
        run_id: &str,
        wait: std::time::Duration,
    ) -> Result<Option<members::RunState>, StoreError> {
        self.shared("the members' barrier")?.barrier_poll(run_id, wait)
    }

    /// Aborts run `run_id` for `reason` unless its start was set; true when this call did.
    pub fn barrier_abort(&self, run_id: &str, reason: &str) -> Result<bool, StoreError> {
        self.shared("the members' barrier")?.barrier_abort(run_id, reason)
    }

    /// Takes back member `index`'s arrival before the start (it was interrupted).
    pub fn barrier_leave(&self, run_id: &str, index: u32) -> Result<(), StoreError> {
        self.shared("the members' barrier")?.barrier_leave(run_id, index)
    }

    /// Member `index` of run `run_id` finished: the saved run's id (if it was saved), or why
    /// it failed (which aborts the run).
    pub fn member_finished(
        &self,
        run_id: &str,
        index: u32,
        outcome: Result<Option<i64>, String>,
    ) -> Result<(), StoreError> {
        self.shared("the members' barrier")?.member_finished(run_id, index, outcome)
    }

    /// Run `run_id`'s barrier state; `None` when it never met at one (or on SQLite).
    pub fn run_state(&self, run_id: &str) -> Result<Option<members::RunState>, StoreError> {
        match &self.backend {
            Backend::Postgres(p) => p.run_state(run_id),
            Backend::Sqlite(_) => Ok(None),
        }
    }

    /// Takes `bytes` from visitor `client`'s transfer budget, kept in the database so every web
    /// server on it spends from one bucket; with `force`, takes them even past empty (bytes
    /// already moved are owed, and the refill pays them back). Buckets idle long enough to be
    /// full again are forgotten as it goes.
    pub fn take_budget(
        &self,
        client: &str,
        bytes: f64,
        budget: Budget,
        now_ms: i64,
        force: bool,
    ) -> Result<Taken, StoreError> {
        on_backend!(self, db => db.take_budget(client, bytes, budget, now_ms, force))
    }
}
