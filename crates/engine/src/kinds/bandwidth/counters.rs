//! Running counters of one stream end, written by its worker thread and read by the sampler.
//! One writer per counter set, so plain atomic stores suffice; the sampler may see a datagram
//! counted in `packets` a moment before its bytes, which only shifts it between intervals.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use wirespeed_model::kinds::bandwidth::{TcpSample, Totals};

/// Shared counters of one stream end.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    bytes: AtomicU64,
    packets: AtomicU64,
    lost: AtomicU64,
    out_of_order: AtomicU64,
    duplicates: AtomicU64,
    jitter_bits: AtomicU64,
    /// Nanoseconds since the test began when this end last moved data.
    last_activity_ns: AtomicU64,
    /// The last TCP sample taken, kept so totals stay available after the socket closes.
    retransmits: AtomicU64,
    cwnd: AtomicU64,
    rtt: AtomicU64,
    rttvar: AtomicU64,
    pacing: AtomicU64,
    delivery: AtomicU64,
    has_tcp: AtomicU64,
    /// Work a stream end does that its byte count does not show: a QUIC sender's datagrams
    /// while its queue drains after the last write.
    progress: AtomicU64,
}

impl Counters {
    /// Publishes new totals (the worker's own counts).
    pub(crate) fn publish(&self, t: &Totals) {
        self.bytes.store(t.bytes, Relaxed);
        self.packets.store(t.packets, Relaxed);
        self.lost.store(t.lost, Relaxed);
        self.out_of_order.store(t.out_of_order, Relaxed);
        self.duplicates.store(t.duplicates, Relaxed);
        self.jitter_bits.store(t.jitter_ns.to_bits(), Relaxed);
    }

    /// Adds `n` bytes (and `packets` datagrams) moved; for workers that only count.
    pub(crate) fn add(&self, bytes: u64, packets: u64) {
        self.bytes.fetch_add(bytes, Relaxed);
        if packets > 0 {
            self.packets.fetch_add(packets, Relaxed);
        }
    }

    /// Records when this end last moved data.
    pub(crate) fn touch(&self, since_begin_ns: u64) {
        self.last_activity_ns.store(since_begin_ns, Relaxed);
    }

    /// Marks where this end's active span ends when it ends later than its last data: a paced
    /// sender's span runs until it was told to stop, a receiver's until the stream ended, so a
    /// slow stream is not measured over the time up to its last datagram alone.
    pub(crate) fn end_at(&self, since_begin_ns: u64) {
        self.last_activity_ns.fetch_max(since_begin_ns, Relaxed);
    }

    /// Records a running count of work beyond the bytes (see `progress`).
    pub(crate) fn progress(&self, count: u64) {
        self.progress.store(count, Relaxed);
    }

    /// Everything this end has done so far: how finishing tells a draining end from a stuck
    /// one.
    pub(crate) fn moved(&self) -> u64 {
        self.bytes.load(Relaxed) + self.progress.load(Relaxed)
    }

    /// When this end last moved data, nanoseconds since the test began.
    pub(crate) fn last_activity_ns(&self) -> u64 {
        self.last_activity_ns.load(Relaxed)
    }

    /// Stores a TCP sample of the sending socket.
    pub(crate) fn set_tcp(&self, s: TcpSample) {
        self.retransmits.store(s.retransmits, Relaxed);
        self.cwnd.store(s.cwnd_bytes, Relaxed);
        self.rtt.store(s.rtt_ns, Relaxed);
        self.rttvar.store(s.rttvar_ns, Relaxed);
        self.pacing.store(s.pacing_bps, Relaxed);
        self.delivery.store(s.delivery_bps, Relaxed);
        self.has_tcp.store(1, Relaxed);
    }

    /// A snapshot of the totals.
    pub(crate) fn snapshot(&self) -> Totals {
        Totals {
            bytes: self.bytes.load(Relaxed),
            packets: self.packets.load(Relaxed),
            lost: self.lost.load(Relaxed),
            out_of_order: self.out_of_order.load(Relaxed),
            duplicates: self.duplicates.load(Relaxed),
            jitter_ns: f64::from_bits(self.jitter_bits.load(Relaxed)),
            tcp: (self.has_tcp.load(Relaxed) == 1).then(|| TcpSample {
                retransmits: self.retransmits.load(Relaxed),
                cwnd_bytes: self.cwnd.load(Relaxed),
                rtt_ns: self.rtt.load(Relaxed),
                rttvar_ns: self.rttvar.load(Relaxed),
                pacing_bps: self.pacing.load(Relaxed),
                delivery_bps: self.delivery.load(Relaxed),
            }),
        }
    }
}
