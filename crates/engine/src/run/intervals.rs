//! The one interval clock every client shares (bandwidth, latency, cps, HTTP, DNS, rpm's legs): where
//! intervals end, which belong to the warm-up, what happens at the deadline and to the last,
//! partial interval. [`Clock`] holds those rules with the time passed in, so they are
//! unit-tested; [`Timers`] drives it with tokio's timers; [`drive`] is the loop of the kinds
//! that only sample worker threads.

use std::convert::Infallible;
use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::time::{Interval, Sleep};
use tokio_util::sync::CancellationToken;

/// A boundary this close before the deadline is the deadline's: the last interval ends there,
/// closed by the caller once its workers have stopped, rather than leaving a sliver after it.
const DEADLINE_SLACK_NS: u64 = 1_000_000;

/// What a run's deadline means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The run stops at its deadline (a timed test) or when its workers finish (a counted
    /// one). The boundary at the deadline is not closed: the caller closes the last interval
    /// at the moment its workers stopped.
    Stop,
    /// The boundary at the deadline is closed like any other. For DNS the deadline only
    /// stops new work; the run goes on until the last answers are in or time out, and
    /// boundaries are closed as they come. How long that takes is not known in advance, so a
    /// tail too short to give a rate joins the interval before it. An rpm leg's deadline is
    /// its last boundary: the leg ends there, with that interval closed.
    Drain,
}

/// The interval ending at a boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Boundary {
    /// When it ended, from the test's start (a tick fires a little late, more after a stall).
    pub end_ns: u64,
    /// True when it belongs to the warm-up: it began before the warm-up's end.
    pub omitted: bool,
    /// True when the warm-up ends exactly here.
    pub ends_warm_up: bool,
}

/// The rules of one test's intervals, with the time passed in.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    interval_ns: u64,
    deadline_ns: Option<u64>,
    warmup_ns: u64,
    ending: Ending,
    /// Boundaries closed so far.
    closed: u64,
}

impl Clock {
    /// A clock of `interval_ns` intervals; `deadline_ns` is a timed test's end (`None`: the
    /// workers decide); intervals that begin before `warmup_ns` are the warm-up's.
    pub(crate) fn new(
        interval_ns: u64,
        deadline_ns: Option<u64>,
        warmup_ns: u64,
        ending: Ending,
    ) -> Self {
        Self { interval_ns: interval_ns.max(1), deadline_ns, warmup_ns, ending, closed: 0 }
    }

    /// Where the schedule puts the next boundary. After a stall the ticks that passed each
    /// close one interval, in order: the warm-up is judged by this nominal time, never by
    /// when a late tick fired, so a loaded machine cannot move it.
    fn next_nominal_ns(&self) -> u64 {
        (self.closed + 1).saturating_mul(self.interval_ns)
    }

    /// True when an interval beginning at `start_ns` (nominal) belongs to the warm-up.
    fn in_warm_up(&self, start_ns: u64) -> bool {
        start_ns < self.warmup_ns
    }

    /// A tick fired at `now_ns`: the interval it closes, or `None` when the boundary is the
    /// deadline's and the run stops there ([`Ending::Stop`]).
    pub(crate) fn tick(&mut self, now_ns: u64) -> Option<Boundary> {
        let at_deadline =
            self.deadline_ns.is_some_and(|d| now_ns.saturating_add(DEADLINE_SLACK_NS) >= d);
        if self.ending == Ending::Stop && at_deadline {
            return None;
        }
        let nominal_end = self.next_nominal_ns();
        self.closed += 1;
        Some(Boundary {
            end_ns: now_ns,
            omitted: self.in_warm_up(nominal_end - self.interval_ns),
            ends_warm_up: self.warmup_ns > 0 && nominal_end == self.warmup_ns,
        })
    }

    /// The run's last, partial interval, ending when the workers stopped at `end_ns`.
    pub(crate) fn last(&self, end_ns: u64) -> Boundary {
        Boundary {
            end_ns,
            omitted: self.in_warm_up(self.closed.saturating_mul(self.interval_ns)),
            ends_warm_up: false,
        }
    }

    /// True when the last interval, from the last boundary at `last_end_ns` to `end_ns`, is
    /// a drain's sliver (under a tenth of an interval) that joins the interval before it
    /// rather than show a rate computed over a few microseconds.
    pub(crate) fn tail_joins_previous(&self, last_end_ns: u64, end_ns: u64) -> bool {
        self.ending == Ending::Drain
            && self.closed > 0
            && end_ns.saturating_sub(last_end_ns) < self.interval_ns / 10
    }

    /// Where the warm-up ends when that is not on a boundary (for a caller that can take
    /// its totals between ticks, as bandwidth's byte counters can).
    pub(crate) fn warm_up_between_boundaries(&self) -> Option<u64> {
        (self.warmup_ns > 0 && !self.warmup_ns.is_multiple_of(self.interval_ns))
            .then_some(self.warmup_ns)
    }
}

/// What [`Timers::next`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tick {
    /// An interval ended.
    Boundary(Boundary),
    /// The warm-up ended between boundaries (only when asked for).
    WarmUpEnded,
    /// A timed test's deadline passed (once).
    Deadline,
}

/// A [`Clock`] on tokio's timers, anchored at the test's start.
pub(crate) struct Timers {
    clock: Clock,
    begin: Instant,
    ticks: Interval,
    deadline: Pin<Box<Sleep>>,
    deadline_seen: bool,
    warm_up: Option<Pin<Box<Sleep>>>,
}

impl Timers {
    /// Starts `clock`'s timers at `begin`. With `exact_warm_up`, a warm-up that ends between
    /// boundaries is reported as [`Tick::WarmUpEnded`].
    pub(crate) fn start(clock: Clock, begin: Instant, exact_warm_up: bool) -> Self {
        let start = tokio::time::Instant::from_std(begin);
        let interval = Duration::from_nanos(clock.interval_ns);
        let at = |ns: u64| start + Duration::from_nanos(ns);
        let warm_up = clock
            .warm_up_between_boundaries()
            .filter(|_| exact_warm_up)
            .map(|ns| Box::pin(tokio::time::sleep_until(at(ns))));
        Self {
            ticks: tokio::time::interval_at(start + interval, interval),
            deadline: Box::pin(tokio::time::sleep_until(at(clock
                .deadline_ns
                .unwrap_or(u64::MAX / 4)))),
            deadline_seen: false,
            warm_up,
            clock,
            begin,
        }
    }

    /// The rules, for the last interval's close.
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Nanoseconds since the test's start.
    pub(crate) fn now_ns(&self) -> u64 {
        self.begin.elapsed().as_nanos() as u64
    }

    /// Waits for the next boundary, warm-up end or deadline. Cancel-safe: a tick is only
    /// taken from its timer when it is returned (or, at the deadline, dropped by the rules).
    pub(crate) async fn next(&mut self) -> Tick {
        loop {
            // Ticks first: after a stall, every boundary that passed is closed before the
            // deadline is seen, so the warm-up's interval exists even on a loaded machine.
            tokio::select! {
                biased;
                _ = self.ticks.tick() => {
                    let now = self.now_ns();
                    if let Some(b) = self.clock.tick(now) {
                        return Tick::Boundary(b);
                    }
                }
                _ = &mut self.deadline, if !self.deadline_seen => {
                    self.deadline_seen = true;
                    return Tick::Deadline;
                }
                _ = async { self.warm_up.as_mut().expect("guarded").as_mut().await },
                    if self.warm_up.is_some() => {
                    self.warm_up = None;
                    return Tick::WarmUpEnded;
                }
            }
        }
    }
}

/// What [`drive`] drives: one test's sampler of its worker threads.
pub(crate) trait Sampler {
    /// Closes the interval ending at `end_ns` (from the test's start); `omitted` when it
    /// belongs to the warm-up.
    fn close(&mut self, end_ns: u64, omitted: bool);
    /// True when the workers have nothing more to do.
    fn finished(&self) -> bool;
}

/// Runs `sampler`'s intervals until the deadline (a timed test), until the workers finish
/// (a counted one) or until `cancel` fires; returns true when interrupted. The last, partial
/// interval is the caller's to close, after it has stopped the workers, with
/// [`Clock::last`].
pub(crate) async fn drive(
    sampler: &mut impl Sampler,
    timers: &mut Timers,
    cancel: &CancellationToken,
) -> bool {
    match drive_until(sampler, timers, cancel, std::future::pending::<Infallible>()).await {
        Ok(interrupted) => interrupted,
        Err(never) => match never {},
    }
}

/// [`drive`], also ended by `failure` (the server lost, a stream failed): its error then,
/// with the intervals closed so far left in `sampler`.
pub(crate) async fn drive_until<E>(
    sampler: &mut impl Sampler,
    timers: &mut Timers,
    cancel: &CancellationToken,
    failure: impl std::future::Future<Output = E>,
) -> Result<bool, E> {
    tokio::pin!(failure);
    // Only a test bounded by a count can finish before its deadline; a timed one need not
    // wake every 10 ms to look (on a small machine those wake-ups show in the tail latency).
    // A timed test runs to its deadline even when its workers are done early (an open-model
    // step whose last request fell due long before its end): the first poll is one period in,
    // not at once as a plain interval's, which ended `http -r 1 -d 1` after its only response.
    let poll_every = if timers.clock.deadline_ns.is_some() {
        Duration::from_secs(3600)
    } else {
        Duration::from_millis(10)
    };
    let start = tokio::time::Instant::from_std(timers.begin);
    let mut poll = tokio::time::interval_at(start + poll_every, poll_every);
    loop {
        tokio::select! {
            biased;
            tick = timers.next() => match tick {
                Tick::Boundary(b) => sampler.close(b.end_ns, b.omitted),
                Tick::Deadline => return Ok(false),
                Tick::WarmUpEnded => {}
            },
            _ = cancel.cancelled() => return Ok(true),
            e = &mut failure => return Err(e),
            _ = poll.tick() => if sampler.finished() { return Ok(false) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn each_tick_closes_one_interval_and_the_deadlines_boundary_is_the_callers() {
        let mut c = Clock::new(S, Some(3 * S), 0, Ending::Stop);
        assert_eq!(c.tick(S + 200).map(|b| b.end_ns), Some(S + 200));
        assert_eq!(c.tick(2 * S + 100).map(|b| b.end_ns), Some(2 * S + 100));
        // A tick within a millisecond of the deadline (even slightly early) closes nothing.
        assert_eq!(c.tick(3 * S - 500_000), None);
        assert_eq!(c.last(3 * S + 40).end_ns, 3 * S + 40);
        assert!(!c.last(3 * S).omitted);
    }

    #[test]
    fn warm_up_boundaries_follow_the_schedule_not_the_late_ticks() {
        // A warm-up on a boundary: the intervals before it are omitted, the one after it is
        // not, and the boundary says the warm-up ends there.
        let mut c = Clock::new(S, Some(4 * S), 2 * S, Ending::Stop);
        let b1 = c.tick(S + 5).unwrap();
        let b2 = c.tick(2 * S + 5).unwrap();
        let b3 = c.tick(3 * S + 5).unwrap();
        assert!(b1.omitted && b2.omitted && !b3.omitted);
        assert!(!b1.ends_warm_up && b2.ends_warm_up && !b3.ends_warm_up);
        assert_eq!(c.warm_up_between_boundaries(), None);

        // A warm-up between boundaries: the interval it ends in is still the warm-up's (the
        // warm-up runs to the next boundary), and a caller that can cut between ticks is told
        // where.
        let mut c = Clock::new(S, Some(3 * S), S / 2, Ending::Stop);
        assert_eq!(c.warm_up_between_boundaries(), Some(S / 2));
        let b1 = c.tick(S).unwrap();
        assert!(b1.omitted && !b1.ends_warm_up);
        assert!(!c.tick(2 * S).unwrap().omitted);

        // No warm-up: nothing is omitted.
        let mut c = Clock::new(S, None, 0, Ending::Stop);
        assert!(!c.tick(S).unwrap().omitted && !c.last(S + 1).omitted);
    }

    #[test]
    fn after_a_stall_the_ticks_that_passed_close_in_order_and_the_warm_up_holds() {
        // The machine stalled for 2.5 s: tokio fires the three missed ticks at once. Each
        // closes its own interval, judged by where it was due, not when it ran.
        let mut c = Clock::new(S, Some(10 * S), 2 * S, Ending::Stop);
        let late = 3 * S + S / 2;
        let bs: Vec<Boundary> = (0..3).map(|i| c.tick(late + i).unwrap()).collect();
        assert_eq!(bs.iter().map(|b| b.omitted).collect::<Vec<_>>(), [true, true, false]);
        assert!(bs[1].ends_warm_up);
        // The next on-time tick carries on the count.
        assert!(!c.tick(4 * S).unwrap().omitted);
    }

    #[test]
    fn a_run_stopped_during_its_warm_up_is_all_warm_up() {
        let mut c = Clock::new(S, Some(5 * S), 2 * S, Ending::Stop);
        c.tick(S).unwrap();
        // Interrupted at 1.4 s: the last interval began at 1 s, inside the warm-up.
        assert!(c.last(S + 4 * S / 10).omitted);
        c.tick(2 * S).unwrap();
        assert!(!c.last(2 * S + 1).omitted);
    }

    #[test]
    fn a_drain_closes_the_deadlines_boundary_and_its_sliver_joins_the_interval_before() {
        let mut c = Clock::new(S, Some(2 * S), 0, Ending::Drain);
        c.tick(S).unwrap();
        // At the deadline the boundary is closed: the run goes on while answers drain.
        assert_eq!(c.tick(2 * S).map(|b| b.end_ns), Some(2 * S));
        // The last answers came 3 ms later: too short for a rate, it joins [1 s, 2 s].
        assert!(c.tail_joins_previous(2 * S, 2 * S + 3_000_000));
        // A long drain (a timeout waited out) is an interval of its own.
        assert!(!c.tail_joins_previous(2 * S, 2 * S + S / 2));
        // Before any boundary there is nothing to join.
        assert!(!Clock::new(S, None, 0, Ending::Drain).tail_joins_previous(0, 10));
        // A stopped run never merges: its deadline's boundary was not closed.
        let stop = Clock::new(S, Some(2 * S), 0, Ending::Stop);
        assert!(!stop.tail_joins_previous(S, S + 1));
    }

    #[tokio::test(start_paused = true)]
    async fn timers_report_boundaries_the_warm_up_and_the_deadline_once() {
        let begin = Instant::now();
        let clock = Clock::new(S, Some(2 * S + S / 2), S / 2, Ending::Stop);
        let mut t = Timers::start(clock, begin, true);
        assert_eq!(t.next().await, Tick::WarmUpEnded);
        assert!(matches!(t.next().await, Tick::Boundary(b) if b.omitted));
        assert!(matches!(t.next().await, Tick::Boundary(b) if !b.omitted));
        assert_eq!(t.next().await, Tick::Deadline);
        // After the deadline only boundaries come (a drain's), never a second deadline.
        let next = tokio::time::timeout(Duration::from_secs(2), t.next()).await;
        assert!(matches!(next, Ok(Tick::Boundary(_))), "{next:?}");
    }
}
