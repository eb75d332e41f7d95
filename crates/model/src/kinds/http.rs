//! The HTTP load test's plain data: what it is asked to do ([`HttpSpec`]) and what it found,
//! per interval ([`HttpInterval`]) and over the run ([`HttpSummary`]): requests, status codes,
//! errors by cause, bytes, and latency from an HDR histogram (the latency test's).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{HistogramBucket, LatencyStats};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::{Member, ShareError, ShareRun};
use crate::metrics::{
    latency_metrics, load_series, metric, non_empty, Better, Events, Metric, Percentiles,
    RunSeries, Unit,
};
use crate::rules::{check_run, SpecError};

/// Most connections one test may keep open.
pub const MAX_HTTP_CONNECTIONS: u16 = 10_000;
/// Most threads one test may use.
pub const MAX_HTTP_THREADS: u16 = 64;

/// What an HTTP load test is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Requests per second to send at, whatever the server does (open model); empty: the
    /// closed model. Several rates make a sweep: one step per rate, each `duration_ns` long.
    #[serde(default)]
    pub rates: Vec<f64>,
    /// Most connections the open model opens; past it, requests wait for a free one (late).
    #[serde(default = "default_max_connections")]
    pub max_connections: u16,
    /// Connect to this unix socket instead of the URL's host.
    #[serde(default)]
    pub unix_socket: Option<String>,
    /// HTTP/2 instead of HTTP/1.1 (prior knowledge on http://, ALPN on https://).
    #[serde(default)]
    pub http2: bool,
    /// HTTP/3 over QUIC instead (https:// only, UDP to the URL's port).
    #[serde(default, skip_serializing_if = "is_false")]
    pub http3: bool,
    /// HTTP/3 where the URL's answer over TCP says it is (its Alt-Svc), not the URL's port.
    #[serde(default, skip_serializing_if = "is_false")]
    pub alt_svc: bool,
    /// HTTP/3: resume with a session ticket from an earlier connection and send the first
    /// request in 0-RTT (early data), when the server allows it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub zero_rtt: bool,
    /// Requests in flight on each HTTP/2 or HTTP/3 connection (closed model).
    #[serde(default = "one")]
    pub streams: u16,
    /// Redirects followed per request (0: a 3xx is the answer).
    #[serde(default)]
    pub max_redirects: u8,
    /// Skip verifying the server's certificate (https://).
    #[serde(default)]
    pub insecure: bool,
    /// The requests came from a targets file (vegeta's formats), sent round-robin.
    #[serde(default)]
    pub targets: Option<TargetsFile>,
}

/// A targets file the requests were read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetsFile {
    /// Its path, as given.
    pub path: String,
    /// How many requests it holds.
    pub count: usize,
}

fn default_max_connections() -> u16 {
    1000
}

fn one() -> u16 {
    1
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The highest rate one test may ask for, requests per second.
pub const MAX_HTTP_RATE: f64 = 10_000_000.0;

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
            rates: Vec::new(),
            max_connections: default_max_connections(),
            unix_socket: None,
            http2: false,
            http3: false,
            alt_svc: false,
            zero_rtt: false,
            streams: 1,
            max_redirects: 0,
            insecure: false,
            targets: None,
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
        for &r in &self.rates {
            if !(r > 0.0 && r <= MAX_HTTP_RATE) {
                return fail(format!(
                    "each rate (-r) must be above 0 and at most {MAX_HTTP_RATE}/s, got {r}"
                ));
            }
        }
        if self.max_connections == 0 || self.max_connections > MAX_HTTP_CONNECTIONS {
            return fail(format!(
                "--max-connections must be 1..={MAX_HTTP_CONNECTIONS}, got {}",
                self.max_connections
            ));
        }
        if self.is_open() && self.threads > self.max_connections {
            return fail(format!(
                "threads (-t) must be at most --max-connections, got {}",
                self.threads
            ));
        }
        if self.streams == 0 || self.streams > 1000 || (self.streams > 1 && !self.multiplexed()) {
            return fail(format!(
                "--streams must be 1..=1000, and above 1 only with --h2 or --h3; got {}",
                self.streams
            ));
        }
        if self.zero_rtt && !self.http3 {
            return fail("--0rtt is QUIC's early data: it goes with --h3".into());
        }
        if self.alt_svc && !self.http3 {
            return fail("--alt-svc finds a server's HTTP/3: it goes with --h3".into());
        }
        if self.streams > 1 && !self.keepalive {
            return fail("--streams shares a connection: it cannot go with --no-keepalive".into());
        }
        if self.http3 {
            if self.http2 {
                return fail("--h2 and --h3 are two protocols: choose one".into());
            }
            if !self.url.starts_with("https://") {
                return fail(format!(
                    "--h3 needs an https:// URL (QUIC is always encrypted), got {}",
                    self.url
                ));
            }
            if self.unix_socket.is_some() {
                return fail("--h3 goes over UDP: it cannot use --unix-socket".into());
            }
            if self.max_redirects > 0 {
                return fail("--redirects is for HTTP/1.1: with --h3 a 3xx is the answer".into());
            }
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

    /// Total wall time one step of a time-based test runs, warm-up included.
    pub fn total_ns(&self) -> u64 {
        self.warmup_ns.saturating_add(self.duration_ns)
    }

    /// True for HTTP/2 and HTTP/3, which carry many requests at once on a connection.
    pub fn multiplexed(&self) -> bool {
        self.http2 || self.http3
    }

    /// True for the open model (a rate, or a sweep of rates).
    pub fn is_open(&self) -> bool {
        !self.rates.is_empty()
    }
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Requests whose first byte was written.
    #[serde(default)]
    pub sent: u64,
    /// Requests sent more than a millisecond after their scheduled time (open model).
    #[serde(default)]
    pub late: u64,
    /// Latency of the interval's responses.
    pub latency: LatencyStats,
}

/// Where the time of a request went, each part measured on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpBreakdown {
    /// Resolving the host name, once before the run, nanoseconds.
    pub dns_ns: u64,
    /// TCP (or unix socket) connect, per new connection.
    pub connect: LatencyStats,
    /// TLS handshake, per new connection (empty for plain HTTP).
    pub tls: LatencyStats,
    /// From the request's first byte written to the response's first byte read.
    pub first_byte: LatencyStats,
    /// Open model: from the scheduled time to the first byte written (waiting for a
    /// connection, or for the generator itself).
    pub queue: LatencyStats,
}

/// What one request did, for a per-request log (`http --format vegeta`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestResult {
    /// Position in the run, from 0, in the order records were made (requests ending); the
    /// vegeta writer renumbers them in the order requests began.
    pub seq: u64,
    /// When it was due (open model) or sent (closed model), nanoseconds since the Unix epoch.
    pub start_unix_ns: i64,
    /// Its latency, as the report measures it.
    pub latency_ns: u64,
    /// The response's status; 0 without a response.
    pub code: u16,
    /// Request body bytes.
    pub bytes_out: u64,
    /// Response body bytes.
    pub bytes_in: u64,
    /// Why there was no response.
    pub error: Option<&'static str>,
    /// Which request of the set.
    pub request: usize,
}

/// The whole measured part of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The open model's target rate, requests per second.
    #[serde(default)]
    pub target_rate: Option<f64>,
    /// Requests whose first byte was written.
    #[serde(default)]
    pub sent: u64,
    /// Requests sent per second: the achieved rate, to hold against the target.
    #[serde(default)]
    pub sent_per_second: f64,
    /// Requests sent more than a millisecond after their scheduled time (open model).
    #[serde(default)]
    pub late: u64,
    /// Where the time went.
    #[serde(default)]
    pub breakdown: HttpBreakdown,
    /// HTTP/3 with `--0rtt`: connections that sent their first request as early data.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub early_data: u64,
    /// Of those, the ones whose early data the server accepted (the rest were sent again).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub early_data_accepted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One step of a rate sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpStep {
    /// The rate asked for, requests per second.
    pub rate: f64,
    /// When its measured part began (after its warm-up), nanoseconds since the test began.
    #[serde(default)]
    pub start_ns: u64,
    /// What the step measured.
    pub summary: HttpSummary,
}

/// An HTTP load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpReport {
    /// What was asked.
    pub spec: HttpSpec,
    /// One entry per interval, warm-up included (marked `omitted`).
    pub intervals: Vec<HttpInterval>,
    /// Totals over the measured part (of every step, for a sweep).
    pub summary: HttpSummary,
    /// A sweep's steps, one per rate; empty otherwise.
    #[serde(default)]
    pub steps: Vec<HttpStep>,
}

impl KindSpec for HttpSpec {
    fn kind(&self) -> Kind {
        Kind::Http
    }

    fn target(&self) -> &str {
        &self.url
    }

    /// A sweep runs every rate for the whole time, so it is planned as one run per rate.
    fn planned_ns(&self) -> Option<u64> {
        self.count.is_none().then(|| self.total_ns().saturating_mul(self.rates.len().max(1) as u64))
    }

    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    fn pacing_ns(&self) -> Option<u64> {
        // The fastest step's rate, shared by the threads.
        let rate = self.rates.iter().copied().fold(0.0, f64::max);
        (rate > 0.0).then(|| (1e9 * f64::from(self.threads.max(1)) / rate) as u64)
    }
}

/// An HTTP run's members: in the open model each sends its part of every rate (its stripe of the
/// one schedule) over its part of the connections; in the closed model each holds its part of
/// the connections. Each sends its part of a count, with no more threads than connections.
impl ShareRun for HttpSpec {
    fn share(&self, member: &Member) -> Result<Self, ShareError> {
        let mut s = self.clone();
        if s.is_open() {
            s.rates = s.rates.iter().map(|&r| member.part_of_rate(r)).collect();
            s.max_connections = member.part_at_least_one(u64::from(s.max_connections)) as u16;
            s.connections = member.part_at_least_one(u64::from(s.connections)) as u16;
        } else {
            s.connections = member.part_of_each("connections", "-c", s.connections)?;
        }
        s.threads = s.threads.min(s.connections.max(s.max_connections)).max(1);
        s.count = member.part_of_count(s.count)?;
        Ok(s)
    }
}

impl KindReport for HttpReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let measured: Vec<_> = self.intervals.iter().filter(|i| !i.omitted).collect();
        let mut out = vec![metric(
            "requests_per_second",
            "Requests/s",
            Unit::PerSecond(Events::Requests),
            Better::Higher,
        )
        .of(self.summary.requests_per_second, measured.iter().map(|i| i.requests_per_second))];
        let names = Percentiles {
            p50: ("latency_p50_ns", "Latency p50"),
            p99: ("latency_p99_ns", "Latency p99"),
        };
        out.extend(latency_metrics(
            names,
            &self.summary.latency,
            measured.iter().map(|i| &i.latency),
        ));
        out.push(
            metric("success_ratio", "Success", Unit::Ratio, Better::Higher).of(
                self.summary.success_ratio,
                measured
                    .iter()
                    .filter(|i| i.responses + i.errors > 0)
                    .map(|i| 1.0 - i.errors as f64 / (i.responses + i.errors) as f64),
            ),
        );
        if !self.spec.rates.is_empty() {
            // At a fixed rate the rate is what was asked; what the system made of it is the
            // latency, so that leads.
            out[..3].rotate_left(1);
        }
        out
    }

    fn series(&self) -> RunSeries {
        let points = self.intervals.iter().map(|i| (i.end_ns, i.requests_per_second, &i.latency));
        load_series("requests/s", Events::Requests, points)
    }

    fn histogram(&self) -> Option<&[HistogramBucket]> {
        non_empty(&self.summary.histogram)
    }

    fn work(&self) -> Option<crate::kind::Work> {
        Some(crate::kind::Work { count: self.summary.responses as f64, unit: "request" })
    }

    fn ports_exhausted(&self) -> u64 {
        self.summary.errors.get(PORTS_EXHAUSTED).copied().unwrap_or(0)
    }
}

/// The error cause of a connect that found no free local port (`EADDRNOTAVAIL`).
pub const PORTS_EXHAUSTED: &str = "local ports exhausted";

impl crate::merge_parts::MergeRuns for HttpReport {
    type Spec = HttpSpec;

    fn samples(&self) -> Option<crate::merge_parts::Samples> {
        Some(samples(self))
    }

    fn merge(
        parts: &[crate::merge_parts::Part<'_, Self>],
        spec: &HttpSpec,
    ) -> Result<Option<Self>, crate::histogram::HistogramError> {
        merge(parts, spec).map(Some)
    }
}

/// The members' reports of one HTTP run merged (see [`crate::merge`]): counts summed, rates
/// over the longest member's measured time, every latency figure from summed histograms (named
/// `total`, `connect`, `tls`, `first_byte`, `queue`, and `step{i}.…` for a sweep's steps).
/// What a merge checks against a member's histograms: responses, with a latency each.
fn samples(r: &HttpReport) -> crate::merge_parts::Samples {
    crate::merge_parts::Samples {
        intervals: r
            .intervals
            .iter()
            .map(|i| (i.start_ns, i.end_ns, i.omitted, i.responses))
            .collect(),
        duration_ns: r.summary.duration_ns,
        count: r.summary.responses,
    }
}

fn merge(
    parts: &[crate::merge_parts::Part<'_, HttpReport>],
    spec: &HttpSpec,
) -> Result<HttpReport, crate::histogram::HistogramError> {
    use crate::merge_parts::{each_interval, per_second, sum_interval};
    let intervals = each_interval(
        parts,
        |r| &r.intervals,
        |shape, of_k, k| {
            let responses = of_k.iter().map(|i| i.responses).sum();
            Ok(HttpInterval {
                responses,
                requests_per_second: per_second(
                    responses,
                    shape.end_ns.saturating_sub(shape.start_ns),
                ),
                errors: of_k.iter().map(|i| i.errors).sum(),
                sent: of_k.iter().map(|i| i.sent).sum(),
                late: of_k.iter().map(|i| i.late).sum(),
                latency: sum_interval(parts, k)?.stats(),
                ..shape.clone()
            })
        },
    )?;
    let summary = merge_summary(parts, |r| Some(&r.summary), "")?;
    let steps = (0..parts.iter().map(|p| p.report.steps.len()).max().unwrap_or(0))
        .map(|j| {
            fn of_j(r: &HttpReport, j: usize) -> Option<&HttpStep> {
                r.steps.get(j)
            }
            Ok(HttpStep {
                rate: parts.iter().filter_map(|p| of_j(p.report, j)).map(|s| s.rate).sum(),
                start_ns: parts
                    .iter()
                    .filter_map(|p| of_j(p.report, j))
                    .map(|s| s.start_ns)
                    .min()
                    .unwrap_or(0),
                summary: merge_summary(
                    parts,
                    |r| of_j(r, j).map(|s| &s.summary),
                    &format!("step{j}."),
                )?,
            })
        })
        .collect::<Result<_, crate::histogram::HistogramError>>()?;
    Ok(HttpReport { spec: spec.clone(), intervals, summary, steps })
}

/// One summary of every part (the whole run's, or a step's), histograms under `prefix`.
fn merge_summary(
    parts: &[crate::merge_parts::Part<'_, HttpReport>],
    pick: impl Fn(&HttpReport) -> Option<&HttpSummary>,
    prefix: &str,
) -> Result<HttpSummary, crate::histogram::HistogramError> {
    use crate::merge_parts::{add_counts, per_second, stats_of, sum_named};
    let all: Vec<&HttpSummary> = parts.iter().filter_map(|p| pick(p.report)).collect();
    let sum = |f: fn(&HttpSummary) -> u64| all.iter().map(|s| f(s)).sum::<u64>();
    let duration_ns = all.iter().map(|s| s.duration_ns).max().unwrap_or(0);
    let (mut status, mut errors) = (BTreeMap::new(), BTreeMap::new());
    for s in &all {
        add_counts(&mut status, &s.status);
        add_counts(&mut errors, &s.errors);
    }
    let responses = sum(|s| s.responses);
    let succeeded = sum(|s| s.succeeded);
    let attempts = responses + errors.values().sum::<u64>();
    let total = sum_named(parts, &format!("{prefix}total"))?;
    let named = |n: &str| sum_named(parts, &format!("{prefix}{n}")).map(|h| stats_of(&h));
    let sent = sum(|s| s.sent);
    let rates: Vec<f64> = all.iter().filter_map(|s| s.target_rate).collect();
    Ok(HttpSummary {
        duration_ns,
        responses,
        succeeded,
        success_ratio: if attempts == 0 { 0.0 } else { succeeded as f64 / attempts as f64 },
        status,
        errors,
        requests_per_second: per_second(responses, duration_ns),
        bytes_in: sum(|s| s.bytes_in),
        bytes_out: sum(|s| s.bytes_out),
        connections_opened: sum(|s| s.connections_opened),
        latency: stats_of(&total),
        histogram: total.map(|h| h.buckets()).unwrap_or_default(),
        target_rate: (!rates.is_empty()).then(|| rates.iter().sum()),
        sent,
        sent_per_second: per_second(sent, duration_ns),
        late: sum(|s| s.late),
        breakdown: HttpBreakdown {
            dns_ns: all.iter().map(|s| s.breakdown.dns_ns).max().unwrap_or(0),
            connect: named("connect")?,
            tls: named("tls")?,
            first_byte: named("first_byte")?,
            queue: named("queue")?,
        },
        early_data: sum(|s| s.early_data),
        early_data_accepted: sum(|s| s.early_data_accepted),
    })
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
            Box::new(|s| s.rates = vec![100.0, 0.0]),
            Box::new(|s| s.rates = vec![f64::NAN]),
            Box::new(|s| s.max_connections = 0),
            Box::new(|s| s.streams = 4),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }
}
