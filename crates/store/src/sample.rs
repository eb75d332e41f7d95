//! A small report for the store's own tests to save.

use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthReport, BandwidthSpec, BandwidthSummary, CpuUsage, End, Figures,
    Flow, FlowFigures, FlowSummary,
};
use wirespeed_model::report::Meta;
use wirespeed_model::rules::Protocol;
use wirespeed_model::{Report, ReportBody};

/// A bandwidth report started at `ms` that moved `bps`.
pub(crate) fn report(ms: u64, bps: f64) -> Report {
    let figures = Figures { received_bps: bps, ..Default::default() };
    Report {
        body: ReportBody::Bandwidth(BandwidthReport {
            spec: BandwidthSpec::new("127.0.0.1", Protocol::Tcp),
            intervals: vec![BandwidthInterval {
                index: 0,
                start_ns: 0,
                end_ns: 1_000_000_000,
                omitted: false,
                measured_at: None,
                flows: vec![FlowFigures {
                    flow: Flow::Upload,
                    total: figures.clone(),
                    streams: vec![],
                }],
                probe_rtt: None,
                probe_udp_rtt: None,
            }],
            summary: BandwidthSummary {
                primary: FlowSummary {
                    flow: Flow::Upload,
                    sender: End::Client,
                    duration_ns: 1,
                    total: figures,
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
        meta: Meta { version: "0.1.0".into(), start_unix_ms: ms, ..Default::default() },
    }
}
