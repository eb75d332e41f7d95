//! The HTTP load generator (closed model, HTTP/1.1) against real servers: Debian's nginx and
//! the built-in fixture, on both families; and the ways requests fail, each counted by cause:
//! a closed port, a server that hangs up or resets, one that answers garbage, one too slow.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::http::client::{self, HttpOptions};
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::http::{HttpReport, HttpSpec};
use wirespeed_model::ReportBody;
use wirespeed_testkit::nginx::Nginx;
use wirespeed_testkit::ports::free_port;

use crate::common;

fn counted(url: String, n: u64, connections: u16) -> HttpSpec {
    let mut s = HttpSpec::new(url);
    s.count = Some(n);
    s.connections = connections;
    s.interval_ns = 100_000_000;
    s
}

async fn run(spec: HttpSpec) -> Result<HttpReport, ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
    let report = client::run(opts, tx, CancellationToken::new()).await?;
    let ReportBody::Http(h) = report.body else { panic!("not an http report") };
    Ok(h)
}

/// The summary adds up: intervals carry every response, the histogram one sample each.
fn assert_consistent(r: &HttpReport) {
    let s = &r.summary;
    assert_eq!(r.intervals.iter().map(|i| i.responses).sum::<u64>(), s.responses);
    assert_eq!(s.status.values().sum::<u64>(), s.responses);
    assert_eq!(s.latency.count, s.responses);
    assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), s.responses);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_is_answered_by_nginx_on_both_families() {
    let Some(nginx) = Nginx::start() else { return };
    let port = nginx.addr.port();
    for url in [format!("http://127.0.0.1:{port}/"), format!("http://[::1]:{port}/")] {
        let r = run(counted(url.clone(), 800, 4)).await.unwrap();
        assert_consistent(&r);
        let s = &r.summary;
        assert_eq!(
            (s.responses, s.succeeded, s.status.get("200")),
            (800, 800, Some(&800)),
            "{url}"
        );
        assert!(s.errors.is_empty(), "{url}: {:?}", s.errors);
        assert!(s.bytes_in >= 800 * 615, "{url}");
        assert!(s.connections_opened >= 4 && s.connections_opened < 800, "{url}: keep-alive");
    }
    // A connection per request.
    let mut spec = counted(format!("http://127.0.0.1:{port}/"), 200, 2);
    spec.keepalive = false;
    let r = run(spec).await.unwrap();
    assert_eq!((r.summary.responses, r.summary.connections_opened), (200, 200));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fixture_sizes_statuses_and_a_timed_run() {
    let (port, stop) = common::http_fixture().await;
    let r = run(counted(format!("http://127.0.0.1:{port}/?size=300K"), 100, 3)).await.unwrap();
    assert_consistent(&r);
    assert_eq!(r.summary.responses, 100);
    assert!(r.summary.bytes_in >= 100 * 300 * 1024);
    let r = run(counted(format!("http://127.0.0.1:{port}/?status=503"), 50, 2)).await.unwrap();
    assert_eq!((r.summary.status.get("503"), r.summary.succeeded), (Some(&50), 0));
    assert_eq!(r.summary.success_ratio, 0.0);
    let mut timed = HttpSpec::new(format!("http://127.0.0.1:{port}/"));
    timed.duration_ns = 400_000_000;
    timed.warmup_ns = 100_000_000;
    timed.interval_ns = 100_000_000;
    timed.connections = 4;
    timed.threads = 2;
    let r = run(timed).await.unwrap();
    assert!(r.intervals.iter().any(|i| i.omitted));
    let measured: u64 = r.intervals.iter().filter(|i| !i.omitted).map(|i| i.responses).sum();
    assert_eq!(measured, r.summary.responses);
    assert!(r.summary.responses > 0);
    stop.cancel();
}

/// A raw listener that answers each connection with `reply` (after reading the request), or
/// resets it when `reply` is `RST`.
fn raw_server(
    reply: &'static [u8],
    connections: usize,
) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        for _ in 0..connections {
            let Ok((mut c, _)) = l.accept() else { return };
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            if reply == b"RST" {
                let _ = socket2::SockRef::from(&c).set_linger(Some(Duration::ZERO));
                continue;
            }
            let _ = c.write_all(reply);
        }
    });
    (addr, t)
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_counted_by_cause() {
    // A closed port: nothing at all, an error naming the cause.
    let err = run(counted(format!("http://127.0.0.1:{}/", free_port()), 5, 1)).await.unwrap_err();
    assert!(err.to_string().contains("connection refused"), "{err}");
    // Garbage, a hang-up mid-head, and an oversized head: counted, and the run goes on.
    let huge: &'static [u8] = Box::leak(
        [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &vec![b'a'; 70_000], b"\r\n\r\n"]
            .concat()
            .into_boxed_slice(),
    );
    for (reply, cause) in [
        (b"SSH-2.0-OpenSSH_9.2\r\n\r\n".as_slice(), "invalid response"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort".as_slice(),
            "closed before the response ended",
        ),
        (huge, "invalid response"),
        (b"RST".as_slice(), "connection reset"),
    ] {
        let (addr, server) = raw_server(reply, 3);
        let err = run(counted(format!("http://{addr}/"), 3, 1)).await.unwrap_err();
        assert!(err.to_string().contains(cause), "{cause}: {err}");
        server.join().unwrap();
    }
    // Too slow: each request times out, and the run still ends.
    let (port, stop) = common::http_fixture().await;
    let mut slow = counted(format!("http://127.0.0.1:{port}/?delay=5s"), 2, 2);
    slow.timeout_ns = 200_000_000;
    let started = std::time::Instant::now();
    let err = run(slow).await.unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    stop.cancel();
}

/// Interim responses (100 Continue, 103 Early Hints) were taken for invalid ones; RFC 9110
/// §15.2 says a client skips them and reads the final response that follows.
#[tokio::test(flavor = "multi_thread")]
async fn interim_responses_are_skipped() {
    let reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    let (addr, server) = raw_server(reply, 4);
    let r = run(counted(format!("http://{addr}/"), 4, 1)).await.unwrap();
    assert_eq!((r.summary.responses, r.summary.status.get("200")), (4, Some(&4)));
    assert!(r.summary.errors.is_empty(), "{:?}", r.summary.errors);
    server.join().unwrap();
}
