//! The connections-per-second test against real listeners: the in-process wirespeed server
//! on 127.0.0.1 and ::1 (which counts what it accepted), Debian's nginx as an external
//! target, and sockets that refuse or never accept, for the failure causes.

use std::net::SocketAddr;
use std::time::Duration;

use socket2::{Domain, Socket, Type};
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::cps::client::{self, CpsOptions};
use wirespeed_engine::server::ServerConfig;
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::cps::{CpsReport, CpsSpec};
use wirespeed_model::ReportBody;
use wirespeed_testkit::nginx::Nginx;
use wirespeed_testkit::ports::free_port;

use crate::common::{self, endpoint, TestServer};

fn counted(n: u64, parallel: u16) -> CpsSpec {
    let mut s = CpsSpec::new("test");
    s.count = Some(n);
    s.parallel = parallel;
    s.interval_ns = 100_000_000;
    s
}

async fn run(spec: CpsSpec, addr: SocketAddr) -> Result<CpsReport, ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = CpsOptions { spec, endpoint: endpoint(addr), member: Default::default() };
    let report = client::run(opts, tx, CancellationToken::new()).await?;
    let ReportBody::Cps(c) = report.body else { panic!("not a cps report") };
    Ok(c)
}

/// The summary adds up: attempts are connections plus failures, the intervals carry every
/// connection, the histogram holds one sample per connection.
fn assert_consistent(r: &CpsReport) {
    let s = &r.summary;
    assert_eq!(s.attempts, s.connected + s.failures.total(), "{s:?}");
    let in_intervals: u64 = r.intervals.iter().map(|i| i.connected).sum();
    assert_eq!(in_intervals, s.connected);
    let in_histogram: u64 = s.histogram.iter().map(|b| b.count).sum();
    assert_eq!(in_histogram, s.connected);
    assert_eq!(s.connect.count, s.connected);
    if s.connected > 0 {
        assert!(s.connect.min_ns > 0 && s.connect.min_ns <= s.connect.p50_ns);
        assert!(s.connect.p50_ns <= s.connect.p99_ns && s.connect.p99_ns <= s.connect.max_ns);
        assert!(s.connections_per_second > 0.0);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_connection_is_counted_by_both_ends_on_both_families() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let server = TestServer::start(bind, ServerConfig::default()).await;
        for rst in [false, true] {
            let mut spec = counted(600, 3);
            spec.rst = rst;
            let r = run(spec, server.addr).await.expect("cps test");
            assert_consistent(&r);
            assert_eq!((r.summary.attempts, r.summary.connected), (600, 600), "{bind} rst {rst}");
            assert_eq!(r.summary.server_accepted, Some(600), "{bind} rst {rst}");
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_test_reports_intervals_and_its_warmup() {
    let server = TestServer::loopback().await;
    let mut spec = CpsSpec::new("test");
    // A measured window of 1.3 s: on a loaded machine a dropped SYN waits a second for its
    // retransmission, and a window shorter than that could hold no connection at all.
    spec.duration_ns = 1_500_000_000;
    spec.warmup_ns = 200_000_000;
    spec.interval_ns = 100_000_000;
    spec.parallel = 2;
    let r = run(spec, server.addr).await.expect("cps test");
    assert_consistent_after_warmup(&r);
    assert!(r.intervals.iter().any(|i| i.omitted), "no warm-up interval");
    assert!(r.intervals.len() >= 6, "{} intervals", r.intervals.len());
    // The server also counted the warm-up's connections.
    let all: u64 = r.intervals.iter().map(|i| i.connected).sum();
    let accepted = r.summary.server_accepted.unwrap();
    assert!(accepted >= all && accepted <= all + 2, "server {accepted}, client {all}");
    server.shutdown().await;
}

fn assert_consistent_after_warmup(r: &CpsReport) {
    let measured: u64 = r.intervals.iter().filter(|i| !i.omitted).map(|i| i.connected).sum();
    assert_eq!(measured, r.summary.connected);
    assert_eq!(r.summary.connect.count, r.summary.connected);
    assert!(r.summary.connected > 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn external_mode_measures_nginx_on_both_families() {
    let Some(nginx) = Nginx::start() else { return };
    for addr in [nginx.addr, SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, nginx.addr.port()))] {
        let mut spec = counted(500, 4);
        spec.external = true;
        let r = run(spec, addr).await.expect("cps against nginx");
        assert_consistent(&r);
        assert_eq!(r.summary.connected, 500, "{addr}");
        assert_eq!(r.summary.server_accepted, None);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_port_is_an_error_that_names_the_cause() {
    let port = free_port();
    let mut spec = counted(50, 1);
    spec.external = true;
    let err = run(spec, SocketAddr::from(([127, 0, 0, 1], port))).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ClientError::Connect { .. }), "{err:?}");
    assert!(text.contains("every one of 50 attempts failed (refused 50)"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listener_that_never_accepts_gives_timeouts_not_a_hang() {
    // A backlog of one that nobody accepts from: the first connections wait in the queue,
    // then the kernel drops further handshakes and the connects time out.
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    listener.listen(1).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let mut spec = counted(8, 1);
    spec.external = true;
    spec.rst = false;
    spec.timeout_ns = 200_000_000;
    let started = std::time::Instant::now();
    let r = run(spec, addr).await.expect("some connect");
    assert_consistent(&r);
    assert!(r.summary.connected >= 1, "{:?}", r.summary);
    assert!(r.summary.failures.timeout >= 1, "{:?}", r.summary.failures);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_refuses_a_second_cps_test_from_the_same_address() {
    let server = TestServer::loopback().await;
    let mut long = CpsSpec::new("test");
    long.duration_ns = 1_500_000_000;
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let opts =
        CpsOptions { spec: long, endpoint: endpoint(server.addr), member: Default::default() };
    let first = tokio::spawn(client::run(opts, tx, CancellationToken::new()));
    common::until_started(&mut events).await;
    let err = run(counted(10, 1), server.addr).await.unwrap_err();
    assert!(err.to_string().contains("already running"), "{err}");
    let r = first.await.unwrap().expect("the first test finishes");
    let ReportBody::Cps(r) = r.body else { panic!("not a cps report") };
    assert!(r.summary.connected > 0);
    server.shutdown().await;
}

/// Waits (bounded) until the host's TIME_WAIT table has room for `needed` more.
async fn until_time_wait_room(needed: u64) {
    let max: u64 = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_max_tw_buckets")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX);
    let in_use = || -> u64 {
        let stat = std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default();
        let tcp = stat.lines().find(|l| l.starts_with("TCP:")).unwrap_or("");
        let mut words = tcp.split_whitespace();
        words.find(|w| *w == "tw").and_then(|_| words.next()?.parse().ok()).unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while in_use().saturating_add(needed) > max {
        assert!(std::time::Instant::now() < deadline, "the TIME_WAIT table stayed full");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// TIME_WAIT sockets on this host's IPv4 loopback by which end of `port` holds them:
/// (the server's side, local port `port`; the clients' side, remote port `port`).
fn time_waits(port: u16) -> (usize, usize) {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let mut ends = (0, 0);
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 || f[3] != "06" {
            continue; // 06 is TIME_WAIT
        }
        let port_of = |a: &str| u16::from_str_radix(a.rsplit(':').next().unwrap_or(""), 16).ok();
        if port_of(f[1]) == Some(port) {
            ends.0 += 1;
        } else if port_of(f[2]) == Some(port) {
            ends.1 += 1;
        }
    }
    ends
}

/// In the default (FIN) mode the client closed first and kept every connection's TIME_WAIT,
/// so its local port range, not the server, capped the rate it measured. Against a wirespeed
/// server the server now closes first and the TIME_WAIT is its own.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_closes_first_and_keeps_the_time_wait() {
    // A full TIME_WAIT table (tcp_max_tw_buckets) makes the kernel drop new TIME_WAITs, and
    // the count below would read 0 for a reason that is not ours: wait for room first (the
    // other tests of the suite open many connections; TIME_WAIT lasts 60 s).
    until_time_wait_room(2000).await;
    let server = TestServer::loopback().await;
    let r = run(counted(2000, 4), server.addr).await.expect("cps test");
    assert_eq!((r.summary.connected, r.summary.server_accepted), (2000, Some(2000)));
    let (server_side, client_side) = time_waits(server.addr.port());
    assert!(server_side >= 1900, "server-side TIME_WAITs: {server_side}");
    assert!(client_side <= 20, "client-side TIME_WAITs: {client_side}");
    server.shutdown().await;
}
