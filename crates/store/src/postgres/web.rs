//! Browser speed-test results on PostgreSQL, where several `wirespeed web` servers behind one
//! name save into one table: the per-network rule and the cap hold across all of them because
//! every save takes the same advisory lock for its transaction.

use postgres::Row;
use wirespeed_model::web::{WebResult, WebSource};

use super::runs::{storable, Arg};
use super::Postgres;
use crate::rows::{Budget, Taken, WebFilter, WebPolicy};
use crate::StoreError;

/// Serialises web saves across servers (any fixed number; "ws-web!!").
const WEB_LOCK: i64 = 0x7773_2d77_6562_2121;

const COLUMNS: &str = "id, created_ms, network, isp, country, region, download_bps, upload_bps, ping_ms, jitter_ms, \
     download_by_server, upload_by_server, claimed_download_bps, claimed_upload_bps, user_agent, lang, source, \
     latency_down_ms, latency_up_ms, latency_grade";

fn from_row(r: &Row) -> Result<WebResult, postgres::Error> {
    let source: String = r.try_get(16)?;
    Ok(WebResult {
        id: r.try_get(0)?,
        created_ms: r.try_get(1)?,
        network: r.try_get(2)?,
        isp: r.try_get(3)?,
        country: r.try_get(4)?,
        region: r.try_get(5)?,
        download_bps: r.try_get(6)?,
        upload_bps: r.try_get(7)?,
        ping_ms: r.try_get(8)?,
        jitter_ms: r.try_get(9)?,
        download_by_server: r.try_get(10)?,
        upload_by_server: r.try_get(11)?,
        claimed_download_bps: r.try_get(12)?,
        claimed_upload_bps: r.try_get(13)?,
        user_agent: r.try_get(14)?,
        lang: r.try_get(15)?,
        source: WebSource::from_code(&source).unwrap_or(WebSource::Telemetry),
        latency_down_ms: r.try_get(17)?,
        latency_up_ms: r.try_get(18)?,
        latency_grade: r.try_get(19)?,
    })
}

impl Postgres {
    /// Saves `r` under `policy` (see `Store::save_web`).
    pub(crate) fn save_web(&self, r: &WebResult, policy: WebPolicy) -> Result<(), StoreError> {
        let r = WebResult {
            id: storable(&r.id),
            network: storable(&r.network),
            isp: storable(&r.isp),
            country: storable(&r.country),
            region: storable(&r.region),
            user_agent: storable(&r.user_agent),
            lang: storable(&r.lang),
            ..r.clone()
        };
        self.call(move |c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WEB_LOCK])?;
            if !policy.same_ip_multi {
                tx.execute("DELETE FROM web_results WHERE network = $1", &[&r.network])?;
            }
            tx.execute(
                &format!(
                    "INSERT INTO web_results ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"
                ),
                &[
                    &r.id,
                    &r.created_ms,
                    &r.network,
                    &r.isp,
                    &r.country,
                    &r.region,
                    &r.download_bps,
                    &r.upload_bps,
                    &r.ping_ms,
                    &r.jitter_ms,
                    &r.download_by_server,
                    &r.upload_by_server,
                    &r.claimed_download_bps,
                    &r.claimed_upload_bps,
                    &r.user_agent,
                    &r.lang,
                    &r.source.code(),
                    &r.latency_down_ms,
                    &r.latency_up_ms,
                    &r.latency_grade,
                ],
            )?;
            if policy.max_results > 0 {
                tx.execute(
                    "DELETE FROM web_results WHERE seq IN (SELECT seq FROM web_results
                     ORDER BY created_ms DESC, seq DESC OFFSET $1)",
                    &[&(policy.max_results.min(i64::MAX as u64) as i64)],
                )?;
            }
            tx.commit()
        })
    }

    /// The results `filter` matches, newest first.
    pub(crate) fn list_web(&self, filter: &WebFilter) -> Result<Vec<WebResult>, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM web_results WHERE true");
        let mut args = Vec::new();
        for (column, text) in
            [("isp", &filter.isp), ("country", &filter.country), ("region", &filter.region)]
        {
            if let Some(t) = text {
                args.push(Arg::Text(t.clone()));
                sql.push_str(&format!(" AND strpos(lower({column}), lower(${})) > 0", args.len()));
            }
        }
        if let Some(ms) = filter.since_ms {
            args.push(Arg::Int(ms));
            sql.push_str(&format!(" AND created_ms >= ${}", args.len()));
        }
        sql.push_str(" ORDER BY created_ms DESC, seq DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {}", n.min(i64::MAX as usize)));
        }
        self.call(move |c| {
            let params: Vec<_> = args.iter().map(Arg::as_sql).collect();
            c.query(&sql, &params)?.iter().map(from_row).collect()
        })
    }

    /// One saved result.
    pub(crate) fn get_web(&self, id: &str) -> Result<Option<WebResult>, StoreError> {
        let id = id.to_string();
        self.call(move |c| {
            c.query_opt(&format!("SELECT {COLUMNS} FROM web_results WHERE id = $1"), &[&id])?
                .as_ref()
                .map(from_row)
                .transpose()
        })
    }

    /// Deletes one saved result; false when it was not there.
    pub(crate) fn remove_web(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.call(move |c| Ok(c.execute("DELETE FROM web_results WHERE id = $1", &[&id])? > 0))
    }
}

impl Postgres {
    /// Takes `n` bytes from `client`'s shared budget (see `Store::take_budget`).
    pub(crate) fn take_budget(
        &self,
        client: &str,
        n: f64,
        budget: Budget,
        now_ms: i64,
        force: bool,
    ) -> Result<Taken, StoreError> {
        let client = storable(client);
        self.call(move |c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "DELETE FROM web_budgets WHERE at_ms < $1",
                &[&now_ms.saturating_sub(budget.forget_after_ms())],
            )?;
            // A row to lock, then the lock: servers charging one visitor at once take turns.
            tx.execute(
                "INSERT INTO web_budgets (client, tokens, at_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (client) DO NOTHING",
                &[&client, &budget.capacity, &now_ms],
            )?;
            let row = tx.query_one(
                "SELECT tokens, at_ms FROM web_budgets WHERE client = $1 FOR UPDATE",
                &[&client],
            )?;
            let (tokens, taken) =
                budget.take(Some((row.try_get(0)?, row.try_get(1)?)), now_ms, n, force);
            tx.execute(
                "UPDATE web_budgets SET tokens = $2, at_ms = $3 WHERE client = $1",
                &[&client, &tokens, &now_ms],
            )?;
            tx.commit()?;
            Ok(taken)
        })
    }
}
