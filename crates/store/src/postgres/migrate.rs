//! The PostgreSQL schema's migrations, numbered as the SQLite ones are, so a version means the
//! same tables on both. PostgreSQL support began at version 3: its first migration builds that
//! schema whole, and every later one is written for both databases in the same change.
//!
//! Migrating runs in one transaction under an advisory lock, so the members of a run, or
//! several web servers, that start together against a new database migrate it once and the
//! rest wait and find it done. The `wirespeed.schema_version` table holds the version.

use postgres::Transaction;

use super::{describe, Session};
use crate::StoreError;

/// One step of the PostgreSQL schema.
struct Migration {
    /// The schema version after it.
    to: i64,
    /// File name, for error messages.
    name: &'static str,
    /// The DDL.
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration { to: 3, name: "0003_postgres", sql: include_str!("schema/0003_postgres.sql") },
    Migration { to: 4, name: "0004_web_budgets", sql: include_str!("schema/0004_web_budgets.sql") },
    Migration { to: 5, name: "0005_members", sql: include_str!("schema/0005_members.sql") },
    Migration { to: 6, name: "0006_web_latency", sql: include_str!("schema/0006_web_latency.sql") },
    Migration { to: 7, name: "0007_run_ending", sql: include_str!("schema/0007_run_ending.sql") },
    Migration { to: 8, name: "0008_merged_run", sql: include_str!("schema/0008_merged_run.sql") },
];

/// The advisory lock every migration holds (any fixed number; "wirespee" in ASCII).
const LOCK: i64 = 0x7769_7265_7370_6565;

/// The newest schema version this wirespeed writes.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.to)
}

/// Applies every migration the database has not had; refuses, changing nothing, a schema that
/// is newer than ours or a `wirespeed` schema of tables that are not ours.
pub(super) fn to_latest(session: &mut Session) -> Result<(), StoreError> {
    let shown = session.url.to_string();
    // A role without the rights to set up the schema can never use this database: that is
    // the database refused (exit 10), not one statement failing.
    let fail = |step: &str, e: postgres::Error| StoreError::Postgres {
        db: shown.clone(),
        why: format!("{step}: {}", describe(&e)),
        connect: e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
    };
    let client = session.client()?;
    let mut tx = client.transaction().map_err(|e| fail("migrating", e))?;
    let found = read_version(&mut tx).map_err(|e| fail("reading the schema version", e))?;
    let known = latest();
    match found {
        Version::Foreign => return Err(StoreError::Foreign { path: shown.clone() }),
        Version::At(v) if v > known => {
            return Err(StoreError::TooNew { path: shown.clone(), found: v, known })
        }
        Version::At(v) if v == known => return Ok(()),
        Version::At(_) | Version::None => {}
    }
    if matches!(found, Version::None) {
        tx.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS wirespeed;
             CREATE TABLE wirespeed.schema_version (version BIGINT NOT NULL);
             INSERT INTO wirespeed.schema_version VALUES (0);",
        )
        .map_err(|e| fail("creating the wirespeed schema", e))?;
    }
    let from = match found {
        Version::At(v) => v,
        _ => 0,
    };
    for m in MIGRATIONS.iter().filter(|m| m.to > from) {
        tx.batch_execute(m.sql).map_err(|e| fail(&format!("migration {}", m.name), e))?;
        tx.execute("UPDATE wirespeed.schema_version SET version = $1", &[&m.to])
            .map_err(|e| fail(&format!("migration {}", m.name), e))?;
    }
    tx.commit().map_err(|e| fail("committing the migrations", e))
}

/// What the database holds before migrating.
enum Version {
    /// No `wirespeed` tables at all.
    None,
    /// Our schema at this version.
    At(i64),
    /// Tables in the `wirespeed` schema, but no version: not ours.
    Foreign,
}

/// Takes the migration lock and reads the schema's version.
fn read_version(tx: &mut Transaction<'_>) -> Result<Version, postgres::Error> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])?;
    let versioned: bool =
        tx.query_one("SELECT to_regclass('wirespeed.schema_version') IS NOT NULL", &[])?.get(0);
    if versioned {
        return Ok(Version::At(
            tx.query_one("SELECT version FROM wirespeed.schema_version", &[])?.get(0),
        ));
    }
    let tables: i64 = tx
        .query_one("SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'wirespeed'", &[])?
        .get(0);
    Ok(if tables > 0 { Version::Foreign } else { Version::None })
}
