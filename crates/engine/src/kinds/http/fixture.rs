//! The HTTP fixture: answers every request (HTTP/1.1 with keep-alive, or HTTP/2 with prior
//! knowledge, told apart by the first bytes) with a body of fixed size — 615 bytes by
//! default, the size of nginx's welcome page — made of incompressible bytes and never
//! cached. Query parameters shape the answer, for tests and for load generators' users:
//! `?size=1M` (body size, up to 16 GiB), `?status=503` (200..=599), `?delay=10ms` (wait
//! before answering, up to 60 s). A bad parameter gets a 400 that says which and why. A
//! request body (an upload) is read to its end and thrown away. Given QUIC endpoints, it
//! serves HTTP/3 on them too (`super::fixture_h3`) and says so in every TCP answer's Alt-Svc.
//! Both carry the same answers (`super::fixture_answer`).

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Request, Response};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::fixture_answer::Answers;
pub use super::fixture_answer::{FixtureBody, MAX_BODY, MAX_DELAY};
use crate::net::http_serve::{serve, ServeOptions};

/// How the fixture answers by default.
#[derive(Debug, Clone)]
pub struct FixtureConfig {
    /// Body size when the request does not say (`--http-body`).
    pub body_bytes: u64,
    /// A client must start a request within this time of connecting or of its last answer,
    /// and send its whole head within this time more: a slow or partial head (slowloris) is
    /// closed rather than held for ever.
    pub head_timeout: Duration,
    /// QUIC endpoints to serve HTTP/3 on (made by [`super::fixture_h3::endpoint`]), usually
    /// on the TCP listeners' port.
    pub h3: Vec<quinn::Endpoint>,
    /// TLS for the TCP listeners (made by [`super::fixture_h3::identity`]): a client that
    /// starts a TLS handshake gets https://, any other plain http:// on the same port.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// How long the fixture waits for a request head by default: longer than any pause a load
/// test makes on a kept-alive connection, as nginx's 60 s header timeout is.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(20);

impl Default for FixtureConfig {
    fn default() -> Self {
        Self { body_bytes: 615, head_timeout: HEAD_TIMEOUT, h3: Vec::new(), tls: None }
    }
}

/// Serves HTTP on every listener until `shutdown`, then lets requests in flight finish.
pub async fn run(
    listeners: Vec<TcpListener>,
    config: FixtureConfig,
    shutdown: CancellationToken,
) -> io::Result<()> {
    // Alt-Svc names the first endpoint's port (the TCP listeners' port, as usual).
    let alt_svc = config
        .h3
        .first()
        .and_then(|e| e.local_addr().ok())
        .and_then(|a| HeaderValue::from_str(&format!("h3=\":{}\"; ma=3600", a.port())).ok());
    let shared = Arc::new(Answers::new(config.body_bytes, alt_svc));
    let options = ServeOptions {
        label: "HTTP fixture",
        head_timeout: Some(config.head_timeout),
        shutdown_grace: None,
        delivery: false,
        notsent_lowat: None,
        tls: config.tls.clone(),
        plain_too: true,
    };
    let h3: Vec<_> = config
        .h3
        .into_iter()
        .map(|e| tokio::spawn(super::fixture_h3::serve(e, shared.clone(), shutdown.clone())))
        .collect();
    let tcp = shared.clone();
    serve(listeners, options, shutdown, move |_peer, req| answer(tcp.clone(), req)).await;
    for task in h3 {
        let _ = task.await;
    }
    Ok(())
}

async fn answer(
    shared: Arc<Answers>,
    req: Request<Incoming>,
) -> Result<Response<FixtureBody>, Infallible> {
    let arrived = std::time::Instant::now();
    let query = req.uri().query().map(str::to_string);
    // An upload is drained whole, so its sender's figures count every byte it sent.
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    let (status, body) = shared.respond(query.as_deref(), arrived).await;
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    for (name, value) in shared.headers(status) {
        h.insert(name, value);
    }
    Ok(r)
}
