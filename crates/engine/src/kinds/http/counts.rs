//! What the HTTP load threads count: running totals (requests, statuses, errors by cause,
//! bytes) and latency histograms. Each thread counts its totals into its own [`Tally`] and
//! publishes them to a shared [`ShardCounts`] every 10 ms; latencies go straight into the
//! shared histograms under a lock nobody else holds but the sampler, once an interval (an
//! uncontended lock costs less than merging and zeroing 40 k counters every 10 ms, which
//! stalled the loop for a noticeable fraction of a millisecond).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use wirespeed_model::histogram::RttHistogram;

/// Why a request got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cause {
    Refused,
    /// No free local port to connect from (`EADDRNOTAVAIL`).
    PortsExhausted,
    ConnectTimeout,
    Unreachable,
    Timeout,
    Reset,
    Closed,
    Invalid,
    Tls,
    Redirect,
    Dropped,
    /// QUIC: the handshake failed (a certificate, no common ALPN protocol).
    Handshake,
    /// QUIC: the server speaks no QUIC version we do.
    VersionNegotiation,
    /// QUIC: nothing heard from the server within the idle timeout.
    IdleTimeout,
    /// HTTP/3: the server reset the request's stream (or stopped reading it).
    StreamReset,
    Other,
}

/// How many causes there are.
pub(super) const CAUSES: usize = 16;

impl Cause {
    pub(super) const ALL: [Cause; CAUSES] = [
        Cause::Refused,
        Cause::PortsExhausted,
        Cause::ConnectTimeout,
        Cause::Unreachable,
        Cause::Timeout,
        Cause::Reset,
        Cause::Closed,
        Cause::Invalid,
        Cause::Tls,
        Cause::Redirect,
        Cause::Dropped,
        Cause::Handshake,
        Cause::VersionNegotiation,
        Cause::IdleTimeout,
        Cause::StreamReset,
        Cause::Other,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Cause::Refused => "connection refused",
            Cause::PortsExhausted => wirespeed_model::kinds::http::PORTS_EXHAUSTED,
            Cause::ConnectTimeout => "connect timeout",
            Cause::Unreachable => "unreachable",
            Cause::Timeout => "timeout",
            Cause::Reset => "connection reset",
            Cause::Closed => "closed before the response ended",
            Cause::Invalid => "invalid response",
            Cause::Tls => "TLS error",
            Cause::Redirect => "redirect not followed (another origin, no Location, or too many)",
            Cause::Dropped => "dropped: no connection to send it on in time",
            Cause::Handshake => "QUIC handshake failed",
            Cause::VersionNegotiation => "QUIC version negotiation failed",
            Cause::IdleTimeout => "QUIC idle timeout",
            Cause::StreamReset => "stream reset",
            Cause::Other => "other",
        }
    }

    /// True when a request failing so leaves its connection unusable (a multiplexed one is
    /// replaced).
    pub(super) fn ends_connection(self) -> bool {
        matches!(
            self,
            Cause::Closed
                | Cause::Reset
                | Cause::Other
                | Cause::Handshake
                | Cause::VersionNegotiation
                | Cause::IdleTimeout
        )
    }

    /// The cause of a socket error; `connecting` tells a connect timeout from a slow answer.
    pub(super) fn of(e: &std::io::Error, connecting: bool) -> Cause {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED | libc::ENOENT) => Cause::Refused,
            Some(libc::EADDRNOTAVAIL) => Cause::PortsExhausted,
            Some(libc::ETIMEDOUT) if connecting => Cause::ConnectTimeout,
            Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => Cause::Unreachable,
            Some(libc::ECONNRESET | libc::EPIPE) => Cause::Reset,
            _ => Cause::Other,
        }
    }

    fn index(self) -> usize {
        Cause::ALL.iter().position(|&c| c == self).unwrap_or(CAUSES - 1)
    }
}

/// Running totals of one thread (or of all, summed).
#[derive(Debug, Clone, Default)]
pub(super) struct Totals {
    pub responses: u64,
    pub succeeded: u64,
    pub sent: u64,
    pub late: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub connections: u64,
    /// HTTP/3 connections that sent their first request in 0-RTT, and those the server took.
    pub early_data: u64,
    pub early_data_accepted: u64,
    pub status: BTreeMap<u16, u64>,
    pub errors: [u64; CAUSES],
    /// The first TLS error's text: why every https:// request may be failing.
    pub tls_error: Option<String>,
}

impl Totals {
    pub(super) fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub(super) fn fail(&mut self, cause: Cause) {
        self.errors[cause.index()] += 1;
    }

    /// What was counted since `earlier`.
    pub(super) fn minus(&self, earlier: &Totals) -> Totals {
        let mut d = Totals {
            responses: self.responses - earlier.responses,
            succeeded: self.succeeded - earlier.succeeded,
            sent: self.sent - earlier.sent,
            late: self.late - earlier.late,
            bytes_in: self.bytes_in - earlier.bytes_in,
            bytes_out: self.bytes_out - earlier.bytes_out,
            connections: self.connections - earlier.connections,
            early_data: self.early_data - earlier.early_data,
            early_data_accepted: self.early_data_accepted - earlier.early_data_accepted,
            tls_error: self.tls_error.clone(),
            ..Default::default()
        };
        for (code, n) in &self.status {
            let before = earlier.status.get(code).copied().unwrap_or(0);
            if *n > before {
                d.status.insert(*code, n - before);
            }
        }
        for i in 0..CAUSES {
            d.errors[i] = self.errors[i] - earlier.errors[i];
        }
        d
    }

    pub(super) fn add(&mut self, other: &Totals) {
        self.responses += other.responses;
        self.succeeded += other.succeeded;
        self.sent += other.sent;
        self.late += other.late;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.connections += other.connections;
        self.early_data += other.early_data;
        self.early_data_accepted += other.early_data_accepted;
        for (code, n) in &other.status {
            *self.status.entry(*code).or_default() += n;
        }
        for i in 0..CAUSES {
            self.errors[i] += other.errors[i];
        }
        if self.tls_error.is_none() {
            self.tls_error.clone_from(&other.tls_error);
        }
    }

    /// Errors by cause name, leaving out causes that never happened.
    pub(super) fn errors_by_name(&self) -> BTreeMap<String, u64> {
        Cause::ALL
            .iter()
            .zip(self.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (c.name().to_string(), n))
            .collect()
    }
}

/// Latency histograms: the total, and each part of the breakdown.
#[derive(Debug, Clone, Default)]
pub(super) struct Histograms {
    pub total: RttHistogram,
    pub connect: RttHistogram,
    pub tls: RttHistogram,
    pub first_byte: RttHistogram,
    pub queue: RttHistogram,
}

impl Histograms {
    pub(super) fn add(&mut self, other: &Histograms) {
        self.total.add(&other.total);
        self.connect.add(&other.connect);
        self.tls.add(&other.tls);
        self.first_byte.add(&other.first_byte);
        self.queue.add(&other.queue);
    }
}

/// What one thread counts before publishing.
pub(super) struct Tally {
    pub totals: Totals,
    shared: std::sync::Arc<ShardCounts>,
}

impl Tally {
    /// A tally that publishes to `shared`.
    pub(super) fn new(shared: std::sync::Arc<ShardCounts>) -> Self {
        Self { totals: Totals::default(), shared }
    }

    /// Records latencies.
    pub(super) fn record(&self, f: impl FnOnce(&mut Histograms)) {
        self.shared.histograms(f);
    }

    /// Moves the totals to the shared counts, leaving them empty.
    pub(super) fn publish(&mut self) {
        if let Ok(mut t) = self.shared.totals.lock() {
            t.add(&self.totals);
        }
        self.totals = Totals::default();
    }
}

/// What one thread has published; the sampler takes the histograms each interval.
#[derive(Default)]
pub(super) struct ShardCounts {
    pub histograms: Mutex<Histograms>,
    pub totals: Mutex<Totals>,
    pub done: AtomicBool,
}

impl ShardCounts {
    /// Counts into the shared totals directly (the HTTP/2 tasks, which share a connection).
    pub(super) fn count(&self, f: impl FnOnce(&mut Totals)) {
        if let Ok(mut t) = self.totals.lock() {
            f(&mut t);
        }
    }

    /// Records into the shared histograms directly.
    pub(super) fn histograms(&self, f: impl FnOnce(&mut Histograms)) {
        if let Ok(mut h) = self.histograms.lock() {
            f(&mut h);
        }
    }

    /// Counts a failed request.
    pub(super) fn fail(&self, cause: Cause, detail: Option<String>) {
        self.count(|t| {
            t.fail(cause);
            if t.tls_error.is_none() {
                t.tls_error = detail;
            }
        });
    }

    /// Counts a response with its latency under one lock, the one the sampler takes an
    /// interval under ([`Self::take`]), so that an interval's response count and its latency
    /// histogram hold the same responses. (Counted in a thread's totals, published every
    /// 10 ms, the responses of a boundary's last milliseconds fell in one interval's count and
    /// the next one's histogram: 60 to 70 of a member's 5,000 a second, enough for `merge` to
    /// refuse its report.)
    pub(super) fn respond(&self, took_ns: u64, status: u16, bytes_in: u64) {
        let Ok(mut h) = self.histograms.lock() else { return };
        h.total.record(took_ns);
        if let Ok(mut t) = self.totals.lock() {
            t.responses += 1;
            t.succeeded += u64::from((200..400).contains(&status));
            t.bytes_in += bytes_in;
            *t.status.entry(status).or_default() += 1;
        }
    }

    /// Takes the histograms recorded since the last call, leaving fresh ones (whose
    /// counters the kernel zeroes lazily), with the totals as they stand at that moment.
    pub(super) fn take(&self) -> (Histograms, Totals) {
        match self.histograms.lock() {
            Ok(mut h) => {
                let totals = self.totals.lock().map(|t| t.clone()).unwrap_or_default();
                (std::mem::take(&mut *h), totals)
            }
            Err(_) => (Histograms::default(), Totals::default()),
        }
    }
}
