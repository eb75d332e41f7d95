//! The HTTP load generator's protocols against real servers: HTTPS (a certificate generated
//! here, trusted with --cacert or not at all with --insecure) and HTTP/2 by ALPN against
//! Debian's nginx, h2c against the built-in fixture, nginx's unix socket, several requests
//! round-robin, and redirects (followed on the same origin, counted when they leave it).

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::http::client::{self, HttpOptions};
use wirespeed_engine::kinds::http::requests::Request;
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::http::{HttpReport, HttpSpec};
use wirespeed_model::ReportBody;
use wirespeed_proto::http_url::HttpUrl;
use wirespeed_testkit::nginx::{Nginx, TlsFiles};

use crate::common;

async fn run_opts(opts: HttpOptions) -> Result<HttpReport, ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = client::run(opts, tx, CancellationToken::new()).await?;
    let ReportBody::Http(h) = report.body else { panic!("not an http report") };
    Ok(h)
}

fn counted(url: String, n: u64) -> HttpSpec {
    let mut s = HttpSpec::new(url);
    s.count = Some(n);
    s.connections = 2;
    s.interval_ns = 100_000_000;
    s
}

/// nginx with a TLS listener (HTTP/1.1 and h2 by ALPN) on a self-signed certificate: the
/// directory holding it, the certificate, nginx, and its https:// URL.
fn tls_nginx() -> Option<(tempfile::TempDir, TlsFiles, Nginx, String)> {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles::self_signed(dir.path());
    let nginx = Nginx::start_with(Some(&files))?;
    let url = format!("https://localhost:{}/", nginx.tls_port.unwrap());
    Some((dir, files, nginx, url))
}

#[tokio::test(flavor = "multi_thread")]
async fn https_and_h2_against_nginx() {
    let Some((_dir, files, nginx, url)) = tls_nginx() else { return };

    // Trusted through --cacert: HTTP/1.1 over TLS, then HTTP/2 by ALPN.
    for (h2, streams) in [(false, 1), (true, 4)] {
        let mut spec = counted(url.clone(), 300);
        spec.http2 = h2;
        spec.streams = streams;
        let mut opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
        opts.tls.cacert = Some(files.cert.clone());
        let r = run_opts(opts).await.unwrap();
        let s = &r.summary;
        assert_eq!(
            (s.responses, s.status.get("200")),
            (300, Some(&300)),
            "h2={h2}: {:?}",
            s.errors
        );
        assert!(s.bytes_in >= 300 * 615, "h2={h2}");
        assert!(s.breakdown.tls.count >= 1 && s.breakdown.tls.count <= 2, "h2={h2}: keep-alive");
        assert_eq!(s.breakdown.tls.count, s.connections_opened, "h2={h2}");
    }

    // Not trusted: every request fails on the certificate, and the error says so.
    let opts = HttpOptions::single(counted(url.clone(), 4), Vec::new(), "test").unwrap();
    let err = run_opts(opts).await.unwrap_err().to_string();
    assert!(err.contains("TLS error") && err.contains("certificate"), "{err}");
    // --insecure accepts it.
    let mut spec = counted(url.clone(), 20);
    spec.insecure = true;
    let r = run_opts(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await.unwrap();
    assert_eq!(r.summary.responses, 20);
    // Plain HTTP sent to the TLS port is answered by nginx with a 400, counted as such.
    let plain = format!("http://127.0.0.1:{}/", nginx.tls_port.unwrap());
    let r = run_opts(HttpOptions::single(counted(plain, 3), Vec::new(), "test").unwrap()).await;
    if let Ok(r) = r {
        assert_eq!(r.summary.succeeded, 0);
    }
}

/// A CA, a server certificate it signed (for `localhost`), and a client certificate it signed,
/// written to `dir`: (nginx's files, requiring client certificates; the client's cert; key).
fn ca_and_client(dir: &std::path::Path) -> (TlsFiles, std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    // Each certificate needs its own subject: one equal to its issuer's reads as self-signed.
    let named = |names: Vec<String>, cn: &str| {
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = named(Vec::new(), "wirespeed test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let signed = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cn = names[0].clone();
        let cert = named(names, &cn).signed_by(&key, &ca, &ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let (server_cert, server_key) = signed(vec!["localhost".into()]);
    let (client_cert, client_key) = signed(vec!["client.test".into()]);
    let files = TlsFiles {
        cert: write("server.pem", server_cert),
        key: write("server.key", server_key),
        client_ca: Some(write("ca.pem", ca.pem())),
    };
    (files, write("client.pem", client_cert), write("client.key", client_key))
}

#[tokio::test(flavor = "multi_thread")]
async fn client_certificates_and_sni() {
    let dir = tempfile::tempdir().unwrap();
    let (files, cert, key) = ca_and_client(dir.path());
    let Some(nginx) = Nginx::start_with(Some(&files)) else { return };
    // By address, with --sni naming the certificate's host: verification passes.
    let url = format!("https://127.0.0.1:{}/", nginx.tls_port.unwrap());
    let options = |with_cert: bool| {
        let mut o = HttpOptions::single(counted(url.clone(), 10), Vec::new(), "test").unwrap();
        o.tls.cacert = files.client_ca.clone();
        o.tls.server_name = Some("localhost".into());
        if with_cert {
            (o.tls.cert, o.tls.key) = (Some(cert.clone()), Some(key.clone()));
        }
        o
    };
    let r = run_opts(options(true)).await.unwrap();
    assert_eq!(r.summary.status.get("200"), Some(&10), "{}", nginx.error_log());
    // Without a client certificate nginx answers 400 (it requires one).
    let r = run_opts(options(false)).await.unwrap();
    assert_eq!(r.summary.status.get("400"), Some(&10), "{:?}", r.summary);
    // Without --sni the certificate does not name 127.0.0.1.
    let mut o = options(true);
    o.tls.server_name = None;
    let err = run_opts(o).await.unwrap_err().to_string();
    assert!(err.contains("TLS error") && err.contains("certificate"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn h2c_against_the_fixture_in_both_models() {
    let (port, stop) = common::http_fixture().await;
    let mut spec = counted(format!("http://127.0.0.1:{port}/?size=2K"), 400);
    spec.http2 = true;
    spec.streams = 8;
    let r = run_opts(HttpOptions::single(spec.clone(), Vec::new(), "test").unwrap()).await.unwrap();
    assert_eq!((r.summary.responses, r.summary.connections_opened), (400, 2));
    assert_eq!(r.summary.bytes_in, 400 * 2048, "HTTP/2 counts body bytes");
    spec.rates = vec![300.0];
    spec.count = Some(150);
    spec.streams = 1;
    let r = run_opts(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await.unwrap();
    assert_eq!((r.summary.responses, r.summary.sent), (150, 150));
    assert_eq!(r.summary.breakdown.queue.count, 150);
    stop.cancel();
}

/// `--h3 -c 5000 -d 2` ran 20.6 s: its intervals ended 3.95-14.08 s into the run and the summary
/// said 10.13 s (every connection's counts were merged every interval, and the closed model
/// waited for everything in flight when `-d` ended). The time axis adds up: the summary's time
/// is its intervals', they tile the run, and a connection counts as opened as its setup does;
/// and what is in flight when `-d` ends is abandoned, not waited for.
#[tokio::test(flavor = "multi_thread")]
async fn many_h2_connections_keep_the_time_axis_whole() {
    let (port, stop) = common::http_fixture().await;
    let mut spec = HttpSpec::new(format!("http://127.0.0.1:{port}/"));
    spec.http2 = true;
    spec.connections = 1000;
    spec.duration_ns = 1_000_000_000;
    spec.interval_ns = 500_000_000;
    let r = run_opts(HttpOptions::single(spec.clone(), Vec::new(), "test").unwrap()).await.unwrap();
    let s = &r.summary;
    let spans: u64 = r.intervals.iter().filter(|i| !i.omitted).map(|i| i.end_ns - i.start_ns).sum();
    assert_eq!(s.duration_ns, spans, "the summary's time is its intervals'");
    for w in r.intervals.windows(2) {
        assert_eq!(w[0].end_ns, w[1].start_ns, "intervals tile the run");
    }
    assert_eq!(s.connections_opened, s.breakdown.connect.count, "opened as set up");
    // Answers that take 20 s: every request is in flight when the 1 s run ends. The run ends
    // with its time, abandoning them (waiting, it ended on each request's timeout instead and
    // said "50 × timeout").
    spec.url = format!("http://127.0.0.1:{port}/?delay=20s");
    spec.connections = 50;
    let err = run_opts(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await.unwrap_err();
    assert!(err.to_string().contains("abandoned"), "{err}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread")]
async fn unix_sockets_targets_and_redirects_against_nginx() {
    let Some(nginx) = Nginx::start() else { return };
    // The unix socket: the URL gives the Host and the path.
    let mut spec = counted("http://localhost/".into(), 100);
    spec.unix_socket = Some(nginx.unix.display().to_string());
    let r = run_opts(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await.unwrap();
    assert_eq!(r.summary.status.get("200"), Some(&100));

    // Several requests round-robin: a page and a missing one.
    let base = format!("http://{}", nginx.addr);
    let request = |path: &str, method: &str| Request {
        method: method.into(),
        url: HttpUrl::parse(&format!("{base}{path}")).unwrap(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let mut opts =
        HttpOptions::single(counted(format!("{base}/"), 100), Vec::new(), "test").unwrap();
    opts.requests = vec![request("/", "GET"), request("/missing", "GET"), request("/", "HEAD")];
    opts.spec.connections = 1;
    let r = run_opts(opts).await.unwrap();
    let status = &r.summary.status;
    assert_eq!((status.get("200"), status.get("404")), (Some(&67), Some(&33)), "{status:?}");

    // Redirects: a 3xx is the answer unless asked; followed on the same origin.
    let moved = format!("{base}/moved");
    let r = run_opts(HttpOptions::single(counted(moved.clone(), 10), Vec::new(), "test").unwrap())
        .await
        .unwrap();
    assert_eq!(r.summary.status.get("301"), Some(&10));
    let mut spec = counted(moved, 10);
    spec.max_redirects = 3;
    let r = run_opts(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await.unwrap();
    assert_eq!(r.summary.status.get("200"), Some(&10), "{}", nginx.error_log());
    // To another origin: not followed, counted.
    let mut spec = counted(format!("{base}/away"), 10);
    spec.max_redirects = 3;
    let err = run_opts(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await.unwrap_err();
    assert!(err.to_string().contains("redirect not followed"), "{err}");
}

/// A URL's user info is sent as Basic credentials (percent-decoded), over HTTP/1.1 and h2, as
/// curl does; a wrong password or none gets nginx's 401.
#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_the_url_are_sent_as_basic_auth() {
    let Some((_dir, files, nginx, url)) = tls_nginx() else { return };
    let base = format!("http://{}/private/", nginx.addr);
    let with = |user: &str| base.replacen("http://", &format!("http://{user}@"), 1);
    for (url, status) in
        [(with("alice:open%20sesame"), "200"), (with("alice:wrong"), "401"), (base.clone(), "401")]
    {
        let r =
            run_opts(HttpOptions::single(counted(url.clone(), 20), Vec::new(), "test").unwrap())
                .await
                .unwrap();
        assert_eq!(r.summary.status.get(status), Some(&20), "{url}: {:?}", r.summary.status);
    }
    let mut spec =
        counted(format!("{url}private/").replacen("://", "://alice:open%20sesame@", 1), 20);
    spec.http2 = true;
    let mut opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
    opts.tls.cacert = Some(files.cert.clone());
    let r = run_opts(opts).await.unwrap();
    assert_eq!(r.summary.status.get("200"), Some(&20), "h2: {:?}", r.summary.status);
}

/// nginx ends an HTTP/2 connection with GOAWAY after 1000 requests (`keepalive_requests`);
/// streams it had not taken (above the GOAWAY's last stream id) were never processed, and must
/// be sent again on a new connection, not counted as errors. That new connection is shared: in
/// the closed model the streams of a connection used to open one each, and then one per
/// request (2501 connections for 3500 requests). The open model is checked the same way.
#[tokio::test(flavor = "multi_thread")]
async fn h2_streams_refused_by_goaway_are_sent_again() {
    let Some((_dir, files, _nginx, url)) = tls_nginx() else { return };
    for rate in [None, Some(2_000.0)] {
        let mut spec = counted(url.clone(), 3500);
        spec.http2 = true;
        spec.streams = 16;
        spec.connections = 1;
        spec.rates = rate.into_iter().collect();
        let mut opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
        opts.tls.cacert = Some(files.cert.clone());
        let r = run_opts(opts).await.unwrap();
        let s = &r.summary;
        // One connection per 1000 requests, and at most one more.
        let opened = s.connections_opened;
        assert!(
            (4..=5).contains(&opened),
            "{rate:?}: GOAWAY every 1000, opened {opened}: {:?}",
            s.errors
        );
        assert_eq!(
            (s.responses, s.status.get("200")),
            (3500, Some(&3500)),
            "{rate:?} {:?}",
            s.errors
        );
    }
}
