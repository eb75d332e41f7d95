//! What the server itself measured of a test: body bytes sent (download) and received (upload)
//! in 100 ms bins from each direction's first byte. A test is found by the token its page got
//! from `/api/start` (`t=` on every request), or — for LibreSpeed clients, which have no such
//! thing — by its client's address and the timing of its transfers ([`crate::runs`]).
//! speedtest-x stores whatever figures the browser posts; these bins are what lets a result say
//! what the server saw instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::runs::{AddressRuns, Direction, Run};

/// Width of a bin.
const BIN: Duration = Duration::from_millis(100);
/// Bins per direction: 30 s, twice a LibreSpeed test's longest phase.
const BINS: usize = 300;
/// Tests remembered at once; the least recently active go first.
const MAX_METERS: usize = 1024;
/// A test untouched this long is forgotten.
const IDLE: Duration = Duration::from_secs(120);
/// Shortest stretch after the grace period that makes a figure.
const MIN_MEASURED: Duration = Duration::from_secs(1);
/// How far before the grace period's end a stall is looked for (see [`span_start`]).
const STALL_LOOKBACK: usize = 30;

/// Bytes over time in one direction.
#[derive(Debug)]
pub struct Timeline {
    first: OnceLock<Instant>,
    bins: Box<[AtomicU64]>,
    total: AtomicU64,
    /// Nanoseconds from `first` to the latest bytes.
    last_ns: AtomicU64,
}

impl Default for Timeline {
    fn default() -> Self {
        Self {
            first: OnceLock::new(),
            bins: (0..BINS).map(|_| AtomicU64::new(0)).collect(),
            total: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
        }
    }
}

impl Timeline {
    /// Records `n` bytes moved at `now`.
    pub fn add(&self, n: u64, now: Instant) {
        let first = *self.first.get_or_init(|| now);
        let at = now.saturating_duration_since(first);
        let bin = (at.as_nanos() / BIN.as_nanos()) as usize;
        if let Some(b) = self.bins.get(bin) {
            b.fetch_add(n, Ordering::Relaxed);
        }
        self.total.fetch_add(n, Ordering::Relaxed);
        self.last_ns.fetch_max(at.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Every byte recorded.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// When the latest bytes were recorded.
    pub fn last_at(&self) -> Option<Instant> {
        let first = self.first.get()?;
        Some(*first + Duration::from_nanos(self.last_ns.load(Ordering::Relaxed)))
    }

    /// Bits per second after the first `grace` (slow start, buffers filling), up to the last
    /// byte; `None` when less than a second was measured after it, or nothing moved in it (a
    /// server figure of 0 would only say the bytes went uncounted). A stall that runs into
    /// the grace period's end moves the start back to where the stall began (`span_start`).
    pub fn rate_bps(&self, grace: Duration) -> Option<f64> {
        self.first.get()?;
        let last =
            Duration::from_nanos(self.last_ns.load(Ordering::Relaxed)).min(BIN * BINS as u32);
        let from = (grace.as_nanos() / BIN.as_nanos()) as usize;
        if last < BIN * from as u32 + MIN_MEASURED {
            return None;
        }
        let until = ((last.as_nanos() / BIN.as_nanos()) as usize).min(BINS - 1);
        let bins: Vec<u64> =
            self.bins[..=until].iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let from = span_start(&bins, from);
        let bytes: u64 = bins[from..].iter().sum();
        if bytes == 0 {
            return None;
        }
        Some(bytes as f64 * 8.0 / (last - BIN * from as u32).as_secs_f64())
    }
}

/// The first bin of the measured span: `from` (the grace period's end), or earlier when a
/// stall runs into it. A TCP connection that lost segments delivers nothing to the
/// application until they are sent again (a retransmission timeout is a second or more on a
/// path with a full queue), and then everything that arrived meanwhile at once; bytes are
/// counted as they are read (or acknowledged in order), so a stall across the cut puts what
/// arrived before it after it, and the rate overstates the path (23.5 Mbit/s was read through
/// a 20 Mbit/s router). The span starts instead at the beginning of the largest shortfall
/// ending at the cut: the bins, up to [`STALL_LOOKBACK`] back, whose deficit against the
/// measured span's median bin is largest, if it comes to two bins' worth or more.
fn span_start(bins: &[u64], from: usize) -> usize {
    let Some(measured) = bins.get(from..).filter(|b| !b.is_empty()) else { return from };
    let mut sorted = measured.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2] as i128;
    let (mut deficit, mut best, mut start) = (0i128, 0i128, from);
    for k in (from.saturating_sub(STALL_LOOKBACK)..from).rev() {
        deficit += median - bins[k] as i128;
        if deficit > best {
            (best, start) = (deficit, k);
        }
    }
    if best >= 2 * median && median > 0 {
        start
    } else {
        from
    }
}

/// One test's two directions.
#[derive(Debug)]
pub struct Meter {
    /// Body bytes the server sent.
    pub download: Timeline,
    /// Body bytes the server received.
    pub upload: Timeline,
    touched: Mutex<Instant>,
}

impl Meter {
    fn new(now: Instant) -> Self {
        Self {
            download: Timeline::default(),
            upload: Timeline::default(),
            touched: Mutex::new(now),
        }
    }

    fn touch(&self, now: Instant) {
        *self.touched.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    fn touched(&self) -> Instant {
        *self.touched.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every test being measured.
#[derive(Debug, Default)]
pub struct Meters {
    /// Tests of wirespeed's page, by token.
    tokens: Mutex<HashMap<String, Arc<Meter>>>,
    /// LibreSpeed clients' transfers, by address.
    pub addresses: AddressRuns,
}

impl Meters {
    /// The meter of a live token.
    pub fn get(&self, token: &str, now: Instant) -> Option<Arc<Meter>> {
        let map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let m = map.get(token)?;
        m.touch(now);
        Some(m.clone())
    }

    /// Starts a meter for a new token.
    pub fn issue(&self, token: String, now: Instant) -> Arc<Meter> {
        let mut map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_METERS {
            map.retain(|_, m| now.saturating_duration_since(m.touched()) < IDLE);
        }
        if map.len() >= MAX_METERS {
            let oldest = map.iter().min_by_key(|(_, m)| m.touched()).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                map.remove(&k);
            }
        }
        let meter = Arc::new(Meter::new(now));
        map.insert(token, meter.clone());
        meter
    }

    /// Takes the meter of `token` away (its test is over and recorded).
    pub fn finish(&self, token: &str) -> Option<Arc<Meter>> {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).remove(token)
    }

    /// The meter of `token`, if there is one.
    pub fn peek(&self, token: &str) -> Option<Arc<Meter>> {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).get(token).cloned()
    }
}

/// Where one transfer's bytes are counted: a token's meter, or its address's run.
#[derive(Debug, Clone)]
pub enum Tally {
    /// A direction of a token's meter.
    Token(Arc<Meter>, Direction),
    /// A run of a LibreSpeed client's address.
    Run(Arc<Run>),
}

impl Tally {
    /// Counts `n` bytes moved at `at`.
    pub fn add(&self, n: u64, at: Instant) {
        match self {
            Tally::Token(m, Direction::Download) => m.download.add(n, at),
            Tally::Token(m, Direction::Upload) => m.upload.add(n, at),
            Tally::Run(r) => r.timeline.add(n, at),
        }
    }
}

/// A transfer in progress: counts into its tally, and tells its run when it is over (dropped:
/// done, or cut).
#[derive(Debug)]
pub struct Transfer(Tally);

impl Transfer {
    /// A transfer counted into `tally`; a run's must have been started for it.
    pub fn new(tally: Tally) -> Self {
        Self(tally)
    }

    /// Where its bytes go.
    pub fn tally(&self) -> &Tally {
        &self.0
    }

    /// Counts `n` bytes moved at `at`.
    pub fn add(&self, n: u64, at: Instant) {
        self.0.add(n, at);
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        if let Tally::Run(r) = &self.0 {
            r.end(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_skips_the_grace_period_and_needs_a_second_after_it() {
        let t = Timeline::default();
        let t0 = Instant::now();
        assert_eq!(t.rate_bps(Duration::ZERO), None);
        // 1 MB in the first 100 ms (slow start), then 10 MB/s for 2 s.
        t.add(1_000_000, t0);
        for i in 1..=20 {
            t.add(1_000_000, t0 + BIN * i);
        }
        assert_eq!(t.total(), 21_000_000);
        let bps = t.rate_bps(Duration::from_millis(100)).unwrap();
        // Bins 1..=20 hold 20 MB over the 1.9 s from 0.1 s to the last byte at 2.0 s.
        assert!((bps - 20e6 * 8.0 / 1.9).abs() < 1.0, "{bps}");
        assert_eq!(t.rate_bps(Duration::from_millis(1500)), None, "only 0.5 s after grace");
    }

    #[test]
    fn a_stall_across_the_cut_does_not_inflate_the_rate() {
        // 1 MB a bin, a second of nothing (lost segments awaiting a timeout) ending at the
        // 3 s cut, then that second's bytes read at once with the next second's, then 1 MB a
        // bin again: 1 MB a bin throughout, as the path carried it.
        let t = Timeline::default();
        let t0 = Instant::now();
        for i in 0..60u32 {
            let n = match i {
                20..30 => 0,
                30..40 => 2_000_000,
                _ => 1_000_000,
            };
            if n > 0 {
                t.add(n, t0 + BIN * i);
            }
        }
        let per_bin = t.rate_bps(Duration::from_secs(3)).unwrap() / 8.0 / 10.0;
        // From the stall's start (2.0 s) to the last byte (5.9 s): 40 MB over 3.9 s (the
        // fencepost of the steady case below), not 40 MB over the 2.9 s after the cut.
        assert!((per_bin - 40e6 / 39.0).abs() < 1.0, "{per_bin} bytes a bin");
        // Without the stall nothing moves: 30 MB from 3.0 s to 5.9 s.
        let steady = Timeline::default();
        for i in 0..60u32 {
            steady.add(1_000_000, t0 + BIN * i);
        }
        let per_bin = steady.rate_bps(Duration::from_secs(3)).unwrap() / 8.0 / 10.0;
        assert!((per_bin - 30e6 / 29.0).abs() < 1.0, "{per_bin}");
    }

    #[test]
    fn tokens_must_be_issued() {
        let m = Meters::default();
        let now = Instant::now();
        assert!(m.get("nope", now).is_none());
        m.issue("t1".into(), now);
        m.get("t1", now).unwrap().download.add(5, now);
        assert_eq!(m.finish("t1").unwrap().download.total(), 5);
        assert!(m.peek("t1").is_none());
    }

    #[test]
    fn nothing_measured_after_the_grace_period_is_no_figure_not_zero() {
        let t = Timeline::default();
        let t0 = Instant::now();
        t.add(1_000_000, t0);
        // The last byte 3 s later, nothing between: a span with no bytes in it.
        t.add(0, t0 + Duration::from_secs(3));
        assert_eq!(t.rate_bps(Duration::from_millis(1500)), None);
    }
}
