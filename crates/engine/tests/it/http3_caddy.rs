//! HTTP/3 with a peer that is not ours, Caddy (Go's quic-go under it): `http --h3` loads
//! Caddy's HTTP/3, found directly and through its Alt-Svc; and Caddy's reverse proxy, with
//! its HTTP/3 transport, is the client of the HTTP fixture's HTTP/3 (served on a UDP port with
//! no TCP behind it, so only HTTP/3 can answer). Certificates are made here.

use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::http::client::{self, HttpOptions};
use wirespeed_engine::kinds::http::fixture::{self, FixtureConfig};
use wirespeed_engine::kinds::http::fixture_h3;
use wirespeed_engine::server::Listeners;
use wirespeed_model::kinds::http::{HttpReport, HttpSpec};
use wirespeed_model::ReportBody;
use wirespeed_testkit::caddy::Caddy;
use wirespeed_testkit::nginx::TlsFiles;
use wirespeed_testkit::ports::free_port;

async fn run(opts: HttpOptions) -> (HttpReport, Vec<String>) {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = client::run(opts, tx, CancellationToken::new()).await.unwrap();
    let ReportBody::Http(h) = report.body else { panic!("not an http report") };
    (h, report.meta.notes)
}

#[tokio::test(flavor = "multi_thread")]
async fn h3_against_caddy_directly_and_by_alt_svc() {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles::self_signed(dir.path());
    let port = free_port();
    let body = "x".repeat(1200);
    let site = format!(
        "https://127.0.0.1:{port} {{\n\ttls {} {}\n\trespond \"{body}\" 200\n}}\n",
        files.cert.display(),
        files.key.display()
    );
    let Some(caddy) = Caddy::start(&site, port) else { return };
    for alt_svc in [false, true] {
        let mut spec = HttpSpec::new(format!("https://127.0.0.1:{port}/"));
        spec.http3 = true;
        spec.alt_svc = alt_svc;
        spec.count = Some(400);
        spec.connections = 2;
        spec.streams = 4;
        let mut opts = HttpOptions::single(spec, Vec::new(), "test").unwrap();
        opts.tls.cacert = Some(files.cert.clone());
        let (r, notes) = run(opts).await;
        let s = &r.summary;
        assert_eq!(
            (s.responses, s.status.get("200")),
            (400, Some(&400)),
            "alt_svc={alt_svc}: {:?} {}",
            s.errors,
            caddy.log()
        );
        assert_eq!(s.bytes_in, 400 * 1200, "alt_svc={alt_svc}");
        assert_eq!(s.connections_opened, 2, "alt_svc={alt_svc}");
        if alt_svc {
            let said = format!("h3=\":{port}\"");
            assert!(notes.iter().any(|n| n.contains(&said)), "{notes:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn caddy_is_an_http3_client_of_the_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles::self_signed(dir.path());
    // The fixture: TCP on one port, HTTP/3 on another UDP port (no TCP there).
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let listeners = Listeners::bind_tcp(&[loopback], 0).unwrap();
    let (tls, _) = fixture_h3::identity(Some((&files.cert, &files.key))).unwrap();
    let endpoint = fixture_h3::endpoint(loopback, tls.clone()).unwrap();
    let udp = endpoint.local_addr().unwrap().port();
    assert_ne!(udp, listeners[0].local_addr().unwrap().port(), "no TCP behind the UDP port");
    let config = FixtureConfig { tls: Some(tls), h3: vec![endpoint], ..Default::default() };
    let stop = CancellationToken::new();
    tokio::spawn(fixture::run(listeners, config, stop.clone()));

    // Caddy takes plain HTTP/1.1 and asks the fixture over HTTP/3 alone.
    let front = free_port();
    let site = format!(
        "http://127.0.0.1:{front} {{\n\treverse_proxy https://127.0.0.1:{udp} {{\n\t\ttransport http {{\n\t\t\tversions 3\n\t\t\ttls_trust_pool file {}\n\t\t}}\n\t}}\n}}\n",
        files.cert.display()
    );
    let Some(caddy) = Caddy::start(&site, front) else { return };
    for (query, status, size) in
        [("size=100000", "200", 100_000u64), ("status=503&size=7", "503", 7)]
    {
        let mut spec = HttpSpec::new(format!("http://127.0.0.1:{front}/?{query}"));
        spec.count = Some(50);
        spec.connections = 2;
        let (r, _) = run(HttpOptions::single(spec, Vec::new(), "test").unwrap()).await;
        let s = &r.summary;
        assert_eq!(
            s.status.get(status),
            Some(&50),
            "{query}: {:?} {:?} {}",
            s.status,
            s.errors,
            caddy.log()
        );
        // HTTP/1.1's byte count holds the heads too (a few hundred bytes each).
        let heads = s.bytes_in.checked_sub(50 * size);
        assert!(heads.is_some_and(|h| h < 50 * 1000), "{query}: {} bytes in", s.bytes_in);
    }
    stop.cancel();
}
