//! How bandwidth runs read as CSV: one row per interval and flow (streams summed), then one
//! summary row per flow; empty cells where a figure does not apply (TCP has no loss, UDP no
//! retransmits).

use wirespeed_model::kinds::bandwidth::{BandwidthInterval, BandwidthReport, Figures, Flow};

use crate::csv::{interval_cells, opt, record};

/// The header line.
pub(super) const COLUMNS: &str = "row,index,start_s,end_s,omitted,flow,sent_bytes,received_bytes,sent_bps,received_bps,\
sent_packets,received_packets,sent_pps,received_pps,lost_packets,loss_ratio,out_of_order_packets,duplicate_packets,jitter_ns,\
retransmits,cwnd_bytes,rtt_ns,pacing_bps,delivery_bps";

fn flow_name(f: Flow) -> &'static str {
    match f {
        Flow::Upload => "upload",
        Flow::Download => "download",
    }
}

fn cells(f: &Figures) -> [String; 18] {
    [
        f.sent_bytes.to_string(),
        f.received_bytes.to_string(),
        format!("{:.0}", f.sent_bps),
        format!("{:.0}", f.received_bps),
        opt(f.sent_packets),
        opt(f.received_packets),
        opt(f.sent_pps.map(|p| format!("{p:.1}"))),
        opt(f.received_pps.map(|p| format!("{p:.1}"))),
        opt(f.lost_packets),
        opt(f.loss_ratio),
        opt(f.out_of_order_packets),
        opt(f.duplicate_packets),
        opt(f.jitter_ns.map(|j| format!("{j:.0}"))),
        opt(f.retransmits),
        opt(f.cwnd_bytes),
        opt(f.rtt_ns),
        opt(f.pacing_bps),
        opt(f.delivery_bps),
    ]
}

/// One row per flow of an interval.
pub(super) fn interval_rows(iv: &BandwidthInterval) -> Vec<String> {
    iv.flows
        .iter()
        .map(|f| {
            let head = interval_cells(iv.index, iv.start_ns, iv.end_ns, iv.omitted);
            let flow = flow_name(f.flow).to_string();
            record(head.into_iter().chain([flow]).chain(cells(&f.total)))
        })
        .collect()
}

/// One summary row per flow, spanning the measured part.
pub(super) fn summary_rows(b: &BandwidthReport) -> Vec<String> {
    let start = b.spec.omit_ns as f64 / 1e9;
    b.summary
        .flows()
        .map(|f| {
            let head = [
                "summary".to_string(),
                String::new(),
                format!("{start:.3}"),
                format!("{:.3}", start + f.duration_ns as f64 / 1e9),
                "false".to_string(),
                flow_name(f.flow).to_string(),
            ];
            record(head.into_iter().chain(cells(&f.total)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::fixtures::report;
    use crate::{render_report, Format};
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;

    #[test]
    fn tcp_bidir_rows() {
        let mut out = Vec::new();
        render_report(&report(Protocol::Tcp, Direction::Bidir), Format::Csv, false, &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let width = text.lines().next().unwrap().split(',').count();
        assert!(text.lines().all(|l| l.split(',').count() == width), "ragged rows");
        insta::assert_snapshot!(text);
    }
}
