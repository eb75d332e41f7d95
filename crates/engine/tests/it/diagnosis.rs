//! The diagnosis a run carries, against a real in-process server: the client's threads as it
//! watched them, the server's data threads as the server reported them, and the same
//! diagnosis in the returned report and in the end event that renderers and the store see.

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::latency::client::LatencyOptions;
use wirespeed_engine::kinds::{self, Client};
use wirespeed_model::diagnosis::{Diagnosis, FindingCode};
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::rules::Protocol;
use wirespeed_model::{Event, Report};

use crate::common::{spec, TestServer};

/// Runs `client` as the binary does and returns its report, checking that the end event
/// carried the same diagnosis.
async fn run(client: Client) -> (Report, Diagnosis) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let report = kinds::run(client, tx, CancellationToken::new()).await.expect("the test runs");
    let mut ended = None;
    while let Ok(event) = rx.try_recv() {
        assert!(ended.is_none(), "the end event is the last");
        if let Event::End(r) = event {
            ended = Some(*r);
        }
    }
    assert_eq!(ended.as_ref(), Some(&report), "the end event carries the diagnosed report");
    let diagnosis = report.meta.diagnosis.clone().expect("every run is diagnosed");
    (report, diagnosis)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bandwidth_run_reports_both_ends_threads() {
    let server = TestServer::loopback().await;
    let (_, d) = run(Client::Bandwidth(server.opts(spec(Protocol::Tcp, 1.0)))).await;
    let names = |t: &[wirespeed_model::diagnosis::ThreadCpu]| {
        t.iter().map(|t| t.name.clone()).collect::<Vec<_>>()
    };
    // The in-process server's threads are this process's too; the client's sender is there.
    assert!(
        d.client_threads.iter().any(|t| t.name == "ws-tx-u1" && t.busy_ratio() > 0.0),
        "{:?}",
        names(&d.client_threads)
    );
    let receiver = d.server_threads.iter().find(|t| t.name == "ws-rx-u1");
    let receiver = receiver.unwrap_or_else(|| panic!("{:?}", names(&d.server_threads)));
    assert!(receiver.user_ns + receiver.system_ns > 0 && receiver.span_ns > 0, "{receiver:?}");
    assert!(d.wall_ns >= 1_000_000_000 && d.cpus >= 1, "{d:?}");
    assert!(d.wakeup.is_some_and(|w| w.samples >= 5), "{:?}", d.wakeup);
    assert!(d.ports.is_some_and(|p| p.ephemeral > 0), "{:?}", d.ports);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_run_reports_the_echo_threads_and_knows_busy_polling_is_chosen() {
    let server = TestServer::loopback().await;
    let mut s = LatencySpec::new("test", Protocol::Udp);
    s.duration_ns = 1_000_000_000;
    s.interval_ns = 250_000_000;
    s.busy_poll = true;
    let opts = LatencyOptions { spec: s, endpoint: server.endpoint(), member: Default::default() };
    let (_, d) = run(Client::Latency(opts)).await;
    assert!(d.server_threads.iter().any(|t| t.name == "ws-echo-1"), "{:?}", d.server_threads);
    let poller = d.client_threads.iter().find(|t| t.name == "ws-rtt-1").expect("the client thread");
    assert!(poller.busy_ratio() > 0.0, "{poller:?}");
    // However busy the polling threads (the client's, and the server's echo, which polls for
    // such a client), polling by choice is no limit of either side.
    assert!(!d.findings.iter().any(|f| f.code == FindingCode::SaturatedCore), "{:?}", d.findings);
    server.shutdown().await;
}
