//! The server side of the responsiveness test (draft-ietf-ippm-responsiveness): the
//! configuration at `/.well-known/nq` that Apple's `networkQuality -C`, Cloudflare's
//! `mach rpm -c`, Go clients of the spec and `wirespeed rpm` read, and the three endpoints it
//! names: a small object for probes, a large one for download load, and an upload sink.
//!
//! Probes come at up to a hundred a second, so they have a budget of their own (6000 a minute
//! per visitor) instead of the page's; the transfers take a slot of the responsiveness budget
//! (twice the page's, as a test in parallel mode runs a full set each way) and are charged
//! byte by byte to the visitor's transfer budget, which cuts a transfer off when it runs out.

use std::sync::Arc;
use std::time::Instant;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde_json::json;

use crate::body::{Garbage, WebBody, CHUNK};
use crate::librespeed::Ctx;
use crate::limits::{LimitConfig, Limits};
use crate::respond::{self, Reply};

/// The large object: 8 GiB, more than any leg moves on a path it can measure in 20 s
/// below ~3 Gbit/s per connection; a faster connection asks for it again.
pub const LARGE_BYTES: u64 = 8 << 30;
/// The small object's bytes.
const SMALL: &[u8] = b"x";
/// Probes a minute per visitor.
const PROBES_PER_MINUTE: u32 = 6000;

/// The responsiveness endpoints' own budgets, made from the page's.
pub fn limits(page: LimitConfig) -> Arc<Limits> {
    Limits::new(LimitConfig {
        requests_per_minute: if page.requests_per_minute == 0 { 0 } else { PROBES_PER_MINUTE },
        // Bytes are charged to the page's budget; this one only counts probes and slots.
        bytes_per_hour: 0,
        streams: page.streams.saturating_mul(2),
    })
}

/// `/.well-known/nq`: the configuration, its URLs on the host the client asked for.
pub fn config(ctx: &Ctx<'_>, req: &Request<Incoming>) -> Reply {
    let host = req.uri().authority().map(|a| a.as_str().to_string()).or_else(|| {
        req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string)
    });
    let Some(host) = host.filter(|h| !h.is_empty() && !h.contains(['/', '"', '\\', ' '])) else {
        return respond::refuse(StatusCode::BAD_REQUEST, "no Host in the request", false);
    };
    let scheme = if ctx.state.config.tls.is_some() { "https" } else { "http" };
    let url = |path: &str| format!("{scheme}://{host}{path}");
    respond::json(
        StatusCode::OK,
        &json!({
            "version": 1,
            "urls": {
                "small_https_download_url": url("/nq/small"),
                "large_https_download_url": url("/nq/large"),
                "https_upload_url": url("/nq/upload"),
                "small_download_url": url("/nq/small"),
                "large_download_url": url("/nq/large"),
                "upload_url": url("/nq/upload"),
            },
            "test_endpoint": endpoint_host(&host),
        }),
    )
}

/// The host of a `Host` header without its port: the draft's `test_endpoint` is where to
/// connect, and clients put the URL's port to it (goresponsiveness joins them, so a
/// `host:port` here made `host:port:port` and a run of RPM +Inf at 0 Mbit/s on any port but
/// 443). An IPv6 literal loses its brackets, which joining puts back.
fn endpoint_host(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// `/nq/small`: one byte, for probes.
pub fn small(ctx: &Ctx<'_>, method: &Method) -> Reply {
    if method != Method::GET && method != Method::HEAD {
        return respond::refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "the small object takes GET",
            false,
        );
    }
    if let Err(refusal) = ctx.state.rpm_limits.request(ctx.client, ctx.now) {
        return respond::too_many(refusal, false);
    }
    let body = WebBody::Full(Some(bytes::Bytes::from_static(SMALL)));
    let mut r = respond::with(StatusCode::OK, "application/octet-stream", body);
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `/nq/large`: the large object, random bytes charged to the visitor as they are sent.
pub fn large(ctx: &Ctx<'_>, method: &Method) -> Reply {
    if method != Method::GET && method != Method::HEAD {
        return respond::refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "the large object takes GET",
            false,
        );
    }
    let chunks = (LARGE_BYTES / CHUNK as u64) as u32;
    let body = if method == Method::HEAD {
        WebBody::empty()
    } else {
        let slot = match ctx.state.rpm_limits.stream(ctx.client, 0, ctx.now) {
            Ok(s) => s,
            Err(refusal) => return respond::too_many(refusal, false),
        };
        let charged = (ctx.state.limits.clone(), ctx.client);
        WebBody::Garbage(Box::new(
            Garbage::new(ctx.state.blocks.clone(), chunks, None, slot, ctx.state.sent.clone())
                .charged(charged),
        ))
    };
    let mut r = respond::with(StatusCode::OK, "application/octet-stream", body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(LARGE_BYTES));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `/nq/upload`: drains a body of any size, charged to the visitor as it arrives.
pub async fn upload(ctx: &Ctx<'_>, req: Request<Incoming>) -> Reply {
    if req.method() != Method::POST && req.method() != Method::PUT {
        return respond::refuse(StatusCode::METHOD_NOT_ALLOWED, "the upload URL takes POST", true);
    }
    let slot = match ctx.state.rpm_limits.stream(ctx.client, 0, ctx.now) {
        Ok(s) => s,
        Err(refusal) => return respond::too_many(refusal, true),
    };
    let mut body = req.into_body();
    let mut uncharged = 0u64;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            // The client went away mid-body (a leg ending does that): nobody to answer.
            return respond::refuse(StatusCode::BAD_REQUEST, "upload cut short", true);
        };
        let Some(data) = frame.data_ref() else { continue };
        ctx.state.received.inc_by(data.len() as u64);
        uncharged += data.len() as u64;
        if uncharged >= CHUNK as u64 {
            if let Err(refusal) = ctx.state.limits.charge(ctx.client, uncharged, Instant::now()) {
                return respond::too_many(refusal, true);
            }
            uncharged = 0;
        }
    }
    let _ = ctx.state.limits.charge(ctx.client, uncharged, Instant::now());
    drop(slot);
    respond::empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_endpoint_is_the_host_alone() {
        assert_eq!(endpoint_host("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(endpoint_host("speed.example:443"), "speed.example");
        assert_eq!(endpoint_host("speed.example"), "speed.example");
        assert_eq!(endpoint_host("[::1]:8080"), "::1");
        assert_eq!(endpoint_host("[::1]"), "::1");
    }
}
