//! Where the results live, from `--db` or `WIRESPEED_DB`: a file name is an SQLite database, a
//! `postgres://` or `postgresql://` URL a shared PostgreSQL one. The URL's password is kept for
//! connecting and never shown: every message names the database by [`Location`]'s `Display`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::StoreError;

/// A results database: an SQLite file or a PostgreSQL server.
#[derive(Debug, Clone)]
pub enum Location {
    /// An SQLite file (created when first saved to).
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(PostgresUrl),
}

/// A parsed PostgreSQL connection URL.
#[derive(Clone)]
pub struct PostgresUrl {
    pub(crate) config: Box<postgres::Config>,
    /// What it asks of TLS (`sslmode`, `sslrootcert`).
    pub(crate) tls: crate::postgres::Tls,
}

/// How long a connection attempt may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Location {
    /// Reads `--db`: a `postgres://` or `postgresql://` URL, or else a file name.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
            return Ok(Self::File(PathBuf::from(text)));
        }
        let bad = |why: String| StoreError::BadLocation { text: redact(text), why };
        let (tls, parseable) = crate::postgres::Tls::take_from(text).map_err(bad)?;
        let mut config = postgres::Config::from_str(&parseable).map_err(|e| bad(e.to_string()))?;
        if config.get_hosts().is_empty() {
            return Err(bad(
                "it names no host (postgres://USER:PASSWORD@HOST:PORT/DATABASE)".into()
            ));
        }
        if config.get_password().is_none() {
            // libpq's variable, for a password kept out of the command line and the URL.
            if let Ok(password) = std::env::var("PGPASSWORD") {
                config.password(password);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("wirespeed");
        }
        Ok(Self::Postgres(PostgresUrl { config: Box::new(config), tls }))
    }

    /// True when there is something to read: a PostgreSQL database always (it is created on
    /// first use like a file, but reading an empty one is cheap and honest), a file if it exists.
    pub fn exists(&self) -> bool {
        match self {
            Self::File(path) => path.exists(),
            Self::Postgres(_) => true,
        }
    }
}

impl FromStr for Location {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => url.fmt(f),
        }
    }
}

impl fmt::Display for PostgresUrl {
    /// `postgres://USER@HOST:PORT/DATABASE`, without the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(f, "postgres://")?;
        if let Some(user) = c.get_user() {
            write!(f, "{user}@")?;
        }
        for (i, host) in c.get_hosts().iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            match host {
                postgres::config::Host::Tcp(name) => write!(f, "{name}")?,
                postgres::config::Host::Unix(dir) => write!(f, "[{}]", dir.display())?,
            }
            if let Some(port) = c.get_ports().get(i).or(c.get_ports().first()) {
                write!(f, ":{port}")?;
            }
        }
        write!(f, "/{}", c.get_dbname().or(c.get_user()).unwrap_or(""))
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgresUrl({self})")
    }
}

/// `text` with any password after `user:` in a URL replaced by `***`, for error messages about
/// a URL that did not parse.
fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else { return text.to_string() };
    let Some((userinfo, host)) = rest.split_once('@') else { return text.to_string() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_postgres_and_the_rest_are_files() {
        let l = Location::parse("postgres://ws:s3cret@db.example:6543/results").unwrap();
        assert!(matches!(l, Location::Postgres(_)));
        assert_eq!(l.to_string(), "postgres://ws@db.example:6543/results");
        assert!(!format!("{l:?}").contains("s3cret"));
        let l = Location::parse("postgresql://ws@127.0.0.1/wirespeed?sslmode=disable").unwrap();
        assert_eq!(l.to_string(), "postgres://ws@127.0.0.1:5432/wirespeed");
        assert!(matches!(Location::parse("results.db").unwrap(), Location::File(_)));
        assert!(matches!(Location::parse("./postgres/x.db").unwrap(), Location::File(_)));
    }

    #[test]
    fn a_bad_url_is_refused_without_its_password() {
        let err = Location::parse("postgres://ws:s3cret@h/db?sslmode=sometimes").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("sslmode"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        let err = Location::parse("postgres:///db").unwrap_err().to_string();
        assert!(err.contains("no host"), "{err}");
    }
}
