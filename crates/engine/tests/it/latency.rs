//! The latency test against a real in-process server on 127.0.0.1 and ::1.

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::latency::client::{self, LatencyOptions};
use wirespeed_model::kinds::latency::{LatencyReport, LatencySpec};
use wirespeed_model::rules::Protocol;
use wirespeed_model::ReportBody;

use crate::common::TestServer;

fn opts(server: &TestServer, spec: LatencySpec) -> LatencyOptions {
    LatencyOptions { spec, endpoint: server.endpoint(), member: Default::default() }
}

async fn run(o: LatencyOptions) -> LatencyReport {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = client::run(o, tx, CancellationToken::new()).await.expect("latency test");
    let ReportBody::Latency(l) = report.body else { panic!("not a latency report") };
    l
}

fn counted(protocol: Protocol, n: u64) -> LatencySpec {
    let mut s = LatencySpec::new("test", protocol);
    s.count = Some(n);
    s.interval_ns = 250_000_000;
    s
}

/// The summary's statistics are ordered, and its histogram holds every round trip.
fn assert_consistent(r: &LatencyReport) {
    let s = &r.summary.rtt;
    assert!(s.count > 0, "{s:?}");
    assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns, "{s:?}");
    assert!(s.p99_ns <= s.p9999_ns && s.p9999_ns <= s.max_ns, "{s:?}");
    let in_histogram: u64 = r.summary.histogram.iter().map(|b| b.count).sum();
    assert_eq!(in_histogram, r.summary.received);
    assert_eq!(s.count, r.summary.received);
    let in_intervals: u64 = r.intervals.iter().map(|iv| iv.rtt.count).sum();
    assert_eq!(in_intervals, r.summary.received, "no warm-up: intervals add up to the summary");
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_and_udp_round_trips_on_both_families() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let server = TestServer::start(bind, Default::default()).await;
        let r = run(opts(&server, counted(Protocol::Tcp, 2000))).await;
        assert_eq!((r.summary.sent, r.summary.received), (2000, 2000));
        assert_consistent(&r);
        let r = run(opts(&server, counted(Protocol::Udp, 2000))).await;
        assert_eq!(r.summary.sent, 2000);
        assert_eq!(r.summary.received + r.summary.lost.unwrap(), 2000);
        assert_consistent(&r);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_large_messages_fixed_rate_and_time() {
    let server = TestServer::loopback().await;
    let mut s = counted(Protocol::Tcp, 3000);
    s.parallel = 4;
    s.length = 32 * 1024;
    let r = run(opts(&server, s)).await;
    assert_eq!(r.summary.received, 3000);
    assert_consistent(&r);

    // Open model: 400 messages at 2000/s take 0.2 s and all arrive.
    let mut s = counted(Protocol::Udp, 400);
    s.rate = Some(2000.0);
    let r = run(opts(&server, s)).await;
    assert_eq!(r.summary.received + r.summary.lost.unwrap(), 400);

    // Timed, with a warm-up interval left out of the summary.
    let mut s = LatencySpec::new("test", Protocol::Tcp);
    s.duration_ns = 500_000_000;
    s.warmup_ns = 250_000_000;
    s.interval_ns = 250_000_000;
    let r = run(opts(&server, s)).await;
    assert!(r.intervals[0].omitted && !r.intervals.last().unwrap().omitted);
    let measured: u64 = r.intervals.iter().filter(|iv| !iv.omitted).map(|iv| iv.rtt.count).sum();
    assert_eq!(measured, r.summary.received);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn quic_round_trips_closed_and_open_on_both_families() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let server = TestServer::start(bind, Default::default()).await;
        // Closed model, parallel connections, messages larger than a datagram: each one is
        // echoed whole on its stream, and none is lost (QUIC retransmits).
        let mut s = counted(Protocol::Quic, 2000);
        s.parallel = 2;
        s.length = 4000;
        let r = run(opts(&server, s)).await;
        assert_eq!((r.summary.sent, r.summary.received, r.summary.lost), (2000, 2000, None));
        assert_consistent(&r);
        // Open model: 300 messages at 1000/s.
        let mut s = counted(Protocol::Quic, 300);
        s.rate = Some(1000.0);
        let r = run(opts(&server, s)).await;
        assert_eq!(r.summary.received, 300);
        assert_consistent(&r);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn quic_has_no_external_echo_service() {
    let server = TestServer::loopback().await;
    let mut s = counted(Protocol::Quic, 10);
    s.external = true;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let e = client::run(opts(&server, s), tx, CancellationToken::new()).await.unwrap_err();
    assert!(e.to_string().contains("not QUIC"), "{e}");
    server.shutdown().await;
}
