//! The shared PostgreSQL database: the same schema versions and answers as the SQLite file, for
//! results that many processes and hosts write to at once.
//!
//! The client is the synchronous `postgres` crate, driven from a thread of its own. That crate
//! runs its own small tokio runtime and blocks on it, which panics on a thread that is already
//! inside a runtime (rust-postgres#639) — and wirespeed calls the store from inside its tests'
//! runtime and from the web server's blocking pool. One dedicated thread owns the connection;
//! every call is a closure sent to it over a channel and its answer sent back, so the store is
//! callable from anywhere, blocking only its caller, as the SQLite store is. `sqlx` was not
//! taken: its SQLite driver links a second `libsqlite3-sys` that collides with rusqlite's
//! (`links = "sqlite3"`), and its PostgreSQL driver alone adds nothing `postgres` lacks.
//!
//! Everything lives in a schema named `wirespeed`, so a database shared with other programs
//! keeps its tables apart and a role without rights on `public` (PostgreSQL 15's default) can
//! still create it. A connection that breaks is opened again on the next call. TLS reads
//! `sslmode` as libpq does (`tls`).

mod members;
mod migrate;
mod runs;
mod tls;
mod web;

#[cfg(test)]
pub(crate) use migrate::latest as latest_version;
pub(crate) use tls::Tls;

use std::sync::mpsc;
use std::thread::JoinHandle;

use postgres::{Client, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::location::PostgresUrl;
use crate::StoreError;

/// An open PostgreSQL results database.
#[derive(Debug)]
pub(crate) struct Postgres {
    jobs: Option<mpsc::Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    /// The database's address without its password, for messages.
    shown: String,
}

/// Work for the connection's thread.
type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The connection's thread's state: the URL, and the connection once made.
struct Session {
    url: PostgresUrl,
    client: Option<Client>,
}

impl Session {
    /// The connection, made (again) if there is none or the last one broke.
    fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let shown = self.url.to_string();
            let failed =
                |why: String| StoreError::Postgres { db: shown.clone(), why, connect: true };
            let tls = self.url.tls.client_config().map_err(|e| failed(format!("TLS: {e}")))?;
            let connected = match tls {
                None => self.url.config.connect(NoTls),
                Some(tls) => self.url.config.connect(MakeRustlsConnect::new(tls)),
            };
            let mut client = connected.map_err(|e| failed(connect_error(&e)))?;
            client.batch_execute("SET search_path = wirespeed, pg_catalog").map_err(|e| {
                StoreError::Postgres { db: shown, why: describe(&e), connect: true }
            })?;
            self.client = Some(client);
        }
        Ok(self.client.as_mut().expect("connected above"))
    }
}

impl Postgres {
    /// Connects to the database at `url` and brings its schema up to date.
    pub(crate) fn open(url: &PostgresUrl) -> Result<Self, StoreError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let mut session = Session { url: url.clone(), client: None };
        let worker = std::thread::Builder::new()
            .name("wirespeed-store".into())
            .spawn(move || {
                for job in inbox {
                    job(&mut session);
                }
            })
            .map_err(|e| StoreError::Postgres {
                db: url.to_string(),
                why: format!("cannot start the database thread: {e}"),
                connect: true,
            })?;
        let store = Self { jobs: Some(jobs), worker: Some(worker), shown: url.to_string() };
        store.with_session(migrate::to_latest)?;
        Ok(store)
    }

    /// Where the database is, without the password.
    pub(crate) fn describe(&self) -> String {
        self.shown.clone()
    }

    /// Runs `f` with the connection on its thread and waits for the answer. Errors name the
    /// database and carry the server's message. A connection found broken by this call (the
    /// server restarted, a proxy dropped it while idle) is made again and `f` run once more:
    /// before, the first call after a break failed, and a run or a visitor's result with it.
    /// A call that broke the connection itself had not been answered, so PostgreSQL rolled
    /// back whatever it began.
    fn call<T: Send + 'static>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.with_session(move |session| {
            let shown = session.url.to_string();
            let mut retried = false;
            loop {
                let client = session.client()?;
                let result = f(client);
                let broke = client.is_closed();
                if broke {
                    session.client = None;
                }
                match result {
                    Err(e) if broke && !retried && e.as_db_error().is_none() => retried = true,
                    other => {
                        return other.map_err(|e| StoreError::Postgres {
                            db: shown,
                            why: describe(&e),
                            connect: false,
                        })
                    }
                }
            }
        })
    }

    /// Runs `f` on the connection's thread with the whole session (for work that needs to map
    /// its own errors, as the migrations do).
    fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let gone = || StoreError::Postgres {
            db: self.shown.clone(),
            why: "the database thread has stopped".into(),
            connect: false,
        };
        let (reply, answer) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |session| {
            // The caller may have gone (a panic on its side); the answer is then dropped.
            let _ = reply.send(f(session));
        });
        self.jobs.as_ref().ok_or_else(gone)?.send(job).map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}

impl Drop for Postgres {
    /// Closes the channel, which ends the thread; joining it closes the connection cleanly
    /// (the server sees a Terminate, not a reset).
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// A PostgreSQL error as one line: the server's message with its detail and hint when it sent
/// them, else the client's own account.
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_string();
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; {hint}"));
            }
            text
        }
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let more = s.to_string();
                if !text.contains(&more) {
                    text.push_str(&format!(": {more}"));
                }
                source = s.source();
            }
            text
        }
    }
}

/// Why a connection could not be made, said as a user needs it.
fn connect_error(e: &postgres::Error) -> String {
    let why = describe(e);
    match e.code() {
        Some(code) if *code == postgres::error::SqlState::INVALID_PASSWORD => {
            format!("the server refused the login: {why}")
        }
        Some(code) if *code == postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            format!("the server refused the login: {why}")
        }
        _ => format!("cannot connect: {why}"),
    }
}
