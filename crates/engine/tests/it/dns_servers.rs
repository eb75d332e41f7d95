//! `wirespeed dns` against real DNS servers — Debian's unbound, nsd and knot, each serving the
//! test zone on loopback — checking counts and response codes against what the zone must
//! answer: NOERROR for its names (NODATA included), NXDOMAIN for a name it lacks, and TC=1
//! for its large TXT records over UDP (both without EDNS, the 2 KB one with EDNS 1232). Each test is skipped where its server is not installed.

use wirespeed_model::kinds::dns::{DnsReport, DnsSpec, DnsTransport};
use wirespeed_proto::dns::datafile;
use wirespeed_testkit::dns_servers::{DnsServer, Kind, QUERIES};

use crate::common::{dns_options, rcode, run_dns};

fn spec_for(server: &DnsServer) -> (DnsSpec, Vec<datafile::QueryLine>) {
    let text = std::fs::read_to_string(server.datafile()).unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", server.addr.port());
    spec.timeout_ns = 2_000_000_000;
    (spec, datafile::parse(&text).unwrap())
}

/// The zone's answers to `passes` runs through the query file, `tc` of each run truncated.
fn assert_zone_answers(r: &DnsReport, passes: u64, tc: u64) {
    let s = &r.summary;
    let (total, nx) = QUERIES;
    assert_eq!(s.sent, passes * total, "{s:?}");
    assert_eq!(s.completed, s.sent, "every query answered: {s:?}");
    assert_eq!((s.lost, s.stray.total(), s.send_errors), (0, 0, 0), "{s:?}");
    assert_eq!(rcode(r, "NXDOMAIN"), passes * nx, "{s:?}");
    assert_eq!(rcode(r, "NOERROR"), passes * (total - nx), "{s:?}");
    assert_eq!(s.truncated, passes * tc, "{s:?}");
}

async fn udp_counts_and_codes(kind: Kind) {
    let Some(server) = DnsServer::start(kind) else { return };
    let (mut spec, lines) = spec_for(&server);
    spec.passes = Some(5);
    spec.clients = 8;
    spec.threads = 2;
    let r = run_dns(dns_options(spec, &lines)).await;
    assert_zone_answers(&r, 5, 2);
}

#[tokio::test]
async fn unbound_udp() {
    udp_counts_and_codes(Kind::Unbound).await;
}

#[tokio::test]
async fn nsd_udp() {
    udp_counts_and_codes(Kind::Nsd).await;
}

#[tokio::test]
async fn knot_udp() {
    udp_counts_and_codes(Kind::Knot).await;
}

#[tokio::test]
async fn tcp_is_never_truncated() {
    for kind in [Kind::Unbound, Kind::Nsd, Kind::Knot] {
        let Some(server) = DnsServer::start(kind) else { continue };
        let (mut spec, lines) = spec_for(&server);
        spec.transport = DnsTransport::Tcp;
        spec.passes = Some(3);
        spec.clients = 2;
        let r = run_dns(dns_options(spec, &lines)).await;
        assert_zone_answers(&r, 3, 0);
        let c = r.summary.connections.as_ref().unwrap();
        assert!(c.successful >= 2, "{kind:?}: {c:?}");
    }
}

#[tokio::test]
async fn truncated_answers_are_asked_again_over_tcp() {
    let Some(server) = DnsServer::start(Kind::Nsd) else { return };
    let (mut spec, lines) = spec_for(&server);
    spec.passes = Some(4);
    spec.tc_retry = true;
    let r = run_dns(dns_options(spec, &lines)).await;
    assert_zone_answers(&r, 4, 2);
    assert_eq!((r.summary.tc_retried, r.summary.tc_retry_completed), (8, 8), "{:?}", r.summary);
}

#[tokio::test]
async fn edns_sizes_decide_truncation() {
    let Some(server) = DnsServer::start(Kind::Knot) else { return };
    let (mut spec, lines) = spec_for(&server);
    spec.passes = Some(2);
    spec.edns_size = Some(1232);
    spec.dnssec_ok = true;
    let r = run_dns(dns_options(spec.clone(), &lines)).await;
    assert_zone_answers(&r, 2, 1);
    // Knot, like unbound and NSD, sends at most 1232 bytes over UDP whatever the client
    // offers (DNS flag day 2020): 4096 changes nothing.
    spec.edns_size = Some(4096);
    let r = run_dns(dns_options(spec, &lines)).await;
    assert_zone_answers(&r, 2, 1);
}

#[tokio::test]
async fn a_timed_run_and_the_open_loop_against_unbound() {
    let Some(server) = DnsServer::start(Kind::Unbound) else { return };
    let (mut spec, lines) = spec_for(&server);
    spec.duration_ns = Some(1_000_000_000);
    spec.clients = 4;
    let r = run_dns(dns_options(spec.clone(), &lines)).await;
    let s = &r.summary;
    assert_eq!(s.end_reason, "time limit");
    assert!(s.completed > QUERIES.0, "the file wraps around: {s:?}");
    assert_eq!((s.lost, s.stray.total()), (0, 0), "{s:?}");
    // Each run through the file has one NXDOMAIN and two TC answers.
    assert!((2 * rcode(&r, "NXDOMAIN")).abs_diff(s.truncated) <= 2, "{s:?}");
    spec.rate = Some(5000.0);
    let r = run_dns(dns_options(spec, &lines)).await;
    let s = &r.summary;
    assert!((5000..=5500).contains(&(s.sent + s.unsent)), "{s:?}");
    assert_eq!((s.completed, s.lost), (s.sent, 0), "{s:?}");
}

#[tokio::test]
async fn dns_over_tls_against_unbound() {
    let dir = tempfile::tempdir().unwrap();
    let (cert_pem, key_pem) = localhost_certificate(dir.path());
    let Some(server) = DnsServer::start_with(Kind::Unbound, Some((&cert_pem, &key_pem))) else {
        return;
    };
    let (mut spec, lines) = spec_for(&server);
    spec.port = server.tls_port.unwrap();
    spec.transport = DnsTransport::Dot;
    spec.passes = Some(2);
    spec.clients = 2;
    spec.sni = Some("localhost".into());
    let mut opts = dns_options(spec.clone(), &lines);
    opts.tls.cacert = Some(cert_pem.clone());
    opts.tls.server_name = Some("localhost".into());
    let r = run_dns(opts).await;
    assert_zone_answers(&r, 2, 0);
    // Without the CA the certificate is not trusted: no connection, nothing answered.
    spec.passes = Some(1);
    let mut opts = dns_options(spec, &lines);
    opts.tls.server_name = Some("localhost".into());
    let r = run_dns(opts).await;
    let c = r.summary.connections.as_ref().unwrap();
    assert_eq!((r.summary.completed, c.successful), (0, 0), "{:?}", r.summary);
    assert_eq!(r.summary.unsent, QUERIES.0, "a bounded run gives up: {:?}", r.summary);
}

#[tokio::test]
async fn dns_over_quic_against_coredns() {
    let dir = tempfile::tempdir().unwrap();
    let (cert_pem, key_pem) = localhost_certificate(dir.path());
    let Some(server) = DnsServer::start_with(Kind::CoreDns, Some((&cert_pem, &key_pem))) else {
        return;
    };
    let (mut spec, lines) = encrypted_spec(&server, DnsTransport::Doq);
    spec.passes = Some(3);
    let mut opts = dns_options(spec.clone(), &lines);
    opts.tls.cacert = Some(cert_pem.clone());
    let r = run_dns(opts).await;
    // Every query on a stream of its own, every answer matched to its question: none lost,
    // none stray, no stream reset, and the zone's codes. DoQ needs no truncation, but CoreDNS
    // 1.15 sizes a DoQ answer as a UDP one: without EDNS the two large TXT answers come with
    // TC=1, and they are counted so.
    assert_zone_answers(&r, 3, 2);
    assert_eq!(r.summary.stream_errors, 0, "{:?}", r.summary);
    let c = r.summary.connections.as_ref().unwrap();
    assert_eq!(c.successful, 2, "one QUIC connection per client: {:?}", r.summary);
    // Without the CA the certificate is not trusted: no connection, nothing answered, and
    // the report says why.
    spec.passes = Some(1);
    let r = run_dns(dns_options(spec, &lines)).await;
    let c = r.summary.connections.as_ref().unwrap();
    assert_eq!((r.summary.completed, c.successful), (0, 0), "{:?}", r.summary);
    assert_eq!(r.summary.unsent, QUERIES.0, "a bounded run gives up: {:?}", r.summary);
    let why = c.last_failure.as_deref().unwrap_or("");
    assert!(why.contains("certificate"), "{why}");
}

#[tokio::test]
async fn dns_over_https_against_coredns_by_get_and_by_post_on_http2_and_http3() {
    use wirespeed_model::kinds::dns::DohMethod;
    let dir = tempfile::tempdir().unwrap();
    let (cert_pem, key_pem) = localhost_certificate(dir.path());
    let Some(server) = DnsServer::start_with(Kind::CoreDns, Some((&cert_pem, &key_pem))) else {
        return;
    };
    let cases =
        [false, true].into_iter().flat_map(|h3| [(DohMethod::Get, h3), (DohMethod::Post, h3)]);
    for (method, http3) in cases {
        let method_and_version = format!("{method:?} http3={http3}");
        let method = (method, method_and_version);
        let (mut spec, lines) = encrypted_spec(&server, DnsTransport::Doh);
        spec.doh_http3 = http3;
        spec.doh_method = method.0;
        spec.passes = Some(2);
        let mut opts = dns_options(spec.clone(), &lines);
        opts.tls.cacert = Some(cert_pem.clone());
        let r = run_dns(opts).await;
        // A request per query on one HTTP/2 or HTTP/3 connection per client. Over HTTP/2
        // CoreDNS 1.15 truncates nothing; over HTTP/3 it sizes answers as its DoQ does (as UDP
        // ones: the two large TXT answers come with TC=1), and they are counted so.
        let method = method.1;
        assert_zone_answers(&r, 2, if http3 { 2 } else { 0 });
        assert_eq!(r.summary.stream_errors, 0, "{method}: {:?}", r.summary);
        assert_eq!(r.summary.connections.as_ref().unwrap().successful, 2, "{method}");

        // A path the server does not serve: every request answered 404, each a stream error
        // and its query lost, none mistaken for an answer.
        spec.doh_path = Some("/nowhere".into());
        spec.passes = Some(1);
        spec.timeout_ns = 300_000_000;
        let mut opts = dns_options(spec, &lines);
        opts.tls.cacert = Some(cert_pem.clone());
        let r = run_dns(opts).await;
        let s = &r.summary;
        assert_eq!(
            (s.completed, s.stream_errors, s.lost),
            (0, QUERIES.0, QUERIES.0),
            "{method}: {s:?}"
        );
    }
}

/// A certificate for `localhost` and its key, as PEM files in `dir`.
fn localhost_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert_pem, key_pem) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_pem, cert.cert.pem()).unwrap();
    std::fs::write(&key_pem, cert.key_pair.serialize_pem()).unwrap();
    (cert_pem, key_pem)
}

/// CoreDNS's DoQ or DoH as a spec's server: its port for `transport`, two clients, 20
/// queries in flight, the certificate's name in SNI.
fn encrypted_spec(
    server: &DnsServer,
    transport: DnsTransport,
) -> (DnsSpec, Vec<datafile::QueryLine>) {
    let (mut spec, lines) = spec_for(server);
    spec.port = match transport {
        DnsTransport::Doh => server.https_port.unwrap(),
        _ => server.tls_port.unwrap(),
    };
    spec.transport = transport;
    spec.clients = 2;
    spec.max_outstanding = 20;
    spec.sni = Some("localhost".into());
    (spec, lines)
}
