//! The DNS fixture's DoQ and DoH (given a certificate) against `wirespeed dns --doq/--doh` and
//! against a client that is not ours (AdGuard's dnsproxy, built by scripts/peers.sh, forwarding
//! plain DNS to the fixture over DoQ, DoH and DoH on HTTP/3), and what each does with bad input: a
//! stream that is not one message is reset, a request that is not a DoH query gets the status
//! that says why, and the fixture goes on answering.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::dns::fixture_secure::{self, SecureListeners};
use wirespeed_engine::kinds::dns::queries::builtin_lines;
use wirespeed_model::kinds::dns::{DnsSpec, DnsTransport, DohMethod};
use wirespeed_model::ReportBody;
use wirespeed_proto::dns::zone::Zone;

use crate::common::{dns_options, rcode, run_dns};

/// A certificate for 127.0.0.1 and its key, as PEM files in `dir`.
fn certificate(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

/// The fixture's DoQ and DoH on one free port of 127.0.0.1; cancel the token to stop it.
fn secure_fixture(cert: &std::path::Path, key: &std::path::Path) -> (u16, CancellationToken) {
    let port = wirespeed_testkit::ports::free_port();
    let listeners =
        SecureListeners::bind(SocketAddr::from(([127, 0, 0, 1], port)), cert, key).unwrap();
    let stop = CancellationToken::new();
    let zone = Arc::new(Zone::generated(1000));
    tokio::spawn(fixture_secure::run(listeners, zone, stop.clone()));
    (port, stop)
}

fn spec(port: u16, transport: DnsTransport) -> DnsSpec {
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.transport = transport;
    spec.passes = Some(2);
    spec.clients = 2;
    spec.max_outstanding = 32;
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doq_and_doh_by_get_and_post_answer_every_query_with_the_zones_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let (port, stop) = secure_fixture(&cert, &key);
    let lines = builtin_lines(1000);
    for (transport, method, http3) in [
        (DnsTransport::Doq, DohMethod::Get, false),
        (DnsTransport::Doh, DohMethod::Get, false),
        (DnsTransport::Doh, DohMethod::Post, false),
        (DnsTransport::Doh, DohMethod::Get, true),
        (DnsTransport::Doh, DohMethod::Post, true),
    ] {
        let mut s = spec(port, transport);
        s.doh_method = method;
        s.doh_http3 = http3;
        let mut opts = dns_options(s, &lines);
        opts.tls.cacert = Some(cert.clone());
        let r = run_dns(opts).await;
        let s = &r.summary;
        let what = format!("{transport:?} {method:?} http3={http3}");
        assert_eq!((s.sent, s.completed), (2 * 1005, 2 * 1005), "{what}: {s:?}");
        assert_eq!((s.lost, s.stray.total(), s.stream_errors, s.truncated), (0, 0, 0, 0), "{what}");
        assert_eq!((rcode(&r, "NXDOMAIN"), rcode(&r, "NOERROR")), (2, 2 * 1004), "{what}");
    }
    // Over HTTP/3 as over HTTP/2, a path it does not serve is a 404 for every query: each a
    // stream error, lost at once, none an answer, and the report says why (each waited out
    // its timeout and read as "1005 queries timed out").
    for http3 in [false, true] {
        let mut s = spec(port, DnsTransport::Doh);
        s.doh_http3 = http3;
        s.doh_path = Some("/nowhere".into());
        s.passes = Some(1);
        s.timeout_ns = 60_000_000_000;
        let mut opts = dns_options(s, &lines);
        opts.tls.cacert = Some(cert.clone());
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let run = wirespeed_engine::kinds::dns::client::run(opts, tx, CancellationToken::new());
        // Bounded, not timed: a run that waited out even one query's timeout would not end.
        let report = tokio::time::timeout(Duration::from_secs(50), run)
            .await
            .expect("404s end their queries at once")
            .unwrap();
        let ReportBody::Dns(d) = &report.body else { panic!("not a DNS report") };
        let s = &d.summary;
        assert_eq!((s.completed, s.stream_errors, s.lost), (0, 1005, 1005), "{s:?}");
        let notes = report.meta.notes.join("\n");
        assert!(notes.contains("1005 queries failed on their own streams"), "{notes}");
        assert!(notes.contains("HTTP 404 Not Found"), "{notes}");
        assert!(!notes.contains("timed out"), "{notes}");
    }
    stop.cancel();
}

/// A DoQ server that goes away mid-run: the run ends as the server lost (exit 5 at the
/// binary), with what was measured before, not "completed 99.90 %"; and a run against no
/// server at all ends at its time limit, not its handshake timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_doq_server_that_goes_away_is_a_lost_server_not_a_completed_run() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let (port, stop) = secure_fixture(&cert, &key);
    let mut s = spec(port, DnsTransport::Doq);
    s.passes = None;
    s.duration_ns = Some(4_000_000_000);
    s.max_outstanding = 4;
    let mut opts = dns_options(s, &builtin_lines(100));
    opts.tls.cacert = Some(cert.clone());
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let run =
        tokio::spawn(wirespeed_engine::kinds::dns::client::run(opts, tx, CancellationToken::new()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.cancel();
    let err = run.await.unwrap().unwrap_err();
    assert!(err.to_string().starts_with("lost the server mid-test"), "{err}");
    let wirespeed_engine::ClientError::Partial { report, .. } = err else { panic!("{err}") };
    let ReportBody::Dns(d) = &report.body else { panic!("not a DNS report") };
    assert!(d.summary.completed > 0, "what was measured is kept: {:?}", d.summary);
    assert!(report.meta.notes.iter().any(|n| n.starts_with("aborted:")), "{:?}", report.meta.notes);

    // Nothing listens: the 2 s run ends by its limit, however long a handshake may wait.
    let mut s = spec(port, DnsTransport::Doq);
    s.passes = None;
    s.duration_ns = Some(2_000_000_000);
    let mut opts = dns_options(s, &builtin_lines(10));
    opts.tls.cacert = Some(cert);
    opts.connect_timeout = Duration::from_secs(30);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let run = wirespeed_engine::kinds::dns::client::run(opts, tx, CancellationToken::new());
    let report = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run ends by its time limit");
    let report = report.unwrap();
    let ReportBody::Dns(d) = &report.body else { panic!("not a DNS report") };
    let last = d.intervals.last().map_or(0, |i| i.end_ns);
    // The report's time axis keeps to its limit (it ran to the 30 s handshake timeout).
    assert!(last <= 4_000_000_000, "intervals up to {last} ns of a 2 s run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_streams_and_requests_get_a_reset_or_a_status_and_the_fixture_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let (port, stop) = secure_fixture(&cert, &key);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    // DoQ: a stream whose length prefix lies, and one that is not DNS at all: each reset.
    let crypto = wirespeed_engine::net::tls::client_config(
        &wirespeed_engine::net::tls::TlsOptions {
            cacert: Some(cert.clone()),
            ..Default::default()
        },
        &[b"doq"],
    )
    .unwrap();
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let config = wirespeed_engine::net::quic::client_config(crypto, &Default::default()).unwrap();
    let connection = endpoint.connect_with(config, addr, "127.0.0.1").unwrap().await.unwrap();
    for garbage in [&[0u8, 40, 1, 2, 3][..], &[0, 3, 0xff, 0xff, 0xff][..]] {
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(garbage).await.unwrap();
        send.finish().unwrap();
        let got = recv.read_to_end(1024).await;
        assert!(
            matches!(got, Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) if code == 2u32.into()),
            "{garbage:?}: {got:?}"
        );
    }
    connection.close(0u32.into(), b"");

    // DoH: what is wrong with each request, in its status.
    let tls = wirespeed_engine::net::tls::client_config(
        &wirespeed_engine::net::tls::TlsOptions {
            cacert: Some(cert.clone()),
            ..Default::default()
        },
        &[b"http/1.1"],
    )
    .unwrap();
    for (request, want) in [
        ("GET /dns-query HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        ("GET /dns-query?dns=%%% HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        ("GET /elsewhere?dns=AAAB HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
        ("PUT /dns-query HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "405"),
        ("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx", "415"),
        ("GET /dns-query?dns=AAAA HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
    ] {
        let status = raw_https(addr, tls.clone(), request).await;
        assert!(status.starts_with(&format!("HTTP/1.1 {want}")), "{request:?}: {status:?}");
    }

    // And it still answers.
    let mut opts = dns_options(spec(port, DnsTransport::Doq), &builtin_lines(10));
    opts.tls.cacert = Some(cert.clone());
    assert_eq!(run_dns(opts).await.summary.lost, 0);
    stop.cancel();
}

/// Sends `request` over TLS (HTTP/1.1) and returns the status line.
async fn raw_https(addr: SocketAddr, tls: Arc<rustls::ClientConfig>, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut s = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await.unwrap().unwrap();
    String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_string()
}

/// AdGuard's dnsproxy, listening for plain DNS on a free port and forwarding each query to
/// `upstream`; stopped when dropped.
struct DnsProxy {
    _peer: wirespeed_testkit::peer::Peer,
    port: u16,
}

impl DnsProxy {
    fn start(upstream: &str) -> Option<Self> {
        let Some(binary) = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p).map(|d| d.join("dnsproxy")).find(|c| c.is_file())
        }) else {
            wirespeed_testkit::skip::missing(
                "dnsproxy is not built",
                "scripts/peers.sh builds it from the Go module proxy (scripts/test.sh runs it)",
            );
            return None;
        };
        let port = wirespeed_testkit::ports::free_port();
        let mut command = Command::new(binary);
        command
            .args(["-l", "127.0.0.1", "-p", &port.to_string(), "-u", upstream, "--insecure"])
            .args(["--cache=false", "--timeout=2s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let proxy =
            Self { _peer: wirespeed_testkit::peer::Peer::spawn(&mut command, "dnsproxy"), port };
        proxy.wait_ready();
        Some(proxy)
    }

    /// Waits until a query through the proxy is answered.
    fn wait_ready(&self) {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let query =
            wirespeed_proto::dns::wire::Query::encode("www.example.test", 1, false, None).unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut buf = [0u8; 512];
        while Instant::now() < deadline {
            let _ = socket.send_to(&query.bytes, ("127.0.0.1", self.port));
            if socket.recv_from(&mut buf).is_ok() {
                return;
            }
        }
        panic!("dnsproxy did not answer on port {}", self.port);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_is_not_ours_speaks_doq_doh_and_doh3_to_the_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let (port, stop) = secure_fixture(&cert, &key);
    for upstream in [
        format!("quic://127.0.0.1:{port}"),
        format!("https://127.0.0.1:{port}/dns-query"),
        format!("h3://127.0.0.1:{port}/dns-query"),
    ] {
        let Some(proxy) = DnsProxy::start(&upstream) else { break };
        let mut s = DnsSpec::new("127.0.0.1", proxy.port);
        s.max_outstanding = 8;
        s.timeout_ns = 3_000_000_000;
        let r = run_dns(dns_options(s, &builtin_lines(1000))).await;
        let s = &r.summary;
        assert_eq!((s.sent, s.completed, s.lost), (1005, 1005, 0), "{upstream}: {s:?}");
        assert_eq!((rcode(&r, "NXDOMAIN"), rcode(&r, "NOERROR")), (1, 1004), "{upstream}");
    }
    stop.cancel();
}
