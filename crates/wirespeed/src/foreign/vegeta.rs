//! vegeta's client making an http workload's load (a system's `client = "vegeta"`), so one
//! HTTP scenario can put vegeta in its client axis beside wrk, oha and our own: the workload's
//! options become `vegeta attack`'s (a closed model of N connections is `-rate 0 -max-workers
//! N`, as rathole's benchmark ran it; an open model's rate is `-rate`), and the attack itself
//! is the `vegeta` workload's (`crate::cmd::vegeta_run`): a child process whose CPU the report
//! keeps, its results read back figure by figure.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::Report;

/// The client's name in a scenario.
pub(crate) const CLIENT: &str = "vegeta";

/// The http options vegeta's client takes, each with the `vegeta attack` flag it becomes.
const OPTIONS: &[(&str, &str)] = &[
    ("connections", "max-workers"),
    ("rate", "rate"),
    ("duration", "duration"),
    ("timeout", "timeout"),
];

/// Ours where vegeta's differ: with no rate, as many requests as 10 connections manage (ours)
/// rather than vegeta's 50 a second.
const CONNECTIONS: i64 = 10;

/// The words of `kind` with `options` made by vegeta's client against `entry`: `wirespeed peer
/// --client vegeta --like JSON -- vegeta URL -rate …` (a vegeta workload's words).
pub(crate) fn command_line(
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    if kind != "http" {
        bail!("vegeta's client makes http tests only, not {kind}");
    }
    let mut attack: BTreeMap<String, toml::Value> = BTreeMap::new();
    for (key, value) in options {
        let Some((_, flag)) = OPTIONS.iter().find(|(ours, _)| ours == key) else {
            let takes: Vec<&str> = OPTIONS.iter().map(|(ours, _)| *ours).collect();
            bail!(
                "vegeta's client has no equivalent of http --{key} (it takes {})",
                takes.join(", ")
            );
        };
        attack.insert(flag.to_string(), value.clone());
    }
    if !attack.contains_key("rate") {
        attack.insert("rate".into(), 0.into());
        attack.entry("max-workers".into()).or_insert(CONNECTIONS.into());
    }
    let like = crate::cmd::bench_workload_line(kind, entry, options)?;
    let mut words = super::peer_words(CLIENT, &like)?;
    words.extend(crate::cmd::vegeta_line(entry, &attack)?);
    Ok(words)
}

/// Runs the attack `argv` (a vegeta workload's words) describes; its report, vegeta's figures
/// with the CPU it used, says whose load it was.
pub(crate) async fn run(argv: &[String], cancel: CancellationToken) -> Result<Report> {
    let mut report = crate::cmd::vegeta_run(argv, cancel).await?;
    report.meta.notes.insert(0, format!("load made by vegeta's client ({})", argv.join(" ")));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, toml::Value)]) -> BTreeMap<String, toml::Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    /// The words after `--`, as one line.
    fn attack(words: &[String]) -> String {
        let at = words.iter().position(|w| w == "--").unwrap();
        words[at + 1..].join(" ")
    }

    #[test]
    fn connections_are_workers_of_a_closed_model_and_a_rate_is_an_open_one() {
        let closed = options(&[("connections", 48.into()), ("duration", "3s".into())]);
        let words = command_line("http", "127.0.0.1:80", &closed).unwrap();
        assert_eq!(
            attack(&words),
            "vegeta http://127.0.0.1:80/ -duration 3s -max-workers 48 -rate 0"
        );
        assert!(words.join(" ").contains(r#"--like ["wirespeed","http","http://127.0.0.1:80/""#));
        let open = options(&[("rate", 2000.into())]);
        assert_eq!(
            attack(&command_line("http", "h:1", &open).unwrap()),
            "vegeta http://h:1/ -rate 2000"
        );
        // Neither: as many as our default connections manage.
        let words = command_line("http", "h:1", &options(&[])).unwrap();
        assert_eq!(attack(&words), "vegeta http://h:1/ -max-workers 10 -rate 0");
    }

    #[test]
    fn what_vegeta_cannot_do_is_refused_by_name() {
        let e = command_line("http", "h:1", &options(&[("h2", true.into())])).unwrap_err();
        assert!(e.to_string().contains("no equivalent of http --h2"), "{e}");
        let e = command_line("dns", "h:1", &options(&[])).unwrap_err();
        assert!(e.to_string().contains("http tests only"), "{e}");
    }
}
