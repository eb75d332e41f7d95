//! The one place bandwidth figures are computed. The collector takes this side's periodic
//! snapshots and the peer's, pairs them by interval index, and turns the differences into
//! intervals; at the end it builds the summary from the warm-up and final snapshots of both
//! ends. Pure code: no sockets, no clocks.

use std::collections::BTreeMap;

use wirespeed_model::histogram::LatencyStats;
use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthSummary, CpuUsage, FlowFigures, FlowSummary, LoadedLatency,
    StreamFigures,
};
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::kinds::bandwidth::{Figures, SideDelta, Totals};
use wirespeed_model::rules::Protocol;
use wirespeed_model::stats::{per_second, GaugeStats};
use wirespeed_model::units::bits_per_second;
use wirespeed_proto::control::{ServerResults, StreamTotals};

/// Snapshots of every stream end of one side, keyed by (flow, stream id).
type Snap = BTreeMap<(Flow, u16), Totals>;

fn to_snap(v: &[StreamTotals]) -> Snap {
    v.iter().map(|s| ((s.flow, s.id), s.totals)).collect()
}

/// What the client measured on its own side, for [`Collector::finish`].
#[derive(Debug, Clone, Default)]
pub struct LocalEnd {
    /// Totals when the warm-up ended.
    pub at_omit: Vec<StreamTotals>,
    /// Totals at the end.
    pub at_end: Vec<StreamTotals>,
    /// Nanoseconds since begin when the last stream finished.
    pub end_ns: u64,
    /// Per flow, send (client-sent flows) or receive (client-received flows) time after warm-up.
    pub active_ns: Vec<(Flow, u64)>,
    /// Data threads' CPU time, (user, system) nanoseconds.
    pub cpu_ns: (u64, u64),
}

/// Pairs client and server snapshots into intervals and a summary.
#[derive(Debug)]
pub struct Collector {
    spec: BandwidthSpec,
    local_ticks: Vec<(u64, Snap)>,
    remote_ticks: BTreeMap<u32, Snap>,
    emitted: usize,
    intervals: Vec<BandwidthInterval>,
    /// True when the server sends no ticks (an iperf3 server): intervals carry the client's
    /// side alone, and only the summary pairs both ends.
    client_only: bool,
    /// `--latency`: the round trips probed beside the test.
    probes: Option<Box<dyn ProbeWindow>>,
}

/// Round trips probed beside a test, by the test's time (nanoseconds since it began).
pub trait ProbeWindow: std::fmt::Debug + Send {
    /// The probes that ended in `[start_ns, end_ns)`, and how many of them failed.
    fn between(&self, start_ns: u64, end_ns: u64) -> (LatencyStats, u64);
    /// The probes before the test, and how many failed.
    fn idle(&self) -> (LatencyStats, u64);
    /// As [`Self::between`] for the UDP echo probes; `None` where the server answers none.
    fn udp_between(&self, start_ns: u64, end_ns: u64) -> Option<(LatencyStats, u64)>;
    /// As [`Self::idle`] for the UDP echo probes; `None` where the server answers none.
    fn udp_idle(&self) -> Option<(LatencyStats, u64)>;
}

/// Idle against loaded round trips, from the probes before the test and those between
/// `(start_ns, end_ns)`.
fn loaded_latency(idle: (LatencyStats, u64), loaded: (LatencyStats, u64)) -> LoadedLatency {
    let ((idle, idle_failed), (loaded, failed)) = (idle, loaded);
    LoadedLatency {
        added_ns: loaded.p50_ns.saturating_sub(idle.p50_ns),
        idle,
        loaded,
        failed: failed + idle_failed,
    }
}

impl Collector {
    /// A collector for a test run by the client with `spec`.
    pub fn new(spec: BandwidthSpec) -> Self {
        Self {
            spec,
            local_ticks: Vec::new(),
            remote_ticks: BTreeMap::new(),
            emitted: 0,
            probes: None,
            intervals: Vec::new(),
            client_only: false,
        }
    }

    /// A collector for a server that reports only final totals (iperf3).
    pub fn client_only(spec: BandwidthSpec) -> Self {
        Self { client_only: true, ..Self::new(spec) }
    }

    /// The client's snapshot at the end of its interval `local_ticks.len()`, taken `end_ns` after
    /// begin. Returns the intervals now complete.
    pub fn local_tick(&mut self, end_ns: u64, totals: &[StreamTotals]) -> Vec<BandwidthInterval> {
        self.local_ticks.push((end_ns, to_snap(totals)));
        self.ready()
    }

    /// The server's snapshot at the end of its interval `index`. Returns the intervals now complete.
    pub fn remote_tick(&mut self, index: u32, totals: &[StreamTotals]) -> Vec<BandwidthInterval> {
        self.remote_ticks.insert(index, to_snap(totals));
        self.ready()
    }

    fn ready(&mut self) -> Vec<BandwidthInterval> {
        let mut out = Vec::new();
        while self.emitted < self.local_ticks.len() {
            let i = self.emitted;
            let remote = if self.client_only {
                Snap::new()
            } else {
                let Some(remote) = self.remote_ticks.get(&(i as u32)).cloned() else { break };
                remote
            };
            let start = if i == 0 { 0 } else { self.local_ticks[i - 1].0 };
            let local = self.local_ticks[i].1.clone();
            let iv = self.interval(i, start, self.local_ticks[i].0, &local, &remote);
            self.intervals.push(iv.clone());
            out.push(iv);
            self.emitted += 1;
        }
        out
    }

    fn prev(&self, i: usize) -> (Snap, Snap) {
        if i == 0 {
            return (Snap::new(), Snap::new());
        }
        let local = self.local_ticks[i - 1].1.clone();
        let remote = self.remote_ticks.get(&(i as u32 - 1)).cloned().unwrap_or_default();
        (local, remote)
    }

    /// Puts each interval's probed round trips in it, and the idle and loaded ones in the
    /// summary.
    pub fn with_probes(mut self, probes: Box<dyn ProbeWindow>) -> Self {
        self.probes = Some(probes);
        self
    }

    fn interval(
        &self,
        i: usize,
        start_ns: u64,
        end_ns: u64,
        local: &Snap,
        remote: &Snap,
    ) -> BandwidthInterval {
        let (prev_local, prev_remote) = self.prev(i);
        let span = end_ns.saturating_sub(start_ns);
        let udp = self.spec.protocol == Protocol::Udp;
        let flows = Flow::of(self.spec.direction)
            .iter()
            .map(|&flow| {
                let streams: Vec<StreamFigures> = (1..=self.spec.parallel)
                    .map(|id| {
                        let (sent, recv) =
                            sides(flow, id, (&prev_local, local), (&prev_remote, remote));
                        StreamFigures {
                            id,
                            figures: Figures::from_sides(udp, &sent, &recv, span, false),
                        }
                    })
                    .collect();
                FlowFigures {
                    flow,
                    total: Figures::merge(streams.iter().map(|s| &s.figures)),
                    streams,
                }
            })
            .collect();
        BandwidthInterval {
            index: i as u32,
            start_ns,
            end_ns,
            omitted: start_ns < self.spec.omit_ns,
            measured_at: self.client_only.then_some(End::Client),
            flows,
            probe_rtt: self.probes.as_ref().map(|p| p.between(start_ns, end_ns).0),
            probe_udp_rtt: self
                .probes
                .as_ref()
                .and_then(|p| p.udp_between(start_ns, end_ns))
                .map(|(stats, _)| stats),
        }
    }

    /// How many intervals have been returned so far by the tick methods.
    pub fn emitted(&self) -> usize {
        self.emitted
    }

    /// Completes the run: every interval (the ones already returned, then the rest up to the
    /// end) and the summary.
    pub fn finish(
        mut self,
        local: &LocalEnd,
        server: &ServerResults,
    ) -> (Vec<BandwidthInterval>, BandwidthSummary) {
        // Intervals still waiting for a server tick use the server's final totals.
        let server_end = if self.client_only { Snap::new() } else { to_snap(&server.at_end) };
        let local_end = to_snap(&local.at_end);
        while self.emitted < self.local_ticks.len() {
            let i = self.emitted;
            let remote =
                self.remote_ticks.get(&(i as u32)).cloned().unwrap_or_else(|| server_end.clone());
            self.remote_ticks.insert(i as u32, remote.clone());
            let start = if i == 0 { 0 } else { self.local_ticks[i - 1].0 };
            let (end, snap) = self.local_ticks[i].clone();
            let iv = self.interval(i, start, end, &snap, &remote);
            self.intervals.push(iv);
            self.emitted += 1;
        }
        // The last stretch, from the last tick to the end, is its own interval (in a timed test
        // the client takes no tick at the deadline, so this is a full interval plus the drain).
        let n = self.local_ticks.len();
        let last_end = self.local_ticks.last().map_or(0, |t| t.0);
        let end_ns = local.end_ns.max(last_end);
        self.local_ticks.push((end_ns, local_end.clone()));
        self.remote_ticks.insert(n as u32, server_end);
        let iv =
            self.interval(n, last_end, end_ns, &local_end, &self.remote_ticks[&(n as u32)].clone());
        self.intervals.push(iv);
        let mut summary = self.summary(local, server, true);
        let omit_ns = self.spec.omit_ns;
        self.add_probes(&mut summary, omit_ns, end_ns);
        (self.intervals, summary)
    }

    /// Completes a run cut short (the server lost, a stream failed): the intervals both ends
    /// reported, and a summary over them alone, from the last snapshots both ends agree on.
    /// Ticks of one side only are left out: half an interval's figures would count the bytes
    /// in flight as lost. `cpu_ns` is this side's data threads' (user, system) time over the
    /// `wall_ns` they ran; the server's is unknown.
    pub fn abandon(
        self,
        cpu_ns: (u64, u64),
        wall_ns: u64,
    ) -> (Vec<BandwidthInterval>, BandwidthSummary) {
        let paired = self.emitted;
        let snap_at = |ticks: usize| -> (u64, Snap, Snap) {
            match ticks.checked_sub(1) {
                None => (0, Snap::new(), Snap::new()),
                Some(i) => {
                    let remote = self.remote_ticks.get(&(i as u32)).cloned().unwrap_or_default();
                    (self.local_ticks[i].0, self.local_ticks[i].1.clone(), remote)
                }
            }
        };
        let warm = self.intervals.iter().take_while(|iv| iv.omitted).count();
        let (omit_ns, local_omit, remote_omit) = snap_at(warm.min(paired));
        let (end_ns, local_end, remote_end) = snap_at(paired);
        let list = |snap: &Snap| -> Vec<StreamTotals> {
            snap.iter().map(|(&(flow, id), &totals)| StreamTotals { flow, id, totals }).collect()
        };
        let active_ns: Vec<(Flow, u64)> = Flow::of(self.spec.direction)
            .iter()
            .map(|&flow| (flow, end_ns.saturating_sub(omit_ns)))
            .collect();
        let local = LocalEnd {
            at_omit: list(&local_omit),
            at_end: list(&local_end),
            end_ns,
            active_ns: active_ns.clone(),
            cpu_ns,
        };
        let mut server = ServerResults::without_streams(0, 0, end_ns);
        server.at_omit = list(&remote_omit);
        server.at_end = list(&remote_end);
        server.active_ns = active_ns;
        let mut summary = self.summary(&local, &server, false);
        summary.client_cpu = CpuUsage::from_nanos(cpu_ns.0, cpu_ns.1, wall_ns);
        summary.server_cpu = None;
        self.add_probes(&mut summary, omit_ns, end_ns);
        (self.intervals, summary)
    }

    /// The probed round trips idle and from `omit_ns` to `end_ns`, into `summary`.
    fn add_probes(&self, summary: &mut BandwidthSummary, omit_ns: u64, end_ns: u64) {
        summary.latency =
            self.probes.as_ref().map(|p| loaded_latency(p.idle(), p.between(omit_ns, end_ns)));
        summary.udp_latency = self
            .probes
            .as_ref()
            .and_then(|p| Some(loaded_latency(p.udp_idle()?, p.udp_between(omit_ns, end_ns)?)));
    }

    /// Where the receiver of `flow` reached the bytes the sender had written when its warm-up
    /// ended: nanoseconds since begin, and the receiver's totals of each stream then. Each end
    /// ends its warm-up on its own clock, so over a path that queues (a rate limit, a delay)
    /// the receiver's own cut comes before the queued warm-up bytes reach it: it counted them
    /// as measured (a receiver with more bytes than its sender) and its span ran on into the
    /// drain after the sender stopped. The cut is found in the receiver's interval snapshots
    /// (TCP: its byte count reaching the sender's; UDP: its datagrams received or lost reaching
    /// the sender's count), interpolated between the two around it; TCP bytes are then exact.
    /// `None` without a warm-up, against an iperf3 server, or when the receiver never got that
    /// far (a run cut short).
    fn aligned_cut(
        &self,
        receiver: End,
        flow: Flow,
        sent_at_omit: &Snap,
        last_ns: u64,
    ) -> Option<(u64, Snap)> {
        // An iperf3 server reports no intervals, and its counts already leave its warm-up out.
        if self.spec.omit_ns == 0 || self.client_only {
            return None;
        }
        let udp = self.spec.protocol == Protocol::Udp;
        let ids = || (1..=self.spec.parallel).map(|id| (flow, id));
        let zero = Totals::default();
        let reached = |t: &Totals| if udp { t.packets + t.lost } else { t.bytes };
        let sent = |t: &Totals| if udp { t.packets } else { t.bytes };
        let target: u64 = ids().map(|k| sent(sent_at_omit.get(&k).unwrap_or(&zero))).sum();
        // The receiver's snapshots: before anything moved, at each interval's end, at its last.
        let mut series: Vec<(u64, &Snap)> = Vec::new();
        let empty = Snap::new();
        series.push((0, &empty));
        for (i, (end_ns, local)) in self.local_ticks.iter().enumerate() {
            let snap = match receiver {
                End::Client => Some(local),
                End::Server => self.remote_ticks.get(&(i as u32)),
            };
            if let Some(snap) = snap {
                series.push(((*end_ns).min(last_ns), snap));
            }
        }
        if let Some(last) = series.last_mut() {
            last.0 = last.0.max(last_ns);
        }
        let count = |s: &Snap| -> u64 { ids().map(|k| reached(s.get(&k).unwrap_or(&zero))).sum() };
        let pair =
            series.windows(2).find(|w| count(w[0].1) <= target && target <= count(w[1].1))?;
        let ((t0, a), (t1, b)) = (pair[0], pair[1]);
        let (c0, c1) = (count(a), count(b));
        let share = if c1 > c0 { (target - c0) as f64 / (c1 - c0) as f64 } else { 1.0 };
        let at_ns = t0 + ((t1.saturating_sub(t0)) as f64 * share) as u64;
        let lerp = |x: u64, y: u64| x + ((y.saturating_sub(x)) as f64 * share).round() as u64;
        let snap = ids()
            .map(|k| {
                let (x, y) = (a.get(&k).unwrap_or(&zero), b.get(&k).unwrap_or(&zero));
                let mut t = Totals {
                    bytes: lerp(x.bytes, y.bytes),
                    packets: lerp(x.packets, y.packets),
                    lost: lerp(x.lost, y.lost),
                    out_of_order: lerp(x.out_of_order, y.out_of_order),
                    duplicates: lerp(x.duplicates, y.duplicates),
                    ..*x
                };
                if !udp {
                    // In-order bytes: the first ones the receiver read are the warm-up's.
                    t.bytes = sent(sent_at_omit.get(&k).unwrap_or(&zero)).min(y.bytes);
                }
                (k, t)
            })
            .collect();
        Some((at_ns, snap))
    }

    /// `final_loss`: both ends have drained, so every datagram sent and not received was lost;
    /// otherwise (a run cut short) only the receivers' sequence gaps are, and datagrams in
    /// flight at the cut are neither.
    fn summary(
        &self,
        local: &LocalEnd,
        server: &ServerResults,
        final_loss: bool,
    ) -> BandwidthSummary {
        let udp = self.spec.protocol == Protocol::Udp;
        let (l0, l1) = (to_snap(&local.at_omit), to_snap(&local.at_end));
        let (r0, r1) = (to_snap(&server.at_omit), to_snap(&server.at_end));
        let span_of = |end: End, flow: Flow| -> u64 {
            let list = if end == End::Client { &local.active_ns } else { &server.active_ns };
            list.iter().find(|(f, _)| *f == flow).map_or(0, |(_, ns)| *ns)
        };
        let omit_ns = self.spec.omit_ns;
        let flows: Vec<FlowSummary> = Flow::of(self.spec.direction)
            .iter()
            .map(|&flow| {
                let sender = flow.sender();
                let receiver = if sender == End::Client { End::Server } else { End::Client };
                let mut send_span = span_of(sender, flow);
                let mut recv_span = span_of(receiver, flow).max(1);
                // The receiver's warm-up ends where the sender's bytes did (see `aligned_cut`).
                let sent_at_omit = if sender == End::Client { &l0 } else { &r0 };
                let last_ns = omit_ns + recv_span;
                let cut = self.aligned_cut(receiver, flow, sent_at_omit, last_ns);
                let (mut l0, mut r0) = (l0.clone(), r0.clone());
                if let Some((at_ns, snap)) = cut {
                    recv_span = last_ns.saturating_sub(at_ns).max(1);
                    let theirs = if receiver == End::Client { &mut l0 } else { &mut r0 };
                    theirs.extend(snap);
                }
                // A TCP sender's bytes left the host as fast as the receiver took them in: its
                // writes end when the last one is in its socket buffer, which may hold seconds
                // of the path's rate (11.3 Mbit/s "sent" on a 10 Mbit/s link).
                if !udp {
                    send_span = recv_span;
                }
                let streams: Vec<StreamFigures> = (1..=self.spec.parallel)
                    .map(|id| {
                        let (sent, recv) = sides(flow, id, (&l0, &l1), (&r0, &r1));
                        let mut f = Figures::from_sides(udp, &sent, &recv, recv_span, final_loss);
                        f.sent_bps = bits_per_second(sent.bytes, send_span);
                        f.sent_pps = f.sent_pps.map(|_| per_second(sent.packets, send_span));
                        StreamFigures { id, figures: f }
                    })
                    .collect();
                let mut total = Figures::merge(streams.iter().map(|s| &s.figures));
                total.sent_bps = bits_per_second(total.sent_bytes, send_span);
                total.received_bps = bits_per_second(total.received_bytes, recv_span);
                total.sent_pps = total.sent_packets.map(|p| per_second(p, send_span));
                total.received_pps = total.received_packets.map(|p| per_second(p, recv_span));
                let measured = self.intervals.iter().filter(|iv| !iv.omitted);
                let per_stream = measured
                    .flat_map(|iv| iv.flows.iter().filter(|f| f.flow == flow))
                    .flat_map(|f| &f.streams);
                let (mut rtts, mut cwnd_max) = (Vec::new(), None::<u64>);
                for s in per_stream {
                    if let Some(r) = s.figures.rtt_ns {
                        rtts.push(r);
                    }
                    if let Some(c) = s.figures.cwnd_bytes {
                        cwnd_max = Some(cwnd_max.unwrap_or(0).max(c));
                    }
                }
                FlowSummary {
                    flow,
                    sender,
                    duration_ns: recv_span,
                    total,
                    rtt_range_ns: GaugeStats::of(rtts),
                    cwnd_max_bytes: cwnd_max,
                    streams,
                }
            })
            .collect();
        let mut flows = flows.into_iter();
        let primary = flows.next().unwrap_or_else(|| unreachable!("every direction has a flow"));
        BandwidthSummary {
            primary,
            reverse: flows.next(),
            client_cpu: CpuUsage::from_nanos(local.cpu_ns.0, local.cpu_ns.1, local.end_ns),
            server_cpu: Some(CpuUsage::from_nanos(
                server.cpu_user_ns,
                server.cpu_system_ns,
                server.wall_ns,
            )),
            latency: None,
            udp_latency: None,
        }
    }
}

/// The sender's and receiver's deltas of stream (`flow`, `id`) between two snapshots per side.
fn sides(
    flow: Flow,
    id: u16,
    local: (&Snap, &Snap),
    remote: (&Snap, &Snap),
) -> (SideDelta, SideDelta) {
    let delta = |(a, b): (&Snap, &Snap)| {
        let zero = Totals::default();
        let before = a.get(&(flow, id)).unwrap_or(&zero);
        b.get(&(flow, id)).unwrap_or(&zero).since(before)
    };
    let (l, r) = (delta(local), delta(remote));
    match flow.sender() {
        End::Client => (l, r),
        End::Server => (r, l),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::kinds::bandwidth::Direction;

    fn st(flow: Flow, id: u16, bytes: u64) -> StreamTotals {
        StreamTotals { flow, id, totals: Totals { bytes, ..Default::default() } }
    }

    fn results(at_end: Vec<StreamTotals>, active: u64) -> ServerResults {
        ServerResults {
            at_omit: vec![],
            at_end,
            active_ns: vec![(Flow::Upload, active)],
            cpu_user_ns: 0,
            cpu_system_ns: 0,
            wall_ns: active,
            accepted: None,
            threads: Vec::new(),
        }
    }

    #[test]
    fn intervals_wait_for_both_sides_and_sum_to_the_totals() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.direction = Direction::Upload;
        let mut c = Collector::new(spec);
        assert!(c.local_tick(1_000_000_000, &[st(Flow::Upload, 1, 100)]).is_empty());
        let ready = c.remote_tick(0, &[st(Flow::Upload, 1, 90)]);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].flows[0].total.sent_bytes, 100);
        assert_eq!(ready[0].flows[0].total.received_bytes, 90);
        c.local_tick(2_000_000_000, &[st(Flow::Upload, 1, 200)]);
        let local = LocalEnd {
            at_end: vec![st(Flow::Upload, 1, 250)],
            end_ns: 2_500_000_000,
            active_ns: vec![(Flow::Upload, 2_500_000_000)],
            ..Default::default()
        };
        let (ivs, sum) = c.finish(&local, &results(vec![st(Flow::Upload, 1, 250)], 2_500_000_000));
        assert_eq!(ivs.len(), 3);
        let sent: u64 = ivs.iter().map(|i| i.flows[0].total.sent_bytes).sum();
        let received: u64 = ivs.iter().map(|i| i.flows[0].total.received_bytes).sum();
        assert_eq!((sent, received), (250, 250));
        assert_eq!(sum.primary.total.sent_bytes, 250);
        assert_eq!(sum.primary.total.received_bytes, 250);
        assert_eq!(sum.primary.total.received_bps, 800.0);
        assert_eq!(sum.primary.sender, End::Client);
    }

    #[test]
    fn the_tail_is_its_own_interval() {
        let spec = BandwidthSpec::new("h", Protocol::Tcp);
        let mut c = Collector::new(spec);
        c.local_tick(1_000_000_000, &[st(Flow::Upload, 1, 100)]);
        c.remote_tick(0, &[st(Flow::Upload, 1, 100)]);
        let local = LocalEnd {
            at_end: vec![st(Flow::Upload, 1, 110)],
            end_ns: 1_010_000_000,
            ..Default::default()
        };
        let (ivs, _) = c.finish(&local, &results(vec![st(Flow::Upload, 1, 110)], 1_010_000_000));
        assert_eq!(ivs.len(), 2);
        assert_eq!(ivs[1].start_ns, 1_000_000_000);
        assert_eq!(ivs[1].end_ns, 1_010_000_000);
        assert_eq!(ivs[1].flows[0].total.sent_bytes, 10);
    }

    #[test]
    fn download_takes_the_sender_from_the_server() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.direction = Direction::Download;
        let mut c = Collector::new(spec);
        c.local_tick(1_000_000_000, &[st(Flow::Download, 1, 40)]);
        let iv = c.remote_tick(0, &[st(Flow::Download, 1, 50)]);
        assert_eq!(iv[0].flows[0].flow, Flow::Download);
        assert_eq!(
            (iv[0].flows[0].total.sent_bytes, iv[0].flows[0].total.received_bytes),
            (50, 40)
        );
    }

    #[test]
    fn omitted_intervals_are_marked_and_left_out_of_the_summary() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.omit_ns = 1_000_000_000;
        let mut c = Collector::new(spec);
        c.local_tick(1_000_000_000, &[st(Flow::Upload, 1, 1000)]);
        let first = c.remote_tick(0, &[st(Flow::Upload, 1, 1000)]);
        assert!(first[0].omitted);
        let local = LocalEnd {
            at_omit: vec![st(Flow::Upload, 1, 1000)],
            at_end: vec![st(Flow::Upload, 1, 1500)],
            end_ns: 2_000_000_000,
            active_ns: vec![(Flow::Upload, 1_000_000_000)],
            ..Default::default()
        };
        let mut server = results(vec![st(Flow::Upload, 1, 1500)], 1_000_000_000);
        server.at_omit = vec![st(Flow::Upload, 1, 1000)];
        let (ivs, sum) = c.finish(&local, &server);
        assert!(!ivs[1].omitted);
        assert_eq!(sum.primary.total.sent_bytes, 500);
        assert_eq!(sum.primary.total.received_bps, 4000.0);
    }

    #[test]
    fn an_abandoned_run_ends_at_the_last_interval_both_ends_reported() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.omit_ns = 1_000_000_000;
        let mut c = Collector::new(spec);
        c.local_tick(1_000_000_000, &[st(Flow::Upload, 1, 1000)]);
        c.remote_tick(0, &[st(Flow::Upload, 1, 900)]);
        c.local_tick(2_000_000_000, &[st(Flow::Upload, 1, 3000)]);
        c.remote_tick(1, &[st(Flow::Upload, 1, 2900)]);
        // The server died before its third tick: the client's third is left out.
        c.local_tick(3_000_000_000, &[st(Flow::Upload, 1, 5000)]);
        let (ivs, sum) = c.abandon((7, 3), 3_100_000_000);
        assert_eq!(ivs.len(), 2);
        assert!(ivs[0].omitted && !ivs[1].omitted);
        let p = &sum.primary;
        // The receiver's measured bytes begin where the sender's did: it reached the sender's
        // 1000 bytes 50 ms after its own warm-up ended, and the 100 bytes then in flight were
        // the warm-up's.
        assert_eq!((p.total.sent_bytes, p.total.received_bytes), (2000, 1900));
        assert_eq!(p.duration_ns, 950_000_000);
        assert_eq!(p.total.received_bps, 16_000.0);
        assert!(sum.server_cpu.is_none());
        assert!(sum.client_cpu.total_ratio > 0.0);
    }

    /// Through a 10 Mbit/s link with a deep queue, `-t 4 -O 2` reported the receiver with more
    /// bytes than the sender (5.52 MiB against 4.62) over 4.85 s for a 4.06 s test: the
    /// receiver's warm-up ended on its own clock with the queued warm-up bytes still on their
    /// way, and its span ran on into the drain. Here 1 MB/s through a queue holding 0.8 s.
    #[test]
    fn a_queued_warm_up_is_left_out_at_the_receiver_too() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.omit_ns = 2_000_000_000;
        let mut c = Collector::new(spec);
        // Sender writes what the link takes plus a queue of 800 kB, filled in the first second.
        let sent = [1_800_000, 2_800_000, 3_800_000, 4_800_000, 5_800_000, 6_800_000];
        for (i, &s) in sent.iter().enumerate() {
            c.local_tick((i as u64 + 1) * 1_000_000_000, &[st(Flow::Upload, 1, s)]);
            c.remote_tick(i as u32, &[st(Flow::Upload, 1, (i as u64 + 1) * 1_000_000)]);
        }
        let local = LocalEnd {
            at_omit: vec![st(Flow::Upload, 1, 2_800_000)],
            at_end: vec![st(Flow::Upload, 1, 6_800_000)],
            end_ns: 6_000_000_000,
            active_ns: vec![(Flow::Upload, 4_000_000_000)],
            ..Default::default()
        };
        // The receiver drains the queue for 0.8 s after the sender stops.
        let mut server = results(vec![st(Flow::Upload, 1, 6_800_000)], 4_800_000_000);
        server.at_omit = vec![st(Flow::Upload, 1, 2_000_000)];
        let (_, sum) = c.finish(&local, &server);
        let p = &sum.primary;
        assert_eq!((p.total.sent_bytes, p.total.received_bytes), (4_000_000, 4_000_000));
        // From 2.8 s, when the receiver read the 2.8 MB the sender had written by 2 s, to 6.8 s.
        assert_eq!(p.duration_ns, 4_000_000_000);
        assert_eq!(p.total.received_bps, 8e6);
        assert_eq!(p.total.sent_bps, 8e6, "the sender's bytes took as long to leave");
    }

    #[test]
    fn a_run_abandoned_before_any_pair_has_nothing_measured() {
        let mut c = Collector::new(BandwidthSpec::new("h", Protocol::Tcp));
        c.local_tick(1_000_000_000, &[st(Flow::Upload, 1, 1000)]);
        let (ivs, sum) = c.abandon((0, 0), 1_000_000_000);
        assert!(ivs.is_empty());
        assert_eq!(sum.primary.total.sent_bytes, 0);
        assert_eq!(sum.primary.duration_ns, 1);
    }
}
