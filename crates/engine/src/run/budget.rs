//! What the worker threads of a counted test (`-n`) share: how many messages, connections or
//! requests are left to start. Each worker claims one before it starts it, so the total is
//! exact however many threads there are. A timed test has no budget and every claim succeeds.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A shared count of what is left to start (`None`: unlimited).
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget(Option<Arc<AtomicU64>>);

impl Budget {
    /// A budget of `count`, or an unlimited one.
    pub(crate) fn new(count: Option<u64>) -> Self {
        Self(count.map(|n| Arc::new(AtomicU64::new(n))))
    }

    /// Takes one; false when none are left.
    pub(crate) fn claim(&self) -> bool {
        match &self.0 {
            None => true,
            Some(b) => b.fetch_update(Relaxed, Relaxed, |left| left.checked_sub(1)).is_ok(),
        }
    }
}

/// Fills every empty slot by claiming from `budget` and calling `open` (which may return
/// `None` when the attempt ended at once, freeing the slot again); sets `exhausted` once the
/// budget is spent. Used by the epoll loops of cps and http.
pub(crate) fn fill_slots<T>(
    slots: &mut [Option<T>],
    budget: &Budget,
    exhausted: &mut bool,
    stop: &std::sync::atomic::AtomicBool,
    mut open: impl FnMut(usize) -> Option<T>,
) {
    for (i, slot) in slots.iter_mut().enumerate() {
        while slot.is_none() && !*exhausted && !stop.load(Relaxed) {
            if !budget.claim() {
                *exhausted = true;
                break;
            }
            *slot = open(i);
        }
    }
}

/// How many of `total` slots thread `i` of `threads` gets: an even share, the first threads
/// taking one more when they do not divide evenly.
pub(crate) fn share(total: u16, threads: u16, i: u16) -> usize {
    usize::from(total / threads + u16::from(i < total % threads))
}
