//! Running a scenario's cells: the fixtures start in-process on loopback, then each run, in the
//! plan's order, starts its system's processes (ports allocated, config files written, each
//! probed until ready), samples them while its workload runs in-process, and stops them as
//! process groups whatever happened (after `run.warmup` of the same load, thrown away, and
//! followed by `run.cooldown`). A system whose programs are missing is skipped; one that
//! never gets ready, or exits while loaded, fails its run and the others go on. Each run's
//! report, samples and logs are kept in its own directory; with `--resume`, a run whose report
//! is already there is not run again.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::dns::fixture::{self as dns_fixture, read_zone_file, DnsListeners};
use wirespeed_engine::kinds::http::fixture::{self as http_fixture, FixtureConfig};
use wirespeed_engine::server::{self, Listeners, ServerConfig};
use wirespeed_model::units::parse_bytes;
use wirespeed_model::Report;
use wirespeed_proto::dns::zone::Zone;
use wirespeed_runner::matrix::{Plan, Run};
use wirespeed_runner::process::{self, Started, STOP_GRACE};
use wirespeed_runner::ready::{self, Probe};
use wirespeed_runner::sample::{Sample, Sampler, Wanted};
use wirespeed_runner::scenario::{FixtureKind, Scenario};
use wirespeed_runner::template::{FixturePart, Placeholder};
use wirespeed_runner::{template, words, Loaded};

use super::workload;

/// How one run ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// It ran; its report and samples.
    Done(Box<Report>, Vec<Sample>),
    /// A program it needs is not installed.
    Skipped(String),
    /// Its system did not start, crashed, or its workload failed.
    Failed(String),
    /// It finished in an earlier invocation (`--resume`); its report and samples (when kept).
    Kept(Box<Report>, Vec<Sample>),
}

/// The fixtures' addresses by name, the DNS fixtures' zone files, and what stops them.
struct Fixtures {
    addrs: BTreeMap<String, SocketAddr>,
    zones: BTreeMap<String, PathBuf>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Starts the fixtures; a DNS fixture's zone is also written under `out` (or, when it was
/// given as a file, named) for `{fixture.NAME.zone}`.
async fn start_fixtures(s: &Scenario, out: &Path) -> Result<Fixtures> {
    let stop = CancellationToken::new();
    let mut addrs = BTreeMap::new();
    let mut zones = BTreeMap::new();
    let mut tasks = Vec::new();
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    for f in &s.fixture {
        let what = || format!("fixture {:?}", f.name);
        let (addr, task) = match f.kind {
            FixtureKind::BandwidthSink => {
                let l = Listeners::bind(&[any]).with_context(what)?;
                let addr = l.local_addrs()[0];
                let stop = stop.clone();
                (
                    addr,
                    tokio::spawn(async move {
                        let _ = server::run(l, ServerConfig::default(), stop).await;
                    }),
                )
            }
            FixtureKind::Http => {
                let body_bytes = match &f.body_size {
                    Some(b) => {
                        parse_bytes(b).with_context(|| format!("{}: body_size {b:?}", what()))?
                    }
                    None => FixtureConfig::default().body_bytes,
                };
                let l = Listeners::bind_tcp(&[any], 0).with_context(what)?;
                let addr = l[0].local_addr()?;
                let stop = stop.clone();
                (
                    addr,
                    tokio::spawn(async move {
                        let _ = http_fixture::run(
                            l,
                            FixtureConfig { body_bytes, ..Default::default() },
                            stop,
                        )
                        .await;
                    }),
                )
            }
            FixtureKind::Dns => {
                let file = match &f.zone {
                    Some(path) => std::path::absolute(path).with_context(what)?,
                    None => {
                        let text = Zone::generated_text(1000);
                        let file = out.join("fixtures").join(format!("{}.zone", dir_name(&f.name)));
                        std::fs::create_dir_all(out.join("fixtures"))?;
                        std::fs::write(&file, &text).with_context(what)?;
                        std::path::absolute(&file)?
                    }
                };
                let zone =
                    read_zone_file(&file, None).map_err(|e| anyhow::anyhow!("{}: {e}", what()))?;
                zones.insert(f.name.clone(), file);
                let l = DnsListeners::bind(&[any], 1).with_context(what)?;
                let addr = l.local_addrs()[0];
                let stop = stop.clone();
                (
                    addr,
                    tokio::spawn(async move {
                        let _ = dns_fixture::run(l, Arc::new(zone), stop).await;
                    }),
                )
            }
        };
        addrs.insert(f.name.clone(), addr);
        tasks.push(task);
    }
    Ok(Fixtures { addrs, zones, stop, tasks })
}

/// A TCP port free on loopback now, whose UDP port is free too.
fn free_port() -> Result<u16> {
    for _ in 0..100 {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = tcp.local_addr()?.port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    anyhow::bail!("no free port on loopback")
}

/// A run id as a directory name.
fn dir_name(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.=,".contains(c) { c } else { '_' })
        .collect()
}

/// Runs every run of `loaded` in order, keeping each one's files under `out`; stops early when
/// `cancel` fires. Calls `done` after each run.
pub(super) async fn run_all(
    loaded: &Loaded,
    scenario_dir: &Path,
    out: &Path,
    resume: bool,
    cancel: CancellationToken,
    mut done: impl FnMut(&Plan, &Run, &Outcome),
) -> Result<Vec<(Run, Outcome)>> {
    let fixtures = start_fixtures(&loaded.scenario, out).await?;
    let mut results = Vec::new();
    for run in &loaded.plan.runs {
        if cancel.is_cancelled() {
            break;
        }
        let dir = out.join("runs").join(dir_name(&loaded.plan.run_id(run)));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let kept = resume
            .then(|| std::fs::read_to_string(dir.join("report.json")).ok())
            .flatten()
            .and_then(|text| serde_json::from_str::<Report>(&text).ok());
        let outcome = match kept {
            Some(report) => {
                let samples = std::fs::read_to_string(dir.join("samples.json"))
                    .ok()
                    .and_then(|text| serde_json::from_str(&text).ok())
                    .unwrap_or_default();
                Outcome::Kept(Box::new(report), samples)
            }
            None => {
                attempts(loaded.scenario.run.retries, &cancel, || {
                    one(loaded, run, &fixtures, scenario_dir, &dir, cancel.clone())
                })
                .await
            }
        };
        done(&loaded.plan, run, &outcome);
        results.push((run.clone(), outcome));
    }
    fixtures.stop.cancel();
    for t in fixtures.tasks {
        let _ = t.await;
    }
    Ok(results)
}

/// Runs `attempt` until it does not fail, at most `1 + retries` times. A run that succeeded
/// after failing carries each earlier failure in its report's notes, so a retried figure is
/// never mistaken for a first-time one; one that failed every time says how often it tried.
async fn attempts<F: std::future::Future<Output = Outcome>>(
    retries: u32,
    cancel: &CancellationToken,
    mut attempt: impl FnMut() -> F,
) -> Outcome {
    let mut failures = Vec::new();
    loop {
        match attempt().await {
            Outcome::Failed(why) if failures.len() < retries as usize && !cancel.is_cancelled() => {
                failures.push(why)
            }
            Outcome::Failed(why) if !failures.is_empty() => {
                return Outcome::Failed(format!("{why} (on each of {} tries)", failures.len() + 1))
            }
            Outcome::Done(mut report, samples) => {
                let tries = failures.len() + 1;
                for (k, why) in failures.iter().enumerate() {
                    report.meta.notes.push(format!(
                        "bench: try {} of {tries} failed and the system was started again: {why}",
                        k + 1
                    ));
                }
                return Outcome::Done(report, samples);
            }
            other => return other,
        }
    }
}

/// One run, start to finish; never leaves a process behind.
async fn one(
    loaded: &Loaded,
    run: &Run,
    fixtures: &Fixtures,
    scenario_dir: &Path,
    dir: &Path,
    cancel: CancellationToken,
) -> Outcome {
    let s = &loaded.scenario;
    let cell = &loaded.plan.systems[run.system];
    let system = &s.system[cell.system];
    let wcell = &loaded.plan.workloads[run.workload];
    let w = &s.workload[wcell.workload];

    // Everything a template of this system can name.
    let mut ports = BTreeMap::new();
    let texts = system.templates();
    let port_names: BTreeSet<&str> = texts
        .iter()
        .flat_map(|t| template::placeholders(t))
        .filter_map(|n| match Placeholder::of(n) {
            Some(Placeholder::Port(p)) => Some(p),
            _ => None,
        })
        .collect();
    for name in port_names {
        match free_port() {
            Ok(p) => ports.insert(name.to_string(), p),
            Err(e) => return Outcome::Failed(format!("{e:#}")),
        };
    }
    let files: BTreeMap<String, PathBuf> = system
        .file
        .keys()
        .map(|k| (k.clone(), dir.join(format!("{}.conf", dir_name(k)))))
        .collect();
    let lookup = |name: &str| -> Option<String> {
        let fixture = |f: &str| fixtures.addrs.get(f);
        match Placeholder::of(name)? {
            Placeholder::Port(p) => ports.get(p).map(u16::to_string),
            Placeholder::File(f) => files.get(f).map(|p| p.display().to_string()),
            Placeholder::Fixture(f, FixturePart::Addr) => fixture(f).map(SocketAddr::to_string),
            Placeholder::Fixture(f, FixturePart::Port) => fixture(f).map(|a| a.port().to_string()),
            Placeholder::Fixture(f, FixturePart::Host) => fixture(f).map(|a| a.ip().to_string()),
            Placeholder::Fixture(f, FixturePart::Zone) => {
                fixtures.zones.get(f).map(|p| p.display().to_string())
            }
            Placeholder::ScenarioDir => Some(scenario_dir.display().to_string()),
            Placeholder::RunDir => Some(dir.display().to_string()),
            Placeholder::Var(v) => cell.vars.get(v).cloned(),
        }
    };
    let render = |t: &str| template::render(t, lookup).map_err(|n| format!("{{{n}}} has no value"));

    for program in &system.requires {
        let program = render(program).unwrap_or_else(|_| program.clone());
        if process::which(&program).is_none() {
            return Outcome::Skipped(format!("{program} is not installed"));
        }
    }
    for (name, content) in &system.file {
        let written = render(content)
            .and_then(|c| std::fs::write(&files[name], c).map_err(|e| e.to_string()));
        if let Err(e) = written {
            return Outcome::Failed(format!("file.{name}: {e}"));
        }
    }

    // Start the processes in order, each ready before the next.
    let mut started: Vec<Started> = Vec::new();
    for p in &system.process {
        let mut env = system.env.clone();
        env.extend(p.env.clone());
        let env: Result<BTreeMap<String, String>, String> =
            env.into_iter().map(|(k, v)| Ok((k, render(&v)?))).collect();
        let launched = (|| {
            let line = render(&p.cmd)?;
            let argv = words::split(&line)?;
            let mut proc = process::spawn(&p.role, &argv, &env?, dir).map_err(|e| e.to_string())?;
            if let Some(r) = &p.ready {
                let (probe, timeout) = Probe::from_ready(r, |t| render(t))?;
                let waited =
                    tokio::task::block_in_place(|| ready::wait(&mut proc, &probe, timeout));
                if let Err(e) = waited {
                    return Err(e.to_string());
                }
            }
            Ok::<_, String>(proc)
        })();
        match launched {
            Ok(p) => started.push(p),
            Err(e) => return Outcome::Failed(format!("{}: {e}", p.role)),
        }
    }

    let roles: Vec<(String, u32)> = started.iter().map(|p| (p.role.clone(), p.pid)).collect();
    let interval = wirespeed_model::units::parse_duration(&s.sample.interval)
        .unwrap_or(Duration::from_secs(1));
    // `metrics = []` turns sampling off.
    let sampler = (!s.sample.metrics.is_empty())
        .then(|| Sampler::start(roles, interval, Wanted::of(&s.sample.metrics)));
    let entry = system
        .entry
        .for_target(w.target.as_deref())
        .ok_or_else(|| format!("no entry for target {:?}", w.target))
        .and_then(|e| render(e));
    // Option values are templates too (`datafile = "{scenario.dir}/queries.txt"`).
    let options: Result<BTreeMap<String, toml::Value>, String> = wcell
        .options
        .iter()
        .map(|(k, v)| match v {
            toml::Value::String(t) => Ok((k.clone(), toml::Value::String(render(t)?))),
            v => Ok((k.clone(), v.clone())),
        })
        .collect();
    let line = entry
        .and_then(|e| workload::command_line(&w.kind, &e, &options?).map_err(|e| format!("{e:#}")));
    let report = match line {
        Ok(line) => {
            // Warm-up: the same load, cut off after `run.warmup`, its result thrown away.
            let warmup = s
                .run
                .warmup
                .as_deref()
                .and_then(|t| wirespeed_model::units::parse_duration(t).ok());
            if let Some(warmup) = warmup {
                let stop = cancel.child_token();
                let timer = {
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(warmup).await;
                        stop.cancel();
                    })
                };
                let _ = workload::run(&line, stop).await;
                timer.abort();
            }
            workload::run(&line, cancel.clone()).await.map_err(|e| format!("{e:#}"))
        }
        Err(e) => Err(e),
    };
    let samples = sampler.map(Sampler::finish).unwrap_or_default();
    // A process that died under load fails the run, whatever the workload saw.
    let crashed: Vec<String> = started
        .iter_mut()
        .filter_map(|p| {
            p.exited().map(|st| {
                format!(
                    "{} exited ({st}) during the run; its log ends:\n{}",
                    p.role,
                    p.log_tail(10)
                )
            })
        })
        .collect();
    tokio::task::block_in_place(|| {
        for p in started.iter_mut().rev() {
            p.stop(STOP_GRACE);
        }
    });
    let _ = std::fs::write(
        dir.join("samples.json"),
        serde_json::to_string_pretty(&samples).unwrap_or_default(),
    );
    // Cool-down before the next run (Ctrl-C cuts it short).
    let cooldown =
        s.run.cooldown.as_deref().and_then(|t| wirespeed_model::units::parse_duration(t).ok());
    if let Some(pause) = cooldown {
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = cancel.cancelled() => {}
        }
    }
    match report {
        _ if !crashed.is_empty() => Outcome::Failed(crashed.join("\n")),
        Ok(r) => {
            let _ = std::fs::write(
                dir.join("report.json"),
                serde_json::to_string_pretty(&r).unwrap_or_default(),
            );
            Outcome::Done(Box::new(r), samples)
        }
        Err(e) => Outcome::Failed(e),
    }
}
