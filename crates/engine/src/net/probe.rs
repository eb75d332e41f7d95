//! Round trips probed beside a test (`bandwidth --latency`): a TCP handshake with the server's
//! port on a new connection, closed at once with RST, every 100 ms. A new connection shares the
//! path's queues but none of the test's own connections' buffers, so its handshake time is the
//! path's round trip as another application would see it while the test loads the path (RRUL's
//! "latency under load"); the same probes before the test give the idle round trip.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::task::JoinHandle;
use wirespeed_model::histogram::{LatencyStats, RttHistogram};

/// Time between probes under load.
pub const PROBE_EVERY: Duration = Duration::from_millis(100);
/// How long a handshake may take before the probe counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// One probe: the TCP handshake time to `to`, nanoseconds; `None` when it failed or timed out.
pub async fn handshake(to: SocketAddr) -> Option<u64> {
    let socket = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP)).ok()?;
    socket.set_nonblocking(true).ok()?;
    // RST on close: no TIME_WAIT left behind by ten probes a second.
    let _ = socket.set_linger(Some(Duration::ZERO));
    let started = Instant::now();
    match socket.connect(&SockAddr::from(to)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(_) => return None,
    }
    let stream = tokio::net::TcpStream::from_std(std::net::TcpStream::from(socket)).ok()?;
    let connected = tokio::time::timeout(PROBE_TIMEOUT, stream.writable()).await.ok()?;
    connected.ok()?;
    if stream.take_error().ok()?.is_some() || stream.peer_addr().is_err() {
        return None;
    }
    Some(started.elapsed().as_nanos() as u64)
}

/// `count` probes one after another: the idle round trip, and how many failed.
pub async fn idle(to: SocketAddr, count: u32) -> (LatencyStats, u64) {
    let (mut h, mut failed) = (RttHistogram::default(), 0);
    for _ in 0..count {
        match handshake(to).await {
            Some(ns) => h.record(ns),
            None => failed += 1,
        }
    }
    (h.stats(), failed)
}

/// Each probe's end and round trip (`None`: it failed), in the order they ended.
type Samples = Arc<Mutex<Vec<(Instant, Option<u64>)>>>;

/// Probes every [`PROBE_EVERY`] while a test runs; samples are kept with the time they ended.
pub struct Prober {
    samples: Samples,
    task: JoinHandle<()>,
}

impl Prober {
    /// Starts probing `to`.
    pub fn start(to: SocketAddr) -> Self {
        let samples: Samples = Arc::default();
        let kept = samples.clone();
        let task = tokio::spawn(async move {
            let mut every = tokio::time::interval(PROBE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let rtt = handshake(to).await;
                kept.lock().unwrap_or_else(|e| e.into_inner()).push((Instant::now(), rtt));
            }
        });
        Self { samples, task }
    }

    /// The probes that ended in `[from, to)`: their round trips' statistics and how many
    /// failed.
    pub fn between(&self, from: Instant, to: Instant) -> (LatencyStats, u64) {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let (mut h, mut failed) = (RttHistogram::default(), 0);
        for (_, rtt) in samples.iter().filter(|(at, _)| *at >= from && *at < to) {
            match rtt {
                Some(ns) => h.record(*ns),
                None => failed += 1,
            }
        }
        (h.stats(), failed)
    }

    /// Stops probing.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prober")
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_is_timed_and_a_closed_port_is_a_failure() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap();
        let (stats, failed) = idle(open, 3).await;
        assert_eq!((stats.count, failed), (3, 0));
        assert!(stats.p50_ns > 0);
        drop(listener);
        assert_eq!(handshake(open).await, None);
    }
}
