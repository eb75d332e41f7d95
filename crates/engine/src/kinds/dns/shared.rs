//! What a DNS worker shares with the sampler, and the pacing both kinds of worker use: each
//! worker counts locally and publishes its totals and the interval's latencies under a lock
//! only the sampler also takes (once an interval), and reads the run's stop and interrupt
//! flags.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use wirespeed_model::histogram::RttHistogram;

use super::tracker::Counts;

/// Publish at least this often while answers come in.
pub(super) const PUBLISH_NS: u64 = 5_000_000;

/// A worker's published state.
#[derive(Debug, Default)]
pub(super) struct Published {
    /// Cumulative counts.
    pub counts: Counts,
    /// Latencies since the sampler last took them.
    pub interval: RttHistogram,
    /// Connection setup times since the sampler last took them (TCP, DoT).
    pub setup: RttHistogram,
}

/// One worker's slot.
#[derive(Debug, Default)]
pub(super) struct WorkerShared {
    pub published: Mutex<Published>,
    /// Set when the worker has ended (and published for the last time).
    pub done: AtomicBool,
    /// When it ended, nanoseconds since the run began: its last answer or timeout.
    pub end_ns: AtomicU64,
}

impl WorkerShared {
    /// Publishes for the last time and marks the worker done at `now_ns`.
    pub(super) fn finish(&self, local: &mut Local, counts: &Counts, now_ns: u64) {
        local.publish(self, counts, now_ns, true);
        self.end_ns.store(now_ns, Relaxed);
        self.done.store(true, Relaxed);
    }
}

/// The run's flags, set by the sampler, read by every worker.
#[derive(Debug, Default)]
pub(super) struct Control {
    /// Send nothing more; wait for what is in flight (the time limit passed).
    pub stop: AtomicBool,
    /// End now; what is in flight counts as interrupted (Ctrl-C).
    pub interrupt: AtomicBool,
}

impl Control {
    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Relaxed) || self.interrupt.load(Relaxed)
    }
}

/// What every worker, UDP thread or stream client, has of the run.
pub(super) struct Part {
    /// The queries, encoded.
    pub queries: std::sync::Arc<super::queries::QuerySet>,
    /// Most queries in flight (the closed loop's `-q` share; the ID space in the open loop).
    pub window: u32,
    /// Its share of `--rate` or `-Q`.
    pub pace: Option<Pace>,
    /// Its IDs in flight and its counts.
    pub tracker: super::tracker::Tracker,
    /// Where it publishes.
    pub shared: std::sync::Arc<WorkerShared>,
    /// The run's flags.
    pub control: std::sync::Arc<Control>,
    /// When the run began.
    pub begin: Instant,
}

/// A worker's local counts and the latencies it has not published yet.
pub(super) struct Local {
    pub pending: Vec<u64>,
    pub setups: Vec<u64>,
    last_publish_ns: u64,
}

impl Local {
    pub(super) fn new() -> Self {
        Self { pending: Vec::with_capacity(4096), setups: Vec::new(), last_publish_ns: 0 }
    }

    /// Publishes `counts` and the pending latencies when enough has gathered (or `force`).
    pub(super) fn publish(
        &mut self,
        shared: &WorkerShared,
        counts: &Counts,
        now_ns: u64,
        force: bool,
    ) {
        let due = force
            || self.pending.len() >= 2048
            || !self.setups.is_empty()
            || now_ns.saturating_sub(self.last_publish_ns) >= PUBLISH_NS;
        if !due {
            return;
        }
        self.last_publish_ns = now_ns;
        if let Ok(mut p) = shared.published.lock() {
            p.counts.clone_from(counts);
            for &ns in &self.pending {
                p.interval.record(ns);
            }
            for &ns in &self.setups {
                p.setup.record(ns);
            }
        }
        self.pending.clear();
        self.setups.clear();
    }
}

/// A schedule of one query every `period_ns`: the open loop's (`--rate`; a worker that falls
/// more than a burst behind skips the missed queries and counts them unsent, so it never
/// catches up in a flood) or `-Q`'s ceiling (the closed loop forgets what it missed).
#[derive(Debug, Clone)]
pub(super) struct Pace {
    period_ns: f64,
    next_ns: f64,
    burst: u64,
    open: bool,
}

impl Pace {
    /// `rate` queries per second for this worker, the first due at `offset_ns`.
    pub(super) fn new(rate: f64, offset_ns: f64, open: bool) -> Self {
        let period_ns = 1e9 / rate;
        // Two milliseconds' worth, and at least a batch: a burst the kernel takes in stride.
        let burst = ((rate * 0.002).ceil() as u64).max(32);
        Self { period_ns, next_ns: offset_ns, burst, open }
    }

    /// How many queries are due at `now_ns`, and how many were skipped to get there.
    pub(super) fn due(&mut self, now_ns: u64) -> (u64, u64) {
        let now = now_ns as f64;
        if now < self.next_ns {
            return (0, 0);
        }
        let mut behind = ((now - self.next_ns) / self.period_ns).floor() as u64 + 1;
        let mut skipped = 0;
        if behind > self.burst {
            let missed = behind - self.burst;
            self.next_ns += missed as f64 * self.period_ns;
            behind = self.burst;
            if self.open {
                skipped = missed;
            }
        }
        (behind, skipped)
    }

    /// Marks `n` queries sent (or given up on).
    pub(super) fn consume(&mut self, n: u64) {
        self.next_ns += n as f64 * self.period_ns;
    }

    /// True for the open loop's schedule.
    pub(super) fn is_open(&self) -> bool {
        self.open
    }

    /// When the next query falls due.
    pub(super) fn next_ns(&self) -> u64 {
        self.next_ns.max(0.0) as u64
    }
}

/// Nanoseconds since `begin` on the monotonic clock.
pub(super) fn since(begin: Instant) -> u64 {
    begin.elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_is_even_and_the_open_loop_skips_what_it_missed() {
        let mut p = Pace::new(1000.0, 0.0, true); // one per ms, burst 32
        assert_eq!(p.due(0), (1, 0));
        p.consume(1);
        assert_eq!(p.due(500_000), (0, 0));
        assert_eq!(p.due(3_000_000).0, 3);
        p.consume(3);
        assert_eq!(p.next_ns(), 4_000_000);
        // A 100 ms stall: 97 due, 32 sent, 65 skipped.
        assert_eq!(p.due(100_000_000), (32, 65));
        let mut closed = Pace::new(1000.0, 0.0, false);
        assert_eq!(closed.due(100_000_000), (32, 0));
    }
}
