//! What `wirespeed role` does on a host of a study: the runner on another machine asks for it
//! over ssh, and it does there what the runner does for a process on its own machine — starts
//! the command in a process group of its own with its output in a log, waits for its
//! readiness probe, samples the group from `/proc` — and tells the runner each step as one
//! JSON line on standard output ([`RoleEvent`]). It ends the group when its standard input
//! closes (the runner stopped the role, or the ssh connection dropped), when the runner's
//! signal reaches it, or when the process exits by itself; nothing it started outlives it.
//!
//! With `load`, the command is a wirespeed test whose report is its standard output: that is
//! passed through untouched, and a closed standard input interrupts the test (SIGINT), which
//! then reports what it measured so far.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cpus::CpuSet;
use crate::process::{self, STOP_GRACE};
use crate::ready::{self, Probe};
use crate::sample::{self, Sample, Wanted};
use crate::scenario::Ready;

/// What the runner asks a host to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleSpec {
    /// The role's name (its log is `ROLE.log` in `dir`).
    pub role: String,
    /// The run's directory on the host (made if missing).
    pub dir: PathBuf,
    /// The command line.
    pub argv: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// When it is ready, its templates already filled in.
    #[serde(default)]
    pub ready: Option<Ready>,
    /// Sample the group this often (milliseconds); none: no samples.
    #[serde(default)]
    pub sample_ms: Option<u64>,
    /// Memory in the samples.
    #[serde(default)]
    pub memory: bool,
    /// CPU time in the samples.
    #[serde(default)]
    pub cpu: bool,
    /// The CPUs it runs on (`"1"`, `"0-1"`); none: any.
    #[serde(default)]
    pub cpus: Option<String>,
    /// Started in the background (by an Ansible playbook): standard input is not watched,
    /// `ROLE.role.pid` in `dir` holds this process's pid (a SIGTERM to it stops the role),
    /// and is removed when the role has stopped.
    #[serde(default)]
    pub detached: bool,
}

/// The file a detached role keeps its pid in.
pub fn pid_file(spec: &RoleSpec) -> PathBuf {
    spec.dir.join(format!("{}.role.pid", spec.role))
}

/// One step, as a line of JSON on standard output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleEvent {
    /// It is ready for load.
    Ready {
        /// Its pid on the host (and its group's).
        pid: u32,
        /// How long readiness took.
        after_ms: u64,
    },
    /// It did not become ready, or could not start.
    NotReady {
        /// Why, with the end of its log.
        why: String,
    },
    /// A reading of its group.
    Sample(Sample),
    /// It exited by itself.
    Exited {
        /// How.
        status: String,
        /// The end of its log.
        log_tail: String,
    },
    /// It was stopped, as asked.
    Stopped,
}

/// How long an interrupted load has to report before its group is killed.
const LOAD_GRACE: Duration = Duration::from_secs(15);

fn say(event: &RoleEvent) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, event);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// A flag that turns true when standard input reaches its end (or fails).
fn stdin_closed() -> Arc<AtomicBool> {
    let closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        flag.store(true, Ordering::Relaxed);
    });
    closed
}

/// Runs the role until it is stopped or ends; the process's exit code.
pub fn run(spec: &RoleSpec, stop: &AtomicBool) -> i32 {
    if let Err(e) = std::fs::create_dir_all(&spec.dir) {
        say(&RoleEvent::NotReady { why: format!("{}: {e}", spec.dir.display()) });
        return 1;
    }
    if !spec.detached {
        return supervise(spec, stop, &stdin_closed());
    }
    let pid_file = pid_file(spec);
    if let Err(e) = std::fs::write(&pid_file, std::process::id().to_string()) {
        say(&RoleEvent::NotReady { why: format!("{}: {e}", pid_file.display()) });
        return 1;
    }
    let code = supervise(spec, stop, &Arc::new(AtomicBool::new(false)));
    let _ = std::fs::remove_file(&pid_file);
    code
}

/// Starts, probes and samples the role until `stop` or `closed`, or until it exits.
fn supervise(spec: &RoleSpec, stop: &AtomicBool, closed: &AtomicBool) -> i32 {
    let cpus = match spec.cpus.as_deref().map(CpuSet::parse).transpose() {
        Ok(cpus) => cpus,
        Err(why) => {
            say(&RoleEvent::NotReady { why });
            return 1;
        }
    };
    let mut proc = match process::spawn(&spec.role, &spec.argv, &spec.env, &spec.dir, cpus.as_ref())
    {
        Ok(p) => p,
        Err(e) => {
            say(&RoleEvent::NotReady { why: e.to_string() });
            return 1;
        }
    };
    let started = Instant::now();
    if let Some(r) = &spec.ready {
        let waited = match Probe::from_ready(r) {
            Ok((probe, timeout)) => {
                ready::wait(&mut proc, &probe, timeout).map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        if let Err(why) = waited {
            say(&RoleEvent::NotReady { why });
            return 1;
        }
    }
    say(&RoleEvent::Ready { pid: proc.pid, after_ms: started.elapsed().as_millis() as u64 });
    let sampled = Instant::now();
    let interval = spec.sample_ms.map(Duration::from_millis);
    let wanted = Wanted { memory: spec.memory, cpu: spec.cpu };
    let mut next = Duration::ZERO;
    loop {
        if closed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
            proc.stop(STOP_GRACE);
            say(&RoleEvent::Stopped);
            return 0;
        }
        if let Some(status) = proc.exited() {
            say(&RoleEvent::Exited { status: status.to_string(), log_tail: proc.log_tail(10) });
            return 1;
        }
        if let Some(every) = interval {
            let at = sampled.elapsed();
            if at >= next {
                let roles = [(spec.role.clone(), proc.pid)];
                for s in sample::read(&roles, at.as_millis() as u64, wanted) {
                    say(&RoleEvent::Sample(s));
                }
                next = at + every;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Tries `ready`'s probe once (a log probe has no log to read here, and fails).
pub fn probe_once(ready: &Ready) -> anyhow::Result<bool> {
    let (probe, _) = Probe::from_ready(ready)?;
    Ok(probe.ok(""))
}

/// Runs a load (a wirespeed test printing its report) with its output passed through; a
/// closed standard input or `stop` interrupts it. Its exit code.
pub fn run_load(argv: &[String], stop: &AtomicBool) -> i32 {
    let Some((program, args)) = argv.split_first() else { return 2 };
    let child = Command::new(program).args(args).stdin(Stdio::null()).process_group(0).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cannot run {program}: {e}");
            return 127;
        }
    };
    let closed = stdin_closed();
    let group = -(child.id() as libc::pid_t);
    let mut interrupted: Option<Instant> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code().unwrap_or(1),
            Ok(None) => {}
            Err(_) => return 1,
        }
        match interrupted {
            None if closed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) => {
                // SAFETY: kill(2) on our child's group; it touches no memory.
                unsafe { libc::kill(group, libc::SIGINT) };
                interrupted = Some(Instant::now());
            }
            // An interrupted test reports within moments; one that does not is ended.
            Some(at) if at.elapsed() > LOAD_GRACE => {
                // SAFETY: as above.
                unsafe { libc::kill(group, libc::SIGKILL) };
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
