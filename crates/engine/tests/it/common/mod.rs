//! What the engine's tests share beyond `wirespeed-testkit`: a real wirespeed server in-process
//! on a loopback port, client options, the HTTP and DNS fixtures, and runs to their report.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::bandwidth::client::{self, ClientOptions};
use wirespeed_engine::net::handshake::Endpoint;
use wirespeed_engine::server::{self, Listeners, ServerConfig};
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::bandwidth::BandwidthReport;
use wirespeed_model::kinds::bandwidth::BandwidthSpec;
use wirespeed_model::rules::Protocol;
use wirespeed_model::Event;
use wirespeed_model::ReportBody;

/// A client endpoint for `addr`, with the defaults tests use.
pub(crate) fn endpoint(addr: SocketAddr) -> Endpoint {
    Endpoint {
        host: addr.ip().to_string(),
        port: addr.port(),
        family: None,
        bind: None,
        token: None,
        connect_timeout: Duration::from_secs(5),
        version: "test".into(),
    }
}

/// A running in-process server.
pub(crate) struct TestServer {
    pub addr: SocketAddr,
    pub stop: CancellationToken,
    pub task: JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    pub(crate) async fn start(bind: &str, config: ServerConfig) -> Self {
        let listeners = Listeners::bind(&[bind.parse().unwrap()]).unwrap();
        let addr = listeners.local_addrs()[0];
        let stop = CancellationToken::new();
        let task = tokio::spawn(server::run(listeners, config, stop.clone()));
        Self { addr, stop, task }
    }

    pub(crate) async fn loopback() -> Self {
        Self::start("127.0.0.1:0", ServerConfig::default()).await
    }

    pub(crate) async fn shutdown(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("server stops")
            .unwrap()
            .unwrap();
    }

    /// Client options for `spec` against this server.
    pub(crate) fn opts(&self, spec: BandwidthSpec) -> ClientOptions {
        ClientOptions { spec, endpoint: self.endpoint(), latency: false }
    }

    /// How a client reaches this server.
    pub(crate) fn endpoint(&self) -> Endpoint {
        endpoint(self.addr)
    }
}

/// A short spec: `secs` seconds (fractions allowed), 0.25 s intervals.
pub(crate) fn spec(protocol: Protocol, secs: f64) -> BandwidthSpec {
    let mut s = BandwidthSpec::new("test", protocol);
    s.duration_ns = (secs * 1e9) as u64;
    s.interval_ns = 250_000_000;
    s
}

/// Waits for a running test's first event, its `Start`: sent once the server accepted the test
/// and its streams are open, so the test is under way from then on. A readiness wait instead
/// of a sleep; bounded, so a test that never starts fails here.
pub(crate) async fn until_started(events: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) {
    let first = tokio::time::timeout(Duration::from_secs(60), events.recv()).await;
    assert!(matches!(first, Ok(Some(Event::Start { .. }))), "the test did not start: {first:?}");
}

/// Starts a test in the background and returns once it is under way (see [`until_started`]).
pub(crate) async fn start_test(
    opts: ClientOptions,
) -> JoinHandle<Result<BandwidthReport, ClientError>> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let test = tokio::spawn(async move {
        let report = client::run(opts, tx, CancellationToken::new()).await?;
        let ReportBody::Bandwidth(b) = report.body else { panic!("not a bandwidth report") };
        Ok(b)
    });
    until_started(&mut rx).await;
    test
}

pub(crate) async fn run(opts: ClientOptions) -> Result<BandwidthReport, ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = client::run(opts, tx, CancellationToken::new()).await?;
    let ReportBody::Bandwidth(b) = report.body else { panic!("not a bandwidth report") };
    Ok(b)
}

/// Bytes one TCP stream may have in flight when a test ends (the receiver never counts them):
/// at most the sender's and the receiver's socket buffers, whose autotuning ceilings are the
/// third fields of `tcp_wmem` and `tcp_rmem`.
pub(crate) fn tcp_in_flight_per_stream() -> u64 {
    let max_of = |name: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(2).and_then(|v| v.parse().ok()))
            .unwrap_or(32 << 20)
    };
    max_of("tcp_wmem") + max_of("tcp_rmem")
}

/// The built-in HTTP fixture on a free 127.0.0.1 port, with its default settings; cancel the
/// token to stop it.
pub(crate) async fn http_fixture() -> (u16, CancellationToken) {
    use wirespeed_engine::kinds::http::fixture::{self, FixtureConfig};
    let listeners = Listeners::bind_tcp(&[SocketAddr::from(([127, 0, 0, 1], 0))], 0).unwrap();
    let port = listeners[0].local_addr().unwrap().port();
    let stop = CancellationToken::new();
    tokio::spawn(fixture::run(listeners, FixtureConfig::default(), stop.clone()));
    (port, stop)
}

/// The built-in DNS fixture (UDP and TCP) on a free 127.0.0.1 port, serving the generated
/// zone with 1000 hosts; cancel the token to stop it.
pub(crate) async fn dns_fixture() -> (u16, CancellationToken) {
    use wirespeed_engine::kinds::dns::fixture::{self, DnsListeners};
    let listeners = DnsListeners::bind(&[SocketAddr::from(([127, 0, 0, 1], 0))], 1).unwrap();
    let port = listeners.local_addrs()[0].port();
    let stop = CancellationToken::new();
    let zone = std::sync::Arc::new(wirespeed_proto::dns::zone::Zone::generated(1000));
    tokio::spawn(fixture::run(listeners, zone, stop.clone()));
    (port, stop)
}

/// Options for a DNS test of `spec` sending `lines` (EDNS as the spec asks).
pub(crate) fn dns_options(
    spec: wirespeed_model::kinds::dns::DnsSpec,
    lines: &[wirespeed_proto::dns::datafile::QueryLine],
) -> wirespeed_engine::kinds::dns::client::DnsOptions {
    use wirespeed_proto::dns::wire::Edns;
    let edns = spec.edns_size.map(|udp_size| Edns { udp_size, dnssec_ok: spec.dnssec_ok });
    let queries = wirespeed_engine::kinds::dns::queries::QuerySet::from_lines(lines, edns).unwrap();
    let mut spec = spec;
    spec.queries = lines.len();
    wirespeed_engine::kinds::dns::client::DnsOptions {
        spec,
        queries: std::sync::Arc::new(queries),
        family: None,
        tls: Default::default(),
        connect_timeout: Duration::from_secs(2),
        version: "test".into(),
        member: Default::default(),
    }
}

/// Runs a DNS test to its end and returns its report.
pub(crate) async fn run_dns(
    opts: wirespeed_engine::kinds::dns::client::DnsOptions,
) -> wirespeed_model::kinds::dns::DnsReport {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = wirespeed_engine::kinds::dns::client::run(opts, tx, CancellationToken::new())
        .await
        .expect("the DNS test runs");
    let ReportBody::Dns(d) = report.body else { panic!("not a DNS report") };
    d
}

/// How many answers of `r` had the response code named `name`.
pub(crate) fn rcode(r: &wirespeed_model::kinds::dns::DnsReport, name: &str) -> u64 {
    r.summary.rcodes.iter().find(|c| c.name == name).map_or(0, |c| c.count)
}
