//! The DNS load test's plain data: what it is asked to do ([`DnsSpec`], dnsperf's options and
//! ours) and what it found, per interval ([`DnsInterval`]) and over the run ([`DnsSummary`]):
//! dnsperf's counts (sent, completed, lost, interrupted, response codes, sizes, run time, QPS,
//! latency) and what dnsperf does not count (truncated, mismatched, duplicate, late and
//! unexpected answers, percentiles).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{HistogramBucket, LatencyStats, MAX_RTT_NS};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::{Member, ShareError, ShareRun};
use crate::metrics::{
    latency_metrics, load_series, metric, non_empty, Better, Events, Metric, Percentiles,
    RunSeries, Unit,
};
use crate::rules::SpecError;

/// Most sockets (or connections) one test may use.
pub const MAX_DNS_CLIENTS: u16 = 4096;
/// Most threads one test may use.
pub const MAX_DNS_THREADS: u16 = 64;
/// Most queries in flight per thread: a thread's IDs are 16 bits.
pub const MAX_OUTSTANDING_PER_THREAD: u32 = 65_536;
/// The highest rate one test may ask for, queries per second.
pub const MAX_DNS_RATE: f64 = 100_000_000.0;

/// How queries travel.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DnsTransport {
    /// One datagram per query (dnsperf's default).
    #[default]
    Udp,
    /// Length-prefixed messages, pipelined on one connection per client (RFC 7766).
    Tcp,
    /// TCP's framing inside TLS (RFC 7858).
    Dot,
    /// DNS over QUIC (RFC 9250): a QUIC connection per client, each query on a stream of
    /// its own.
    Doq,
    /// DNS over HTTPS (RFC 8484): an HTTP/2 connection per client, each query a request.
    Doh,
}

/// How a DoH query travels (RFC 8484 §4.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum DohMethod {
    /// The message base64url-encoded in the `dns` parameter (cacheable; dnsperf's default).
    #[default]
    Get,
    /// The message as the request's body.
    Post,
}

impl DnsTransport {
    /// The port a server of this transport listens on by default.
    pub fn default_port(self) -> u16 {
        match self {
            DnsTransport::Dot | DnsTransport::Doq => 853,
            DnsTransport::Doh => 443,
            _ => 53,
        }
    }

    /// The name people use for it.
    pub fn name(self) -> &'static str {
        match self {
            DnsTransport::Udp => "UDP",
            DnsTransport::Tcp => "TCP",
            DnsTransport::Dot => "DoT",
            DnsTransport::Doq => "DoQ",
            DnsTransport::Doh => "DoH",
        }
    }
}

/// What a DNS load test is asked to do. Defaults follow dnsperf where dnsperf has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DnsSpec {
    /// The server as the user wrote it.
    pub server: String,
    /// Its port.
    pub port: u16,
    /// UDP, TCP or DNS over TLS.
    pub transport: DnsTransport,
    /// The datafile's path (`-d`); `None`: the built-in queries for the fixture's zone.
    pub datafile: Option<String>,
    /// Queries in the datafile.
    pub queries: usize,
    /// Sockets, or connections for TCP and DoT (`-c`).
    pub clients: u16,
    /// Threads sharing the clients (`-T`).
    pub threads: u16,
    /// Most queries in flight, all threads together (`-q`; closed loop).
    pub max_outstanding: u32,
    /// Most queries per second (`-Q`; the closed loop still waits for answers).
    pub max_qps: Option<f64>,
    /// Open loop: send this many queries per second whatever the server does (`--rate`).
    pub rate: Option<f64>,
    /// Stop sending after this long (`-l`), nanoseconds.
    pub duration_ns: Option<u64>,
    /// Stop after this many runs through the datafile (`-n`); with neither limit, one run.
    pub passes: Option<u64>,
    /// How long a query may wait for its answer before it counts as lost (`-t`).
    pub timeout_ns: u64,
    /// Length of one reporting interval, nanoseconds.
    pub interval_ns: u64,
    /// Add an EDNS0 OPT record advertising this UDP size (`-e` is 4096, as dnsperf).
    pub edns_size: Option<u16>,
    /// Set the DO bit (implies EDNS).
    pub dnssec_ok: bool,
    /// Re-ask a truncated (TC=1) UDP answer over TCP, as a resolver would.
    pub tc_retry: bool,
    /// DoT: skip verifying the server's certificate.
    #[serde(default)]
    pub insecure: bool,
    /// DoT: the name sent in SNI and verified (default: the server's name).
    #[serde(default)]
    pub sni: Option<String>,
    /// DoH: the path queries go to (`/dns-query` unless the URL names another).
    #[serde(default)]
    pub doh_path: Option<String>,
    /// DoH: GET or POST.
    #[serde(default)]
    pub doh_method: DohMethod,
    /// DoH over HTTP/3 (QUIC, UDP to the port) instead of HTTP/2.
    #[serde(default, skip_serializing_if = "is_false")]
    pub doh_http3: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl DnsSpec {
    /// A spec with dnsperf's defaults against `server:53` over UDP: one socket, one thread,
    /// 100 queries in flight, 5 s timeout, one run through the file.
    pub fn new(server: impl Into<String>, port: u16) -> Self {
        Self {
            server: server.into(),
            port,
            transport: DnsTransport::Udp,
            datafile: None,
            queries: 0,
            clients: 1,
            threads: 1,
            max_outstanding: 100,
            max_qps: None,
            rate: None,
            duration_ns: None,
            passes: None,
            timeout_ns: 5_000_000_000,
            interval_ns: 1_000_000_000,
            edns_size: None,
            dnssec_ok: false,
            tc_retry: false,
            insecure: false,
            sni: None,
            doh_path: None,
            doh_method: DohMethod::Get,
            doh_http3: false,
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.clients == 0 || self.clients > MAX_DNS_CLIENTS {
            return fail(format!(
                "clients (-c) must be 1..={MAX_DNS_CLIENTS}, got {}",
                self.clients
            ));
        }
        if self.threads == 0 || self.threads > MAX_DNS_THREADS || self.threads > self.clients {
            return fail(format!(
                "threads (-T) must be 1..={MAX_DNS_THREADS} and at most -c, got {}",
                self.threads
            ));
        }
        let per_thread = u64::from(MAX_OUTSTANDING_PER_THREAD) * u64::from(self.threads);
        if self.max_outstanding == 0 || u64::from(self.max_outstanding) > per_thread {
            return fail(format!(
                "outstanding queries (-q) must be 1..={per_thread} (65536 per thread), got {}",
                self.max_outstanding
            ));
        }
        for (flag, r) in [("-Q", self.max_qps), ("--rate", self.rate)] {
            if let Some(r) = r {
                if !(r.is_finite() && r > 0.0 && r <= MAX_DNS_RATE) {
                    return fail(format!(
                        "{flag} must be above 0 and at most {MAX_DNS_RATE}/s, got {r}"
                    ));
                }
            }
        }
        if self.rate.is_some() && self.max_qps.is_some() {
            return fail("--rate (open loop) and -Q (closed loop) do not go together".into());
        }
        if self.duration_ns == Some(0) || self.passes == Some(0) {
            return fail("the time limit (-l) and the passes (-n) must be above 0".into());
        }
        if self.timeout_ns == 0 || self.timeout_ns > MAX_RTT_NS {
            return fail("the timeout (-t) must be above 0 and at most 60 s".into());
        }
        if !(100_000_000..=60_000_000_000).contains(&self.interval_ns) {
            return fail("the interval (-S) must be between 0.1 s and 60 s".into());
        }
        if let Some(size) = self.edns_size {
            if size < 512 {
                return fail(format!("the EDNS UDP size must be at least 512, got {size}"));
            }
        }
        if self.tc_retry && self.transport != DnsTransport::Udp {
            return fail("--tc-retry applies to UDP only".into());
        }
        if self.port == 0 {
            return fail("the port (-p) must be above 0".into());
        }
        if self.server.len() > 1024 {
            return fail("the server name is too long".into());
        }
        if self.doh_http3 && self.transport != DnsTransport::Doh {
            return fail("HTTP/3 (--doh-h3) goes with DoH only".into());
        }
        if let Some(path) = &self.doh_path {
            if self.transport != DnsTransport::Doh {
                return fail("a DoH path goes with DoH only".into());
            }
            if !path.starts_with('/') || path.len() > 1024 || path.contains(['?', '#', ' ']) {
                return fail(format!("'{path}' is not a DoH path (one like /dns-query)"));
            }
        }
        Ok(())
    }

    /// The passes through the datafile: dnsperf runs once when neither -n nor -l is given.
    pub fn effective_passes(&self) -> Option<u64> {
        match (self.passes, self.duration_ns) {
            (None, None) => Some(1),
            (p, _) => p,
        }
    }
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DnsInterval {
    /// Position, from 0.
    pub index: u32,
    /// Start, nanoseconds since the test began.
    pub start_ns: u64,
    /// End, nanoseconds since the test began.
    pub end_ns: u64,
    /// Queries sent.
    pub sent: u64,
    /// Answers matched to a query.
    pub completed: u64,
    /// Queries that timed out.
    pub lost: u64,
    /// Answers with TC=1.
    pub truncated: u64,
    /// Answers per second (dnsperf's `-S` figure).
    pub queries_per_second: f64,
    /// Latency of the interval's answers.
    pub latency: LatencyStats,
}

/// How often one response code came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RcodeCount {
    /// The full (extended) code.
    pub code: u16,
    /// Its name: NOERROR, NXDOMAIN, BADVERS, …
    pub name: String,
    /// Answers with it.
    pub count: u64,
}

/// Answers that were not counted as completed, by why.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct StrayAnswers {
    /// The ID of a query in flight, but another question: not its answer (the query stays
    /// in flight).
    pub mismatched: u64,
    /// A second answer to a query already answered.
    pub duplicate: u64,
    /// The answer to a query that had already timed out (it counts as lost).
    pub late: u64,
    /// An ID this socket is not waiting for and has no memory of.
    pub unexpected: u64,
    /// Not a DNS answer: too short, QR=0, or a record past the end.
    pub malformed: u64,
}

impl StrayAnswers {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.mismatched + self.duplicate + self.late + self.unexpected + self.malformed
    }
}

/// Exact latency moments, as dnsperf computes them (sums, not the histogram).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExactLatency {
    /// Mean, nanoseconds.
    pub mean_ns: f64,
    /// Sample standard deviation, nanoseconds (0 with fewer than two answers).
    pub stddev_ns: f64,
    /// Shortest.
    pub min_ns: u64,
    /// Longest.
    pub max_ns: u64,
}

/// TCP and DoT connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DnsConnections {
    /// Connections tried.
    pub attempts: u64,
    /// Connections that were established (and, for DoT, finished the handshake).
    pub successful: u64,
    /// Connection setup time (TCP connect, and the TLS handshake for DoT).
    pub setup: LatencyStats,
    /// Why the last connection that failed did (a refused port, a certificate that does not
    /// verify, no HTTP/2), if one failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

/// The whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DnsSummary {
    /// dnsperf's run time: from the first query to the end of the last query's wait (the
    /// later of its answer and its timeout), nanoseconds.
    pub duration_ns: u64,
    /// Why the test ended: `time limit`, `end of file` or `interruption`.
    pub end_reason: String,
    /// Queries sent.
    pub sent: u64,
    /// Queries answered (a matching answer, whatever its code; TC answers included).
    pub completed: u64,
    /// Queries that timed out.
    pub lost: u64,
    /// Queries still in flight when the user interrupted the run.
    pub interrupted: u64,
    /// Answers by response code, in code order.
    pub rcodes: Vec<RcodeCount>,
    /// Completed answers with TC=1.
    pub truncated: u64,
    /// Truncated answers asked again over TCP (`--tc-retry`).
    pub tc_retried: u64,
    /// Of those, answered over TCP.
    pub tc_retry_completed: u64,
    /// Answers not counted as completed.
    pub stray: StrayAnswers,
    /// Queries the kernel would not send (a refused port, a full buffer).
    pub send_errors: u64,
    /// DoQ and DoH: queries whose stream the server reset, whose request got an HTTP error, or
    /// whose reply was not one DNS message (each also counts as lost, at once: no answer can
    /// come on a failed stream).
    #[serde(default)]
    pub stream_errors: u64,
    /// Open loop: queries the schedule asked for that were never sent (no free ID, or the
    /// generator fell more than a batch behind).
    pub unsent: u64,
    /// Bytes of every query sent (DNS messages, without UDP/TCP headers).
    pub request_bytes: u64,
    /// Bytes of every completed answer.
    pub response_bytes: u64,
    /// completed ÷ run time.
    pub queries_per_second: f64,
    /// Latency of every completed query, from the histogram (percentiles).
    pub latency: LatencyStats,
    /// Mean, sample deviation, min and max from exact sums, as dnsperf prints them.
    pub exact: ExactLatency,
    /// The full histogram of latencies.
    pub histogram: Vec<HistogramBucket>,
    /// TCP and DoT connections (also the TCP retries of `--tc-retry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<DnsConnections>,
}

/// A DNS load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DnsReport {
    /// What was asked.
    pub spec: DnsSpec,
    /// One entry per interval.
    pub intervals: Vec<DnsInterval>,
    /// The whole run.
    pub summary: DnsSummary,
}

impl KindSpec for DnsSpec {
    fn kind(&self) -> Kind {
        Kind::Dns
    }

    fn target(&self) -> &str {
        &self.server
    }

    fn planned_ns(&self) -> Option<u64> {
        self.duration_ns.filter(|&ns| ns > 0)
    }

    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    fn pacing_ns(&self) -> Option<u64> {
        // The rate is shared by the threads; each paces its part.
        let rate = self.rate.or(self.max_qps)?;
        Some((1e9 * f64::from(self.threads.max(1)) / rate) as u64)
    }
}

/// A DNS run's members each run their part of the clients (with no more threads than those)
/// and of the queries outstanding, at their part of a rate, for the run's time limit.
impl ShareRun for DnsSpec {
    fn share(&self, member: &Member) -> Result<Self, ShareError> {
        if self.duration_ns.is_none() {
            return Err(ShareError(
                "a DNS run shared by members needs a time limit (-l): each member would \
                 otherwise send the whole datafile"
                    .into(),
            ));
        }
        let mut s = self.clone();
        s.clients = member.part_of_each("clients", "-c", s.clients)?;
        s.threads = s.threads.min(s.clients).max(1);
        s.max_outstanding = member.part_at_least_one(u64::from(s.max_outstanding)) as u32;
        s.rate = s.rate.map(|r| member.part_of_rate(r));
        s.max_qps = s.max_qps.map(|r| member.part_of_rate(r));
        Ok(s)
    }
}

impl KindReport for DnsReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let mut out = vec![metric(
            "queries_per_second",
            "Queries/s",
            Unit::PerSecond(Events::Queries),
            Better::Higher,
        )
        .of(self.summary.queries_per_second, self.intervals.iter().map(|i| i.queries_per_second))];
        let names = Percentiles {
            p50: ("latency_p50_ns", "Latency p50"),
            p99: ("latency_p99_ns", "Latency p99"),
        };
        out.extend(latency_metrics(
            names,
            &self.summary.latency,
            self.intervals.iter().map(|i| &i.latency),
        ));
        let lost = |sent: u64, lost: u64| if sent == 0 { 0.0 } else { lost as f64 / sent as f64 };
        out.push(metric("lost_ratio", "Lost", Unit::Ratio, Better::Lower).of(
            lost(self.summary.sent, self.summary.lost),
            self.intervals.iter().filter(|i| i.sent > 0).map(|i| lost(i.sent, i.lost)),
        ));
        if self.spec.rate.is_some() {
            // An open loop's rate is what was asked; the server's answer is its latency.
            out[..3].rotate_left(1);
        }
        out
    }

    fn series(&self) -> RunSeries {
        let points = self.intervals.iter().map(|i| (i.end_ns, i.queries_per_second, &i.latency));
        load_series("queries/s", Events::Queries, points)
    }

    fn work(&self) -> Option<crate::kind::Work> {
        Some(crate::kind::Work { count: self.summary.completed as f64, unit: "query" })
    }

    fn histogram(&self) -> Option<&[HistogramBucket]> {
        non_empty(&self.summary.histogram)
    }
}

impl crate::merge_parts::MergeRuns for DnsReport {
    type Spec = DnsSpec;

    fn samples(&self) -> Option<crate::merge_parts::Samples> {
        Some(samples(self))
    }

    fn merge(
        parts: &[crate::merge_parts::Part<'_, Self>],
        spec: &DnsSpec,
    ) -> Result<Option<Self>, crate::histogram::HistogramError> {
        merge(parts, spec).map(Some)
    }
}

/// The members' reports of one DNS run merged (see [`crate::merge`]): counts and bytes summed,
/// answers per second over the longest member's time, percentiles from the summed histograms
/// (`total`, and `setup` for connections), and dnsperf's exact moments combined exactly from
/// each member's count, mean and standard deviation.
/// What a merge checks against a member's histograms: answers, with a latency each.
fn samples(r: &DnsReport) -> crate::merge_parts::Samples {
    crate::merge_parts::Samples {
        intervals: r.intervals.iter().map(|i| (i.start_ns, i.end_ns, false, i.completed)).collect(),
        duration_ns: r.summary.duration_ns,
        count: r.summary.completed,
    }
}

fn merge(
    parts: &[crate::merge_parts::Part<'_, DnsReport>],
    spec: &DnsSpec,
) -> Result<DnsReport, crate::histogram::HistogramError> {
    use crate::merge_parts::{each_interval, per_second, stats_of, sum_interval, sum_named};
    let intervals = each_interval(
        parts,
        |r| &r.intervals,
        |shape, of_k, k| {
            let completed = of_k.iter().map(|i| i.completed).sum();
            Ok(DnsInterval {
                sent: of_k.iter().map(|i| i.sent).sum(),
                completed,
                lost: of_k.iter().map(|i| i.lost).sum(),
                truncated: of_k.iter().map(|i| i.truncated).sum(),
                queries_per_second: per_second(
                    completed,
                    shape.end_ns.saturating_sub(shape.start_ns),
                ),
                latency: sum_interval(parts, k)?.stats(),
                ..shape.clone()
            })
        },
    )?;
    let all: Vec<&DnsSummary> = parts.iter().map(|p| &p.report.summary).collect();
    let sum = |f: fn(&DnsSummary) -> u64| all.iter().map(|s| f(s)).sum::<u64>();
    let duration_ns = all.iter().map(|s| s.duration_ns).max().unwrap_or(0);
    let mut rcodes: BTreeMap<u16, RcodeCount> = BTreeMap::new();
    for r in all.iter().flat_map(|s| &s.rcodes) {
        rcodes.entry(r.code).or_insert(RcodeCount { count: 0, ..r.clone() }).count += r.count;
    }
    let mut stray = StrayAnswers::default();
    for s in &all {
        stray.mismatched += s.stray.mismatched;
        stray.duplicate += s.stray.duplicate;
        stray.late += s.stray.late;
        stray.unexpected += s.stray.unexpected;
        stray.malformed += s.stray.malformed;
    }
    // Sums and sums of squares back from each member's count, mean and sample deviation.
    let (mut n, mut total, mut squares) = (0u64, 0.0f64, 0.0f64);
    for s in &all {
        let k = s.completed as f64;
        n += s.completed;
        total += k * s.exact.mean_ns;
        squares += (k - 1.0).max(0.0) * s.exact.stddev_ns.powi(2) + k * s.exact.mean_ns.powi(2);
    }
    let mean = if n > 0 { total / n as f64 } else { 0.0 };
    let stddev = if n > 1 {
        ((squares - n as f64 * mean * mean) / (n as f64 - 1.0)).max(0.0).sqrt()
    } else {
        0.0
    };
    let with_answers = || all.iter().filter(|s| s.completed > 0);
    let total_hist = sum_named(parts, "total")?;
    let made: Vec<&DnsConnections> = all.iter().filter_map(|s| s.connections.as_ref()).collect();
    let connections = if made.is_empty() {
        None
    } else {
        Some(DnsConnections {
            attempts: made.iter().map(|c| c.attempts).sum(),
            successful: made.iter().map(|c| c.successful).sum(),
            setup: stats_of(&sum_named(parts, "setup")?),
            last_failure: made.iter().find_map(|c| c.last_failure.clone()),
        })
    };
    let reasons: std::collections::BTreeSet<&str> =
        all.iter().map(|s| s.end_reason.as_str()).collect();
    let completed = sum(|s| s.completed);
    let summary = DnsSummary {
        duration_ns,
        end_reason: reasons.into_iter().collect::<Vec<_>>().join(", "),
        sent: sum(|s| s.sent),
        completed,
        lost: sum(|s| s.lost),
        interrupted: sum(|s| s.interrupted),
        rcodes: rcodes.into_values().collect(),
        truncated: sum(|s| s.truncated),
        tc_retried: sum(|s| s.tc_retried),
        tc_retry_completed: sum(|s| s.tc_retry_completed),
        stray,
        send_errors: sum(|s| s.send_errors),
        stream_errors: sum(|s| s.stream_errors),
        unsent: sum(|s| s.unsent),
        request_bytes: sum(|s| s.request_bytes),
        response_bytes: sum(|s| s.response_bytes),
        queries_per_second: per_second(completed, duration_ns),
        latency: stats_of(&total_hist),
        exact: ExactLatency {
            mean_ns: mean,
            stddev_ns: stddev,
            min_ns: with_answers().map(|s| s.exact.min_ns).min().unwrap_or(0),
            max_ns: with_answers().map(|s| s.exact.max_ns).max().unwrap_or(0),
        },
        histogram: total_hist.map(|h| h.buckets()).unwrap_or_default(),
        connections,
    };
    Ok(DnsReport { spec: spec.clone(), intervals, summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_dnsperf_and_bad_fields_are_refused() {
        let base = DnsSpec::new("127.0.0.1", 53);
        assert!(base.validate().is_ok());
        assert_eq!((base.max_outstanding, base.timeout_ns), (100, 5_000_000_000));
        assert_eq!(base.effective_passes(), Some(1));
        let mut timed = base.clone();
        timed.duration_ns = Some(1);
        assert_eq!(timed.effective_passes(), None);
        type Mutation = Box<dyn Fn(&mut DnsSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.clients = 0),
            Box::new(|s| s.threads = 2),
            Box::new(|s| s.max_outstanding = 0),
            Box::new(|s| s.max_outstanding = 70_000),
            Box::new(|s| s.max_qps = Some(0.0)),
            Box::new(|s| s.rate = Some(f64::NAN)),
            Box::new(|s| {
                s.rate = Some(1.0);
                s.max_qps = Some(1.0)
            }),
            Box::new(|s| s.duration_ns = Some(0)),
            Box::new(|s| s.passes = Some(0)),
            Box::new(|s| s.timeout_ns = 0),
            Box::new(|s| s.edns_size = Some(100)),
            Box::new(|s| {
                s.tc_retry = true;
                s.transport = DnsTransport::Tcp
            }),
            Box::new(|s| s.port = 0),
            Box::new(|s| s.doh_path = Some("/dns-query".into())),
            Box::new(|s| {
                s.transport = DnsTransport::Doh;
                s.doh_path = Some("dns-query?x=1".into())
            }),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }
}
