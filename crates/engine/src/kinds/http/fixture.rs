//! The HTTP fixture: answers every request (HTTP/1.1 with keep-alive, or HTTP/2 with prior
//! knowledge, told apart by the first bytes) with a body of fixed size — 615 bytes by
//! default, the size of nginx's welcome page — made of incompressible bytes and never
//! cached. Query parameters shape the answer, for tests and for load generators' users:
//! `?size=1M` (body size, up to 16 GiB), `?status=503` (200..=599), `?delay=10ms` (wait
//! before answering, up to 60 s). A bad parameter gets a 400 that says which and why. A
//! request body (an upload) is read to its end and thrown away. Given QUIC endpoints, it
//! serves HTTP/3 on them too (`super::fixture_h3`) and says so in every TCP answer's Alt-Svc.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, ALT_SVC, CACHE_CONTROL, CONTENT_TYPE, SERVER};
use hyper::{Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wirespeed_model::units::{parse_bytes, parse_duration};

use crate::net::http_serve::{serve, ServeOptions};
use crate::net::sys;

/// Largest body `?size=` may ask for.
pub const MAX_BODY: u64 = 16 << 30;
/// Longest `?delay=`.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// Bytes of random data the bodies are cut from (repeated for larger bodies).
const BLOCK: usize = 1 << 20;

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
    let mut block = vec![0u8; BLOCK];
    sys::fill_random(&mut block);
    // Alt-Svc names the first endpoint's port (the TCP listeners' port, as usual).
    let alt_svc = config
        .h3
        .first()
        .and_then(|e| e.local_addr().ok())
        .and_then(|a| HeaderValue::from_str(&format!("h3=\":{}\"; ma=3600", a.port())).ok());
    let endpoints = config.h3.clone();
    let shared = Arc::new(Shared {
        config,
        block: Bytes::from(block),
        timer: super::delay::DelayTimer::start(),
        delays_asked: Default::default(),
        alt_svc,
    });
    let options = ServeOptions {
        label: "HTTP fixture",
        head_timeout: Some(shared.config.head_timeout),
        shutdown_grace: None,
        delivery: false,
        notsent_lowat: None,
        tls: shared.config.tls.clone(),
        plain_too: true,
    };
    let h3: Vec<_> = endpoints
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

/// What every answer shares.
pub(super) struct Shared {
    config: FixtureConfig,
    block: Bytes,
    timer: super::delay::DelayTimer,
    delays_asked: std::sync::atomic::AtomicU64,
    /// `h3=":PORT"` when HTTP/3 is served too.
    alt_svc: Option<HeaderValue>,
}

/// What a request's query asks for.
#[derive(Debug, PartialEq)]
struct Asked {
    size: u64,
    status: StatusCode,
    delay: Duration,
}

/// Reads `size`, `status` and `delay` from a query string; other keys are ignored.
fn parse_query(query: Option<&str>, default_size: u64) -> Result<Asked, String> {
    let mut asked = Asked { size: default_size, status: StatusCode::OK, delay: Duration::ZERO };
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "size" => {
                asked.size = parse_bytes(value)
                    .ok()
                    .filter(|s| *s <= MAX_BODY)
                    .ok_or_else(|| format!("size={value}: a size up to 16G, like 615B or 1M"))?;
            }
            "status" => {
                asked.status = value
                    .parse::<u16>()
                    .ok()
                    .filter(|s| (200..=599).contains(s))
                    .and_then(|s| StatusCode::from_u16(s).ok())
                    .ok_or_else(|| format!("status={value}: a status code from 200 to 599"))?;
            }
            "delay" => {
                asked.delay = parse_duration(value)
                    .ok()
                    .filter(|d| *d <= MAX_DELAY)
                    .ok_or_else(|| format!("delay={value}: a duration up to 60s, like 10ms"))?;
            }
            _ => {}
        }
    }
    Ok(asked)
}

async fn answer(
    shared: Arc<Shared>,
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

impl Shared {
    /// The answer to a request with `query` that arrived at `arrived` (its body read): its
    /// status and body, once any `?delay=` has passed.
    pub(super) async fn respond(
        &self,
        query: Option<&str>,
        arrived: std::time::Instant,
    ) -> (StatusCode, FixtureBody) {
        let asked = match parse_query(query, self.config.body_bytes) {
            Ok(a) => a,
            Err(why) => {
                return (
                    StatusCode::BAD_REQUEST,
                    FixtureBody::text(format!("bad request: {why}\n")),
                )
            }
        };
        if !asked.delay.is_zero() {
            let id = self.delays_asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.timer.until(arrived + asked.delay, id).await;
        }
        (asked.status, FixtureBody { block: self.block.clone(), left: asked.size })
    }

    /// The headers of an answer with `status` (a 400's body is text).
    pub(super) fn headers(&self, status: StatusCode) -> Vec<(HeaderName, HeaderValue)> {
        let kind = if status == StatusCode::BAD_REQUEST {
            "text/plain; charset=utf-8"
        } else {
            "application/octet-stream"
        };
        let mut h = vec![
            (CONTENT_TYPE, HeaderValue::from_static(kind)),
            (CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (SERVER, HeaderValue::from_static("wirespeed")),
        ];
        if let Some(alt) = &self.alt_svc {
            h.push((ALT_SVC, alt.clone()));
        }
        h
    }
}

/// A body of `left` bytes cut from the random block, a block at a time.
pub struct FixtureBody {
    block: Bytes,
    left: u64,
}

impl FixtureBody {
    fn text(s: String) -> Self {
        let block = Bytes::from(s);
        Self { left: block.len() as u64, block }
    }

    /// The next piece of the body (at most the random block's size), `None` at its end.
    pub(super) fn next_piece(&mut self) -> Option<Bytes> {
        if self.left == 0 {
            return None;
        }
        let n = self.left.min(self.block.len() as u64) as usize;
        self.left -= n as u64;
        Some(self.block.slice(..n))
    }
}

impl Body for FixtureBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.next_piece().map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_shape_the_answer_and_bad_ones_say_why() {
        let a = parse_query(Some("size=1M&status=503&delay=10ms&x=1"), 615).unwrap();
        assert_eq!(
            a,
            Asked {
                size: 1 << 20,
                status: StatusCode::SERVICE_UNAVAILABLE,
                delay: Duration::from_millis(10)
            }
        );
        assert_eq!(parse_query(None, 615).unwrap().size, 615);
        for bad in ["size=lots", "size=17G", "status=99", "status=600", "delay=2m", "delay=x"] {
            let err = parse_query(Some(bad), 615).unwrap_err();
            assert!(err.starts_with(bad), "{bad}: {err}");
        }
    }
}
