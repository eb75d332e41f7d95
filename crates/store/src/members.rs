//! Runs made by several members (`--members`): the barrier they meet at in a shared
//! PostgreSQL database — no coordinator process, a few statements under a transaction lock,
//! with LISTEN/NOTIFY to wake the waiting — and the saved reports `wirespeed merge --run-id`
//! reads back. The barrier needs PostgreSQL; reading members' reports works on both.

/// A run's row at the barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunState {
    /// How many members the run has.
    pub members: u32,
    /// How many have arrived.
    pub arrived: u32,
    /// The start, on the database's clock, nanoseconds since the epoch, once the last member
    /// arrived.
    pub start_at_ns: Option<u64>,
    /// `waiting`, `started`, `aborted` or `complete`.
    pub status: String,
    /// Why it was aborted.
    pub reason: Option<String>,
    /// The indices of the members that finished their part and saved it.
    pub finished: Vec<u32>,
}

impl RunState {
    /// True when the run was given up on.
    pub fn is_aborted(&self) -> bool {
        self.status == "aborted"
    }
}

/// A member arriving at the barrier.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// The run.
    pub run_id: String,
    /// The member's index.
    pub index: u32,
    /// How many members this member was told the run has.
    pub members: u32,
    /// The whole run's spec, as JSON; every member must bring the same.
    pub spec_json: String,
    /// Where it runs.
    pub host: String,
    /// Its clock's offset to the database's, and the round trip that measured it.
    pub offset: (i64, u64),
    /// How long after the last arrival the start is set, nanoseconds.
    pub lead_ns: u64,
}

/// Why the barrier turned a member away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its index has already arrived (a member started twice, or restarted).
    Duplicate {
        /// Where the first one runs.
        host: String,
    },
    /// The run has started (or its start is set) without it.
    Late {
        /// The start, on the database's clock.
        start_at_ns: u64,
    },
    /// The run was aborted.
    Aborted {
        /// Why.
        reason: String,
    },
    /// It disagrees with the run about the member count or the spec.
    Mismatch {
        /// How.
        what: String,
    },
}

/// A member's saved report, found by its run.
#[derive(Debug, Clone)]
pub struct MemberRow {
    /// The saved run's id.
    pub id: i64,
    /// The member's index.
    pub index: u32,
    /// The report, as JSON.
    pub json: String,
}
