//! `wirespeed bench DIR`: every scenario file of a directory (`benches/`), in name order, each
//! run as `bench FILE` would run it into `--out/NAME`; then the one table of every comparison
//! with another tool's client (`wirespeed_report::bench::ratios`), and the goals of the
//! directory's `goals.toml` with whether each was met, printed and written beside them as
//! `performance.md` and `ratios.csv`, with the machine they ran on. `--tabulate` makes the
//! same page again from the kept results alone, so a published page is what its data say.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use wirespeed_report::bench::goals::Goals;
use wirespeed_report::bench::ratios::{self, ScenarioResults};

use crate::exit;
use crate::flags::BenchArgs;

/// What ran the scenarios: kept beside their results as `run.json`, and beside each
/// scenario's own with when it started.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RunFacts {
    /// wirespeed's version.
    version: String,
    /// The machine, in a line.
    machine: String,
    /// When the scenario's runs started (UTC, RFC 3339); a directory's own facts have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started: Option<String>,
}

impl RunFacts {
    /// This build on this machine, the runs started at `started`.
    fn here(started: Option<std::time::SystemTime>) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").into(),
            machine: machine(),
            started: started.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
        }
    }
}

/// The file the facts are kept in.
const FACTS: &str = "run.json";

/// Keeps beside one scenario's results (`out`) what ran them and when they started, so that a
/// page made of scenarios run apart can say when each ran.
pub(super) fn keep_scenario_facts(out: &Path, started: std::time::SystemTime) -> Result<()> {
    let facts = RunFacts::here(Some(started));
    let path = out.join(FACTS);
    std::fs::write(&path, serde_json::to_string_pretty(&facts)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
}

/// The goals file of a directory of scenarios, kept with their results.
const GOALS: &str = "goals.toml";

/// The goals at `path`; none where there is no file.
fn read_goals(path: &Path) -> Result<Goals> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Goals::default()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let goals: Goals =
        toml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    for g in &goals.goal {
        g.check().map_err(anyhow::Error::msg).with_context(|| path.display().to_string())?;
    }
    Ok(goals)
}

/// Runs every scenario file of `dir`, then prints the table of them all.
pub(super) async fn run(args: BenchArgs, dir: &Path) -> Result<u8> {
    let files = scenario_files(dir)?;
    // Read before anything runs: a goals file with a mistake is said now, not after an hour.
    let goals = dir.join(GOALS);
    read_goals(&goals)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("bench-results/all"));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    if goals.is_file() {
        std::fs::copy(&goals, out.join(GOALS))
            .with_context(|| format!("copying {}", goals.display()))?;
    }
    let facts = RunFacts::here(None);
    std::fs::write(out.join(FACTS), serde_json::to_string_pretty(&facts)? + "\n")?;
    let mut code = exit::OK;
    for file in files {
        let name = file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        crate::output::write_stdout(format!("== {}\n", file.display()).as_bytes())?;
        let one = BenchArgs { scenario: Some(file), out: Some(out.join(&name)), ..args.clone() };
        let ran = Box::pin(super::run(one)).await;
        let ran = match ran {
            Ok(c) => c,
            // One scenario that cannot run (a program missing everywhere, a bad file) does
            // not stop the others; the exit code says it.
            Err(e) => {
                crate::output::write_stdout(format!("wirespeed: {name}: {e:#}\n").as_bytes())?;
                exit::FAILED
            }
        };
        if ran == exit::INTERRUPTED {
            return Ok(ran);
        }
        if code == exit::OK {
            code = ran;
        }
    }
    let page = tabulate(&out)?;
    crate::output::write_stdout(format!("\n{page}").as_bytes())?;
    Ok(code)
}

/// The scenario files of `dir`, by name.
fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| p.file_name().is_some_and(|n| n != GOALS))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: no scenario files (*.toml) in it", dir.display());
    }
    Ok(files)
}

/// The page of every comparison in the results kept under `out` (one directory per scenario
/// with its summary.json and versions.json, and run.json), written there as performance.md and
/// ratios.csv.
pub(super) fn tabulate(out: &Path) -> Result<String> {
    let facts: RunFacts = serde_json::from_str(
        &std::fs::read_to_string(out.join(FACTS))
            .with_context(|| format!("{}: not the results of `bench DIR`", out.display()))?,
    )
    .with_context(|| format!("reading {}", out.join(FACTS).display()))?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .with_context(|| format!("reading {}", out.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    dirs.sort();
    let (mut scenarios, mut runs) = (Vec::new(), Vec::new());
    for dir in dirs {
        let read = |file: &str| -> Result<String> {
            let path = dir.join(file);
            std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
        };
        let name = dir.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let cells = serde_json::from_str(&read("summary.json")?)
            .with_context(|| format!("{}/summary.json", dir.display()))?;
        let versions = serde_json::from_str(&read("versions.json")?)
            .with_context(|| format!("{}/versions.json", dir.display()))?;
        // Results kept before scenarios kept their own facts have none.
        let started = match std::fs::read_to_string(dir.join(FACTS)) {
            Ok(text) => {
                serde_json::from_str::<RunFacts>(&text)
                    .with_context(|| format!("{}/{FACTS}", dir.display()))?
                    .started
            }
            Err(_) => None,
        };
        runs.push((name.clone(), started));
        scenarios.push(ScenarioResults { name, cells, versions });
    }
    let goals = read_goals(&out.join(GOALS))?;
    let found = ratios::ratios(&scenarios);
    let page = ratios::markdown(&facts.version, &facts.machine, &found, &goals, &runs);
    std::fs::write(out.join("performance.md"), &page)?;
    std::fs::write(out.join("ratios.csv"), ratios::csv(&found))?;
    Ok(page)
}

/// This machine in a line: its processors, memory, system and kernel.
fn machine() -> String {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, m)| m.trim()))
        .unwrap_or("unknown processors")
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:")?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        .unwrap_or_else(|| "Linux".into());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    format!(
        "{cores} cores ({model}), {:.0} GiB, {os}, Linux {kernel}",
        memory_kib as f64 / (1u64 << 20) as f64
    )
}
