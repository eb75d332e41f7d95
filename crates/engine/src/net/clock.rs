//! This host's real-time clock: how far it can be trusted, as the kernel tells it (`adjtimex`
//! read-only: whether NTP, chrony or PTP keeps it synchronised, and its bound on the error),
//! and sleeping until a moment on it. A run's members start together by it.

use wirespeed_model::member::ClockQuality;

use super::sys;

/// The kernel's account of the clock. A test may pretend a worse one with
/// `WIRESPEED_TEST_CLOCK_MAX_ERROR_US` (the bound, microseconds).
pub fn kernel_quality() -> ClockQuality {
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

/// Blocks the calling thread until `at_ns` (nanoseconds since the Unix epoch) on the real-time
/// clock: the kernel's absolute sleep (`clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)`, again
/// after a signal) with the thread's timer slack at its least, so it wakes on time without
/// spinning.
pub fn sleep_until_realtime(at_ns: u64) {
    let at = libc::timespec {
        tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
    };
    sys::tighten_timer_slack();
    loop {
        // SAFETY: `at` is a valid timespec; no remainder is asked for with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_REALTIME,
                libc::TIMER_ABSTIME,
                &at,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            break;
        }
    }
}
