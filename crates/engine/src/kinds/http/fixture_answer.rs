//! The HTTP fixture's answer to a request, whatever carried it (HTTP/1.1 or HTTP/2 over TCP,
//! `super::fixture`; HTTP/3, `super::fixture_h3`): the query read (`?size=`, `?status=`,
//! `?delay=`), the wait, the headers, and a body cut from one block of random bytes.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::header::{HeaderName, HeaderValue, ALT_SVC, CACHE_CONTROL, CONTENT_TYPE, SERVER};
use hyper::StatusCode;
use wirespeed_model::units::{parse_bytes, parse_duration};

use crate::net::sys;

/// Largest body `?size=` may ask for.
pub const MAX_BODY: u64 = 16 << 30;
/// Longest `?delay=`.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// Bytes of random data the bodies are cut from (repeated for larger bodies).
const BLOCK: usize = 1 << 20;

/// What every answer shares: the random block bodies are cut from, the timer of `?delay=`,
/// and the Alt-Svc header when HTTP/3 is served too.
pub(super) struct Answers {
    body_bytes: u64,
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

impl Answers {
    /// Answers whose bodies are `body_bytes` long unless a query asks otherwise, with
    /// `alt_svc` in every answer's headers.
    pub(super) fn new(body_bytes: u64, alt_svc: Option<HeaderValue>) -> Self {
        let mut block = vec![0u8; BLOCK];
        sys::fill_random(&mut block);
        Self {
            body_bytes,
            block: Bytes::from(block),
            timer: super::delay::DelayTimer::start(),
            delays_asked: Default::default(),
            alt_svc,
        }
    }

    /// The answer to a request with `query` that arrived at `arrived` (its body read): its
    /// status and body, once any `?delay=` has passed.
    pub(super) async fn respond(
        &self,
        query: Option<&str>,
        arrived: std::time::Instant,
    ) -> (StatusCode, FixtureBody) {
        let asked = match parse_query(query, self.body_bytes) {
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
