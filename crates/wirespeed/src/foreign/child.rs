//! Another tool's client as a child process: started with its words, its output read to the
//! end, stopped with SIGINT when the run is cancelled (the tools we run stop on it and print
//! what they have) or when it outlives its time limit (SIGKILL a few seconds later), killed if
//! the run is dropped, and reaped with wait4(2) for the CPU it used: the kernel's own account,
//! whatever the tool's threads did.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use tokio_util::sync::CancellationToken;

/// How long a client that was told to stop (SIGINT) has to print and exit before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// What a client printed, how it ended, and what it used.
#[derive(Debug)]
pub(crate) struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// User and system CPU, nanoseconds.
    pub cpu: (u64, u64),
    /// When it was started.
    pub began: SystemTime,
    /// From its start until it was reaped, nanoseconds.
    pub wall_ns: u64,
    /// Whether it was stopped for outliving `limit`.
    pub overran: bool,
}

impl Ran {
    /// What it used, as a report keeps it.
    pub(crate) fn load_cpu(&self) -> wirespeed_model::report::LoadCpu {
        let (user_ns, system_ns) = self.cpu;
        wirespeed_model::report::LoadCpu { user_ns, system_ns, wall_ns: self.wall_ns }
    }

    /// The last line it said (stderr first), for an error message.
    pub(crate) fn last_words(&self) -> &str {
        self.stderr
            .lines()
            .chain(self.stdout.lines())
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("no message")
    }
}

/// Runs `program` with `args` until it ends, `cancel` fires, or `limit` passes.
pub(crate) async fn run(
    program: &str,
    args: &[String],
    cancel: CancellationToken,
    limit: Duration,
) -> Result<Ran> {
    let began = SystemTime::now();
    let started = std::time::Instant::now();
    let child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!("{program} did not start (is it on PATH? scripts/peers.sh builds the peers)")
        })?;
    let process = Child { pid: child.id() as libc::pid_t, reaped: Arc::default() };
    let reaper = process.clone();
    let waited = tokio::task::spawn_blocking(move || wait(child, &reaper));
    let signals = process.clone();
    let overran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let over = overran.clone();
    let stopper = tokio::spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(limit) => over.store(true, std::sync::atomic::Ordering::Relaxed),
        }
        signals.signal(libc::SIGINT);
        tokio::time::sleep(GRACE).await;
        signals.signal(libc::SIGKILL);
    });
    // Dropped before it ended (the run itself cancelled from above): killed, not left.
    let _kill_on_drop = KillOnDrop(process);
    let outcome = waited.await.with_context(|| format!("waiting for {program}"));
    stopper.abort();
    let (status, stdout, stderr, cpu) = outcome??;
    let overran = overran.load(std::sync::atomic::Ordering::Relaxed);
    let wall_ns = started.elapsed().as_nanos() as u64;
    Ok(Ran { status, stdout, stderr, cpu, began, wall_ns, overran })
}

/// The process, and whether it has been reaped: a signal goes only to a pid still ours (once
/// reaped, the number may be another process's).
#[derive(Clone)]
struct Child {
    pid: libc::pid_t,
    reaped: Arc<Mutex<bool>>,
}

impl Child {
    fn signal(&self, signal: libc::c_int) {
        let reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if !*reaped {
            // SAFETY: kill(2) on our own child, not reaped while the lock is held.
            unsafe { libc::kill(self.pid, signal) };
        }
    }
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.signal(libc::SIGKILL);
    }
}

type Waited = (ExitStatus, String, String, (u64, u64));

/// Reads the child's output to its end, waits for it to exit, and reaps it with wait4(2) for
/// the CPU it used (user, system, ns).
fn wait(mut child: std::process::Child, process: &Child) -> Result<Waited> {
    let mut stderr = child.stderr.take().context("the child's stderr")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    child.stdout.take().context("the child's stdout")?.read_to_string(&mut stdout)?;
    let pid = process.pid;
    // Exited, not yet reaped (WNOWAIT): a signal sent until the reap below still finds it.
    // SAFETY: siginfo is plain data the kernel fills.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            bail!("waiting for the child: {e}");
        }
    }
    let mut reaped = process.reaped.lock().unwrap_or_else(|e| e.into_inner());
    let mut status = 0;
    // SAFETY: rusage is plain data the kernel fills; the pid is our exited, unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    *reaped = true;
    drop(reaped);
    if got != pid {
        bail!("waiting for the child: {}", std::io::Error::last_os_error());
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    let status = ExitStatus::from_raw(status);
    let stderr = errors.join().unwrap_or_default();
    Ok((status, stdout, stderr, (ns(usage.ru_utime), ns(usage.ru_stime))))
}
