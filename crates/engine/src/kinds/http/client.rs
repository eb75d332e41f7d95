//! `wirespeed http`'s orchestration: resolve the target once (timed: the breakdown's DNS
//! part), build the requests, then run each step — the closed model, one rate, or each rate
//! of a sweep — on `-t` threads of `super::shard` (HTTP/1.1, plain or TLS, TCP or a unix
//! socket) or on `super::h2` (HTTP/2), sampling an interval at a time. Reports each
//! interval as it ends and the whole run at the end.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use socket2::SockAddr;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::histogram::EncodedHistograms;
use wirespeed_model::kinds::http::{
    HttpBreakdown, HttpInterval, HttpReport, HttpSpec, HttpStep, HttpSummary,
};
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::http_url::HttpUrl;

use super::counts::{Cause, Histograms, ShardCounts, Totals};
use super::requests::{Request, RequestSet};
use super::results::ResultSink;
use super::shard::Peer;
use crate::error::ClientError;
use crate::net::handshake::{self, Family};
use crate::net::tls::{self, TlsOptions};
use crate::run::intervals::{self, Clock, Ending, Sampler, Timers};

/// Everything an HTTP load test needs.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The test.
    pub spec: HttpSpec,
    /// The requests, sent round-robin (one, unless a targets file gave several). They all
    /// share the origin of `spec.url`.
    pub requests: Vec<Request>,
    /// Restrict the target's address to one IP version.
    pub family: Option<Family>,
    /// Certificates and keys for https://.
    pub tls: TlsOptions,
    /// This client's version, for the report and the User-Agent.
    pub version: String,
    /// Where each request's record goes, for `--format vegeta`.
    pub results: Option<ResultSink>,
    /// Its part in a run of several members (a run of its own by default).
    pub member: crate::run::member::MemberRun,
}

impl HttpOptions {
    /// Options for `spec`'s own request (its URL, method and headers) carrying `body`, over
    /// any IP version, with the system's trust store.
    pub fn single(spec: HttpSpec, body: Vec<u8>, version: &str) -> Result<Self, String> {
        let request = Request {
            method: spec.method.clone(),
            url: HttpUrl::parse(&spec.url)?,
            headers: spec.headers.clone(),
            body,
        };
        let tls = TlsOptions { insecure: spec.insecure, ..TlsOptions::default() };
        Ok(Self {
            spec,
            requests: vec![request],
            family: None,
            tls,
            version: version.into(),
            results: None,
            member: Default::default(),
        })
    }
}

/// Runs one HTTP load test (every step of a sweep) and returns its report.
pub async fn run(
    opts: HttpOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let spec = opts.spec.clone();
    let start_wall = SystemTime::now();
    let url = HttpUrl::parse(&spec.url).map_err(|m| ClientError::Local {
        context: "the URL".into(),
        cause: io::Error::new(io::ErrorKind::InvalidInput, m),
    })?;
    let (peer, remote, dns_ns, found) = reach(&opts, &url).await?;
    let set = Arc::new(RequestSet::new(opts.requests.clone(), spec.keepalive, &opts.version));
    let target = Target { peer: Arc::new(peer), url, set };
    let mut meta = crate::run::meta::run_meta(&opts.version, start_wall, remote);
    if let Some(path) = &spec.unix_socket {
        meta.remote_addr = Some(format!("unix:{path}"));
    }
    if let (Some(found), Some(addr)) = (&found, remote) {
        meta.notes.push(format!(
            "HTTP/3 at {addr} (UDP), as the Alt-Svc of {}'s answer over TCP says: {}",
            target.url.origin(),
            found.header
        ));
    }
    let _ = events
        .send(Event::Start { spec: TestSpec::Http(Box::new(spec.clone())), meta: meta.clone() });

    let rates: Vec<Option<f64>> =
        if spec.is_open() { spec.rates.iter().copied().map(Some).collect() } else { vec![None] };
    let run_begin = Instant::now();
    let mut intervals = Vec::new();
    let mut kept = opts.member.keep_histograms.then(EncodedHistograms::new);
    let mut steps = Vec::new();
    let mut interrupted = false;
    for rate in rates {
        let kept_intervals = kept.as_mut().map(|k| &mut k.intervals);
        let step = run_step(
            &opts,
            &target,
            rate,
            run_begin,
            (&mut intervals, kept_intervals),
            &events,
            &cancel,
        );
        let (figures, stopped) = step.await?;
        steps.push(figures);
        interrupted = stopped;
        if interrupted {
            break;
        }
    }

    let mut all = (Histograms::default(), Totals::default(), 0u64);
    for (_, _, h, t, ns) in &steps {
        all.0.add(h);
        all.1.add(t);
        all.2 += ns;
    }
    let single_rate = if steps.len() == 1 { steps[0].0 } else { None };
    let summary = summarize(&all.0, &all.1, all.2, single_rate, dns_ns);
    if summary.responses == 0 && !interrupted {
        if let Some(err) = nothing_answered(&all.1, remote, &spec) {
            return Err(err);
        }
    }
    if let Some(k) = &mut kept {
        keep_histograms(k, "", &all.0);
        if spec.rates.len() > 1 {
            for (j, (_, _, h, _, _)) in steps.iter().enumerate() {
                keep_histograms(k, &format!("step{j}."), h);
            }
        }
    }
    meta.histograms = kept;
    let steps = if spec.rates.len() > 1 {
        steps
            .iter()
            .map(|(rate, start_ns, h, t, ns)| HttpStep {
                rate: rate.unwrap_or(0.0),
                start_ns: *start_ns,
                summary: summarize(h, t, *ns, *rate, dns_ns),
            })
            .collect()
    } else {
        Vec::new()
    };
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    if all.1.late > 0 {
        meta.notes.push(format!(
            "{} requests were sent more than 1 ms after their scheduled time (no free connection, or the generator fell behind); their latency counts from the schedule",
            all.1.late
        ));
    }
    let report =
        Report { body: ReportBody::Http(HttpReport { spec, intervals, summary, steps }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// Keeps `h`'s histograms under their names, after `prefix` (a sweep's step).
fn keep_histograms(kept: &mut EncodedHistograms, prefix: &str, h: &Histograms) {
    for (name, part) in [
        ("total", &h.total),
        ("connect", &h.connect),
        ("tls", &h.tls),
        ("first_byte", &h.first_byte),
        ("queue", &h.queue),
    ] {
        kept.keep(&format!("{prefix}{name}"), part);
    }
}

/// What every step aims at: the peer, the URL and the requests.
struct Target {
    peer: Arc<Peer>,
    url: HttpUrl,
    set: Arc<RequestSet>,
}

/// One step's figures: its rate (open model), where its measurement began (from the run's
/// start), its histograms and totals after the warm-up, and how long that was.
type StepFigures = (Option<f64>, u64, Histograms, Totals, u64);

/// How to reach the server: its address (resolved once, timed: the breakdown's DNS figure)
/// or unix socket, with TLS when the URL asks for it; the remote address, the resolution's
/// nanoseconds, and with --alt-svc where the URL's answer said its HTTP/3 is.
async fn reach(
    opts: &HttpOptions,
    url: &HttpUrl,
) -> Result<(Peer, Option<std::net::SocketAddr>, u64, Option<super::alt_svc::Found>), ClientError> {
    let spec = &opts.spec;
    let resolving = Instant::now();
    let (addr, remote) = match &spec.unix_socket {
        Some(path) => {
            let addr = SockAddr::unix(path).map_err(ClientError::local("the unix socket path"))?;
            (addr, None)
        }
        None => {
            let a = handshake::resolve(&url.host, url.port, opts.family).await?[0];
            (SockAddr::from(a), Some(a))
        }
    };
    let dns_ns = if spec.unix_socket.is_some() { 0 } else { resolving.elapsed().as_nanos() as u64 };
    // --alt-svc: HTTP/3 goes where the URL's answer over TCP says.
    let (addr, remote, found) = match remote.filter(|_| spec.alt_svc) {
        Some(tcp) => {
            let timeout = std::time::Duration::from_nanos(spec.timeout_ns);
            let found = super::alt_svc::discover(url, tcp, &opts.tls, opts.family, timeout).await?;
            (SockAddr::from(found.addr), Some(found.addr), Some(found))
        }
        None => (addr, remote, None),
    };
    let tls = if url.secure {
        let alpn: &[&[u8]] = if spec.http3 {
            &[super::h3::ALPN]
        } else if spec.http2 {
            &[b"h2"]
        } else {
            &[b"http/1.1"]
        };
        let mut config = tls::client_config(&opts.tls, alpn).map_err(ClientError::local("TLS"))?;
        // 0-RTT: early data on the session tickets earlier connections of the run received.
        Arc::make_mut(&mut config).enable_early_data = spec.zero_rtt;
        let name = tls::server_name(&opts.tls, &url.host).map_err(ClientError::local("TLS"))?;
        Some((config, name))
    } else {
        None
    };
    Ok((Peer { addr, tls }, remote, dns_ns, found))
}

/// Runs one step (the whole test, or one rate of a sweep): starts its load, samples its
/// intervals on the shared clock until it ends, stops the load and closes the last interval.
/// Its figures, and whether the user interrupted it.
async fn run_step(
    opts: &HttpOptions,
    target: &Target,
    rate: Option<f64>,
    run_begin: Instant,
    (intervals, interval_histograms): (&mut Vec<HttpInterval>, Option<&mut Vec<String>>),
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Result<(StepFigures, bool), ClientError> {
    let spec = &opts.spec;
    let (peer, set, results) = (&target.peer, &target.set, opts.results.clone());
    let stripe = opts.member.stripe;
    let run = if spec.http3 {
        super::h3::start(spec, peer, &target.url, set, (rate, stripe), results)
    } else if spec.http2 {
        super::h2::start(spec, peer, &target.url, set, (rate, stripe), results)
    } else {
        super::shard::start(spec, peer, set, (rate, stripe), results)
    }
    .map_err(ClientError::local("starting threads"))?;
    let mut sampler = HttpSampler {
        counts: &run.counts,
        events,
        offset_ns: run.begin.duration_since(run_begin).as_nanos() as u64,
        total: Histograms::default(),
        intervals,
        interval_histograms,
        last: (0, Totals::default()),
        measured: (0, Totals::default()),
    };
    let timed = spec.count.is_none().then(|| spec.total_ns());
    let clock = Clock::new(spec.interval_ns, timed, spec.warmup_ns, Ending::Stop);
    let mut timers = Timers::start(clock, run.begin, false);
    let interrupted = intervals::drive(&mut sampler, &mut timers, cancel).await;
    let end = run.begin.elapsed().as_nanos() as u64;
    let stopper = run.stopper;
    let _ = tokio::task::spawn_blocking(move || stopper.stop()).await;
    let last = timers.clock().last(end);
    sampler.close(last.end_ns, last.omitted);
    let start_ns = sampler.offset_ns + spec.warmup_ns;
    Ok(((rate, start_ns, sampler.total, sampler.measured.1, sampler.measured.0), interrupted))
}

/// The error for a run in which no request got a response.
fn nothing_answered(
    t: &Totals,
    remote: Option<std::net::SocketAddr>,
    spec: &HttpSpec,
) -> Option<ClientError> {
    let Some((cause, n)) =
        Cause::ALL.iter().zip(t.errors).filter(|(_, n)| *n > 0).max_by_key(|(_, n)| *n)
    else {
        // Nothing failed either: every request was still waiting when the test ended.
        let cause = io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no response to any request within the test's {} (requests still waiting at \
                 the end are abandoned): the server is slow to answer, or the test too short",
                humantime_ns(spec.total_ns())
            ),
        );
        return Some(ClientError::Unreachable { target: target_name(remote, spec), cause });
    };
    let mut why = format!("no response to any request: {n} × {}", cause.name());
    if let Some(detail) = &t.tls_error {
        why.push_str(&format!(" ({detail})"));
    }
    Some(match cause {
        // It answered, but not in HTTP: the peer broke the protocol, not the connection.
        Cause::Invalid => {
            ClientError::Protocol(format!("{why}: the server's answers are not HTTP"))
        }
        Cause::Refused => {
            unanswered(remote, spec, io::Error::new(io::ErrorKind::ConnectionRefused, why))
        }
        Cause::ConnectTimeout | Cause::Unreachable | Cause::IdleTimeout => {
            unanswered(remote, spec, io::Error::other(why))
        }
        // Connected, then nothing usable came back.
        _ => ClientError::Unreachable {
            target: target_name(remote, spec),
            cause: io::Error::other(why),
        },
    })
}

fn target_name(remote: Option<std::net::SocketAddr>, spec: &HttpSpec) -> String {
    match remote {
        Some(addr) => addr.to_string(),
        None => format!("unix:{}", spec.unix_socket.as_deref().unwrap_or("")),
    }
}

/// The server (or unix socket) answered nothing, for `cause`.
fn unanswered(
    remote: Option<std::net::SocketAddr>,
    spec: &HttpSpec,
    cause: io::Error,
) -> ClientError {
    match remote {
        Some(addr) => ClientError::Connect { addr, cause },
        None => ClientError::Unreachable { target: target_name(remote, spec), cause },
    }
}

/// A span for a message: `1 s`, `250 ms`, `3 ms`.
fn humantime_ns(ns: u64) -> String {
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000_000) {
        format!("{} s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{} µs", ns / 1_000)
    }
}

/// The summary of what `h` and `t` hold over `ns` measured nanoseconds.
fn summarize(
    h: &Histograms,
    t: &Totals,
    ns: u64,
    target_rate: Option<f64>,
    dns_ns: u64,
) -> HttpSummary {
    let attempts = t.responses + t.error_total();
    let per_second = |n: u64| if ns == 0 { 0.0 } else { n as f64 * 1e9 / ns as f64 };
    HttpSummary {
        duration_ns: ns,
        responses: t.responses,
        succeeded: t.succeeded,
        success_ratio: if attempts == 0 { 0.0 } else { t.succeeded as f64 / attempts as f64 },
        status: t.status.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        errors: t.errors_by_name(),
        requests_per_second: per_second(t.responses),
        bytes_in: t.bytes_in,
        bytes_out: t.bytes_out,
        connections_opened: t.connections,
        latency: h.total.stats(),
        histogram: h.total.buckets(),
        target_rate,
        sent: t.sent,
        sent_per_second: per_second(t.sent),
        late: t.late,
        breakdown: HttpBreakdown {
            dns_ns,
            connect: h.connect.stats(),
            tls: h.tls.stats(),
            first_byte: h.first_byte.stats(),
            queue: h.queue.stats(),
        },
        early_data: t.early_data,
        early_data_accepted: t.early_data_accepted,
    }
}

/// Turns one step's thread counts into intervals and, after the warm-up, its totals.
struct HttpSampler<'a> {
    counts: &'a [Arc<ShardCounts>],
    events: &'a UnboundedSender<Event>,
    /// Where this step began, from the run's start (a sweep's intervals follow on).
    offset_ns: u64,
    total: Histograms,
    intervals: &'a mut Vec<HttpInterval>,
    /// Each interval's latency histogram, encoded, when the run keeps them (a member's).
    interval_histograms: Option<&'a mut Vec<String>>,
    last: (u64, Totals),
    measured: (u64, Totals),
}

impl Sampler for HttpSampler<'_> {
    fn close(&mut self, end_ns: u64, omitted: bool) {
        let mut h = Histograms::default();
        let mut now = Totals::default();
        for c in self.counts {
            let (histograms, totals) = c.take();
            h.add(&histograms);
            now.add(&totals);
        }
        let (start_ns, before) = (self.last.0, &self.last.1);
        let d = now.minus(before);
        let span = end_ns.saturating_sub(start_ns).max(1);
        if !omitted {
            self.total.add(&h);
            self.measured.0 += span;
            self.measured.1.add(&d);
        }
        let iv = HttpInterval {
            index: self.intervals.len() as u32,
            start_ns: self.offset_ns + start_ns,
            end_ns: self.offset_ns + end_ns,
            omitted,
            requests_per_second: d.responses as f64 * 1e9 / span as f64,
            responses: d.responses,
            errors: d.error_total(),
            sent: d.sent,
            late: d.late,
            latency: h.total.stats(),
        };
        if let Some(kept) = self.interval_histograms.as_mut() {
            kept.push(h.total.encode());
        }
        self.last = (end_ns, now);
        let _ = self.events.send(Event::HttpInterval(iv.clone()));
        self.intervals.push(iv);
    }

    fn finished(&self) -> bool {
        self.counts.iter().all(|c| c.done.load(Relaxed))
    }
}
