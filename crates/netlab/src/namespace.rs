//! A network namespace standing for one host: made with `ip netns add` (so `ip netns exec`
//! and the user's own tools see it by name), its loopback up, and removed — with every
//! process still inside it — when dropped. [`Namespace::within`] runs code on a thread that
//! has entered it, for the sockets a readiness probe or a test opens there.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::command::run;
use crate::LabError;

/// The prefix of every namespace a lab makes: `wsl-PID-…`, so one left behind by a process
/// that was killed is known by the pid that made it ([`remove_stale`]).
pub const PREFIX: &str = "wsl-";

/// A network namespace, removed when dropped.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// Makes the namespace `name` with its loopback up.
    pub fn create(name: &str) -> Result<Self, LabError> {
        run("ip", &["netns", "add", name])?;
        let ns = Self { name: name.to_string() };
        run("ip", &["-n", name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name for `ip netns`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command that runs `program` inside the namespace (through `ip netns exec`, which
    /// execs it in place: the child's pid is the program's).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// The words that run a command inside the namespace, before the command's own.
    pub fn exec_prefix(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name].map(String::from).to_vec()
    }

    /// Runs `f` on a thread that has entered the namespace: the sockets it opens are the
    /// host's.
    pub fn within<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
        let path = format!("/run/netns/{}", self.name);
        let file = File::open(&path).map_err(|e| LabError::Namespace(format!("{path}: {e}")))?;
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns(2) on an fd we hold open; it moves only this thread.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc != 0 {
                    let e = std::io::Error::last_os_error();
                    return Err(LabError::Namespace(format!("entering {}: {e}", self.name)));
                }
                Ok(f())
            })
            .join()
            .map_err(|_| LabError::Namespace(format!("a thread in {} panicked", self.name)))?
        })
    }

    /// The processes inside the namespace.
    pub fn pids(&self) -> Vec<u32> {
        pids_of(&self.name)
    }
}

/// The processes inside namespace `name`.
fn pids_of(name: &str) -> Vec<u32> {
    run("ip", &["netns", "pids", name])
        .map(|out| out.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process inside `name` (bounded wait), then deletes it.
fn remove(name: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let pids = pids_of(name);
        if pids.is_empty() || Instant::now() > deadline {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2) touches no memory.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Err(e) = run("ip", &["netns", "del", name]) {
        tracing::warn!("{e}");
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        remove(&self.name);
    }
}

/// Every namespace this machine has by name.
pub fn list() -> Vec<String> {
    run("ip", &["netns", "list"])
        .map(|out| {
            out.lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
        })
        .unwrap_or_default()
}

/// Removes the namespaces a lab made in a process that no longer runs (killed before it could
/// clean up); returns their names.
pub fn remove_stale() -> Vec<String> {
    let stale: Vec<String> = list()
        .into_iter()
        .filter(|name| {
            let pid = name.strip_prefix(PREFIX).and_then(|rest| rest.split('-').next());
            pid.and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect();
    for name in &stale {
        remove(name);
    }
    stale
}
