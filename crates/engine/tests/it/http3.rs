//! `http --h3` against the HTTP fixture's HTTP/3 (in-process, certificates made here): every
//! request answered and counted once, the closed and open models, uploads, --no-keepalive
//! with 0-RTT, --alt-svc discovery; and each QUIC failure a clear error under its own cause:
//! a certificate that does not verify, UDP that nobody answers, version negotiation, streams
//! the server resets, a server that sends no Alt-Svc. The fixture keeps serving after garbage
//! datagrams.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::http::client::{self, HttpOptions};
use wirespeed_engine::kinds::http::fixture::{self, FixtureConfig};
use wirespeed_engine::kinds::http::fixture_h3;
use wirespeed_engine::server::Listeners;
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::http::{HttpReport, HttpSpec};
use wirespeed_model::ReportBody;
use wirespeed_testkit::nginx::TlsFiles;

async fn run_opts(opts: HttpOptions) -> Result<(HttpReport, Vec<String>), ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = client::run(opts, tx, CancellationToken::new()).await?;
    let ReportBody::Http(h) = report.body else { panic!("not an http report") };
    Ok((h, report.meta.notes))
}

/// Why `n` HTTP/3 requests to 127.0.0.1:`port` on one connection, trusting any certificate,
/// all failed (the run's error).
async fn failure_of(port: u16, n: u64) -> String {
    let mut spec = HttpSpec::new(format!("https://127.0.0.1:{port}/"));
    spec.http3 = true;
    spec.count = Some(n);
    spec.connections = 1;
    let mut opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
    opts.tls.insecure = true;
    match run_opts(opts).await {
        Err(e) => e.to_string(),
        Ok((r, _)) => panic!("expected every request to fail: {:?}", r.summary),
    }
}

/// The fixture on 127.0.0.1 (or ::1): TCP (plain and TLS) on one port and, when `h3`, HTTP/3
/// on UDP, on the same port number unless `udp_elsewhere`.
struct H3Fixture {
    tcp: u16,
    udp: u16,
    cert: PathBuf,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

impl H3Fixture {
    fn start(ip: &str, h3: bool, udp_elsewhere: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = TlsFiles::self_signed(dir.path());
        let ip: std::net::IpAddr = ip.parse().unwrap();
        let listeners = Listeners::bind_tcp(&[SocketAddr::new(ip, 0)], 0).unwrap();
        let tcp = listeners[0].local_addr().unwrap().port();
        let (tls, made) = fixture_h3::identity(Some((&files.cert, &files.key))).unwrap();
        assert!(made.is_none(), "the given certificate is used");
        let mut config = FixtureConfig { tls: Some(tls.clone()), ..Default::default() };
        let udp = if h3 {
            let port = if udp_elsewhere { 0 } else { tcp };
            let endpoint = fixture_h3::endpoint(SocketAddr::new(ip, port), tls).unwrap();
            let udp = endpoint.local_addr().unwrap().port();
            config.h3.push(endpoint);
            udp
        } else {
            0
        };
        let stop = CancellationToken::new();
        tokio::spawn(fixture::run(listeners, config, stop.clone()));
        Self { tcp, udp, cert: files.cert, stop, _dir: dir }
    }

    /// Options for `n` HTTP/3 requests to `url`, trusting the fixture's certificate.
    fn opts(&self, url: String, n: u64) -> HttpOptions {
        let mut spec = HttpSpec::new(url);
        spec.http3 = true;
        spec.count = Some(n);
        spec.connections = 2;
        spec.interval_ns = 100_000_000;
        let mut opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
        opts.tls.cacert = Some(self.cert.clone());
        opts
    }
}

impl Drop for H3Fixture {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_is_answered_once_on_v4_and_v6() {
    for ip in ["127.0.0.1", "::1"] {
        let f = H3Fixture::start(ip, true, false);
        let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
        let mut opts = f.opts(format!("https://{host}:{}/?size=3000", f.udp), 600);
        opts.spec.streams = 4;
        // The certificate names localhost and 127.0.0.1.
        opts.tls.server_name = Some("localhost".into());
        let (r, _) = run_opts(opts).await.unwrap();
        let s = &r.summary;
        assert_eq!((s.responses, s.status.get("200")), (600, Some(&600)), "{ip}: {:?}", s.errors);
        assert_eq!(s.sent, 600, "{ip}");
        assert_eq!(s.bytes_in, 600 * 3000, "{ip}: every body byte, once");
        // The QUIC handshake is the breakdown's connect part, once per connection.
        assert_eq!(s.connections_opened, 2, "{ip}");
        assert_eq!(s.breakdown.connect.count, 2, "{ip}");
        assert_eq!((s.breakdown.first_byte.count, s.latency.count), (600, 600), "{ip}");
        assert_eq!(s.breakdown.tls.count, 0, "{ip}: QUIC has no separate TLS step");
        let per_interval: u64 = r.intervals.iter().map(|i| i.responses).sum();
        assert_eq!(per_interval, 600, "{ip}: intervals add up");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn uploads_statuses_and_bad_queries() {
    let f = H3Fixture::start("127.0.0.1", true, false);
    // A POST body crosses whole: the fixture drains it before answering.
    let mut spec = HttpSpec::new(format!("https://127.0.0.1:{}/?size=10", f.udp));
    spec.http3 = true;
    spec.method = "POST".into();
    spec.body_bytes = 50_000;
    spec.count = Some(100);
    spec.connections = 1;
    let mut opts = HttpOptions::single(spec, vec![7u8; 50_000], "test").unwrap();
    opts.tls.cacert = Some(f.cert.clone());
    let (r, _) = run_opts(opts).await.unwrap();
    assert_eq!((r.summary.responses, r.summary.bytes_out), (100, 100 * 50_000));
    assert_eq!(r.summary.bytes_in, 100 * 10);
    // Statuses are counted as they come; a bad query gets the fixture's 400 over HTTP/3 too.
    for (query, status) in [("status=503", "503"), ("size=lots", "400")] {
        let opts = f.opts(format!("https://127.0.0.1:{}/?{query}", f.udp), 50);
        let (r, _) = run_opts(opts).await.unwrap();
        assert_eq!(r.summary.status.get(status), Some(&50), "{query}: {:?}", r.summary.status);
        assert!(r.summary.errors.is_empty(), "{query}: {:?}", r.summary.errors);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_open_model_keeps_its_schedule() {
    let f = H3Fixture::start("127.0.0.1", true, false);
    let mut opts = f.opts(format!("https://127.0.0.1:{}/", f.udp), 300);
    opts.spec.rates = vec![1000.0];
    let (r, _) = run_opts(opts).await.unwrap();
    let s = &r.summary;
    assert_eq!((s.responses, s.sent), (300, 300), "{:?}", s.errors);
    assert_eq!(s.target_rate, Some(1000.0));
    assert_eq!(s.breakdown.queue.count, 300, "each request's wait for its turn is measured");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_keepalive_opens_a_connection_per_request_and_0rtt_resumes_them() {
    let f = H3Fixture::start("127.0.0.1", true, false);
    for zero_rtt in [false, true] {
        let mut opts = f.opts(format!("https://127.0.0.1:{}/", f.udp), 60);
        opts.spec.keepalive = false;
        opts.spec.connections = 1;
        opts.spec.zero_rtt = zero_rtt;
        let (r, _) = run_opts(opts).await.unwrap();
        let s = &r.summary;
        assert_eq!((s.responses, s.connections_opened), (60, 60), "0rtt={zero_rtt}");
        if zero_rtt {
            // The first connection has no ticket yet; later ones resume with one and send
            // their request as early data, which the fixture accepts.
            assert!(s.early_data >= 30 && s.early_data < 60, "{} early", s.early_data);
            assert_eq!(s.early_data_accepted, s.early_data);
        } else {
            assert_eq!((s.early_data, s.early_data_accepted), (0, 0));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn alt_svc_finds_http3_on_another_port() {
    // HTTP/3 on a UDP port other than the TCP one: only the Alt-Svc tells the client where.
    let f = H3Fixture::start("127.0.0.1", true, true);
    assert_ne!(f.tcp, f.udp);
    let mut opts = f.opts(format!("https://127.0.0.1:{}/", f.tcp), 100);
    opts.spec.alt_svc = true;
    let (r, notes) = run_opts(opts).await.unwrap();
    assert_eq!(r.summary.responses, 100, "{:?}", r.summary.errors);
    let port = format!(":{}", f.udp);
    assert!(notes.iter().any(|n| n.contains("Alt-Svc") && n.contains(&port)), "{notes:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_alt_svc_is_a_clear_error() {
    // https:// on TCP, no HTTP/3: its answers carry no Alt-Svc.
    let f = H3Fixture::start("127.0.0.1", false, false);
    let mut opts = f.opts(format!("https://127.0.0.1:{}/", f.tcp), 10);
    opts.spec.alt_svc = true;
    match run_opts(opts).await {
        Err(ClientError::Protocol(m)) => {
            assert!(m.contains("without an Alt-Svc header") && m.contains("HTTP/3"), "{m}")
        }
        other => panic!("expected a protocol error, got {:?}", other.map(|r| r.0.summary)),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_that_does_not_verify_fails_every_handshake() {
    let f = H3Fixture::start("127.0.0.1", true, false);
    let mut opts = f.opts(format!("https://127.0.0.1:{}/", f.udp), 10);
    opts.tls.cacert = None; // the system's roots: the fixture's certificate is self-signed
    let err = run_opts(opts).await.unwrap_err().to_string();
    assert!(err.contains("QUIC handshake failed") && err.contains("UnknownIssuer"), "{err}");
    // --insecure accepts it.
    let mut opts = f.opts(format!("https://127.0.0.1:{}/", f.udp), 10);
    opts.tls = wirespeed_engine::net::tls::TlsOptions { insecure: true, ..Default::default() };
    assert_eq!(run_opts(opts).await.unwrap().0.summary.responses, 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn udp_that_nobody_answers_is_reported_in_seconds() {
    // A bound UDP socket that reads nothing: as if a firewall dropped QUIC.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let err = failure_of(port, 1).await;
    assert!(err.contains("QUIC idle timeout") && err.contains("is UDP blocked"), "{err}");
}

/// Answers every QUIC Initial with a Version Negotiation packet that offers only a version
/// nobody speaks (RFC 9000 §17.2.1); stops at `stop`.
fn version_negotiator(socket: UdpSocket, stop: Arc<std::sync::atomic::AtomicBool>) {
    socket.set_read_timeout(Some(std::time::Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 2048];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
        let p = &buf[..n];
        if n < 7 || p[0] & 0x80 == 0 {
            continue;
        }
        let dcid_len = usize::from(p[5]);
        let Some(&scid_len) = p.get(6 + dcid_len) else { continue };
        let scid_len = usize::from(scid_len);
        let (dcid, scid) = (&p[6..6 + dcid_len], &p[7 + dcid_len..7 + dcid_len + scid_len]);
        let mut vn = vec![0x80 | 0x3f, 0, 0, 0, 0];
        vn.push(scid_len as u8);
        vn.extend_from_slice(scid);
        vn.push(dcid_len as u8);
        vn.extend_from_slice(dcid);
        vn.extend_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
        let _ = socket.send_to(&vn, from);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn version_negotiation_is_named() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let responder = {
        let stop = stop.clone();
        std::thread::spawn(move || version_negotiator(socket, stop))
    };
    let err = failure_of(port, 3).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    responder.join().unwrap();
    assert!(err.contains("3 × QUIC version negotiation failed"), "{err}");
}

/// An HTTP/3 server that resets every request's stream (H3_REQUEST_REJECTED) instead of
/// answering; its address, and a token that stops it.
async fn resetting_server() -> (SocketAddr, CancellationToken) {
    let (tls, _) = fixture_h3::identity(None).unwrap();
    let endpoint = fixture_h3::endpoint("127.0.0.1:0".parse().unwrap(), tls).unwrap();
    let addr = endpoint.local_addr().unwrap();
    let stop = CancellationToken::new();
    let done = stop.clone();
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let incoming = tokio::select! {
                _ = done.cancelled() => break,
                i = endpoint.accept() => match i { Some(i) => i, None => break },
            };
            connections.spawn(async move {
                let Ok(conn) = incoming.await else { return };
                let quic = h3_quinn::Connection::new(conn);
                let Ok(mut h3) = h3::server::Connection::<_, bytes::Bytes>::new(quic).await else {
                    return;
                };
                while let Ok(Some(resolver)) = h3.accept().await {
                    if let Ok((_, mut stream)) = resolver.resolve_request().await {
                        stream.stop_stream(h3::error::Code::H3_REQUEST_REJECTED);
                    }
                }
            });
        }
        endpoint.close(0u32.into(), b"");
        connections.abort_all();
    });
    (addr, stop)
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_streams_are_counted_as_such() {
    let (addr, stop) = resetting_server().await;
    let err = failure_of(addr.port(), 40).await;
    stop.cancel();
    // One connection carries them all: a reset stream does not end it.
    assert!(err.contains("40 × stream reset"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fixture_keeps_serving_after_garbage_datagrams() {
    let f = H3Fixture::start("127.0.0.1", true, false);
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    for i in 0..2000usize {
        // Long and short headers, random bytes, from 1 to 1500 bytes.
        let len = 1 + (i * 37) % 1500;
        let datagram: Vec<u8> = (0..len)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        junk.send_to(&datagram, ("127.0.0.1", f.udp)).unwrap();
    }
    let (r, _) = run_opts(f.opts(format!("https://127.0.0.1:{}/", f.udp), 200)).await.unwrap();
    assert_eq!(r.summary.responses, 200, "{:?}", r.summary.errors);
}
