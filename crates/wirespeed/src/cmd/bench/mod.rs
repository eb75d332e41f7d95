//! `wirespeed bench SCENARIO.toml`: side-by-side studies from a scenario file: read and
//! checked, its matrix shown (`--list`, and with every command line, `--dry-run`), or run
//! (`wirespeed_runner::execute`) with a line per run as it finishes, each finished run saved to the store at
//! once, its checks judged (a failure gives exit 11), each run's files kept under `--out`,
//! `--resume` skipping the runs that finished before, and a summary per workload and system
//! (median over repeats, spread, % of the baseline, peak memory) printed and written as
//! Markdown, CSV, JSON, an SVG of bar charts and an HTML page with the same charts.

mod every;
mod own_build;
mod vegeta_load;
mod workload;

pub(super) use own_build::first_on_path as own_build_first_on_path;
pub(crate) use vegeta_load::{command_line as vegeta_line, run as vegeta_run};
pub(crate) use workload::{command_line as workload_line, spec_of as workload_spec};

use anyhow::{Context, Result};
use wirespeed_runner::check::Rule;
use wirespeed_runner::execute::{self, Outcome, Places, Workloads};
use wirespeed_runner::matrix::{Plan, Run};
use wirespeed_runner::scenario::HostsMode;
use wirespeed_runner::template;

use crate::exit;
use crate::flags::BenchArgs;
use crate::test_kinds::TestKind;

/// `wirespeed bench` without a runtime: the schema, and a scenario listed or dry-run; `None`
/// when the scenario is to be run.
pub(super) fn inspect(args: &BenchArgs) -> Result<Option<u8>> {
    if let Some(dir) = &args.ansible {
        return ansible(args, dir).map(Some);
    }
    if let Some(dir) = &args.k8s {
        return k8s(args, dir).map(Some);
    }
    if args.clients {
        crate::output::write_stdout(crate::foreign::listing().as_bytes())?;
        return Ok(Some(exit::OK));
    }
    if let Some(results) = &args.tabulate {
        let page = every::tabulate(results)?;
        crate::output::write_stdout(page.as_bytes())?;
        return Ok(Some(exit::OK));
    }
    if args.scenario.as_ref().is_some_and(|p| p.is_dir()) && (args.list || args.dry_run) {
        anyhow::bail!("--list and --dry-run take one scenario file, not a directory");
    }
    if !(args.schema || args.list || args.dry_run) {
        return Ok(None);
    }
    show(args).map(Some)
}

/// `--k8s DIR`: the study as Kubernetes manifests, a pair of files per run, and `run.sh`.
fn k8s(args: &BenchArgs, dir: &std::path::Path) -> Result<u8> {
    let loaded = load(args)?;
    let path = args.scenario.as_ref().context("a scenario file is needed")?;
    let scenario_dir = std::path::absolute(path)?
        .parent()
        .map_or_else(|| std::path::PathBuf::from("/"), std::path::Path::to_path_buf);
    let results = std::path::absolute(dir.join("results"))?;
    let places =
        Places { scenario_dir: &scenario_dir, out: &results, resume: false, ssh_config: None };
    let options = execute::k8s::K8sOptions {
        image: args.image.as_deref().context("--k8s needs --image")?,
        namespace: args.namespace.as_deref(),
    };
    execute::k8s::write(&loaded, &places, &workload::InProcess, &options, dir)?;
    crate::output::write_stdout(
        format!(
            "wrote the manifests of {} runs into {d}; {d}/run.sh applies them in order (kubectl)\n",
            loaded.plan.runs.len(),
            d = dir.display()
        )
        .as_bytes(),
    )?;
    Ok(exit::OK)
}

/// `--ansible DIR`: the study as a playbook and inventory, for ssh hosts.
fn ansible(args: &BenchArgs, dir: &std::path::Path) -> Result<u8> {
    let loaded = load(args)?;
    let mode = loaded.scenario.hosts_mode();
    if mode != HostsMode::Ssh {
        anyhow::bail!(
            "--ansible writes a playbook for ssh hosts; this study's hosts are {:?} (give each [[host]] an ssh destination, or --hosts ssh)",
            mode.name()
        );
    }
    let path = args.scenario.as_ref().context("a scenario file is needed")?;
    let scenario_dir = std::path::absolute(path)?
        .parent()
        .map_or_else(|| std::path::PathBuf::from("/"), std::path::Path::to_path_buf);
    let results = std::path::absolute(dir.join("results"))?;
    let places = Places {
        scenario_dir: &scenario_dir,
        out: &results,
        resume: false,
        ssh_config: args.ssh_config.as_deref(),
    };
    execute::ansible::write(&loaded, &places, &workload::InProcess, dir, path)?;
    crate::output::write_stdout(
        format!(
            "wrote {d}/study.yml and {d}/inventory.ini ({} runs); run them with `ansible-playbook -i {d}/inventory.ini {d}/study.yml`
",
            loaded.plan.runs.len(),
            d = dir.display()
        )
        .as_bytes(),
    )?;
    Ok(exit::OK)
}

/// Loads and checks the scenario file of `args`.
fn load(args: &BenchArgs) -> Result<wirespeed_runner::Loaded> {
    let path = args.scenario.as_ref().context("a scenario file is needed (or --schema)")?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut kinds = TestKind::workload_names();
    kinds.push(vegeta_load::KIND);
    let hosts = args.hosts.as_deref().map(|h| match h {
        "netns" => HostsMode::Netns,
        "ssh" => HostsMode::Ssh,
        _ => HostsMode::Local,
    });
    let mut loaded =
        wirespeed_runner::parse_placed(&path.display().to_string(), &text, &kinds, hosts)?;
    check_workloads(&loaded).with_context(|| path.display().to_string())?;
    if args.smoke {
        // A system that loads with a client of its own (ethr's) may not take our shortest
        // length: such a scenario's loads run a second.
        let foreign = loaded.plan.systems.iter().any(|c| c.client.is_some());
        loaded.smoke(|kind| smoke_length(kind, foreign));
    }
    if let Some(repeat) = args.repeat {
        loaded.set_repeat(repeat)?;
    }
    if let Some(network) = &args.network {
        loaded.set_network(network_conditions(network)?)?;
    }
    // After --smoke and --repeat, which expand the plan again from the file.
    if !args.systems.is_empty() {
        loaded.keep_systems(&args.systems)?;
    }
    if !args.workloads.is_empty() {
        loaded.keep_workloads(&args.workloads)?;
    }
    Ok(loaded)
}

/// `--network`'s `KEY=VALUE,…` (or `none`) as conditions.
fn network_conditions(text: &str) -> Result<Vec<(String, String)>> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|pair| {
            let (k, v) = pair.split_once('=').with_context(|| {
                format!("--network {pair:?}: expected KEY=VALUE (delay=0.5ms,rate=1Gbit) or none")
            })?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// How long each load runs under `--smoke`: long enough for every kind to measure something
/// (a request at 1 per second, a DNS query's answer, an interval of samples), short enough that
/// what a smoke run costs is mostly starting and stopping the systems.
const SMOKE_LENGTH: &str = "0.5s";

/// `--smoke`'s length where a system loads with another program's client: ethr's ends a test
/// only after a whole second or more.
const SMOKE_LENGTH_FOREIGN: &str = "1s";

/// `--smoke`: the option that sets how long a test of `kind` runs, and a short value for it
/// (longer when a system's `client` is another program's, `foreign`).
fn smoke_length(kind: &str, foreign: bool) -> Option<(&'static str, toml::Value)> {
    let flag = match kind {
        vegeta_load::KIND => "duration",
        _ => TestKind::from_name(kind)?.time_flag()?,
    };
    let length = if foreign { SMOKE_LENGTH_FOREIGN } else { SMOKE_LENGTH };
    Some((flag, toml::Value::String(length.into())))
}

/// Runs the scenario, or with a directory every scenario in it.
pub(super) async fn run(args: BenchArgs) -> Result<u8> {
    match &args.scenario {
        Some(dir) if dir.is_dir() => every::run(args.clone(), dir).await,
        _ => run_one(args).await,
    }
}

/// Runs every run of the scenario; one line per run as it ends (and per failed check), each
/// finished run saved at once, then a count.
async fn run_one(args: BenchArgs) -> Result<u8> {
    let loaded = load(&args)?;
    let path = args.scenario.as_ref().context("a scenario file is needed")?;
    // `{scenario.dir}`: files kept beside the scenario, whatever directory it is run from.
    let scenario_dir = std::path::absolute(path)?
        .parent()
        .map_or_else(|| std::path::PathBuf::from("/"), std::path::Path::to_path_buf);
    let (out, _lock) = results_dir(&args, &loaded)?;
    let store = if args.no_save {
        None
    } else {
        Some(wirespeed_store::Store::open_at(&crate::saved::db_location(&args.db)?)?)
    };
    let rules: Vec<(Option<String>, String, Rule)> = loaded
        .scenario
        .check
        .iter()
        .map(|c| {
            Ok((
                c.workload.clone(),
                c.expr.clone(),
                Rule::parse(&c.expr).map_err(anyhow::Error::msg)?,
            ))
        })
        .collect::<Result<_>>()?;
    let (mut failed_checks, mut unsaved) = (0usize, 0usize);
    let cancel = super::interrupt_token();
    let scenario_name = loaded.scenario.scenario.name.clone();
    let places = Places {
        scenario_dir: &scenario_dir,
        out: &out,
        resume: args.resume,
        ssh_config: args.ssh_config.as_deref(),
    };
    let versions = check_versions(&loaded)?;
    let started = std::time::SystemTime::now();
    let results = execute::run_all(
        &loaded,
        &places,
        &workload::InProcess,
        cancel.clone(),
        |plan, run, outcome| {
            let id = plan.run_id(run);
            let mut text = outcome_line(&id, outcome);
            if let Outcome::Done(report, ..) | Outcome::Interrupted(report) = outcome {
                // Saved as soon as it finished: a run that breaks later loses nothing before it
                // (a cut one too, marked so in its notes).
                if let Some(store) = &store {
                    if let Err(e) = store.save(report, Some(&format!("{scenario_name} {id}"))) {
                        text.push_str(&format!("warning: {id} not saved: {e}\n"));
                        unsaved += 1;
                    }
                }
            }
            if let Outcome::Done(report, ..) | Outcome::Kept(report, _) = outcome {
                let failures = judge(&loaded, plan, run, &rules, report);
                failed_checks += failures.len();
                text.extend(failures);
            }
            let _ = crate::output::write_stdout(text.as_bytes());
        },
    )
    .await?;
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|(_, o)| f(o)).count();
    let failed = count(|o| matches!(o, Outcome::Failed(_)));
    let summary = format!(
        "{} runs: {} done, {} kept, {} skipped, {} interrupted, {failed} failed; {failed_checks} checks failed; files in {}\n",
        results.len(),
        count(|o| matches!(o, Outcome::Done(..))),
        count(|o| matches!(o, Outcome::Kept(..))),
        count(|o| matches!(o, Outcome::Skipped(_))),
        count(|o| matches!(o, Outcome::Interrupted(_))),
        out.display()
    );
    let markdown = write_summaries(&out, &loaded, &results, &versions)?;
    every::keep_scenario_facts(&out, started)?;
    crate::output::write_stdout(format!("\n{markdown}\n{summary}").as_bytes())?;
    Ok(if cancel.is_cancelled() {
        exit::INTERRUPTED
    } else if failed > 0 {
        exit::FAILED
    } else if unsaved > 0 {
        exit::NOT_SAVED
    } else if failed_checks > 0 {
        exit::CHECKS_FAILED
    } else {
        exit::OK
    })
}

/// Asks each installed system's program for its version before the runs, printing what it
/// said (and a warning where that is not what the scenario expects), for the summary.
fn check_versions(
    loaded: &wirespeed_runner::Loaded,
) -> Result<Vec<wirespeed_report::bench::ProgramVersion>> {
    let mut versions = wirespeed_runner::version::check(loaded);
    if let Some(v) = vegeta_load::version(loaded) {
        versions.push(v);
    }
    versions.extend(crate::foreign::versions(loaded));
    let mut text = String::new();
    for v in &versions {
        let systems = v.systems.join(", ");
        let word = if v.as_expected() { "version " } else { "warning: version" };
        text.push_str(&format!("{word} {systems}: {}\n", v.describe()));
    }
    crate::output::write_stdout(text.as_bytes())?;
    Ok(versions
        .into_iter()
        .map(|v| wirespeed_report::bench::ProgramVersion {
            systems: v.systems.join(", "),
            as_expected: v.as_expected(),
            printed: v.printed.clone().unwrap_or_else(|why| why.to_string()),
            command: v.command,
            expected: v.expected,
        })
        .collect())
}

/// The results directory, absolute (processes run in their run's directory, so every path
/// handed to them must be), created, and locked for this runner: two would overwrite each
/// other's runs, and `--resume` would keep a run the other is still writing. The lock goes
/// with the returned file.
fn results_dir(
    args: &BenchArgs,
    loaded: &wirespeed_runner::Loaded,
) -> Result<(std::path::PathBuf, std::fs::File)> {
    let out = args.out.clone().unwrap_or_else(|| {
        std::path::PathBuf::from("bench-results").join(&loaded.scenario.scenario.name)
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let out = std::path::absolute(&out)?;
    let lock = std::fs::File::create(out.join(".lock"))
        .with_context(|| format!("creating {}", out.join(".lock").display()))?;
    // SAFETY: flock(2) on a descriptor `lock` owns; it touches no memory.
    let held = unsafe {
        libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB)
    };
    if held != 0 {
        anyhow::bail!(
            "{} is in use by another `wirespeed bench` (its .lock is held); choose another --out",
            out.display()
        );
    }
    Ok((out, lock))
}

/// The line printed when a run ends: its headline figure, memory and retries, or why not.
fn outcome_line(id: &str, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Done(report, samples, retried) => {
            let head = report.headline();
            let memory: Vec<String> = wirespeed_runner::sample::summary(samples)
                .into_iter()
                .map(|(role, rss, hwm, cpu)| {
                    format!(
                        "{role} {:.1} MiB, {:.2} s CPU",
                        hwm.max(rss) as f64 / (1 << 20) as f64,
                        cpu as f64 / 1e9
                    )
                })
                .collect();
            let memory = if memory.is_empty() {
                String::new()
            } else {
                format!("  [{}]", memory.join("; "))
            };
            let retried = match *retried {
                0 => String::new(),
                n => format!("  (after {n} failed {})", if n == 1 { "try" } else { "tries" }),
            };
            format!(
                "done     {id}  {}{memory}{retried}\n",
                wirespeed_report::units::figure(head.value, head.unit)
            )
        }
        Outcome::Kept(report, _) => {
            let head = report.headline();
            format!(
                "kept     {id}  {}  (finished before)\n",
                wirespeed_report::units::figure(head.value, head.unit)
            )
        }
        Outcome::Interrupted(report) => {
            let head = report.headline();
            format!(
                "stopped  {id}  cut short by an interrupt, so not counted ({} over what ran)\n",
                wirespeed_report::units::figure(head.value, head.unit)
            )
        }
        Outcome::Skipped(why) => format!("skipped  {id}  ({why})\n"),
        Outcome::Failed(why) => format!("FAILED   {id}  {why}\n"),
    }
}

/// The scenario's checks that apply to this run's workload, judged on its report: a line for
/// each that failed.
fn judge(
    loaded: &wirespeed_runner::Loaded,
    plan: &Plan,
    run: &Run,
    rules: &[(Option<String>, String, Rule)],
    report: &wirespeed_model::Report,
) -> Vec<String> {
    let id = plan.run_id(run);
    let workload = &loaded.scenario.workload[plan.workloads[run.workload].workload].name;
    let applies = |only: &Option<String>| only.as_ref().is_none_or(|w| w == workload);
    rules
        .iter()
        .filter(|(only, _, _)| applies(only))
        .filter_map(|(_, expr, rule)| match wirespeed_runner::check::figure(report, &rule.figure) {
            Some(v) if rule.holds(v) => None,
            Some(v) => {
                // In the figure's unit: "p99 is 28927" said nothing of what 28927 was.
                let shown = wirespeed_runner::check::figure_unit(report, &rule.figure)
                    .map_or_else(|| v.to_string(), |u| wirespeed_report::units::figure(v, u));
                Some(format!("check    {id}  {expr}: failed ({} is {shown})\n", rule.figure))
            }
            None => Some(format!(
                "check    {id}  {expr}: this run has no {} (it has {})\n",
                rule.figure,
                wirespeed_runner::check::figure_names(report).join(", ")
            )),
        })
        .collect()
}

/// Writes the summary per workload and system as Markdown, CSV, JSON, HTML and an SVG of
/// charts under `out`, with each role's memory and CPU as `resources.csv`, every summary
/// figure as `figures.csv` and memory over time as `memory.csv`; the Markdown, to print.
fn write_summaries(
    out: &std::path::Path,
    loaded: &wirespeed_runner::Loaded,
    results: &[(Run, Outcome)],
    versions: &[wirespeed_report::bench::ProgramVersion],
) -> Result<String> {
    let name = &loaded.scenario.scenario.name;
    let cells = summarize(loaded, results);
    let baseline = loaded.scenario.report.baselines();
    let baseline = baseline.as_slice();
    let markdown = wirespeed_report::bench::markdown(name, baseline, &cells, versions);
    for (file, text) in [
        ("summary.md", markdown.clone()),
        ("summary.csv", wirespeed_report::bench::csv(baseline, &cells)),
        ("summary.json", serde_json::to_string_pretty(&cells)? + "\n"),
        ("versions.json", serde_json::to_string_pretty(versions)? + "\n"),
        ("resources.csv", wirespeed_report::bench::resources_csv(&cells)),
        ("figures.csv", wirespeed_report::bench::figures_csv(&cells)),
        ("memory.csv", wirespeed_report::bench::memory_csv(&cells)),
        ("summary.html", wirespeed_report::bench::html(name, baseline, &cells, versions)),
    ] {
        let path = out.join(file);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let charts = wirespeed_report::bench::charts(&cells);
    if !charts.is_empty() {
        crate::saved::write_chart(&out.join("summary.svg"), &charts)?;
    }
    Ok(markdown)
}

/// One [`BenchCell`](wirespeed_report::bench::BenchCell) per workload and system: the
/// headline figure and latency percentiles of every finished (or kept) run, the skipped and
/// failed counts, each role's median peak RSS, and its RSS over the first run.
fn summarize(
    loaded: &wirespeed_runner::Loaded,
    results: &[(Run, Outcome)],
) -> Vec<wirespeed_report::bench::BenchCell> {
    use wirespeed_runner::check::figure;
    let plan = &loaded.plan;
    let mut cells = Vec::new();
    for (wi, w) in plan.workloads.iter().enumerate() {
        for (si, sys) in plan.systems.iter().enumerate() {
            let runs: Vec<&Outcome> = results
                .iter()
                .filter(|(r, _)| r.workload == wi && r.system == si)
                .map(|(_, o)| o)
                .collect();
            let finished: Vec<(&wirespeed_model::Report, &[wirespeed_runner::sample::Sample])> =
                runs.iter()
                    .filter_map(|o| match o {
                        Outcome::Done(r, s, _) | Outcome::Kept(r, s) => {
                            Some((r.as_ref(), s.as_slice()))
                        }
                        _ => None,
                    })
                    .collect();
            let heads: Vec<_> = finished.iter().map(|(r, _)| r.headline()).collect();
            // Per role, over the runs: the peak (VmHWM, or sampled RSS where no peak was
            // read) and the CPU seconds.
            let mut peaks: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
            let mut cpu: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
            for (report, samples) in &finished {
                for (role, rss, hwm, ns) in wirespeed_runner::sample::summary(samples) {
                    peaks.entry(role.clone()).or_default().push(hwm.max(rss) as f64);
                    cpu.entry(role).or_default().push(ns as f64 / 1e9);
                }
                if let Some(load) = report.meta.load_cpu {
                    cpu.entry("load".into()).or_default().push(load.seconds());
                }
            }
            let per_unit: Vec<(f64, &str)> =
                finished.iter().filter_map(|(r, _)| r.load_cpu_per_unit()).collect();
            let medians = |m: std::collections::BTreeMap<String, Vec<f64>>| -> Vec<(String, f64)> {
                m.into_iter()
                    .filter_map(|(role, v)| Some((role, wirespeed_report::bench::median(&v)?)))
                    .collect()
            };
            let mut timeline: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            for s in finished.first().map_or(&[][..], |(_, s)| s) {
                let point = (s.at_ms as f64 / 1e3, s.rss_bytes as f64);
                match timeline.iter_mut().find(|(role, _)| *role == s.role) {
                    Some((_, points)) => points.push(point),
                    None => timeline.push((s.role.clone(), vec![point])),
                }
            }
            let mut figures: Vec<(String, Vec<f64>)> = Vec::new();
            for (report, _) in &finished {
                for (key, value) in summary_numbers(report) {
                    match figures.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, values)) => values.push(value),
                        None => figures.push((key, vec![value])),
                    }
                }
            }
            // A latency of 0 is one the client did not print (h2load prints no percentiles).
            let latency = |name: &str| -> Vec<f64> {
                finished.iter().filter_map(|(r, _)| figure(r, name)).filter(|v| *v > 0.0).collect()
            };
            cells.push(wirespeed_report::bench::BenchCell {
                workload: w.name.clone(),
                base: loaded.scenario.workload[w.workload].name.clone(),
                swept: w.swept.clone(),
                system: sys.name.clone(),
                figure: heads.first().map_or_else(String::new, |h| h.label.to_string()),
                unit: heads.first().map_or(wirespeed_model::metrics::Unit::Count, |h| h.unit),
                higher_is_better: heads
                    .first()
                    .is_none_or(|h| h.better == wirespeed_model::metrics::Better::Higher),
                values: heads.iter().map(|h| h.value).collect(),
                p50_ns: latency("p50"),
                p99_ns: latency("p99"),
                load_cpu_per_unit: per_unit.iter().map(|(v, _)| *v).collect(),
                work_unit: per_unit.first().map(|(_, unit)| unit.to_string()),
                compared_with: compared_with(loaded, si),
                planned: loaded.scenario.run.repeat as usize,
                skipped: runs.iter().filter(|o| matches!(o, Outcome::Skipped(_))).count(),
                failed: runs.iter().filter(|o| matches!(o, Outcome::Failed(_))).count(),
                memory: medians(peaks),
                cpu: medians(cpu),
                figures,
                timeline,
            });
        }
    }
    cells
}

/// The cell a peer's cell is compared with on the performance page. For a system cell whose
/// load is another tool's client, the cell with wirespeed's own client: the one of the same
/// `[[system]]` whose variables differ only in what names its client, else the scenario's only
/// cell with our client. Failing that, for a baseline of a scenario of servers that one client
/// loads (`benches/web.toml`: wirespeed web and nginx, both loaded by ours), the scenario's one
/// other cell loaded by the same client that runs wirespeed as a server. None otherwise (a
/// tunnel against the direct path is no peer's row).
fn compared_with(loaded: &wirespeed_runner::Loaded, cell: usize) -> Option<String> {
    other_client(&loaded.plan, cell).or_else(|| other_server(loaded, cell))
}

/// [`compared_with`]'s first rule: our client beside another tool's (not beside our own made
/// by several members, which is no peer).
fn other_client(plan: &Plan, cell: usize) -> Option<String> {
    let this = &plan.systems[cell];
    if this.client.as_ref()?.members().is_some() {
        return None;
    }
    let ours: Vec<&wirespeed_runner::matrix::SystemCell> =
        plan.systems.iter().filter(|c| c.client.is_none()).collect();
    let differing = |c: &wirespeed_runner::matrix::SystemCell| {
        c.vars.iter().filter(|(k, v)| this.vars.get(*k) != Some(*v)).count()
    };
    let sibling = ours.iter().filter(|c| c.system == this.system).min_by_key(|c| differing(c));
    match (sibling, ours.as_slice()) {
        (Some(c), _) => Some(c.name.clone()),
        (None, [only]) => Some(only.name.clone()),
        _ => None,
    }
}

/// [`compared_with`]'s second rule: a baseline server beside the one wirespeed server its
/// client loads.
fn other_server(loaded: &wirespeed_runner::Loaded, cell: usize) -> Option<String> {
    let plan = &loaded.plan;
    let this = &plan.systems[cell];
    if !loaded.scenario.report.baselines().contains(&this.name.as_str()) {
        return None;
    }
    let runs_wirespeed = |c: &wirespeed_runner::matrix::SystemCell| {
        loaded.scenario.system[c.system].process.iter().any(|p| {
            p.cmd
                .split(|ch: char| ch.is_whitespace() || ch == '\'' || ch == '"')
                .any(|w| w == "wirespeed")
        })
    };
    let others: Vec<_> = plan
        .systems
        .iter()
        .filter(|c| c.name != this.name && c.client == this.client && runs_wirespeed(c))
        .collect();
    match others.as_slice() {
        [only] => Some(only.name.clone()),
        _ => None,
    }
}

/// Every number in `report`'s summary, by its path (`latency.mean_ns`); lists (a histogram's
/// buckets) are left out.
fn summary_numbers(report: &wirespeed_model::Report) -> Vec<(String, f64)> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, f64)>) {
        match v {
            serde_json::Value::Number(n) => out.extend(n.as_f64().map(|n| (prefix.to_string(), n))),
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&path, v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(report) {
        walk("", &v["summary"], &mut out);
    }
    out
}

fn show(args: &BenchArgs) -> Result<u8> {
    if args.schema {
        let schema = serde_json::to_string_pretty(&wirespeed_runner::scenario::json_schema())?;
        crate::output::write_stdout(format!("{schema}\n").as_bytes())?;
        return Ok(exit::OK);
    }
    let loaded = load(args)?;
    let mut out = wirespeed_runner::load::describe(&loaded);
    if args.dry_run {
        out.push_str(&commands(&loaded)?);
    }
    crate::output::write_stdout(out.as_bytes())?;
    Ok(exit::OK)
}

/// Every workload cell's options are flags its test kind has: its command line, aimed at a
/// placeholder address, must parse as one typed by hand would; and for a system whose load is
/// another client's (ethr), that client must have a flag for each.
fn check_workloads(loaded: &wirespeed_runner::Loaded) -> Result<()> {
    let mut clients: Vec<&wirespeed_runner::scenario::ClientChoice> =
        loaded.plan.systems.iter().filter_map(|c| c.client.as_ref()).collect();
    clients.sort_by_key(|c| format!("{c:?}"));
    clients.dedup();
    for client in clients {
        for w in &loaded.plan.workloads {
            let workload = &loaded.scenario.workload[w.workload];
            workload::InProcess
                .command_line(Some(client), &workload.kind, "127.0.0.1:9", &w.options)
                .with_context(|| format!("workload {:?} made by {}", w.name, client.name()))?;
        }
    }
    for w in &loaded.plan.workloads {
        let workload = &loaded.scenario.workload[w.workload];
        if workload.kind == vegeta_load::KIND {
            vegeta_load::command_line("127.0.0.1:9", &w.options)
                .with_context(|| format!("workload {:?}", w.name))?;
            // vegeta's load is run from this process: it cannot be a process of its own here.
            let alone = workload.cpus.is_some()
                || workload.host.is_some()
                || loaded.scenario.run.load_process;
            if alone {
                anyhow::bail!(
                    "workload {:?}: a vegeta load runs from the runner itself: no cpus, host or run.load_process",
                    w.name
                );
            }
            continue;
        }
        let words = workload::command_line(&workload.kind, "127.0.0.1:9", &w.options)?;
        crate::flags::parse_from(&words).map_err(|e| {
            let msg = e.render().to_string();
            let first = msg.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
            anyhow::anyhow!("workload {:?} ({}): {first}", w.name, workload.kind)
        })?;
    }
    Ok(())
}

/// Every system cell's processes and every workload's command line, with ports, files and
/// fixtures shown by name (`<port.entry>`), as they would be run.
fn commands(loaded: &wirespeed_runner::Loaded) -> Result<String> {
    let s = &loaded.scenario;
    let mut out = String::new();
    for cell in &loaded.plan.systems {
        let system = &s.system[cell.system];
        let fill = |text: &str| {
            template::render(text, |name| {
                cell.vars.get(name).cloned().or_else(|| Some(format!("<{name}>")))
            })
            .map_err(|e| anyhow::anyhow!("{{{}}}", e.0))
        };
        for p in &system.process {
            out.push_str(&format!("process  {} {}: {}\n", cell.name, p.role, fill(&p.cmd)?));
        }
        for w in &loaded.plan.workloads {
            let workload = &s.workload[w.workload];
            let entry = system.entry.for_target(workload.target.as_deref()).map_or("", |e| e);
            let words = Workloads::command_line(
                &workload::InProcess,
                cell.client.as_ref(),
                &workload.kind,
                &fill(entry)?,
                &w.options,
            )?;
            out.push_str(&format!("load     {} {}: {}\n", cell.name, w.name, words.join(" ")));
        }
    }
    Ok(out)
}
