//! What the server measured of a LibreSpeed client's test, which has no token: the client's
//! address is all that ties its transfers to its telemetry, and one address may be many people
//! (a NAT, an office) or one person doing something else too. So an address's transfers are
//! grouped by time into runs, one per direction and phase; a result takes the server's figure
//! for a direction only from a run that is plainly that test's phase, and otherwise keeps the
//! client's own figure, saying why.
//!
//! A LibreSpeed phase, as the server sees it: its streams all start within the first couple of
//! seconds, a stream whose request finishes is replaced by a new request (so the number in
//! flight never rises after the start), every stream is cut at the phase's end, and the
//! telemetry follows the last phase within seconds. Two tests behind one address break those
//! rules where their phases meet: streams join a phase that has long been running, a download
//! runs beside an upload, or a transfer is still going when a result arrives. Two tests started
//! within the same second or so, with phases of the same length, cannot be told apart this
//! way: both are then measured together, the one inherent limit (wirespeed's own page has a
//! token per test and none of this).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::meter::Timeline;

/// A transfer starting within this long of its direction's last activity joins that run.
const RUN_GAP: Duration = Duration::from_secs(2);
/// Streams of one test start within this long of its phase's first (LibreSpeed's page staggers
/// its 6 download streams by 300 ms).
const STAGGER: Duration = Duration::from_millis(2500);
/// Two runs may overlap this long and still be one test's (the server sees a cut stream end a
/// little after the client has moved on to its next phase).
const OVERLAP_TOLERANCE: Duration = Duration::from_secs(1);
/// A run that went quiet longer than this before the result arrived is not that result's.
const MAX_AGE: Duration = Duration::from_secs(60);
/// Runs kept per address; the oldest go first.
const RUNS_PER_ADDRESS: usize = 16;
/// Addresses remembered at once; the least recently active go first.
const MAX_ADDRESSES: usize = 1024;
/// An address quiet this long is forgotten.
const IDLE: Duration = Duration::from_secs(120);

/// Which way a run's bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The server sends (`garbage`).
    Download,
    /// The server receives (`empty` with a body).
    Upload,
}

/// One direction's transfers from one address that followed one another without a pause.
#[derive(Debug)]
pub struct Run {
    /// Which way.
    pub direction: Direction,
    /// Bytes over time, from the run's first byte.
    pub timeline: Timeline,
    started: Instant,
    state: Mutex<RunState>,
}

#[derive(Debug)]
struct RunState {
    /// Transfers in flight.
    active: u32,
    /// The latest end of a transfer.
    ended: Instant,
    /// Most transfers in flight at once within [`STAGGER`] of the start.
    early_peak: u32,
    /// A transfer started after the stagger and took the number in flight above `early_peak`.
    joined_late: bool,
}

impl Run {
    fn new(direction: Direction, now: Instant) -> Self {
        Self {
            direction,
            timeline: Timeline::default(),
            started: now,
            state: Mutex::new(RunState {
                active: 1,
                ended: now,
                early_peak: 1,
                joined_late: false,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn join(&self, now: Instant) {
        let mut s = self.state();
        s.active += 1;
        if now.saturating_duration_since(self.started) <= STAGGER {
            s.early_peak = s.early_peak.max(s.active);
        } else if s.active > s.early_peak {
            s.joined_late = true;
        }
    }

    /// Notes that one of the run's transfers is over.
    pub fn end(&self, now: Instant) {
        let mut s = self.state();
        s.active = s.active.saturating_sub(1);
        s.ended = s.ended.max(now);
    }

    fn active(&self) -> bool {
        self.state().active > 0
    }

    /// When the run last did anything: a transfer ended or a byte was counted (acknowledged
    /// bytes are counted after the transfer handed them over); `now` while it is in flight.
    fn last_activity(&self, now: Instant) -> Instant {
        let s = self.state();
        if s.active > 0 {
            return now;
        }
        s.ended.max(self.timeline.last_at().unwrap_or(s.ended))
    }

    /// How long the run's span and `[from, to]` share.
    fn overlap(&self, from: Instant, to: Instant, now: Instant) -> Duration {
        let (start, end) = (self.started.max(from), self.last_activity(now).min(to));
        end.saturating_duration_since(start)
    }
}

/// The server's figure for one direction of a test, or why there is none.
pub type Measured = Result<f64, &'static str>;

/// Every address's recent runs.
#[derive(Debug, Default)]
pub struct AddressRuns {
    map: Mutex<HashMap<IpAddr, Vec<Arc<Run>>>>,
}

impl AddressRuns {
    /// Starts a transfer from `client`: it joins its direction's run if that one is in flight
    /// or was active within the last 2 s, else begins a new run. End it with [`Run::end`].
    pub fn start(&self, client: IpAddr, direction: Direction, now: Instant) -> Arc<Run> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if !map.contains_key(&client) && map.len() >= MAX_ADDRESSES {
            forget_idle(&mut map, now);
        }
        let runs = map.entry(client).or_default();
        let current = runs.iter().rev().find(|r| r.direction == direction);
        if let Some(run) =
            current.filter(|r| now.saturating_duration_since(r.last_activity(now)) <= RUN_GAP)
        {
            run.join(now);
            return run.clone();
        }
        if runs.len() >= RUNS_PER_ADDRESS {
            runs.remove(0);
        }
        let run = Arc::new(Run::new(direction, now));
        runs.push(run.clone());
        run
    }

    /// True while a transfer from `client` that began before `before` is in flight.
    pub fn in_flight(&self, client: IpAddr, before: Instant) -> bool {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&client).is_some_and(|runs| runs.iter().any(|r| r.started < before && r.active()))
    }

    /// The server's figures for the test whose result `client` posts now, in the directions
    /// the client says it tested; the runs that result accounts for are forgotten, so no other
    /// result can claim them.
    pub fn finish(
        &self,
        client: IpAddr,
        tested: [bool; 2],
        grace: [Duration; 2],
        now: Instant,
    ) -> [Measured; 2] {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let runs = map.remove(&client).unwrap_or_default();
        let latest = |d: Direction| {
            runs.iter()
                .rev()
                .find(|r| r.direction == d && !r.active())
                .filter(|r| now.saturating_duration_since(r.last_activity(now)) <= MAX_AGE)
        };
        let chosen = [latest(Direction::Download), latest(Direction::Upload)];
        let measured = [0, 1].map(|i| {
            if !tested[i] {
                return Err("the client did not test this direction");
            }
            let Some(run) = chosen[i] else {
                return Err(
                    "no finished transfer of this direction from the client's address in the last minute",
                );
            };
            judge(run, &runs, now)?;
            run.timeline
                .rate_bps(grace[i])
                .ok_or("less than a second was measured after the grace period")
        });
        // Runs that began after the newest run this result accounts for are another test's.
        let cut = chosen.iter().flatten().map(|r| r.last_activity(now)).max();
        let kept: Vec<Arc<Run>> = match cut {
            Some(cut) => runs.into_iter().filter(|r| r.started > cut).collect(),
            None => runs.into_iter().filter(|r| r.active()).collect(),
        };
        if !kept.is_empty() {
            map.insert(client, kept);
        }
        measured
    }
}

/// Whether `run` is one test's phase and nothing else's.
fn judge(run: &Run, all: &[Arc<Run>], now: Instant) -> Result<(), &'static str> {
    if run.state().joined_late {
        return Err("more transfers from the client's address joined after the test's began");
    }
    let (from, to) = (run.started, run.last_activity(now));
    let overlapped = all
        .iter()
        .filter(|other| !std::ptr::eq(other.as_ref(), run))
        .any(|other| other.overlap(from, to, now) > OVERLAP_TOLERANCE);
    if overlapped {
        return Err("other transfers from the client's address ran at the same time");
    }
    Ok(())
}

fn forget_idle(map: &mut HashMap<IpAddr, Vec<Arc<Run>>>, now: Instant) {
    let quiet = |runs: &Vec<Arc<Run>>| {
        runs.iter().map(|r| now.saturating_duration_since(r.last_activity(now))).min()
    };
    map.retain(|_, runs| quiet(runs).is_some_and(|q| q < IDLE));
    if map.len() >= MAX_ADDRESSES {
        let oldest = map.iter().max_by_key(|(_, runs)| quiet(runs)).map(|(ip, _)| *ip);
        if let Some(ip) = oldest {
            map.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: [Duration; 2] = [Duration::from_millis(1500), Duration::from_secs(3)];
    const MS: Duration = Duration::from_millis(1);

    fn ip() -> IpAddr {
        "192.0.2.9".parse().unwrap()
    }

    /// One stream of a phase: `(direction, start, end, bytes every 100 ms its phase moves)`.
    type Stream = (Direction, Duration, Duration, u64);

    /// A phase of `n` streams starting 300 ms apart at `at`, each `len` long, sharing a link
    /// that moves `per_bin` bytes every 100 ms.
    fn phase(d: Direction, at: Duration, len: Duration, n: u32, per_bin: u64) -> Vec<Stream> {
        (0..n).map(|i| (d, at + MS * 300 * i, at + len, per_bin)).collect()
    }

    /// Plays `streams` against `runs` in time order from `t0`: starts, bytes, ends.
    fn play(runs: &AddressRuns, t0: Instant, streams: &[Stream]) {
        let mut events: Vec<(Duration, u8, usize)> = Vec::new();
        for (i, (_, from, to, _)) in streams.iter().enumerate() {
            events.push((*from, 0, i));
            let mut t = *from;
            while t < *to {
                events.push((t, 1, i));
                t += MS * 100;
            }
            events.push((*to, 2, i));
        }
        events.sort();
        let mut live: Vec<Option<Arc<Run>>> = vec![None; streams.len()];
        for (at, what, i) in events {
            let now = t0 + at;
            match what {
                0 => live[i] = Some(runs.start(ip(), streams[i].0, now)),
                1 => {
                    // The link's share of this stream: its phase's streams live at `at`.
                    let (d, _, end, per_bin) = streams[i];
                    let sharing = streams
                        .iter()
                        .filter(|s| s.0 == d && s.2 == end && s.1 <= at && at < s.2)
                        .count() as u64;
                    live[i].as_ref().unwrap().timeline.add(per_bin / sharing, now)
                }
                _ => live[i].as_ref().unwrap().end(now),
            }
        }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// A LibreSpeed test starting at `at`: 6 download streams for 10 s over a link of 6 MB
    /// per 100 ms (480 Mbit/s), then 3 upload streams over 1.5 MB (120 Mbit/s).
    fn test_at(at: f64) -> Vec<Stream> {
        let mut s = phase(Direction::Download, secs(at), secs(10.0), 6, 6_000_000);
        s.extend(phase(Direction::Upload, secs(at + 10.3), secs(10.0), 3, 1_500_000));
        s
    }

    #[test]
    fn one_test_alone_is_measured() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        play(&runs, t0, &test_at(0.0));
        let [dl, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(21.0));
        let (dl, ul) = (dl.unwrap(), ul.unwrap());
        assert!((dl / 480e6 - 1.0).abs() < 0.02, "{dl}");
        assert!((ul / 120e6 - 1.0).abs() < 0.02, "{ul}");
        // Nothing is left for a second result to claim.
        let again = runs.finish(ip(), [true, true], GRACE, t0 + secs(22.0));
        assert!(again.iter().all(Result::is_err), "{again:?}");
    }

    #[test]
    fn an_earlier_unrelated_download_is_not_the_tests() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        // A download of its own, ending 35 s before the test: a run of its own.
        let mut s = phase(Direction::Download, secs(0.0), secs(5.0), 1, 9_000_000);
        s.extend(test_at(40.0));
        play(&runs, t0, &s);
        let [dl, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(61.0));
        assert!((dl.unwrap() / 480e6 - 1.0).abs() < 0.02);
        assert!((ul.unwrap() / 120e6 - 1.0).abs() < 0.02);
    }

    #[test]
    fn a_download_running_into_the_test_leaves_the_clients_figure() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        let mut s = phase(Direction::Download, secs(0.0), secs(7.0), 1, 1);
        s.extend(test_at(5.0));
        play(&runs, t0, &s);
        let [dl, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(26.0));
        assert!(dl.unwrap_err().contains("joined"), "the test's streams joined a running download");
        assert!(ul.is_ok(), "the upload was the test's alone: {ul:?}");
    }

    #[test]
    fn two_visitors_testing_at_once_both_keep_their_own_figures() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        let mut s = test_at(0.0);
        s.extend(test_at(4.0));
        play(&runs, t0, &s);
        let a = runs.finish(ip(), [true, true], GRACE, t0 + secs(24.5));
        assert!(a.iter().all(Result::is_err), "{a:?}");
        let b = runs.finish(ip(), [true, true], GRACE, t0 + secs(25.0));
        assert!(b.iter().all(Result::is_err), "{b:?}");
    }

    #[test]
    fn a_download_beside_an_upload_is_not_one_tests() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        // An upload phase that runs 5 s into the download phase.
        let mut s = phase(Direction::Upload, secs(0.0), secs(8.0), 3, 1_500_000);
        s.extend(phase(Direction::Download, secs(3.0), secs(10.0), 6, 6_000_000));
        play(&runs, t0, &s);
        let [dl, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(14.0));
        assert!(dl.unwrap_err().contains("same time"));
        assert!(ul.unwrap_err().contains("same time"));
    }

    #[test]
    fn a_result_without_a_phase_or_long_after_it_has_no_server_figure() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        play(&runs, t0, &phase(Direction::Download, secs(0.0), secs(10.0), 6, 6_000_000));
        let [dl, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(90.0));
        assert!(dl.unwrap_err().contains("last minute"));
        assert!(ul.unwrap_err().contains("last minute"));
        play(&runs, t0, &phase(Direction::Download, secs(0.0), secs(10.0), 6, 6_000_000));
        let [dl, _] = runs.finish(ip(), [false, true], GRACE, t0 + secs(11.0));
        assert!(dl.unwrap_err().contains("did not test"));
    }

    #[test]
    fn a_transfer_still_going_is_not_a_finished_tests_and_is_kept() {
        let runs = AddressRuns::default();
        let t0 = Instant::now();
        let going = runs.start(ip(), Direction::Upload, t0);
        going.timeline.add(1_000_000, t0);
        let [_, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(5.0));
        assert!(ul.unwrap_err().contains("last minute"), "an upload in flight is no result's");
        // It is kept for the result of the test it belongs to.
        for i in 1..60 {
            going.timeline.add(1_000_000, t0 + MS * 100 * i);
        }
        going.end(t0 + secs(6.0));
        let [_, ul] = runs.finish(ip(), [true, true], GRACE, t0 + secs(7.0));
        assert!(ul.is_ok(), "{ul:?}");
    }
}
