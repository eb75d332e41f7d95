//! HTTP/2 load (`--h2`): hyper's client, prior knowledge on http:// (h2c) and ALPN `h2` over
//! TLS, in the load loops HTTP/2 and HTTP/3 share (`super::multiplex`).

use std::io;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::member::Stripe;
use wirespeed_proto::http_url::HttpUrl;

use super::counts::{Cause, ShardCounts};
use super::multiplex::{self, count_sent, settle, Ctx, On, Protocol, StepPlan};
use super::requests::{Request, RequestSet};
use super::results::ResultSink;
use super::shard::Peer;
use super::step::Running;

type Sender = SendRequest<Full<Bytes>>;

/// HTTP/2 on hyper: it needs no state of its own.
pub(super) struct H2;

/// Starts one step of an HTTP/2 test (`rate`: the open model's, or `None`).
pub(super) fn start(
    spec: &HttpSpec,
    peer: &Arc<Peer>,
    url: &HttpUrl,
    set: &Arc<RequestSet>,
    rate: (Option<f64>, Stripe),
    results: Option<ResultSink>,
) -> io::Result<Running> {
    let plan = StepPlan { spec, peer, origin: url.origin(), set, rate, results, name: "ws-h2" };
    multiplex::start(plan, || Ok(H2))
}

impl Protocol for H2 {
    type Sender = Sender;

    fn is_closed(sender: &Sender) -> bool {
        sender.is_closed()
    }

    async fn handshake(
        ctx: &Ctx<Self>,
        c: &ShardCounts,
        opened: Instant,
        _index: usize,
    ) -> Result<Sender, (Cause, Option<String>)> {
        let io_err = |e: io::Error| (Cause::of(&e, true), None);
        let since = |t: Instant| t.elapsed().as_nanos() as u64;
        if let Some(path) = ctx.peer.addr.as_pathname() {
            let stream = tokio::net::UnixStream::connect(path).await.map_err(io_err)?;
            c.count(|t| t.connections += 1);
            c.histograms(|h| h.connect.record(since(opened)));
            return h2_over(stream).await;
        }
        let addr = ctx.peer.addr.as_socket().ok_or((Cause::Other, None))?;
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(io_err)?;
        let _ = tcp.set_nodelay(true);
        // Opened when connected, as the connect time is recorded (not at the attempt).
        c.count(|t| t.connections += 1);
        c.histograms(|h| h.connect.record(since(opened)));
        let Some((config, name)) = &ctx.peer.tls else { return h2_over(tcp).await };
        let connector = tokio_rustls::TlsConnector::from(config.clone());
        let tls = connector
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| (Cause::Tls, Some(e.to_string())))?;
        c.histograms(|h| h.tls.record(since(opened)));
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err((Cause::Tls, Some("the server did not agree to HTTP/2 (ALPN h2)".into())));
        }
        h2_over(tls).await
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
        let i = ctx.next_request();
        let r = &ctx.set.requests[i];
        let make = || build(&ctx.origin, r);
        let Ok(req) = make() else {
            c.fail(Cause::Other, None);
            return true;
        };
        // Errors are `Some(cause)`, or `None` when a failed reconnect already counted itself.
        let work = async {
            let mut first = Some(req);
            let mut counted = false;
            let mut tries = 0;
            let (response, sent) = loop {
                let may_retry = tries < UNPROCESSED_TRIES;
                tries += 1;
                if let Err(e) = sender.ready().await {
                    if !may_retry {
                        return Err(Some(cause_of(&e)));
                    }
                    // The connection went away (a GOAWAY, say) before this request went out.
                    (generation, sender) =
                        connection.replace(generation, ctx, c, scheduled).await.ok_or(None)?;
                    continue;
                }
                let sent = Instant::now();
                if !counted {
                    counted = true;
                    count_sent(ctx, c, (scheduled, sent), (r.body.len() as u64, due), open)?;
                }
                let req = match first.take() {
                    Some(req) => req,
                    None => make().map_err(|_| Some(Cause::Other))?,
                };
                match sender.send_request(req).await {
                    Ok(response) => break (response, sent),
                    // The server never processed it (a GOAWAY whose last stream id is below it, a
                    // REFUSED_STREAM, a connection closed before it went out): HTTP/2 lets it be
                    // sent again (RFC 9113 §8.7): after a GOAWAY on the connection that replaced
                    // this one; after REFUSED_STREAM on the same one if it still takes requests.
                    Err(e) if may_retry && never_processed(&e) && sender.is_ready() => {}
                    Err(e) if may_retry && never_processed(&e) => {
                        (generation, sender) =
                            connection.replace(generation, ctx, c, scheduled).await.ok_or(None)?;
                    }
                    Err(e) => return Err(Some(cause_of(&e))),
                }
            };
            c.histograms(|h| h.first_byte.record(sent.elapsed().as_nanos() as u64));
            read_body(response).await
        };
        let outcome = tokio::time::timeout(ctx.timeout, work).await;
        settle::<Self>(ctx, c, (i, r.body.len() as u64), scheduled, outcome, &sender)
    }
}

async fn h2_over<S>(stream: S) -> Result<Sender, (Cause, Option<String>)>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| (cause_of(&e), None))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// True when `e` says the server never processed the request, so it may be sent again.
fn never_processed(e: &hyper::Error) -> bool {
    if e.is_canceled() || dispatch_gone(e) {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h2) = s.downcast_ref::<h2::Error>() {
            return (h2.is_go_away() && h2.is_remote())
                || h2.reason() == Some(h2::Reason::REFUSED_STREAM);
        }
        source = s.source();
    }
    false
}

/// hyper's "dispatch task is gone": the connection's task ended while the request waited in
/// its queue, before a stream carried it (a connection a GOAWAY closed, under load). hyper
/// has no accessor for this kind of error, only its text; the request never reached the
/// server, and it is the connection that closed, not the response that was invalid.
fn dispatch_gone(e: &hyper::Error) -> bool {
    e.is_user() && e.to_string().contains("dispatch task is gone")
}

fn cause_of(e: &hyper::Error) -> Cause {
    if e.is_timeout() {
        Cause::Timeout
    } else if dispatch_gone(e) {
        Cause::Closed
    } else if e.is_parse() || e.is_user() {
        Cause::Invalid
    } else if e.is_closed() || e.is_incomplete_message() {
        Cause::Closed
    } else {
        // h2 protocol errors (GOAWAY, RST_STREAM) and I/O errors end up here.
        let text = e.to_string();
        if text.contains("reset") {
            Cause::Reset
        } else {
            Cause::Other
        }
    }
}

/// How many times a request the server never processed is sent again before it counts as
/// failed:
/// each try goes out on a newer connection (or after REFUSED_STREAM), so this bounds the
/// unlucky case where hundreds queued behind one GOAWAY meet the next one too.
const UNPROCESSED_TRIES: u32 = 3;

/// Request `r` of the set, for `origin`, as hyper sends it.
fn build(origin: &str, r: &Request) -> hyper::http::Result<hyper::Request<Full<Bytes>>> {
    r.head(origin).body(Full::new(Bytes::from(r.body.clone())))
}

/// Reads a response's whole body: its status and the body's bytes.
async fn read_body(
    response: hyper::Response<hyper::body::Incoming>,
) -> Result<(u16, u64), Option<Cause>> {
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes_in = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Some(cause_of(&e)))?;
        if let Some(data) = frame.data_ref() {
            bytes_in += data.len() as u64;
        }
    }
    Ok((status, bytes_in))
}
