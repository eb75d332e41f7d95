//! `wirespeed bench` running a scenario for real: a direct path to a fixture, `wirespeed
//! server` and a socat proxy as systems under test, a system whose program is missing (skipped,
//! not failed), one that never becomes ready and one that dies under load (each fails its runs,
//! the others go on), and Ctrl-C in the middle. Every system process carries a marker in its
//! environment, so the test can tell that none outlived its run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

/// Live processes whose environment holds `marker`.
fn marked(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie =
                stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                    env.split(|b| *b == 0)
                        .any(|kv| kv == format!("WS_BENCH_MARK={marker}").as_bytes())
                })
        })
        .collect()
}

/// The scenario; `direct` puts a run straight at the fixture first.
fn scenario(marker: &str, seconds: &str, direct: bool) -> String {
    let direct =
        if direct { "[[system]]\nname = \"direct\"\nentry = \"{fixture.sink.addr}\"" } else { "" };
    format!(
        r#"
[scenario]
name = "hygiene"
[run]
repeat = 2
[[fixture]]
name = "sink"
kind = "bandwidth-sink"
{direct}
[[system]]
name = "wirespeed"
entry = "127.0.0.1:{{port.srv}}"
env = {{ WS_BENCH_MARK = "{marker}" }}
process = [ {{ role = "server", cmd = "{bin} server -B 127.0.0.1 -p {{port.srv}}", ready = {{ tcp = "{{port.srv}}" }} }} ]
version = {{ cmd = "{bin} --version", expect = "wirespeed" }}
[[system]]
name = "socat"
requires = ["socat"]
version = {{ cmd = "socat -V", expect = "socat version 0.0.0" }}
entry = "127.0.0.1:{{port.entry}}"
env = {{ WS_BENCH_MARK = "{marker}" }}
process = [ {{ role = "proxy", cmd = "socat TCP4-LISTEN:{{port.entry}},bind=127.0.0.1,reuseaddr,fork TCP4:{{fixture.sink.addr}}", ready = {{ tcp = "{{port.entry}}" }} }} ]
[[system]]
name = "missing"
requires = ["no-such-tunnel-program"]
entry = "127.0.0.1:{{port.e}}"
[[system]]
name = "never-ready"
entry = "127.0.0.1:{{port.e}}"
env = {{ WS_BENCH_MARK = "{marker}" }}
process = [ {{ role = "srv", cmd = "sh -c 'echo starting; sleep 60 & wait'", ready = {{ tcp = "{{port.e}}", timeout = "300ms" }} }} ]
[[system]]
name = "dies"
entry = "127.0.0.1:{{port.entry}}"
env = {{ WS_BENCH_MARK = "{marker}" }}
process = [ {{ role = "proxy", cmd = "timeout 0.5 socat TCP4-LISTEN:{{port.entry}},bind=127.0.0.1,reuseaddr,fork TCP4:{{fixture.sink.addr}}", ready = {{ tcp = "{{port.entry}}" }} }} ]
[[workload]]
name = "rtt"
kind = "latency"
time = "{seconds}"
[report]
baseline = "wirespeed"
"#,
        bin = common::BIN
    )
}

#[test]
fn runs_go_on_past_skipped_and_failed_systems_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("run-{}", std::process::id());
    let file = dir.path().join("s.toml");
    std::fs::write(&file, scenario(&marker, "1s", true)).unwrap();
    let out_dir = dir.path().join("out");
    let out = common::client(&[
        "bench",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--no-save",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(5),
        "failed runs give exit 5: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each program's version first, and a warning where it is not the one expected.
    assert!(text.lines().any(|l| l.starts_with("version  wirespeed: ")), "{text}");
    let socat = text.lines().find(|l| l.starts_with("warning: version socat: ")).expect(&text);
    assert!(socat.contains("not the expected \"socat version 0.0.0\""), "{socat}");
    let lines: Vec<&str> =
        text.lines().filter(|l| !l.starts_with("version") && !l.starts_with("warning")).collect();
    // Interleaved: every system once per repeat, in order.
    let ids: Vec<&str> = lines.iter().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert_eq!(
        &ids[..6],
        [
            "direct/rtt/r1",
            "wirespeed/rtt/r1",
            "socat/rtt/r1",
            "missing/rtt/r1",
            "never-ready/rtt/r1",
            "dies/rtt/r1"
        ]
    );
    let status = |id: &str| {
        lines.iter().find(|l| l.contains(id)).map(|l| l.split_whitespace().next().unwrap()).unwrap()
    };
    for r in ["r1", "r2"] {
        assert_eq!(status(&format!("direct/rtt/{r}")), "done");
        assert_eq!(status(&format!("wirespeed/rtt/{r}")), "done");
        assert_eq!(status(&format!("socat/rtt/{r}")), "done");
        assert_eq!(status(&format!("missing/rtt/{r}")), "skipped");
        assert_eq!(status(&format!("never-ready/rtt/{r}")), "FAILED");
        assert_eq!(status(&format!("dies/rtt/{r}")), "FAILED");
    }
    assert!(text.contains("(no-such-tunnel-program is not installed)"), "{text}");
    assert!(
        text.contains("was not ready") && text.contains("starting"),
        "the probe and the log's end: {text}"
    );
    assert!(
        text.contains(
            "12 runs: 6 done, 0 kept, 2 skipped, 0 interrupted, 4 failed; 0 checks failed"
        ),
        "{text}"
    );
    // Each finished run keeps its report, its samples (by role) and its processes' logs.
    let run = out_dir.join("runs/socat_rtt_r1");
    let report: wirespeed_model::Report =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(report.kind().name(), "latency");
    let samples: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(run.join("samples.json")).unwrap()).unwrap();
    assert!(!samples.is_empty() && samples.iter().all(|s| s["role"] == "proxy"), "{samples:?}");
    assert!(samples.iter().any(|s| s["rss_bytes"].as_u64().unwrap() > 0));
    assert!(run.join("proxy.log").exists());
    // The summary: a row per system, medians, % of the baseline, runs that counted.
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("| System | Round trip p50 (median) |"), "{md}");
    assert!(
        md.contains("## Versions") && md.contains("socat version 0.0.0 (NOT what it printed)"),
        "{md}"
    );
    assert!(md.contains("| missing | - | - | - | 0/2, 2 skipped |"), "{md}");
    assert!(md.contains("| dies | - | - | - | 0/2, 2 failed |"), "{md}");
    assert!(md.lines().any(|l| l.starts_with("| socat |") && l.contains("proxy ")), "{md}");
    let csv = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 6, "{csv}");
    assert!(text.contains("## rtt"), "the summary is printed too: {text}");
    // Charts: bars per system, memory over time, peak memory by role, as SVG and in HTML.
    let svg = std::fs::read_to_string(out_dir.join("summary.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    assert!(texts.contains(&"rtt: Round trip p50 (median of repeats)"), "{texts:?}");
    assert!(texts.contains(&"rtt: memory over time (first run)"), "{texts:?}");
    assert!(texts.contains(&"Peak memory by system"), "{texts:?}");
    let html = std::fs::read_to_string(out_dir.join("summary.html")).unwrap();
    assert_eq!(html.matches("<canvas").count(), 3);
    assert!(marked(&marker).is_empty(), "processes outlived their runs: {:?}", marked(&marker));
}

#[test]
fn ctrl_c_in_the_middle_stops_everything() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("int-{}", std::process::id());
    let file = dir.path().join("s.toml");
    std::fs::write(&file, scenario(&marker, "20s", false)).unwrap();
    let child = Command::new(common::BIN)
        .args([
            "bench",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--no-save",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first system's server is up (its run then takes 20 s).
    let t0 = Instant::now();
    while marked(&marker).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the system never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The system is up and its 20 s run under way: any moment from here is the middle.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    // The cut run is said to be so and counted nowhere (it was "done", in the median).
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("stopped  ") && text.contains("not counted"), "{text}");
    assert!(text.contains("0 done") && text.contains("1 interrupted"), "{text}");
    let t0 = Instant::now();
    while !marked(&marker).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "processes outlived Ctrl-C: {:?}",
            marked(&marker)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn finished_runs_are_saved_checked_and_kept_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    saved_checked_and_kept(dir, db.to_str().unwrap());
}

/// The same, saving to a shared PostgreSQL database.
#[test]
fn finished_runs_are_saved_to_postgres_and_kept_on_resume() {
    let Some(pg) = wirespeed_testkit::postgres::TestPostgres::start() else { return };
    saved_checked_and_kept(tempfile::tempdir().unwrap(), &pg.url());
}

/// A scenario of 2 runs and 2 failing checks, run into `db`, then resumed.
fn saved_checked_and_kept(dir: tempfile::TempDir, db: &str) {
    let location = wirespeed_store::Location::parse(db).unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        r#"
[scenario]
name = "checked"
[run]
repeat = 2
[[fixture]]
name = "sink"
kind = "bandwidth-sink"
[[system]]
name = "direct"
entry = "{fixture.sink.addr}"
[[workload]]
name = "rtt"
kind = "latency"
time = "0.5s"
[[check]]
workload = "rtt"
expr = "rtt_p99_ns > 0"
[[check]]
expr = "p99 < 1ns"
"#,
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
        args.extend(["--db", db]);
        args.extend(extra);
        common::client(&args)
    };
    let out = bench(&[]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(11), "a failed check: {text}");
    // The figure in its unit ("p99 is 28927" said nothing of what 28927 was).
    let failed = text.lines().find(|l| l.contains("direct/rtt/r1  p99 < 1ns: failed")).unwrap();
    assert!(failed.contains("(p99 is ") && failed.ends_with("s)"), "{failed}");
    assert!(!text.contains("rtt_p99_ns > 0"), "a passing check says nothing: {text}");
    assert!(
        text.contains(
            "2 runs: 2 done, 0 kept, 0 skipped, 0 interrupted, 0 failed; 2 checks failed"
        ),
        "{text}"
    );
    let store = wirespeed_store::Store::open_at(&location).unwrap();
    let saved = store.list(&wirespeed_store::RunFilter::default()).unwrap();
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[0].tag.as_deref(), Some("checked direct/rtt/r2"));
    drop(store);

    // Resumed: nothing runs again, nothing is saved twice, the checks are judged again.
    let out = bench(&["--resume"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(11));
    assert!(text.contains("kept     direct/rtt/r1"), "{text}");
    assert!(text.contains("2 runs: 0 done, 2 kept"), "{text}");
    let store = wirespeed_store::Store::open_at(&location).unwrap();
    assert_eq!(store.count().unwrap(), 2);
}

#[test]
fn a_warm_up_loads_the_system_first_and_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[scenario]
name = "warm"
[run]
repeat = 1
warmup = "300ms"
cooldown = "100ms"
[[system]]
name = "ws"
entry = "127.0.0.1:{{port.srv}}"
process = [ {{ role = "server", cmd = "{bin} server -B 127.0.0.1 -p {{port.srv}}", ready = {{ tcp = "{{port.srv}}" }} }} ]
[[workload]]
name = "rtt"
kind = "latency"
time = "0.5s"
"#,
            bin = common::BIN
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = common::client(&[
        "bench",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--no-save",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // The server saw two tests: the warm-up and the measured one; the report is the second's.
    let log = std::fs::read_to_string(out_dir.join("runs/ws_rtt_r1/server.log")).unwrap();
    assert_eq!(log.matches("latency test accepted").count(), 2, "{log}");
    let report: wirespeed_model::Report = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("runs/ws_rtt_r1/report.json")).unwrap(),
    )
    .unwrap();
    let wirespeed_model::ReportBody::Latency(l) = &report.body else { panic!("{report:?}") };
    assert_eq!(l.spec.duration_ns, 500_000_000);
    // Sampled at the end too, so even a run shorter than the interval shows the CPU it used.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("0.00 s CPU"), "{text}");
}

#[test]
fn a_second_runner_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        "[scenario]\nname = \"x\"\n[[fixture]]\nname = \"sink\"\nkind = \"bandwidth-sink\"\n[[system]]\nname = \"direct\"\nentry = \"{fixture.sink.addr}\"\n[[workload]]\nname = \"rtt\"\nkind = \"latency\"\ntime = \"0.2s\"\n[run]\nrepeat = 1\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    // Another runner holds the directory.
    let held = std::fs::File::create(out_dir.join(".lock")).unwrap();
    // SAFETY: flock(2) on a descriptor `held` owns.
    let locked = unsafe {
        libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX | libc::LOCK_NB)
    };
    assert_eq!(locked, 0);
    let args = ["bench", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--no-save"];
    let out = common::client(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is in use by another `wirespeed bench`"), "{err}");
    assert!(!out_dir.join("runs").exists(), "nothing was run");
    // Released, the same command runs.
    drop(held);
    let out = common::client(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A workload may need a program of its own (a load generator such as vegeta): without it,
/// that workload's runs are skipped with the reason, and the others run.
#[test]
fn a_workload_whose_program_is_missing_is_skipped_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.toml");
    let text = r#"
[scenario]
name = "workload-requires"
[[fixture]]
name = "sink"
kind = "bandwidth-sink"
[[system]]
name = "direct"
entry = "{fixture.sink.addr}"
[[workload]]
name = "rtt"
kind = "latency"
time = "300ms"
[[workload]]
name = "elsewhere"
kind = "latency"
requires = ["no-such-load-program"]
time = "300ms"
"#;
    std::fs::write(&file, text).unwrap();
    let list = common::client(&["bench", file.to_str().unwrap(), "--list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("workload elsewhere (latency time=300ms)  (needs no-such-load-program)"),
        "{listed}"
    );
    let out_dir = dir.path().join("out");
    let out = common::client(&[
        "bench",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--no-save",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.lines().any(|l| l.starts_with("done") && l.contains("direct/rtt/r1")), "{text}");
    let skipped = text.lines().find(|l| l.contains("direct/elsewhere/r1")).expect(&text);
    assert!(skipped.starts_with("skipped"), "{skipped}");
    assert!(skipped.contains("no-such-load-program is not installed"), "{skipped}");
}

/// The first CPU this process may run on (a container's cpuset need not hold CPU 0).
fn first_cpu() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap();
    list.trim().split([',', '-']).next().unwrap().to_string()
}

#[test]
fn pinned_roles_and_loads_run_on_their_cpus_alone() {
    let cpu = first_cpu();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let scenario = |cpus: &str| {
        format!(
            r#"
[scenario]
name = "pinned"
[run]
repeat = 1
[[system]]
name = "ws"
entry = "127.0.0.1:{{port.srv}}"
process = [
  {{ role = "server", cmd = "{bin} server -B 127.0.0.1 -p {{port.srv}}", cpus = "{cpus}", ready = {{ tcp = "{{port.srv}}" }} }},
  {{ role = "probe", cmd = "sh -c 'grep Cpus_allowed_list /proc/self/status; exec sleep 60'", cpus = "{cpus}", ready = {{ log = "Cpus_allowed_list" }} }},
]
[[workload]]
name = "rtt"
kind = "latency"
time = "0.5s"
cpus = "{cpus}"
"#,
            bin = common::BIN
        )
    };
    let bench = |text: String, out: &str| {
        std::fs::write(&file, text).unwrap();
        let out_dir = dir.path().join(out);
        let ran = common::client(&[
            "bench",
            file.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--no-save",
        ]);
        (ran, out_dir)
    };
    let (out, out_dir) = bench(scenario(&cpu), "pinned");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // The role (and what it started) ran on the one CPU it was given.
    let probe = std::fs::read_to_string(out_dir.join("runs/ws_rtt_r1/probe.log")).unwrap();
    assert_eq!(probe.trim(), format!("Cpus_allowed_list:\t{cpu}"));
    // The pinned load ran as a process of its own, whose CPU the report keeps.
    let report: wirespeed_model::Report = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("runs/ws_rtt_r1/report.json")).unwrap(),
    )
    .unwrap();
    let load = report.meta.load_cpu.expect("a pinned load's CPU");
    assert!(load.user_ns + load.system_ns > 0 && load.wall_ns > 0, "{load:?}");
    let (per_unit, unit) = report.load_cpu_per_unit().unwrap();
    assert!(per_unit > 0.0 && unit == "round trip", "{per_unit} {unit}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("/round trip"), "the table shows the load's CPU per unit: {text}");

    // A CPU this machine does not have fails the run, saying which; a set that is not one is
    // refused before anything starts.
    let (out, _) = bench(scenario("1023"), "absent");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("CPU 1023 is not one this machine runs us on"), "{text}");
    let (out, _) = bench(scenario("2-1"), "backwards");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cpus \"2-1\": a range runs backwards"), "{said}");
}

/// `wirespeed` in a scenario is the build that runs it, not another one found first on PATH:
/// an impostor that says it is wirespeed 0.0.0 (and fails as a server) comes first on the
/// PATH `bench` is given, and the scenario's server (started by a shell, as `sh -c '… exec
/// wirespeed …'` does), its version and its `requires` must all be this build.
#[test]
fn wirespeed_in_a_scenario_is_the_build_that_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let impostor = dir.path().join("impostor");
    std::fs::create_dir(&impostor).unwrap();
    let fake = impostor.join("wirespeed");
    std::fs::write(&fake, "#!/bin/sh\necho 'wirespeed 0.0.0 (impostor)'\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.path().join("own.toml");
    let text = r#"
[scenario]
name = "own-build"
[[system]]
name = "ours"
requires = ["wirespeed"]
entry = "127.0.0.1:{port.srv}"
version = { cmd = "wirespeed --version", expect = "wirespeed" }
process = [ { role = "server", cmd = "sh -c 'exec wirespeed server -B 127.0.0.1 -p {port.srv}'", ready = { tcp = "{port.srv}" } } ]
[[workload]]
name = "rtt"
kind = "latency"
time = "300ms"
"#;
    std::fs::write(&file, text).unwrap();
    let path = std::env::join_paths(
        std::iter::once(impostor.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let child = Command::new(common::BIN)
        .args(["bench", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--no-save"])
        .env("PATH", &path)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    let version = text.lines().find(|l| l.starts_with("version  ours: ")).expect(&text);
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    assert!(!text.contains("impostor") && !err.contains("impostor"), "{text}{err}");
    assert!(text.lines().any(|l| l.starts_with("done") && l.contains("ours/rtt/r1")), "{text}");
    // The link that stood for this build is gone with the run.
    let link_dir = std::env::temp_dir().join(format!("wirespeed-own-build-{pid}"));
    assert!(!link_dir.exists(), "{} was left behind", link_dir.display());
}
