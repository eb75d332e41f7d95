//! Taking part in a run made by several processes (`--members`): each process stays a plain
//! `wirespeed` command that some engine placed (a Kubernetes Indexed Job, Nomad, Ansible, a
//! shell loop). It works out which member it is, takes its share of the run ([`prepare`]), waits
//! for the common start ([`start`]: a time given to all, or the database barrier in
//! [`barrier`]), refuses a start it cannot keep — late, twice, or with a clock too far off — and
//! stamps its report with what `wirespeed merge` needs ([`record`]). No process talks to another.

pub mod barrier;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::Client;
use wirespeed_engine::net::clock;
use wirespeed_engine::MemberRun;
use wirespeed_model::member::{ClockQuality, Member, StartMethod};
use wirespeed_model::provenance::MemberRecord;
use wirespeed_model::{Event, Report, TestSpec};
use wirespeed_store::{Location, Store};

/// Where a member tells its person what it is waiting for (a line; the command line prints it
/// on standard error): a silent wait reads as a hung process.
pub type Say<'a> = dyn Fn(&str) + Sync + 'a;

/// What makes a process one member of a run (the command line's `--members`, `--index`,
/// `--run-id`, `--start-at`, `--barrier-timeout`, `--start-lead` and `--max-clock-error`).
#[derive(Debug, Clone, Default)]
pub struct MemberOptions {
    /// How many members the run has (1: a run of its own unless other options say otherwise).
    pub members: u32,
    /// This member's index; else read from the engine's environment variables.
    pub index: Option<u32>,
    /// The run every member shares.
    pub run_id: Option<String>,
    /// The common start, RFC 3339 or `@UNIX-SECONDS`; else the database barrier.
    pub start_at: Option<String>,
    /// How long the barrier waits for the others (a duration, `5m`).
    pub barrier_timeout: String,
    /// How far after the last arrival the start is set (`2s`).
    pub start_lead: String,
    /// The most this member's clock may be off (`10ms`).
    pub max_clock_error: String,
}

impl MemberOptions {
    /// True when the options make this process a member of a run (rather than a run of its
    /// own).
    pub fn is_member(&self) -> bool {
        self.members > 1 || self.run_id.is_some() || self.start_at.is_some()
    }
}

/// A member could not start: it came after the start, twice, after the barrier gave up, or
/// with a clock it cannot vouch for. Exit code 12; the run is not half-measured in silence.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotStarted(pub String);

/// The member was interrupted (SIGINT, SIGTERM) before its start came: it stopped at once and
/// measured nothing. Exit code 130.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);

/// How far ahead `--start-at` may be: a member waits in the foreground (a pod, a job), and a
/// start a day off is a mistake in the time, not a plan.
const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// What this member was asked: who it is, the whole run, and how the start is agreed.
#[derive(Debug, Clone)]
pub struct Plan {
    member: Member,
    run_spec: TestSpec,
    start: StartPlan,
    max_error_ns: u64,
}

#[derive(Debug, Clone)]
enum StartPlan {
    /// `--start-at`, nanoseconds since the Unix epoch.
    At(u64),
    /// The barrier in the shared database.
    Barrier { timeout: Duration, lead: Duration },
}

/// The environment variables an engine's index arrives in, in the order they are tried.
const INDEX_VARIABLES: [&str; 2] = ["JOB_COMPLETION_INDEX", "NOMAD_ALLOC_INDEX"];

/// Makes `client` one member of a run when the flags say so (its share of the run's spec, its
/// stripe of the schedule, its histograms kept); `None` for a run of its own.
pub fn prepare(
    args: &MemberOptions,
    client: &mut Client,
    db: Option<&Location>,
) -> Result<Option<Plan>> {
    if !args.is_member() {
        return Ok(None);
    }
    let index = match args.index {
        Some(i) => i,
        None => INDEX_VARIABLES
            .iter()
            .find_map(|name| Some((name, std::env::var(name).ok()?)))
            .map(|(name, v)| {
                v.trim().parse::<u32>().map_err(|_| anyhow!("${name} is {v:?}, not an index"))
            })
            .transpose()?
            // A run of one member needs no index; u32::MAX is never valid (refused below).
            .unwrap_or(if args.members == 1 { 0 } else { u32::MAX }),
    };
    if index == u32::MAX {
        bail!(
            "--members {} needs this member's index: --index I, or $JOB_COMPLETION_INDEX \
             (a Kubernetes Indexed Job) or $NOMAD_ALLOC_INDEX",
            args.members
        );
    }
    let Some(run_id) = args.run_id.clone() else {
        bail!("--members needs --run-id: the name every member of the run shares");
    };
    let member = Member { run_id, index, members: args.members };
    member.validate().map_err(anyhow::Error::msg)?;
    let run_spec = client.spec();
    let share = run_spec.share(&member).map_err(|e| anyhow!("--members: {e}"))?;
    client
        .join(share, MemberRun { stripe: member.stripe(), keep_histograms: true })
        .map_err(anyhow::Error::msg)?;
    let duration = |flag: &str, text: &str| {
        humantime::parse_duration(text).with_context(|| format!("bad {flag} {text:?}"))
    };
    let start = match &args.start_at {
        Some(text) => StartPlan::At(parse_time(text)?),
        None if matches!(db, Some(Location::Postgres(_))) => StartPlan::Barrier {
            timeout: duration("--barrier-timeout", &args.barrier_timeout)?,
            lead: duration("--start-lead", &args.start_lead)?,
        },
        None => bail!(
            "members need a common start: --start-at TIME, or a shared PostgreSQL database \
             (--db postgres://… or WIRESPEED_DB) to meet at"
        ),
    };
    let max_error = duration("--max-clock-error", &args.max_clock_error)?;
    Ok(Some(Plan { member, run_spec, start, max_error_ns: max_error.as_nanos() as u64 }))
}

impl Plan {
    /// True when the members meet at the database barrier (rather than at a given time).
    pub fn meets_at_barrier(&self) -> bool {
        matches!(self.start, StartPlan::Barrier { .. })
    }
}

/// `--start-at`: RFC 3339 (`2026-12-04T10:00:00Z`, fractions allowed) or `@UNIX-SECONDS`,
/// no further ahead than [`MAX_START_AHEAD`] (`@99999999999999` overflowed to a start in the
/// past, "arrived 1596136281 s late").
fn parse_time(text: &str) -> Result<u64> {
    parse_time_from(text, SystemTime::now())
}

fn parse_time_from(text: &str, now: SystemTime) -> Result<u64> {
    let latest = now + MAX_START_AHEAD;
    let at = match text.strip_prefix('@') {
        Some(secs) => {
            let secs: f64 = secs.parse().map_err(|_| anyhow!("bad --start-at {text:?}"))?;
            let latest_s = latest.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
            if !(secs.is_finite() && secs > 0.0) {
                bail!("bad --start-at {text:?}");
            }
            if secs > latest_s {
                bail!(too_far(text));
            }
            UNIX_EPOCH + Duration::from_secs_f64(secs)
        }
        None => humantime::parse_rfc3339_weak(text).map_err(|e| {
            anyhow!("bad --start-at {text:?} ({e}): use RFC 3339, like 2026-12-04T10:00:00Z, or @UNIX-SECONDS")
        })?,
    };
    if at > latest {
        bail!(too_far(text));
    }
    Ok(unix_ns(at))
}

fn too_far(text: &str) -> String {
    format!(
        "--start-at {text:?} is more than {} h ahead: members wait in the foreground for their start, \
         so give a time within a day",
        MAX_START_AHEAD.as_secs() / 3600
    )
}

/// Nanoseconds since the Unix epoch.
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Where the member stands when its load begins.
#[derive(Debug, Clone)]
pub struct Started {
    record: MemberRecord,
    /// The barrier's hold on the database, to mark the member finished (or failed).
    pub barrier: Option<barrier::Joined>,
}

/// Waits for the run's common start and returns when it has come; refuses (exit 12, with the
/// reason) a start this member cannot keep.
pub async fn start(
    plan: &Plan,
    store: Option<&Store>,
    host: String,
    cancel: &CancellationToken,
    say: &Say<'_>,
) -> Result<Started> {
    let kernel = clock::kernel_quality();
    let (method, planned_ns, clock, joined) = match &plan.start {
        StartPlan::At(at) => {
            let bound = kernel_error_ns(&kernel);
            if bound > plan.max_error_ns {
                return Err(NotStarted(format!(
                    "this host's clock may be off by up to {} (the kernel's account{}), more than --max-clock-error {}: \
                     synchronise it (chrony, NTP), meet at the database barrier instead of --start-at, \
                     or accept the error with a larger --max-clock-error",
                    human_ns(bound),
                    if kernel.kernel_synchronised { "" } else { ": nothing keeps it synchronised" },
                    human_ns(plan.max_error_ns)
                ))
                .into());
            }
            let clock = ClockQuality { judged_error_ns: bound, ..kernel };
            (StartMethod::StartAt, *at, clock, None)
        }
        StartPlan::Barrier { timeout, lead } => {
            let store = store.ok_or_else(|| anyhow!("the barrier needs the shared database"))?;
            let met =
                barrier::meet(store, plan, &host, kernel, (*timeout, *lead), cancel, say).await?;
            (StartMethod::Barrier, met.start_local_ns, met.clock, Some(met.joined))
        }
    };
    if let Err(e) = wait_until(planned_ns, &plan.member, cancel, say).await {
        // The start is set, so the arrival cannot be given back: the run learns this member
        // will not report, as it would of one that failed.
        if let (Some(store), Some(joined)) = (store, &joined) {
            if let Err(db) = barrier::finish(store, joined, Err(e.to_string())) {
                say(&format!("warning: could not mark this member finished in the run: {db}"));
            }
        }
        return Err(e);
    }
    let achieved = unix_ns(SystemTime::now());
    let record = MemberRecord {
        member: plan.member.clone(),
        run_spec: plan.run_spec.clone(),
        host,
        start_method: method,
        planned_start_unix_ns: planned_ns,
        achieved_start_unix_ns: achieved,
        clock,
    };
    Ok(Started { record, barrier: joined })
}

/// Sleeps until `at_ns` on this host's clock: a timer to within 5 ms of it, then the kernel's
/// absolute sleep on the real-time clock with the timer slack at its least, so members on one
/// busy core wake on time without spinning against each other. Refuses when `at_ns` has
/// already passed; stops at once when `cancel` fires (a signal: before, the member slept
/// through SIGINT and SIGTERM, and a pod waited out its grace period).
async fn wait_until(
    at_ns: u64,
    member: &Member,
    cancel: &CancellationToken,
    say: &Say<'_>,
) -> Result<()> {
    let now = unix_ns(SystemTime::now());
    if now > at_ns {
        return Err(NotStarted(format!(
            "member {} of run {:?} arrived {} after the run's start: a late member would skew the run, so it does not start",
            member.index,
            member.run_id,
            human_ns(now - at_ns)
        ))
        .into());
    }
    let coarse = (at_ns - now).saturating_sub(5_000_000);
    if coarse >= 1_000_000_000 {
        // A member that waits long says so: a silent one reads as hung.
        say(&format!(
            "member {} of run {:?} waits {} for the run's start",
            member.index,
            member.run_id,
            human_ns(at_ns - now)
        ));
    }
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_nanos(coarse)) => {}
        _ = cancel.cancelled() => {
            return Err(Interrupted(format!(
                "member {} of run {:?} was interrupted {} before its start: it stops, having measured nothing",
                member.index,
                member.run_id,
                human_ns(at_ns.saturating_sub(unix_ns(SystemTime::now())))
            ))
            .into());
        }
    }
    tokio::task::block_in_place(|| clock::sleep_until_realtime(at_ns));
    if cancel.is_cancelled() {
        return Err(Interrupted(format!(
            "member {} of run {:?} was interrupted at its start: it stops, having measured nothing",
            member.index, member.run_id
        ))
        .into());
    }
    Ok(())
}

/// How far off the clock may be, by the kernel's account: its estimate of the error while
/// something keeps the clock synchronised, else its bound (16 s once nothing has for a while).
fn kernel_error_ns(q: &ClockQuality) -> u64 {
    let bound = q.kernel_max_error_ns.unwrap_or(16_000_000_000);
    if q.kernel_synchronised {
        q.kernel_est_error_ns.unwrap_or(bound)
    } else {
        bound
    }
}

/// A duration for a message: `16 s`, `3.2 ms`, `40 µs`.
pub fn human_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.3} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} ms", n as f64 / 1e6),
        n => format!("{:.0} µs", n as f64 / 1e3),
    }
}

/// Keeps a report in a file when the database could not take it (it stopped mid-run):
/// `$XDG_DATA_HOME/wirespeed/unsaved/RUN-INDEX.json` for a member, which `wirespeed merge`
/// reads beside the others, `KIND-START_MS.json` for any other run. Returns where.
pub fn keep_locally(report: &Report) -> Result<std::path::PathBuf> {
    let dir = Store::default_path()
        .and_then(|db| Some(db.parent()?.join("unsaved")))
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = match report.meta.member.as_ref() {
        Some(m) => {
            let safe: String = m
                .member
                .run_id
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
                .collect();
            format!("{safe}-{}.json", m.member.index)
        }
        None => format!("{}-{}.json", report.kind().name(), report.meta.start_unix_ms),
    };
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(report)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Puts the member's record in a report (the printed one and the saved one alike).
pub fn record(report: &mut Report, started: &Started) {
    report.meta.member = Some(started.record.clone());
}

/// Stamps an event's report or meta with the member's record, so every format prints it.
pub fn stamp(event: &mut Event, started: &Started) {
    match event {
        Event::Start { meta, .. } => meta.member = Some(started.record.clone()),
        Event::End(report) => record(report, started),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_more_than_a_day_ahead_is_refused_not_overflowed() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = parse_time_from("@1800003600", now).unwrap();
        assert_eq!(at, 1_800_003_600 * 1_000_000_000);
        for far in ["@99999999999999", "@1800090000", "2027-12-04T10:00:00Z"] {
            let err = parse_time_from(far, now).unwrap_err().to_string();
            assert!(err.contains("more than 24 h ahead"), "{far}: {err}");
        }
        assert!(parse_time_from("@inf", now).is_err());
    }

    #[test]
    fn the_kernels_error_is_its_estimate_while_synchronised_else_its_bound() {
        let q = |synchronised, max, est| ClockQuality {
            kernel_synchronised: synchronised,
            kernel_max_error_ns: max,
            kernel_est_error_ns: est,
            ..ClockQuality::default()
        };
        assert_eq!(kernel_error_ns(&q(true, Some(9_000_000), Some(40_000))), 40_000);
        assert_eq!(kernel_error_ns(&q(false, Some(9_000_000), Some(40_000))), 9_000_000);
        assert_eq!(kernel_error_ns(&q(true, Some(9_000_000), None)), 9_000_000);
        assert_eq!(kernel_error_ns(&q(false, None, None)), 16_000_000_000);
    }

    #[test]
    fn only_member_options_make_a_member() {
        let alone = MemberOptions { members: 1, ..MemberOptions::default() };
        assert!(!alone.is_member());
        assert!(MemberOptions { members: 3, ..alone.clone() }.is_member());
        assert!(MemberOptions { run_id: Some("r".into()), ..alone.clone() }.is_member());
        assert!(MemberOptions { start_at: Some("@1".into()), ..alone }.is_member());
    }

    #[test]
    fn durations_in_messages_read_in_their_own_unit() {
        assert_eq!(human_ns(16_000_000_000), "16.000 s");
        assert_eq!(human_ns(3_200_000), "3.2 ms");
        assert_eq!(human_ns(40_000), "40 µs");
    }

    #[tokio::test]
    async fn a_member_after_the_start_is_turned_away_without_waiting() {
        let member = Member { run_id: "r".into(), index: 1, members: 2 };
        let past = unix_ns(SystemTime::now() - Duration::from_secs(3));
        let said = std::sync::Mutex::new(Vec::new());
        let say = |line: &str| said.lock().unwrap().push(line.to_string());
        let err = wait_until(past, &member, &CancellationToken::new(), &say).await.unwrap_err();
        let why = err.downcast_ref::<NotStarted>().expect("refused as a late member").0.clone();
        assert!(
            why.contains("member 1 of run \"r\" arrived") && why.contains("after the run's start"),
            "{why}"
        );
        assert!(said.lock().unwrap().is_empty(), "it said it waits: {said:?}");
    }
}
