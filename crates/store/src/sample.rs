//! A small report for the store's own tests to save.

use wirespeed_model::Report;

/// A bandwidth report started at `ms` that moved `bps` in its one interval.
pub(crate) fn report(ms: u64, bps: f64) -> Report {
    wirespeed_testkit::sample::bandwidth_report(ms, 1_000_000_000, [bps], bps, 1)
}
