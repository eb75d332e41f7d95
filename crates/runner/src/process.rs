//! The processes of a system under test: each started in a process group of its own, its
//! output kept in a log file, and stopped as a group — SIGTERM, then SIGKILL after a grace
//! period — so no child it forked outlives the cell. Dropping a [`Started`] stops it too, on
//! success, failure and unwinding alike.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::cpus::CpuSet;

/// How long a stopped group has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long a stop waits, after its SIGKILL, for the group's last members to be gone.
const GROUP_EXIT_WAIT: Duration = Duration::from_secs(2);

/// A running process of a system.
#[derive(Debug)]
pub struct Started {
    /// Its role in the system.
    pub role: String,
    /// Its process id, which is also its process group's.
    pub pid: u32,
    /// Where its standard output and error go.
    pub log: PathBuf,
    child: Option<Child>,
}

/// Why a process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The command line was empty.
    #[error("{role}: empty command")]
    Empty {
        /// The role.
        role: String,
    },
    /// Its `cpus` cannot be had here.
    #[error("{role}: {why}")]
    Cpus {
        /// The role.
        role: String,
        /// Why.
        why: String,
    },
    /// The program could not be run.
    #[error("{role}: cannot run {program}: {source}")]
    Exec {
        /// The role.
        role: String,
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Starts `words` as `role` in `dir`, with `env` added, output to `dir/ROLE.log`, in a new
/// process group, on `cpus` when given.
pub fn spawn(
    role: &str,
    words: &[String],
    env: &BTreeMap<String, String>,
    dir: &Path,
    cpus: Option<&CpuSet>,
) -> Result<Started, SpawnError> {
    let (program, args) =
        words.split_first().ok_or_else(|| SpawnError::Empty { role: role.into() })?;
    let exec = |source| SpawnError::Exec { role: role.into(), program: program.clone(), source };
    let log = dir.join(format!("{role}.log"));
    let out = File::create(&log).map_err(exec)?;
    let err = out.try_clone().map_err(exec)?;
    let mut command = Command::new(program);
    if let Some(cpus) = cpus {
        cpus.check_available().map_err(|why| SpawnError::Cpus { role: role.into(), why })?;
        cpus.apply(&mut command);
    }
    let child = command
        .args(args)
        .envs(env)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Its own group: a stop reaches whatever it forks, and a Ctrl-C meant for us does not
        // reach it first.
        .process_group(0)
        .spawn()
        .map_err(exec)?;
    Ok(Started { role: role.into(), pid: child.id(), log, child: Some(child) })
}

impl Started {
    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Stops the whole group: SIGTERM, then SIGKILL after `grace`; waits for the process.
    /// Returns its exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let group = -(self.pid as libc::pid_t);
        // SAFETY: kill(2) with a negative pid signals that process group; it touches no memory.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    break child.wait().ok();
                }
            }
        };
        // Whatever the leader left behind in its group goes too. A SIGKILL is delivered
        // asynchronously, so wait (bounded) until the group is empty: a caller that checks
        // for survivors right after a stop must not see a process still on its way out.
        // SAFETY: as above.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let deadline = Instant::now() + GROUP_EXIT_WAIT;
        while group_alive(self.pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        status
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop(STOP_GRACE);
    }
}

/// Where `program` is: itself if it names a path, else the first executable of that name on
/// `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable =
        |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| runnable(p))
}

/// A live process as `/proc/PID/stat` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Its pid.
    pub pid: u32,
    /// Its process group.
    pub pgrp: u32,
    /// CPU time used, user and system, in clock ticks.
    pub cpu_ticks: u64,
}

/// Every live process (zombies waiting to be reaped do not count), read from `/proc` once.
pub fn processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command name's closing parenthesis: state(0) ppid pgrp(2) session tty
            // tpgid flags minflt cminflt majflt cmajflt utime(11) stime(12).
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            if fields.first() == Some(&"Z") {
                return None;
            }
            let number = |i: usize| fields.get(i)?.parse::<u64>().ok();
            Some(ProcStat {
                pid,
                pgrp: u32::try_from(number(2)?).ok()?,
                cpu_ticks: number(11)? + number(12)?,
            })
        })
        .collect()
}

/// The live processes of group `pgid`, read from `/proc`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    processes().into_iter().filter(|p| p.pgrp == pgid).map(|p| p.pid).collect()
}

/// True when a live process is still in the group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    !group_members(pgid).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        crate::words::split(s).unwrap()
    }

    #[test]
    fn a_stop_takes_the_whole_group_even_children_that_ignore_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        // A leader that forks a child ignoring SIGTERM, then waits.
        let mut p = spawn(
            "server",
            &words("sh -c 'trap \"\" TERM; (trap \"\" TERM; sleep 60) & echo started; wait'"),
            &BTreeMap::new(),
            dir.path(),
            None,
        )
        .unwrap();
        let t0 = Instant::now();
        while !p.log_tail(1).contains("started") {
            assert!(t0.elapsed() < Duration::from_secs(10), "never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(p.exited().is_none());
        let pid = p.pid;
        p.stop(Duration::from_millis(200));
        let t0 = Instant::now();
        while group_alive(pid) {
            assert!(t0.elapsed() < Duration::from_secs(5), "the group outlived its stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn missing_programs_are_said_and_found_ones_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            spawn("client", &words("no-such-program-here --x"), &BTreeMap::new(), dir.path(), None)
                .unwrap_err();
        assert!(err.to_string().starts_with("client: cannot run no-such-program-here"), "{err}");
        assert!(which("sh").is_some());
        assert!(which("no-such-program-here").is_none());
        assert!(which("/bin/sh").is_some());
    }
}
