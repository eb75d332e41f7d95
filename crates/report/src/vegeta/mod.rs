//! vegeta's result lines, both ways. `wirespeed http --format vegeta` writes one per request
//! ([`write_all`]), so `vegeta report` and `vegeta plot` read our runs: the timestamp is when
//! the request was due (open model) or sent (closed model), and the latency is the report's,
//! so both tools' numbers agree. Bodies and headers are not captured (`body` and `headers` are
//! null). Lines are numbered (`seq`) in the order requests began, as vegeta numbers them
//! (`order.rs`). The other way, [`import`] reads vegeta's result lines back as an HTTP report.

pub mod import;
mod order;

use std::io::{self, BufWriter, Write};
use std::sync::mpsc::Receiver;

use wirespeed_model::kinds::http::RequestResult;
use wirespeed_proto::vegeta::ResultLine;

/// A request of the set a run sends: what its lines name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its method.
    pub method: String,
    /// Its URL, without credentials.
    pub url: String,
}

/// The line for `r`, whose request is one of `targets`.
pub fn line(r: &RequestResult, targets: &[Target]) -> ResultLine {
    let target = targets.get(r.request.min(targets.len().saturating_sub(1)));
    ResultLine {
        attack: "wirespeed".into(),
        seq: r.seq,
        code: r.code,
        timestamp: ResultLine::timestamp_of(r.start_unix_ns),
        latency: r.latency_ns,
        bytes_out: r.bytes_out,
        bytes_in: r.bytes_in,
        error: ResultLine::error_for(r.code, r.error),
        body: None,
        method: target.map(|t| t.method.clone()).unwrap_or_default(),
        url: target.map(|t| t.url.clone()).unwrap_or_default(),
        headers: None,
    }
}

/// Writes every record to `out`, in the order requests began, until the sending side is
/// gone; returns how many went out of that order (requests slower than `window_ns`, the
/// longest a request can take from due to ended).
pub fn write_all(
    rx: Receiver<RequestResult>,
    out: impl Write,
    targets: &[Target],
    window_ns: u64,
) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut order = order::Reorder::new(window_ns);
    for r in rx {
        for r in order.push(r) {
            writeln!(out, "{}", line(&r, targets).to_json())?;
        }
    }
    for r in order.finish() {
        writeln!(out, "{}", line(&r, targets).to_json())?;
    }
    out.flush()?;
    Ok(order.out_of_order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_follow_vegetas_schema() {
        let requests =
            vec![Target { method: "GET".into(), url: "http://127.0.0.1:8080/a?b=1".into() }];
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
        let v: serde_json::Value = serde_json::from_str(&line(&r, &requests).to_json()).unwrap();
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
        let v: serde_json::Value = serde_json::from_str(&line(&r, &requests).to_json()).unwrap();
        assert_eq!(
            (v["code"].as_u64(), v["error"].as_str()),
            (Some(0), Some("connection refused"))
        );
    }
}
