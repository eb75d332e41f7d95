//! A server that has served good and bad clients holds no more sockets or threads than before.
//! Its own test binary, so no other test's sockets are counted.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::bandwidth::client as bandwidth;
use wirespeed_engine::kinds::cps::client::{self as cps, CpsOptions};
use wirespeed_engine::kinds::http::client::{self as http, HttpOptions};
use wirespeed_engine::kinds::latency::client::{self as latency, LatencyOptions};
use wirespeed_model::kinds::bandwidth::Direction;
use wirespeed_model::kinds::cps::CpsSpec;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::rules::Protocol;

use crate::common::{self, run, spec, TestServer};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_and_failed_tests_release_sockets_and_threads() {
    let server = TestServer::loopback().await;
    let (http_port, http_stop) = common::http_fixture().await;
    let (dns_port, dns_stop) = common::dns_fixture().await;
    still(&server).await; // warm up the runtime's own threads and descriptors
    let (fds, tasks) = (open_fds(), threads());
    http_runs(http_port).await;
    dns_runs(dns_port).await;
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        let mut s = spec(protocol, 0.3);
        s.direction = Direction::Bidir;
        s.parallel = 3;
        s.bitrate_bps = if protocol == Protocol::Udp { 10_000_000 } else { 0 };
        run(server.opts(s)).await.unwrap();
        // A latency test too: its echo threads and sockets must go as well.
        let mut l = LatencySpec::new("test", protocol);
        l.count = Some(300);
        l.parallel = 3;
        let endpoint = server.opts(spec(protocol, 0.1)).endpoint;
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = LatencyOptions { spec: l, endpoint, member: Default::default() };
        latency::run(opts, tx, CancellationToken::new()).await.unwrap();
    }
    // A cps test, finished, and one abandoned mid-run: connector threads and the server's
    // per-address counter must go.
    let mut c = CpsSpec::new("test");
    c.count = Some(300);
    c.parallel = 4;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let opts =
        CpsOptions { spec: c.clone(), endpoint: server.endpoint(), member: Default::default() };
    cps::run(opts.clone(), tx.clone(), CancellationToken::new()).await.unwrap();
    let cancel = CancellationToken::new();
    let mut long = opts;
    long.spec.count = None;
    let (long_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    drop(tx);
    let running = tokio::spawn(cps::run(long, long_tx, cancel.clone()));
    common::until_started(&mut events).await;
    cancel.cancel();
    running.await.unwrap().unwrap();
    for _ in 0..5 {
        let mut c = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        c.write_all(b"garbage that is not a preamble").await.unwrap();
    }
    // Stock iperf3 clients (separate processes, so their sockets are not counted here): a
    // finished TCP and UDP test, and one killed mid-test.
    for args in ["-t 1 --bidir -P 2", "-t 1 -u -b 10M --bidir -P 2"] {
        // A plain thread, joined: the runtime's blocking pool would keep an idle thread
        // alive for seconds and read as a leak.
        let mut cmd = stock_iperf3(server.addr, args);
        let waiter = std::thread::spawn(move || cmd.status());
        while !waiter.is_finished() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = waiter.join().unwrap().unwrap();
        assert!(status.success(), "iperf3 {args}");
    }
    // Killed once it reports its first interval, so it dies mid-test.
    let mut cmd = stock_iperf3(server.addr, "-t 5 -P 2 --forceflush");
    let mut killed = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let stdout = killed.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.contains(" sec "))
    });
    while !reader.is_finished() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reader.join().unwrap(), "iperf3 reported no interval");
    killed.kill().unwrap();
    killed.wait().unwrap();
    // An iperf3 cookie and then silence, and a truncated parameter frame.
    let mut c = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    c.write_all(b"abcdefghijklmnopqrstuvwxyz2345672345\0").await.unwrap();
    let mut t = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    t.write_all(b"abcdefghijklmnopqrstuvwxyz2345672346\0\0\0\0\x40{").await.unwrap();
    drop(t);
    drop(c);
    // A client that vanishes mid-test.
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let opts = server.opts(spec(Protocol::Tcp, 5.0));
    let abandoned = tokio::spawn(bandwidth::run(opts, tx, CancellationToken::new()));
    common::until_started(&mut events).await;
    abandoned.abort();
    let _ = abandoned.await;
    // Give the server a moment to notice the closed connections, then look. The wait outlasts
    // the 10 s that tokio keeps an idle blocking-pool thread (our clients open streams on it),
    // so only a real leak can fail this.
    let mut settled = false;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if open_fds() <= fds && threads() <= tasks {
            settled = true;
            break;
        }
    }
    assert!(settled, "fds {fds} -> {}, threads {tasks} -> {}", open_fds(), threads());
    still(&server).await;
    server.shutdown().await;
    http_stop.cancel();
    dns_stop.cancel();
}

/// DNS load over UDP (with the TCP retry client), TCP, to a refused port, and interrupted:
/// worker threads, sockets and the stream runtime must all go.
async fn dns_runs(port: u16) {
    use wirespeed_model::kinds::dns::{DnsSpec, DnsTransport};
    let lines = wirespeed_proto::dns::datafile::parse("big.example.test TXT\nwww.example.test A\n")
        .unwrap();
    for (transport, tc_retry) in [(DnsTransport::Udp, true), (DnsTransport::Tcp, false)] {
        let mut spec = DnsSpec::new("127.0.0.1", port);
        (spec.transport, spec.tc_retry, spec.passes, spec.clients) =
            (transport, tc_retry, Some(50), 3);
        let r = common::run_dns(common::dns_options(spec, &lines)).await;
        assert_eq!(r.summary.completed, 100);
    }
    let mut refused = DnsSpec::new("127.0.0.1", wirespeed_testkit::ports::free_port());
    refused.transport = DnsTransport::Tcp;
    assert_eq!(common::run_dns(common::dns_options(refused, &lines)).await.summary.completed, 0);
    let mut long = DnsSpec::new("127.0.0.1", port);
    long.duration_ns = Some(30_000_000_000);
    let opts = common::dns_options(long, &lines);
    let cancel = CancellationToken::new();
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let running = tokio::spawn(wirespeed_engine::kinds::dns::client::run(opts, tx, cancel.clone()));
    common::until_started(&mut events).await;
    cancel.cancel();
    running.await.unwrap().unwrap();
}

/// HTTP load in every shape, finished, failed and interrupted: its threads, sockets and the
/// HTTP/2 runtime must all go.
async fn http_runs(port: u16) {
    let url = format!("http://127.0.0.1:{port}/");
    let run_http = |spec: HttpSpec, cancel: CancellationToken| async move {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
        http::run(opts, tx, cancel).await
    };
    let start_http = |spec: HttpSpec, cancel: CancellationToken| {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
        (tokio::spawn(http::run(opts, tx, cancel)), events)
    };
    for (h2, rates) in [(false, vec![]), (false, vec![500.0]), (true, vec![]), (true, vec![500.0])]
    {
        let mut spec = HttpSpec::new(url.clone());
        (spec.http2, spec.rates, spec.count, spec.connections) = (h2, rates, Some(200), 4);
        run_http(spec, CancellationToken::new()).await.unwrap();
    }
    let refused =
        HttpSpec::new(format!("http://127.0.0.1:{}/", wirespeed_testkit::ports::free_port()));
    assert!(run_http(refused, CancellationToken::new()).await.is_err());
    let cancel = CancellationToken::new();
    let mut long = HttpSpec::new(url);
    long.rates = vec![1000.0];
    let (running, mut events) = start_http(long, cancel.clone());
    common::until_started(&mut events).await;
    cancel.cancel();
    running.await.unwrap().unwrap();
}

fn stock_iperf3(addr: std::net::SocketAddr, args: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new("iperf3");
    cmd.args(["-c", &addr.ip().to_string(), "-p", &addr.port().to_string()]);
    cmd.args(args.split_whitespace());
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    cmd
}

async fn still(server: &TestServer) {
    run(server.opts(spec(Protocol::Tcp, 0.2))).await.unwrap();
}
