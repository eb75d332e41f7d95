//! Round trips probed beside a test (`bandwidth --latency`), every 100 ms: a TCP handshake
//! with the server's port on a new connection, closed at once with RST, and a UDP echo
//! datagram the server answers for the test's session. Neither shares the test's own
//! connections' buffers, so each is the path's round trip as another application would see it
//! while the test loads the path (RRUL's "latency under load": a new connection's, and a game's
//! or a call's); the same probes before the test give the idle round trip.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;
use wirespeed_model::histogram::{LatencyStats, RttHistogram};
use wirespeed_proto::codec::SESSION_ID_LEN;
use wirespeed_proto::datagram::{UdpEcho, ECHO_LEN};

/// Time between probes under load.
pub const PROBE_EVERY: Duration = Duration::from_millis(100);
/// How long a handshake or an echo may take before the probe counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the first idle echo is waited for before the server is taken not to answer echoes
/// (a wirespeed server from before they existed).
const FIRST_ECHO_TIMEOUT: Duration = Duration::from_secs(1);

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

/// A UDP echo probe's socket: connected to the server's port, from `bind` (the address the
/// test's control connection uses, which the server checks).
pub async fn echo_socket(
    to: SocketAddr,
    bind: Option<std::net::IpAddr>,
) -> std::io::Result<UdpSocket> {
    let local = match (bind, to) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => SocketAddr::from(([0, 0, 0, 0], 0)),
        (None, SocketAddr::V6(_)) => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
    };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(to).await?;
    Ok(socket)
}

/// `count` echo probes of `session`, one after another: the idle round trip and how many
/// failed; `None` when the first went unanswered (a server that does not answer echoes).
pub async fn idle_echo(
    socket: &UdpSocket,
    session: [u8; SESSION_ID_LEN],
    count: u32,
) -> Option<(LatencyStats, u64)> {
    let (mut h, mut failed) = (RttHistogram::default(), 0);
    for seq in 0..count {
        let wait = if seq == 0 { FIRST_ECHO_TIMEOUT } else { PROBE_TIMEOUT };
        let started = Instant::now();
        let answered = socket.send(&UdpEcho { ack: false, session, seq }.encode()).await.is_ok()
            && tokio::time::timeout(wait, answer(socket, session, seq)).await.is_ok();
        match answered {
            true => h.record(started.elapsed().as_nanos() as u64),
            false if seq == 0 => return None,
            false => failed += 1,
        }
    }
    Some((h.stats(), failed))
}

/// Waits for the answer to echo `seq` (earlier answers, arriving late, are passed over).
async fn answer(socket: &UdpSocket, session: [u8; SESSION_ID_LEN], seq: u32) {
    let mut buf = [0u8; ECHO_LEN + 1];
    loop {
        if let Ok(n) = socket.recv(&mut buf).await {
            if UdpEcho::decode(&buf[..n])
                .is_ok_and(|e| e.ack && e.session == session && e.seq == seq)
            {
                return;
            }
        }
    }
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

    /// Starts echo probes of `session` on `socket` (see [`echo_socket`]): one every
    /// [`PROBE_EVERY`] whether or not the last was answered, each failed when unanswered after
    /// `PROBE_TIMEOUT`.
    pub fn echo(socket: UdpSocket, session: [u8; SESSION_ID_LEN]) -> Self {
        let samples: Samples = Arc::default();
        let kept = samples.clone();
        let task = tokio::spawn(async move {
            let mut every = tokio::time::interval(PROBE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut waiting: VecDeque<(u32, Instant)> = VecDeque::new();
            let mut buf = [0u8; ECHO_LEN + 1];
            // Sequence numbers after the idle probes', so a late idle answer matches nothing.
            let mut seq = 1u32 << 31;
            loop {
                tokio::select! {
                    _ = every.tick() => {
                        let now = Instant::now();
                        {
                            let mut samples = kept.lock().unwrap_or_else(|e| e.into_inner());
                            while waiting
                                .front()
                                .is_some_and(|(_, sent)| now - *sent >= PROBE_TIMEOUT)
                            {
                                waiting.pop_front();
                                samples.push((now, None));
                            }
                        }
                        let _ = socket.send(&UdpEcho { ack: false, session, seq }.encode()).await;
                        waiting.push_back((seq, now));
                        seq = seq.wrapping_add(1);
                    }
                    r = socket.recv(&mut buf) => {
                        let Ok(n) = r else { continue };
                        let Ok(echo) = UdpEcho::decode(&buf[..n]) else { continue };
                        if !echo.ack || echo.session != session {
                            continue;
                        }
                        if let Some(i) = waiting.iter().position(|(s, _)| *s == echo.seq) {
                            let (_, sent) = waiting.remove(i).unwrap_or((0, Instant::now()));
                            let now = Instant::now();
                            kept.lock().unwrap_or_else(|e| e.into_inner()).push((now, Some((now - sent).as_nanos() as u64)));
                        }
                    }
                }
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

    #[tokio::test]
    async fn an_echo_nobody_answers_is_no_idle_figure() {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let socket = echo_socket(silent.local_addr().unwrap(), None).await.unwrap();
        assert_eq!(idle_echo(&socket, [3; SESSION_ID_LEN], 5).await, None);
    }
}
