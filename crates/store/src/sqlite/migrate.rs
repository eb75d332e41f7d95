//! Schema migrations. Migration `i` brings the schema from version `i` to `i + 1` (SQLite's
//! `user_version`), in one transaction with its backfill, so a crash mid-migration leaves the
//! previous version intact. Never edit a released migration; add the next one.

use rusqlite::{params, Connection, Transaction};

use crate::StoreError;

/// One step of the schema.
pub struct Migration {
    /// File name, for error messages.
    pub name: &'static str,
    /// The DDL.
    pub sql: &'static str,
    /// Data the new columns need, computed in Rust from the saved reports.
    pub backfill: Option<fn(&Transaction<'_>) -> rusqlite::Result<()>>,
}

/// The migrations, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration { name: "0001_init", sql: include_str!("migrations/0001_init.sql"), backfill: None },
    Migration {
        name: "0002_reports_headline_retention",
        sql: include_str!("migrations/0002_reports_headline_retention.sql"),
        backfill: Some(backfill_headlines),
    },
    Migration {
        name: "0003_web_results",
        sql: include_str!("migrations/0003_web_results.sql"),
        backfill: None,
    },
    Migration {
        name: "0004_web_budgets",
        sql: include_str!("migrations/0004_web_budgets.sql"),
        backfill: None,
    },
    Migration {
        name: "0005_members",
        sql: include_str!("migrations/0005_members.sql"),
        backfill: None,
    },
    Migration {
        name: "0006_web_latency",
        sql: include_str!("migrations/0006_web_latency.sql"),
        backfill: None,
    },
    Migration {
        name: "0007_run_ending",
        sql: include_str!("migrations/0007_run_ending.sql"),
        backfill: Some(backfill_endings),
    },
    Migration {
        name: "0008_merged_run",
        sql: include_str!("migrations/0008_merged_run.sql"),
        backfill: None,
    },
];

/// Applies every migration the database has not had.
pub(crate) fn to_latest(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
    to_version(conn, path, MIGRATIONS.len())
}

/// Applies migrations until the schema is at `version`.
pub(crate) fn to_version(
    conn: &mut Connection,
    path: &str,
    version: usize,
) -> Result<(), StoreError> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| super::error(path, e))?;
    for (i, m) in MIGRATIONS.iter().enumerate().take(version).skip(found as usize) {
        let step = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            tx.execute_batch(m.sql)?;
            if let Some(fill) = m.backfill {
                fill(&tx)?;
            }
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
            tx.commit()
        };
        step(conn).map_err(|e| match super::error(path, e) {
            StoreError::Sqlite { path, source } => {
                StoreError::Sqlite { path: format!("{path} (migration {})", m.name), source }
            }
            other => other,
        })?;
    }
    Ok(())
}

/// Marks the runs saved before `ended` existed that did not finish (their notes say so).
fn backfill_endings(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut read = tx.prepare(
        "SELECT runs.id, reports.report FROM runs JOIN reports ON reports.run_id = runs.id \
         WHERE reports.report LIKE '%interrupted:%' OR reports.report LIKE '%aborted:%'",
    )?;
    let mut write = tx.prepare("UPDATE runs SET ended = ?2 WHERE id = ?1")?;
    let rows = read.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (id, json) = row?;
        if let Ok(report) = serde_json::from_str::<wirespeed_model::Report>(&json) {
            if let Some(ended) = report.ending() {
                write.execute(params![id, ended])?;
            }
        }
    }
    Ok(())
}

/// Fills the headline columns of runs saved before they existed. A report that no longer
/// parses keeps empty columns (the history shows `-`) rather than failing the upgrade.
fn backfill_headlines(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut read = tx.prepare(
        "SELECT runs.id, reports.report FROM runs JOIN reports ON reports.run_id = runs.id WHERE headline_key IS NULL",
    )?;
    let mut write = tx.prepare(
        "UPDATE runs SET headline_key = ?2, headline = ?3, headline_unit = ?4 WHERE id = ?1",
    )?;
    let rows = read.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (id, json) = row?;
        if let Ok(report) = serde_json::from_str::<wirespeed_model::Report>(&json) {
            let head = report.headline();
            write.execute(params![id, head.key, head.value, head.unit.code()])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::report;
    use crate::{RunFilter, Store};

    /// A database file at schema `version` (in the directory returned), and a connection to it.
    fn database_at(version: usize) -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut conn = Connection::open(&path).unwrap();
        to_version(&mut conn, "r.db", version).unwrap();
        (dir, path, conn)
    }

    /// Inserts a run as the schema at `version` had it.
    fn insert_at(conn: &Connection, version: usize, ms: u64, bps: f64) {
        let r = report(ms, bps);
        let json = serde_json::to_string(&r).unwrap();
        match version {
            1 => conn
                .execute(
                    "INSERT INTO runs (kind, target, started_at_ms, version, tag, report) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![r.kind().name(), r.target(), ms as i64, r.meta.version, "old", json],
                )
                .unwrap(),
            2..=7 => {
                let head = r.headline();
                conn.execute(
                    "INSERT INTO runs (kind, target, started_at_ms, version, tag, headline_key, headline, headline_unit)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![r.kind().name(), r.target(), ms as i64, r.meta.version, "old", head.key, head.value, head.unit.code()],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO reports (run_id, report) VALUES (?1, ?2)",
                    params![conn.last_insert_rowid(), json],
                )
                .unwrap()
            }
            v => panic!("no insert written for schema {v}: add one with the new migration"),
        };
    }

    /// SQL that damages run `?1`'s saved report at schema `version`.
    fn corrupt_report(version: usize) -> &'static str {
        match version {
            1 => "UPDATE runs SET report = '{\"kind\":\"warp\"}' WHERE id = ?1",
            2..=7 => "UPDATE reports SET report = '{\"kind\":\"warp\"}' WHERE run_id = ?1",
            v => panic!("no corruption written for schema {v}: add one with the new migration"),
        }
    }

    /// Runs saved before `ended` existed that were cut short are marked from their notes.
    #[test]
    fn older_cut_runs_are_marked_by_the_upgrade() {
        let (_dir, path, conn) = database_at(6);
        insert_at(&conn, 6, 10, 5e8);
        let mut cut = report(20, 7e8);
        cut.meta.notes.push("interrupted: the test was stopped early by the user".into());
        conn.execute(
            "UPDATE reports SET report = ?1 WHERE run_id = ?2",
            params![serde_json::to_string(&cut).unwrap(), conn.last_insert_rowid()],
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        let rows = store.list(&RunFilter::default()).unwrap();
        assert_eq!(rows[0].ended.as_deref(), Some("interrupted"));
    }

    /// Merged runs saved before `merged_run` existed are marked from their reports (so that
    /// merging their run again replaces them); a report that is not JSON is left unmarked.
    #[test]
    fn older_merged_runs_are_marked_by_the_upgrade() {
        let (_dir, path, conn) = database_at(7);
        insert_at(&conn, 7, 10, 5e8);
        let merged = crate::semantics_tests::merged_report("r42", 7e8);
        let json = serde_json::to_string(&merged).unwrap();
        conn.execute("UPDATE reports SET report = ?1 WHERE run_id = ?2", params![json, 1]).unwrap();
        insert_at(&conn, 7, 30, 5e8);
        conn.execute("UPDATE reports SET report = 'not json' WHERE run_id = 2", []).unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.merge_of("r42").unwrap(), Some(1));
        assert_eq!(store.count().unwrap(), 2);
    }

    #[test]
    fn every_earlier_schema_upgrades_with_its_runs() {
        for version in 1..MIGRATIONS.len() {
            let (_dir, path, conn) = database_at(version);
            insert_at(&conn, version, 10, 5e8);
            insert_at(&conn, version, 20, 7e8);
            // A row whose report no longer parses must not stop the upgrade.
            let id: i64 = conn
                .query_row("SELECT id FROM runs WHERE started_at_ms = 10", [], |r| r.get(0))
                .unwrap();
            conn.execute(corrupt_report(version), [id]).unwrap();
            drop(conn);

            let store = Store::open(&path).unwrap();
            assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64, "from {version}");
            let rows = store.list(&RunFilter::default()).unwrap();
            assert_eq!(rows.len(), 2, "from {version}");
            assert_eq!(rows[0].headline, Some(7e8), "from {version}: backfilled");
            assert_eq!(rows[0].tag.as_deref(), Some("old"));
            if version < 2 {
                assert_eq!(rows[1].headline, None, "from {version}: unreadable report left blank");
            }
            assert_eq!(store.get(rows[0].id).unwrap().unwrap(), report(20, 7e8));
            assert!(matches!(store.get(rows[1].id), Err(StoreError::Corrupt { .. })));
            // And it works as a new one does.
            store.save(&report(30, 1.0), None).unwrap();
        }
    }

    #[test]
    fn web_results_saved_before_latency_was_measured_read_back_without_it() {
        let (_dir, path, conn) = database_at(5);
        conn.execute(
            "INSERT INTO web_results (id, created_ms, network, isp, country, region, download_bps, ping_ms,
             download_by_server, upload_by_server, user_agent, lang, source)
             VALUES ('old', 1, '192.0.2.0/24', '', '', '', 9e8, 3.5, 1, 0, 'ua', 'en', 'telemetry')",
            [],
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        let r = store.get_web("old").unwrap().unwrap();
        assert_eq!((r.download_bps, r.ping_ms), (Some(9e8), Some(3.5)));
        assert_eq!((r.latency_down_ms, r.latency_up_ms, r.latency_grade), (None, None, None));
    }

    #[test]
    fn an_empty_database_gets_every_migration() {
        let mut conn = Connection::open_in_memory().unwrap();
        to_latest(&mut conn, ":memory:").unwrap();
        let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            tables,
            [
                "member_arrivals",
                "member_runs",
                "reports",
                "runs",
                "settings",
                "web_budgets",
                "web_results"
            ]
        );
        // Applying again is a no-op.
        to_latest(&mut conn, ":memory:").unwrap();
    }
}
