//! One leg of a responsiveness test, as draft-ietf-ippm-responsiveness lays it out: load
//! connections added one an interval (per direction) up to the most allowed, probes sent all
//! along (foreign and self in turn, at most the probe rate), and at each boundary of the shared
//! interval clock the figures of the interval behind it ([`Tally`], which also says when the leg
//! ends: working conditions, a lost server, or the leg's time limit as the clock's deadline).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinSet;
use tokio::time::{Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use wirespeed_model::kinds::rpm::{RpmDirection, RpmInterval, RpmLeg, RpmSpec};
use wirespeed_model::Event;
use wirespeed_proto::http_url::HttpUrl;

use super::conn::{self, Server};
use super::load::{Load, Way};
use super::tally::{Ended, LoadSample, LoadTotals, Probe, Tally};
use crate::run::intervals::{Clock, Ending, Tick, Timers};

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
    let ways = ways(plan.direction);
    let mut load = Load::new(plan.server.clone(), plan.large.clone(), plan.upload.clone());
    for &w in ways {
        load.add(w);
    }
    let started = Instant::now();
    let mut timers = Timers::start(leg_clock(spec), started, false);
    let mut prober = Prober::new(spec.probes_per_second);
    let offset_ns = started.duration_since(plan.test_start).as_nanos() as u64;
    let mut tally = Tally::new(spec, plan.direction, offset_ns);
    let mut ended = None;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            Some(_) = prober.tasks.join_next() => {}
            Some((at, probe)) = prober.ended.recv() => {
                prober.free(&probe);
                tally.on_probe(at.duration_since(started).as_nanos() as u64, probe);
            }
            _ = prober.turns.tick() => prober.send(plan.server, plan.small, &mut load),
            tick = timers.next() => match tick {
                Tick::Boundary(b) => {
                    let sample = sample(&load);
                    // The draft adds a connection at every interval, stable goodput or not: the
                    // load keeps growing until responsiveness, too, is stable.
                    if load.opened < spec.max_connections * ways.len() as u32 {
                        for &w in ways {
                            load.add(w);
                        }
                    }
                    let (record, end) = tally.on_tick(b.end_ns, sample);
                    let _ = events.send(Event::RpmInterval(record));
                    if end.is_some() {
                        ended = end;
                        break;
                    }
                }
                Tick::Deadline => break,
                Tick::WarmUpEnded => {}
            },
        }
    }
    prober.stop().await;
    let duration_ns = started.elapsed().as_nanos() as u64;
    let totals = LoadTotals {
        opened: load.opened,
        failures: load.counters.failures.load(Ordering::Relaxed) as u32,
        last_failure: load.counters.last_failure.lock().unwrap_or_else(|e| e.into_inner()).clone(),
    };
    load.stop().await;
    let (leg, intervals) = tally.finish(duration_ns, totals, ended);
    LegOutcome { leg, intervals, server_lost: ended == Some(Ended::ServerLost) }
}

/// The ways a leg's load connections move bytes.
fn ways(direction: RpmDirection) -> &'static [Way] {
    match direction {
        RpmDirection::Download => &[Way::Down],
        RpmDirection::Upload => &[Way::Up],
        RpmDirection::Both => &[Way::Down, Way::Up],
    }
}

/// A leg's intervals on the shared clock, without a warm-up: the leg ends on the last boundary
/// that fits in its time (one at least), and that boundary is closed like the others.
fn leg_clock(spec: &RpmSpec) -> Clock {
    let interval_ns = spec.interval_ns.max(1);
    let last_boundary_ns = (spec.leg_time_ns / interval_ns).max(1) * interval_ns;
    Clock::new(interval_ns, Some(last_boundary_ns), 0, Ending::Drain)
}

/// The load's counters now.
fn sample(load: &Load) -> LoadSample {
    LoadSample {
        download: load.counters.download.load(Ordering::Relaxed),
        upload: load.counters.upload.load(Ordering::Relaxed),
        live: load.live(),
        failures: load.counters.failures.load(Ordering::Relaxed),
    }
}

/// The probes in flight. Foreign and self probes take turns, each at half the probe rate at
/// most, one of each in flight: a slow path sends fewer, never a queue of them.
struct Prober {
    turns: Interval,
    turn: u64,
    foreign_busy: bool,
    self_busy: bool,
    tasks: JoinSet<()>,
    done: UnboundedSender<(Instant, Probe)>,
    ended: UnboundedReceiver<(Instant, Probe)>,
}

impl Prober {
    /// Turns at `per_second` probes a second.
    fn new(per_second: u32) -> Self {
        let mut turns = tokio::time::interval(Duration::from_secs(1) / per_second.max(1));
        turns.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let (done, ended) = mpsc::unbounded_channel();
        let (foreign_busy, self_busy) = (false, false);
        Self { turns, turn: 0, foreign_busy, self_busy, tasks: JoinSet::new(), done, ended }
    }

    /// Sends this turn's probe, unless the last of its sort is still in flight (or, for a
    /// self probe, no load connection is open yet).
    fn send(&mut self, server: &Server, small: &HttpUrl, load: &mut Load) {
        self.turn += 1;
        let (tx, server, small) = (self.done.clone(), server.clone(), small.clone());
        if self.turn.is_multiple_of(2) && !self.foreign_busy {
            self.foreign_busy = true;
            self.tasks.spawn(async move {
                let p = match conn::foreign_probe(&server, &small).await {
                    Ok(f) => Probe::New(f),
                    Err(why) => Probe::Failed(why),
                };
                let _ = tx.send((Instant::now(), p));
            });
        } else if !self.turn.is_multiple_of(2) && !self.self_busy {
            if let Some(sender) = load.probe_sender() {
                self.self_busy = true;
                self.tasks.spawn(async move {
                    let p = match conn::self_probe(sender, &server, &small).await {
                        Ok(ns) => Probe::OnLoad(ns),
                        Err(why) => Probe::Failed(why),
                    };
                    let _ = tx.send((Instant::now(), p));
                });
            }
        }
    }

    /// `probe` ended: its sort may go again (after a failure, both may: which one failed does
    /// not matter for the turns).
    fn free(&mut self, probe: &Probe) {
        match probe {
            Probe::OnLoad(_) => self.self_busy = false,
            Probe::New(_) => self.foreign_busy = false,
            Probe::Failed(_) => (self.foreign_busy, self.self_busy) = (false, false),
        }
    }

    /// Drops the probes still in flight (they end with the leg).
    async fn stop(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}
