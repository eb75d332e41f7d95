//! What a DNS worker shares with the sampler, and the pacing both kinds of worker use: each
//! worker counts locally and publishes its totals and the interval's latencies under a lock
//! only the sampler also takes (once an interval), and reads the run's stop and interrupt
//! flags. Also what a stream client's transports share (TCP and DoT in `stream`, DoQ and DoH
//! in `per_query`'s loop): where its queries come from ([`Source`]) and how a connection ended
//! ([`Ended`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wirespeed_model::histogram::RttHistogram;

use super::queries::Cursor;
use super::tracker::{Counts, Tracker};
use crate::run::pacer::{Due, Pacer};

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
    pub pace: Option<Pacer>,
    /// Its IDs in flight and its counts.
    pub tracker: Tracker,
    /// Where it publishes.
    pub shared: std::sync::Arc<WorkerShared>,
    /// The run's flags.
    pub control: std::sync::Arc<Control>,
    /// When the run began.
    pub begin: Instant,
}

impl Part {
    /// How long a stream client may wait at `now_ns` before it has something to do: `most`,
    /// or less when the schedule's next query or the oldest query's timeout comes sooner.
    pub(super) fn wait(&self, now_ns: u64, most: Duration) -> Duration {
        let mut wait = most;
        if let Some(p) = &self.pace {
            let next = p.next_due_ns().unwrap_or(u64::MAX);
            wait = wait.min(Duration::from_nanos(next.saturating_sub(now_ns)));
        }
        if let Some(d) = self.tracker.next_deadline() {
            wait = wait.min(Duration::from_nanos(d.saturating_sub(now_ns)));
        }
        wait
    }

    /// How many queries may go now: the room in the window, and with a schedule what of it is
    /// due (what the schedule skipped counts as never sent).
    pub(super) fn sendable(&mut self, now_ns: u64) -> u64 {
        let room = u64::from(self.window.saturating_sub(self.tracker.in_flight()));
        match &mut self.pace {
            Some(p) => {
                let Due { count: due, skipped } = p.due(now_ns);
                self.tracker.counts.unsent += skipped;
                due.min(room)
            }
            None => room,
        }
    }
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

/// Nanoseconds since `begin` on the monotonic clock.
pub(super) fn since(begin: Instant) -> u64 {
    begin.elapsed().as_nanos() as u64
}

/// Where a stream client's queries come from.
pub(super) enum Source {
    /// The datafile, this client's share of it.
    File(Cursor),
    /// Truncated UDP answers to ask again (`--tc-retry`).
    Retry { rx: mpsc::Receiver<u32>, queue: VecDeque<u32>, closed: bool },
}

impl Source {
    pub(super) fn next(&mut self) -> Option<u32> {
        match self {
            Source::File(c) => c.next(),
            Source::Retry { queue, .. } => queue.pop_front(),
        }
    }

    pub(super) fn exhausted(&self) -> bool {
        match self {
            Source::File(c) => c.exhausted(),
            Source::Retry { queue, closed, .. } => *closed && queue.is_empty(),
        }
    }

    /// Counts what is left of a bounded share as unsent; true when there was a bound.
    pub(super) fn give_up(&mut self, tracker: &mut Tracker) -> bool {
        match self {
            Source::File(c) if c.bounded() => {
                while c.next().is_some() {
                    tracker.counts.unsent += 1;
                }
                true
            }
            _ => false,
        }
    }
}

/// How one connection ended.
pub(super) enum Ended {
    /// Nothing more to do.
    Done,
    /// The server closed it (or it failed) with work left.
    Closed,
}
