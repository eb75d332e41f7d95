//! `wirespeed dns` against the built-in DNS fixture: every query of the built-in list is
//! answered with the code the zone says, over UDP and TCP, in the closed and open loops;
//! truncation and `--tc-retry`; passes, the time limit and interruption.

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::dns::queries::builtin_lines;
use wirespeed_model::kinds::dns::{DnsSpec, DnsTransport};
use wirespeed_model::{Event, ReportBody};
use wirespeed_proto::dns::datafile;

use crate::common::{self, dns_options, rcode, run_dns};

#[tokio::test]
async fn passes_over_udp_answer_every_query_with_the_zones_codes() {
    let (port, stop) = common::dns_fixture().await;
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.passes = Some(3);
    spec.clients = 4;
    spec.threads = 2;
    let r = run_dns(dns_options(spec, &builtin_lines(1000))).await;
    let s = &r.summary;
    assert_eq!(s.sent, 3 * 1005);
    assert_eq!(s.completed, s.sent, "{s:?}");
    assert_eq!((s.lost, s.stray.total(), s.truncated, s.send_errors), (0, 0, 0, 0));
    // One NXDOMAIN (nx1) per pass; everything else NOERROR (the NODATA www MX included).
    assert_eq!(rcode(&r, "NXDOMAIN"), 3);
    assert_eq!(rcode(&r, "NOERROR"), 3 * 1004);
    assert_eq!(s.end_reason, "end of file");
    assert_eq!(s.latency.count, s.completed);
    assert!(s.exact.min_ns > 0 && s.exact.max_ns >= s.exact.min_ns);
    assert!(s.request_bytes >= 30 * s.sent && s.response_bytes > s.request_bytes);
    assert_eq!(r.intervals.iter().map(|i| i.completed).sum::<u64>(), s.completed);
    stop.cancel();
}

#[tokio::test]
async fn tcp_pipelines_and_matches_out_of_order_answers() {
    let (port, stop) = common::dns_fixture().await;
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.transport = DnsTransport::Tcp;
    spec.clients = 3;
    spec.passes = Some(2);
    let r = run_dns(dns_options(spec, &builtin_lines(1000))).await;
    let s = &r.summary;
    assert_eq!((s.sent, s.completed, s.lost), (2010, 2010, 0), "{s:?}");
    assert_eq!(rcode(&r, "NXDOMAIN"), 2);
    let c = s.connections.as_ref().expect("connection statistics");
    assert_eq!((c.attempts, c.successful), (3, 3));
    assert_eq!(c.setup.count, 3);
    stop.cancel();
}

#[tokio::test]
async fn truncated_answers_are_counted_and_re_asked_over_tcp() {
    let (port, stop) = common::dns_fixture().await;
    let lines = datafile::parse("big.example.test TXT\nwww.example.test A\n").unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.passes = Some(10);
    spec.tc_retry = true;
    let r = run_dns(dns_options(spec.clone(), &lines)).await;
    let s = &r.summary;
    assert_eq!((s.completed, s.truncated), (20, 10), "{s:?}");
    assert_eq!((s.tc_retried, s.tc_retry_completed), (10, 10), "{s:?}");
    // With EDNS 4096 the 2 KB record fits a datagram.
    spec.tc_retry = false;
    spec.edns_size = Some(4096);
    let r = run_dns(dns_options(spec, &lines)).await;
    assert_eq!((r.summary.completed, r.summary.truncated), (20, 0), "{:?}", r.summary);
    stop.cancel();
}

#[tokio::test]
async fn the_time_limit_and_the_open_loop() {
    let (port, stop) = common::dns_fixture().await;
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.duration_ns = Some(500_000_000);
    spec.interval_ns = 100_000_000;
    let r = run_dns(dns_options(spec.clone(), &builtin_lines(1000))).await;
    let s = &r.summary;
    assert_eq!(s.end_reason, "time limit");
    assert!(s.completed > 1005, "the file wraps around under -l: {s:?}");
    assert_eq!((s.sent, s.lost), (s.completed, 0));
    assert!(r.intervals.len() >= 4, "{:?}", r.intervals);
    // Open loop: 2000 queries/s for 0.5 s is about a thousand queries, on schedule.
    spec.rate = Some(2000.0);
    spec.clients = 2;
    let r = run_dns(dns_options(spec, &builtin_lines(1000))).await;
    let s = &r.summary;
    assert!((1000..=1100).contains(&(s.sent + s.unsent)), "{s:?}");
    assert_eq!(s.completed, s.sent);
    // The rate was asked for; the server's answer is its latency, which leads.
    use wirespeed_model::kind::KindReport;
    let names: Vec<&str> = r.metrics().iter().map(|m| m.key).collect();
    assert_eq!(names[..3], ["latency_p50_ns", "latency_p99_ns", "queries_per_second"]);
    stop.cancel();
}

#[tokio::test]
async fn an_interruption_counts_what_was_in_flight() {
    let (port, stop) = common::dns_fixture().await;
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.duration_ns = Some(30_000_000_000);
    spec.interval_ns = 100_000_000;
    let opts = dns_options(spec, &builtin_lines(1000));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    // Interrupted once queries are flowing: at its first interval.
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if matches!(event, Event::DnsInterval(_)) {
                c.cancel();
            }
        }
    });
    let report = wirespeed_engine::kinds::dns::client::run(opts, tx, cancel).await.unwrap();
    let ReportBody::Dns(r) = report.body else { panic!() };
    let s = &r.summary;
    assert_eq!(s.end_reason, "interruption");
    assert_eq!(s.sent, s.completed + s.lost + s.interrupted, "{s:?}");
    assert!(s.duration_ns < 5_000_000_000, "it stopped at once: {s:?}");
    assert!(report.meta.notes.iter().any(|n| n.contains("interrupted")));
    stop.cancel();
}
