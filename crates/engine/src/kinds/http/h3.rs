//! HTTP/3 load (`--h3`): h3 over quinn, ALPN `h3`, in the load loops HTTP/2 and HTTP/3 share
//! (`super::multiplex`). The `-c` connections share one UDP socket (a quinn endpoint) per
//! thread: an endpoint per connection would cost each its own receive buffers, and one for
//! all would put every datagram through one task. The breakdown's `connect` is the QUIC
//! handshake (transport and TLS together, as QUIC does them); a failure is counted by its
//! QUIC cause (handshake, version negotiation, idle timeout, stream reset).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::error::{ConnectionError, StreamError};
use h3::quic::ConnectionErrorIncoming;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::member::Stripe;
use wirespeed_proto::http_url::HttpUrl;

use super::counts::{Cause, ShardCounts};
use super::multiplex::{self, count_sent, settle, Ctx, On, Protocol, StepPlan};
use super::requests::RequestSet;
use super::results::ResultSink;
use super::shard::Peer;
use super::step::Running;
use crate::net::quic::{self, Failure, Tuning};

/// ALPN of HTTP/3.
pub(crate) const ALPN: &[u8] = b"h3";

/// How many times a request the server refused before processing (a GOAWAY) is sent again,
/// each time on a newer connection.
const UNPROCESSED_TRIES: u32 = 3;

/// HTTP/3's state in a step: the endpoints and how to connect.
struct H3 {
    endpoints: Vec<quinn::Endpoint>,
    config: quinn::ClientConfig,
    /// The name sent in SNI and verified.
    name: String,
    idle: Duration,
    /// Send the first request of a resumed connection in 0-RTT.
    zero_rtt: bool,
}

/// Sends requests on one HTTP/3 connection.
#[derive(Clone)]
struct Sender {
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    quic: quinn::Connection,
    /// Whether the server takes the early data this connection sent: the first request to end
    /// on it reads the verdict (by then known) and counts it.
    early: Arc<std::sync::Mutex<Option<quinn::ZeroRttAccepted>>>,
}

/// Starts one step of an HTTP/3 test (`rate`: the open model's, or `None`).
pub(super) fn start(
    spec: &HttpSpec,
    peer: &Arc<Peer>,
    url: &HttpUrl,
    set: &Arc<RequestSet>,
    rate: (Option<f64>, Stripe),
    results: Option<ResultSink>,
) -> io::Result<Running> {
    let addr = peer.addr.as_socket().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "HTTP/3 goes over UDP, not a unix socket")
    })?;
    let Some((crypto, name)) = &peer.tls else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "HTTP/3 needs an https:// URL"));
    };
    let tuning = Tuning::default();
    let config = quic::client_config(crypto.clone(), &tuning)?;
    let name = name.to_str().into_owned();
    let threads = usize::from(spec.threads.max(1));
    let zero_rtt = spec.zero_rtt;
    let plan = StepPlan { spec, peer, origin: url.origin(), set, rate, results, name: "ws-h3" };
    multiplex::start(plan, move || {
        let any: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let endpoints =
            (0..threads).map(|_| quinn::Endpoint::client(any)).collect::<io::Result<_>>()?;
        Ok(H3 { endpoints, config, name, idle: tuning.idle_timeout, zero_rtt })
    })
}

impl Protocol for H3 {
    type Sender = Sender;

    fn is_closed(sender: &Sender) -> bool {
        sender.quic.close_reason().is_some()
    }

    async fn handshake(
        ctx: &Ctx<Self>,
        c: &ShardCounts,
        opened: Instant,
        index: usize,
    ) -> Result<Sender, (Cause, Option<String>)> {
        let h3 = &ctx.proto;
        let addr = ctx.peer.addr.as_socket().ok_or((Cause::Other, None))?;
        let endpoint = &h3.endpoints[index % h3.endpoints.len()];
        let connecting = endpoint
            .connect_with(h3.config.clone(), addr, &h3.name)
            .map_err(|e| failed(Failure::Local(e.to_string())))?;
        let handshake = |e| failed(Failure::of(&e, h3.idle));
        // With a session ticket and --0rtt, the connection is usable at once: the request goes as
        // early data, before the handshake completes; `connect` then times only getting there.
        let (connection, early) = if h3.zero_rtt {
            match connecting.into_0rtt() {
                Ok((connection, accepted)) => (connection, Some(accepted)),
                // No ticket yet (the run's first connections), or the server allows no early data.
                Err(connecting) => (connecting.await.map_err(handshake)?, None),
            }
        } else {
            (connecting.await.map_err(handshake)?, None)
        };
        // Opened once its handshake is done (or its 0-RTT begun), as the setup's time is
        // recorded: counted at the attempt, 9446 "opened" stood beside 1467 setups.
        c.count(|t| {
            t.connections += 1;
            t.early_data += u64::from(early.is_some());
        });
        c.histograms(|h| h.connect.record(opened.elapsed().as_nanos() as u64));
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
            .await
            .map_err(|e| (connection_cause(&e, h3.idle), Some(format!("HTTP/3: {e}"))))?;
        // The driver reads the server's control stream (its SETTINGS, a GOAWAY) until the
        // connection closes.
        tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        Ok(Sender { send, quic: connection, early: Arc::new(std::sync::Mutex::new(early)) })
    }

    /// Sends one request scheduled at `scheduled` and reads its whole response; false when the
    /// connection is no longer usable.
    async fn request(
        ctx: &Ctx<Self>,
        c: &ShardCounts,
        on: On<'_, Self>,
        scheduled: Instant,
        open: bool,
    ) -> bool {
        let On { connection, mut generation, mut sender, due } = on;
        let idle = ctx.proto.idle;
        let i = ctx.next_request();
        let r = &ctx.set.requests[i];
        let failed = |e: StreamError| Some(stream_cause(&e, idle));
        // Errors are `Some(cause)`, or `None` when a failed reconnect already counted itself.
        let work = async {
            let mut counted = false;
            let mut tries = 0;
            let (mut stream, sent) = loop {
                let may_retry = tries < UNPROCESSED_TRIES;
                tries += 1;
                let sent = Instant::now();
                if !counted {
                    counted = true;
                    count_sent(ctx, c, (scheduled, sent), (r.body.len() as u64, due), open)?;
                }
                let head = r.head(&ctx.origin).body(()).map_err(|_| Some(Cause::Other))?;
                let mut send = sender.send.clone();
                match send.send_request(head).await {
                    Ok(stream) => break (stream, sent),
                    // A GOAWAY came first: the server will not process this stream, so it goes
                    // again on the connection that replaces this one (RFC 9114 §5.2).
                    Err(StreamError::RemoteClosing { .. }) if may_retry => {
                        (generation, sender) =
                            connection.replace(generation, ctx, c, scheduled).await.ok_or(None)?;
                    }
                    Err(e) => return Err(failed(e)),
                }
            };
            if !r.body.is_empty() {
                stream.send_data(Bytes::from(r.body.clone())).await.map_err(failed)?;
            }
            stream.finish().await.map_err(failed)?;
            let response = stream.recv_response().await.map_err(failed)?;
            c.histograms(|h| h.first_byte.record(sent.elapsed().as_nanos() as u64));
            let mut bytes_in = 0u64;
            while let Some(chunk) = stream.recv_data().await.map_err(failed)? {
                bytes_in += chunk.remaining() as u64;
            }
            // The first answer on a 0-RTT connection comes after its handshake: the server's
            // verdict on the early data is known.
            let verdict = sender.early.lock().ok().and_then(|mut e| e.take());
            if let Some(accepted) = verdict {
                if accepted.await {
                    c.count(|t| t.early_data_accepted += 1);
                }
            }
            Ok((response.status().as_u16(), bytes_in))
        };
        let outcome = tokio::time::timeout(ctx.timeout, work).await;
        settle::<Self>(ctx, c, (i, r.body.len() as u64), scheduled, outcome, &sender)
    }
}

/// The cause a report counts a QUIC connection's failure under, and its words.
fn failed(f: Failure) -> (Cause, Option<String>) {
    let cause = match &f {
        Failure::VersionNegotiation => Cause::VersionNegotiation,
        Failure::Handshake(_) => Cause::Handshake,
        Failure::IdleTimeout(_) => Cause::IdleTimeout,
        Failure::Reset => Cause::Reset,
        Failure::Closed(_) => Cause::Closed,
        Failure::Protocol(_) => Cause::Invalid,
        Failure::Local(_) => Cause::Other,
    };
    (cause, Some(f.to_string()))
}

/// The cause of an HTTP/3 connection's error (`idle`: the connection's idle timeout).
fn connection_cause(e: &ConnectionError, idle: Duration) -> Cause {
    match e {
        ConnectionError::Timeout { .. } => Cause::IdleTimeout,
        ConnectionError::Remote { 0: incoming, .. } => match incoming {
            ConnectionErrorIncoming::Timeout => Cause::IdleTimeout,
            ConnectionErrorIncoming::ApplicationClose { .. } => Cause::Closed,
            ConnectionErrorIncoming::Undefined(inner) => {
                match inner.downcast_ref::<quinn::ConnectionError>() {
                    Some(q) => failed(Failure::of(q, idle)).0,
                    None => Cause::Other,
                }
            }
            _ => Cause::Other,
        },
        ConnectionError::Local { .. } => Cause::Closed,
        _ => Cause::Other,
    }
}

/// The cause of a request stream's error.
fn stream_cause(e: &StreamError, idle: Duration) -> Cause {
    match e {
        StreamError::RemoteTerminate { .. } => Cause::StreamReset,
        StreamError::ConnectionError { 0: c, .. } => connection_cause(c, idle),
        StreamError::HeaderTooBig { .. } | StreamError::StreamError { .. } => Cause::Invalid,
        StreamError::RemoteClosing { .. } => Cause::Closed,
        _ => Cause::Other,
    }
}
