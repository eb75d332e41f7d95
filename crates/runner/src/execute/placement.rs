//! Where a run's processes and its load go: this machine, or a host of the study. With
//! `hosts = "netns"` each host is a namespace of the run's lab: a process there is started
//! through `ip netns exec`, its readiness probed from a thread inside the namespace (so
//! `{port.NAME}` probes the host's own loopback), and sampled through `/proc` as any other;
//! a load there is the `wirespeed` command it stands for, run there, its JSON report read
//! back. Fixtures with a host run as `wirespeed server` processes on it.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;
use wirespeed_model::Report;
use wirespeed_netlab::Lab;

use super::error::RunError;
use super::fixtures::zone_file;
use super::plan::{CellPlan, PlannedRole};
use super::ssh::{RemoteRole, Ssh};
use crate::cpus::CpuSet;
use crate::process::{self, Started, STOP_GRACE};
use crate::ready::{self, Probe};
use crate::role::RoleSpec;
use crate::sample::{Sample, Sampler, Wanted};
use crate::scenario::{Fixture, FixtureKind, Scenario};

/// What the hosts of a run are.
enum Hosts<'a> {
    /// All this machine.
    Here,
    /// The namespaces of a lab on this machine.
    Lab(&'a Lab),
    /// Machines reached over ssh, by name.
    Ssh(&'a BTreeMap<String, Ssh>),
}

/// The hosts of one run.
pub(crate) struct Placement<'a> {
    hosts: Hosts<'a>,
    /// Every `[[host]]`'s address, as `{host.NAME.addr}` gives it.
    pub(crate) addrs: BTreeMap<String, String>,
    /// The run's directory on ssh hosts (the same path on each).
    pub(crate) remote_dir: Option<PathBuf>,
    /// How often roles on ssh hosts sample themselves, and what.
    sample: Option<(Duration, Wanted)>,
}

/// A process of a run: on this machine (a namespace of it included), or on an ssh host.
#[derive(Debug)]
pub(crate) enum RoleProcess {
    /// Started here.
    Local(Started),
    /// Started on an ssh host.
    Remote(RemoteRole),
}

impl RoleProcess {
    /// Its label (`role`, or `role@host` when placed).
    pub(crate) fn role(&self) -> &str {
        match self {
            RoleProcess::Local(p) => &p.role,
            RoleProcess::Remote(r) => &r.role,
        }
    }

    /// Its pid, when this machine's `/proc` samples it.
    pub(crate) fn local_pid(&self) -> Option<u32> {
        match self {
            RoleProcess::Local(p) => Some(p.pid),
            RoleProcess::Remote(_) => None,
        }
    }

    /// How it ended, if it did by itself.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self {
            RoleProcess::Local(p) => p.exited().map(|st| {
                format!("exited ({st}) during the run; its log ends:\n{}", p.log_tail(10))
            }),
            RoleProcess::Remote(r) => r.exited().map(|why| format!("{why} (during the run)")),
        }
    }

    /// Stops it; the samples its host took (none for a local one: this machine samples those).
    pub(crate) fn stop(&mut self) -> Vec<Sample> {
        match self {
            RoleProcess::Local(p) => {
                p.stop(STOP_GRACE);
                Vec::new()
            }
            RoleProcess::Remote(r) => r.stop(),
        }
    }
}

impl<'a> Placement<'a> {
    /// Hosts of `s` that are all this machine (`hosts = "local"`, or no hosts).
    pub(crate) fn here(s: &Scenario) -> Self {
        let addrs = s.host.iter().map(|h| (h.name.clone(), "127.0.0.1".to_string())).collect();
        Self { hosts: Hosts::Here, addrs, remote_dir: None, sample: None }
    }

    /// Hosts that are the namespaces of `lab`.
    pub(crate) fn lab(lab: &'a Lab) -> Self {
        let addrs = lab.hosts().iter().map(|h| (h.name.clone(), h.address.to_string())).collect();
        Self { hosts: Hosts::Lab(lab), addrs, remote_dir: None, sample: None }
    }

    /// Hosts reached over ssh; the run's files go to `remote_dir` on each.
    pub(crate) fn ssh(
        s: &Scenario,
        hosts: &'a BTreeMap<String, Ssh>,
        remote_dir: PathBuf,
        sample: Option<(Duration, Wanted)>,
    ) -> Self {
        let addrs = s
            .host
            .iter()
            .map(|h| {
                let dest = h.ssh.as_deref().unwrap_or(&h.name);
                let host = dest.rsplit('@').next().unwrap_or(dest);
                (h.name.clone(), h.address.clone().unwrap_or_else(|| host.to_string()))
            })
            .collect();
        Self { hosts: Hosts::Ssh(hosts), addrs, remote_dir: Some(remote_dir), sample }
    }

    /// True when `host` is not this machine.
    pub(crate) fn elsewhere(&self, host: Option<&str>) -> bool {
        !matches!(self.hosts, Hosts::Here) && host.is_some()
    }

    /// The ssh host `host`, when it is one.
    pub(crate) fn ssh_host(&self, host: Option<&str>) -> Option<&Ssh> {
        match (&self.hosts, host) {
            (Hosts::Ssh(all), Some(h)) => all.get(h),
            _ => None,
        }
    }

    /// The words that run a command on `host` of a lab, before the command's own.
    pub(crate) fn prefix(&self, host: Option<&str>) -> Vec<String> {
        match (&self.hosts, host) {
            (Hosts::Lab(lab), Some(h)) => {
                lab.host(h).map(|h| h.namespace.exec_prefix()).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// Runs `f` on `host` of a lab: on a thread inside its namespace; elsewhere, here.
    pub(crate) fn within<T: Send>(
        &self,
        host: Option<&str>,
        f: impl FnOnce() -> T + Send,
    ) -> Result<T, RunError> {
        match (&self.hosts, host) {
            (Hosts::Lab(lab), Some(h)) => {
                let no_host = || RunError::Host(format!("no host {h:?} in the lab"));
                let host = lab.host(h).ok_or_else(no_host)?;
                host.namespace.within(f).map_err(|e| RunError::Local(e.to_string()))
            }
            _ => Ok(f()),
        }
    }

    /// Writes a run's config files where its processes are: here, or on each of `hosts`.
    pub(crate) fn put_files(
        &self,
        files: &[(PathBuf, String)],
        hosts: &[Option<&str>],
    ) -> Result<(), RunError> {
        let remote: Vec<&Ssh> = hosts.iter().filter_map(|h| self.ssh_host(*h)).collect();
        if matches!(self.hosts, Hosts::Ssh(_)) {
            let mut done = Vec::new();
            for ssh in remote {
                if done.contains(&&ssh.name) {
                    continue;
                }
                for (path, content) in files {
                    ssh.upload(&path.display().to_string(), content.as_bytes())?;
                }
                done.push(&ssh.name);
            }
            return Ok(());
        }
        for (path, content) in files {
            let failed = |e| RunError::Local(format!("{}: {e}", path.display()));
            std::fs::write(path, content).map_err(failed)?;
        }
        Ok(())
    }

    /// Starts `planned`'s command line as its role on its host (on its CPUs, where it names
    /// some), with its logs in `dir` (this machine's run directory), and waits until it is
    /// ready; the label its samples carry is `role@host` when it is placed.
    pub(crate) fn start(&self, planned: &PlannedRole, dir: &Path) -> Result<RoleProcess, RunError> {
        let PlannedRole { role, argv, env, .. } = planned;
        let (role, host, ready) = (role.as_str(), planned.host.as_deref(), planned.ready.clone());
        let cpus = planned.cpus.as_deref().map(CpuSet::parse).transpose();
        let cpus = cpus.map_err(RunError::Scenario)?;
        let probe = match &ready {
            Some(r) => Some(Probe::from_ready(r)?),
            None => None,
        };
        if let Some(ssh) = self.ssh_host(host) {
            let (sample_ms, wanted) = match self.sample {
                Some((every, wanted)) => (Some(every.as_millis() as u64), wanted),
                None => (None, Wanted { memory: false, cpu: false }),
            };
            let spec = RoleSpec {
                role: role.to_string(),
                dir: self.remote_dir.clone().unwrap_or_else(|| dir.to_path_buf()),
                argv: argv.to_vec(),
                env: env.clone(),
                ready,
                sample_ms,
                memory: wanted.memory,
                cpu: wanted.cpu,
                cpus: planned.cpus.clone(),
                detached: false,
            };
            let timeout = probe.map_or(ready::DEFAULT_TIMEOUT, |(_, t)| t);
            let remote =
                tokio::task::block_in_place(|| RemoteRole::start(ssh, &spec, timeout, dir))?;
            return Ok(RoleProcess::Remote(remote));
        }
        let mut words = self.prefix(host);
        words.extend_from_slice(argv);
        let spawned = process::spawn(role, &words, env, dir, cpus.as_ref());
        let mut proc = spawned.map_err(|e| RunError::NotStarted(e.to_string()))?;
        if self.elsewhere(host) {
            proc.role = format!("{role}@{}", host.unwrap_or_default());
        }
        if let Some((probe, timeout)) = probe {
            let waited = tokio::task::block_in_place(|| {
                self.within(host, || ready::wait(&mut proc, &probe, timeout))
            })?;
            waited.map_err(|e| RunError::NotStarted(e.to_string()))?;
        }
        Ok(RoleProcess::Local(proc))
    }

    /// The `wirespeed` a fixture on `host` runs: an ssh host's own, else `program` (this
    /// machine's, in a lab's namespace).
    pub(crate) fn fixture_program(
        &self,
        host: &str,
        program: Option<&Path>,
    ) -> Result<PathBuf, RunError> {
        match (self.ssh_host(Some(host)), program) {
            (Some(ssh), _) => Ok(PathBuf::from(&ssh.program)),
            (None, Some(p)) => Ok(p.to_path_buf()),
            (None, None) => Err(RunError::Local("no wirespeed program to run".into())),
        }
    }

    /// Where a DNS fixture's zone goes on `host`: the run's directory there on an ssh host;
    /// `None` where the host shares this machine's files (a lab's namespace).
    pub(crate) fn zone_there(&self, f: &Fixture, host: &str) -> Option<String> {
        self.ssh_host(Some(host))?;
        let dir = self.remote_dir.clone().unwrap_or_default();
        Some(dir.join(format!("fixture-{}.zone", f.name)).display().to_string())
    }

    /// Starts the plan's fixtures on their hosts, each zone copied there first.
    pub(crate) fn start_fixtures(
        &self,
        plan: &CellPlan,
        dir: &Path,
    ) -> Result<Vec<RoleProcess>, RunError> {
        for z in &plan.zones {
            if let Some(ssh) = self.ssh_host(Some(&z.host)) {
                let unread = |e| RunError::Local(format!("{}: {e}", z.local.display()));
                let content = std::fs::read(&z.local).map_err(unread)?;
                ssh.upload(&z.there, &content)?;
            }
        }
        self.start_roles(&plan.fixtures, dir)
    }

    /// Starts `roles` in order, each on its host and ready before the next, their logs in
    /// `dir`; on a failure the ones already started are stopped as they are dropped.
    pub(crate) fn start_roles(
        &self,
        roles: &[PlannedRole],
        dir: &Path,
    ) -> Result<Vec<RoleProcess>, RunError> {
        roles.iter().map(|r| self.start(r, dir).map_err(|e| e.of(&r.role))).collect()
    }
}

/// The `wirespeed server` command line of a placed fixture, and the port its service takes.
pub(crate) fn fixture_command(
    f: &Fixture,
    program: &Path,
    out: &Path,
) -> Result<(Vec<String>, u16), RunError> {
    let free = || super::system::free_port();
    let main = free()?;
    let mut argv = vec![program.display().to_string(), "server".into(), "-p".into()];
    argv.push(main.to_string());
    let port = match f.kind {
        FixtureKind::BandwidthSink => main,
        FixtureKind::Http => {
            let port = free()?;
            argv.extend(["--http".into(), port.to_string()]);
            if let Some(size) = &f.body_size {
                argv.extend(["--http-body".into(), size.clone()]);
            }
            if f.h3 {
                argv.push("--h3".into());
            }
            port
        }
        FixtureKind::Dns => {
            let port = free()?;
            let zone = zone_file(f, out).map_err(|e| {
                RunError::Local(format!("{e:#}")).of(format!("fixture {:?}", f.name))
            })?;
            argv.extend(["--dns".into(), port.to_string(), "--zone".into()]);
            argv.push(zone.display().to_string());
            port
        }
    };
    Ok((argv, port))
}

/// The role a load's process is sampled as.
pub(crate) const LOAD_ROLE: &str = "load";

/// Runs the test `words` stand for (`wirespeed KIND …`) on `host` as a `wirespeed` command
/// there (`program` in a lab; the host's own over ssh, inside `wirespeed role --load`), its
/// JSON report read from its standard output. Cancelling interrupts it (SIGINT in a lab; over
/// ssh, its standard input closes and the host interrupts it): the test ends early and still
/// reports what it measured. With a `sampler`, a load on this machine is sampled while it runs,
/// as the role `load`.
pub(crate) async fn run_there(
    placement: &Placement<'_>,
    host: Option<&str>,
    program: Option<&Path>,
    words: &[String],
    cpus: Option<&CpuSet>,
    sampler: Option<&Sampler>,
    cancel: CancellationToken,
) -> Result<Report> {
    // `--format json` right after the subcommand: a peer's words (`peer -- ethr …`) end in
    // the peer's own arguments.
    let test_words = words
        .iter()
        .skip(1)
        .take(1)
        .cloned()
        .chain(["--format".into(), "json".into()])
        .chain(words.iter().skip(2).cloned());
    let ssh = placement.ssh_host(host);
    let command = match ssh {
        Some(_) if cpus.is_some() => {
            bail!("cpus: a load on an ssh host is not pinned yet (pin its processes instead)")
        }
        Some(ssh) => {
            let mut remote = vec![ssh.program.clone(), "role".into(), "--load".into(), "--".into()];
            remote.push(ssh.program.clone());
            remote.extend(test_words);
            ssh.command(&remote)
        }
        None => {
            let program = program.context("no wirespeed program to run the load on its host")?;
            let mut argv = placement.prefix(host);
            argv.push(program.display().to_string());
            argv.extend(test_words);
            let mut c = std::process::Command::new(&argv[0]);
            // A group of its own, the other tool's client with it, so that it is sampled as
            // the load (its memory and CPU over time) and nothing else is.
            c.args(&argv[1..]).process_group(0);
            if let Some(cpus) = cpus {
                cpus.check_available().map_err(anyhow::Error::msg)?;
                cpus.apply(&mut c);
            }
            c
        }
    };
    let mut child = tokio::process::Command::from(command)
        .stdin(if ssh.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("running the load on its host")?;
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let mut stdin = child.stdin.take();
    let read = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        if let Some(s) = stdout.as_mut() {
            s.read_to_end(&mut out).await?;
        }
        if let Some(s) = stderr.as_mut() {
            s.read_to_end(&mut err).await?;
        }
        Ok::<_, std::io::Error>((out, err))
    };
    let pid = child.id();
    // An ssh host's load is sampled there, if at all; here it is only ssh.
    let watched = pid.filter(|_| ssh.is_none()).zip(sampler);
    if let Some((pid, sampler)) = watched {
        sampler.watch(LOAD_ROLE, pid);
    }
    let interrupt = async {
        cancel.cancelled().await;
        if stdin.take().is_none() {
            if let Some(pid) = pid {
                // SAFETY: kill(2) touches no memory; the child is ours and not yet reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
            }
        }
        std::future::pending::<()>().await
    };
    let (out, err) = tokio::select! {
        read = read => read?,
        () = interrupt => unreachable!(),
    };
    let status = child.wait().await;
    if let Some((pid, sampler)) = watched {
        sampler.unwatch(pid);
    }
    let status = status?;
    if out.is_empty() || !status.success() && serde_json::from_slice::<Report>(&out).is_err() {
        let said = String::from_utf8_lossy(&err);
        let said = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        bail!("the load on host {} exited ({status}): {said}", host.unwrap_or("?"));
    }
    serde_json::from_slice(&out).context("the load's JSON report")
}
