//! A third-party server a test starts (nginx, a DNS server): its own process group, so stopping
//! it reaches every process it forked (nginx's workers, NSD's children), not only the one
//! spawned; and a check that nothing of it is left once it was stopped.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running peer; stopped (gracefully, then by force) when dropped.
pub struct Peer {
    child: Child,
    dir: Option<PathBuf>,
}

/// How long a peer has to stop after SIGTERM before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

impl Peer {
    /// Spawns `command` as the leader of a new process group.
    pub fn spawn(command: &mut Command, what: &str) -> Self {
        let child =
            command.process_group(0).spawn().unwrap_or_else(|e| panic!("{what} starts: {e}"));
        Self { child, dir: None }
    }

    /// Removes `dir` (the peer's configuration and state) once the peer has stopped.
    pub fn owning(mut self, dir: PathBuf) -> Self {
        self.dir = Some(dir);
        self
    }

    /// The leader's process id (also the group's id).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether any process of the group is still alive.
    fn group_alive(&self) -> bool {
        // SAFETY: kill with signal 0 only checks that the group exists and may be signalled.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), 0) == 0 }
    }

    fn signal_group(&self, signal: libc::c_int) {
        // SAFETY: signals a process group this peer created; an empty group is ESRCH.
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), signal);
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // TERM lets nginx's master and NSD's parent stop their children and wait for them.
        self.signal_group(libc::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Children the leader did not wait for (or that outlived a killed leader) go too.
        let deadline = Instant::now() + STOP_GRACE;
        while self.group_alive() && Instant::now() < deadline {
            self.signal_group(libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if self.group_alive() && !std::thread::panicking() {
            panic!("peer process group {} still has processes after it was stopped", self.id());
        }
    }
}
