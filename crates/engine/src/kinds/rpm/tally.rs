//! What one leg measured so far and the draft's rules on it: each interval's goodput and the
//! responsiveness of the window behind it, when goodput and then responsiveness are stable
//! (working conditions), and when the server is lost. The time is passed in (nanoseconds from
//! the leg's start) and the load's counters are read by the caller, so the rules are
//! unit-tested apart from the network.

use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::rpm::{
    confidence, quantile, responsiveness, spread, stable, trimmed_mean, ProbeTimes, RpmDirection,
    RpmInterval, RpmLeg, RpmSpec,
};

use super::conn::{Failure, Foreign};

/// A probe that ended.
#[derive(Debug)]
pub(super) enum Probe {
    /// On a load connection: its time, ns.
    OnLoad(u64),
    /// On a new connection.
    New(Foreign),
    /// It failed (the connection is not a probe of the path's latency, only of a fault).
    Failed(Failure),
}

/// The load's counters, read at a boundary.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LoadSample {
    /// Bytes downloaded since the leg began.
    pub download: u64,
    /// Bytes uploaded since the leg began.
    pub upload: u64,
    /// Connections open now.
    pub live: u32,
    /// Load connections failed since the leg began.
    pub failures: u64,
}

/// What the load did over the whole leg, read when it ends.
#[derive(Debug, Default)]
pub(super) struct LoadTotals {
    /// Connections opened.
    pub opened: u32,
    /// Of which failed.
    pub failures: u32,
    /// The last failure's words.
    pub last_failure: Option<Failure>,
}

/// Why a leg ended before its time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Goodput and responsiveness both stable: working conditions.
    Working,
    /// A whole interval went by with nothing answered (no byte moved, no probe ended), every
    /// load connection closed, and connections or probes failed since anything last answered.
    ServerLost,
}

/// Goodput per interval: the bytes each moved and the moving averages over the draft's window.
#[derive(Debug, Default)]
struct Goodput {
    last: (u64, u64),
    down_bytes: Vec<u64>,
    up_bytes: Vec<u64>,
    down_avgs: Vec<f64>,
    up_avgs: Vec<f64>,
    sums: Vec<f64>,
    stable: bool,
}

/// The probes that ended: every one (by when it ended, for the window), their distributions,
/// and this interval's.
#[derive(Debug, Default)]
struct Probes {
    on_load: Vec<(u64, u64)>,
    new: Vec<(u64, Foreign)>,
    loaded: RttHistogram,
    foreign: RttHistogram,
    failures: u32,
    last_failure: Option<Failure>,
    this_interval_on_load: Vec<u64>,
    this_interval_new: u32,
}

/// The responsiveness computed at each boundary.
#[derive(Debug, Default)]
struct Responsiveness {
    all: Vec<f64>,
    /// Only those computed once goodput was stable: the draft's stability test judges these.
    saturated: Vec<f64>,
    last: Option<f64>,
    last_times: ProbeTimes,
}

/// One leg's figures so far.
#[derive(Debug)]
pub(super) struct Tally {
    direction: RpmDirection,
    interval_ns: u64,
    /// The moving average's length, in intervals (the draft's MAD).
    mad: usize,
    stability: f64,
    trim: f64,
    /// Where the leg began, from the test's start (intervals are timed from the test's start).
    offset_ns: u64,
    goodput: Goodput,
    probes: Probes,
    rpm: Responsiveness,
    /// Failures counted at the end of the last interval in which anything answered.
    failures_when_answered: u64,
    intervals: Vec<RpmInterval>,
}

impl Tally {
    /// A leg of `spec` in `direction`, begun `offset_ns` after the test.
    pub(super) fn new(spec: &RpmSpec, direction: RpmDirection, offset_ns: u64) -> Self {
        Self {
            direction,
            interval_ns: spec.interval_ns.max(1),
            mad: spec.moving_average as usize,
            stability: spec.stability,
            trim: spec.trim,
            offset_ns,
            goodput: Goodput::default(),
            probes: Probes::default(),
            rpm: Responsiveness::default(),
            failures_when_answered: 0,
            intervals: Vec::new(),
        }
    }

    /// A probe ended at `at_ns`.
    pub(super) fn on_probe(&mut self, at_ns: u64, probe: Probe) {
        let p = &mut self.probes;
        match probe {
            Probe::OnLoad(ns) => {
                p.on_load.push((at_ns, ns));
                p.this_interval_on_load.push(ns);
                p.loaded.record(ns);
            }
            Probe::New(f) => {
                p.new.push((at_ns, f));
                p.this_interval_new += 1;
                p.foreign.record(f.total_ns());
            }
            Probe::Failed(why) => {
                p.failures += 1;
                p.last_failure = Some(why);
            }
        }
    }

    /// The interval ending at `end_ns`, the load's counters read then: its record, and why
    /// the leg ends here, if it does.
    pub(super) fn on_tick(
        &mut self,
        end_ns: u64,
        load: LoadSample,
    ) -> (RpmInterval, Option<Ended>) {
        let goodput_bps = self.goodput.add(load.download, load.upload, self.mad, self.interval_ns);
        if !self.goodput.stable && stable(&self.goodput.sums, self.mad, self.stability) {
            self.goodput.stable = true;
        }
        let window_ns = self.interval_ns.saturating_mul(self.mad as u64);
        let times = self.window_times(end_ns.saturating_sub(window_ns));
        let rpm = responsiveness(&times);
        if let Some(r) = rpm {
            // The draft computes responsiveness for its stability test only once goodput is
            // saturated: the MAD values judged are all taken at full load. Values from the ramp
            // (their windows reach back to one connection) agree with each other and would
            // declare working conditions with the last connection barely open, its self probes
            // too few to weigh.
            if self.goodput.stable {
                self.rpm.saturated.push(r);
            }
            self.rpm.all.push(r);
            self.rpm.last = Some(r);
            self.rpm.last_times = times;
        }
        let rpm_stable = self.goodput.stable
            && rpm.is_some()
            && stable(&self.rpm.saturated, self.mad, self.stability);
        let probes = &mut self.probes;
        probes.this_interval_on_load.sort_unstable();
        let on_load = &probes.this_interval_on_load;
        let record = RpmInterval {
            leg: self.direction,
            index: self.intervals.len() as u32,
            end_ns: self.offset_ns + end_ns,
            connections: load.live,
            download_bytes: *self.goodput.down_bytes.last().unwrap_or(&0),
            upload_bytes: *self.goodput.up_bytes.last().unwrap_or(&0),
            goodput_bps,
            self_probes: on_load.len() as u32,
            foreign_probes: probes.this_interval_new,
            loaded_p50_ns: (!on_load.is_empty()).then(|| on_load[(on_load.len() - 1) / 2]),
            rpm,
            goodput_stable: self.goodput.stable,
            rpm_stable,
        };
        probes.this_interval_on_load.clear();
        probes.this_interval_new = 0;
        let failures = load.failures + u64::from(probes.failures);
        let silent = record.download_bytes + record.upload_bytes == 0
            && record.self_probes + record.foreign_probes == 0;
        if !silent {
            self.failures_when_answered = failures;
        }
        let failing = failures > self.failures_when_answered;
        self.intervals.push(record.clone());
        let ended = if silent && failing && load.live == 0 {
            Some(Ended::ServerLost)
        } else {
            rpm_stable.then_some(Ended::Working)
        };
        (record, ended)
    }

    /// Trimmed means of the probes that ended at or after `since_ns`.
    fn window_times(&self, since_ns: u64) -> ProbeTimes {
        let p = &self.probes;
        let new: Vec<Foreign> =
            p.new.iter().filter(|(at, _)| *at >= since_ns).map(|&(_, f)| f).collect();
        let on_load: Vec<u64> =
            p.on_load.iter().filter(|(at, _)| *at >= since_ns).map(|&(_, ns)| ns).collect();
        probe_times(&new, &on_load, self.trim)
    }

    /// The leg, which ran `duration_ns` and ended for `ended` (`None`: its time limit or the
    /// user), the load having done `load`.
    pub(super) fn finish(
        self,
        duration_ns: u64,
        load: LoadTotals,
        ended: Option<Ended>,
    ) -> (RpmLeg, Vec<RpmInterval>) {
        let working = ended == Some(Ended::Working);
        let rpm_spread = spread(&self.rpm.all, self.mad)
            .filter(|&(_, mean)| mean > 0.0)
            .map(|(sd, mean)| sd / mean);
        let p90 = |v: &[f64]| quantile(v, 0.9).unwrap_or(0.0);
        let leg = RpmLeg {
            direction: self.direction,
            duration_ns,
            working_conditions: working,
            rpm: self.rpm.last,
            rpm_spread,
            confidence: confidence(working, rpm_spread, self.stability),
            goodput_bps: p90(&self.goodput.sums),
            download_bps: p90(&self.goodput.down_avgs),
            upload_bps: p90(&self.goodput.up_avgs),
            times: self.rpm.last_times,
            loaded: self.probes.loaded.stats(),
            foreign: self.probes.foreign.stats(),
            connections: load.opened,
            failures: load.failures + self.probes.failures,
            last_failure: load.last_failure.or(self.probes.last_failure),
            histogram: self.probes.loaded.buckets(),
        };
        (leg, self.intervals)
    }
}

impl Goodput {
    /// Adds the interval that ended with the counters at `down` and `up` bytes; its goodput,
    /// bit/s, averaged over the last `mad` intervals.
    fn add(&mut self, down: u64, up: u64, mad: usize, interval_ns: u64) -> f64 {
        self.down_bytes.push(down.saturating_sub(self.last.0));
        self.up_bytes.push(up.saturating_sub(self.last.1));
        self.last = (down, up);
        let avg = |bytes: &[u64]| {
            let last = &bytes[bytes.len().saturating_sub(mad.max(1))..];
            8.0 * last.iter().sum::<u64>() as f64 * 1e9 / (last.len() as f64 * interval_ns as f64)
        };
        let (down_avg, up_avg) = (avg(&self.down_bytes), avg(&self.up_bytes));
        self.down_avgs.push(down_avg);
        self.up_avgs.push(up_avg);
        self.sums.push(down_avg + up_avg);
        down_avg + up_avg
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::rpm::conn::Phases;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    fn spec() -> RpmSpec {
        RpmSpec::new("http://127.0.0.1:1/config")
    }

    fn foreign(ms: u64) -> Foreign {
        Foreign { phases: Phases { tcp_ns: ms * MS, tls_ns: 0 }, http_ns: ms * MS }
    }

    /// `n` intervals of a steady leg: 1 MB a second down, probes of 10 ms in each.
    fn steady(t: &mut Tally, from: u64, n: u64) -> Vec<(RpmInterval, Option<Ended>)> {
        (from..from + n)
            .map(|i| {
                t.on_probe(i * S + S / 2, Probe::OnLoad(10 * MS));
                t.on_probe(i * S + S / 2, Probe::New(foreign(10)));
                let load =
                    LoadSample { download: (i + 1) * 1_000_000, upload: 0, live: 4, failures: 0 };
                t.on_tick((i + 1) * S, load)
            })
            .collect()
    }

    #[test]
    fn working_conditions_need_stable_goodput_then_a_window_of_stable_responsiveness() {
        let mut t = Tally::new(&spec(), RpmDirection::Download, 3 * S);
        let ticks = steady(&mut t, 0, 8);
        let first = &ticks[0].0;
        assert_eq!((first.index, first.end_ns, first.download_bytes), (0, 4 * S, 1_000_000));
        assert_eq!(first.goodput_bps, 8e6);
        assert_eq!((first.self_probes, first.foreign_probes, first.connections), (1, 1, 4));
        assert_eq!(first.loaded_p50_ns, Some(10 * MS));
        // Goodput is judged over four intervals, so it is stable at the fourth; responsiveness
        // is judged over the four computed since then, so working conditions come at the
        // seventh, and the leg ends there.
        let stable_at = ticks.iter().position(|(r, _)| r.goodput_stable);
        assert_eq!(stable_at, Some(3));
        let ended_at = ticks.iter().position(|(_, e)| e.is_some());
        assert_eq!(ended_at, Some(6));
        assert_eq!(ticks[6].1, Some(Ended::Working));
        assert!(ticks[6].0.rpm_stable && !ticks[5].0.rpm_stable);

        let (leg, intervals) = t.finish(7 * S, LoadTotals::default(), ticks[6].1);
        assert!(leg.working_conditions);
        assert_eq!(intervals.len(), 8);
        // Every phase 10 ms: a round trip of 10 ms is 6000 round trips a minute.
        assert_eq!(leg.rpm.map(f64::round), Some(6000.0));
        assert_eq!(leg.goodput_bps, 8e6);
    }

    #[test]
    fn the_window_holds_only_the_probes_of_the_last_intervals() {
        let mut t = Tally::new(&spec(), RpmDirection::Upload, 0);
        // Slow probes early on, then fast ones: once the window (four intervals) has moved
        // past the slow ones, the responsiveness is the fast probes' alone.
        for i in 0..2 {
            t.on_probe(i * S + 1, Probe::OnLoad(100 * MS));
            t.on_probe(i * S + 1, Probe::New(foreign(100)));
            t.on_tick(
                (i + 1) * S,
                LoadSample { upload: (i + 1) * 1000, live: 1, ..LoadSample::default() },
            );
        }
        let ticks = steady(&mut t, 2, 4);
        let slowest = ticks[0].0.rpm.expect("an rpm");
        let last = ticks[3].0.rpm.expect("an rpm");
        assert!(slowest < 1000.0, "{slowest}");
        assert_eq!(last.round(), 6000.0);
    }

    #[test]
    fn a_silent_interval_ends_the_leg_only_when_something_failed_and_nothing_is_open() {
        let quiet = LoadSample { download: 0, upload: 0, live: 0, failures: 0 };
        // Nothing moved and nothing failed (a server slow to answer): the leg goes on.
        let mut t = Tally::new(&spec(), RpmDirection::Download, 0);
        assert_eq!(t.on_tick(S, quiet).1, None);
        // A failure, but a connection is still open: it goes on.
        assert_eq!(t.on_tick(2 * S, LoadSample { failures: 1, live: 1, ..quiet }).1, None);
        // A failure and nothing open: the server is lost.
        assert_eq!(
            t.on_tick(3 * S, LoadSample { failures: 1, ..quiet }).1,
            Some(Ended::ServerLost)
        );

        // Failures from before the last interval that answered do not count again.
        let mut t = Tally::new(&spec(), RpmDirection::Download, 0);
        t.on_probe(S / 2, Probe::Failed("refused".into()));
        t.on_probe(S / 2, Probe::OnLoad(5 * MS));
        assert_eq!(t.on_tick(S, quiet).1, None);
        assert_eq!(t.on_tick(2 * S, quiet).1, None);
        t.on_probe(2 * S + 1, Probe::Failed("reset".into()));
        assert_eq!(t.on_tick(3 * S, quiet).1, Some(Ended::ServerLost));
        let load = LoadTotals { opened: 2, failures: 1, last_failure: Some("closed".into()) };
        let (leg, _) = t.finish(3 * S, load, Some(Ended::ServerLost));
        assert!(!leg.working_conditions);
        assert_eq!(leg.failures, 3);
        assert_eq!(leg.last_failure.as_deref(), Some("closed"));
    }
}
