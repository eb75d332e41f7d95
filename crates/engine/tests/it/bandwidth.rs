//! Bandwidth tests against a real in-process server on loopback: every option, both address
//! families, and the accounting rules that must hold (bytes sent = bytes received for TCP,
//! UDP datagrams sent = received + lost, data flowing the way the direction says).

use wirespeed_model::kinds::bandwidth::{Direction, End, Flow};
use wirespeed_model::rules::Protocol;

use crate::common::{run, spec, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_upload_bytes_sent_equal_bytes_received_on_ipv4_and_ipv6() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let server = TestServer::start(bind, Default::default()).await;
        let r = run(server.opts(spec(Protocol::Tcp, 0.6))).await.unwrap();
        let t = &r.summary.primary.total;
        assert!(t.sent_bytes > 0, "{bind}: nothing sent");
        assert_eq!(t.sent_bytes, t.received_bytes, "{bind}");
        assert_eq!(r.summary.primary.sender, End::Client);
        assert!(t.retransmits.is_some() && t.rtt_ns.is_some(), "{bind}: TCP_INFO figures missing");
        let interval_sum: u64 = r.intervals.iter().map(|i| i.flows[0].total.received_bytes).sum();
        assert_eq!(interval_sum, t.received_bytes, "{bind}: intervals must add up to the total");
        assert!(r.summary.server_cpu.is_some());
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverse_and_bidir_move_data_the_right_way() {
    let server = TestServer::loopback().await;
    let mut s = spec(Protocol::Tcp, 0.5);
    s.direction = Direction::Download;
    let r = run(server.opts(s.clone())).await.unwrap();
    assert_eq!(r.summary.primary.flow, Flow::Download);
    assert_eq!(r.summary.primary.sender, End::Server);
    assert!(r.summary.reverse.is_none());
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
async fn byte_count_stops_at_exactly_n_bytes_each_way() {
    let server = TestServer::loopback().await;
    for direction in [Direction::Upload, Direction::Download, Direction::Bidir] {
        let mut s = spec(Protocol::Tcp, 0.0);
        s.bytes = Some(3 * 1024 * 1024 + 17);
        s.parallel = 3;
        s.direction = direction;
        let r = run(server.opts(s)).await.unwrap();
        for f in r.summary.flows() {
            assert_eq!(f.total.sent_bytes, 3 * 1024 * 1024 + 17, "{direction:?}");
            assert_eq!(f.total.received_bytes, 3 * 1024 * 1024 + 17, "{direction:?}");
        }
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_paced_rate_and_packet_accounting() {
    let server = TestServer::loopback().await;
    let mut s = spec(Protocol::Udp, 1.0);
    s.bitrate_bps = 50_000_000;
    s.length = 1200;
    let r = run(server.opts(s)).await.unwrap();
    let t = &r.summary.primary.total;
    let sent = t.sent_packets.unwrap();
    assert_eq!(t.sent_bytes, sent * 1200);
    assert_eq!(sent, t.received_packets.unwrap() + t.lost_packets.unwrap());
    // Pacing can only hold a stream back: the schedule allows rate × time plus the 50 ms of
    // debt it forgives, and never more, however busy the machine. How close a stream gets to
    // its rate is a benchmark's question (benches/bandwidth.toml, `udp-1400-1G`).
    let secs = r.summary.primary.duration_ns as f64 / 1e9;
    let allowed = 50e6 / 8.0 * (secs + 0.05) + 64.0 * 1200.0;
    assert!(sent > 0 && (t.sent_bytes as f64) <= allowed, "{} bytes in {secs} s", t.sent_bytes);
    assert!(t.jitter_ns.is_some() && t.loss_ratio.is_some());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_reverse_and_bidir_and_bytes() {
    let server = TestServer::loopback().await;
    let mut s = spec(Protocol::Udp, 0.5);
    s.bitrate_bps = 20_000_000;
    s.direction = Direction::Bidir;
    let r = run(server.opts(s.clone())).await.unwrap();
    for f in r.summary.flows() {
        assert!(f.total.received_packets.unwrap() > 0, "{:?} received nothing", f.flow);
        assert_eq!(
            f.total.sent_packets.unwrap(),
            f.total.received_packets.unwrap() + f.total.lost_packets.unwrap()
        );
    }
    s.direction = Direction::Download;
    s.bytes = Some(1400 * 1000);
    let r = run(server.opts(s)).await.unwrap();
    assert_eq!(r.summary.primary.total.sent_packets, Some(1000));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_options_omit_and_interval_are_honoured() {
    let server = TestServer::loopback().await;
    let mut s = spec(Protocol::Tcp, 1.0);
    s.omit_ns = 500_000_000;
    s.interval_ns = 500_000_000;
    s.window = Some(1 << 20);
    s.congestion = Some("reno".into());
    s.mss = Some(1400);
    s.no_delay = true;
    s.dscp = Some(46);
    s.zerocopy = true;
    s.length = 64 * 1024;
    s.bitrate_bps = 200_000_000;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report =
        wirespeed_engine::kinds::bandwidth::client::run(server.opts(s), tx, Default::default())
            .await
            .unwrap();
    assert!(report.meta.notes.is_empty(), "options rejected: {:?}", report.meta.notes);
    let wirespeed_model::ReportBody::Bandwidth(r) = report.body else { panic!("not bandwidth") };
    // 0.5 s warm-up + 1 s: three half-second intervals, the first omitted.
    assert_eq!(r.intervals.len(), 3);
    assert!(r.intervals[0].omitted && !r.intervals[1].omitted && !r.intervals[2].omitted);
    let t = &r.summary.primary.total;
    // Each end's warm-up ends at its own moment, so only whole-run totals match exactly.
    let all_sent: u64 = r.intervals.iter().map(|i| i.flows[0].total.sent_bytes).sum();
    let all_received: u64 = r.intervals.iter().map(|i| i.flows[0].total.received_bytes).sum();
    assert_eq!(all_sent, all_received);
    let measured: u64 = r.intervals[1..].iter().map(|i| i.flows[0].total.sent_bytes).sum();
    assert_eq!(measured, t.sent_bytes, "the summary leaves the warm-up out");
    let ratio = t.sent_bps / 200e6;
    // The pacer must hold the rate down; how close a loaded 2-core machine gets to it is a
    // benchmark's question (0.79 was seen with the suite running alongside), so the floor
    // only says the stream was not starved.
    assert!((0.5..=1.1).contains(&ratio), "paced TCP at {ratio:.3} of the target");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_clients_at_once_each_get_their_own_test() {
    let server = TestServer::loopback().await;
    let runs = (0..3).map(|i| {
        let mut s = spec(if i == 1 { Protocol::Udp } else { Protocol::Tcp }, 0.6);
        if i == 1 {
            s.bitrate_bps = 10_000_000;
        }
        run(server.opts(s))
    });
    for r in futures_join(runs).await {
        let r = r.unwrap();
        assert!(r.summary.primary.total.received_bytes > 0);
    }
    server.shutdown().await;
}

async fn futures_join<F: std::future::Future + Send + 'static>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send,
{
    let handles: Vec<_> = fs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// A low-rate UDP test used to lose its last datagram: the receiver left the drain at once
/// because the stream had been quiet since the datagram before, half a second earlier, and the
/// sender sent one more when told to stop, off the schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_rate_udp_loses_nothing_and_both_ends_agree() {
    let server = TestServer::loopback().await;
    for direction in [Direction::Upload, Direction::Download] {
        let mut s = spec(Protocol::Udp, 2.0);
        s.bitrate_bps = 20_000;
        s.direction = direction;
        let r = run(server.opts(s)).await.unwrap();
        let t = &r.summary.primary.total;
        assert_eq!(t.lost_packets, Some(0), "{direction:?}: {t:?}");
        assert_eq!(t.sent_packets, t.received_packets, "{direction:?}");
        // 20 kbit/s of 1400-byte datagrams for 2 s: 3.6 are due, the first at once.
        assert_eq!(t.sent_packets, Some(4), "{direction:?}: only datagrams that fell due");
        let ratio = t.sent_bps / t.received_bps;
        assert!((0.9..1.1).contains(&ratio), "{direction:?}: sender/receiver {ratio}");
    }
    server.shutdown().await;
}

/// Paced TCP with writes larger than the rate allows: 128 KiB at 1 kbit/s used to be sent at
/// once (1000× the rate), and 1 MiB at 1 Mbit/s sat seconds in the socket queue, counted as
/// sent, until the test aborted waiting for it or measured the receiver over 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_tcp_with_large_writes_sends_what_falls_due() {
    let server = TestServer::loopback().await;
    for (rate, length, direction) in [
        (1_000, 128 * 1024, Direction::Upload),
        (200_000, 256 * 1024, Direction::Upload),
        (1_000_000, 1 << 20, Direction::Upload),
        (1_000_000, 1 << 20, Direction::Download),
        (10_000_000, 2 << 20, Direction::Upload),
    ] {
        let mut s = spec(Protocol::Tcp, 1.0);
        s.bitrate_bps = rate;
        s.length = length;
        s.direction = direction;
        let r = run(server.opts(s)).await.unwrap_or_else(|e| panic!("{rate} {length}: {e}"));
        let t = &r.summary.primary.total;
        // A second's worth, and the piece (20 ms of the rate, 64 bytes at least) due at its end.
        let due = rate / 8 + (rate / 400).max(64);
        assert!(t.sent_bytes <= due, "{rate} bit/s, {length}-byte writes: sent {}", t.sent_bytes);
        assert_eq!(t.sent_bytes, t.received_bytes);
        let ratio = t.sent_bps / t.received_bps;
        assert!((0.9..1.1).contains(&ratio), "{rate} {length}: sender/receiver {ratio}");
    }
    server.shutdown().await;
}
