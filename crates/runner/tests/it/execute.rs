//! A scenario run by the library, without the binary: the fixture starts in-process, a
//! system's process (socat relaying to the fixture) starts, is probed until ready and is gone
//! when its run ends; a system whose program is missing is skipped; each run's files are kept,
//! and a resumed run keeps the finished runs instead of running them again. The workload is a
//! real latency test through the engine.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::latency::client::LatencyOptions;
use wirespeed_engine::kinds::Client;
use wirespeed_engine::net::handshake::Endpoint;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::rules::Protocol;
use wirespeed_model::Report;
use wirespeed_runner::execute::{run_all, Outcome, Places, Workloads};
use wirespeed_runner::process::which;

const SCENARIO: &str = r#"
[scenario]
name = "relay"

[run]
repeat = 1

[[fixture]]
name = "sink"
kind = "bandwidth-sink"

[[system]]
name = "direct"
entry = "{fixture.sink.addr}"

[[system]]
name = "socat"
requires = ["socat"]
entry = "127.0.0.1:{port.entry}"
process = [
  { role = "relay", cmd = "socat TCP-LISTEN:{port.entry},bind=127.0.0.1,reuseaddr,fork TCP:{fixture.sink.addr}", ready = { tcp = "{port.entry}" } },
]

[[system]]
name = "absent"
requires = ["wirespeed-no-such-program"]
entry = "127.0.0.1:9"

[[workload]]
name = "rtt"
kind = "latency"
"#;

/// Latency tests of 300 ms, run through the engine; counts how many ran.
#[derive(Default)]
struct ShortLatency {
    runs: AtomicUsize,
}

impl Workloads for ShortLatency {
    fn command_line(
        &self,
        _: Option<&wirespeed_runner::scenario::ClientChoice>,
        kind: &str,
        entry: &str,
        _: &BTreeMap<String, toml::Value>,
    ) -> Result<Vec<String>> {
        Ok(vec![kind.into(), entry.into()])
    }

    async fn run(&self, words: &[String], cancel: CancellationToken) -> Result<Report> {
        self.runs.fetch_add(1, Relaxed);
        let (host, port) = words[1].rsplit_once(':').context("HOST:PORT")?;
        let mut spec = LatencySpec::new(host, Protocol::Tcp);
        spec.duration_ns = 300_000_000;
        spec.interval_ns = 100_000_000;
        let endpoint = Endpoint {
            host: host.into(),
            port: port.parse()?,
            family: None,
            bind: None,
            token: None,
            connect_timeout: Duration::from_secs(5),
            version: "test".into(),
        };
        let (tx, _rx) = unbounded_channel();
        let client = Client::Latency(LatencyOptions { spec, endpoint, member: Default::default() });
        Ok(wirespeed_engine::kinds::run(client, tx, cancel).await?)
    }
}

/// Processes still running in `dir` (every system process runs in its run's directory).
fn running_in(dir: &Path) -> Vec<u32> {
    wirespeed_runner::process::processes()
        .into_iter()
        .filter(|p| {
            std::fs::read_link(format!("/proc/{}/cwd", p.pid)).is_ok_and(|c| c.starts_with(dir))
        })
        .map(|p| p.pid)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_start_systems_skip_missing_programs_keep_files_and_resume() {
    let has_socat = which("socat").is_some();
    if !has_socat && std::env::var_os("WIRESPEED_REQUIRE_PEERS").is_some() {
        panic!("socat is required here: apt-get install socat");
    }
    let loaded = wirespeed_runner::parse("relay.toml", SCENARIO, &["latency"]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = std::path::absolute(tmp.path()).unwrap();
    let places = Places { scenario_dir: &out, out: &out, resume: false, ssh_config: None };
    let workloads = ShortLatency::default();
    let mut seen = Vec::new();
    let results =
        run_all(&loaded, &places, &workloads, CancellationToken::new(), |plan, run, _| {
            seen.push(plan.run_id(run))
        })
        .await
        .unwrap();
    assert_eq!(seen.len(), 3, "{seen:?}");
    let by_system = |name: &str| {
        let i = loaded.plan.systems.iter().position(|s| s.name == name).unwrap();
        &results.iter().find(|(r, _)| r.system == i).unwrap().1
    };
    let rtt = |o: &Outcome| match o {
        Outcome::Done(report, ..) => report.headline().value,
        other => panic!("{other:?}"),
    };
    assert!(rtt(by_system("direct")) > 0.0);
    match by_system("socat") {
        Outcome::Skipped(why) if !has_socat => assert!(why.contains("socat"), "{why}"),
        o => assert!(rtt(o) > 0.0),
    }
    assert!(
        matches!(by_system("absent"), Outcome::Skipped(why) if why == "wirespeed-no-such-program is not installed"),
        "{:?}",
        by_system("absent")
    );
    let ran = workloads.runs.load(Relaxed);
    assert_eq!(ran, if has_socat { 2 } else { 1 });
    assert!(running_in(&out).is_empty(), "a system process outlived its run");
    let done: Vec<_> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|d| d.join("report.json").exists())
        .collect();
    assert_eq!(done.len(), ran);
    assert!(done.iter().all(|d| d.join("samples.json").exists()));

    // Resumed: the finished runs are kept, not run again; the skipped one is looked at again.
    let places = Places { resume: true, ..places };
    let again = run_all(&loaded, &places, &workloads, CancellationToken::new(), |_, _, _| {})
        .await
        .unwrap();
    let kept = again.iter().filter(|(_, o)| matches!(o, Outcome::Kept(..))).count();
    assert_eq!((kept, workloads.runs.load(Relaxed)), (ran, ran));
}
