//! The responsiveness test (`wirespeed rpm`): the client side of draft-ietf-ippm-responsiveness
//! against any server that publishes its configuration (Apple's, Cloudflare's, a self-hosted
//! wirespeed `web`): the configuration read, idle latency from probes on new connections,
//! then each leg under load (`leg`, its figures and rules in `tally`) over HTTP/2 connections ([`conn`], `load`). Its server
//! half is not here but in `wirespeed_web::responsiveness`, on `wirespeed web`'s listener
//! (see the crate's documentation).

pub mod conn;
mod leg;
mod load;
mod tally;

use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime};

use rustls_pki_types::ServerName;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::rpm::{
    grade, rating, responsiveness, RpmInterval, RpmLeg, RpmReport, RpmSpec, RpmSummary,
};
use wirespeed_model::{Event, Report, ReportBody, TestSpec};
use wirespeed_proto::http_url::HttpUrl;

use crate::error::ClientError;
use crate::net::handshake::{resolve, Family};
use crate::net::tls::{client_config, TlsOptions};

pub use conn::Config;

/// Largest configuration document read.
const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// What the configuration is read over: any HTTP the server offers (the test itself needs h2).
const CONFIG_ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];

/// Where a responsiveness test's URLs come from.
#[derive(Debug, Clone)]
pub enum Urls {
    /// A configuration document at this URL.
    Config(String),
    /// Given directly.
    Given(Config),
}

/// A responsiveness test to run.
#[derive(Debug, Clone)]
pub struct RpmOptions {
    /// What to run.
    pub spec: RpmSpec,
    /// Where the load and probes go.
    pub urls: Urls,
    /// TLS settings for `https://` URLs.
    pub tls: TlsOptions,
    /// Restrict to one IP version.
    pub family: Option<Family>,
    /// Local address to send from.
    pub bind: Option<IpAddr>,
    /// Accept a configuration whose URLs name another host than the configuration's own.
    pub allow_other_hosts: bool,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// This client's version.
    pub version: String,
}

/// Runs a responsiveness test; each interval goes to `events` as it ends.
pub async fn run(
    opts: RpmOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let start_wall = SystemTime::now();
    let test_start = Instant::now();
    let mut spec = opts.spec.clone();
    spec.target = HttpUrl::redacted(&spec.target);
    let config = match &opts.urls {
        Urls::Given(c) => c.clone(),
        Urls::Config(url) => fetch_config(url, &opts).await?,
    };
    let urls = TestUrls::parse(&config)?;
    let server = server_for(&urls.small, &opts, &[b"h2"]).await?;
    let mut meta = crate::run::meta::run_meta(&opts.version, start_wall, Some(server.addr));
    let _ = events
        .send(Event::Start { spec: TestSpec::Rpm(Box::new(spec.clone())), meta: meta.clone() });

    let idle = idle(&spec, &server, &urls.small, &cancel, &mut meta.notes).await?;
    let legs = run_legs(&spec, &server, &urls, test_start, &events, &cancel).await;
    meta.notes.extend(legs.notes);
    if cancel.is_cancelled() {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    let summary = summarize(&config, idle, legs.legs);
    if !summary.working_conditions && !cancel.is_cancelled() && legs.failure.is_none() {
        let which: Vec<&str> = summary
            .legs
            .iter()
            .filter(|l| !l.working_conditions)
            .map(|l| l.direction.name())
            .collect();
        meta.notes.push(format!(
            "working conditions not reached ({} leg): goodput or responsiveness still varied \
             by more than {:.0} % at the time limit; the RPM is the last interval's",
            which.join(", "),
            spec.stability * 100.0
        ));
    }
    let intervals = legs.intervals;
    let report = Report { body: ReportBody::Rpm(RpmReport { spec, intervals, summary }), meta };
    if let Some(cause) = legs.failure {
        return Err(ClientError::partial(report, cause));
    }
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// The three URLs a test uses, parsed, on one server.
struct TestUrls {
    large: HttpUrl,
    small: HttpUrl,
    upload: HttpUrl,
}

impl TestUrls {
    /// `config`'s URLs, which must all be on one server.
    fn parse(config: &Config) -> Result<Self, ClientError> {
        let parse = |what: &str, u: &str| {
            HttpUrl::parse(u).map_err(|e| ClientError::Protocol(format!("the {what} URL {e}")))
        };
        let urls = Self {
            large: parse("large", &config.large)?,
            small: parse("small", &config.small)?,
            upload: parse("upload", &config.upload)?,
        };
        let (large, small, upload) =
            (urls.large.origin(), urls.small.origin(), urls.upload.origin());
        if large != small || large != upload {
            return Err(ClientError::Protocol(format!(
                "the configuration's URLs are on more than one server ({large}, {small}, \
                 {upload}); a responsiveness test loads and probes one"
            )));
        }
        Ok(urls)
    }
}

/// The idle latency: new connections one after another, nothing else on the path.
struct Idle {
    /// The TCP handshakes.
    handshakes: RttHistogram,
    /// Idle, a request on a new connection stands for one on a loaded one.
    rpm: Option<f64>,
}

/// Measures the idle latency; a first probe that fails ends the test, a later one is noted.
async fn idle(
    spec: &RpmSpec,
    server: &conn::Server,
    small: &HttpUrl,
    cancel: &CancellationToken,
    notes: &mut Vec<String>,
) -> Result<Idle, ClientError> {
    let (mut handshakes, mut probes) = (RttHistogram::default(), Vec::new());
    for _ in 0..spec.idle_probes {
        if cancel.is_cancelled() {
            break;
        }
        match conn::foreign_probe(server, small).await {
            Ok(f) => {
                handshakes.record(f.phases.tcp_ns);
                probes.push(f);
            }
            Err(why) if probes.is_empty() => return Err(first_failure(server, why)),
            Err(why) => notes.push(format!("an idle probe failed: {why}")),
        }
    }
    let http: Vec<u64> = probes.iter().map(|f| f.http_ns).collect();
    let rpm = responsiveness(&tally::probe_times(&probes, &http, spec.trim));
    Ok(Idle { handshakes, rpm })
}

/// What the legs measured: a server lost mid-test ends the test, and what was measured
/// before is kept.
struct Legs {
    legs: Vec<RpmLeg>,
    intervals: Vec<RpmInterval>,
    notes: Vec<String>,
    failure: Option<ClientError>,
}

/// Runs the spec's legs in turn.
async fn run_legs(
    spec: &RpmSpec,
    server: &conn::Server,
    urls: &TestUrls,
    test_start: Instant,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Legs {
    let mut out =
        Legs { legs: Vec::new(), intervals: Vec::new(), notes: Vec::new(), failure: None };
    for &direction in spec.mode.legs() {
        if cancel.is_cancelled() {
            break;
        }
        let (large, small, upload) = (&urls.large, &urls.small, &urls.upload);
        let plan = leg::LegPlan { spec, server, large, small, upload, direction, test_start };
        let leg::LegOutcome { leg, intervals, server_lost } = leg::run(plan, events, cancel).await;
        let why = leg.last_failure.clone().unwrap_or_else(|| "?".into());
        let moved = intervals.iter().any(|i| i.download_bytes + i.upload_bytes > 0);
        if !moved && leg.failures > 0 {
            out.failure = Some(ClientError::ServerGone(format!(
                "the {} leg's load never moved a byte: {why}",
                direction.name()
            )));
            break;
        }
        if leg.failures > 0 {
            out.notes.push(format!(
                "{} leg: {} load connections or probes failed (last: {why})",
                direction.name(),
                leg.failures,
            ));
        }
        if server_lost {
            out.failure = Some(ClientError::ServerGone(format!(
                "nothing answered for an interval of the {} leg: {why}",
                direction.name(),
            )));
        }
        out.legs.push(leg);
        out.intervals.extend(intervals);
        if out.failure.is_some() {
            break;
        }
    }
    out
}

/// The test's summary from its idle latency and its legs.
fn summarize(config: &Config, idle: Idle, legs: Vec<RpmLeg>) -> RpmSummary {
    let working_conditions = !legs.is_empty() && legs.iter().all(|l| l.working_conditions);
    let rpm = legs.iter().filter_map(|l| l.rpm).reduce(f64::min);
    let idle_stats = idle.handshakes.stats();
    // Loaded latency at working conditions: the last window's self probes, from which the
    // RPM was computed (the leg's whole distribution includes the ramp, before the queue is full).
    let added_latency_ns = legs
        .iter()
        .map(|l| (l.times.self_ns as u64).saturating_sub(idle_stats.p50_ns))
        .max()
        .unwrap_or(0);
    RpmSummary {
        large_url: HttpUrl::redacted(&config.large),
        small_url: HttpUrl::redacted(&config.small),
        upload_url: HttpUrl::redacted(&config.upload),
        protocol: "HTTP/2".into(),
        idle: idle_stats,
        idle_rpm: idle.rpm,
        legs,
        rpm,
        working_conditions,
        added_latency_ns,
        grade: grade(added_latency_ns).into(),
        rating: rating(rpm).into(),
    }
}

/// How the first request's failure begins when a plain server refused the HTTP/2 preface.
const H2C_REFUSALS: [&str; 3] = ["request failed", "connection closed", "answer cut short"];

/// The error for the first connection of a test that failed.
fn first_failure(server: &conn::Server, why: String) -> ClientError {
    if why.starts_with("cannot connect") || why.contains("timed out") {
        ClientError::Connect { addr: server.addr, cause: std::io::Error::other(why) }
    } else if server.tls.is_none() && H2C_REFUSALS.iter().any(|start| why.starts_with(start)) {
        // Prior knowledge is refused only at the first request, by an HTTP/1 answer to the
        // preface; the connection itself was made. Which step sees the refusal is a race: the
        // server's answer and close can come before the request is sent (the connection is
        // already closed), while it is sent, or while its answer is read.
        ClientError::Protocol(format!(
            "the server does not speak HTTP/2 with prior knowledge (h2c), which a test of an \
             http:// URL needs: {why}"
        ))
    } else {
        ClientError::Protocol(why)
    }
}

/// The server `url` names: resolved, with its TLS settings.
async fn server_for(
    url: &HttpUrl,
    opts: &RpmOptions,
    alpn: &[&[u8]],
) -> Result<conn::Server, ClientError> {
    let addr = resolve(&url.host, url.port, opts.family).await?[0];
    let tls = if url.secure {
        let config = client_config(&opts.tls, alpn).map_err(ClientError::local("TLS"))?;
        let name = opts.tls.server_name.clone().unwrap_or_else(|| url.host.clone());
        let name = ServerName::try_from(name.clone()).map_err(|e| {
            ClientError::Protocol(format!("'{name}' is not a TLS server name: {e}"))
        })?;
        Some((config, name))
    } else {
        None
    };
    Ok(conn::Server { addr, tls, origin: url.origin(), connect_timeout: opts.connect_timeout })
}

/// Fetches and reads the configuration at `url` (over HTTP/1.1 or HTTP/2, as a browser would);
/// its URLs must name the same host unless
/// `allow_other_hosts` (a configuration is someone else's document: it must not turn this
/// test's load on a third party unasked).
async fn fetch_config(url: &str, opts: &RpmOptions) -> Result<Config, ClientError> {
    let at = HttpUrl::parse(url).map_err(ClientError::Protocol)?;
    let server = server_for(&at, opts, CONFIG_ALPN).await?;
    let fetched = conn::get_document(&server, &at.path, MAX_CONFIG_BYTES);
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), fetched)
        .await
        .map_err(|_| ClientError::ServerGone(format!("no configuration from {url} within 10 s")))?
        .map_err(|why| match why.starts_with("cannot connect") || why.contains("timed out") {
            true => first_failure(&server, why),
            false => ClientError::Protocol(format!("fetching the configuration {url}: {why}")),
        })?;
    if status != hyper::StatusCode::OK {
        return Err(ClientError::Protocol(format!(
            "the configuration {url} answered {status}: is this a responsiveness server?"
        )));
    }
    let config = Config::parse(&body).map_err(ClientError::Protocol)?;
    if !opts.allow_other_hosts {
        for u in [&config.large, &config.small, &config.upload] {
            let parsed = HttpUrl::parse(u).map_err(ClientError::Protocol)?;
            if parsed.host != at.host {
                return Err(ClientError::Protocol(format!(
                    "the configuration at {url} sends the test to another host ({u}); pass \
                     --allow-other-hosts to follow it"
                )));
            }
        }
    }
    Ok(config)
}
