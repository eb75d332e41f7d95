//! What one side's control task and its data threads share while a bandwidth test runs
//! ([`Shared`]: flags to stop sending, drain or abort, and per-flow byte budgets for `-n`), and
//! which way a stream end moves data ([`Role`]). The TCP/UDP workers and the QUIC ends both
//! use them, so neither imports the other's module for them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Flow};

/// State shared between one side's control task and its data threads.
#[derive(Debug)]
pub(crate) struct Shared {
    /// When the test began on this side (`Begin` sent or received).
    pub begin: Instant,
    stop_send: AtomicBool,
    drain: AtomicBool,
    abort: AtomicBool,
    drain_started_ns: AtomicU64,
    stop_started_ns: AtomicU64,
    /// Bytes still to send per flow with `-n`; `None` for time-based tests.
    budgets: [Option<AtomicU64>; 2],
}

impl Shared {
    pub(super) fn new(begin: Instant, spec: &BandwidthSpec) -> Self {
        let budget = || spec.bytes.map(AtomicU64::new);
        Self {
            begin,
            stop_send: AtomicBool::new(false),
            drain: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            drain_started_ns: AtomicU64::new(0),
            stop_started_ns: AtomicU64::new(0),
            budgets: [budget(), budget()],
        }
    }

    /// Nanoseconds since the test began on this side.
    pub(crate) fn now_ns(&self) -> u64 {
        self.begin.elapsed().as_nanos() as u64
    }

    /// Tells senders to stop.
    pub(super) fn stop_sending(&self) {
        self.stop_started_ns.store(self.now_ns(), Relaxed);
        self.stop_send.store(true, Relaxed);
    }

    /// Tells UDP receivers to leave once the stream falls quiet.
    pub(super) fn begin_drain(&self) {
        self.drain_started_ns.store(self.now_ns(), Relaxed);
        self.drain.store(true, Relaxed);
    }

    /// Tells every thread to stop at once.
    pub(super) fn abort(&self) {
        self.abort.store(true, Relaxed);
        self.stop_send.store(true, Relaxed);
    }

    /// When senders were told to stop, nanoseconds since the test began (0: not yet).
    pub(super) fn stop_started_ns(&self) -> u64 {
        self.stop_started_ns.load(Relaxed)
    }

    /// When receivers were told to drain, nanoseconds since the test began (0: not yet).
    pub(super) fn drain_started_ns(&self) -> u64 {
        self.drain_started_ns.load(Relaxed)
    }

    /// Whether receivers were told to drain.
    pub(super) fn draining(&self) -> bool {
        self.drain.load(Relaxed)
    }

    pub(super) fn aborted(&self) -> bool {
        self.abort.load(Relaxed)
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop_send.load(Relaxed) || self.aborted()
    }

    /// Takes up to `want` bytes from `flow`'s budget; `want` itself when there is no budget.
    pub(super) fn claim(&self, flow: Flow, want: u64) -> u64 {
        let Some(budget) = &self.budgets[flow_index(flow)] else { return want };
        let mut got = 0;
        let _ = budget.fetch_update(Relaxed, Relaxed, |left| {
            got = left.min(want);
            Some(left - got)
        });
        got
    }
}

fn flow_index(flow: Flow) -> usize {
    match flow {
        Flow::Upload => 0,
        Flow::Download => 1,
    }
}

/// Whether a stream end writes or reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Writes data.
    Send,
    /// Reads data.
    Recv,
}
