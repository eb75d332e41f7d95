//! Meeting the other members at the barrier in the shared PostgreSQL database: measure this
//! clock against the database's, arrive, wait for the last member to set the start (or the
//! barrier to time out, which aborts the run for everyone), and convert that start to this
//! host's clock. A late, duplicate or mismatched member is turned away by the database itself.

use std::time::{Duration, Instant};

use anyhow::Result;
use tokio_util::sync::CancellationToken;
use wirespeed_model::member::ClockQuality;
use wirespeed_store::members::{Arrival, Refusal, RunState};
use wirespeed_store::{Store, StoreError};

use super::{human_ns, NotStarted, Plan, Say};

/// Round trips the clock offset is measured over; the one with the shortest round trip wins
/// (NTP's and Cristian's rule: its midpoint is the best bound).
const CLOCK_SAMPLES: usize = 8;

/// How long one wait for the start's announcement lasts before the row is read again (and
/// the timeout and Ctrl-C looked at).
const POLL: Duration = Duration::from_secs(1);

/// A member that arrived, for marking it finished.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The run.
    pub run_id: String,
    /// This member's index in it.
    pub index: u32,
}

/// The start agreed at the barrier.
pub struct Met {
    /// The start on this host's clock, nanoseconds since the epoch.
    pub start_local_ns: u64,
    /// The clock as measured against the database.
    pub clock: ClockQuality,
    /// Its place in the run, to mark it finished.
    pub joined: Joined,
}

/// Runs blocking store work on this runtime thread without stalling the others.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// This clock's offset to the database's (database minus local) and the round trip of the
/// measurement it came from. A test may pretend this clock is off with
/// `WIRESPEED_TEST_CLOCK_SKEW_MS`.
fn offset(store: &Store) -> Result<(i64, u64)> {
    let skew_ns = std::env::var("WIRESPEED_TEST_CLOCK_SKEW_MS")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
        .map_or(0, |ms| ms * 1_000_000);
    let mut best: Option<(i64, u64)> = None;
    for _ in 0..CLOCK_SAMPLES {
        let (before, db, after) = blocking(|| store.clock_sample())?;
        let (before, after) = (before + skew_ns, after + skew_ns);
        let rtt = (after - before).max(0) as u64;
        let offset = db - (before + after) / 2;
        if best.is_none_or(|(_, r)| rtt < r) {
            best = Some((offset, rtt));
        }
    }
    Ok(best.unwrap_or((0, 0)))
}

/// Meets the other members of `plan`'s run; refuses (exit 12) when this member cannot take
/// part, and aborts the run when the barrier times out.
pub async fn meet(
    store: &Store,
    plan: &Plan,
    host: &str,
    kernel: ClockQuality,
    (timeout, lead): (Duration, Duration),
    cancel: &CancellationToken,
    say: &Say<'_>,
) -> Result<Met> {
    let (offset_ns, rtt_ns) = offset(store)?;
    let judged = offset_ns.unsigned_abs() + rtt_ns / 2;
    let clock = ClockQuality {
        offset_ns: Some(offset_ns),
        offset_rtt_ns: Some(rtt_ns),
        judged_error_ns: judged,
        ..kernel
    };
    let member = &plan.member;
    if judged > plan.max_error_ns {
        return Err(NotStarted(format!(
            "member {} of run {:?}: this host's clock is {} off the database's (±{} over the best of {CLOCK_SAMPLES} round trips), \
             more than --max-clock-error {}: synchronise it (chrony, NTP) or accept the error with a larger --max-clock-error",
            member.index,
            member.run_id,
            human_ns(offset_ns.unsigned_abs()),
            human_ns(rtt_ns / 2),
            human_ns(plan.max_error_ns)
        ))
        .into());
    }
    let arrival = Arrival {
        run_id: member.run_id.clone(),
        index: member.index,
        members: member.members,
        spec_json: serde_json::to_string(&plan.run_spec)?,
        host: host.to_string(),
        offset: (offset_ns, rtt_ns),
        lead_ns: lead.as_nanos() as u64,
    };
    let refused = |why: String| -> anyhow::Error {
        NotStarted(format!("member {} of run {:?} {why}", member.index, member.run_id)).into()
    };
    let mut state = match blocking(|| store.barrier_join(&arrival))? {
        Ok(state) => state,
        Err(Refusal::Duplicate { host }) => {
            return Err(refused(format!(
                "is already there (from {host}): a member started twice, or restarted; the run goes on without this one"
            )))
        }
        Err(Refusal::Late { .. }) => {
            return Err(refused(
                "arrived after the run's start was set: a late member (or a restarted one) would skew the run, so it does not start"
                    .into(),
            ))
        }
        Err(Refusal::Aborted { reason }) => {
            return Err(refused(format!("arrived at a run that was aborted: {reason}")))
        }
        Err(Refusal::Mismatch { what }) => {
            return Err(refused(format!("does not match the run: {what}")))
        }
    };
    let joined = Joined { run_id: member.run_id.clone(), index: member.index };
    if state.start_at_ns.is_none() && !state.is_aborted() {
        // A member that waits says so: a silent one reads as hung.
        say(&format!(
            "member {} of run {:?} is at the barrier ({} of {} there); it waits up to {} for the rest",
            member.index,
            member.run_id,
            state.arrived,
            member.members,
            human_ns(timeout.as_nanos() as u64)
        ));
    }
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(start_db_ns) = state.start_at_ns {
            // The start is on the database's clock; this clock reads it `offset` earlier.
            let start_local_ns = (start_db_ns as i64 - offset_ns).max(0) as u64;
            return Ok(Met { start_local_ns, clock, joined });
        }
        if state.is_aborted() {
            return Err(refused(format!(
                "was waiting when the run was aborted: {}",
                state.reason.clone().unwrap_or_default()
            )));
        }
        if cancel.is_cancelled() {
            blocking(|| store.barrier_leave(&joined.run_id, joined.index))?;
            return Err(super::Interrupted(format!(
                "member {} of run {:?} was interrupted at the barrier; it left, and a replacement may take its place",
                joined.index, joined.run_id
            ))
            .into());
        }
        if Instant::now() >= deadline {
            let reason = timed_out(&state, member.members, timeout);
            if blocking(|| store.barrier_abort(&joined.run_id, &reason))? {
                return Err(refused(format!(
                    "gave up at the barrier and aborted the run: {reason}"
                )));
            }
            // The last member came meanwhile: read the start it set.
        }
        let wait = POLL
            .min(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)));
        state = match blocking(|| store.barrier_poll(&joined.run_id, wait))? {
            Some(s) => s,
            None => return Err(refused("found its run gone from the database".into())),
        };
    }
}

/// Why the barrier gave up, for every member and the run's row.
fn timed_out(state: &RunState, members: u32, timeout: Duration) -> String {
    format!(
        "only {} of {members} members arrived within --barrier-timeout {}",
        state.arrived,
        humantime::format_duration(timeout)
    )
}

/// Marks this member finished in the run's row: `Ok(saved run, if saved)` or why it failed
/// (which aborts the run, so it is never merged as if whole). A database that fails here is
/// the caller's to report; the report itself was already saved or kept.
pub fn finish(
    store: &Store,
    joined: &Joined,
    outcome: Result<Option<i64>, String>,
) -> Result<(), StoreError> {
    blocking(|| store.member_finished(&joined.run_id, joined.index, outcome))
}
