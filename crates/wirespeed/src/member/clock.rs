//! How far this host's clock can be trusted, as the kernel tells it (`adjtimex` read-only:
//! whether NTP, chrony or PTP keeps it synchronised, and its bound on the error). A member
//! records it, and refuses a common start it cannot keep.

use wirespeed_model::member::ClockQuality;

/// The kernel's account of the clock. A test may pretend a worse one with
/// `WIRESPEED_TEST_CLOCK_MAX_ERROR_US` (the bound, microseconds).
pub(crate) fn kernel() -> ClockQuality {
    // SAFETY: an all-zero timex has modes 0: adjtimex only reads.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: tx is a valid, writable timex.
    let state = unsafe { libc::adjtimex(&mut tx) };
    let mut q = ClockQuality::default();
    if state >= 0 {
        // TIME_ERROR, or STA_UNSYNC in the status: nothing keeps the clock in time.
        q.kernel_synchronised = state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
        q.kernel_max_error_ns = Some(tx.maxerror.max(0) as u64 * 1_000);
        q.kernel_est_error_ns = Some(tx.esterror.max(0) as u64 * 1_000);
    }
    if let Some(us) =
        std::env::var("WIRESPEED_TEST_CLOCK_MAX_ERROR_US").ok().and_then(|v| v.parse::<u64>().ok())
    {
        q.kernel_synchronised = false;
        q.kernel_max_error_ns = Some(us * 1_000);
    }
    q
}

/// How far off the clock may be, by the kernel's account: its estimate of the error while
/// something keeps the clock synchronised, else its bound (16 s once nothing has for a while).
pub(crate) fn kernel_error_ns(q: &ClockQuality) -> u64 {
    let bound = q.kernel_max_error_ns.unwrap_or(16_000_000_000);
    if q.kernel_synchronised {
        q.kernel_est_error_ns.unwrap_or(bound)
    } else {
        bound
    }
}
