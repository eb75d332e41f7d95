//! The delay line's arithmetic, apart from its sockets and clocks so it is tested without
//! either: each packet taken in gets a release time — now plus the delay, spread uniformly
//! by the jitter, or now itself for the share sent ahead (reordering) — may be corrupted
//! (one random bit flipped) and may be taken twice (duplication, the copy with a delay of its
//! own); packets leave in release order. What happened to how many is counted.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use wirespeed_model::compare::SplitMix;
use wirespeed_model::path::Conditions;
pub use wirespeed_model::path::LineCounts;

/// Most packets held at once: beyond it (a fast sender into a long delay) packets are dropped
/// and counted as overflow, so the line's memory is bounded.
pub const MAX_HELD: usize = 200_000;

/// A packet waiting for its time.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    release_ns: u64,
    seq: u64,
    packet: Vec<u8>,
}

/// One direction's schedule.
#[derive(Debug)]
pub struct Schedule {
    conditions: Conditions,
    rng: SplitMix,
    held: BinaryHeap<Reverse<Held>>,
    seq: u64,
    /// What happened so far.
    pub counts: LineCounts,
}

impl Schedule {
    /// A schedule carrying out `conditions`' delay, jitter, duplication, reordering and
    /// corruption (its loss and rate are the kernel's), drawing from `seed`.
    pub fn new(conditions: Conditions, seed: u64) -> Self {
        Self {
            conditions,
            rng: SplitMix(seed),
            held: BinaryHeap::new(),
            seq: 0,
            counts: LineCounts::default(),
        }
    }

    /// A uniform draw in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, share: f64) -> bool {
        share > 0.0 && self.unit() < share
    }

    /// When a packet taken in at `now_ns` leaves, and whether it was sent ahead.
    fn release(&mut self, now_ns: u64) -> (u64, bool) {
        let c = self.conditions;
        if self.chance(c.reorder) {
            return (now_ns, true);
        }
        let spread =
            if c.jitter_ns > 0 { (self.unit() * 2.0 - 1.0) * c.jitter_ns as f64 } else { 0.0 };
        let delay = (c.delay_ns as f64 + spread).max(0.0) as u64;
        (now_ns + delay, false)
    }

    /// Takes in `packet`, arrived at `now_ns`.
    pub fn accept(&mut self, now_ns: u64, mut packet: Vec<u8>) {
        self.counts.received += 1;
        if !packet.is_empty() && self.chance(self.conditions.corrupt) {
            let bit = self.rng.below(packet.len() * 8);
            packet[bit / 8] ^= 1 << (bit % 8);
            self.counts.corrupted += 1;
        }
        let copy = self.chance(self.conditions.duplicate).then(|| packet.clone());
        if copy.is_some() {
            self.counts.duplicated += 1;
        }
        for p in std::iter::once(packet).chain(copy) {
            if self.held.len() >= MAX_HELD {
                self.counts.overflowed += 1;
                continue;
            }
            let (release_ns, ahead) = self.release(now_ns);
            self.counts.reordered += u64::from(ahead);
            self.seq += 1;
            self.held.push(Reverse(Held { release_ns, seq: self.seq, packet: p }));
        }
    }

    /// When the next packet is due, if one is held.
    pub fn next_release(&self) -> Option<u64> {
        self.held.peek().map(|Reverse(h)| h.release_ns)
    }

    /// The next packet due by `now_ns`, if any.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        if self.next_release()? > now_ns {
            return None;
        }
        self.held.pop().map(|Reverse(h)| h.packet)
    }

    /// Packets held now.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditions(pairs: &[(&str, &str)]) -> Conditions {
        let mut c = Conditions::default();
        for (k, v) in pairs {
            c.set(k, v).unwrap();
        }
        c
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn a_delay_holds_every_packet_exactly_that_long_in_order() {
        let mut s = Schedule::new(conditions(&[("delay", "20ms")]), 7);
        for i in 0..100u8 {
            s.accept(u64::from(i) * MS, vec![i]);
        }
        assert_eq!(s.pop_due(20 * MS - 1), None);
        for i in 0..100u8 {
            let due = (u64::from(i) + 20) * MS;
            assert_eq!(s.next_release(), Some(due));
            assert_eq!(s.pop_due(due), Some(vec![i]));
        }
        assert_eq!(s.counts.received, 100);
        assert_eq!(s.held(), 0);
    }

    #[test]
    fn shares_come_out_near_what_was_asked_and_are_counted() {
        let n = 100_000u64;
        let c = conditions(&[
            ("delay", "10ms"),
            ("jitter", "2ms"),
            ("reorder", "5%"),
            ("duplicate", "2%"),
            ("corrupt", "1%"),
        ]);
        let mut s = Schedule::new(c, 42);
        let mut delays = Vec::new();
        for i in 0..n {
            s.accept(i * 1000, vec![0u8; 100]);
        }
        let mut out = 0u64;
        while let Some(t) = s.next_release() {
            delays.push(t);
            s.pop_due(t).unwrap();
            out += 1;
        }
        let share = |k: u64| k as f64 / n as f64;
        assert_eq!(out, n + s.counts.duplicated);
        assert!((share(s.counts.duplicated) - 0.02).abs() < 0.002, "{:?}", s.counts);
        assert!((share(s.counts.corrupted) - 0.01).abs() < 0.002, "{:?}", s.counts);
        // Reordering draws once per copy.
        assert!((share(s.counts.reordered) / 1.02 - 0.05).abs() < 0.003, "{:?}", s.counts);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]), "leaves in release order");
    }

    #[test]
    fn jitter_spreads_delays_uniformly_around_the_delay() {
        let mut s = Schedule::new(conditions(&[("delay", "10ms"), ("jitter", "2ms")]), 3);
        let (mut lo, mut hi, mut sum) = (u64::MAX, 0u64, 0u64);
        for _ in 0..10_000 {
            let (t, ahead) = s.release(0);
            assert!(!ahead);
            lo = lo.min(t);
            hi = hi.max(t);
            sum += t;
        }
        assert!((8 * MS..8 * MS + MS / 10).contains(&lo), "{lo}");
        assert!((12 * MS - MS / 10..=12 * MS).contains(&hi), "{hi}");
        assert!((sum as f64 / 10_000.0 - 10e6).abs() < 0.05e6);
    }

    #[test]
    fn a_full_line_drops_and_counts() {
        let mut s = Schedule::new(conditions(&[("delay", "1s")]), 1);
        for _ in 0..MAX_HELD + 5 {
            s.accept(0, vec![1]);
        }
        assert_eq!(s.counts.overflowed, 5);
        assert_eq!(s.held(), MAX_HELD);
    }
}
