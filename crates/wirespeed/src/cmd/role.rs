//! `wirespeed role`: a study's role on this host, as a runner elsewhere asks for it over ssh
//! (wirespeed_runner::role does the work). SIGTERM, SIGINT and SIGHUP end it as a closed
//! standard input does: the role's process group is stopped before it exits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use wirespeed_runner::role::{self, RoleSpec};

use crate::flags::RoleArgs;

/// Runs the role; its exit code.
pub(crate) fn run(args: &RoleArgs) -> Result<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // A signal only sets the flag; the loops look at it every few milliseconds.
        signal_hook_flag(signal, &stop)?;
    }
    let code = match (&args.spec, args.load) {
        (Some(json), false) => {
            let spec: RoleSpec = serde_json::from_str(json).context("--spec")?;
            role::run(&spec, &stop)
        }
        (None, true) => role::run_load(&args.argv, &stop),
        _ => bail!("give --spec JSON, or --load -- ARGV"),
    };
    Ok(u8::try_from(code).unwrap_or(1))
}

/// Sets `flag` when `signal` arrives.
fn signal_hook_flag(signal: libc::c_int, flag: &Arc<AtomicBool>) -> Result<()> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    let _ = FLAG.set(Arc::clone(flag));
    extern "C" fn on_signal(_: libc::c_int) {
        if let Some(f) = FLAG.get() {
            f.store(true, Ordering::Relaxed);
        }
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    let previous = unsafe { libc::signal(signal, on_signal as *const () as libc::sighandler_t) };
    if previous == libc::SIG_ERR {
        bail!("cannot handle signal {signal}");
    }
    Ok(())
}
