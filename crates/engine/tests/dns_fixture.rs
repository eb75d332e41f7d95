//! `wirespeed dns` against the built-in DNS fixture: every query of the built-in list is
//! answered with the code the zone says, over UDP and TCP, in the closed and open loops;
//! truncation and `--tc-retry`; passes and the time limit.

mod common;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::dns::client::{self, DnsOptions};
use wirespeed_engine::dns::queries::{builtin_lines, QuerySet};
use wirespeed_engine::http::tls::TlsOptions;
use wirespeed_model::dns::{DnsReport, DnsSpec, DnsTransport};
use wirespeed_model::ReportBody;
use wirespeed_proto::dns::datafile::QueryLine;

pub fn options(spec: DnsSpec, lines: &[QueryLine]) -> DnsOptions {
    let edns =
        (spec.edns_size.is_some() || spec.dnssec_ok).then(|| wirespeed_proto::dns::wire::Edns {
            udp_size: spec.edns_size.unwrap_or(4096),
            dnssec_ok: spec.dnssec_ok,
        });
    DnsOptions {
        queries: Arc::new(QuerySet::from_lines(lines, edns).unwrap()),
        spec,
        family: None,
        tls: TlsOptions::default(),
        connect_timeout: Duration::from_secs(2),
        version: "test".into(),
    }
}

pub async fn run(opts: DnsOptions) -> DnsReport {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = client::run(opts, tx, CancellationToken::new()).await.unwrap();
    let ReportBody::Dns(d) = report.body else { panic!("not a DNS report") };
    d
}

fn rcode(r: &DnsReport, name: &str) -> u64 {
    r.summary.rcodes.iter().find(|c| c.name == name).map_or(0, |c| c.count)
}

#[tokio::test]
async fn one_pass_over_udp_answers_every_query_with_the_zones_codes() {
    let (port, stop) = common::dns_fixture().await;
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.passes = Some(3);
    let r = run(options(spec, &builtin_lines(1000))).await;
    let s = &r.summary;
    assert_eq!(s.sent, 3 * 1005);
    assert_eq!(s.completed, s.sent, "{s:?}");
    assert_eq!((s.lost, s.stray.total(), s.truncated), (0, 0, 0));
    // One NXDOMAIN (nx1) per pass; everything else NOERROR (NODATA included).
    assert_eq!(rcode(&r, "NXDOMAIN"), 3);
    assert_eq!(rcode(&r, "NOERROR"), 3 * 1004);
    assert_eq!(s.end_reason, "end of file");
    assert!(s.queries_per_second > 0.0 && s.latency.count == s.completed);
    assert!(s.exact.min_ns > 0 && s.exact.max_ns >= s.exact.min_ns);
    assert!(s.request_bytes > 30 * s.sent && s.response_bytes > s.request_bytes);
    stop.cancel();
}
