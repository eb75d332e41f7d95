//! What a run does differently as one member of several (`--members`): its stripe of the open
//! model's schedule, so the members' requests interleave into one schedule, and whether to keep
//! its latency histograms in HdrHistogram's encoding for an exact merge. The share of
//! connections and rates is already in the member's spec ([`TestSpec::share`]).
//!
//! [`TestSpec::share`]: wirespeed_model::TestSpec::share

use wirespeed_model::member::Stripe;

/// A run's part in a run of several members; the default is a run of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberRun {
    /// Its stripe of an open model's schedule.
    pub stripe: Stripe,
    /// Keep the whole and per-interval latency histograms in the report (`meta.histograms`).
    pub keep_histograms: bool,
}
