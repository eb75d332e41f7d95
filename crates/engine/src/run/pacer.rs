//! The one pacer: an absolute schedule of evenly spaced units (bytes of a bandwidth stream,
//! requests of an HTTP step, queries of a DNS worker, messages of a latency stream) from a
//! start at a fixed rate, and a rule for what a sender that fell behind may do ([`CatchUp`]).
//! Unit `k` is due at `start + k / rate`, whatever happened before; asking and waiting happen
//! outside, so the schedule is pure and tested here without a clock.
//!
//! Unlike iperf3's average-since-start throttle, a stall never buys an unbounded burst unless
//! the kind asks for it: the open models keep every due time (the lateness is what they
//! measure), bandwidth forgives debt beyond 50 ms, DNS skips beyond a burst and counts them.

/// What a schedule does about units that fell due while the sender could not keep up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CatchUp {
    /// Every unit keeps its due time, however late: the open model's requests and messages,
    /// whose latency is measured from the schedule, so a stall shows in the percentiles.
    Keep,
    /// At most `max_late_ns` of the schedule may be owed; older debt is forgiven and the
    /// schedule moves forward (a bandwidth stream: a descheduled sender does not burst).
    Forgive {
        /// The debt kept, in nanoseconds.
        max_late_ns: u64,
    },
    /// At most `burst` units may fall due at once; the rest are skipped, and reported as
    /// skipped when `counted` (DNS: the open loop counts them unsent, `-Q`'s ceiling forgets).
    Skip {
        /// The most units due at once.
        burst: u64,
        /// Whether skipped units are reported.
        counted: bool,
    },
}

/// Units due now, and units skipped to get there ([`CatchUp::Skip`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// Units due and not yet booked.
    pub(crate) count: u64,
    /// Units the catch-up rule skipped (only reported when counted).
    pub(crate) skipped: u64,
}

/// An absolute schedule at a fixed rate, in nanoseconds on the caller's clock.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// When unit 0 falls due.
    start_ns: f64,
    /// Nanoseconds per unit; 0 for a stream that is not paced.
    ns_per_unit: f64,
    /// Units booked (sent or skipped) so far.
    booked: u64,
    /// Nothing falls due at or after this (the end of a timed step).
    end_ns: Option<u64>,
    catch_up: CatchUp,
}

impl Pacer {
    /// A schedule of `per_sec` units a second, unit 0 due at `start_ns`; `per_sec` of 0 (or
    /// less) is not paced: everything is due at once.
    pub(crate) fn new(per_sec: f64, start_ns: u64, catch_up: CatchUp) -> Self {
        let ns_per_unit = if per_sec > 0.0 { 1e9 / per_sec } else { 0.0 };
        Self { start_ns: start_ns as f64, ns_per_unit, booked: 0, end_ns: None, catch_up }
    }

    /// A bandwidth stream's schedule: bytes at `bits_per_sec` (0: not paced), debt beyond
    /// 50 ms forgiven.
    pub(crate) fn bytes(bits_per_sec: u64, start_ns: u64) -> Self {
        Self::new(bits_per_sec as f64 / 8.0, start_ns, CatchUp::Forgive { max_late_ns: 50_000_000 })
    }

    /// The same schedule, with nothing due at or after `end_ns`.
    pub(crate) fn ending_at(mut self, end_ns: u64) -> Self {
        self.end_ns = Some(end_ns);
        self
    }

    /// True when the schedule holds units back.
    pub(crate) fn is_limited(&self) -> bool {
        self.ns_per_unit > 0.0
    }

    /// When unit `k` falls due.
    fn due_of(&self, k: u64) -> f64 {
        self.start_ns + k as f64 * self.ns_per_unit
    }

    /// When the next unit not yet booked falls due; `None` past the end.
    pub(crate) fn next_due_ns(&self) -> Option<u64> {
        let due = self.due_of(self.booked).max(0.0) as u64;
        self.end_ns.is_none_or(|end| due < end).then_some(due)
    }

    /// Applies [`CatchUp::Forgive`] at `now_ns`: the schedule moves so at most its debt is
    /// owed.
    fn forgive(&mut self, now_ns: u64) {
        if let CatchUp::Forgive { max_late_ns } = self.catch_up {
            let owed_from = now_ns.saturating_sub(max_late_ns) as f64;
            if self.is_limited() && self.due_of(self.booked) < owed_from {
                self.start_ns = owed_from - self.booked as f64 * self.ns_per_unit;
            }
        }
    }

    /// Units due at `now_ns` and not booked yet, after the catch-up rule (which books the
    /// units it skips). Not paced: one unit at a time is due.
    pub(crate) fn due(&mut self, now_ns: u64) -> Due {
        self.forgive(now_ns);
        let Some(next) = self.next_due_ns() else { return Due { count: 0, skipped: 0 } };
        if now_ns < next {
            return Due { count: 0, skipped: 0 };
        }
        if !self.is_limited() {
            return Due { count: 1, skipped: 0 };
        }
        let mut count = ((now_ns as f64 - self.due_of(self.booked)) / self.ns_per_unit) as u64 + 1;
        if let Some(end) = self.end_ns {
            // Units at or after the end never fall due.
            let before_end = ((end as f64 - self.due_of(self.booked)) / self.ns_per_unit).ceil();
            count = count.min(before_end.max(0.0) as u64);
        }
        let mut skipped = 0;
        if let CatchUp::Skip { burst, counted } = self.catch_up {
            if count > burst {
                let missed = count - burst;
                self.booked += missed;
                count = burst;
                skipped = if counted { missed } else { 0 };
            }
        }
        Due { count, skipped }
    }

    /// True when the catch-up rule reports what it skips (DNS's open loop).
    pub(crate) fn skips_counted(&self) -> bool {
        matches!(self.catch_up, CatchUp::Skip { counted: true, .. })
    }

    /// Books `units` as sent (or given up on).
    pub(crate) fn book(&mut self, units: u64) {
        self.booked += units;
    }

    /// How long to wait at `now_ns` before sending `units` more, booking them: 0 when they
    /// may go at once (a bandwidth stream asks before every write).
    pub(crate) fn reserve(&mut self, units: u64, now_ns: u64) -> u64 {
        if !self.is_limited() {
            return 0;
        }
        self.forgive(now_ns);
        let due = self.due_of(self.booked).max(0.0) as u64;
        self.booked += units;
        due.saturating_sub(now_ns)
    }
}

/// The most bytes a paced TCP stream hands the kernel at once: what falls due in
/// [`PIECE_NS`], at least [`MIN_PIECE`], at most the `len`-byte write. A whole 128 KiB write at
/// 1 kbit/s would be sent at the start and count as 1000× the rate; a 2 MiB write at 10 Mbit/s
/// would sit 1.6 s in the socket queue (TCP paces itself to the rate too), counted as sent
/// long before it left. Pieces keep what was written close to what left.
pub(crate) fn paced_piece(bits_per_sec: u64, len: usize) -> usize {
    if bits_per_sec == 0 {
        return len;
    }
    let due = (u128::from(bits_per_sec) * u128::from(PIECE_NS) / 8 / 1_000_000_000) as usize;
    due.max(MIN_PIECE).min(len)
}

/// The span of the schedule one piece of a paced TCP write covers.
pub(crate) const PIECE_NS: u64 = 20_000_000;
/// The smallest piece: below this, headers would outweigh the data many times over.
pub(crate) const MIN_PIECE: usize = 64;

/// How many UDP datagrams to hand the kernel per call at `bits_per_sec` with `len`-byte
/// datagrams: enough to amortise the call, few enough that one batch spans at most ~100 µs of
/// the schedule, so paced traffic leaves as a smooth stream rather than bursts.
pub(crate) fn udp_batch(bits_per_sec: u64, len: u32, max: usize) -> usize {
    if bits_per_sec == 0 {
        return max;
    }
    let bytes_per_100us = bits_per_sec / 8 / 10_000;
    ((bytes_per_100us / u64::from(len.max(1))) as usize).clamp(1, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_never_waits() {
        let mut p = Pacer::bytes(0, 0);
        assert_eq!(p.reserve(1 << 30, 0), 0);
        assert!(!p.is_limited());
        assert_eq!(p.due(5).count, 1);
    }

    #[test]
    fn follows_the_schedule() {
        // 8 Mbit/s = 1 byte per microsecond.
        let mut p = Pacer::bytes(8_000_000, 1_000);
        assert_eq!(p.reserve(500, 1_000), 0);
        // The next send is due 500 µs after start.
        assert_eq!(p.reserve(500, 1_000), 500_000);
        // Sending on time: no wait.
        assert_eq!(p.reserve(500, 1_001_000), 0);
    }

    #[test]
    fn a_stall_does_not_buy_a_burst() {
        let mut p = Pacer::bytes(8_000_000, 0);
        p.reserve(1_000, 0);
        // One second late: only 50 ms of debt is kept, so ~50 kB may go at once, then waits.
        let now = 1_000_000_000;
        let mut sent = 0u64;
        while p.reserve(1_000, now) == 0 {
            sent += 1_000;
        }
        assert!((45_000..=55_000).contains(&sent), "burst of {sent} bytes");
    }

    #[test]
    fn kept_units_keep_their_due_times_after_a_stall() {
        // 1000 requests/s from t = 0: a sender back after 10 ms owes all ten, each at its time.
        let mut p = Pacer::new(1000.0, 0, CatchUp::Keep);
        assert_eq!(p.due(0), Due { count: 1, skipped: 0 });
        p.book(1);
        assert_eq!(p.due(500_000).count, 0);
        assert_eq!(p.next_due_ns(), Some(1_000_000));
        assert_eq!(p.due(10_000_000), Due { count: 10, skipped: 0 });
        for k in 1..=10 {
            assert_eq!(p.next_due_ns(), Some(k * 1_000_000), "request {k} keeps its time");
            p.book(1);
        }
    }

    #[test]
    fn skipped_units_are_counted_only_when_asked() {
        // One per ms, at most 32 at once.
        let mut p = Pacer::new(1000.0, 0, CatchUp::Skip { burst: 32, counted: true });
        assert_eq!(p.due(0), Due { count: 1, skipped: 0 });
        p.book(1);
        assert_eq!(p.due(500_000).count, 0);
        assert_eq!(p.due(3_000_000).count, 3);
        p.book(3);
        assert_eq!(p.next_due_ns(), Some(4_000_000));
        // 96 due by 100 ms: 32 may go, 65 were skipped (and booked).
        assert_eq!(p.due(100_000_000), Due { count: 32, skipped: 65 });
        let mut quiet = Pacer::new(1000.0, 0, CatchUp::Skip { burst: 32, counted: false });
        assert_eq!(quiet.due(100_000_000), Due { count: 32, skipped: 0 });
    }

    #[test]
    fn nothing_falls_due_at_or_after_the_end_of_a_step() {
        // Ten a second for one second: requests 0..=9, the one at 1 s is past the end.
        let mut p = Pacer::new(10.0, 0, CatchUp::Keep).ending_at(1_000_000_000);
        assert_eq!(p.due(5_000_000_000).count, 10);
        p.book(10);
        assert_eq!(p.next_due_ns(), None);
        assert_eq!(p.due(6_000_000_000).count, 0);
    }

    #[test]
    fn an_offset_start_staggers_workers() {
        // Two workers sharing 1000/s: each at 500/s, the second half a period later.
        let a = Pacer::new(500.0, 0, CatchUp::Keep);
        let b = Pacer::new(500.0, 1_000_000, CatchUp::Keep);
        assert_eq!((a.next_due_ns(), b.next_due_ns()), (Some(0), Some(1_000_000)));
    }

    #[test]
    fn paced_tcp_writes_go_out_in_pieces_as_they_fall_due() {
        assert_eq!(paced_piece(0, 131_072), 131_072);
        // 1 kbit/s: 2.5 bytes fall due in 20 ms, so the floor.
        assert_eq!(paced_piece(1_000, 131_072), MIN_PIECE);
        assert_eq!(paced_piece(1_000, 10), 10);
        assert_eq!(paced_piece(10_000_000, 2 << 20), 25_000);
        assert_eq!(paced_piece(10_000_000_000, 131_072), 131_072);
    }

    #[test]
    fn batch_size_shrinks_with_rate() {
        assert_eq!(udp_batch(0, 1400, 64), 64);
        assert_eq!(udp_batch(1_000_000, 1400, 64), 1);
        assert_eq!(udp_batch(1_000_000_000, 1400, 64), 8);
        assert_eq!(udp_batch(100_000_000_000, 1400, 64), 64);
    }
}
