//! Building responses: the headers every answer carries (no caching anywhere on the path, as
//! LibreSpeed's backends send), CORS for clients that ask for it, and the short error answers.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::body::WebBody;
use crate::limits::Refusal;

/// The response type of every handler.
pub type Reply = Response<WebBody>;

/// A response with `status`, `content_type` and `body`.
pub fn with(status: StatusCode, content_type: &'static str, body: impl Into<WebBody>) -> Reply {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A plain-text answer.
pub fn text(status: StatusCode, body: impl Into<WebBody>) -> Reply {
    with(status, "text/plain; charset=utf-8", body)
}

/// A JSON answer.
pub fn json(status: StatusCode, value: &impl serde::Serialize) -> Reply {
    let body = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    with(status, "application/json; charset=utf-8", body)
}

/// 200 with no body.
pub fn empty() -> Reply {
    let mut r = Response::new(WebBody::empty());
    r.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    r
}

/// An error the client caused, said in one line; `close` ends the connection after it (an
/// upload refused before its body was read).
pub fn refuse(status: StatusCode, why: impl Into<String>, close: bool) -> Reply {
    let mut r = text(status, format!("{}\n", why.into()));
    if close {
        r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

/// 429 with `Retry-After`.
pub fn too_many(refusal: Refusal, close: bool) -> Reply {
    let mut r = refuse(StatusCode::TOO_MANY_REQUESTS, refusal.why, close);
    r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(refusal.retry_after_s));
    r.extensions_mut().insert(RefusedBy(refusal.budget));
    r
}

/// Which visitor budget refused a request, carried on its answer so the one place that
/// counts answers counts the refusal too.
#[derive(Debug, Clone, Copy)]
pub struct RefusedBy(pub &'static str);

/// Adds the headers every answer carries (`no-transform`: a proxy must not compress a download,
/// the test measures the link and not a compressor), and CORS when asked (`cors` in the query, as
/// LibreSpeed's multi-server clients send, or a preflight).
pub fn finish(mut r: Reply, cors: bool) -> Reply {
    let h = r.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(
            "no-store, no-cache, must-revalidate, max-age=0, s-maxage=0, no-transform",
        ),
    );
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::SERVER, HeaderValue::from_static("wirespeed"));
    if cors {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("Content-Encoding, Content-Type"),
        );
    }
    r
}

/// Reads a small request body whole, refusing one over `cap` bytes.
pub async fn read_capped(body: Incoming, cap: usize) -> Result<Bytes, Reply> {
    match Limited::new(body, cap).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body larger than {cap} bytes"),
            true,
        )),
        Err(e) => Err(refuse(StatusCode::BAD_REQUEST, format!("request body: {e}"), true)),
    }
}
