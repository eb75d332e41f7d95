//! wirespeed's own load made by several processes of this build (a system's `client = { name =
//! "wirespeed", members = N }`): each a member of one run (`--members N --index I --run-id ID
//! --start-at T`), all on the load's CPUs, meeting at a start a moment ahead, and their reports
//! merged into the run's as `wirespeed merge` merges them. So a study puts the members' split
//! and merge beside one process making the same load on the same cores: what a distributed
//! run adds or loses. The workload's threads are divided among the members (at least one
//! each), so both sides run as many event loops.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::report::LoadCpu;
use wirespeed_model::Report;

use super::{build, child, OVERRUN};

/// How far ahead of now the members' common start is: time for every process to start and
/// prepare, on a busy machine too, before its load begins.
const LEAD: Duration = Duration::from_secs(2);

/// The words of `kind` with `options` made by `members` processes of this build against
/// `entry`: another build's words (the members' own, `wirespeed KIND --format json …`) with
/// `--members N` among the peer's flags.
pub(crate) fn command_line(
    members: u16,
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    let mut words = build::command_line(build::CLIENT, kind, entry, options)?;
    let end = words.iter().position(|w| w == "--").context("the peer's words have no --")?;
    words.splice(end..end, ["--members".to_string(), members.to_string()]);
    Ok(words)
}

/// Runs `argv` (a member's words but for its place in the run) as `members` processes that
/// meet at a common start, until all end, `cancel` fires or one overruns; their reports
/// merged, with the CPU they used together.
pub(crate) async fn run(
    like: &[String],
    argv: &[String],
    members: u16,
    cancel: CancellationToken,
) -> Result<Report> {
    let spec = crate::cmd::bench_workload_spec(like)?;
    let planned = Duration::from_nanos(spec.planned_ns().unwrap_or(0));
    let start = SystemTime::now() + LEAD;
    let since_epoch = start.duration_since(UNIX_EPOCH).unwrap_or_default();
    let run_id = format!("bench-{}-{}", std::process::id(), since_epoch.as_nanos());
    let start_at = format!("@{:.3}", since_epoch.as_secs_f64());
    let each: Vec<Vec<String>> =
        (0..members).map(|index| member_words(argv, members, index, &run_id, &start_at)).collect();
    let command = format!("{} (members 0 to {})", each[0].join(" "), members - 1);
    let limit = LEAD + planned + OVERRUN;
    let tasks: Vec<_> = each
        .into_iter()
        .map(|words| {
            let cancel = cancel.clone();
            tokio::spawn(async move { child::run(&words[0], &words[1..], cancel, limit).await })
        })
        .collect();
    // Every member is awaited before any is judged: each ends by itself within its limit, and
    // none is left running when one failed.
    let mut ran = Vec::new();
    for task in tasks {
        ran.push(task.await);
    }
    let mut reports = Vec::new();
    let mut cpu = LoadCpu::default();
    for (index, ran) in ran.into_iter().enumerate() {
        let ran = ran.context("a member's task")?.with_context(|| format!("member {index}"))?;
        let member = format!("member {index} of {command}");
        let report = build::printed_report(&ran, &member, cancel.is_cancelled())?;
        let used = ran.load_cpu();
        cpu.user_ns += used.user_ns;
        cpu.system_ns += used.system_ns;
        cpu.wall_ns = cpu.wall_ns.max(used.wall_ns);
        reports.push((format!("member {index}"), report));
    }
    let mut merged = wirespeed_model::merge::merge(&reports, false)
        .with_context(|| format!("merging the members of {command}"))?;
    merged.meta.notes.insert(
        0,
        format!("load made by {members} members of one run, processes of this build, merged ({command})"),
    );
    merged.meta.load_cpu = Some(cpu);
    Ok(merged)
}

/// Member `index`'s words: `argv` with the workload's threads divided among the members (at
/// least one each) and its place in the run.
fn member_words(
    argv: &[String],
    members: u16,
    index: u16,
    run_id: &str,
    start_at: &str,
) -> Vec<String> {
    let mut words = argv.to_vec();
    if let Some(at) = words.iter().position(|w| w == "--threads") {
        if let Some(threads) = words.get(at + 1).and_then(|t| t.parse::<u32>().ok()) {
            words[at + 1] = (threads / u32::from(members)).max(1).to_string();
        }
    }
    words.extend(
        [
            "--members",
            &members.to_string(),
            "--index",
            &index.to_string(),
            "--run-id",
            run_id,
            "--start-at",
            start_at,
            // The members share this machine's clock: only the kernel's own doubt is checked.
            "--max-clock-error",
            "1m",
        ]
        .map(String::from),
    );
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_member_takes_its_place_and_a_share_of_the_threads() {
        let options: BTreeMap<String, toml::Value> =
            [("rate".to_string(), toml::Value::from(20000)), ("threads".into(), 4.into())].into();
        let words = command_line(4, "http", "127.0.0.1:9", &options).unwrap();
        let at = words.iter().position(|w| w == "--").unwrap();
        assert_eq!(&words[at - 2..at], ["--members", "4"]);
        let argv = &words[at + 1..];
        assert_eq!(argv[..4], ["wirespeed", "http", "--format", "json"]);
        let second = member_words(argv, 4, 1, "r", "@1.000").join(" ");
        assert!(second.contains("--threads 1 "), "{second}");
        assert!(
            second.ends_with(
                "--members 4 --index 1 --run-id r --start-at @1.000 --max-clock-error 1m"
            ),
            "{second}"
        );
        // Fewer threads than members: one each.
        let two = member_words(argv, 8, 0, "r", "@1.000").join(" ");
        assert!(two.contains("--threads 1 "), "{two}");
    }
}
