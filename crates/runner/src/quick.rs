//! `wirespeed quick`, the main job, as a library: a server, the HTTP and DNS fixtures and the
//! web speed test started in-process on loopback, and every test kind run against them in
//! turn. The binary renders the rows and saves the reports.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::bandwidth::client::ClientOptions;
use wirespeed_engine::kinds::cps::client::CpsOptions;
use wirespeed_engine::kinds::dns::client::DnsOptions;
use wirespeed_engine::kinds::dns::fixture::{self as dns_fixture, DnsListeners};
use wirespeed_engine::kinds::dns::queries::{builtin_lines, QuerySet};
use wirespeed_engine::kinds::http::client::HttpOptions;
use wirespeed_engine::kinds::http::fixture::{self, FixtureConfig};
use wirespeed_engine::kinds::http::fixture_h3;
use wirespeed_engine::kinds::latency::client::LatencyOptions;
use wirespeed_engine::kinds::ping::client::PingOptions;
use wirespeed_engine::kinds::rpm::{RpmOptions, Urls};
use wirespeed_engine::kinds::trace::client::TraceOptions;
use wirespeed_engine::kinds::Client;
use wirespeed_engine::net::handshake::Endpoint;
use wirespeed_engine::net::icmp::IcmpSocketKind;
use wirespeed_engine::server::{self, Listeners, ServerConfig};
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction};
use wirespeed_model::kinds::cps::CpsSpec;
use wirespeed_model::kinds::dns::DnsSpec;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::kinds::ping::{PingMode, PingSpec};
use wirespeed_model::kinds::rpm::RpmSpec;
use wirespeed_model::kinds::trace::{TraceProtocol, TraceSpec};
use wirespeed_model::rules::Protocol;
use wirespeed_proto::dns::zone::Zone;
use wirespeed_report::quick::QuickRow;
use wirespeed_web::limits::LimitConfig;
use wirespeed_web::{State, WebConfig};

/// The version the clients announce.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Starts the fixtures, runs every test of the plan against them in turn (until `cancel`
/// fires), stops them; one row per test run. A privilege this user lacks (raw sockets) skips
/// that test: it is not a failure.
pub async fn run(timing: Timing, cancel: &CancellationToken) -> Result<Vec<QuickRow>> {
    let fixtures = Fixtures::start()?;
    let mut rows = Vec::new();
    for (name, client) in plan(&fixtures, timing) {
        if cancel.is_cancelled() {
            break;
        }
        let (tx, _rx) = unbounded_channel();
        let outcome = match client {
            Ok(client) => wirespeed_engine::kinds::run(client, tx, cancel.clone()).await,
            Err(m) => Err(ClientError::Protocol(m)),
        };
        let skipped = matches!(
            &outcome,
            Err(ClientError::Local { cause, .. }) if cause.kind() == std::io::ErrorKind::PermissionDenied
        );
        let outcome = outcome.map_err(|e| e.to_string());
        rows.push(QuickRow { name: name.to_string(), outcome, skipped });
    }
    fixtures.stop().await;
    Ok(rows)
}

/// The loopback servers every test of `quick` runs against, started in-process.
struct Fixtures {
    /// The wirespeed server's port (bandwidth, latency, cps, UDP ping).
    server: u16,
    /// The HTTP fixture's port.
    http: u16,
    /// The DNS fixture's port.
    dns: u16,
    /// The web speed test's port.
    web: u16,
    /// Stops them all.
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Fixtures {
    /// Binds and starts the server, the HTTP and DNS fixtures and the web speed test on
    /// 127.0.0.1, each on a port of its own.
    fn start() -> Result<Self> {
        let loopback = [SocketAddr::from(([127, 0, 0, 1], 0))];
        let stop = CancellationToken::new();
        let listeners = Listeners::bind(&loopback).context("binding the in-process server")?;
        let server = listeners.local_addrs()[0].port();
        let http_listeners =
            Listeners::bind_tcp(&loopback, 0).context("binding the in-process HTTP fixture")?;
        let http = http_listeners[0].local_addr().context("the HTTP fixture's port")?.port();
        // HTTP/3 on the same port number, with a certificate made now (quick's client is the
        // only one, and trusts it: it is its own server).
        let (tls, _) = fixture_h3::identity(None).context("the HTTP fixture's certificate")?;
        let h3 = fixture_h3::endpoint(SocketAddr::from(([127, 0, 0, 1], http)), tls.clone())
            .context("binding the in-process HTTP fixture's HTTP/3")?;
        let http_config = FixtureConfig { h3: vec![h3], tls: Some(tls), ..Default::default() };
        let dns_listeners =
            DnsListeners::bind(&loopback, 1).context("binding the in-process DNS fixture")?;
        let dns = dns_listeners.local_addrs()[0].port();
        let web_listeners =
            Listeners::bind_tcp(&loopback, 0).context("binding the in-process web speed test")?;
        let web = web_listeners[0].local_addr().context("the web speed test's port")?.port();
        // Nothing saved and no budgets: quick is the operator's own test.
        let web_config = WebConfig {
            limits: LimitConfig { requests_per_minute: 0, bytes_per_hour: 0, streams: 0 },
            ..WebConfig::default()
        };
        let zone = Arc::new(Zone::generated(1000));
        // Their own errors end them; the tests that needed them then fail with the reason.
        let quiet = |f: std::io::Result<()>| drop(f);
        let (s, h, d) = (stop.clone(), stop.clone(), stop.clone());
        let tasks = vec![
            tokio::spawn(
                async move { quiet(server::run(listeners, ServerConfig::default(), s).await) },
            ),
            tokio::spawn(async move { quiet(fixture::run(http_listeners, http_config, h).await) }),
            tokio::spawn(async move { quiet(dns_fixture::run(dns_listeners, zone, d).await) }),
            tokio::spawn(wirespeed_web::run(web_listeners, State::new(web_config), stop.clone())),
        ];
        Ok(Self { server, http, dns, web, stop, tasks })
    }

    /// Stops every fixture and waits for it.
    async fn stop(self) {
        self.stop.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// How long each test runs and how often it reports.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Each test's length.
    pub duration_ns: u64,
    /// Its report interval.
    pub interval_ns: u64,
}

impl Timing {
    /// Tests of `duration`, reporting every second (more often when they are shorter).
    pub fn of(duration: Duration) -> Self {
        let duration_ns = duration.as_nanos() as u64;
        Self { duration_ns, interval_ns: duration_ns.clamp(100_000_000, 1_000_000_000) }
    }
}

/// The tests `quick` runs against `f`, with their names: every kind, each client resolved as
/// the command line would (or why it could not be).
fn plan(f: &Fixtures, t: Timing) -> Vec<(&'static str, Result<Client, String>)> {
    let endpoint = Endpoint {
        host: "127.0.0.1".into(),
        port: f.server,
        family: None,
        bind: None,
        token: None,
        connect_timeout: Duration::from_secs(5),
        version: VERSION.into(),
    };
    let bandwidth = |protocol, direction, bitrate_bps, length: Option<u32>| {
        let mut spec = BandwidthSpec::new("127.0.0.1", protocol);
        spec.direction = direction;
        spec.bitrate_bps = bitrate_bps;
        spec.length = length.unwrap_or(spec.length);
        // Small datagrams are `wirespeed pps`: one kernel packet each.
        spec.per_packet = length.is_some();
        spec.duration_ns = t.duration_ns;
        spec.interval_ns = t.interval_ns;
        // Latency under load beside every bandwidth row: bufferbloat shows in the table.
        let latency = true;
        Ok(Client::Bandwidth(ClientOptions { spec, endpoint: endpoint.clone(), latency }))
    };
    let latency = |protocol| {
        let mut spec = LatencySpec::new("127.0.0.1", protocol);
        spec.duration_ns = t.duration_ns;
        spec.interval_ns = t.interval_ns;
        Ok(Client::Latency(LatencyOptions {
            spec,
            endpoint: endpoint.clone(),
            member: Default::default(),
        }))
    };
    let (tcp, udp) = (Protocol::Tcp, Protocol::Udp);
    vec![
        ("TCP upload", bandwidth(tcp, Direction::Upload, 0, None)),
        ("TCP download", bandwidth(tcp, Direction::Download, 0, None)),
        ("TCP bidir", bandwidth(tcp, Direction::Bidir, 0, None)),
        ("QUIC upload", bandwidth(Protocol::Quic, Direction::Upload, 0, None)),
        // Paced, so the figure shows loss and jitter at a rate loopback can carry.
        ("UDP upload 1 Gbit/s", bandwidth(udp, Direction::Upload, 1_000_000_000, None)),
        // `wirespeed pps`: 64-byte datagrams as fast as they go.
        ("UDP 64 B packets", bandwidth(udp, Direction::Upload, 0, Some(64))),
        ("TCP latency", latency(tcp)),
        ("UDP latency", latency(udp)),
        ("TCP connections/s", Ok(connections(&endpoint, t))),
        ("UDP ping", Ok(udp_ping(&endpoint, t))),
        ("ICMP trace", Ok(icmp_trace(&endpoint))),
        ("HTTP/1.1 requests", http(f.http, t)),
        ("HTTP/3 requests", http3(f.http, t)),
        ("DNS queries (UDP)", dns(f.dns, t)),
        ("Web download (LibreSpeed)", web(f.web, false, t)),
        ("Web upload (LibreSpeed)", web(f.web, true, t)),
        ("Responsiveness (RPM)", Ok(responsiveness(f.web, t))),
    ]
}

/// New TCP connections per second with two connectors.
fn connections(endpoint: &Endpoint, t: Timing) -> Client {
    let mut spec = CpsSpec::new("127.0.0.1");
    spec.parallel = 2;
    spec.duration_ns = t.duration_ns;
    spec.interval_ns = t.interval_ns;
    Client::Cps(CpsOptions { spec, endpoint: endpoint.clone(), member: Default::default() })
}

/// UDP ping (echoed by the server), one probe every 10 ms.
fn udp_ping(endpoint: &Endpoint, t: Timing) -> Client {
    let mut spec = PingSpec::new("127.0.0.1", PingMode::Udp { port: endpoint.port });
    spec.interval_ns = 10_000_000;
    spec.count = Some((t.duration_ns / spec.interval_ns).clamp(1, 1000));
    let icmp_socket = IcmpSocketKind::Auto;
    Client::Ping(PingOptions { spec, endpoint: endpoint.clone(), icmp_socket })
}

/// ICMP trace to 127.0.0.1 (one hop), skipped without raw sockets.
fn icmp_trace(endpoint: &Endpoint) -> Client {
    let mut spec = TraceSpec::new("127.0.0.1", TraceProtocol::Icmp);
    spec.max_hops = 5;
    Client::Trace(TraceOptions { spec, endpoint: endpoint.clone() })
}

/// HTTP/1.1 load against the HTTP fixture, 10 keep-alive connections.
fn http(port: u16, t: Timing) -> Result<Client, String> {
    let mut spec = HttpSpec::new(format!("http://127.0.0.1:{port}/"));
    spec.duration_ns = t.duration_ns;
    spec.interval_ns = t.interval_ns;
    Ok(Client::Http(Box::new(HttpOptions::single(spec, Vec::new(), VERSION)?)))
}

/// HTTP/3 load against the HTTP fixture's QUIC side: 10 connections, 8 streams each.
fn http3(port: u16, t: Timing) -> Result<Client, String> {
    let mut spec = HttpSpec::new(format!("https://127.0.0.1:{port}/"));
    spec.http3 = true;
    spec.streams = 8;
    // The in-process fixture's certificate was made for this run; nothing else answers here.
    spec.insecure = true;
    spec.duration_ns = t.duration_ns;
    spec.interval_ns = t.interval_ns;
    Ok(Client::Http(Box::new(HttpOptions::single(spec, Vec::new(), VERSION)?)))
}

/// DNS queries over UDP against the DNS fixture, dnsperf's defaults.
fn dns(port: u16, t: Timing) -> Result<Client, String> {
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.duration_ns = Some(t.duration_ns);
    spec.interval_ns = t.interval_ns;
    spec.timeout_ns = 1_000_000_000;
    let lines = builtin_lines(1000);
    spec.queries = lines.len();
    let queries = Arc::new(QuerySet::from_lines(&lines, None)?);
    Ok(Client::Dns(Box::new(DnsOptions {
        spec,
        queries,
        family: None,
        tls: Default::default(),
        connect_timeout: Duration::from_secs(5),
        version: VERSION.into(),
        member: Default::default(),
    })))
}

/// The web speed test's LibreSpeed download (`garbage`) or upload (`empty`, 1 MiB POSTs)
/// endpoint, loaded as librespeed-cli does over 3 connections (downloads of 25 MiB rather
/// than its 100, so a short run on a slow machine completes some).
fn web(port: u16, upload: bool, t: Timing) -> Result<Client, String> {
    let (path, method, body) = if upload {
        ("backend/empty.php", "POST", vec![0x5a; 1 << 20])
    } else {
        ("backend/garbage.php?ckSize=25", "GET", Vec::new())
    };
    let mut spec = HttpSpec::new(format!("http://127.0.0.1:{port}/{path}"));
    spec.method = method.into();
    spec.body_bytes = body.len() as u64;
    spec.connections = 3;
    spec.threads = 1;
    spec.duration_ns = t.duration_ns;
    spec.interval_ns = t.interval_ns;
    Ok(Client::Http(Box::new(HttpOptions::single(spec, body, VERSION)?)))
}

/// The responsiveness test against the web speed test's configuration: download then upload,
/// intervals an eighth of one test, and each leg up to the test's length or 24 intervals (a leg
/// ends when it reaches working conditions). Working conditions take at least twice the moving
/// average less one (goodput's window, then responsiveness's judged at full load); on loopback
/// the download's goodput keeps rising for a second or more after its fourth connection, as
/// client and server warm up on the same cores. Legs ended at 8 to 19 intervals in 8 runs on
/// the 2-core CI machine; a cap of 12 left 2 quick runs in 6 "not reached".
fn responsiveness(port: u16, t: Timing) -> Client {
    let url = format!("http://127.0.0.1:{port}/.well-known/nq");
    let mut spec = RpmSpec::new(url.clone());
    spec.interval_ns = (t.duration_ns / 8).clamp(100_000_000, 1_000_000_000);
    // Four connections a leg, the ramp done by the fourth interval: on loopback each one more
    // moves the loaded latency, and with the draft's sixteen a leg this short would still be
    // ramping when it ends.
    spec.max_connections = 4;
    let intervals = 6 * u64::from(spec.moving_average);
    spec.leg_time_ns = t.duration_ns.max(spec.interval_ns * intervals);
    Client::Rpm(Box::new(RpmOptions {
        spec,
        urls: Urls::Config(url),
        tls: Default::default(),
        family: None,
        bind: None,
        allow_other_hosts: false,
        connect_timeout: Duration::from_secs(5),
        version: VERSION.into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which kind a client is; no arm for a kind means this fails to compile when one is
    /// added, so a new kind cannot be left out of `quick` unnoticed.
    fn kind(c: &Client) -> &'static str {
        match c {
            Client::Bandwidth(o) if o.spec.length < 100 => "pps",
            Client::Bandwidth(_) => "bandwidth",
            Client::Iperf3(_) => "iperf3",
            Client::Latency(_) => "latency",
            Client::Cps(_) => "cps",
            Client::Ping(_) => "ping",
            Client::Trace(_) => "trace",
            Client::Http(_) => "http",
            Client::Dns(_) => "dns",
            Client::Rpm(_) => "rpm",
        }
    }

    #[tokio::test]
    async fn the_plan_has_every_kind_and_each_resolves() {
        let f = Fixtures::start().unwrap();
        let planned = plan(&f, Timing::of(Duration::from_secs(1)));
        let mut kinds: Vec<&str> = planned
            .iter()
            .map(|(n, c)| kind(c.as_ref().unwrap_or_else(|e| panic!("{n}: {e}"))))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        // Every kind but iperf3's protocol, which needs a stock iperf3 server.
        assert_eq!(
            kinds,
            ["bandwidth", "cps", "dns", "http", "latency", "ping", "pps", "rpm", "trace"]
        );
        f.stop().await;
    }

    #[test]
    fn short_runs_report_more_often() {
        assert_eq!(Timing::of(Duration::from_secs(10)).interval_ns, 1_000_000_000);
        assert_eq!(Timing::of(Duration::from_millis(300)).interval_ns, 300_000_000);
        assert_eq!(Timing::of(Duration::from_millis(20)).interval_ns, 100_000_000);
    }
}
