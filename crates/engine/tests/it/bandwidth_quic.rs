//! `bandwidth --quic` against a real in-process server on loopback: QUIC connections over the
//! sockets the UDP hellos opened, the accounting that must hold (every byte written arrives,
//! the `-n` budget exactly), each direction, parallel connections, the congestion controllers,
//! and the path figures QUIC keeps (RTT, congestion window, lost packets).

use wirespeed_model::kinds::bandwidth::{Direction, End, Flow};
use wirespeed_model::rules::Protocol;

use crate::common::{run, spec, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_byte_written_arrives_each_way_on_ipv4_and_ipv6() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let server = TestServer::start(bind, Default::default()).await;
        let r = run(server.opts(spec(Protocol::Quic, 0.6))).await.unwrap();
        let t = &r.summary.primary.total;
        assert!(t.received_bytes > 0, "{bind}: nothing arrived");
        assert_eq!(t.sent_bytes, t.received_bytes, "{bind}");
        assert_eq!(r.summary.primary.sender, End::Client);
        // The sender's connection: a smoothed RTT and a congestion window, as TCP_INFO gives.
        assert!(t.rtt_ns.is_some_and(|r| r > 0), "{bind}: no QUIC RTT: {t:?}");
        assert!(t.cwnd_bytes.is_some_and(|c| c > 0), "{bind}: no congestion window: {t:?}");
        let interval_sum: u64 = r.intervals.iter().map(|i| i.flows[0].total.received_bytes).sum();
        assert_eq!(interval_sum, t.received_bytes, "{bind}: intervals must add up to the total");
        assert!(r.summary.server_cpu.is_some_and(|c| c.total_ratio > 0.0));
        assert!(r.summary.client_cpu.total_ratio > 0.0);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverse_and_bidir_with_parallel_connections() {
    let server = TestServer::loopback().await;
    let mut s = spec(Protocol::Quic, 0.5);
    s.direction = Direction::Download;
    let r = run(server.opts(s.clone())).await.unwrap();
    assert_eq!((r.summary.primary.flow, r.summary.primary.sender), (Flow::Download, End::Server));
    let t = &r.summary.primary.total;
    assert!(t.received_bytes > 0);
    assert_eq!(t.sent_bytes, t.received_bytes);

    s.direction = Direction::Bidir;
    s.parallel = 2;
    let r = run(server.opts(s)).await.unwrap();
    let flows: Vec<_> = r.summary.flows().map(|f| (f.flow, f.sender)).collect();
    assert_eq!(flows, vec![(Flow::Upload, End::Client), (Flow::Download, End::Server)]);
    for f in r.summary.flows() {
        assert_eq!(f.streams.len(), 2);
        assert!(f.streams.iter().all(|s| s.figures.received_bytes > 0), "every stream moves data");
        assert_eq!(f.total.sent_bytes, f.total.received_bytes);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_byte_count_moves_exactly_that_many_bytes() {
    let server = TestServer::loopback().await;
    for direction in [Direction::Upload, Direction::Download] {
        let mut s = spec(Protocol::Quic, 0.0);
        s.bytes = Some(5 * 1024 * 1024 + 3);
        s.parallel = 2;
        s.direction = direction;
        let r = run(server.opts(s)).await.unwrap();
        let t = &r.summary.primary.total;
        assert_eq!((t.sent_bytes, t.received_bytes), (5 * 1024 * 1024 + 3, 5 * 1024 * 1024 + 3));
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_congestion_controller_runs_and_a_paced_rate_holds() {
    let server = TestServer::loopback().await;
    for cc in ["newreno", "cubic", "bbr"] {
        let mut s = spec(Protocol::Quic, 0.4);
        s.congestion = Some(cc.into());
        let r = run(server.opts(s)).await.unwrap();
        let t = &r.summary.primary.total;
        assert!(t.received_bytes > 0 && t.sent_bytes == t.received_bytes, "{cc}: {t:?}");
    }
    // Pacing can only hold a stream back: a second's worth of 40 Mbit/s and the piece due at
    // its end, never more however busy the machine; every byte of it arrives.
    let mut s = spec(Protocol::Quic, 1.0);
    s.bitrate_bps = 40_000_000;
    let r = run(server.opts(s)).await.unwrap();
    let t = &r.summary.primary.total;
    let due = 40_000_000 / 8 + 40_000_000 / 400;
    assert!(t.sent_bytes > 0 && t.sent_bytes <= due, "a paced QUIC stream sent {}", t.sent_bytes);
    assert_eq!(t.sent_bytes, t.received_bytes);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spec_refuses_what_quic_has_no_use_for() {
    let server = TestServer::loopback().await;
    let mut s = spec(Protocol::Quic, 0.3);
    s.congestion = Some("vegas".into());
    let e = run(server.opts(s)).await.unwrap_err().to_string();
    assert!(e.contains("vegas"), "{e}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_streams_on_one_connection_each_way_and_by_the_byte() {
    let server = TestServer::loopback().await;
    for direction in [Direction::Upload, Direction::Download] {
        let mut s = spec(Protocol::Quic, 0.4);
        s.quic_streams = 4;
        s.direction = direction;
        let r = run(server.opts(s)).await.unwrap();
        let t = &r.summary.primary.total;
        assert!(t.received_bytes > 0 && t.sent_bytes == t.received_bytes, "{direction:?}: {t:?}");
    }
    // A budget smaller than one write per stream: the streams left without data still end.
    let mut s = spec(Protocol::Quic, 0.0);
    s.quic_streams = 8;
    s.length = 1000;
    s.bytes = Some(2500);
    let r = run(server.opts(s)).await.unwrap();
    let t = &r.summary.primary.total;
    assert_eq!((t.sent_bytes, t.received_bytes), (2500, 2500));
    server.shutdown().await;
}
