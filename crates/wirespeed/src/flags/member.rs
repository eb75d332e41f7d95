//! The flags a load test takes to be one member of a run made by several processes (on one host
//! or many): which member it is, how many there are, the run they share, and how they agree on
//! a common start — a time given to all, or a barrier in the shared PostgreSQL database.

use clap::Args;
use wirespeed_runner::member::MemberOptions;

/// `--members` and its companions, on every kind that makes load.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Run as one of several members")]
pub(crate) struct MemberArgs {
    /// Run as one of N members of one run, each taking its share: connections, streams and
    /// counts divided, an open model's rate divided and its schedule striped. `wirespeed merge`
    /// adds their reports up exactly.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub members: u32,
    /// This member's index, 0 to N-1 [default: $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job),
    /// else $NOMAD_ALLOC_INDEX].
    #[arg(long, value_name = "I")]
    pub index: Option<u32>,
    /// The run every member shares (any text; a UUID or a CI job's id). Needed with --members.
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Start at this moment, on every member's own clock (RFC 3339, like
    /// 2026-12-04T10:00:00Z, or @UNIX-SECONDS). Without it, members meet at a barrier in the
    /// shared PostgreSQL database (--db postgres://…).
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// How long a member waits at the database barrier for the others before the run is
    /// aborted.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub barrier_timeout: String,
    /// How far after the last member's arrival the common start is set (room for every member
    /// to hear of it and wake up).
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub start_lead: String,
    /// Refuse to start when this member's clock may be off by more: by the kernel's account
    /// with --start-at (its estimate while synchronised, else its 16 s bound), by the offset to
    /// the database's clock and half the round trip that measured it at a barrier.
    #[arg(long, value_name = "DURATION", default_value = "10ms")]
    pub max_clock_error: String,
}

impl MemberArgs {
    /// The flags as the runner's member options.
    pub(crate) fn options(&self) -> MemberOptions {
        MemberOptions {
            members: self.members,
            index: self.index,
            run_id: self.run_id.clone(),
            start_at: self.start_at.clone(),
            barrier_timeout: self.barrier_timeout.clone(),
            start_lead: self.start_lead.clone(),
            max_clock_error: self.max_clock_error.clone(),
        }
    }
}
