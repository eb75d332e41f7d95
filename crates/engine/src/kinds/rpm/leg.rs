//! One leg of a responsiveness test, as draft-ietf-ippm-responsiveness lays it out: load
//! connections added one an interval (per direction) up to the most allowed, probes sent all along (foreign and self in turn, at most the probe rate), and at
//! each interval's end the responsiveness of the window behind it; the leg ends once goodput
//! and responsiveness are both stable (working conditions) or at its time limit.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::rpm::{
    confidence, quantile, responsiveness, spread, stable, trimmed_mean, ProbeTimes, RpmDirection,
    RpmInterval, RpmLeg, RpmSpec,
};
use wirespeed_model::Event;
use wirespeed_proto::http_url::HttpUrl;

use super::conn::{self, Failure, Foreign, Server};
use super::load::{Load, Way};

/// A probe that ended.
enum Probe {
    /// On a load connection: its time, ns.
    OnLoad(Instant, u64),
    /// On a new connection.
    New(Instant, Foreign),
    /// It failed (the connection is not a probe of the path's latency, only of a fault).
    Failed(Failure),
}

/// What one leg needs.
pub(super) struct LegPlan<'a> {
    pub spec: &'a RpmSpec,
    pub server: &'a Server,
    pub large: &'a HttpUrl,
    pub small: &'a HttpUrl,
    pub upload: &'a HttpUrl,
    pub direction: RpmDirection,
    /// When the test began (interval times are counted from it).
    pub test_start: Instant,
}

/// What a leg measured, and whether the server was lost during it.
pub(super) struct LegOutcome {
    pub leg: RpmLeg,
    pub intervals: Vec<RpmInterval>,
    /// True when a whole interval went by with nothing answered (no byte moved, no probe
    /// ended), every load connection closed, and connections or probes failed since anything
    /// last answered: the leg ended there, the last failure (`leg.last_failure`) its reason.
    pub server_lost: bool,
}

/// Runs one leg; its intervals go to `events` as they end.
pub(super) async fn run(
    plan: LegPlan<'_>,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> LegOutcome {
    let spec = plan.spec;
    let ways: &[Way] = match plan.direction {
        RpmDirection::Download => &[Way::Down],
        RpmDirection::Upload => &[Way::Up],
        RpmDirection::Both => &[Way::Down, Way::Up],
    };
    let mut load = Load::new(plan.server.clone(), plan.large.clone(), plan.upload.clone());
    for &w in ways {
        load.add(w);
    }
    let started = Instant::now();
    let interval = Duration::from_nanos(spec.interval_ns);
    let window = interval * spec.moving_average;
    let mad = spec.moving_average as usize;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    // Foreign and self probes take turns, each at half the probe rate at most, one of each in
    // flight: a slow path sends fewer, never a queue of them.
    let probe_every = Duration::from_secs(1) / spec.probes_per_second.max(1);
    let mut probe_ticks = tokio::time::interval(probe_every);
    probe_ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let (probe_tx, mut probe_rx) = mpsc::unbounded_channel::<Probe>();
    // Probes still in flight when the leg ends are dropped with it.
    let mut probes = JoinSet::new();
    let (mut foreign_busy, mut self_busy, mut turn) = (false, false, 0u64);

    let mut intervals: Vec<RpmInterval> = Vec::new();
    let (mut last_down, mut last_up) = (0u64, 0u64);
    let (mut down_bytes, mut up_bytes) = (Vec::<u64>::new(), Vec::<u64>::new());
    let (mut goodputs, mut down_avgs, mut up_avgs) = (Vec::new(), Vec::new(), Vec::new());
    let mut rpms: Vec<f64> = Vec::new();
    let mut saturated_rpms: Vec<f64> = Vec::new();
    let mut self_probes: Vec<(Instant, u64)> = Vec::new();
    let mut foreign_probes: Vec<(Instant, Foreign)> = Vec::new();
    let (mut loaded_hist, mut foreign_hist) = (RttHistogram::default(), RttHistogram::default());
    let (mut probe_failures, mut last_probe_failure) = (0u32, None::<String>);
    let mut goodput_stable = false;
    let mut working = false;
    let mut final_rpm: Option<f64> = None;
    let mut final_times = ProbeTimes::default();
    let mut interval_self = Vec::<u64>::new();
    let mut interval_foreign = 0u32;
    // Failures counted at the end of the last interval in which anything answered.
    let (mut failures_when_answered, mut server_lost) = (0u64, false);

    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            Some(_) = probes.join_next() => {}
            Some(probe) = probe_rx.recv() => match probe {
                Probe::OnLoad(at, ns) => {
                    self_busy = false;
                    self_probes.push((at, ns));
                    interval_self.push(ns);
                    loaded_hist.record(ns);
                }
                Probe::New(at, f) => {
                    foreign_busy = false;
                    foreign_probes.push((at, f));
                    interval_foreign += 1;
                    foreign_hist.record(f.total_ns());
                }
                Probe::Failed(why) => {
                    // Which one failed does not matter for the turns: both may go again.
                    (foreign_busy, self_busy) = (false, false);
                    probe_failures += 1;
                    last_probe_failure = Some(why);
                }
            },
            _ = probe_ticks.tick() => {
                turn += 1;
                let tx = probe_tx.clone();
                let (server, small) = (plan.server.clone(), plan.small.clone());
                if turn % 2 == 0 && !foreign_busy {
                    foreign_busy = true;
                    probes.spawn(async move {
                        let p = match conn::foreign_probe(&server, &small).await {
                            Ok(f) => Probe::New(Instant::now(), f),
                            Err(why) => Probe::Failed(why),
                        };
                        let _ = tx.send(p);
                    });
                } else if turn % 2 == 1 && !self_busy {
                    if let Some(sender) = load.probe_sender() {
                        self_busy = true;
                        probes.spawn(async move {
                            let p = match conn::self_probe(sender, &server, &small).await {
                                Ok(ns) => Probe::OnLoad(Instant::now(), ns),
                                Err(why) => Probe::Failed(why),
                            };
                            let _ = tx.send(p);
                        });
                    }
                }
            }
            _ = ticks.tick() => {
                let now = Instant::now();
                let down = load.counters.download.load(Ordering::Relaxed);
                let up = load.counters.upload.load(Ordering::Relaxed);
                down_bytes.push(down - last_down);
                up_bytes.push(up - last_up);
                (last_down, last_up) = (down, up);
                let avg = |bytes: &[u64]| {
                    let last = &bytes[bytes.len().saturating_sub(mad)..];
                    8.0 * last.iter().sum::<u64>() as f64 / (last.len() as f64 * interval.as_secs_f64())
                };
                down_avgs.push(avg(&down_bytes));
                up_avgs.push(avg(&up_bytes));
                goodputs.push(down_avgs[down_avgs.len() - 1] + up_avgs[up_avgs.len() - 1]);
                if !goodput_stable && stable(&goodputs, mad, spec.stability) {
                    goodput_stable = true;
                }
                // The draft adds a connection at every interval, stable goodput or not: the
                // load keeps growing until responsiveness, too, is stable.
                if load.opened < spec.max_connections * ways.len() as u32 {
                    for &w in ways {
                        load.add(w);
                    }
                }
                let since = now.checked_sub(window).unwrap_or(started);
                let times = window_times(&self_probes, &foreign_probes, since, spec.trim);
                let rpm = responsiveness(&times);
                if let Some(r) = rpm {
                    // The draft computes responsiveness for its stability test only once
                    // goodput is saturated: the MAD values judged are all taken at full load.
                    // Values from the ramp (their windows reach back to one connection) agree
                    // with each other and would declare working conditions with the last
                    // connection barely open, its self probes too few to weigh.
                    if goodput_stable {
                        saturated_rpms.push(r);
                    }
                    rpms.push(r);
                    final_rpm = Some(r);
                    final_times = times;
                }
                let rpm_stable = goodput_stable && rpm.is_some() && stable(&saturated_rpms, mad, spec.stability);
                interval_self.sort_unstable();
                let record = RpmInterval {
                    leg: plan.direction,
                    index: intervals.len() as u32,
                    end_ns: now.duration_since(plan.test_start).as_nanos() as u64,
                    connections: load.live(),
                    download_bytes: down_bytes[down_bytes.len() - 1],
                    upload_bytes: up_bytes[up_bytes.len() - 1],
                    goodput_bps: goodputs[goodputs.len() - 1],
                    self_probes: interval_self.len() as u32,
                    foreign_probes: interval_foreign,
                    loaded_p50_ns: (!interval_self.is_empty()).then(|| interval_self[(interval_self.len() - 1) / 2]),
                    rpm,
                    goodput_stable,
                    rpm_stable,
                };
                let _ = events.send(Event::RpmInterval(record.clone()));
                let failures = load.counters.failures.load(Ordering::Relaxed) + u64::from(probe_failures);
                let silent = record.download_bytes + record.upload_bytes == 0
                    && record.self_probes + record.foreign_probes == 0;
                if !silent {
                    failures_when_answered = failures;
                }
                let failing = failures > failures_when_answered;
                intervals.push(record);
                interval_self.clear();
                interval_foreign = 0;
                if silent && failing && load.live() == 0 {
                    server_lost = true;
                    break;
                }
                if rpm_stable {
                    working = true;
                    break;
                }
                if now.duration_since(started) + interval > Duration::from_nanos(spec.leg_time_ns) {
                    break;
                }
            }
        }
    }
    probes.abort_all();
    while probes.join_next().await.is_some() {}
    let duration_ns = started.elapsed().as_nanos() as u64;
    let connections = load.opened;
    let load_failures = load.counters.failures.load(Ordering::Relaxed) as u32;
    let last_load_failure =
        load.counters.last_failure.lock().unwrap_or_else(|e| e.into_inner()).clone();
    load.stop().await;
    let rpm_spread = spread(&rpms, mad).filter(|&(_, mean)| mean > 0.0).map(|(sd, mean)| sd / mean);
    let p90 = |v: &[f64]| quantile(v, 0.9).unwrap_or(0.0);
    let leg = RpmLeg {
        direction: plan.direction,
        duration_ns,
        working_conditions: working,
        rpm: final_rpm,
        rpm_spread,
        confidence: confidence(working, rpm_spread, spec.stability),
        goodput_bps: p90(&goodputs),
        download_bps: p90(&down_avgs),
        upload_bps: p90(&up_avgs),
        times: final_times,
        loaded: loaded_hist.stats(),
        foreign: foreign_hist.stats(),
        connections,
        failures: load_failures + probe_failures,
        last_failure: last_load_failure.or(last_probe_failure),
        histogram: loaded_hist.buckets(),
    };
    LegOutcome { leg, intervals, server_lost }
}

/// Trimmed means of the probes that ended at or after `since`.
fn window_times(
    self_probes: &[(Instant, u64)],
    foreign: &[(Instant, Foreign)],
    since: Instant,
    trim: f64,
) -> ProbeTimes {
    let recent = |at: &Instant| *at >= since;
    let recent_foreign: Vec<Foreign> =
        foreign.iter().filter(|(at, _)| recent(at)).map(|&(_, f)| f).collect();
    let recent_self: Vec<u64> =
        self_probes.iter().filter(|(at, _)| recent(at)).map(|&(_, ns)| ns).collect();
    probe_times(&recent_foreign, &recent_self, trim)
}

/// Trimmed means of `foreign` probes' phases and of `self_ns` probe times.
pub(super) fn probe_times(foreign: &[Foreign], self_ns: &[u64], trim: f64) -> ProbeTimes {
    let tm = |v: Vec<f64>| trimmed_mean(&v, trim).unwrap_or(0.0);
    ProbeTimes {
        tcp_ns: tm(foreign.iter().map(|f| f.phases.tcp_ns as f64).collect()),
        tls_ns: tm(foreign.iter().map(|f| f.phases.tls_ns as f64).collect()),
        http_ns: tm(foreign.iter().map(|f| f.http_ns as f64).collect()),
        self_ns: tm(self_ns.iter().map(|&ns| ns as f64).collect()),
    }
}
