//! Hosts reached through OpenSSH: the user's own `ssh`, with their `~/.ssh/config`, keys, agent
//! and jump hosts (or the config file `bench --ssh-config` names), in batch mode so a missing
//! key is an error and never a prompt. Nothing of ours runs on a host but plain `wirespeed`
//! commands for the run's roles ([`crate::role`]), each tied to its ssh session: when the
//! session ends, so does the role. A host is asked first whether it answers and has
//! `wirespeed` ([`HostState`]), so one that is down or refuses the key fails only its cells.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::error::RunError;
use crate::process::STOP_GRACE;
use crate::role::{RoleEvent, RoleSpec};
use crate::sample::Sample;
use crate::scenario::Host;

/// Options every ssh call takes: no prompts, a bounded connect, a dead peer noticed in
/// seconds.
const OPTIONS: [&str; 8] = [
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
];

/// How long a role's start may take beyond its readiness timeout (the ssh connection).
const START_SLACK: Duration = Duration::from_secs(15);

/// One host reached over ssh.
#[derive(Debug, Clone)]
pub(crate) struct Ssh {
    /// The host's name in the scenario.
    pub(crate) name: String,
    /// What `ssh` is given.
    pub(crate) dest: String,
    /// The `wirespeed` program there.
    pub(crate) program: String,
    config: Option<PathBuf>,
}

/// Whether a host can take its roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostState {
    /// It answers; what its `wirespeed --version` said.
    Up(String),
    /// It cannot be reached, or refuses the login: its cells fail.
    Down(String),
    /// It has no `wirespeed`: its cells are skipped.
    NoProgram(String),
}

/// `word` quoted for the remote shell (ssh joins its arguments into one command line).
pub(crate) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "_./:=,+-@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl Ssh {
    /// The host `h` (its `ssh` destination), with `config` as ssh's `-F` when given.
    pub(crate) fn new(h: &Host, config: Option<&Path>) -> Self {
        Self {
            name: h.name.clone(),
            dest: h.ssh.clone().unwrap_or_else(|| h.name.clone()),
            program: h.wirespeed.clone().unwrap_or_else(|| "wirespeed".into()),
            config: config.map(Path::to_path_buf),
        }
    }

    /// The local `ssh` command that runs `remote` (a command line, each word quoted) there.
    pub(crate) fn command(&self, remote: &[String]) -> Command {
        let mut c = Command::new("ssh");
        if let Some(cfg) = &self.config {
            c.arg("-F").arg(cfg);
        }
        c.args(OPTIONS).arg(&self.dest).arg("--");
        c.arg(remote.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "));
        c
    }

    /// Runs `remote` there with `input` on its standard input; what it printed.
    pub(crate) fn output(
        &self,
        remote: &[String],
        input: Option<&[u8]>,
    ) -> Result<Output, RunError> {
        let mut child = self
            .command(remote)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError::Local(format!("cannot run ssh: {e}")))?;
        let failed = |e: std::io::Error| RunError::Host(format!("{}: {e}", self.name));
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            stdin.write_all(bytes).map_err(failed)?;
        }
        child.wait_with_output().map_err(failed)
    }

    /// Whether it answers and has `wirespeed`.
    pub(crate) fn check(&self) -> HostState {
        let out = match self.output(&[self.program.clone(), "--version".into()], None) {
            Ok(out) => out,
            Err(e) => return HostState::Down(e.to_string()),
        };
        let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_string();
        match out.status.code() {
            Some(0) => HostState::Up(said(&out.stdout)),
            // ssh's own failures: unreachable, refused, a key it will not take.
            Some(255) | None => HostState::Down(format!(
                "host {} ({}): {}",
                self.name,
                self.dest,
                last_line(&said(&out.stderr))
            )),
            _ => HostState::NoProgram(format!(
                "host {}: {} is not installed there ({})",
                self.name,
                self.program,
                last_line(&said(&out.stderr))
            )),
        }
    }

    /// True when `program` is on the host's PATH.
    pub(crate) fn has(&self, program: &str) -> bool {
        let test = format!("command -v {}", quote(program));
        self.output(&["sh".into(), "-c".into(), test], None).is_ok_and(|o| o.status.success())
    }

    /// Writes `content` to `path` there, making its directory.
    pub(crate) fn upload(&self, path: &str, content: &[u8]) -> Result<(), RunError> {
        let script = "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"";
        let remote = ["sh", "-c", script, "upload", path].map(String::from);
        let out = self.output(&remote, Some(content))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(RunError::Host(format!(
                "host {}: writing {path}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// The content of `path` there, if it can be read.
    pub(crate) fn fetch(&self, path: &str) -> Option<Vec<u8>> {
        let out = self.output(&["cat".into(), path.into()], None).ok()?;
        out.status.success().then_some(out.stdout)
    }
}

fn last_line(text: &str) -> &str {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message")
}

/// What a remote role has said so far.
#[derive(Debug, Default)]
struct Heard {
    ready: bool,
    not_ready: Option<String>,
    exited: Option<String>,
    stopped: bool,
    /// The session ended (its output closed).
    ended: bool,
    samples: Vec<Sample>,
}

/// A role running on an ssh host.
#[derive(Debug)]
pub(crate) struct RemoteRole {
    /// Its label: `role@host`.
    pub(crate) role: String,
    ssh: Ssh,
    child: Option<Child>,
    heard: Arc<Mutex<Heard>>,
    reader: Option<JoinHandle<()>>,
    /// Where ssh's own messages go (this machine).
    ssh_log: PathBuf,
    /// The role's log there, and where it is brought back to.
    remote_log: String,
    local_log: PathBuf,
}

impl RemoteRole {
    /// Starts `spec` on `ssh`'s host and waits until it is ready (or is not, or the
    /// connection fails); `local_dir` keeps its logs.
    pub(crate) fn start(
        ssh: &Ssh,
        spec: &RoleSpec,
        ready_timeout: Duration,
        local_dir: &Path,
    ) -> Result<Self, RunError> {
        let label = format!("{}@{}", spec.role, ssh.name);
        let json = serde_json::to_string(spec).map_err(|e| RunError::Local(e.to_string()))?;
        let ssh_log = local_dir.join(format!("{label}.ssh.log"));
        let local = |e: std::io::Error| RunError::Local(format!("{}: {e}", ssh_log.display()));
        let err = std::fs::File::create(&ssh_log).map_err(local)?;
        let mut child = ssh
            .command(&[ssh.program.clone(), "role".into(), "--spec".into(), json])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .map_err(|e| RunError::Local(format!("{label}: cannot run ssh: {e}")))?;
        let heard = Arc::new(Mutex::new(Heard::default()));
        let stdout = child.stdout.take();
        let reader = {
            let heard = Arc::clone(&heard);
            std::thread::spawn(move || {
                if let Some(out) = stdout {
                    for line in BufReader::new(out).lines() {
                        let Ok(line) = line else { break };
                        let Ok(event) = serde_json::from_str::<RoleEvent>(&line) else { continue };
                        let mut h = heard.lock().unwrap_or_else(|e| e.into_inner());
                        match event {
                            RoleEvent::Ready { .. } => h.ready = true,
                            RoleEvent::NotReady { why } => h.not_ready = Some(why),
                            RoleEvent::Sample(s) => h.samples.push(s),
                            RoleEvent::Exited { status, log_tail } => {
                                h.exited =
                                    Some(format!("exited ({status}); its log ends:\n{log_tail}"))
                            }
                            RoleEvent::Stopped => h.stopped = true,
                        }
                    }
                }
                heard.lock().unwrap_or_else(|e| e.into_inner()).ended = true;
            })
        };
        let remote_log = spec.dir.join(format!("{}.log", spec.role)).display().to_string();
        let local_log = local_dir.join(format!("{label}.log"));
        let mut role = Self {
            role: label.clone(),
            ssh: ssh.clone(),
            child: Some(child),
            heard,
            reader: Some(reader),
            ssh_log,
            remote_log,
            local_log,
        };
        let deadline = Instant::now() + ready_timeout + START_SLACK;
        loop {
            {
                let h = role.heard.lock().unwrap_or_else(|e| e.into_inner());
                if h.ready {
                    break;
                }
                if let Some(why) = h.not_ready.clone().or_else(|| h.exited.clone()) {
                    drop(h);
                    role.stop();
                    return Err(RunError::NotStarted(why).of(label));
                }
                if h.ended {
                    drop(h);
                    let why = role.session_error();
                    role.stop();
                    return Err(RunError::Host(why).of(label));
                }
            }
            if Instant::now() > deadline {
                role.stop();
                return Err(RunError::Host("no answer from the host in time".into()).of(label));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(role)
    }

    /// What ssh said when the session ended without the role's word.
    fn session_error(&self) -> String {
        let said = std::fs::read_to_string(&self.ssh_log).unwrap_or_default();
        format!("the ssh session to {} ended: {}", self.ssh.dest, last_line(&said))
    }

    /// How it ended, if it did before it was stopped: the process exited, or the host's
    /// session was lost.
    pub(crate) fn exited(&self) -> Option<String> {
        let h = self.heard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = &h.exited {
            return Some(e.clone());
        }
        (h.ended && !h.stopped).then(|| self.session_error())
    }

    /// Stops it (its standard input closed: the host stops the group), brings its log back;
    /// the samples it sent.
    pub(crate) fn stop(&mut self) -> Vec<Sample> {
        if let Some(mut child) = self.child.take() {
            drop(child.stdin.take());
            let deadline = Instant::now() + STOP_GRACE + Duration::from_secs(5);
            while Instant::now() < deadline {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            if let Some(log) = self.ssh.fetch(&self.remote_log) {
                let _ = std::fs::write(&self.local_log, log);
            }
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let mut samples =
            std::mem::take(&mut self.heard.lock().unwrap_or_else(|e| e.into_inner()).samples);
        // Labelled as this machine labels a placed role's samples.
        for s in &mut samples {
            s.role.clone_from(&self.role);
        }
        samples
    }
}

impl Drop for RemoteRole {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_remote_shell_only_when_they_need_it() {
        assert_eq!(quote("wirespeed"), "wirespeed");
        assert_eq!(quote("10.0.0.1:53"), "10.0.0.1:53");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("{\"role\":1}"), "'{\"role\":1}'");
    }
}
