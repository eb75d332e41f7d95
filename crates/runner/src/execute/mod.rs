//! Running a scenario's cells: the fixtures start in-process on loopback, then each run, in the
//! plan's order, starts its system's processes (`system.rs`: ports allocated, config files
//! written, each probed until ready), samples them while its workload runs in-process, and
//! stops them as process groups whatever happened (after `run.warmup` of the same load, thrown
//! away, and followed by `run.cooldown`). A system whose programs are missing is skipped; one
//! that never gets ready, or exits while loaded, fails its run and the others go on. Each
//! run's report, samples and logs are kept in its own directory; with `resume`, a run whose
//! report is already there is not run again.
//!
//! What a workload is (a wirespeed command line run in-process) is the caller's, through
//! [`Workloads`], so all of this runs in tests without spawning the binary.

pub mod ansible;
mod error;
mod fixtures;
pub mod k8s;
mod placement;
mod plan;
mod ssh;
mod system;

pub use error::RunError;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::units::parse_duration;
use wirespeed_model::Report;
use wirespeed_netlab::Lab;

use self::fixtures::Fixtures;
use self::placement::{Placement, RoleProcess};
use self::plan::{CellPlan, Layout};
use self::ssh::{HostState, Ssh};
use self::system::Bindings;
use crate::cpus::CpuSet;
use crate::matrix::{Plan, Run};
use crate::sample::{Sample, Sampler, Wanted};
use crate::scenario::{ClientChoice, Fixture, HostsMode, Scenario};
use crate::Loaded;

/// How a workload cell becomes a test and runs.
pub trait Workloads {
    /// The words of the command line for a test of `kind` aimed at `entry` with `options`,
    /// made by the system's `client` when it names another tool's.
    fn command_line(
        &self,
        client: Option<&ClientChoice>,
        kind: &str,
        entry: &str,
        options: &BTreeMap<String, toml::Value>,
    ) -> Result<Vec<String>>;

    /// Runs the test `words` describe (from [`Self::command_line`]) until it ends or
    /// `cancel` fires; its report.
    fn run(
        &self,
        words: &[String],
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Report>>;

    /// The `wirespeed` program hosts run for a load or a fixture placed on them; none when
    /// only in-process runs are possible.
    fn program(&self) -> Option<PathBuf> {
        None
    }
}

/// How one run ended.
#[derive(Debug)]
pub enum Outcome {
    /// It ran; its report, its samples, and how many tries failed before it ran (each also
    /// a note in the report, so a retried figure is never taken for a first-time one).
    Done(Box<Report>, Vec<Sample>, u32),
    /// A program it needs is not installed.
    Skipped(String),
    /// Its system did not start, crashed, or its workload failed.
    Failed(RunError),
    /// It finished in an earlier invocation (`resume`); its report and samples (when kept).
    Kept(Box<Report>, Vec<Sample>),
    /// Ctrl-C (or SIGTERM) cut it short: its report says so, and it is no run of the study's
    /// (a cut run was summarised as done and counted in the median).
    Interrupted(Box<Report>),
}

/// Where a run's files go and what it may use: the scenario's directory for
/// `{scenario.dir}`, the results directory, and whether earlier results are kept.
pub struct Places<'a> {
    /// The directory of the scenario file.
    pub scenario_dir: &'a Path,
    /// The results directory (absolute: processes run in their run's directory).
    pub out: &'a Path,
    /// Keep runs whose report is already there.
    pub resume: bool,
    /// The config file ssh is given for `hosts = "ssh"` (`-F`); none: the user's own.
    pub ssh_config: Option<&'a Path>,
}

/// A run id as a directory name.
pub(crate) fn dir_name(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.=,".contains(c) { c } else { '_' })
        .collect()
}

/// Runs every run of `loaded` in order, keeping each one's files under `places.out`; stops
/// early when `cancel` fires. Calls `done` after each run.
pub async fn run_all(
    loaded: &Loaded,
    places: &Places<'_>,
    workloads: &impl Workloads,
    cancel: CancellationToken,
    mut done: impl FnMut(&Plan, &Run, &Outcome),
) -> Result<Vec<(Run, Outcome)>> {
    if loaded.scenario.hosts_mode() == HostsMode::Netns {
        // Every lab the runs will build, refused now rather than run by run.
        for cell in &loaded.plan.workloads {
            let spec = crate::paths::lab_spec(&loaded.scenario, &cell.path)?;
            tokio::task::block_in_place(|| Lab::check_buildable(&spec))?;
        }
    }
    // Ssh hosts, each asked once, in parallel, whether it answers and has wirespeed.
    let ssh: BTreeMap<String, Ssh> = match loaded.scenario.hosts_mode() {
        HostsMode::Ssh => loaded
            .scenario
            .host
            .iter()
            .map(|h| (h.name.clone(), Ssh::new(h, places.ssh_config)))
            .collect(),
        _ => BTreeMap::new(),
    };
    let states: BTreeMap<String, HostState> = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let asked: Vec<_> =
                ssh.iter().map(|(n, h)| (n.clone(), scope.spawn(|| h.check()))).collect();
            asked
                .into_iter()
                .map(|(n, t)| (n, t.join().unwrap_or(HostState::Down("the check panicked".into()))))
                .collect()
        })
    });
    let hosts = SshHosts { ssh: &ssh, states: &states };
    let fixtures = Fixtures::start(&loaded.scenario, places.out).await?;
    let mut results = Vec::new();
    for run in &loaded.plan.runs {
        if cancel.is_cancelled() {
            break;
        }
        let dir = places.out.join("runs").join(dir_name(&loaded.plan.run_id(run)));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let outcome = match places.resume.then(|| kept(&dir)).flatten() {
            Some(kept) => kept,
            None => {
                let one = One {
                    loaded,
                    run,
                    fixtures: &fixtures,
                    places,
                    dir: &dir,
                    workloads,
                    hosts: &hosts,
                };
                attempts(loaded.scenario.run.retries, &cancel, || one.run(cancel.clone())).await
            }
        };
        done(&loaded.plan, run, &outcome);
        results.push((run.clone(), outcome));
    }
    fixtures.stop().await;
    Ok(results)
}

/// A run finished by an earlier invocation: its report and samples, if its report is there.
/// (A run an Ansible playbook made has its hosts' event files instead of `samples.json`: their
/// samples are read from those.)
fn kept(dir: &Path) -> Option<Outcome> {
    let text = std::fs::read_to_string(dir.join("report.json")).ok()?;
    let report = serde_json::from_str::<Report>(&text).ok()?;
    let samples = std::fs::read_to_string(dir.join("samples.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| event_samples(dir));
    Some(Outcome::Kept(Box::new(report), samples))
}

/// The samples in a run directory's `ROLE@HOST.events` files, labelled `ROLE@HOST`.
fn event_samples(dir: &Path) -> Vec<Sample> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut samples = Vec::new();
    for path in entries.filter_map(|e| Some(e.ok()?.path())) {
        let Some(label) = path.file_name().and_then(|n| n.to_str()?.strip_suffix(".events")) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines() {
            if let Ok(crate::role::RoleEvent::Sample(mut s)) = serde_json::from_str(line) {
                s.role = label.to_string();
                samples.push(s);
            }
        }
    }
    samples.sort_by_key(|s| s.at_ms);
    samples
}

/// Runs `attempt` until it does not fail, at most `1 + retries` times. A run that succeeded
/// after failing carries each earlier failure in its report's notes, so a retried figure is
/// never mistaken for a first-time one; one that failed every time says how often it tried.
async fn attempts<F: Future<Output = Outcome>>(
    retries: u32,
    cancel: &CancellationToken,
    mut attempt: impl FnMut() -> F,
) -> Outcome {
    let mut failures = Vec::new();
    loop {
        match attempt().await {
            Outcome::Failed(why)
                if failures.len() < retries as usize
                    && !cancel.is_cancelled()
                    && why.worth_retrying() =>
            {
                failures.push(why)
            }
            Outcome::Failed(why) if !failures.is_empty() => {
                let tries = failures.len() as u32 + 1;
                return Outcome::Failed(RunError::EveryTry { last: Box::new(why), tries });
            }
            Outcome::Done(mut report, samples, _) => {
                let tries = failures.len() + 1;
                for (k, why) in failures.iter().enumerate() {
                    report.meta.notes.push(format!(
                        "bench: try {} of {tries} failed and the system was started again: {why}",
                        k + 1
                    ));
                }
                return Outcome::Done(report, samples, failures.len() as u32);
            }
            other => return other,
        }
    }
}

/// The ssh hosts of a scenario and what each said when asked.
struct SshHosts<'a> {
    ssh: &'a BTreeMap<String, Ssh>,
    states: &'a BTreeMap<String, HostState>,
}

/// One run of one cell.
struct One<'a, W> {
    loaded: &'a Loaded,
    run: &'a Run,
    fixtures: &'a Fixtures,
    places: &'a Places<'a>,
    dir: &'a Path,
    workloads: &'a W,
    hosts: &'a SshHosts<'a>,
}

impl<W: Workloads> One<'_, W> {
    /// Start to finish; never leaves a process (or, on netns hosts, a namespace) behind.
    async fn run(&self, cancel: CancellationToken) -> Outcome {
        let s = &self.loaded.scenario;
        let wcell = &self.loaded.plan.workloads[self.run.workload];
        match s.hosts_mode() {
            HostsMode::Local => return self.run_placed(&Placement::here(s), cancel).await,
            HostsMode::Ssh => return self.run_ssh(cancel).await,
            HostsMode::Netns => {}
        }
        // A lab of this run's own, with the path conditions its cell chose.
        let built =
            crate::paths::lab_spec(s, &wcell.path).map_err(|e| e.to_string()).and_then(|spec| {
                tokio::task::block_in_place(|| Lab::build(&spec)).map_err(|e| e.to_string())
            });
        let lab = match built {
            Ok(lab) => lab,
            Err(e) => return Outcome::Failed(RunError::Host(format!("building the hosts: {e}"))),
        };
        let outcome = self.run_placed(&Placement::lab(&lab), cancel).await;
        let links = lab.record();
        tokio::task::block_in_place(|| drop(lab));
        match outcome {
            Outcome::Done(mut report, samples, failed_tries) => {
                report.meta.links = links;
                let _ = std::fs::write(
                    self.dir.join("report.json"),
                    serde_json::to_string_pretty(&report).unwrap_or_default(),
                );
                Outcome::Done(report, samples, failed_tries)
            }
            other => other,
        }
    }

    /// The hosts this run needs: its system's processes', the placed fixtures', the load's.
    fn hosts_needed(&self) -> Vec<&str> {
        let s = &self.loaded.scenario;
        let system = &s.system[self.loaded.plan.systems[self.run.system].system];
        let w = &s.workload[self.loaded.plan.workloads[self.run.workload].workload];
        let mut hosts: Vec<&str> = system
            .process
            .iter()
            .filter_map(|p| p.host.as_deref())
            .chain(s.fixture.iter().filter_map(|f| f.host.as_deref()))
            .chain(w.host.as_deref())
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
    }

    /// A run on ssh hosts: failed when one it needs is down, skipped when one lacks
    /// wirespeed; its files in a directory of its own on each host.
    async fn run_ssh(&self, cancel: CancellationToken) -> Outcome {
        for host in self.hosts_needed() {
            match self.hosts.states.get(host) {
                Some(HostState::Down(why)) => return Outcome::Failed(RunError::Host(why.clone())),
                Some(HostState::NoProgram(why)) => return Outcome::Skipped(why.clone()),
                _ => {}
            }
        }
        let s = &self.loaded.scenario;
        let remote_dir = PathBuf::from("/tmp/wirespeed-bench")
            .join(dir_name(&s.scenario.name))
            .join(std::process::id().to_string())
            .join(self.dir.file_name().unwrap_or_default());
        let interval = parse_duration(&s.sample.interval).unwrap_or(Duration::from_secs(1));
        let sample =
            (!s.sample.metrics.is_empty()).then(|| (interval, Wanted::of(&s.sample.metrics)));
        let placement = Placement::ssh(s, self.hosts.ssh, remote_dir, sample);
        self.run_placed(&placement, cancel).await
    }

    /// The first of `programs` that a host of the run lacks (ssh hosts are asked; this
    /// machine's PATH is looked at otherwise), said as a skip's reason.
    fn missing_on_hosts(
        &self,
        placement: &Placement<'_>,
        programs: &[String],
        hosts: &[Option<&str>],
    ) -> Option<String> {
        let remote: Vec<&Ssh> = hosts.iter().filter_map(|h| placement.ssh_host(*h)).collect();
        programs.iter().find_map(|program| {
            if remote.is_empty() {
                return crate::process::which(program)
                    .is_none()
                    .then(|| format!("{program} is not installed"));
            }
            remote
                .iter()
                .find(|h| !h.has(program))
                .map(|h| format!("{program} is not installed on host {}", h.name))
        })
    }

    /// The run planned for the hosts as `placement` has them.
    fn plan(&self, placement: &Placement<'_>) -> Result<CellPlan, RunError> {
        let program = self.workloads.program();
        // Fixtures with a host that is not this machine run there, as processes of the run.
        let fixture_host =
            |f: &Fixture| f.host.clone().filter(|h| placement.elsewhere(Some(h.as_str())));
        let program = |host: &str| placement.fixture_program(host, program.as_deref());
        let zone_there = |f: &Fixture, host: &str| placement.zone_there(f, host);
        let layout = Layout {
            addrs: placement.addrs.clone(),
            fixture_host: &fixture_host,
            program: &program,
            zone_there: &zone_there,
            // On ssh hosts, `{run.dir}` and the config files are the run's directory there.
            files_dir: placement.remote_dir.as_deref().unwrap_or(self.dir),
            in_process: self.fixtures,
        };
        plan::plan(self.loaded, self.run, self.places, self.workloads, &layout)
    }

    /// The run on hosts as `placement` has them.
    async fn run_placed(&self, placement: &Placement<'_>, cancel: CancellationToken) -> Outcome {
        let s = &self.loaded.scenario;
        let plan = match self.plan(placement) {
            Ok(plan) => plan,
            Err(e) => return Outcome::Failed(e),
        };
        let missing = tokio::task::block_in_place(|| {
            let load_host = [plan.load_host.as_deref()];
            self.missing_on_hosts(placement, &plan.system_requires, &plan.process_hosts())
                .or_else(|| self.missing_on_hosts(placement, &plan.load_requires, &load_host))
        });
        if let Some(why) = missing {
            return Outcome::Skipped(why);
        }
        let fixtures = tokio::task::block_in_place(|| placement.start_fixtures(&plan, self.dir));
        let mut fixture_processes = match fixtures {
            Ok(f) => f,
            Err(e) => return Outcome::Failed(e),
        };
        let started = tokio::task::block_in_place(|| {
            placement
                .put_files(&plan.files, &plan.process_hosts())
                .and_then(|()| placement.start_roles(&plan.processes, self.dir))
        });
        let mut started = match started {
            Ok(started) => started,
            Err(e) => return Outcome::Failed(e),
        };
        let roles = started
            .iter()
            .chain(&fixture_processes)
            .filter_map(|p| Some((p.role().to_string(), p.local_pid()?)))
            .collect();
        let interval = parse_duration(&s.sample.interval).unwrap_or(Duration::from_secs(1));
        // `metrics = []` turns sampling off.
        let sampler = (!s.sample.metrics.is_empty())
            .then(|| Sampler::start(roles, interval, Wanted::of(&s.sample.metrics)));
        let report = self.load(&plan.load, placement, sampler.as_ref(), &cancel).await;
        let mut samples = sampler.map(Sampler::finish).unwrap_or_default();
        let (mut crashed, remote) = stop(&mut started);
        let (fixtures_crashed, remote_fixtures) = stop(&mut fixture_processes);
        crashed.extend(fixtures_crashed);
        samples.extend(remote.into_iter().chain(remote_fixtures));
        let report = report.map(|mut r| {
            r.meta.notes.extend(placement_notes(s, placement));
            r
        });
        let _ = std::fs::write(
            self.dir.join("samples.json"),
            serde_json::to_string_pretty(&samples).unwrap_or_default(),
        );
        // Cool-down before the next run (Ctrl-C cuts it short).
        if let Some(pause) = s.run.cooldown.as_deref().and_then(|t| parse_duration(t).ok()) {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = cancel.cancelled() => {}
            }
        }
        match report {
            _ if !crashed.is_empty() => Outcome::Failed(RunError::Crashed(crashed)),
            // Not kept as the run's report.json: `--resume` would take it for a finished run.
            Ok(r) if cancel.is_cancelled() => Outcome::Interrupted(Box::new(r)),
            Ok(r) => {
                let _ = std::fs::write(
                    self.dir.join("report.json"),
                    serde_json::to_string_pretty(&r).unwrap_or_default(),
                );
                Outcome::Done(Box::new(r), samples, 0)
            }
            Err(e) => Outcome::Failed(e),
        }
    }

    /// The warm-up (the same load, cut off after `run.warmup`, its result thrown away), then
    /// the measured load, sampled as a role of its own where it is a process here.
    async fn load(
        &self,
        line: &[String],
        placement: &Placement<'_>,
        sampler: Option<&Sampler>,
        cancel: &CancellationToken,
    ) -> Result<Report, RunError> {
        let warmup =
            self.loaded.scenario.run.warmup.as_deref().and_then(|t| parse_duration(t).ok());
        if let Some(warmup) = warmup {
            let stop = cancel.child_token();
            let timer = {
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(warmup).await;
                    stop.cancel();
                })
            };
            let _ = self.load_once(line, placement, None, stop).await;
            timer.abort();
        }
        let measured = self.load_once(line, placement, sampler, cancel.clone()).await;
        measured.map_err(|e| RunError::Load(format!("{e:#}")))
    }

    /// One run of the load: in-process, or as a command on the workload's host.
    async fn load_once(
        &self,
        line: &[String],
        placement: &Placement<'_>,
        sampler: Option<&Sampler>,
        cancel: CancellationToken,
    ) -> Result<Report> {
        let s = &self.loaded.scenario;
        let w = &s.workload[self.loaded.plan.workloads[self.run.workload].workload];
        let host = w.host.as_deref();
        let cpus = w.cpus.as_deref().map(CpuSet::parse).transpose().map_err(anyhow::Error::msg)?;
        if !placement.elsewhere(host) && cpus.is_none() && !s.run.load_process {
            return self.workloads.run(line, cancel).await;
        }
        // Placed elsewhere, pinned (so that only the load is pinned), or asked to: a process
        // of its own.
        let program = self.workloads.program();
        let program = program.as_deref();
        placement::run_there(placement, host, program, line, cpus.as_ref(), sampler, cancel).await
    }
}

/// The command line of `run`'s workload, its entry and option values rendered.
pub(crate) fn workload_line(
    loaded: &Loaded,
    run: &Run,
    b: &Bindings<'_>,
    workloads: &impl Workloads,
) -> Result<Vec<String>, RunError> {
    let s = &loaded.scenario;
    let cell = &loaded.plan.systems[run.system];
    let wcell = &loaded.plan.workloads[run.workload];
    let w = &s.workload[wcell.workload];
    let entry = s.system[cell.system]
        .entry
        .for_target(w.target.as_deref())
        .ok_or_else(|| RunError::Scenario(format!("no entry for target {:?}", w.target)))
        .and_then(|e| b.render(e))?;
    // Option values are templates too (`datafile = "{scenario.dir}/queries.txt"`).
    let options = wcell
        .options
        .iter()
        .map(|(k, v)| match v {
            toml::Value::String(t) => Ok((k.clone(), toml::Value::String(b.render(t)?))),
            v => Ok((k.clone(), v.clone())),
        })
        .collect::<Result<BTreeMap<_, _>, RunError>>()?;
    let client = cell.client.as_ref();
    let line = workloads.command_line(client, &w.kind, &entry, &options);
    line.map_err(|e| RunError::Scenario(format!("{e:#}")))
}

/// What a reader of a run's report should know of where it ran: each placed role's host and
/// the load's, and links that were written but not emulated.
fn placement_notes(s: &Scenario, placement: &Placement<'_>) -> Vec<String> {
    if s.host.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let mode = s.hosts_mode();
    let at = |h: &str| placement.addrs.get(h).cloned().unwrap_or_default();
    if mode == HostsMode::Local {
        if !s.link.is_empty() || s.network.is_some() {
            notes.push("bench: hosts = \"local\": every role ran on this machine and the links were not emulated".into());
        }
        return notes;
    }
    let mut roles: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for sys in &s.system {
        for p in &sys.process {
            if let Some(h) = &p.host {
                roles.entry(h).or_default().push(p.role.clone());
            }
        }
    }
    for f in &s.fixture {
        if let Some(h) = &f.host {
            roles.entry(h).or_default().push(format!("fixture {}", f.name));
        }
    }
    for (host, what) in roles {
        notes.push(format!("bench: on host {host} ({}): {}", at(host), what.join(", ")));
    }
    for w in &s.workload {
        if let Some(h) = &w.host {
            notes.push(format!("bench: load {} from host {h} ({})", w.name, at(h)));
        }
    }
    notes.dedup();
    notes
}

/// Stops the processes, last started first; what each that had died under load said (a
/// process that died fails the run, whatever the workload saw), and the samples the ssh hosts
/// took of theirs.
fn stop(started: &mut [RoleProcess]) -> (Vec<String>, Vec<Sample>) {
    let crashed = started
        .iter_mut()
        .filter_map(|p| {
            let role = p.role().to_string();
            p.exited().map(|why| format!("{role} {why}"))
        })
        .collect();
    let samples =
        tokio::task::block_in_place(|| started.iter_mut().rev().flat_map(|p| p.stop()).collect());
    (crashed, samples)
}
