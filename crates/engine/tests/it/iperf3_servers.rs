//! Our iperf3-compatible client against a stock `iperf3 -s`, each test once with Debian's 3.12
//! and once with upstream's 3.21+ (`wirespeed_testkit::iperf3`; scripts/test.sh installs both):
//! each option, with the stock server's own JSON (`-s -1 -J`) as the
//! cross-check that both ends agree on what moved.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::bandwidth::client::ClientOptions;
use wirespeed_engine::kinds::bandwidth::iperf3_client;
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::bandwidth::BandwidthReport;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction, End};
use wirespeed_model::rules::Protocol;
use wirespeed_model::ReportBody;

use crate::common::{self, tcp_in_flight_per_stream};

/// A stock iperf3 server for one test (`-1`), printing its JSON report when done.
struct StockServer {
    addr: SocketAddr,
    child: Option<Child>,
}

impl StockServer {
    fn start(iperf3: &str) -> Self {
        // A free port: bind, note it, release it for iperf3.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(iperf3)
            .args(["-s", "-1", "-J", "-B", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 is installed (scripts/test.sh installs it)");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        // Owned at once, so a panic below still kills and reaps it (Drop).
        let server = Self { addr, child: Some(child) };
        // Wait until it listens, without connecting (a connection would be its one test).
        let hex = format!("0100007F:{port:04X}");
        for _ in 0..200 {
            let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
            if tcp.lines().any(|l| l.contains(&hex) && l.split_whitespace().nth(3) == Some("0A")) {
                return server;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("iperf3 -s did not start listening on {addr}");
    }

    /// Waits for the one test to end and returns the server's JSON.
    fn report(mut self) -> Value {
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("iperf3 -s JSON ({e}): {}", String::from_utf8_lossy(&out.stdout))
        })
    }
}

impl Drop for StockServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn opts(addr: SocketAddr, spec: BandwidthSpec) -> ClientOptions {
    ClientOptions { spec, endpoint: common::endpoint(addr), latency: false }
}

async fn run(addr: SocketAddr, spec: BandwidthSpec) -> Result<BandwidthReport, ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = iperf3_client::run(opts(addr, spec), tx, CancellationToken::new()).await?;
    let ReportBody::Bandwidth(b) = report.body else { panic!("not a bandwidth report") };
    Ok(b)
}

/// Runs `spec` against a fresh stock server; returns our report and the server's JSON.
async fn against_stock(iperf3: &str, spec: BandwidthSpec) -> (BandwidthReport, Value) {
    let server = StockServer::start(iperf3);
    let report = run(server.addr, spec).await.expect("test against iperf3 -s");
    let json = tokio::task::spawn_blocking(move || server.report()).await.unwrap();
    (report, json)
}

fn spec(protocol: Protocol, secs: u64) -> BandwidthSpec {
    let mut s = BandwidthSpec::new("stock", protocol);
    s.duration_ns = secs * 1_000_000_000;
    s.interval_ns = 500_000_000;
    s
}

/// Both ends agree. TCP: received ≤ sent within what was in flight, and what the stock
/// server measured itself (its JSON's streams, by the `sender` flag of each) equals the server
/// side of our summary. UDP: loss is no more than what was sent.
fn assert_agrees(report: &BandwidthReport, server: &Value) {
    let s = &report.summary;
    let flows: Vec<_> = std::iter::once(&s.primary).chain(s.reverse.as_ref()).collect();
    let tcp = report.spec.protocol == Protocol::Tcp;
    // A threaded iperf3 (3.16+) may write a stream's last block and leave it out of its count,
    // both of what it says it sent and of the JSON it prints (`wirespeed_testkit::iperf3`).
    let version = server["start"]["version"].as_str().unwrap_or_default();
    let block = wirespeed_testkit::iperf3::unsaid(version, u64::from(report.spec.length));
    for f in &flows {
        let t = &f.total;
        assert!(t.received_bytes > 0, "{f:?}");
        if tcp {
            let slack = u64::from(report.spec.parallel) * tcp_in_flight_per_stream();
            // With a warm-up each end starts counting at its own moment (the server's clock
            // starts when it sends TEST_START, ours when we read it), so either may be ahead by
            // what moves in that gap: allowed up to 5 % of the bytes on top of what was in flight.
            let unsaid = u64::from(report.spec.parallel) * block;
            let ok = if report.spec.omit_ns > 0 {
                t.received_bytes.abs_diff(t.sent_bytes) <= slack + unsaid + t.sent_bytes / 20
            } else {
                t.received_bytes <= t.sent_bytes + unsaid
                    && t.sent_bytes.saturating_sub(t.received_bytes) <= slack
            };
            assert!(ok, "{f:?}");
        } else {
            assert!(t.lost_packets.unwrap() <= t.sent_packets.unwrap(), "{f:?}");
        }
    }
    if !tcp {
        return;
    }
    let streams = server["end"]["streams"].as_array().expect("server streams");
    let measured = |sending: bool| -> u64 {
        streams
            .iter()
            .filter(|st| st["sender"]["sender"].as_bool() == Some(sending))
            .map(|st| st[if sending { "sender" } else { "receiver" }]["bytes"].as_u64().unwrap())
            .sum()
    };
    let ours = |server_sends: bool| -> u64 {
        flows
            .iter()
            .filter(|f| (f.sender == End::Server) == server_sends)
            .map(|f| if server_sends { f.total.sent_bytes } else { f.total.received_bytes })
            .sum()
    };
    // Exactly what the server's own JSON says, or for a threaded iperf3 within a block per
    // stream: it may count a stream's last block in the results it sends us and not in the
    // JSON it prints, or the other way round.
    let unsaid = streams.len() as u64 * block;
    let (sent, said_sent) = (ours(true), measured(true));
    assert!(
        sent.abs_diff(said_sent) <= unsaid,
        "server-sent bytes {sent} vs {said_sent}: {}",
        server["end"]
    );
    let (received, said_received) = (ours(false), measured(false));
    assert!(
        received.abs_diff(said_received) <= unsaid,
        "server-received bytes {received} vs {said_received}: {}",
        server["end"]
    );
}

async fn tcp_upload_download_and_bidir(iperf3: &'static str) {
    let (r, json) = against_stock(iperf3, spec(Protocol::Tcp, 1)).await;
    assert_eq!(r.summary.primary.sender, End::Client);
    assert!(r.intervals.iter().all(|iv| iv.measured_at == Some(End::Client)));
    assert_agrees(&r, &json);

    let mut s = spec(Protocol::Tcp, 1);
    s.direction = Direction::Download;
    let (r, json) = against_stock(iperf3, s).await;
    assert_eq!(r.summary.primary.sender, End::Server);
    assert!(r.summary.primary.total.retransmits.is_some(), "the server's retransmits arrive");
    assert_agrees(&r, &json);

    let mut s = spec(Protocol::Tcp, 1);
    s.direction = Direction::Bidir;
    s.parallel = 2;
    let (r, json) = against_stock(iperf3, s).await;
    assert!(r.summary.reverse.is_some());
    assert_agrees(&r, &json);
}

async fn tcp_options_bytes_and_warm_up(iperf3: &'static str) {
    let mut s = spec(Protocol::Tcp, 1);
    s.parallel = 4;
    s.length = 32 * 1024;
    s.window = Some(1 << 20);
    s.congestion = Some("cubic".into());
    s.no_delay = true;
    s.mss = Some(1300);
    let (r, json) = against_stock(iperf3, s).await;
    assert_eq!(r.summary.primary.streams.len(), 4);
    assert_eq!(json["start"]["test_start"]["num_streams"], 4);
    assert_eq!(json["start"]["test_start"]["blksize"], 32 * 1024);
    assert_agrees(&r, &json);

    let mut s = spec(Protocol::Tcp, 0);
    s.bytes = Some(50 << 20);
    let (r, json) = against_stock(iperf3, s).await;
    assert_eq!(r.summary.primary.total.sent_bytes, 50 << 20);
    assert_agrees(&r, &json);

    let mut s = spec(Protocol::Tcp, 1);
    s.omit_ns = 1_000_000_000;
    s.zerocopy = true;
    let (r, json) = against_stock(iperf3, s).await;
    assert!(r.intervals.iter().any(|iv| iv.omitted));
    assert_agrees(&r, &json);
}

async fn udp_paced_every_direction(iperf3: &'static str) {
    for direction in [Direction::Upload, Direction::Download, Direction::Bidir] {
        let mut s = spec(Protocol::Udp, 1);
        s.bitrate_bps = 50_000_000;
        s.direction = direction;
        s.parallel = 2;
        let (r, json) = against_stock(iperf3, s).await;
        assert!(json["end"]["sum"]["packets"].as_u64().unwrap() > 0, "{json}");
        assert_agrees(&r, &json);
        // Paced: nowhere near unlimited, and most of the target arrived.
        let rate = r.summary.primary.total.received_bps;
        assert!(rate > 50e6 && rate < 150e6, "{direction:?}: {rate}");
    }
    // With a warm-up, iperf3's datagram counts include it and ours leave it out; the summary
    // must still pair like with like.
    for direction in [Direction::Upload, Direction::Download] {
        let mut s = spec(Protocol::Udp, 2);
        s.bitrate_bps = 20_000_000;
        s.omit_ns = 1_000_000_000;
        s.direction = direction;
        let (r, json) = against_stock(iperf3, s).await;
        assert_agrees(&r, &json);
        let t = &r.summary.primary.total;
        let (sent, received) = (t.sent_packets.unwrap(), t.received_packets.unwrap());
        // Datagrams sent after the receiver stopped counting are neither received nor lost.
        let slack = 2 + sent / 50;
        assert!(
            sent.abs_diff(received) <= slack,
            "{direction:?}: {sent} sent, {received} received"
        );
    }
}

async fn a_busy_or_absent_server_is_a_clear_error(iperf3: &'static str) {
    // Nothing listening.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let err = run(addr, spec(Protocol::Tcp, 1)).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");

    // A stock server refuses a second client while one runs.
    let server = StockServer::start(iperf3);
    let addr = server.addr;
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let first_opts = opts(addr, spec(Protocol::Tcp, 2));
    let first = tokio::spawn(iperf3_client::run(first_opts, tx, CancellationToken::new()));
    common::until_started(&mut events).await;
    let err = run(addr, spec(Protocol::Tcp, 1)).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Refused { .. }) && err.to_string().contains("busy"),
        "{err}"
    );
    first.await.unwrap().expect("the first test finishes");
    drop(server);

    // Our token is not iperf3's authentication.
    let mut o = opts(addr, spec(Protocol::Tcp, 1));
    o.endpoint.token = Some("x".into());
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = iperf3_client::run(o, tx, CancellationToken::new()).await.unwrap_err();
    assert!(err.to_string().contains("RSA"), "{err}");
}

wirespeed_testkit::each_iperf3!(
    tcp_upload_download_and_bidir,
    tcp_options_bytes_and_warm_up,
    udp_paced_every_direction,
    a_busy_or_absent_server_is_a_clear_error,
);
