//! Reports to save, for the tests of what keeps and shows runs.

use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthReport, BandwidthSpec, BandwidthSummary, CpuUsage, End, Figures,
    Flow, FlowFigures, FlowSummary,
};
use wirespeed_model::report::Meta;
use wirespeed_model::rules::Protocol;
use wirespeed_model::{Report, ReportBody};

/// A TCP upload to 127.0.0.1 started at `start_ms`: one interval of `interval_ns` per rate in
/// `rates` (bits per second received), and a summary of `summary_bps` over `duration_ns`.
pub fn bandwidth_report(
    start_ms: u64,
    interval_ns: u64,
    rates: impl IntoIterator<Item = f64>,
    summary_bps: f64,
    duration_ns: u64,
) -> Report {
    let figures = |bps: f64| Figures { received_bps: bps, ..Default::default() };
    let intervals = rates
        .into_iter()
        .zip(0u32..)
        .map(|(bps, i)| BandwidthInterval {
            index: i,
            start_ns: u64::from(i) * interval_ns,
            end_ns: u64::from(i + 1) * interval_ns,
            omitted: false,
            measured_at: None,
            flows: vec![FlowFigures { flow: Flow::Upload, total: figures(bps), streams: vec![] }],
            probe_rtt: None,
            probe_udp_rtt: None,
        })
        .collect();
    Report {
        body: ReportBody::Bandwidth(BandwidthReport {
            spec: BandwidthSpec::new("127.0.0.1", Protocol::Tcp),
            intervals,
            summary: BandwidthSummary {
                primary: FlowSummary {
                    flow: Flow::Upload,
                    sender: End::Client,
                    duration_ns,
                    total: figures(summary_bps),
                    rtt_range_ns: None,
                    cwnd_max_bytes: None,
                    streams: vec![],
                },
                reverse: None,
                client_cpu: CpuUsage::default(),
                server_cpu: None,
                latency: None,
                udp_latency: None,
            },
        }),
        meta: Meta { version: "0.1.0".into(), start_unix_ms: start_ms, ..Default::default() },
    }
}
