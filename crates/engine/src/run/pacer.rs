//! Per-stream pacing against an absolute schedule: byte `b` is due at `start + b × 8 / rate`.
//! The sender asks how long to wait before its next send; waiting happens outside, so the
//! schedule itself is pure and tested without sleeping.
//!
//! Unlike iperf3's average-since-start throttle, a stall does not buy an unbounded catch-up
//! burst: the schedule may fall at most `max_debt_ns` behind, and is moved forward past that.

/// An absolute send schedule for one stream.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    bits_per_sec: u64,
    start_ns: u64,
    /// Bytes the schedule has already allowed.
    scheduled_bytes: u64,
    max_debt_ns: u64,
}

impl Pacer {
    /// A schedule at `bits_per_sec` starting at `start_ns`; `bits_per_sec == 0` never waits.
    pub(crate) fn new(bits_per_sec: u64, start_ns: u64) -> Self {
        Self { bits_per_sec, start_ns, scheduled_bytes: 0, max_debt_ns: 50_000_000 }
    }

    /// True when the stream is rate-limited.
    pub(crate) fn is_limited(&self) -> bool {
        self.bits_per_sec > 0
    }

    /// When the next `bytes` may go out, nanoseconds on the same clock as `start_ns`.
    fn due_ns(&self) -> u64 {
        let ns =
            u128::from(self.scheduled_bytes) * 8 * 1_000_000_000 / u128::from(self.bits_per_sec);
        self.start_ns.saturating_add(ns.min(u128::from(u64::MAX)) as u64)
    }

    /// How long to wait at `now_ns` before sending `bytes` more; books them on the schedule.
    /// Returns 0 when the stream may send at once.
    pub(crate) fn reserve(&mut self, bytes: u64, now_ns: u64) -> u64 {
        if self.bits_per_sec == 0 {
            return 0;
        }
        let due = self.due_ns();
        if now_ns > due.saturating_add(self.max_debt_ns) {
            // Far behind (the process was descheduled): forgive the debt beyond the cap rather
            // than bursting to catch up.
            let behind = now_ns - self.max_debt_ns;
            self.start_ns = behind.saturating_sub(
                (u128::from(self.scheduled_bytes) * 8 * 1_000_000_000
                    / u128::from(self.bits_per_sec)) as u64,
            );
        }
        let due = self.due_ns();
        self.scheduled_bytes += bytes;
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
        let mut p = Pacer::new(0, 0);
        assert_eq!(p.reserve(1 << 30, 0), 0);
        assert!(!p.is_limited());
    }

    #[test]
    fn follows_the_schedule() {
        // 8 Mbit/s = 1 byte per microsecond.
        let mut p = Pacer::new(8_000_000, 1_000);
        assert_eq!(p.reserve(500, 1_000), 0);
        // The next send is due 500 µs after start.
        assert_eq!(p.reserve(500, 1_000), 500_000);
        // Sending on time: no wait.
        assert_eq!(p.reserve(500, 1_001_000), 0);
    }

    #[test]
    fn a_stall_does_not_buy_a_burst() {
        let mut p = Pacer::new(8_000_000, 0);
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
