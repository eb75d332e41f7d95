//! Another tool's client making a study's load (a scenario system's `client`): iperf3's, and
//! any other described in `clients.toml` (`defs`) — which words it runs for a workload, and
//! where its figures are in what it prints — run as a child process (`child`) and read back
//! as a report of the workload's kind (`report`), so its row sits beside wirespeed's own.
//! ethr's client, whose text needs a parser of its own, lives in `crate::ethr` and shares the
//! child process handling; vegeta's, whose results are files of its own, is `vegeta`.
//!
//! The words are `wirespeed peer --client NAME --like JSON -- PROGRAM ARGS…`, where JSON is
//! our own command line for the same workload (its spec is the report's): run in-process
//! here, or as that command on a study's host (`wirespeed peer`, which prints the report).

mod build;
pub(crate) mod child;
mod defs;
mod figures;
mod members;
mod report;
mod vegeta;

pub(crate) use vegeta::CLIENT as VEGETA_CLIENT;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::Report;
use wirespeed_runner::scenario::ClientChoice;

/// How long past its planned time a client may run before it is stopped: a client that does
/// not end by itself must not hold a study (or a load loop) open.
pub(crate) const OVERRUN: Duration = Duration::from_secs(30);

/// Whether `client` is one of `clients.toml`'s (ethr's is not: it has its own module).
pub(crate) fn described(client: &ClientChoice) -> bool {
    defs::all().contains_key(client.name())
}

/// The words of `kind` with `options` made by `client` against `entry` (HOST:PORT).
pub(crate) fn command_line(
    client: &ClientChoice,
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    let name = client.name();
    if name == vegeta::CLIENT {
        if client.program().is_some() || !client.args().is_empty() {
            bail!("vegeta's client takes no program or args of its own");
        }
        return vegeta::command_line(kind, entry, options);
    }
    if name == build::CLIENT {
        if let Some(members) = client.members() {
            return members::command_line(members, kind, entry, options);
        }
        let program = client.program().context("another build of wirespeed: no program")?;
        if !client.args().is_empty() {
            bail!("another build of wirespeed takes no args of its own: its options are ours");
        }
        return build::command_line(program, kind, entry, options);
    }
    let def = defs::find(name)?;
    let mut args = def.kind(name, kind)?.words(name, kind, entry, options)?;
    args.extend(client.args().iter().cloned());
    let like = crate::cmd::bench_workload_line(kind, entry, options)?;
    let program = client.program().unwrap_or(&def.program);
    let mut words = peer_words(name, &like)?;
    words.push(program.to_string());
    words.extend(args);
    Ok(words)
}

/// The words before another client's own: `wirespeed peer --client NAME --like JSON --`, where
/// JSON is `like`, our own command line for the same workload.
fn peer_words(name: &str, like: &[String]) -> Result<Vec<String>> {
    let like = serde_json::to_string(like)?;
    Ok(["wirespeed", "peer", "--client", name, "--like", &like, "--"].map(String::from).to_vec())
}

/// What the words of [`command_line`] say.
pub(crate) struct PeerWords {
    /// The client's name.
    name: String,
    /// Our own command line for the same workload.
    like: Vec<String>,
    /// The client's.
    argv: Vec<String>,
    /// How many processes of this build make the load together (`--members`), where several.
    members: Option<u16>,
}

/// What the words of [`command_line`] say; `None` for other words (ethr's).
pub(crate) fn parse(words: &[String]) -> Result<Option<PeerWords>> {
    let Some(end) = words.iter().position(|w| w == "--") else { return Ok(None) };
    let flags = &words[..end];
    let value = |flag: &str| flags.iter().position(|w| w == flag).and_then(|i| flags.get(i + 1));
    let Some(name) = value("--client") else { return Ok(None) };
    let like = value("--like").context("the peer's words have no --like")?;
    let like: Vec<String> =
        serde_json::from_str(like).context("--like: expected a JSON list of words")?;
    let argv = words[end + 1..].to_vec();
    if argv.is_empty() {
        bail!("the peer's words have no command after --");
    }
    let members = value("--members")
        .map(|n| n.parse().with_context(|| format!("--members {n:?}: expected a count")))
        .transpose()?;
    Ok(Some(PeerWords { name: name.clone(), like, argv, members }))
}

/// Runs the client as `words` say until it ends, `cancel` fires or it overruns; what it
/// printed as a report of the workload's kind.
pub(crate) async fn run(words: &[String], cancel: CancellationToken) -> Result<Report> {
    let PeerWords { name, like, argv, members } =
        parse(words)?.context("not a described client's words")?;
    if name == vegeta::CLIENT {
        return vegeta::run(&argv, cancel).await;
    }
    if name == build::CLIENT {
        return match members {
            Some(n) => members::run(&like, &argv, n, cancel).await,
            None => build::run(&like, &argv, cancel).await,
        };
    }
    let def = defs::find(&name)?;
    let kind = like.get(1).context("--like: no test kind")?;
    let kind_def = def.kind(&name, kind)?;
    let spec = crate::cmd::bench_workload_spec(&like)?;
    let command = argv.join(" ");
    let planned = Duration::from_nanos(spec.planned_ns().unwrap_or(0));
    let ran = child::run(&argv[0], &argv[1..], cancel.clone(), planned + OVERRUN).await?;
    if ran.overran {
        bail!("{command} did not end within {:?} of its planned time: stopped", OVERRUN);
    }
    let stopped = cancel.is_cancelled();
    let Some(printed) = figures::Printed::of(kind_def, &ran.stdout) else {
        if !ran.status.success() && !stopped {
            bail!("{command} failed ({}): {}", ran.status, ran.last_words());
        }
        bail!("{command} printed no JSON: {}", ran.last_words());
    };
    if let Some(said) = printed.error(kind_def) {
        bail!("{command} failed: {said}");
    }
    if !ran.status.success() && !stopped {
        bail!("{command} failed ({}): {}", ran.status, ran.last_words());
    }
    let figures = figures::read(kind_def, &printed)?;
    report::of(report::Made {
        client: &name,
        command,
        note: &kind_def.note,
        spec,
        figures,
        began: ran.began,
        cpu: ran.load_cpu(),
    })
}

/// The version of each described client a study's systems run, labelled with those systems.
pub(crate) fn versions(
    loaded: &wirespeed_runner::Loaded,
) -> Vec<wirespeed_runner::version::Version> {
    let mut by_command: BTreeMap<String, (Vec<String>, Option<String>)> = BTreeMap::new();
    for cell in &loaded.plan.systems {
        let Some(client) = cell.client.as_ref() else { continue };
        if let (build::CLIENT, Some(program)) = (client.name(), client.program()) {
            // Another build: what it says it is.
            if wirespeed_runner::process::which(program).is_some() {
                let entry = by_command.entry(format!("{program} --version")).or_default();
                entry.0.push(format!("client of {}", cell.name));
            }
            continue;
        }
        if !described(client) {
            continue;
        }
        let Ok(def) = defs::find(client.name()) else { continue };
        let program = client.program().unwrap_or(&def.program);
        if wirespeed_runner::process::which(program).is_none() {
            continue;
        }
        let command = match &def.version_command {
            Some(words) => words.join(" "),
            None => std::iter::once(program.to_string())
                .chain(def.version.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let line = def.version_line.clone();
        let entry = by_command.entry(command).or_insert_with(|| (Vec::new(), line));
        entry.0.push(format!("client of {}", cell.name));
    }
    by_command
        .into_iter()
        .map(|(command, (systems, line))| {
            let label = systems.join(", ");
            let mut v = wirespeed_runner::version::of_program(&label, &command, line.as_deref());
            v.systems = systems;
            v
        })
        .collect()
}

/// `wirespeed bench --clients`: each described client, what it is, and the kinds it makes
/// with their options.
pub(crate) fn listing() -> String {
    let mut out = String::new();
    for (name, def) in defs::all() {
        out.push_str(&format!("{name}: {} (runs {})\n", def.about, def.program));
        for (kind, k) in &def.kind {
            let options: Vec<&str> = k.options.keys().map(String::as_str).collect();
            out.push_str(&format!("  {kind}: options {}\n", options.join(", ")));
        }
    }
    out.push_str(&format!(
        "{}: Microsoft's ethr (bandwidth, pps, cps, latency, ping; crate::ethr)\n",
        crate::ethr::CLIENT
    ));
    out.push_str(&format!(
        "{}: vegeta attack (http: connections as -max-workers with -rate 0, or a rate)\n",
        vegeta::CLIENT
    ));
    out
}
