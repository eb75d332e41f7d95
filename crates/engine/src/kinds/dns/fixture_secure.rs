//! The DNS fixture's encrypted transports, served when it has a certificate: DNS over QUIC
//! (RFC 9250, ALPN `doq`) and DNS over HTTPS on HTTP/3 (ALPN `h3`) on UDP, and DNS over HTTPS
//! (RFC 8484 at `/dns-query`, HTTP/2 or HTTP/1.1 by ALPN) on TCP, all on one port number,
//! answering from the same zone as the plain fixture. DoQ: a query per stream, length-prefixed, answered on that stream and the
//! stream finished; a stream that is not one message is reset with DOQ_PROTOCOL_ERROR. DoH:
//! GET with `dns=` (base64url) or POST with an `application/dns-message` body; anything else
//! gets the HTTP status that names what is wrong (400, 404, 405, 413, 415).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use wirespeed_proto::dns::encrypted::{doh_get_message, doq_frame, doq_message};
use wirespeed_proto::dns::responder::respond;
use wirespeed_proto::dns::zone::Zone;

use crate::net::http_serve::{serve, ServeOptions};
use crate::net::{quic, tls};

/// Where DoH queries go.
pub const DOH_PATH: &str = "/dns-query";
/// The media type of a DNS message over HTTP.
const DNS_MESSAGE: &str = "application/dns-message";
/// Largest DNS message read.
const MESSAGE: usize = 65_535;
/// DoQ's error code for a malformed stream (RFC 9250 §8.4).
const DOQ_PROTOCOL_ERROR: u32 = 2;
/// How long a DoQ stream may take to deliver its query.
const STREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// The encrypted transports' sockets, bound.
#[derive(Debug)]
pub struct SecureListeners {
    doq: quinn::Endpoint,
    doh: TcpListener,
    doh_tls: Arc<rustls::ServerConfig>,
}

impl SecureListeners {
    /// Binds DoQ (UDP) and DoH (TCP) on `addr` with the PEM certificate chain and key; must
    /// be called within a tokio runtime.
    pub fn bind(addr: SocketAddr, cert: &Path, key: &Path) -> io::Result<Self> {
        // One QUIC endpoint for DoQ and DoH over HTTP/3: the ALPN tells them apart.
        let doq_tls = tls::server_config_for(cert, key, &[b"doq", b"h3"])?;
        let doh_tls = tls::server_config_for(cert, key, &[b"h2", b"http/1.1"])?;
        let doq = quic::server_endpoint(addr, doq_tls, &quic::Tuning::default())?;
        let doh = std::net::TcpListener::bind(addr)?;
        doh.set_nonblocking(true)?;
        Ok(Self { doq, doh: TcpListener::from_std(doh)?, doh_tls })
    }

    /// Where DoQ listens (UDP) and DoH (TCP).
    pub fn local_addrs(&self) -> io::Result<(SocketAddr, SocketAddr)> {
        Ok((self.doq.local_addr()?, self.doh.local_addr()?))
    }
}

/// Serves DoQ and DoH from `zone` until `shutdown`, then waits for what is in flight.
pub async fn run(listeners: SecureListeners, zone: Arc<Zone>, shutdown: CancellationToken) {
    let SecureListeners { doq, doh, doh_tls } = listeners;
    let options = ServeOptions {
        label: "DNS fixture (DoH)",
        head_timeout: Some(Duration::from_secs(10)),
        shutdown_grace: Some(Duration::from_secs(1)),
        delivery: false,
        notsent_lowat: None,
        tls: Some(doh_tls),
        plain_too: false,
    };
    let doh_zone = zone.clone();
    let https = serve(vec![doh], options, shutdown.clone(), move |_, req| {
        let zone = doh_zone.clone();
        async move { Ok::<_, Infallible>(answer_https(req, &zone).await) }
    });
    tokio::join!(https, serve_quic(doq, zone, shutdown));
}

/// Accepts DoQ connections and answers each stream, until `shutdown`.
async fn serve_quic(endpoint: quinn::Endpoint, zone: Arc<Zone>, shutdown: CancellationToken) {
    let tasks = TaskTracker::new();
    loop {
        let incoming = tokio::select! {
            _ = shutdown.cancelled() => break,
            i = endpoint.accept() => match i {
                Some(i) => i,
                None => break,
            },
        };
        let (zone, streams) = (zone.clone(), tasks.clone());
        tasks.spawn(async move {
            let Ok(connection) = incoming.await else { return };
            if alpn(&connection).as_deref() == Some(b"h3") {
                return serve_http3(connection, zone, streams).await;
            }
            while let Ok((send, recv)) = connection.accept_bi().await {
                let zone = zone.clone();
                streams.spawn(answer_stream(send, recv, zone));
            }
        });
    }
    endpoint.close(0u32.into(), b"shutting down");
    tasks.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), tasks.wait()).await;
}

/// The ALPN protocol a QUIC connection agreed on.
fn alpn(connection: &quinn::Connection) -> Option<Vec<u8>> {
    let data = connection.handshake_data()?;
    data.downcast::<quinn::crypto::rustls::HandshakeData>().ok()?.protocol
}

/// DoH over HTTP/3 on one connection: each request on a task of its own, answered as over
/// HTTP/2, until the client closes the connection (or breaks HTTP/3, which h3 closes it for).
async fn serve_http3(connection: quinn::Connection, zone: Arc<Zone>, tasks: TaskTracker) {
    let quic = h3_quinn::Connection::new(connection);
    let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(quic).await else { return };
    while let Ok(Some(resolver)) = h3.accept().await {
        let zone = zone.clone();
        tasks.spawn(async move {
            let Ok((request, mut stream)) = resolver.resolve_request().await else { return };
            // The body as it came, cut one byte past the largest message (which a 413 names).
            let mut body = Vec::new();
            let read = async {
                while let Some(mut chunk) = stream.recv_data().await? {
                    let take = chunk.remaining().min(MESSAGE + 1 - body.len());
                    body.extend_from_slice(&chunk.copy_to_bytes(take));
                    if body.len() > MESSAGE {
                        break;
                    }
                }
                Ok::<_, h3::error::StreamError>(())
            };
            if !matches!(tokio::time::timeout(STREAM_TIMEOUT, read).await, Ok(Ok(()))) {
                return stream.stop_stream(h3::error::Code::H3_REQUEST_INCOMPLETE);
            }
            let (head, ()) = request.into_parts();
            let response =
                answer_https(Request::from_parts(head, Full::new(Bytes::from(body))), &zone).await;
            let (head, body) = response.into_parts();
            let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            if stream.send_response(Response::from_parts(head, ())).await.is_ok()
                && stream.send_data(body).await.is_ok()
            {
                let _ = stream.finish().await;
            }
        });
    }
}

/// One DoQ stream: its query in, its answer out.
async fn answer_stream(mut send: quinn::SendStream, mut recv: quinn::RecvStream, zone: Arc<Zone>) {
    let Ok(Ok(query)) = tokio::time::timeout(STREAM_TIMEOUT, recv.read_to_end(2 + MESSAGE)).await
    else {
        let _ = recv.stop(DOQ_PROTOCOL_ERROR.into());
        let _ = send.reset(DOQ_PROTOCOL_ERROR.into());
        return;
    };
    let mut answer = Vec::new();
    let frame = doq_message(&query)
        .filter(|q| respond(q, &zone, false, &mut answer))
        .and_then(|_| doq_frame(&answer));
    let Some(frame) = frame else {
        let _ = send.reset(DOQ_PROTOCOL_ERROR.into());
        return;
    };
    if send.write_all(&frame).await.is_ok() {
        let _ = send.finish();
        // The stream's data must be acknowledged before the stream is dropped.
        let _ = send.stopped().await;
    }
}

/// One DoH request's answer (over HTTP/2 or HTTP/1.1, whose bodies come as they arrive, or
/// over HTTP/3, whose body was read first).
async fn answer_https<B>(req: Request<B>, zone: &Zone) -> Response<Full<Bytes>>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if req.uri().path() != DOH_PATH {
        return status(StatusCode::NOT_FOUND, "DNS queries go to /dns-query");
    }
    let query = match *req.method() {
        Method::GET => match doh_get_message(req.uri().query().unwrap_or("")) {
            Ok(q) => q,
            Err(why) => return status(StatusCode::BAD_REQUEST, why),
        },
        Method::POST => {
            let media = req.headers().get("content-type").and_then(|v| v.to_str().ok());
            if media != Some(DNS_MESSAGE) {
                return status(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "the body must be application/dns-message",
                );
            }
            match Limited::new(req.into_body(), MESSAGE).collect().await {
                Ok(body) => body.to_bytes().to_vec(),
                Err(_) => {
                    return status(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "a DNS message is at most 65535 bytes",
                    )
                }
            }
        }
        _ => return status(StatusCode::METHOD_NOT_ALLOWED, "GET or POST"),
    };
    let mut answer = Vec::new();
    if !respond(&query, zone, false, &mut answer) {
        return status(StatusCode::BAD_REQUEST, "not a DNS query");
    }
    Response::builder()
        .header("content-type", DNS_MESSAGE)
        .header("cache-control", "max-age=0")
        .body(Full::new(Bytes::from(answer)))
        .unwrap_or_else(|_| status(StatusCode::INTERNAL_SERVER_ERROR, "answer"))
}

fn status(code: StatusCode, why: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(why.as_bytes())));
    *r.status_mut() = code;
    r
}
