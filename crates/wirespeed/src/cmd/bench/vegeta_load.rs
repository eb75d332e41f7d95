//! A workload whose load is vegeta's own (`kind = "vegeta"`), as rathole's benchmark made it:
//! `vegeta attack` (from PATH) against the system's entry for the workload's duration, at a
//! fixed rate or as fast as `max-workers` manage (`rate = 0`), its results read back as an HTTP
//! report (`wirespeed_report::vegeta::import`), so the same tunnel's figures under vegeta's load and under
//! wirespeed's sit side by side. Interrupted (the warm-up's end, Ctrl-C), vegeta gets SIGINT,
//! on which it stops and writes what it has. It runs as a child process of its own, so the
//! report keeps the CPU it used. The same attack makes an http workload's load for a system
//! whose `client` is vegeta (`crate::foreign::vegeta` maps the workload's options to these).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::units::parse_duration;
use wirespeed_model::Report;
use wirespeed_runner::matrix::scalar_text;

use wirespeed_report::vegeta::import::{self, Attack};

/// The first word of a vegeta workload's command line.
pub(crate) const KIND: &str = "vegeta";

/// The options a vegeta workload takes, each a `vegeta attack` flag of the same name.
const OPTIONS: &[&str] = &["rate", "duration", "max-workers", "workers", "timeout", "connections"];

/// vegeta's version (`vegeta -version`), labelled with the workloads it loads and the systems
/// whose client it is, when the scenario has any and vegeta is installed.
pub(super) fn version(
    loaded: &wirespeed_runner::Loaded,
) -> Option<wirespeed_runner::version::Version> {
    let workloads: Vec<&str> = loaded
        .scenario
        .workload
        .iter()
        .filter(|w| w.kind == KIND)
        .map(|w| w.name.as_str())
        .collect();
    let mut names: Vec<String> = Vec::new();
    if !workloads.is_empty() {
        names.push(format!("load of {}", workloads.join(", ")));
    }
    // And the systems whose client it is.
    let clients = loaded.plan.systems.iter().filter(|cell| {
        cell.client.as_ref().is_some_and(|c| c.name() == crate::foreign::VEGETA_CLIENT)
    });
    names.extend(clients.map(|cell| format!("client of {}", cell.name)));
    if names.is_empty() || wirespeed_runner::process::which("vegeta").is_none() {
        return None;
    }
    let label = names.join(", ");
    let mut v = wirespeed_runner::version::of_program(&label, "vegeta -version", Some("Version:"));
    v.systems = names;
    Some(v)
}

/// `vegeta URL -rate R -duration D …`: the words of a vegeta workload aimed at `entry`.
pub(crate) fn command_line(
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    let url = if entry.starts_with("http://") || entry.starts_with("https://") {
        entry.to_string()
    } else {
        format!("http://{entry}/")
    };
    let mut words = vec![KIND.to_string(), url];
    for (key, value) in options {
        if !OPTIONS.contains(&key.as_str()) {
            bail!("vegeta: no option {key:?} (it takes {})", OPTIONS.join(", "));
        }
        let text = scalar_text(value)
            .with_context(|| format!("option {key}: expected a word or number"))?;
        words.extend([format!("-{key}"), text]);
    }
    attack_of(&words)?;
    Ok(words)
}

/// What the words ask vegeta for, checked: `rate = 0` needs `max-workers`.
fn attack_of(words: &[String]) -> Result<(Attack, Vec<String>)> {
    let url = words.get(1).context("vegeta: no URL")?.clone();
    let flags = &words[2..];
    let value = |flag: &str| {
        flags.chunks(2).find(|p| p[0] == flag).and_then(|p| p.get(1)).map(String::as_str)
    };
    let seconds = |flag: &str, default: &str| {
        parse_duration(value(flag).unwrap_or(default))
            .map_err(|e| anyhow::anyhow!("vegeta {flag}: {e}"))
    };
    let rate_text = value("-rate").unwrap_or("50");
    let rate: f64 = rate_text
        .trim_end_matches("/s")
        .parse()
        .with_context(|| format!("vegeta -rate {rate_text:?}: expected requests per second"))?;
    if rate.fract() != 0.0 || rate < 0.0 {
        bail!("vegeta -rate {rate_text:?}: vegeta takes whole requests per second");
    }
    let max_workers =
        value("-max-workers").map(str::parse::<u16>).transpose().context("vegeta -max-workers")?;
    if rate == 0.0 && max_workers.is_none() {
        bail!("vegeta: rate = 0 (as fast as it can) needs max-workers, as vegeta attack does");
    }
    let duration = seconds("-duration", "10s")?;
    let timeout = seconds("-timeout", "30s")?;
    // vegeta reads a bare number as per second; its durations are Go's (`10s`, `1m30s`).
    let mut args: Vec<String> = vec!["attack".into(), "-rate".into(), format!("{}/s", rate as u64)];
    args.extend([
        "-duration".into(),
        go_duration(duration),
        "-timeout".into(),
        go_duration(timeout),
    ]);
    for flag in ["-max-workers", "-workers", "-connections"] {
        if let Some(v) = value(flag) {
            args.extend([flag.to_string(), v.to_string()]);
        }
    }
    let command = format!("vegeta {}", args.join(" "));
    let attack =
        Attack { url, rate, duration, max_workers: max_workers.unwrap_or(0), timeout, command };
    Ok((attack, args))
}

fn go_duration(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// Runs vegeta as the words say until it ends, `cancel` fires or it overruns; its results as a
/// report, with the CPU the kernel counted for `vegeta attack` (its load; the encoding after it
/// is not counted).
pub(crate) async fn run(words: &[String], cancel: CancellationToken) -> Result<Report> {
    let (attack, args) = attack_of(words)?;
    let scratch = Scratch::new()?;
    std::fs::write(&scratch.targets, format!("GET {}\n", attack.url))
        .with_context(|| format!("writing {}", scratch.targets.display()))?;
    let mut argv = args;
    for (flag, path) in [("-targets", &scratch.targets), ("-output", &scratch.results)] {
        argv.extend([flag.to_string(), path.display().to_string()]);
    }
    let limit = attack.duration + crate::foreign::OVERRUN;
    let ran = crate::foreign::child::run("vegeta", &argv, cancel.clone(), limit).await?;
    if ran.overran {
        let over = crate::foreign::OVERRUN;
        bail!("{} did not end within {over:?} of its planned time: stopped", attack.command);
    }
    if !ran.status.success() && !cancel.is_cancelled() {
        bail!("{} failed ({}): {}", attack.command, ran.status, ran.last_words());
    }
    let text = encode(&scratch.results).await?;
    let meta_at = |began| wirespeed_engine::run_meta(env!("CARGO_PKG_VERSION"), began, None);
    let mut report = import::report(&text, &attack, meta_at)?;
    report.meta.load_cpu = Some(ran.load_cpu());
    Ok(report)
}

/// vegeta's target file and results file, removed when the run is done with them.
struct Scratch {
    targets: std::path::PathBuf,
    results: std::path::PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch> {
        let stem = format!("wirespeed-vegeta-{}-{:x}", std::process::id(), rand_suffix());
        let dir = std::env::temp_dir();
        Ok(Scratch {
            targets: dir.join(format!("{stem}.targets")),
            results: dir.join(format!("{stem}.bin")),
        })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.targets);
        let _ = std::fs::remove_file(&self.results);
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// `vegeta encode --to json RESULTS`: the result lines.
async fn encode(results: &std::path::Path) -> Result<String> {
    let out = tokio::process::Command::new("vegeta")
        .args(["encode", "--to", "json"])
        .arg(results)
        .env("TZ", "UTC")
        .kill_on_drop(true)
        .output()
        .await
        .context("vegeta encode did not start")?;
    if !out.status.success() {
        bail!(
            "vegeta encode failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("vegeta encode wrote something other than text")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, toml::Value)]) -> BTreeMap<String, toml::Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn options_become_vegeta_flags_and_are_checked() {
        let words = command_line(
            "127.0.0.1:8080",
            &options(&[("rate", 1000.into()), ("duration", "30s".into())]),
        )
        .unwrap();
        let (attack, args) = attack_of(&words).unwrap();
        assert_eq!(attack.url, "http://127.0.0.1:8080/");
        assert_eq!(args.join(" "), "attack -rate 1000/s -duration 30000ms -timeout 30000ms");
        let closed = options(&[("rate", 0.into()), ("max-workers", 48.into())]);
        let (attack, args) = attack_of(&command_line("h:1", &closed).unwrap()).unwrap();
        assert_eq!((attack.rate, attack.max_workers), (0.0, 48));
        assert!(args.join(" ").ends_with("-max-workers 48"));
        let e = command_line("h:1", &options(&[("rate", 0.into())])).unwrap_err();
        assert!(e.to_string().contains("needs max-workers"), "{e}");
        let e = command_line("h:1", &options(&[("connections-per-host", 1.into())])).unwrap_err();
        assert!(e.to_string().contains("no option"), "{e}");
    }
}
