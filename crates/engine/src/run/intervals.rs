//! The clock every client that samples worker threads shares (latency, cps, ping): it closes
//! an interval at each boundary, and ends at the test's deadline, when the workers are done
//! (a count ran out) or when the user interrupts.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// What the clock drives: one test's sampler.
pub(crate) trait Sampler {
    /// Closes the interval ending now at `end_ns` (measured from the test's start);
    /// `nominal_ns` is where the schedule put that end, which decides whether the interval
    /// belongs to the warm-up (ticks fire a little late).
    fn close(&mut self, end_ns: u64, nominal_ns: u64);
    /// True when the workers have nothing more to do.
    fn finished(&self) -> bool;
}

/// Runs `sampler`'s intervals from `begin` until `total_ns` has passed (`None`: until the
/// workers finish) or `cancel` fires; returns true when interrupted. The last, partial
/// interval is left for the caller to close after it has stopped the workers.
pub(crate) async fn drive(
    sampler: &mut impl Sampler,
    begin: Instant,
    interval_ns: u64,
    total_ns: Option<u64>,
    cancel: &CancellationToken,
) -> bool {
    let start = tokio::time::Instant::from_std(begin);
    let interval = Duration::from_nanos(interval_ns);
    let mut ticks = tokio::time::interval_at(start + interval, interval);
    let deadline =
        tokio::time::sleep_until(start + Duration::from_nanos(total_ns.unwrap_or(u64::MAX / 4)));
    tokio::pin!(deadline);
    // Only a test bounded by a count can finish before its deadline; a timed one need not
    // wake every 10 ms to look (on a small machine those wake-ups show in the tail latency).
    // A timed test runs to its deadline even when its workers are done early (an open-model
    // step whose last request fell due long before its end): the first poll is one period in,
    // not at once as a plain interval's, which ended `http -r 1 -d 1` after its only response.
    let poll_every =
        if total_ns.is_some() { Duration::from_secs(3600) } else { Duration::from_millis(10) };
    let mut poll = tokio::time::interval_at(start + poll_every, poll_every);
    let mut closed = 0u64;
    loop {
        // Ticks first: after a stall, every boundary that passed is closed before the deadline
        // is seen, so the warm-up interval exists even on a loaded machine.
        tokio::select! {
            biased;
            _ = ticks.tick() => {
                let now = begin.elapsed().as_nanos() as u64;
                // A boundary within a millisecond of the deadline is the last interval's end.
                if total_ns.is_none_or(|t| now + 1_000_000 < t) {
                    closed += 1;
                    sampler.close(now, closed * interval_ns);
                }
            }
            _ = &mut deadline => return false,
            _ = cancel.cancelled() => return true,
            _ = poll.tick() => if sampler.finished() { return false },
        }
    }
}
