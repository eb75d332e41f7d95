//! The HTTP load test's plain data: what it is asked to do ([`HttpSpec`]) and what it found,
//! per interval ([`HttpInterval`]) and over the run ([`HttpSummary`]): requests, status codes,
//! errors by cause, bytes, and latency from an HDR histogram (the latency test's).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::latency::{HistogramBucket, LatencyStats};
use crate::spec::{check_run, SpecError};

/// Most connections one test may keep open.
pub const MAX_HTTP_CONNECTIONS: u16 = 10_000;
/// Most threads one test may use.
pub const MAX_HTTP_THREADS: u16 = 64;

/// What an HTTP load test is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// The URL as the user wrote it.
    pub url: String,
    /// Request method.
    pub method: String,
    /// Extra request headers, in order.
    pub headers: Vec<(String, String)>,
    /// Bytes of request body sent with each request.
    pub body_bytes: u64,
    /// Connections, each with one request in flight (closed model).
    pub connections: u16,
    /// Threads sharing the connections, each with its own event loop.
    pub threads: u16,
    /// Stop after this many requests instead of after a time.
    pub count: Option<u64>,
    /// How long to measure after the warm-up, nanoseconds; ignored when `count` is set.
    pub duration_ns: u64,
    /// Warm-up left out of the summary, nanoseconds.
    pub warmup_ns: u64,
    /// Length of one reporting interval, nanoseconds.
    pub interval_ns: u64,
    /// How long one request may take, nanoseconds (connecting included).
    pub timeout_ns: u64,
    /// Reuse each connection for the next request (HTTP/1.1 keep-alive).
    pub keepalive: bool,
}

impl HttpSpec {
    /// A spec with the defaults: GET, 10 connections on one thread, 10 s, 10 s timeout.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            method: "GET".into(),
            headers: Vec::new(),
            body_bytes: 0,
            connections: 10,
            threads: 1,
            count: None,
            duration_ns: 10_000_000_000,
            warmup_ns: 0,
            interval_ns: 1_000_000_000,
            timeout_ns: 10_000_000_000,
            keepalive: true,
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.connections == 0 || self.connections > MAX_HTTP_CONNECTIONS {
            return fail(format!(
                "connections (-c) must be 1..={MAX_HTTP_CONNECTIONS}, got {}",
                self.connections
            ));
        }
        if self.threads == 0 || self.threads > MAX_HTTP_THREADS || self.threads > self.connections {
            return fail(format!(
                "threads (-t) must be 1..={MAX_HTTP_THREADS} and at most -c, got {}",
                self.threads
            ));
        }
        check_run(
            self.count,
            self.duration_ns,
            "-d",
            self.interval_ns,
            self.timeout_ns,
            "the timeout",
        )?;
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_uppercase()) {
            return fail(format!("the method '{}' is not an upper-case word", self.method));
        }
        for (k, v) in &self.headers {
            let bad = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n');
            if k.is_empty() || bad(k) || bad(v) || k.contains(':') {
                return fail(format!("bad header '{k}: {v}'"));
            }
        }
        Ok(())
    }

    /// Total wall time a time-based test runs, warm-up included.
    pub fn total_ns(&self) -> u64 {
        self.warmup_ns.saturating_add(self.duration_ns)
    }
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpInterval {
    /// Position, from 0.
    pub index: u32,
    /// Start, nanoseconds since the test began.
    pub start_ns: u64,
    /// End, nanoseconds since the test began.
    pub end_ns: u64,
    /// True when inside the warm-up.
    pub omitted: bool,
    /// Responses completed per second.
    pub requests_per_second: f64,
    /// Responses completed.
    pub responses: u64,
    /// Requests that failed without a response.
    pub errors: u64,
    /// Latency of the interval's responses.
    pub latency: LatencyStats,
}

/// The whole measured part of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpSummary {
    /// Measured time, nanoseconds.
    pub duration_ns: u64,
    /// Requests that got a complete response, whatever its status.
    pub responses: u64,
    /// Responses with a 2xx or 3xx status.
    pub succeeded: u64,
    /// `succeeded / (responses + errors)`.
    pub success_ratio: f64,
    /// Responses by status code (as text: JSON object keys are strings, and the store reads
    /// reports back through JSON values).
    pub status: BTreeMap<String, u64>,
    /// Requests without a response, by cause.
    pub errors: BTreeMap<String, u64>,
    /// Responses per second.
    pub requests_per_second: f64,
    /// Bytes received (heads and bodies).
    pub bytes_in: u64,
    /// Bytes sent (requests and their bodies).
    pub bytes_out: u64,
    /// Connections opened.
    pub connections_opened: u64,
    /// Latency of every measured response.
    pub latency: LatencyStats,
    /// The full histogram of latencies.
    pub histogram: Vec<HistogramBucket>,
}

/// An HTTP load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpReport {
    /// What was asked.
    pub spec: HttpSpec,
    /// One entry per interval, warm-up included (marked `omitted`).
    pub intervals: Vec<HttpInterval>,
    /// Totals over the measured part.
    pub summary: HttpSummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = HttpSpec::new("http://h/");
        assert!(base.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut HttpSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.connections = 0),
            Box::new(|s| s.threads = 11),
            Box::new(|s| s.count = Some(0)),
            Box::new(|s| s.duration_ns = 0),
            Box::new(|s| s.timeout_ns = 0),
            Box::new(|s| s.method = "get".into()),
            Box::new(|s| s.headers.push(("X".into(), "a\r\nInjected: 1".into()))),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }
}
