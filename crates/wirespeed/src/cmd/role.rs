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
    let spec: Option<RoleSpec> =
        args.spec.as_deref().map(serde_json::from_str).transpose().context("--spec")?;
    let detached = spec.as_ref().is_some_and(|s| s.detached);
    if detached {
        // Started in the background by a playbook's shell: a session of its own, so the end
        // of the one that started it (and its SIGHUP) does not end the role.
        // SAFETY: setsid(2) has no memory effects; it fails harmlessly for a group leader.
        unsafe { libc::setsid() };
        // SAFETY: ignoring a signal changes no memory.
        unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    }
    let signals: &[libc::c_int] = if detached {
        &[libc::SIGTERM, libc::SIGINT]
    } else {
        &[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]
    };
    for &signal in signals {
        // A signal only sets the flag; the loops look at it every few milliseconds.
        signal_hook_flag(signal, &stop)?;
    }
    if let Some(json) = &args.probe {
        let ready = serde_json::from_str(json).context("--probe")?;
        return Ok(if role::probe_once(&ready)? { 0 } else { 1 });
    }
    let code = match (&spec, args.load) {
        (Some(spec), false) => role::run(spec, &stop),
        (None, true) => role::run_load(&args.argv, &stop),
        _ => bail!("give --spec JSON, --probe JSON, or --load -- ARGV"),
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
