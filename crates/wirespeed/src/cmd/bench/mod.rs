//! `wirespeed bench SCENARIO.toml`: side-by-side studies from a scenario file. This part reads
//! and checks the file and shows its expanded matrix (`--list`, and with the command line of
//! every process and workload, `--dry-run`); running the cells is the next step of issue 9.

mod workload;

use anyhow::{Context, Result};
use wirespeed_runner::template;

use crate::exit;
use crate::flags::BenchArgs;

/// `wirespeed bench`.
pub fn run(args: BenchArgs) -> Result<u8> {
    if args.schema {
        let schema = serde_json::to_string_pretty(&wirespeed_runner::scenario::json_schema())?;
        crate::output::write_stdout(format!("{schema}\n").as_bytes())?;
        return Ok(exit::OK);
    }
    let path = args.scenario.context("a scenario file is needed (or --schema)")?;
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let loaded = wirespeed_runner::parse(&path.display().to_string(), &text)?;
    check_workloads(&loaded).with_context(|| path.display().to_string())?;
    let mut out = wirespeed_runner::load::describe(&loaded);
    if args.dry_run {
        out.push_str(&commands(&loaded)?);
    }
    crate::output::write_stdout(out.as_bytes())?;
    Ok(exit::OK)
}

/// Every workload cell's options are flags its test kind has: its command line, aimed at a
/// placeholder address, must parse as one typed by hand would.
fn check_workloads(loaded: &wirespeed_runner::Loaded) -> Result<()> {
    use clap::Parser;
    for w in &loaded.plan.workloads {
        let workload = &loaded.scenario.workload[w.workload];
        let words = workload::command_line(&workload.kind, "127.0.0.1:9", &w.options)?;
        crate::flags::Cli::try_parse_from(&words).map_err(|e| {
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
            .map_err(|n| anyhow::anyhow!("{{{n}}}"))
        };
        for p in &system.process {
            out.push_str(&format!("process  {} {}: {}\n", cell.name, p.role, fill(&p.cmd)?));
        }
        for w in &loaded.plan.workloads {
            let workload = &s.workload[w.workload];
            let entry = match (&system.entry, &workload.target) {
                (wirespeed_runner::scenario::Entry::One(e), _) => e.clone(),
                (wirespeed_runner::scenario::Entry::Named(m), Some(t)) => {
                    m.get(t).cloned().unwrap_or_default()
                }
                (wirespeed_runner::scenario::Entry::Named(_), None) => String::new(),
            };
            let words = workload::command_line(&workload.kind, &fill(&entry)?, &w.options)?;
            out.push_str(&format!("load     {} {}: {}\n", cell.name, w.name, words.join(" ")));
        }
    }
    Ok(out)
}
