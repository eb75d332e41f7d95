//! The QUIC stream ends of a bandwidth test (`--quic`). Each data stream is a QUIC connection
//! over the UDP socket its hello opened (so QUIC crosses the same port and NAT as the test's
//! UDP streams), carrying one unidirectional QUIC stream from sender to receiver. An end runs
//! on its worker thread with a runtime of its own: the connection's crypto, acknowledgements
//! and loss recovery cost that thread, as a TCP stream's kernel work costs its own, so the CPU
//! figures compare. The sender publishes the connection's path (RTT, congestion window, lost
//! packets) as it goes, where a TCP sender publishes TCP_INFO.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::{Connection, Endpoint, VarInt};
use socket2::Socket;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Flow, TcpSample};

use super::counters::Counters;
use super::shared::{Role, Shared};
use crate::net::quic::{self, Congestion, Failure, PathSample, Tuning};
use crate::net::sys;
use crate::run::pacer::{paced_piece, Pacer};

/// How often an end looks at the test's flags and samples its path.
const LOOK: Duration = Duration::from_millis(50);
/// Longest a closing end waits for its close to reach the peer.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// Most chunks a receiver takes from quinn in one read.
const CHUNKS: usize = 64;
/// The close code of a stream end that finished: its peer takes it as success.
const DONE: VarInt = VarInt::from_u32(0);
/// The close code of an aborted test.
const ABORTED: VarInt = VarInt::from_u32(1);

/// What one side's QUIC ends need besides their sockets: how the client trusts the server, or
/// what the server presents.
#[derive(Clone)]
pub(crate) enum QuicSide {
    /// The client's ends connect, trusting the certificate the control connection announced.
    Client(quinn::ClientConfig),
    /// The server's ends accept, presenting its certificate.
    Server(quinn::ServerConfig),
}

impl std::fmt::Debug for QuicSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Client(_) => "QuicSide::Client",
            Self::Server(_) => "QuicSide::Server",
        })
    }
}

impl QuicSide {
    /// The client's side: trusts only the certificate whose SHA-256 is `pin`.
    pub(crate) fn client(spec: &BandwidthSpec, pin: [u8; 32]) -> io::Result<Self> {
        Ok(Self::Client(quic::pinned_test_client(pin, &tuning(spec)?)?))
    }

    /// The server's side: presents `crypto` (see [`quic::test_identity`]).
    pub(crate) fn server(
        spec: &BandwidthSpec,
        crypto: Arc<rustls::ServerConfig>,
    ) -> io::Result<Self> {
        Ok(Self::Server(quic::server_config(crypto, &tuning(spec)?)?))
    }
}

/// The connection settings a spec asks for: its congestion controller (quinn's default,
/// cubic, when none is named).
fn tuning(spec: &BandwidthSpec) -> io::Result<Tuning> {
    let congestion = match &spec.congestion {
        Some(name) => name
            .parse::<Congestion>()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
        None => Congestion::default(),
    };
    Ok(Tuning { congestion, ..Tuning::default() })
}

/// One QUIC stream end, borrowed from its worker.
pub(crate) struct QuicEnd<'a> {
    pub flow: Flow,
    pub role: Role,
    pub spec: &'a BandwidthSpec,
    pub socket: &'a Socket,
    pub counters: &'a Arc<Counters>,
    pub shared: &'a Arc<Shared>,
    pub side: &'a QuicSide,
}

impl QuicEnd<'_> {
    /// Connects (or accepts), moves the data, and closes; on the worker's thread.
    pub(crate) fn run(&self) -> io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(self.run_async())
    }

    async fn run_async(&self) -> io::Result<()> {
        let socket: std::net::UdpSocket = self.socket.try_clone()?.into();
        let (endpoint, connecting) = match self.side {
            QuicSide::Client(config) => {
                let (endpoint, connecting) = quic::test_connect(socket, config.clone())?;
                (endpoint, Some(connecting))
            }
            QuicSide::Server(config) => (quic::endpoint_on(socket, Some(config.clone()))?, None),
        };
        let connection = tokio::select! {
            c = self.connection(&endpoint, connecting) => c?,
            () = until_aborted(self.shared) => return Ok(()),
        };
        let result = match self.role {
            Role::Send => self.send(&connection).await,
            Role::Recv => self.recv(&connection).await,
        };
        let (code, why): (VarInt, &[u8]) = match (&result, self.shared.aborted()) {
            (Ok(()), false) => (DONE, b"done"),
            _ => (ABORTED, b"aborted"),
        };
        connection.close(code, why);
        let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
        result
    }

    /// The connection: the client's handshake, or the server's wait for it.
    async fn connection(
        &self,
        endpoint: &Endpoint,
        connecting: Option<quinn::Connecting>,
    ) -> io::Result<Connection> {
        let idle = Tuning::default().idle_timeout;
        let connecting = match connecting {
            Some(c) => c,
            None => quic::test_arrival(endpoint)
                .await?
                .accept()
                .map_err(|e| other(Failure::of(&e, idle)))?,
        };
        connecting.await.map_err(|e| other(Failure::of(&e, idle)))
    }

    /// Writes the test's data on `--quic-streams` new streams, a write to each in turn, until
    /// told to stop (or the `-n` budget is spent), paced when the test has a rate; then waits
    /// until the receiver has all of it.
    async fn send(&self, connection: &Connection) -> io::Result<()> {
        let mut streams = Vec::with_capacity(usize::from(self.spec.quic_streams));
        for _ in 0..self.spec.quic_streams {
            streams.push(connection.open_uni().await.map_err(lost)?);
        }
        let len = self.spec.length as usize;
        let mut data = vec![0u8; len];
        sys::fill_random(&mut data);
        let data = Bytes::from(data);
        let piece = paced_piece(self.spec.bitrate_bps, len);
        let mut pacer = Pacer::bytes(self.spec.bitrate_bps, self.shared.now_ns());
        let (mut pending, mut turn) = (Bytes::new(), 0);
        let mut sampled = Instant::now();
        // One timer for the whole send, not one made and dropped per write.
        let mut look = tokio::time::interval(LOOK);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        look.tick().await;
        loop {
            if pending.is_empty() {
                if self.shared.stopping() {
                    break;
                }
                let chunk = self.shared.claim(self.flow, piece as u64) as usize;
                if chunk == 0 || !self.pace(&mut pacer, chunk as u64).await {
                    break;
                }
                pending = data.slice(..chunk);
                turn = (turn + 1) % streams.len();
            }
            tokio::select! {
                // Cancel-safe: when the look wins, nothing of `pending` was written.
                written = streams[turn].write_chunks(std::slice::from_mut(&mut pending)) => {
                    let written = written.map_err(|e| other(format!("QUIC stream: {e}")))?;
                    self.counters.add(written.bytes as u64, 0);
                    self.counters.touch(self.shared.now_ns());
                }
                _ = look.tick() => {
                    if self.shared.aborted() {
                        return Ok(());
                    }
                }
            }
            if sampled.elapsed() >= LOOK {
                self.sample(connection);
                sampled = Instant::now();
            }
        }
        for stream in &mut streams {
            stream.finish().map_err(|e| other(format!("QUIC stream: {e}")))?;
        }
        for stream in &streams {
            if !self.delivered(connection, stream).await? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Waits until the receiver has acknowledged every byte of a finished `stream` (or closed
    /// the connection after reading them all): what is still queued drains at the path's
    /// rate. False when the test was aborted first.
    async fn delivered(
        &self,
        connection: &Connection,
        stream: &quinn::SendStream,
    ) -> io::Result<bool> {
        let stopped = stream.stopped();
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                r = &mut stopped => {
                    self.sample(connection);
                    return match r {
                        Ok(None) => Ok(true),
                        Ok(Some(code)) => Err(other(format!("the receiver stopped the QUIC stream (code {code})"))),
                        Err(quinn::StoppedError::ConnectionLost(quinn::ConnectionError::ApplicationClosed(c)))
                            if c.error_code == DONE => Ok(true),
                        Err(quinn::StoppedError::ConnectionLost(e)) => Err(other(Failure::of(&e, Tuning::default().idle_timeout))),
                        Err(e) => Err(other(e.to_string())),
                    };
                }
                () = tokio::time::sleep(LOOK) => {
                    self.sample(connection);
                    if self.shared.aborted() {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Counts what arrives on the sender's streams until each ends.
    async fn recv(&self, connection: &Connection) -> io::Result<()> {
        let mut readers = tokio::task::JoinSet::new();
        for _ in 0..self.spec.quic_streams {
            let stream = tokio::select! {
                s = connection.accept_uni() => s.map_err(lost)?,
                () = until_aborted(self.shared) => return Ok(()),
            };
            readers.spawn(read_all(stream, self.counters.clone(), self.shared.clone()));
        }
        while let Some(done) = readers.join_next().await {
            done.map_err(other)??;
        }
        Ok(())
    }

    /// Waits until `bytes` more are due on the schedule; false when the test stopped first.
    async fn pace(&self, pacer: &mut Pacer, bytes: u64) -> bool {
        let mut wait = pacer.reserve(bytes, self.shared.now_ns());
        while wait > 0 {
            if self.shared.stopping() {
                return false;
            }
            let step = wait.min(LOOK.as_nanos() as u64);
            tokio::time::sleep(Duration::from_nanos(step)).await;
            wait -= step;
        }
        !self.shared.stopping()
    }

    /// Publishes the connection's path as the interval figures take it, and what it has moved
    /// (so finishing sees a sender whose queue still drains as progress).
    fn sample(&self, connection: &Connection) {
        let path = PathSample::of(connection);
        self.counters.set_tcp(TcpSample {
            // A lost packet's data is sent again in a new one: QUIC's retransmission.
            retransmits: path.lost_packets,
            cwnd_bytes: path.cwnd,
            rtt_ns: path.rtt_ns,
            rttvar_ns: 0,
            pacing_bps: 0,
            delivery_bps: 0,
        });
        self.counters.progress(connection.stats().udp_tx.bytes);
    }
}

/// Counts what arrives on one stream until it ends, or the test is aborted. Reads take up to
/// [`CHUNKS`] of quinn's chunks at once (a chunk is about a packet's data), and the abort
/// watch lives across reads: a timer made and dropped per packet cost more than the count.
async fn read_all(
    mut stream: quinn::RecvStream,
    counters: Arc<Counters>,
    shared: Arc<Shared>,
) -> io::Result<()> {
    let aborted = until_aborted(&shared);
    tokio::pin!(aborted);
    let mut chunks: [Bytes; CHUNKS] = std::array::from_fn(|_| Bytes::new());
    loop {
        tokio::select! {
            // Cancel-safe, as quinn documents.
            read = stream.read_chunks(&mut chunks) => match read {
                Ok(Some(n)) => {
                    let bytes: usize = chunks[..n].iter_mut().map(|c| std::mem::take(c).len()).sum();
                    counters.add(bytes as u64, 0);
                    counters.touch(shared.now_ns());
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(other(format!("QUIC stream: {e}"))),
            },
            () = &mut aborted => return Ok(()),
        }
    }
}

/// Returns once the test is aborted.
async fn until_aborted(shared: &Shared) {
    while !shared.aborted() {
        tokio::time::sleep(LOOK).await;
    }
}

/// A connection error while opening a stream, in the words of [`Failure`].
fn lost(e: quinn::ConnectionError) -> io::Error {
    other(Failure::of(&e, Tuning::default().idle_timeout))
}

fn other(e: impl ToString) -> io::Error {
    io::Error::other(e.to_string())
}
