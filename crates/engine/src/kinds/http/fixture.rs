//! The HTTP fixture: answers every request (HTTP/1.1 with keep-alive, or HTTP/2 with prior
//! knowledge, told apart by the first bytes) with a body of fixed size — 615 bytes by
//! default, the size of nginx's welcome page — made of incompressible bytes and never
//! cached. Query parameters shape the answer, for tests and for load generators' users:
//! `?size=1M` (body size, up to 16 GiB), `?status=503` (200..=599), `?delay=10ms` (wait
//! before answering, up to 60 s). A bad parameter gets a 400 that says which and why. A
//! request body (an upload) is read to its end and thrown away.

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
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, SERVER};
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
}

/// How long the fixture waits for a request head by default: longer than any pause a load
/// test makes on a kept-alive connection, as nginx's 60 s header timeout is.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(20);

impl Default for FixtureConfig {
    fn default() -> Self {
        Self { body_bytes: 615, head_timeout: HEAD_TIMEOUT }
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
    let shared = Arc::new(Shared {
        config,
        block: Bytes::from(block),
        timer: super::delay::DelayTimer::start(),
        delays_asked: Default::default(),
    });
    let options = ServeOptions {
        label: "HTTP fixture",
        head_timeout: Some(shared.config.head_timeout),
        shutdown_grace: None,
        delivery: false,
        notsent_lowat: None,
        tls: None,
    };
    serve(listeners, options, shutdown, move |_peer, req| answer(shared.clone(), req)).await;
    Ok(())
}

struct Shared {
    config: FixtureConfig,
    block: Bytes,
    timer: super::delay::DelayTimer,
    delays_asked: std::sync::atomic::AtomicU64,
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
    let asked = parse_query(req.uri().query(), shared.config.body_bytes);
    // An upload is drained whole, so its sender's figures count every byte it sent.
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    let asked = match asked {
        Ok(a) => a,
        Err(why) => {
            let mut r = Response::new(FixtureBody::text(format!("bad request: {why}\n")));
            *r.status_mut() = StatusCode::BAD_REQUEST;
            return Ok(r);
        }
    };
    if !asked.delay.is_zero() {
        let id = shared.delays_asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        shared.timer.until(arrived + asked.delay, id).await;
    }
    let mut r = Response::new(FixtureBody { block: shared.block.clone(), left: asked.size });
    *r.status_mut() = asked.status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(SERVER, HeaderValue::from_static("wirespeed"));
    Ok(r)
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
}

impl Body for FixtureBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(self.block.len() as u64) as usize;
        self.left -= n as u64;
        Poll::Ready(Some(Ok(Frame::data(self.block.slice(..n)))))
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
