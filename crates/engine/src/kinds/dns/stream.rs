//! A TCP or DNS-over-TLS client (RFC 7766, RFC 7858): one connection, queries pipelined as
//! length-prefixed frames, answers matched by ID in whatever order they come (DNS over QUIC
//! and over HTTPS connect here too, and run `per_query`'s loop). When the server
//! closes the connection, the queries in flight on it are lost (no answer can come on another)
//! and the client connects again; a client that cannot connect three times running while
//! working through a bounded datafile gives its share up as unsent instead of trying forever.
//! The same loop asks truncated UDP answers again over TCP for `--tc-retry`, its queries
//! coming from a channel instead of the datafile.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_proto::dns::wire::set_id;

use super::doh::{HttpsClient, HttpsExchanges};
use super::doh3::Https3Exchanges;
use super::doq::{QuicClient, QuicExchanges};
use super::per_query;
use super::shared::{since, Ended, Local, Part, Source};
use super::tracker::Answered;

/// Longest wait between looks at the run's flags.
const HEARTBEAT: Duration = Duration::from_millis(10);
/// Bytes of queued frames past which no more are queued until the socket takes some.
const OUT_HIGH: usize = 64 * 1024;
/// Consecutive failed connections after which a bounded run's client gives up.
const GIVE_UP_AFTER: u32 = 3;

/// One stream client.
pub(super) struct StreamClient {
    pub addr: SocketAddr,
    /// DoT: the TLS configuration and the name to verify.
    pub tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    /// DoQ: QUIC instead of TCP.
    pub quic: Option<QuicClient>,
    /// DoH: HTTP/2 requests instead of frames.
    pub https: Option<HttpsClient>,
    pub connect_timeout: Duration,
    pub source: Source,
    /// What every worker has: queries, window, schedule, tracker, flags.
    pub part: Part,
}

impl StreamClient {
    /// Runs until this client's queries are sent and answered or lost, or the run stops.
    pub(super) async fn run(mut self) {
        let mut local = Local::new();
        let mut failures = 0u32;
        // When this worker's server went away (its connection closed, and connecting again
        // has failed since), nanoseconds since the run began.
        let mut lost_at: Option<u64> = None;
        let mut connected_once = false;
        loop {
            if self.part.control.interrupt.load(Relaxed) {
                break;
            }
            let sending = !self.part.control.stop.load(Relaxed) && !self.source.exhausted();
            if !sending && self.part.tracker.in_flight() == 0 {
                break;
            }
            self.part.tracker.counts.connect_attempts += 1;
            let started = Instant::now();
            // A connection still being tried when the run stops is given up: a DoQ run of 6 s
            // against nothing waited out its handshake timeout, to 10.2 s.
            let attempt = tokio::select! {
                r = self.connect() => Some(r),
                () = self.stopped() => None,
            };
            let Some(attempt) = attempt else { break };
            match attempt {
                Ok(stream) => {
                    failures = 0;
                    lost_at = None;
                    connected_once = true;
                    self.part.tracker.counts.connects += 1;
                    local.setups.push(started.elapsed().as_nanos() as u64);
                    let ended = match stream {
                        Conn::Plain(s) => self.serve(s, &mut local).await,
                        Conn::Tls(s) => self.serve(*s, &mut local).await,
                        Conn::Quic(q) => {
                            per_query::serve(&mut self.part, &mut self.source, q, &mut local).await
                        }
                        Conn::Https(h) => {
                            per_query::serve(&mut self.part, &mut self.source, h, &mut local).await
                        }
                        Conn::Https3(h) => {
                            per_query::serve(&mut self.part, &mut self.source, h, &mut local).await
                        }
                    };
                    if let Ended::Closed = ended {
                        self.part.tracker.abandon(false);
                        lost_at = Some(since(self.part.begin));
                    } else {
                        break;
                    }
                }
                Err(e) => {
                    failures += 1;
                    tracing::debug!("DNS connection to {} failed: {e}", self.addr);
                    self.part.tracker.counts.last_connect_failure = Some(e.to_string());
                    if failures >= GIVE_UP_AFTER && self.source.give_up(&mut self.part.tracker) {
                        break;
                    }
                    // Not in a tight loop: a refused port answers at once.
                    self.pause(Duration::from_millis(200)).await;
                }
            }
            local.publish(
                &self.part.shared,
                &self.part.tracker.counts,
                since(self.part.begin),
                true,
            );
        }
        if self.part.control.interrupt.load(Relaxed) {
            self.part.tracker.abandon(true);
        }
        // The last attempt failed, after a connection had been made and lost: cut off.
        if let (Some(at), true, true) = (lost_at, connected_once, failures > 0) {
            self.part.tracker.counts.cut_off += 1;
            self.part.tracker.counts.cut_off_at_ns = at;
        }
        self.part.shared.finish(&mut local, &self.part.tracker.counts, since(self.part.begin));
    }

    /// Resolves once the run stops sending (or is interrupted).
    async fn stopped(&self) {
        while !self.part.control.stopping() {
            tokio::time::sleep(HEARTBEAT).await;
        }
    }

    async fn pause(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until && !self.part.control.stopping() {
            tokio::time::sleep(HEARTBEAT).await;
        }
    }

    async fn connect(&self) -> io::Result<Conn> {
        if let Some(q) = &self.quic {
            return Ok(Conn::Quic(q.connect(self.addr, self.connect_timeout).await?));
        }
        if let Some(h) = self.https.as_ref().filter(|h| h.h3.is_some()) {
            return Ok(Conn::Https3(h.connect_h3(self.addr, self.connect_timeout).await?));
        }
        if let Some(h) = &self.https {
            return Ok(Conn::Https(h.connect(self.addr, self.connect_timeout).await?));
        }
        let tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
        tcp.set_nodelay(true)?;
        match &self.tls {
            None => Ok(Conn::Plain(tcp)),
            Some((config, name)) => {
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                let handshake = connector.connect(name.clone(), tcp);
                let tls = tokio::time::timeout(self.connect_timeout, handshake).await.map_err(
                    |_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"),
                )??;
                Ok(Conn::Tls(Box::new(tls)))
            }
        }
    }

    /// Drives one connection: queue frames, write what the socket takes, read answers.
    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: S,
        local: &mut Local,
    ) -> Ended {
        let (mut rd, mut wr) = tokio::io::split(stream);
        let mut inbuf = BytesMut::with_capacity(64 * 1024);
        let mut outbuf: Vec<u8> = Vec::with_capacity(OUT_HIGH + 1024);
        loop {
            if self.part.control.interrupt.load(Relaxed) {
                return Ended::Done;
            }
            let sending = !self.part.control.stop.load(Relaxed) && !self.source.exhausted();
            if !sending && self.part.tracker.in_flight() == 0 {
                let _ = wr.shutdown().await;
                return Ended::Done;
            }
            let now = since(self.part.begin);
            if sending && outbuf.len() < OUT_HIGH {
                self.queue(now, &mut outbuf);
            }
            let wait = self.part.wait(now, HEARTBEAT);
            let retry_open = matches!(&self.source, Source::Retry { closed: false, .. });
            tokio::select! {
                r = rd.read_buf(&mut inbuf) => match r {
                    Ok(0) | Err(_) => return Ended::Closed,
                    Ok(_) => self.read_frames(&mut inbuf, local),
                },
                w = wr.write(&outbuf), if !outbuf.is_empty() => match w {
                    Ok(0) | Err(_) => return Ended::Closed,
                    Ok(n) => { outbuf.drain(..n); }
                },
                q = recv_retry(&mut self.source), if retry_open => {
                    if let Source::Retry { queue, closed, .. } = &mut self.source {
                        match q {
                            Some(q) => queue.push_back(q),
                            None => *closed = true,
                        }
                    }
                }
                _ = tokio::time::sleep(wait) => {}
            }
            let now = since(self.part.begin);
            self.part.tracker.expire(now);
            local.publish(&self.part.shared, &self.part.tracker.counts, now, false);
        }
    }

    /// Appends the frames the window and the schedule allow.
    fn queue(&mut self, now: u64, outbuf: &mut Vec<u8>) {
        let want = self.part.sendable(now);
        let mut queued = 0;
        while queued < want && outbuf.len() < OUT_HIGH {
            let Some(id) = self.part.tracker.take_id() else { break };
            let Some(q) = self.source.next() else {
                self.part.tracker.give_back(id);
                break;
            };
            let template = &self.part.queries.get(q).bytes;
            outbuf.extend_from_slice(&(template.len() as u16).to_be_bytes());
            let at = outbuf.len();
            outbuf.extend_from_slice(template);
            set_id(&mut outbuf[at..], id);
            self.part.tracker.sent(id, q, 0, now, template.len());
            queued += 1;
        }
        if let Some(p) = &mut self.part.pace {
            p.book(queued);
        }
    }

    /// Counts every whole frame in `inbuf` and keeps the partial one.
    fn read_frames(&mut self, inbuf: &mut BytesMut, local: &mut Local) {
        let now = since(self.part.begin);
        while inbuf.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([inbuf[0], inbuf[1]]));
            if inbuf.len() < 2 + len {
                break;
            }
            let answered = self.part.tracker.answer(&inbuf[2..2 + len], 0, now, &self.part.queries);
            if let Answered::Completed { latency_ns, .. } = answered {
                local.pending.push(latency_ns);
            }
            inbuf.advance(2 + len);
        }
    }
}

async fn recv_retry(source: &mut Source) -> Option<u32> {
    match source {
        Source::Retry { rx, .. } => rx.recv().await,
        Source::File(_) => std::future::pending().await,
    }
}

/// A connection: plain TCP, TLS, or QUIC on its endpoint.
enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    Quic(QuicExchanges),
    Https(HttpsExchanges),
    Https3(Https3Exchanges),
}
