//! DNS over QUIC (RFC 9250) for the stream clients: one QUIC connection per client (ALPN
//! `doq`), each query on a bidirectional stream of its own, length-prefixed and finished, its
//! answer the stream's whole reply. The wire carries message ID 0, as the RFC asks; the
//! client keeps its own ID for each stream and puts it in the answer before the tracker
//! counts it, so a DoQ answer is checked (question, response code, lateness) exactly as a
//! TCP one. A stream the server resets, or a reply that is not one length-prefixed message,
//! is a stream error: counted as such, and its query as lost when its time is up.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use quinn::{Connection, Endpoint, VarInt};
use tokio::task::JoinSet;
use wirespeed_proto::dns::wire::set_id;

use super::shared::{since, Local};
use super::stream::{Ended, StreamClient};
use super::tracker::Answered;
use crate::net::quic::{Failure, Tuning};
use crate::run::pacer::Due;

/// ALPN of DNS over QUIC.
pub(super) const ALPN: &[u8] = b"doq";
/// Longest wait between looks at the run's flags.
const HEARTBEAT: Duration = Duration::from_millis(10);
/// RFC 9250's code for closing a connection with no error.
const DOQ_NO_ERROR: VarInt = VarInt::from_u32(0);
/// Largest reply read: a length prefix and the largest DNS message.
const REPLY: usize = 2 + 65_535;

/// How a DoQ client reaches its server.
#[derive(Clone)]
pub(super) struct QuicClient {
    /// quinn's settings: whom to trust, ALPN `doq`.
    pub config: quinn::ClientConfig,
    /// The name sent in SNI and verified.
    pub name: String,
}

/// What became of one query's stream.
enum Reply {
    /// The answer, its length prefix removed.
    Answer(Vec<u8>),
    /// The server reset the stream or sent something that is not one message.
    StreamError,
    /// The connection is gone: every query on it is.
    Lost,
}

impl StreamClient {
    /// A QUIC connection to the server, on an endpoint of its own.
    pub(super) async fn connect_quic(&self, q: &QuicClient) -> io::Result<(Endpoint, Connection)> {
        let any: IpAddr = if self.addr.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        let endpoint = Endpoint::client(SocketAddr::new(any, 0))?;
        let connecting = endpoint
            .connect_with(q.config.clone(), self.addr, &q.name)
            .map_err(|e| io::Error::other(Failure::Local(e.to_string()).to_string()))?;
        let idle = Tuning::default().idle_timeout;
        let connection = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "QUIC handshake timed out"))?
            .map_err(|e| io::Error::other(Failure::of(&e, idle).to_string()))?;
        Ok((endpoint, connection))
    }

    /// Drives one QUIC connection: open a stream per query as the window and the schedule
    /// allow, count the answers as their streams end.
    pub(super) async fn serve_quic(
        &mut self,
        endpoint: Endpoint,
        connection: Connection,
        local: &mut Local,
    ) -> Ended {
        let mut asked: JoinSet<(u16, Reply)> = JoinSet::new();
        let ended = loop {
            if self.part.control.interrupt.load(Relaxed) {
                break Ended::Done;
            }
            let sending = !self.part.control.stop.load(Relaxed) && !self.source.exhausted();
            if !sending && self.part.tracker.in_flight() == 0 {
                break Ended::Done;
            }
            let now = since(self.part.begin);
            if sending {
                self.ask(now, &connection, &mut asked);
            }
            let mut wait = HEARTBEAT;
            if let Some(p) = &self.part.pace {
                let next = p.next_due_ns().unwrap_or(u64::MAX);
                wait = wait.min(Duration::from_nanos(next.saturating_sub(now)));
            }
            if let Some(d) = self.part.tracker.next_deadline() {
                wait = wait.min(Duration::from_nanos(d.saturating_sub(now)));
            }
            tokio::select! {
                Some(done) = asked.join_next() => match done {
                    Ok((id, Reply::Answer(mut msg))) => {
                        if msg.len() >= 2 {
                            set_id(&mut msg, id);
                        }
                        let now = since(self.part.begin);
                        let answered = self.part.tracker.answer(&msg, 0, now, &self.part.queries);
                        if let Answered::Completed { latency_ns, .. } = answered {
                            local.pending.push(latency_ns);
                        }
                    }
                    Ok((_, Reply::StreamError)) => self.part.tracker.counts.stream_errors += 1,
                    Ok((_, Reply::Lost)) => break Ended::Closed,
                    Err(_) => {}
                },
                _ = connection.closed() => break Ended::Closed,
                _ = tokio::time::sleep(wait) => {}
            }
            let now = since(self.part.begin);
            self.part.tracker.expire(now);
            local.publish(&self.part.shared, &self.part.tracker.counts, now, false);
        };
        asked.abort_all();
        connection.close(DOQ_NO_ERROR, b"");
        let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
        ended
    }

    /// Opens a stream for each query the window and the schedule allow.
    fn ask(&mut self, now: u64, connection: &Connection, asked: &mut JoinSet<(u16, Reply)>) {
        let room = u64::from(self.part.window.saturating_sub(self.part.tracker.in_flight()));
        let want = match &mut self.part.pace {
            Some(p) => {
                let Due { count: due, skipped } = p.due(now);
                self.part.tracker.counts.unsent += skipped;
                due.min(room)
            }
            None => room,
        };
        // A query's stream lives a little past its timeout, so a late answer is still told
        // from a stray one, and never longer.
        let limit = Duration::from_nanos(self.part.tracker.timeout_ns()).saturating_mul(2);
        let mut queued = 0;
        while queued < want {
            let Some(id) = self.part.tracker.take_id() else { break };
            let Some(q) = self.source.next() else {
                self.part.tracker.give_back(id);
                break;
            };
            let template = &self.part.queries.get(q).bytes;
            let mut frame = Vec::with_capacity(2 + template.len());
            frame.extend_from_slice(&(template.len() as u16).to_be_bytes());
            frame.extend_from_slice(template);
            set_id(&mut frame[2..], 0);
            self.part.tracker.sent(id, q, 0, now, template.len());
            let connection = connection.clone();
            asked.spawn(async move {
                match tokio::time::timeout(limit, exchange(&connection, &frame)).await {
                    Ok(reply) => (id, reply),
                    // Its query is lost by now; the stream is dropped (and reset).
                    Err(_) => (id, Reply::StreamError),
                }
            });
            queued += 1;
        }
        if let Some(p) = &mut self.part.pace {
            p.book(queued);
        }
    }
}

/// One query's stream: the frame out, the stream finished, the whole reply back.
async fn exchange(connection: &Connection, frame: &[u8]) -> Reply {
    let Ok((mut send, mut recv)) = connection.open_bi().await else { return Reply::Lost };
    if send.write_all(frame).await.is_err() || send.finish().is_err() {
        return gone_or_stream_error(connection);
    }
    match recv.read_to_end(REPLY).await {
        Ok(reply) => match reply.get(..2).map(|l| usize::from(u16::from_be_bytes([l[0], l[1]]))) {
            Some(len) if len == reply.len() - 2 => Reply::Answer(reply[2..].to_vec()),
            _ => Reply::StreamError,
        },
        Err(_) => gone_or_stream_error(connection),
    }
}

/// A stream that failed: the connection's loss, or this stream's alone.
fn gone_or_stream_error(connection: &Connection) -> Reply {
    match connection.close_reason() {
        Some(_) => Reply::Lost,
        None => Reply::StreamError,
    }
}
