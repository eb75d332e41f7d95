//! A scenario's workload cell as the command line it stands for — `wirespeed KIND ENTRY
//! --OPTION VALUE …` — parsed by the same flags and resolved by the same code as a test typed
//! by hand, then run in-process. So a cell of a benchmark matrix and a command line are the
//! same thing, and an option a test kind does not have is refused in clap's words. A `vegeta`
//! workload is vegeta's own load instead (`vegeta_load`), and a system whose `client` is ethr
//! has its workloads made by ethr's client (`crate::ethr`).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;
use wirespeed_model::Report;
use wirespeed_runner::execute::Workloads;
use wirespeed_runner::matrix::scalar_text;
use wirespeed_runner::scenario::ClientChoice;

use crate::test_kinds::TestKind;

/// A workload as `wirespeed bench` runs it: the command line it stands for, run in-process.
pub(super) struct InProcess;

impl Workloads for InProcess {
    fn command_line(
        &self,
        client: Option<&ClientChoice>,
        kind: &str,
        entry: &str,
        options: &BTreeMap<String, toml::Value>,
    ) -> Result<Vec<String>> {
        match client {
            None => command_line(kind, entry, options),
            Some(ClientChoice::Name(name)) if name == crate::ethr::CLIENT => {
                crate::ethr::command_line(kind, entry, options)
            }
            Some(c) if c.name() == crate::ethr::CLIENT => {
                bail!("ethr's client takes no program or args of its own")
            }
            Some(c) => crate::foreign::command_line(c, kind, entry, options),
        }
    }

    async fn run(&self, words: &[String], cancel: CancellationToken) -> Result<Report> {
        if words.first().map(String::as_str) == Some(super::vegeta_load::KIND) {
            return super::vegeta_load::run(words, cancel).await;
        }
        if words.get(1).map(String::as_str) == Some("peer") {
            if crate::foreign::parse(words)?.is_some() {
                return crate::foreign::run(words, cancel).await;
            }
            return crate::ethr::run(words, cancel).await;
        }
        run(words, cancel).await
    }

    fn program(&self) -> Option<std::path::PathBuf> {
        // This very binary: hosts on this machine (network namespaces) run the same build.
        std::env::current_exe().ok()
    }
}

/// The words of the command line for `kind` aimed at `entry` with `options` (vegeta's, for a
/// `vegeta` workload).
pub(crate) fn command_line(
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    if kind == super::vegeta_load::KIND {
        return super::vegeta_load::command_line(entry, options);
    }
    let mut words = vec!["wirespeed".to_string(), kind.to_string()];
    let Some(test) = TestKind::from_name(kind) else {
        bail!("{kind}: not a test kind a workload can be");
    };
    match test {
        TestKind::Http if entry.starts_with("http://") || entry.starts_with("https://") => {
            words.push(entry.into())
        }
        // HTTP/3 is https:// (QUIC is always encrypted).
        TestKind::Http if options.get("h3") == Some(&toml::Value::Boolean(true)) => {
            words.push(format!("https://{entry}/"))
        }
        TestKind::Http => words.push(format!("http://{entry}/")),
        // A system's entry HOST:PORT: its configuration at the well-known path.
        TestKind::Rpm => words.push(format!("http://{entry}/.well-known/nq")),
        // A DoH URL names the server, its port and the path: the entry says nothing more
        // (another client, dnsperf, takes the entry's HOST:PORT beside the URL).
        TestKind::Dns if options.contains_key("doh") => {}
        TestKind::Dns => {
            // `--dry-run` shows an address it cannot know yet as `<fixture.NAME.addr>`: its
            // host and port are shown the same way.
            let shown = entry
                .strip_prefix('<')
                .and_then(|e| e.strip_suffix(".addr>"))
                .map(|name| (format!("<{name}.host>"), format!("<{name}.port>")));
            let (host, port) = match &shown {
                Some((host, port)) => (host.as_str(), port.as_str()),
                None => entry
                    .rsplit_once(':')
                    .with_context(|| format!("dns entry {entry:?}: expected HOST:PORT"))?,
            };
            let host = host.trim_start_matches('[').trim_end_matches(']');
            words.extend(["--server".into(), host.into(), "--port".into(), port.into()]);
        }
        TestKind::Bandwidth
        | TestKind::Latency
        | TestKind::Cps
        | TestKind::Pps
        | TestKind::Ping
        | TestKind::Trace => words.push(entry.into()),
    }
    for (key, value) in options {
        let flag = if key.chars().count() == 1 { format!("-{key}") } else { format!("--{key}") };
        match value {
            toml::Value::Boolean(true) => words.push(flag),
            toml::Value::Boolean(false) => {}
            v => {
                let text = scalar_text(v).with_context(|| {
                    format!("option {key}: expected a word, number or true/false")
                })?;
                words.extend([flag, text]);
            }
        }
    }
    words.extend(["--no-save".into(), "--quiet".into()]);
    Ok(words)
}

/// The spec the test `words` describe (from [`command_line`]) resolves to, as it would run.
pub(crate) fn spec_of(words: &[String]) -> Result<wirespeed_model::TestSpec> {
    let cli = crate::flags::parse_from(words)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    let Some((_, test)) = cli.command.test() else {
        bail!("{}: not a test kind", words.get(1).map_or("", String::as_str))
    };
    Ok(test.client(env!("CARGO_PKG_VERSION"))?.spec())
}

/// Runs the test `words` describe (from [`command_line`]) in-process and returns its report.
async fn run(words: &[String], cancel: CancellationToken) -> Result<Report> {
    // The same command line a person would type, with its per-test format choices.
    let cli = crate::flags::parse_from(words)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    let Some((kind, test)) = cli.command.test().filter(|(kind, _)| kind.in_scenarios()) else {
        bail!("{}: not a test kind a workload can be", words.get(1).map_or("", String::as_str))
    };
    tracing::debug!(%kind, "workload");
    // Events are not shown while a scenario runs; the report is what is kept.
    let (tx, _rx) = unbounded_channel();
    let client = test.client(env!("CARGO_PKG_VERSION"))?;
    Ok(wirespeed_engine::kinds::run(client, tx, cancel).await?)
}
