//! What callers hand the store and get back from it, the same for both databases: history
//! rows and their filter, the retention policy, the web results' policy and filter, and a run
//! made ready to insert (its JSON and listing columns computed once, outside any transaction).

use wirespeed_model::Report;

use crate::StoreError;

/// One row of the history: enough to list runs without parsing their reports.
#[derive(Debug, Clone, PartialEq)]
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
    /// Which figure `headline` is (`throughput_bps`, `queries_per_second`, …).
    pub headline_key: Option<String>,
    /// The run's headline figure.
    pub headline: Option<f64>,
    /// Its unit's code (`bit/s`, `req/s`, `ns`, …).
    pub headline_unit: Option<String>,
    /// How it ended when it did not finish: `interrupted` or `aborted`.
    pub ended: Option<String>,
}

/// Which runs to list. Empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Exactly this kind.
    pub kind: Option<String>,
    /// Target containing this text (any case).
    pub target: Option<String>,
    /// Tag containing this text (any case).
    pub tag: Option<String>,
    /// Started at or after this time, ms since the epoch.
    pub since_ms: Option<i64>,
    /// Started before this time, ms since the epoch.
    pub until_ms: Option<i64>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

/// Which runs to keep. Both limits may be set; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep only the newest this many.
    pub keep: Option<u64>,
    /// Delete runs that started longer ago than this, milliseconds.
    pub max_age_ms: Option<i64>,
}

impl Retention {
    /// True when nothing is ever deleted.
    pub fn is_off(&self) -> bool {
        self.keep.is_none() && self.max_age_ms.is_none()
    }
}

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

/// A run ready to insert: the listing columns and the whole report as JSON.
#[derive(Debug, Clone)]
pub(crate) struct NewRun {
    pub(crate) kind: String,
    pub(crate) target: String,
    pub(crate) started_at_ms: i64,
    pub(crate) version: String,
    pub(crate) tag: Option<String>,
    pub(crate) headline_key: String,
    pub(crate) headline: f64,
    pub(crate) headline_unit: String,
    pub(crate) ended: Option<&'static str>,
    pub(crate) json: String,
    /// The run and index of a member's report (`--members`).
    pub(crate) member: Option<(String, i64)>,
    /// The member run a merged report was made from: saving it replaces that run's earlier
    /// merge.
    pub(crate) merged: Option<String>,
}

impl NewRun {
    pub(crate) fn of(report: &Report, tag: Option<&str>) -> Result<Self, StoreError> {
        let head = report.headline();
        Ok(Self {
            kind: report.kind().name().to_string(),
            target: report.target().to_string(),
            started_at_ms: report.meta.start_unix_ms as i64,
            version: report.meta.version.clone(),
            tag: tag.map(str::to_string),
            headline_key: head.key.to_string(),
            headline: head.value,
            headline_unit: head.unit.code().to_string(),
            ended: report.ending(),
            json: serde_json::to_string(report)
                .map_err(|source| StoreError::Corrupt { id: 0, source })?,
            member: report
                .meta
                .member
                .as_ref()
                .map(|m| (m.member.run_id.clone(), i64::from(m.member.index))),
            merged: report.meta.merged.as_ref().map(|m| m.run_id.clone()),
        })
    }
}

/// A visitor's transfer budget shared by web servers: a token bucket of `capacity` bytes,
/// refilled at `per_sec` (bursts up to the whole capacity).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Most bytes the bucket holds.
    pub capacity: f64,
    /// Bytes it gains a second.
    pub per_sec: f64,
}

/// What taking from a budget did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Taken {
    /// The bytes were taken.
    Yes,
    /// Not enough: seconds until there would be.
    Wait(f64),
}

impl Budget {
    /// A bucket holding `tokens` at `at_ms`, at `now_ms`: its tokens after taking `n` (when
    /// there are that many, or always when `force`: bytes already moved are owed), and what
    /// was taken. A bucket never seen starts full.
    pub(crate) fn take(
        &self,
        held: Option<(f64, i64)>,
        now_ms: i64,
        n: f64,
        force: bool,
    ) -> (f64, Taken) {
        let (tokens, at_ms) = held.unwrap_or((self.capacity, now_ms));
        let elapsed = now_ms.saturating_sub(at_ms).max(0) as f64 / 1000.0;
        let tokens = (tokens + elapsed * self.per_sec).min(self.capacity);
        if force || n <= tokens {
            (tokens - n, Taken::Yes)
        } else {
            let short = n.min(self.capacity) - tokens;
            (tokens, Taken::Wait((short / self.per_sec).max(1.0)))
        }
    }

    /// How old a bucket's last use may be before it is full again and can be forgotten.
    pub(crate) fn forget_after_ms(&self) -> i64 {
        ((self.capacity / self.per_sec) * 1000.0).ceil().min(i64::MAX as f64) as i64
    }
}
