//! The members' barrier on PostgreSQL (see `crate::members`): arrivals serialised by an
//! advisory transaction lock per run, the last arrival setting the start on the database's own
//! clock and notifying `wirespeed_barrier`; waiting members LISTEN, then re-read (a NOTIFY sent
//! before their LISTEN took effect is never delivered, so the row, not the message, is the
//! truth).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::{Client, GenericClient};

use super::runs::storable;
use super::Postgres;
use crate::members::{Arrival, MemberRow, Refusal, RunState};
use crate::StoreError;

/// The channel a run's start is announced on (the payload is the run's id).
const CHANNEL: &str = "wirespeed_barrier";

/// The database's clock now, in microseconds since the epoch (PostgreSQL's resolution).
const NOW_US: &str = "(extract(epoch from clock_timestamp()) * 1000000)::bigint";

fn unix_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

/// Reads run `run_id`'s row and arrivals.
fn state(c: &mut impl GenericClient, run_id: &str) -> Result<Option<RunState>, postgres::Error> {
    let Some(row) = c.query_opt(
        "SELECT members, start_at_ns, status, reason FROM member_runs WHERE run_id = $1",
        &[&run_id],
    )?
    else {
        return Ok(None);
    };
    let arrivals =
        c.query("SELECT member_index, status FROM member_arrivals WHERE run_id = $1", &[&run_id])?;
    let finished = arrivals
        .iter()
        .filter(|r| r.get::<_, String>(1) == "done")
        .map(|r| r.get::<_, i32>(0) as u32)
        .collect();
    Ok(Some(RunState {
        members: row.try_get::<_, i32>(0)? as u32,
        arrived: arrivals.len() as u32,
        start_at_ns: row.try_get::<_, Option<i64>>(1)?.map(|n| n as u64),
        status: row.try_get(2)?,
        reason: row.try_get(3)?,
        finished,
    }))
}

impl Postgres {
    /// One measurement of this host's clock against the database's: the local time before
    /// and after, and the database's between, nanoseconds since the epoch (taken on the
    /// connection's thread, so the round trip is the database's alone).
    pub(crate) fn clock_sample(&self) -> Result<(i64, i64, i64), StoreError> {
        self.call(|c| {
            let before = unix_ns();
            let db_us: i64 = c.query_one(&format!("SELECT {NOW_US}"), &[])?.try_get(0)?;
            let after = unix_ns();
            Ok((before, db_us * 1_000, after))
        })
    }

    /// A member arrives at run `a.run_id`'s barrier; the last one sets the start.
    pub(crate) fn barrier_join(
        &self,
        a: &Arrival,
    ) -> Result<Result<RunState, Refusal>, StoreError> {
        let a = Arrival { run_id: storable(&a.run_id), host: storable(&a.host), ..a.clone() };
        self.call(move |c| {
            let mut tx = c.transaction()?;
            lock_run(&mut tx, &a.run_id)?;
            let now_us: i64 = tx.query_one(&format!("SELECT {NOW_US}"), &[])?.try_get(0)?;
            tx.execute(
                "INSERT INTO member_runs (run_id, members, spec, created_ms, status)
                 VALUES ($1, $2, $3, $4, 'waiting') ON CONFLICT (run_id) DO NOTHING",
                &[&a.run_id, &(a.members as i32), &a.spec_json, &(now_us / 1_000)],
            )?;
            let row = tx.query_one(
                "SELECT members, spec, start_at_ns, status, reason FROM member_runs WHERE run_id = $1",
                &[&a.run_id],
            )?;
            let (members, spec): (i32, String) = (row.try_get(0)?, row.try_get(1)?);
            let (start, status): (Option<i64>, String) = (row.try_get(2)?, row.try_get(3)?);
            if status == "aborted" {
                let reason: Option<String> = row.try_get(4)?;
                return Ok(Err(Refusal::Aborted { reason: reason.unwrap_or_default() }));
            }
            if members as u32 != a.members {
                return Ok(Err(Refusal::Mismatch {
                    what: format!("the run has {members} members; this member was given --members {}", a.members),
                }));
            }
            if spec != a.spec_json {
                return Ok(Err(Refusal::Mismatch {
                    what: "the run's first member brought a different test (kind, target or options)".into(),
                }));
            }
            if let Some(start) = start {
                return Ok(Err(Refusal::Late { start_at_ns: start as u64 }));
            }
            let inserted = tx.execute(
                "INSERT INTO member_arrivals
                   (run_id, member_index, host, arrived_ns, status, offset_ns, offset_rtt_ns)
                 VALUES ($1, $2, $3, $4, 'waiting', $5, $6)
                 ON CONFLICT (run_id, member_index) DO NOTHING",
                &[&a.run_id, &(a.index as i32), &a.host, &(now_us * 1_000), &a.offset.0, &(a.offset.1 as i64)],
            )?;
            if inserted == 0 {
                let host: String = tx
                    .query_one(
                        "SELECT host FROM member_arrivals WHERE run_id = $1 AND member_index = $2",
                        &[&a.run_id, &(a.index as i32)],
                    )?
                    .try_get(0)?;
                return Ok(Err(Refusal::Duplicate { host }));
            }
            let arrived: i64 = tx
                .query_one("SELECT count(*) FROM member_arrivals WHERE run_id = $1", &[&a.run_id])?
                .try_get(0)?;
            if arrived == i64::from(members) {
                let start = now_us * 1_000 + a.lead_ns as i64;
                tx.execute(
                    "UPDATE member_runs SET start_at_ns = $2, status = 'started' WHERE run_id = $1",
                    &[&a.run_id, &start],
                )?;
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &a.run_id])?;
            }
            let now = state(&mut tx, &a.run_id)?.expect("inserted above");
            tx.commit()?;
            Ok(Ok(now))
        })
    }

    /// Run `run_id`'s state, waiting up to `wait` for its start to be announced first.
    pub(crate) fn barrier_poll(
        &self,
        run_id: &str,
        wait: Duration,
    ) -> Result<Option<RunState>, StoreError> {
        let run_id = storable(run_id);
        self.call(move |c| {
            c.batch_execute(&format!("LISTEN {CHANNEL}"))?;
            // LISTEN counts from its commit: what was announced before is in the row.
            let now = state(c, &run_id)?;
            if now.as_ref().is_none_or(|s| s.start_at_ns.is_some() || s.is_aborted()) {
                return Ok(now);
            }
            wait_for_notice(c, &run_id, wait)?;
            state(c, &run_id)
        })
    }

    /// Gives up on run `run_id` because of `reason`, unless its start was set meanwhile;
    /// true when this call aborted it.
    pub(crate) fn barrier_abort(&self, run_id: &str, reason: &str) -> Result<bool, StoreError> {
        let (run_id, reason) = (storable(run_id), storable(reason));
        self.call(move |c| {
            let mut tx = c.transaction()?;
            lock_run(&mut tx, &run_id)?;
            let n = tx.execute(
                "UPDATE member_runs SET status = 'aborted', reason = $2
                 WHERE run_id = $1 AND start_at_ns IS NULL AND status = 'waiting'",
                &[&run_id, &reason],
            )?;
            if n > 0 {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &run_id])?;
            }
            tx.commit()?;
            Ok(n > 0)
        })
    }

    /// A member that leaves before the start (interrupted) takes its arrival back, so a
    /// replacement can take its place.
    pub(crate) fn barrier_leave(&self, run_id: &str, index: u32) -> Result<(), StoreError> {
        let run_id = storable(run_id);
        self.call(move |c| {
            let mut tx = c.transaction()?;
            lock_run(&mut tx, &run_id)?;
            tx.execute(
                "DELETE FROM member_arrivals WHERE run_id = $1 AND member_index = $2
                 AND (SELECT start_at_ns FROM member_runs WHERE run_id = $1) IS NULL",
                &[&run_id, &(index as i32)],
            )?;
            tx.commit()
        })
    }

    /// Member `index` of run `run_id` has finished: `Ok(saved run, if saved)` or `Err(why)`,
    /// which marks the run aborted. The run is complete when every member has finished well.
    pub(crate) fn member_finished(
        &self,
        run_id: &str,
        index: u32,
        outcome: Result<Option<i64>, String>,
    ) -> Result<(), StoreError> {
        let run_id = storable(run_id);
        self.call(move |c| {
            let mut tx = c.transaction()?;
            lock_run(&mut tx, &run_id)?;
            let now_ns = unix_ns();
            let (status, reason, saved) = match &outcome {
                Ok(id) => ("done", None, *id),
                Err(why) => ("failed", Some(storable(why)), None),
            };
            tx.execute(
                "UPDATE member_arrivals SET status = $3, reason = $4, saved_run = $5, finished_ns = $6
                 WHERE run_id = $1 AND member_index = $2",
                &[&run_id, &(index as i32), &status, &reason, &saved, &now_ns],
            )?;
            if let Some(why) = reason {
                tx.execute(
                    "UPDATE member_runs SET status = 'aborted', reason = $2 WHERE run_id = $1",
                    &[&run_id, &format!("member {index} failed: {why}")],
                )?;
            } else {
                tx.execute(
                    "UPDATE member_runs SET status = 'complete' WHERE run_id = $1 AND status = 'started'
                     AND members = (SELECT count(*) FROM member_arrivals WHERE run_id = $1 AND status = 'done')",
                    &[&run_id],
                )?;
            }
            tx.commit()
        })
    }

    /// Run `run_id`'s barrier state, if it met at one.
    pub(crate) fn run_state(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
        let run_id = storable(run_id);
        self.call(move |c| state(c, &run_id))
    }

    /// The run ids members saved reports under.
    pub(crate) fn member_run_ids(&self) -> Result<Vec<String>, StoreError> {
        self.call(|c| {
            c.query(
                "SELECT DISTINCT member_run FROM runs WHERE member_run IS NOT NULL ORDER BY 1",
                &[],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect()
        })
    }

    /// The saved reports of run `run_id`'s members, by index.
    pub(crate) fn member_rows(&self, run_id: &str) -> Result<Vec<MemberRow>, StoreError> {
        let run_id = storable(run_id);
        self.call(move |c| {
            c.query(
                "SELECT runs.id, runs.member_index, reports.report::text FROM runs
                 JOIN reports ON reports.run_id = runs.id
                 WHERE runs.member_run = $1 ORDER BY runs.member_index, runs.id",
                &[&run_id],
            )?
            .iter()
            .map(|r| {
                Ok(MemberRow {
                    id: r.try_get(0)?,
                    index: r.try_get::<_, i32>(1)? as u32,
                    json: r.try_get(2)?,
                })
            })
            .collect()
        })
    }
}

/// The run's advisory lock, for this transaction: arrivals, aborts and finishes take turns.
fn lock_run(tx: &mut postgres::Transaction<'_>, run_id: &str) -> Result<(), postgres::Error> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1)::bigint)",
        &[&format!("wirespeed-run:{run_id}")],
    )?;
    Ok(())
}

/// Waits up to `wait` for a notice about `run_id` (others' notices are read past).
fn wait_for_notice(c: &mut Client, run_id: &str, wait: Duration) -> Result<(), postgres::Error> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let mut notices = c.notifications();
        let mut iter = notices.timeout_iter(left);
        match postgres::fallible_iterator::FallibleIterator::next(&mut iter)? {
            Some(n) if n.payload() == run_id => return Ok(()),
            Some(_) => continue,
            None => return Ok(()),
        }
    }
}
