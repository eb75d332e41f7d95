//! `bandwidth --latency`: the shared prober ([`crate::net::probe`]) run beside a test, read
//! back by the test's own time so each interval carries the round trips probed during it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use wirespeed_model::histogram::LatencyStats;

use super::collect::ProbeWindow;
use crate::net::probe::{self, Prober};

/// Probes before the test: the idle round trip.
const IDLE_PROBES: u32 = 10;

/// The idle probes' figures, then the prober running beside the test.
#[derive(Debug)]
pub(crate) struct Probing {
    idle: (LatencyStats, u64),
    prober: Option<(Prober, Instant)>,
    to: SocketAddr,
}

impl Probing {
    /// Probes `to` while nothing else runs: call before the test's streams open.
    pub(crate) async fn idle(to: SocketAddr) -> Self {
        Self { idle: probe::idle(to, IDLE_PROBES).await, prober: None, to }
    }

    /// Starts probing beside the test that began at `begin`.
    pub(crate) fn start(mut self, begin: Instant) -> Self {
        self.prober = Some((Prober::start(self.to), begin));
        self
    }
}

impl ProbeWindow for Probing {
    fn between(&self, start_ns: u64, end_ns: u64) -> (LatencyStats, u64) {
        match &self.prober {
            Some((p, begin)) => p.between(
                *begin + Duration::from_nanos(start_ns),
                *begin + Duration::from_nanos(end_ns),
            ),
            None => (LatencyStats::default(), 0),
        }
    }

    fn idle(&self) -> (LatencyStats, u64) {
        self.idle
    }
}
