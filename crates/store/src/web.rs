//! Browser speed-test results (`wirespeed web`): saved under speedtest-x's two settings — at most
//! N results, oldest dropped, and one row per network unless several are allowed — and listed
//! newest first with the results page's filters.

use rusqlite::types::Value;
use rusqlite::{params, OptionalExtension, Row};
use wirespeed_model::web::{WebResult, WebSource};

use crate::{Store, StoreError};

/// How many web results are kept, and how many per network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebPolicy {
    /// Keep at most this many results, dropping the oldest (0: no limit).
    pub max_results: u64,
    /// Keep every result of a network; otherwise a new one replaces the network's older ones.
    pub same_ip_multi: bool,
}

/// Which web results to list. Empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebFilter {
    /// ISP containing this text (any case).
    pub isp: Option<String>,
    /// Country containing this text (any case).
    pub country: Option<String>,
    /// Region containing this text (any case).
    pub region: Option<String>,
    /// Recorded at or after this time, ms since the epoch.
    pub since_ms: Option<i64>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

const COLUMNS: &str = "id, created_ms, network, isp, country, region, download_bps, upload_bps, ping_ms, jitter_ms, \
     download_by_server, upload_by_server, claimed_download_bps, claimed_upload_bps, user_agent, lang, source";

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
    })
}

impl Store {
    /// Saves a web result under `policy`, in one transaction.
    pub fn save_web(&self, r: &WebResult, policy: WebPolicy) -> Result<(), StoreError> {
        self.sql(|c| {
            let tx = c.unchecked_transaction()?;
            if !policy.same_ip_multi {
                tx.execute("DELETE FROM web_results WHERE network = ?1", [&r.network])?;
            }
            tx.execute(
                &format!(
                    "INSERT INTO web_results ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
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
                    r.source.code()
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
    pub fn list_web(&self, filter: &WebFilter) -> Result<Vec<WebResult>, StoreError> {
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
    pub fn get_web(&self, id: &str) -> Result<Option<WebResult>, StoreError> {
        self.sql(|c| {
            c.query_row(&format!("SELECT {COLUMNS} FROM web_results WHERE id = ?1"), [id], from_row)
                .optional()
        })
    }

    /// Deletes the web result `id`; false when there was none.
    pub fn remove_web(&self, id: &str) -> Result<bool, StoreError> {
        self.sql(|c| c.execute("DELETE FROM web_results WHERE id = ?1", [id])).map(|n| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, ms: i64, network: &str) -> WebResult {
        WebResult {
            id: id.into(),
            created_ms: ms,
            network: network.into(),
            isp: "Example Net".into(),
            country: "Netherlands".into(),
            region: "Amsterdam".into(),
            download_bps: Some(9e8),
            upload_bps: Some(4e8),
            ping_ms: Some(3.5),
            jitter_ms: Some(0.4),
            download_by_server: true,
            upload_by_server: true,
            claimed_download_bps: Some(9.5e8),
            claimed_upload_bps: None,
            user_agent: "test".into(),
            lang: "en".into(),
            source: WebSource::Page,
        }
    }

    fn ids(s: &Store, f: &WebFilter) -> Vec<String> {
        s.list_web(f).unwrap().into_iter().map(|r| r.id).collect()
    }

    #[test]
    fn one_row_per_network_unless_asked_and_the_oldest_go_first() {
        let s = Store::open_in_memory().unwrap();
        let one = WebPolicy { max_results: 3, same_ip_multi: false };
        s.save_web(&result("a", 1, "192.0.2.0/24"), one).unwrap();
        s.save_web(&result("b", 2, "192.0.2.0/24"), one).unwrap();
        s.save_web(&result("c", 3, "198.51.100.0/24"), one).unwrap();
        assert_eq!(ids(&s, &WebFilter::default()), ["c", "b"]);
        let multi = WebPolicy { max_results: 3, same_ip_multi: true };
        s.save_web(&result("d", 4, "198.51.100.0/24"), multi).unwrap();
        s.save_web(&result("e", 5, "198.51.100.0/24"), multi).unwrap();
        assert_eq!(ids(&s, &WebFilter::default()), ["e", "d", "c"], "b dropped as the oldest");
        assert_eq!(s.get_web("d").unwrap().unwrap(), result("d", 4, "198.51.100.0/24"));
        assert!(s.remove_web("d").unwrap());
        assert!(!s.remove_web("d").unwrap());
        assert!(s.get_web("d").unwrap().is_none());
    }

    #[test]
    fn filters_are_values_not_sql() {
        let s = Store::open_in_memory().unwrap();
        let p = WebPolicy { max_results: 0, same_ip_multi: true };
        let mut other = result("x", 10, "203.0.113.0/24");
        other.isp = "Other ISP".into();
        other.country = "Germany".into();
        s.save_web(&result("a", 1, "192.0.2.0/24"), p).unwrap();
        s.save_web(&other, p).unwrap();
        let f = |isp: &str| WebFilter { isp: Some(isp.into()), ..Default::default() };
        assert_eq!(ids(&s, &f("example")), ["a"]);
        assert_eq!(ids(&s, &f("' OR 1 --")), Vec::<String>::new());
        let f = WebFilter { country: Some("GERM".into()), ..Default::default() };
        assert_eq!(ids(&s, &f), ["x"]);
        let f = WebFilter { since_ms: Some(5), limit: Some(1), ..Default::default() };
        assert_eq!(ids(&s, &f), ["x"]);
    }
}
