//! Ping against real peers on loopback: ICMP to 127.0.0.1 and ::1, TCP connect and HTTP
//! first-byte probes against Debian's nginx, UDP echo from the in-process wirespeed server,
//! and the ways a probe fails: a closed port, a listener that never answers, one that
//! answers garbage, a server that is not a wirespeed server.

use std::io::{Read, Write};
use std::net::{Ipv6Addr, SocketAddr, TcpListener};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::ping::client::{self, PingOptions};
use wirespeed_engine::net::icmp::IcmpSocketKind;
use wirespeed_engine::server::ServerConfig;
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::ping::{PingMode, PingReport, PingSpec, ProbeOutcome};
use wirespeed_model::ReportBody;
use wirespeed_testkit::nginx::Nginx;
use wirespeed_testkit::ports::free_port;

use crate::common::{endpoint, TestServer};

fn spec(target: &str, mode: PingMode, count: u64) -> PingSpec {
    let mut s = PingSpec::new(target, mode);
    s.count = Some(count);
    s.interval_ns = 20_000_000;
    s.timeout_ns = 500_000_000;
    s
}

async fn run(spec: PingSpec, addr: SocketAddr) -> Result<PingReport, ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = PingOptions { spec, endpoint: endpoint(addr), icmp_socket: IcmpSocketKind::Auto };
    let report = client::run(opts, tx, CancellationToken::new()).await?;
    let ReportBody::Ping(p) = report.body else { panic!("not a ping report") };
    Ok(p)
}

/// Every probe is listed once, in order, and the summary adds up.
fn assert_consistent(r: &PingReport) {
    let s = &r.summary;
    let seqs: Vec<u64> = r.probes.iter().map(|p| p.seq).collect();
    assert_eq!(seqs, (1..=s.sent).collect::<Vec<_>>());
    let replies = r.probes.iter().filter(|p| matches!(p.outcome, ProbeOutcome::Reply { .. }));
    assert_eq!(replies.count() as u64, s.received);
    assert_eq!(s.rtt.count, s.received);
    let expected_loss = (s.sent - s.received) as f64 / s.sent as f64;
    assert!((s.loss_ratio - expected_loss).abs() < 1e-9);
}

fn all_replies(r: &PingReport, n: u64) {
    assert_consistent(r);
    assert_eq!((r.summary.sent, r.summary.received), (n, n), "{:?}", r.probes);
    assert!(r.summary.rtt.min_ns > 0 && r.summary.rtt.min_ns <= r.summary.rtt.max_ns);
}

#[tokio::test(flavor = "multi_thread")]
async fn icmp_echo_on_both_families() {
    for ip in ["127.0.0.1", "::1"] {
        let addr = SocketAddr::new(ip.parse().unwrap(), 0);
        let r = match run(spec(ip, PingMode::Icmp, 4), addr).await {
            Ok(r) => r,
            Err(e) if e.to_string().contains("not permitted") => {
                let remedy = "run as root, or allow ping sockets with \
                    `sysctl net.ipv4.ping_group_range='0 2147483647'`";
                wirespeed_testkit::skip::missing(&e.to_string(), remedy);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        all_replies(&r, 4);
        for p in &r.probes {
            let ProbeOutcome::Reply { bytes, ttl, .. } = p.outcome else { unreachable!() };
            // 56 bytes of payload and the 8-byte header; loopback TTL and hop limit are 64.
            assert_eq!((bytes, ttl), (Some(64), Some(64)), "{ip}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_and_http_probes_against_nginx() {
    let Some(nginx) = Nginx::start() else { return };
    let port = nginx.addr.port();
    let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, port));
    for addr in [nginx.addr, v6] {
        let r = run(spec(&addr.ip().to_string(), PingMode::Tcp { port }, 3), addr).await.unwrap();
        all_replies(&r, 3);
    }
    let url = format!("http://127.0.0.1:{port}/");
    let r = run(spec("127.0.0.1", PingMode::Http { url }, 3), nginx.addr).await.unwrap();
    all_replies(&r, 3);
    assert!(r
        .probes
        .iter()
        .all(|p| matches!(p.outcome, ProbeOutcome::Reply { status: Some(200), .. })));
    // A missing page is still an answer, with its status.
    let url = format!("http://[::1]:{port}/missing");
    let r = run(spec("::1", PingMode::Http { url }, 2), v6).await.unwrap();
    all_replies(&r, 2);
    assert!(matches!(r.probes[0].outcome, ProbeOutcome::Reply { status: Some(404), .. }));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_port_is_an_error_per_probe_not_a_reply() {
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let r = run(spec("127.0.0.1", PingMode::Tcp { port }, 3), addr).await.unwrap();
    assert_consistent(&r);
    assert_eq!((r.summary.received, r.summary.errors), (0, 3));
    assert!(
        matches!(&r.probes[0].outcome, ProbeOutcome::Error { reason } if reason == "connection refused")
    );
    let url = format!("http://127.0.0.1:{port}/");
    let r = run(spec("127.0.0.1", PingMode::Http { url }, 2), addr).await.unwrap();
    assert_eq!((r.summary.received, r.summary.errors), (0, 2));
}

#[tokio::test(flavor = "multi_thread")]
async fn http_probes_of_a_silent_and_a_garbage_server() {
    // Accepts, reads the request, never answers: each probe is lost after the timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for _ in 0..2 {
            kept.push(silent.accept().unwrap().0);
        }
        std::thread::sleep(Duration::from_millis(800));
    });
    let mut s = spec("127.0.0.1", PingMode::Http { url: format!("http://{silent_addr}/") }, 2);
    s.timeout_ns = 200_000_000;
    let r = run(s, silent_addr).await.unwrap();
    assert_consistent(&r);
    assert!(r.probes.iter().all(|p| p.outcome == ProbeOutcome::Lost), "{:?}", r.probes);
    held.join().unwrap();
    // Answers with something that is not HTTP: an error that says so.
    let garbage = TcpListener::bind("127.0.0.1:0").unwrap();
    let garbage_addr = garbage.local_addr().unwrap();
    let talker = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut c, _) = garbage.accept().unwrap();
            let mut buf = [0u8; 512];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
        }
    });
    let url = format!("http://{garbage_addr}/");
    let r = run(spec("127.0.0.1", PingMode::Http { url }, 2), garbage_addr).await.unwrap();
    assert_eq!(r.summary.errors, 2);
    assert!(
        matches!(&r.probes[0].outcome, ProbeOutcome::Error { reason } if reason.contains("not HTTP"))
    );
    talker.join().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn udp_echo_from_the_wirespeed_server_on_both_families() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let server = TestServer::start(bind, ServerConfig::default()).await;
        let mode = PingMode::Udp { port: server.addr.port() };
        let mut s = spec(&server.addr.ip().to_string(), mode, 5);
        s.size = 100;
        let r = run(s, server.addr).await.unwrap();
        all_replies(&r, 5);
        assert!(matches!(r.probes[0].outcome, ProbeOutcome::Reply { bytes: Some(100), .. }));
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn udp_ping_needs_a_wirespeed_server() {
    let Some(nginx) = Nginx::start() else { return };
    let mode = PingMode::Udp { port: nginx.addr.port() };
    let err = run(spec("127.0.0.1", mode, 2), nginx.addr).await.unwrap_err();
    // nginx answers the handshake with an HTTP error page: not our protocol.
    assert!(matches!(err, ClientError::Protocol(_) | ClientError::ServerGone(_)), "{err:?}");
}
