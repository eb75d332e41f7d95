//! The HTTP fixture (`wirespeed server --http`) against a real client, Debian's curl: both
//! families, HTTP/1.1 and h2c, every query parameter, bad ones, uploads, and a shutdown that
//! lets a request in flight finish.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::http::fixture::{self, FixtureConfig};
use wirespeed_engine::server::Listeners;

struct Fixture {
    port: u16,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start() -> Fixture {
    let addrs = [SocketAddr::from(([127, 0, 0, 1], 0))];
    let mut listeners = Listeners::bind_tcp(&addrs, 0).unwrap();
    let port = listeners[0].local_addr().unwrap().port();
    listeners.extend(Listeners::bind_tcp(&[format!("[::1]:{port}").parse().unwrap()], 0).unwrap());
    let stop = CancellationToken::new();
    let task = tokio::spawn(fixture::run(listeners, FixtureConfig::default(), stop.clone()));
    Fixture { port, stop, task }
}

/// curl's status code, body size and HTTP version for `url`.
async fn curl(args: Vec<String>) -> Option<(u16, u64, String)> {
    tokio::task::spawn_blocking(move || {
        let Ok(out) = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{http_version}"])
            .args(&args)
            .output()
        else {
            return None;
        };
        let text = String::from_utf8(out.stdout).unwrap();
        let mut parts = text.split(' ');
        let code = parts.next()?.parse().ok()?;
        let size = parts.next()?.parse().ok()?;
        Some((code, size, parts.next()?.to_string()))
    })
    .await
    .unwrap()
}

fn have_curl() -> bool {
    let ok = Command::new("curl").arg("--version").output().is_ok();
    if !ok {
        wirespeed_testkit::skip::not_installed("curl", "curl");
    }
    ok
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_as_asked_on_both_families_and_both_protocols() {
    if !have_curl() {
        return;
    }
    let f = start().await;
    let url = |host: &str, q: &str| format!("http://{host}:{}/any/path{q}", f.port);
    let got = curl(vec![url("127.0.0.1", "")]).await.unwrap();
    assert_eq!(got, (200, 615, "1.1".into()));
    let got = curl(vec!["--http2-prior-knowledge".into(), url("[::1]", "")]).await.unwrap();
    assert_eq!(got, (200, 615, "2".into()));
    let got = curl(vec![url("[::1]", "?size=3M&status=503")]).await.unwrap();
    assert_eq!((got.0, got.1), (503, 3 << 20));
    let got = curl(vec![url("127.0.0.1", "?size=0")]).await.unwrap();
    assert_eq!((got.0, got.1), (200, 0));
    // The delay is at least what was asked (an upper bound would be a timing assertion).
    let started = Instant::now();
    let got = curl(vec![url("127.0.0.1", "?delay=200ms")]).await.unwrap();
    assert_eq!(got.0, 200);
    assert!(started.elapsed() >= Duration::from_millis(200));
    // Bad parameters: 400, for each.
    for q in ["?size=lots", "?status=99", "?delay=1h"] {
        assert_eq!(curl(vec![url("127.0.0.1", q)]).await.unwrap().0, 400, "{q}");
    }
    // An upload is read to its end.
    let post = vec![
        "-X".into(),
        "POST".into(),
        "--data-binary".into(),
        "@/etc/services".into(),
        url("127.0.0.1", ""),
    ];
    assert_eq!(curl(post).await.unwrap().0, 200);
    f.stop.cancel();
    f.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_lets_a_request_in_flight_finish() {
    if !have_curl() {
        return;
    }
    let f = start().await;
    let slow = tokio::spawn(curl(vec![format!("http://127.0.0.1:{}/?delay=500ms", f.port)]));
    // In flight: the fixture has accepted the connection and read the request.
    wirespeed_testkit::ready::until_read_everything(f.port, 1).await;
    f.stop.cancel();
    assert_eq!(slow.await.unwrap().unwrap().0, 200);
    tokio::time::timeout(Duration::from_secs(5), f.task).await.expect("stops").unwrap().unwrap();
}

/// Slow or partial request heads (slowloris) used to be held open for ever: 20 connections
/// sending one header line a second were still open after 70 s.
#[tokio::test(flavor = "multi_thread")]
async fn slow_and_partial_request_heads_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listeners = Listeners::bind_tcp(&[SocketAddr::from(([127, 0, 0, 1], 0))], 0).unwrap();
    let addr = listeners[0].local_addr().unwrap();
    let stop = CancellationToken::new();
    let config = FixtureConfig { head_timeout: Duration::from_millis(500), ..Default::default() };
    let task = tokio::spawn(fixture::run(listeners, config, stop.clone()));
    let mut trickling = Vec::new();
    for _ in 0..5 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        trickling.push(s);
    }
    let silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Each keeps sending header lines, never the blank line that ends the head.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut k = 0;
    let mut open = trickling.len();
    while open > 0 && Instant::now() < deadline {
        open = 0;
        for s in &mut trickling {
            if s.write_all(format!("X-{k}: y\r\n").as_bytes()).await.is_ok() {
                let mut b = [0u8; 64];
                match tokio::time::timeout(Duration::from_millis(1), s.read(&mut b)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => {}
                    _ => open += 1,
                }
            }
        }
        k += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(open, 0, "trickling connections still open after 10 s");
    let mut silent = silent;
    let mut b = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut b)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "a silent connection is closed too");
    stop.cancel();
    task.await.unwrap().unwrap();
}
