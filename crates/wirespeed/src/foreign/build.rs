//! Another build of wirespeed making a workload's load (a system's `client = { name =
//! "wirespeed", program = "/path/to/other/wirespeed" }`), so that two builds — a commit and the
//! one before it, or one commit built two ways — are compared as any two clients are: the same
//! workload, alternating runs, both pinned alike. Its command line is ours for the workload with
//! its own program and `--format json`; what it prints is a wirespeed report already, read as
//! it is, with the CPU its process used (the kernel's account) and a note naming the build.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::Report;

use super::{child, OVERRUN};

/// The client's name in a scenario: wirespeed's own, here with another program.
pub(crate) const CLIENT: &str = wirespeed_runner::matrix::OWN_CLIENT;

/// The words of `kind` with `options` made by the build at `program` against `entry`:
/// `wirespeed peer --client wirespeed --like JSON -- PROGRAM KIND --format json …`.
pub(crate) fn command_line(
    program: &str,
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    let like = crate::cmd::bench_workload_line(kind, entry, options)?;
    let mut words = super::peer_words(CLIENT, &like)?;
    words.push(program.to_string());
    words.push(kind.to_string());
    words.extend(["--format".into(), "json".into()]);
    // Ours but for `--quiet`: a build from before that flag would refuse it, and JSON on
    // stdout says nothing else.
    words.extend(like.into_iter().skip(2).filter(|w| w != "--quiet"));
    Ok(words)
}

/// Runs the other build's test `argv` (ours, `like`, with its program) until it ends, `cancel`
/// fires or it overruns; its report with the CPU it used.
pub(crate) async fn run(
    like: &[String],
    argv: &[String],
    cancel: CancellationToken,
) -> Result<Report> {
    let spec = crate::cmd::bench_workload_spec(like)?;
    let command = argv.join(" ");
    let planned = Duration::from_nanos(spec.planned_ns().unwrap_or(0));
    let ran = child::run(&argv[0], &argv[1..], cancel.clone(), planned + OVERRUN).await?;
    let mut report = printed_report(&ran, &command, cancel.is_cancelled())?;
    report.meta.notes.insert(0, format!("load made by another build of wirespeed ({command})"));
    report.meta.load_cpu = Some(ran.load_cpu());
    Ok(report)
}

/// The report a wirespeed process (`command`) printed as JSON, once it has ended; its failure
/// when it overran, or failed with nothing printed and was not `stopped`.
pub(super) fn printed_report(ran: &child::Ran, command: &str, stopped: bool) -> Result<Report> {
    if ran.overran {
        bail!("{command} did not end within {OVERRUN:?} of its planned time: stopped");
    }
    if !ran.status.success() && !stopped && ran.stdout.trim().is_empty() {
        bail!("{command} failed ({}): {}", ran.status, ran.last_words());
    }
    serde_json::from_str(&ran.stdout).with_context(|| {
        format!(
            "{command} printed no report this build reads (is it a wirespeed of another schema?)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_other_build_runs_our_words_with_its_program_as_json() {
        let options: BTreeMap<String, toml::Value> =
            [("time".to_string(), toml::Value::from("3s")), ("udp".into(), true.into())].into();
        let words = command_line("/tmp/old/wirespeed", "latency", "127.0.0.1:9", &options).unwrap();
        let at = words.iter().position(|w| w == "--").unwrap();
        assert_eq!(
            words[at + 1..].join(" "),
            "/tmp/old/wirespeed latency --format json 127.0.0.1:9 --time 3s --udp --no-save"
        );
        assert_eq!(&words[..4], ["wirespeed", "peer", "--client", "wirespeed"]);
    }
}
