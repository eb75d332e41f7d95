//! Browser speed-test results (`wirespeed web`): saved under speedtest-x's two settings — at most
//! N results, oldest dropped, and one row per network unless several are allowed — and listed
//! newest first with the results page's filters.

use rusqlite::types::Value;
use rusqlite::{params, OptionalExtension, Row};
use wirespeed_model::web::{WebResult, WebSource};

use super::Sqlite;
use crate::rows::{Budget, Taken, WebFilter, WebPolicy};
use crate::StoreError;

const COLUMNS: &str = "id, created_ms, network, isp, country, region, download_bps, upload_bps, ping_ms, jitter_ms, \
     download_by_server, upload_by_server, claimed_download_bps, claimed_upload_bps, user_agent, lang, source, \
     latency_down_ms, latency_up_ms, latency_grade";

fn from_row(r: &Row<'_>) -> rusqlite::Result<WebResult> {
    let source: String = r.get(16)?;
    Ok(WebResult {
        id: r.get(0)?,
        created_ms: r.get(1)?,
        network: r.get(2)?,
        isp: r.get(3)?,
        country: r.get(4)?,
        region: r.get(5)?,
        download_bps: r.get(6)?,
        upload_bps: r.get(7)?,
        ping_ms: r.get(8)?,
        jitter_ms: r.get(9)?,
        download_by_server: r.get(10)?,
        upload_by_server: r.get(11)?,
        claimed_download_bps: r.get(12)?,
        claimed_upload_bps: r.get(13)?,
        user_agent: r.get(14)?,
        lang: r.get(15)?,
        source: WebSource::from_code(&source).unwrap_or(WebSource::Telemetry),
        latency_down_ms: r.get(17)?,
        latency_up_ms: r.get(18)?,
        latency_grade: r.get(19)?,
    })
}

impl Sqlite {
    /// Saves a web result under `policy`, in one transaction.
    pub(crate) fn save_web(&self, r: &WebResult, policy: WebPolicy) -> Result<(), StoreError> {
        self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            if !policy.same_ip_multi {
                tx.execute("DELETE FROM web_results WHERE network = ?1", [&r.network])?;
            }
            tx.execute(
                &format!(
                    "INSERT INTO web_results ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"
                ),
                params![
                    r.id,
                    r.created_ms,
                    r.network,
                    r.isp,
                    r.country,
                    r.region,
                    r.download_bps,
                    r.upload_bps,
                    r.ping_ms,
                    r.jitter_ms,
                    r.download_by_server,
                    r.upload_by_server,
                    r.claimed_download_bps,
                    r.claimed_upload_bps,
                    r.user_agent,
                    r.lang,
                    r.source.code(),
                    r.latency_down_ms,
                    r.latency_up_ms,
                    r.latency_grade
                ],
            )?;
            if policy.max_results > 0 {
                tx.execute(
                    "DELETE FROM web_results WHERE rowid IN (SELECT rowid FROM web_results
                     ORDER BY created_ms DESC, rowid DESC LIMIT -1 OFFSET ?1)",
                    [policy.max_results.min(i64::MAX as u64) as i64],
                )?;
            }
            tx.commit()
        })
    }

    /// The web results `filter` matches, newest first.
    pub(crate) fn list_web(&self, filter: &WebFilter) -> Result<Vec<WebResult>, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM web_results WHERE 1");
        let mut args: Vec<Value> = Vec::new();
        for (column, text) in
            [("isp", &filter.isp), ("country", &filter.country), ("region", &filter.region)]
        {
            if let Some(t) = text {
                sql.push_str(&format!(" AND instr(lower({column}), lower(?)) > 0"));
                args.push(Value::Text(t.clone()));
            }
        }
        if let Some(ms) = filter.since_ms {
            sql.push_str(" AND created_ms >= ?");
            args.push(Value::Integer(ms));
        }
        sql.push_str(" ORDER BY created_ms DESC, rowid DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {}", n.min(i64::MAX as usize)));
        }
        self.sql(|c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), from_row)?;
            rows.collect()
        })
    }

    /// The web result `id`, if there is one.
    pub(crate) fn get_web(&self, id: &str) -> Result<Option<WebResult>, StoreError> {
        self.sql(|c| {
            c.query_row(&format!("SELECT {COLUMNS} FROM web_results WHERE id = ?1"), [id], from_row)
                .optional()
        })
    }

    /// Deletes the web result `id`; false when there was none.
    pub(crate) fn remove_web(&self, id: &str) -> Result<bool, StoreError> {
        self.sql(|c| c.execute("DELETE FROM web_results WHERE id = ?1", [id])).map(|n| n > 0)
    }
}

impl Sqlite {
    /// Takes `n` bytes from `client`'s shared budget (see `Store::take_budget`).
    pub(crate) fn take_budget(
        &self,
        client: &str,
        n: f64,
        budget: Budget,
        now_ms: i64,
        force: bool,
    ) -> Result<Taken, StoreError> {
        self.sql(|c| {
            // IMMEDIATE: the write lock is taken before the read, so two servers cannot both
            // read the same tokens and spend them twice.
            c.execute_batch("BEGIN IMMEDIATE")?;
            let outcome = (|| {
                c.execute(
                    "DELETE FROM web_budgets WHERE at_ms < ?1",
                    [now_ms.saturating_sub(budget.forget_after_ms())],
                )?;
                let held = c
                    .query_row(
                        "SELECT tokens, at_ms FROM web_budgets WHERE client = ?1",
                        [client],
                        |r| Ok((r.get::<_, f64>(0)?, r.get::<_, i64>(1)?)),
                    )
                    .optional()?;
                let (tokens, taken) = budget.take(held, now_ms, n, force);
                c.execute(
                    "INSERT INTO web_budgets (client, tokens, at_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (client) DO UPDATE SET tokens = excluded.tokens, at_ms = excluded.at_ms",
                    params![client, tokens, now_ms],
                )?;
                Ok(taken)
            })();
            match outcome {
                Ok(taken) => c.execute_batch("COMMIT").map(|()| taken),
                Err(e) => {
                    let _ = c.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })
    }
}
