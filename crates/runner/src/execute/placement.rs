//! Where a run's processes and its load go: this machine, or a host of the study. With
//! `hosts = "netns"` each host is a namespace of the run's lab: a process there is started
//! through `ip netns exec`, its readiness probed from a thread inside the namespace (so
//! `{port.NAME}` probes the host's own loopback), and sampled through `/proc` as any other;
//! a load there is the `wirespeed` command it stands for, run there, its JSON report read
//! back. Fixtures with a host run as `wirespeed server` processes on it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;

use anyhow::{bail, Context, Result};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;
use wirespeed_model::Report;
use wirespeed_netlab::Lab;

use super::fixtures::zone_file;
use crate::process::{self, Started};
use crate::ready::{self, Probe};
use crate::scenario::{Fixture, FixtureKind, Scenario};

/// The hosts of one run.
pub(crate) struct Placement<'a> {
    lab: Option<&'a Lab>,
    /// Every `[[host]]`'s address, as `{host.NAME.addr}` gives it.
    pub(crate) addrs: BTreeMap<String, String>,
}

impl<'a> Placement<'a> {
    /// Hosts of `s` that are all this machine (`hosts = "local"`, or no hosts).
    pub(crate) fn here(s: &Scenario) -> Self {
        let addrs = s.host.iter().map(|h| (h.name.clone(), "127.0.0.1".to_string())).collect();
        Self { lab: None, addrs }
    }

    /// Hosts that are the namespaces of `lab`.
    pub(crate) fn lab(lab: &'a Lab) -> Self {
        let addrs = lab.hosts().iter().map(|h| (h.name.clone(), h.address.to_string())).collect();
        Self { lab: Some(lab), addrs }
    }

    /// True when `host` is not this machine.
    pub(crate) fn elsewhere(&self, host: Option<&str>) -> bool {
        self.lab.is_some() && host.is_some()
    }

    /// The words that run a command on `host`, before the command's own.
    pub(crate) fn prefix(&self, host: Option<&str>) -> Vec<String> {
        match (self.lab, host) {
            (Some(lab), Some(h)) => {
                lab.host(h).map(|h| h.namespace.exec_prefix()).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// Runs `f` on `host`: on a thread inside its namespace, or here.
    pub(crate) fn within<T: Send>(
        &self,
        host: Option<&str>,
        f: impl FnOnce() -> T + Send,
    ) -> Result<T, String> {
        match (self.lab, host) {
            (Some(lab), Some(h)) => {
                let host = lab.host(h).ok_or_else(|| format!("no host {h:?} in the lab"))?;
                host.namespace.within(f).map_err(|e| e.to_string())
            }
            _ => Ok(f()),
        }
    }

    /// Starts `argv` as `role` on `host` in `dir` and waits for `probe`; the label its
    /// samples carry is `role@host` when it is placed.
    pub(crate) fn start(
        &self,
        role: &str,
        host: Option<&str>,
        argv: &[String],
        env: &BTreeMap<String, String>,
        dir: &Path,
        probe: Option<(Probe, std::time::Duration)>,
    ) -> Result<Started, String> {
        let mut words = self.prefix(host);
        words.extend_from_slice(argv);
        let mut proc = process::spawn(role, &words, env, dir).map_err(|e| e.to_string())?;
        if self.elsewhere(host) {
            proc.role = format!("{role}@{}", host.unwrap_or_default());
        }
        if let Some((probe, timeout)) = probe {
            let waited = tokio::task::block_in_place(|| {
                self.within(host, || ready::wait(&mut proc, &probe, timeout))
            })?;
            waited.map_err(|e| e.to_string())?;
        }
        Ok(proc)
    }

    /// Starts the fixtures of `s` that are placed on a host, each a `wirespeed server`
    /// (`program`) process there; their processes and addresses.
    pub(crate) fn start_fixtures(
        &self,
        s: &Scenario,
        program: Option<&Path>,
        out: &Path,
        dir: &Path,
    ) -> Result<(Vec<Started>, BTreeMap<String, SocketAddr>), String> {
        let mut started = Vec::new();
        let mut addrs = BTreeMap::new();
        for f in s.fixture.iter().filter(|f| self.elsewhere(f.host.as_deref())) {
            let program = program
                .ok_or_else(|| format!("fixture {:?}: no wirespeed program to run", f.name))?;
            let (argv, port) = fixture_command(f, program, out)?;
            let host = f.host.as_deref();
            let ip = self.addrs.get(host.unwrap_or_default()).cloned().unwrap_or_default();
            let addr: SocketAddr =
                format!("{ip}:{port}").parse().map_err(|e| format!("fixture {:?}: {e}", f.name))?;
            let local = SocketAddr::from(([127, 0, 0, 1], port));
            let probe = Some((Probe::Tcp(vec![local]), ready::DEFAULT_TIMEOUT));
            let role = format!("fixture-{}", f.name);
            started.push(self.start(&role, host, &argv, &BTreeMap::new(), dir, probe)?);
            addrs.insert(f.name.clone(), addr);
        }
        Ok((started, addrs))
    }
}

/// The `wirespeed server` command line of a placed fixture, and the port its service takes.
fn fixture_command(f: &Fixture, program: &Path, out: &Path) -> Result<(Vec<String>, u16), String> {
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
            port
        }
        FixtureKind::Dns => {
            let port = free()?;
            let zone = zone_file(f, out).map_err(|e| format!("fixture {:?}: {e:#}", f.name))?;
            argv.extend(["--dns".into(), port.to_string(), "--zone".into()]);
            argv.push(zone.display().to_string());
            port
        }
    };
    Ok((argv, port))
}

/// Runs the test `words` stand for (`wirespeed KIND …`) as `program` on a host (`prefix`),
/// its JSON report read from its standard output. Cancelling sends it SIGINT: the test ends
/// early and still reports what it measured.
pub(crate) async fn run_there(
    prefix: &[String],
    program: &Path,
    words: &[String],
    cancel: CancellationToken,
) -> Result<Report> {
    let mut argv: Vec<String> = prefix.to_vec();
    argv.push(program.display().to_string());
    argv.extend(words.iter().skip(1).cloned());
    argv.extend(["--format".into(), "json".into()]);
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("running {}", argv[0]))?;
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
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
    let interrupt = async {
        cancel.cancelled().await;
        if let Some(pid) = pid {
            // SAFETY: kill(2) touches no memory; the child is ours and not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
        }
        std::future::pending::<()>().await
    };
    let (out, err) = tokio::select! {
        read = read => read?,
        () = interrupt => unreachable!(),
    };
    let status = child.wait().await?;
    if out.is_empty() || !status.success() && serde_json::from_slice::<Report>(&out).is_err() {
        let said = String::from_utf8_lossy(&err);
        bail!("the load on its host exited ({status}): {}", said.trim());
    }
    serde_json::from_slice(&out).context("the load's JSON report")
}
