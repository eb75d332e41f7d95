//! What either end of an iperf3-compatible test puts in its results document, from its own
//! stream counters. Shared by our iperf3 server and our iperf3 client.

use wirespeed_model::kinds::bandwidth::Totals;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::rules::Protocol;
use wirespeed_proto::control::StreamTotals;
use wirespeed_proto::iperf3::{stream_id, stream_slot, Omitted, Results, StreamResult};

/// The totals of stream (`flow`, `id`) in a snapshot; zero when absent.
pub(crate) fn totals_of(list: &[StreamTotals], flow: Flow, id: u16) -> Totals {
    list.iter().find(|s| s.flow == flow && s.id == id).map(|s| s.totals).unwrap_or_default()
}

/// Number of streams an iperf3 test has (both directions in `--bidir`).
pub(crate) fn stream_count(spec: &BandwidthSpec) -> usize {
    Flow::of(spec.direction).len() * usize::from(spec.parallel)
}

/// The results document of end `me`: per stream in the client's creation order, counts after
/// the warm-up, and CPU use of the data threads over `wall_ns`.
pub(crate) fn local_results(
    spec: &BandwidthSpec,
    me: End,
    at_omit: &[StreamTotals],
    at_end: &[StreamTotals],
    (user_ns, system_ns): (u64, u64),
    wall_ns: u64,
) -> Results {
    let streams = (0..stream_count(spec))
        .map(|i| {
            let (flow, id) = stream_slot(spec.direction, spec.parallel, i);
            let sending = flow.sender() == me;
            let end = totals_of(at_end, flow, id);
            let omit = totals_of(at_omit, flow, id);
            let d = end.since(&omit);
            StreamResult {
                id: stream_id(i),
                bytes: d.bytes,
                retransmits: match (sending, d.tcp) {
                    (true, Some(t)) => t.retransmits as i64,
                    _ => -1,
                },
                jitter_s: if sending { 0.0 } else { end.jitter_ns / 1e9 },
                // Datagram counts run from the start, warm-up included, as iperf3's do (its
                // peer subtracts its own warm-up count); bytes leave the warm-up out.
                errors: if sending { 0 } else { end.lost },
                // iperf3's receiver reports the highest sequence number seen, its sender the
                // datagrams sent; both are the count the peer divides lost datagrams by.
                packets: if sending { end.packets } else { end.packets + end.lost },
                // The warm-up is not part of the measured span.
                start_time_s: spec.omit_ns as f64 / 1e9,
                end_time_s: wall_ns as f64 / 1e9,
                // The same counts when the warm-up ended (zero without one), which the peer
                // subtracts: iperf3 3.21 reads their absence as "every datagram was warm-up".
                omitted: Some(if sending {
                    Omitted { packets: omit.packets, errors: 0 }
                } else {
                    Omitted { packets: omit.packets + omit.lost, errors: omit.lost }
                }),
            }
        })
        .collect();
    let pct = |ns: u64| if wall_ns == 0 { 0.0 } else { ns as f64 * 100.0 / wall_ns as f64 };
    let i_send = match me {
        End::Client => spec.direction.client_sends(),
        End::Server => spec.direction.server_sends(),
    };
    Results {
        cpu_util: [pct(user_ns + system_ns), pct(user_ns), pct(system_ns)],
        // -1 tells the peer this end only received.
        sender_has_retransmits: if i_send { i64::from(spec.protocol == Protocol::Tcp) } else { -1 },
        congestion_used: spec.congestion.clone(),
        streams,
        server_output_json: None,
        server_output_text: None,
    }
}
