//! Where a report came from when several processes made one run: what a member's report
//! carries about its run ([`MemberRecord`]), and what a merged report was made of
//! ([`MergeRecord`]). Both are parts of a report's [`Meta`](crate::report::Meta).

use serde::{Deserialize, Serialize};

use crate::member::{ClockQuality, Member, StartMethod};
use crate::spec::TestSpec;

/// What a member's report carries about the run it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemberRecord {
    /// Which member.
    #[serde(flatten)]
    pub member: Member,
    /// The whole run's spec, the same in every member's report; the report's own spec is this
    /// member's share of it.
    pub run_spec: TestSpec,
    /// The host (or pod) it ran on.
    pub host: String,
    /// How the start was agreed.
    pub start_method: StartMethod,
    /// The start every member was given, nanoseconds since the Unix epoch (on the reference
    /// clock: this host's for `--start-at`, the database's for a barrier, converted).
    pub planned_start_unix_ns: u64,
    /// When this member's load actually began, on its own clock, nanoseconds since the epoch.
    pub achieved_start_unix_ns: u64,
    /// How far this member's clock could be trusted.
    pub clock: ClockQuality,
}

/// What a merged report was made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MergeRecord {
    /// The run.
    pub run_id: String,
    /// How many members the run had.
    pub members: u32,
    /// The members merged, by index.
    pub merged: Vec<u32>,
    /// The members missing, by index (only with `--allow-partial`).
    pub missing: Vec<u32>,
    /// True when members were missing: the figures are those of the members present.
    pub partial: bool,
    /// Each merged member's host, in index order.
    pub hosts: Vec<String>,
    /// The start every member was given, nanoseconds since the Unix epoch.
    pub planned_start_unix_ns: u64,
    /// Latest achieved start minus the earliest, nanoseconds: how far apart the members began.
    pub start_skew_ns: u64,
    /// Latest achieved start minus the planned one, nanoseconds (negative: early).
    pub latest_start_late_ns: i64,
}
