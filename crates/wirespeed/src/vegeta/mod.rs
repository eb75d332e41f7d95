//! `wirespeed http --format vegeta`: one JSON line per request in vegeta's result schema, so
//! `vegeta report` and `vegeta plot` read our runs. The timestamp is when the request was due
//! (open model) or sent (closed model), and the latency is the report's, so both tools' numbers
//! agree. Bodies and headers are not captured (`body` and `headers` are null). Lines are
//! numbered (`seq`) in the order requests began, as vegeta numbers them (`order`). The other
//! way, `import` reads vegeta's result lines back as an HTTP report.

pub(crate) mod import;
mod order;

use std::io::{self, BufWriter, Write};
use std::sync::mpsc::Receiver;
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;
use wirespeed_engine::kinds::http::requests::Request;
use wirespeed_engine::kinds::http::results::RequestResult;

/// One result line.
#[derive(Serialize)]
struct Line<'a> {
    attack: &'a str,
    seq: u64,
    code: u16,
    timestamp: String,
    latency: u64,
    bytes_out: u64,
    bytes_in: u64,
    error: String,
    body: Option<()>,
    method: &'a str,
    url: String,
    headers: Option<()>,
}

/// The line for `r`, whose request is one of `requests`.
pub(crate) fn line(r: &RequestResult, requests: &[Request]) -> String {
    let request = &requests[r.request.min(requests.len().saturating_sub(1))];
    let at = UNIX_EPOCH + Duration::from_nanos(r.start_unix_ns.max(0) as u64);
    // vegeta: an error for a failed request, or for a status outside 200–399.
    let error = match (r.error, r.code) {
        (Some(e), _) => e.to_string(),
        (None, c) if !(200..400).contains(&c) => status_text(c),
        _ => String::new(),
    };
    let line = Line {
        attack: "wirespeed",
        seq: r.seq,
        code: r.code,
        timestamp: humantime::format_rfc3339_nanos(at).to_string(),
        latency: r.latency_ns,
        bytes_out: r.bytes_out,
        bytes_in: r.bytes_in,
        error,
        body: None,
        method: &request.method,
        url: format!("{}{}", request.url.origin(), request.url.path),
        headers: None,
    };
    serde_json::to_string(&line).unwrap_or_default()
}

fn status_text(code: u16) -> String {
    let reason = match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    };
    format!("{code} {reason}").trim_end().to_string()
}

/// Writes every record to stdout, in the order requests began, until the sending side is
/// gone; returns how many went out of that order (requests slower than `window_ns`, the
/// longest a request can take from due to ended).
pub(crate) fn write_all(
    rx: Receiver<RequestResult>,
    requests: Vec<Request>,
    window_ns: u64,
) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut order = order::Reorder::new(window_ns);
    for r in rx {
        for r in order.push(r) {
            writeln!(out, "{}", line(&r, &requests))?;
        }
    }
    for r in order.finish() {
        writeln!(out, "{}", line(&r, &requests))?;
    }
    out.flush()?;
    Ok(order.out_of_order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_proto::http_url::HttpUrl;

    #[test]
    fn lines_follow_vegetas_schema() {
        let requests = vec![Request {
            method: "GET".into(),
            url: HttpUrl::parse("http://127.0.0.1:8080/a?b=1").unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
        }];
        let mut r = RequestResult {
            seq: 7,
            start_unix_ns: 1_700_000_000_123_456_789,
            latency_ns: 1500,
            code: 503,
            bytes_out: 0,
            bytes_in: 615,
            error: None,
            request: 0,
        };
        let v: serde_json::Value = serde_json::from_str(&line(&r, &requests)).unwrap();
        assert_eq!(v["timestamp"], "2023-11-14T22:13:20.123456789Z");
        assert_eq!(
            (v["seq"].as_u64(), v["code"].as_u64(), v["latency"].as_u64()),
            (Some(7), Some(503), Some(1500))
        );
        assert_eq!(v["error"], "503 Service Unavailable");
        assert_eq!(v["url"], "http://127.0.0.1:8080/a?b=1");
        assert!(v["body"].is_null() && v["headers"].is_null());
        r.code = 0;
        r.error = Some("connection refused");
        let v: serde_json::Value = serde_json::from_str(&line(&r, &requests)).unwrap();
        assert_eq!(
            (v["code"].as_u64(), v["error"].as_str()),
            (Some(0), Some("connection refused"))
        );
    }
}
