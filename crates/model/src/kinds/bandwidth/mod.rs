//! The bandwidth test's plain data (iperf3's test, and `pps`): what it is asked to do
//! ([`BandwidthSpec`]), the mergeable [`Figures`] its streams count and the finished run
//! ([`BandwidthReport`]).

mod figures;
mod report;
mod spec;

pub use figures::{Figures, SideDelta, TcpSample, Totals};
pub use report::{
    BandwidthInterval, BandwidthReport, BandwidthSummary, CpuUsage, FlowFigures, FlowSummary,
    LoadedLatency, StreamFigures,
};
pub use spec::{
    BandwidthSpec, Direction, End, Flow, DEFAULT_TCP_LENGTH, DEFAULT_UDP_BITRATE,
    DEFAULT_UDP_LENGTH, MAX_QUIC_STREAMS, MAX_TCP_LENGTH, MAX_UDP_LENGTH, MIN_UDP_LENGTH,
    QUIC_CONGESTION,
};

impl crate::merge_parts::MergeRuns for BandwidthReport {
    type Spec = BandwidthSpec;

    fn merge(
        parts: &[crate::merge_parts::Part<'_, Self>],
        spec: &BandwidthSpec,
    ) -> Result<Option<Self>, crate::histogram::HistogramError> {
        Ok(Some(merge(parts, spec)))
    }
}

/// The members' reports of one bandwidth (or `pps`) run merged (see [`crate::merge`]): each
/// interval's and the summary's flows merged as streams are ([`Figures::merge`]: bytes and
/// rates add up, RTT is a mean over members), every member's streams listed (numbered on from
/// the previous member's), the longest member's time, and the busiest member's CPU.
fn merge(
    parts: &[crate::merge_parts::Part<'_, BandwidthReport>],
    spec: &BandwidthSpec,
) -> BandwidthReport {
    // Stream ids restart at each member: number them on, so each stays distinct.
    let mut offsets = Vec::with_capacity(parts.len());
    let mut next = 0u16;
    for p in parts {
        offsets.push(next);
        let most = p.report.summary.primary.streams.iter().map(|s| s.id).max().unwrap_or(0);
        next = next.saturating_add(most.saturating_add(1));
    }
    let renumber = |streams: &[StreamFigures], offset: u16| -> Vec<StreamFigures> {
        streams
            .iter()
            .map(|s| StreamFigures { id: s.id.saturating_add(offset), ..s.clone() })
            .collect()
    };
    let merge_flows = |flows: Vec<(&FlowFigures, u16)>| -> FlowFigures {
        FlowFigures {
            flow: flows[0].0.flow,
            total: Figures::merge(flows.iter().map(|(f, _)| &f.total)),
            streams: flows.iter().flat_map(|(f, o)| renumber(&f.streams, *o)).collect(),
        }
    };
    let intervals = crate::merge_parts::each_interval(
        parts,
        |r| &r.intervals,
        |shape, _, k| {
            let flows = shape
                .flows
                .iter()
                .map(|f| {
                    let same: Vec<(&FlowFigures, u16)> = parts
                        .iter()
                        .zip(&offsets)
                        .filter_map(|(p, o)| {
                            let iv = p.report.intervals.get(k)?;
                            Some((iv.flows.iter().find(|g| g.flow == f.flow)?, *o))
                        })
                        .collect();
                    merge_flows(same)
                })
                .collect();
            Ok::<_, std::convert::Infallible>(BandwidthInterval {
                flows,
                probe_rtt: None,
                probe_udp_rtt: None,
                ..shape.clone()
            })
        },
    );
    let Ok(intervals) = intervals;
    let merge_summary = |pick: &dyn Fn(&BandwidthSummary) -> Option<&FlowSummary>| {
        let all: Vec<(&FlowSummary, u16)> = parts
            .iter()
            .zip(&offsets)
            .filter_map(|(p, o)| Some((pick(&p.report.summary)?, *o)))
            .collect();
        let first = all.first()?.0;
        let ranges: Vec<_> = all.iter().filter_map(|(f, _)| f.rtt_range_ns).collect();
        Some(FlowSummary {
            flow: first.flow,
            sender: first.sender,
            duration_ns: all.iter().map(|(f, _)| f.duration_ns).max().unwrap_or(0),
            total: Figures::merge(all.iter().map(|(f, _)| &f.total)),
            rtt_range_ns: (!ranges.is_empty()).then(|| crate::stats::GaugeStats {
                min: ranges.iter().map(|r| r.min).min().unwrap_or(0),
                max: ranges.iter().map(|r| r.max).max().unwrap_or(0),
                mean: ranges.iter().map(|r| r.mean).sum::<u64>() / ranges.len() as u64,
            }),
            cwnd_max_bytes: all.iter().filter_map(|(f, _)| f.cwnd_max_bytes).reduce(|a, b| a + b),
            streams: all.iter().flat_map(|(f, o)| renumber(&f.streams, *o)).collect(),
        })
    };
    let busiest = |cpu: &mut dyn Iterator<Item = CpuUsage>| {
        cpu.max_by(|a, b| a.total_ratio.total_cmp(&b.total_ratio))
    };
    let first = &parts[0].report.summary;
    BandwidthReport {
        spec: spec.clone(),
        intervals,
        summary: BandwidthSummary {
            primary: merge_summary(&|s| Some(&s.primary)).unwrap_or_else(|| first.primary.clone()),
            reverse: merge_summary(&|s| s.reverse.as_ref()),
            client_cpu: busiest(&mut parts.iter().map(|p| p.report.summary.client_cpu))
                .unwrap_or_default(),
            server_cpu: busiest(&mut parts.iter().filter_map(|p| p.report.summary.server_cpu)),
            // Each member probed its own path: no one figure stands for them all.
            latency: None,
            udp_latency: None,
        },
    }
}
