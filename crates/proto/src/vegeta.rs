//! vegeta's result lines (`vegeta encode --to json`): one JSON object per request, which
//! `vegeta report` and `vegeta plot` read. [`ResultLine`] writes them (`wirespeed http
//! --format vegeta`) and reads them back (a vegeta load in `bench`), with the timestamp as
//! RFC 3339 with nanoseconds and an error for every status outside 200–399, as vegeta gives.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// One request's result line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultLine {
    /// The attack's name.
    #[serde(default)]
    pub attack: String,
    /// The request's number, in the order requests began.
    #[serde(default)]
    pub seq: u64,
    /// The response's status; 0 without a response.
    pub code: u16,
    /// When the request began, RFC 3339.
    pub timestamp: String,
    /// Its latency, ns.
    pub latency: u64,
    /// Request body bytes.
    pub bytes_out: u64,
    /// Response body bytes.
    pub bytes_in: u64,
    /// Why it failed: no response, or a status outside 200–399; empty when it did not.
    #[serde(default)]
    pub error: String,
    /// The response body: never captured when written here, and not read (vegeta's own lines
    /// carry it, base64).
    #[serde(default, skip_deserializing)]
    pub body: Option<()>,
    /// The request's method.
    #[serde(default)]
    pub method: String,
    /// The request's URL.
    #[serde(default)]
    pub url: String,
    /// The response's headers: never captured when written here, and not read (vegeta's own
    /// lines carry them).
    #[serde(default, skip_deserializing)]
    pub headers: Option<()>,
}

/// A result line that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("vegeta result line {line}: {why}")]
pub struct LineError {
    /// The line's number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

impl ResultLine {
    /// vegeta's error text for a request that got `code` (0: none) or failed with `failure`.
    pub fn error_for(code: u16, failure: Option<&str>) -> String {
        match (failure, code) {
            (Some(e), _) => e.to_string(),
            (None, c) if !(200..400).contains(&c) => status_text(c),
            _ => String::new(),
        }
    }

    /// The timestamp of a request begun `unix_ns` after the Unix epoch.
    pub fn timestamp_of(unix_ns: i64) -> String {
        let at = UNIX_EPOCH + Duration::from_nanos(unix_ns.max(0) as u64);
        humantime::format_rfc3339_nanos(at).to_string()
    }

    /// Reads line `number` (from 1) of a results file, with its timestamp.
    pub fn parse(text: &str, number: usize) -> Result<(SystemTime, Self), LineError> {
        let fail = |why: String| LineError { line: number, why };
        let line: Self = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
        let at = instant(&line.timestamp)
            .ok_or_else(|| fail(format!("timestamp {:?}: not RFC 3339", line.timestamp)))?;
        Ok((at, line))
    }

    /// The line as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// An RFC 3339 timestamp as Go writes it: `Z`, or the local offset (`+01:00`) that vegeta's
/// lines carry outside UTC.
fn instant(text: &str) -> Option<SystemTime> {
    let split = text.len().checked_sub(6).filter(|&at| {
        let b = text.as_bytes();
        matches!(b[at], b'+' | b'-') && b[at + 3] == b':' && text.is_char_boundary(at)
    });
    let Some(at) = split else {
        return humantime::parse_rfc3339_weak(text).ok();
    };
    let (local, offset) = text.split_at(at);
    let hours: u64 = offset[1..3].parse().ok()?;
    let minutes: u64 = offset[4..6].parse().ok()?;
    let shift = Duration::from_secs(hours * 3600 + minutes * 60);
    let local = humantime::parse_rfc3339_weak(local).ok()?;
    // Local time ahead of UTC (+) is UTC plus the offset: take it off.
    if offset.starts_with('+') {
        local.checked_sub(shift)
    } else {
        local.checked_add(shift)
    }
}

/// `code` with its reason phrase, as Go's net/http words the common ones.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_written() {
        let line = ResultLine {
            attack: "wirespeed".into(),
            seq: 7,
            code: 503,
            timestamp: ResultLine::timestamp_of(1_700_000_000_123_456_789),
            latency: 1500,
            bytes_out: 0,
            bytes_in: 615,
            error: ResultLine::error_for(503, None),
            body: None,
            method: "GET".into(),
            url: "http://127.0.0.1:8080/a?b=1".into(),
            headers: None,
        };
        let json = line.to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["timestamp"], "2023-11-14T22:13:20.123456789Z");
        assert_eq!(v["error"], "503 Service Unavailable");
        assert!(v["body"].is_null() && v["headers"].is_null());
        let (at, back) = ResultLine::parse(&json, 1).unwrap();
        assert_eq!(back, line);
        assert_eq!(at.duration_since(UNIX_EPOCH).unwrap().as_nanos(), 1_700_000_000_123_456_789);
    }

    #[test]
    fn vegetas_own_lines_are_read_with_their_bodies_and_headers_left_out() {
        let own = r#"{"attack":"","seq":3,"code":200,"timestamp":"2026-12-06T21:20:00.5+01:00","latency":2500000,"bytes_out":0,"bytes_in":4,"error":"","body":"cG9uZw==","method":"GET","url":"http://127.0.0.1:8080/","headers":{"Content-Type":["text/plain"]}}"#;
        let (at, line) = ResultLine::parse(own, 4).unwrap();
        assert_eq!((line.seq, line.code, line.latency, line.bytes_in), (3, 200, 2_500_000, 4));
        assert!(line.body.is_none() && line.headers.is_none());
        let utc = humantime::parse_rfc3339("2026-12-06T20:20:00.5Z").unwrap();
        assert_eq!(at, utc, "the offset is taken into account");
        assert_eq!(instant("2026-12-06T15:20:00.5-05:00"), Some(utc));
        assert_eq!(instant("2026-12-06T20:20:00.5Z"), Some(utc));
        assert_eq!(instant("2026-12-06T20:20:00.5+0x:00"), None);
    }

    #[test]
    fn errors_are_vegetas() {
        assert_eq!(ResultLine::error_for(0, Some("connection refused")), "connection refused");
        assert_eq!(ResultLine::error_for(418, None), "418");
        assert_eq!(ResultLine::error_for(302, None), "");
        let e = ResultLine::parse("not json", 3).unwrap_err();
        assert!(e.to_string().starts_with("vegeta result line 3: "), "{e}");
        let e = ResultLine::parse(
            r#"{"code":200,"timestamp":"now","latency":1,"bytes_out":0,"bytes_in":0}"#,
            2,
        )
        .unwrap_err();
        assert!(e.to_string().contains("timestamp \"now\""), "{e}");
    }
}
