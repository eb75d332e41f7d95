//! The example scenarios in `examples/`, each run for real in its short form (`--smoke`): the
//! rathole transport table and HTTP benchmark, rathole against frp, the DNS servers, and the gost
//! and frp versions.
//! Every system whose programs are installed must finish its runs; one whose programs are
//! missing must be skipped, not failed, and under CI is a failure. The report's files and
//! charts must be there, with the sweep's latency-against-rate and the memory graph.
//! `scripts/test.sh` installs rathole, unbound, nsd, knot and BIND, and `scripts/peers.sh` builds
//! gost and frp from the Go module proxy; `.config/nextest.toml` runs these tests alone, since
//! each loads the machine.

use wirespeed_testkit::skip;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use wirespeed_runner::scenario::HostsMode;

use crate::common;

/// One example at a time, under `cargo test` too: each one loads both cores.
static ALONE: Mutex<()> = Mutex::new(());

/// An example scenario (`examples/NAME`), or a benchmark scenario (`benches/NAME`).
fn example(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match name.strip_prefix("benches/") {
        Some(bench) => root.join("benches").join(bench),
        None => root.join("examples").join(name),
    }
}

/// Whether every program `system` requires is installed.
fn installed(loaded: &wirespeed_runner::Loaded, system: &str) -> bool {
    let cell = loaded.plan.systems.iter().find(|c| c.name == system).unwrap();
    // A program's name may be a template over the system's axes.
    let rendered = |p: &String| {
        wirespeed_runner::template::render(p, |n| cell.vars.get(n).cloned())
            .unwrap_or_else(|_| p.clone())
    };
    // `wirespeed` is this build while bench runs, whatever this test's PATH holds.
    loaded.scenario.system[cell.system].requires.iter().map(rendered).all(|p| {
        p == wirespeed_runner::matrix::OWN_CLIENT || wirespeed_runner::process::which(&p).is_some()
    })
}

/// The kinds the examples' workloads are (the binary checks them against its subcommands).
const WORKLOAD_KINDS: &[&str] =
    &["bandwidth", "latency", "cps", "pps", "ping", "http", "dns", "vegeta"];

/// PATH with this build's directory first: scenarios that run wirespeed's own server (or
/// `wirespeed peer`) find this build.
fn path_with_this_build() -> std::ffi::OsString {
    let bin_dir = Path::new(common::BIN).parent().unwrap();
    std::env::join_paths(
        std::iter::once(bin_dir.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap()
}

/// Runs `name` with `--smoke`; checks the listing, the exit code, and that each cell finished
/// or was skipped as its programs say. Returns the summary's cells and the output directory.
fn smoke(name: &str) -> (Vec<Value>, tempfile::TempDir) {
    smoke_on(name, None)
}

/// [`smoke`], with the scenario's hosts made `hosts` (`--hosts`).
fn smoke_on(name: &str, hosts: Option<HostsMode>) -> (Vec<Value>, tempfile::TempDir) {
    smoke_part(name, hosts, &[], &[])
}

/// [`smoke_on`] of part of the scenario: its systems and workloads matching `systems` and
/// `workloads` (`--systems`, `--workloads`; all where empty).
fn smoke_part(
    name: &str,
    hosts: Option<HostsMode>,
    systems: &[&str],
    workloads: &[&str],
) -> (Vec<Value>, tempfile::TempDir) {
    smoke_over(name, hosts, None, systems, workloads, &[])
}

/// [`smoke_part`] with the hosts' path set by `--network` (`none`, or `KEY=VALUE,…`) and `env`
/// given to `bench` (what a scenario's `{env.NAME}` reads).
fn smoke_over(
    name: &str,
    hosts: Option<HostsMode>,
    network: Option<&str>,
    systems: &[&str],
    workloads: &[&str],
    env: &[(&str, &str)],
) -> (Vec<Value>, tempfile::TempDir) {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let path = example(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut loaded = wirespeed_runner::parse_placed(name, &text, WORKLOAD_KINDS, hosts).unwrap();
    assert!(!loaded.plan.systems.is_empty() && !loaded.plan.runs.is_empty(), "{name}");

    let listed = common::client(&["bench", path.to_str().unwrap(), "--list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", String::from_utf8_lossy(&listed.stderr));
    let listing = String::from_utf8_lossy(&listed.stdout);
    for cell in &loaded.plan.systems {
        assert!(listing.contains(&format!("system   {}", cell.name)), "{listing}");
    }

    // The cells --smoke keeps (its lengths change no cell), of the part asked for.
    loaded.smoke(|_| None);
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    if !systems.is_empty() {
        loaded.keep_systems(&own(systems)).unwrap();
    }
    if !workloads.is_empty() {
        loaded.keep_workloads(&own(workloads)).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let (systems, workloads) = (systems.join(","), workloads.join(","));
    let mut args = vec![
        "bench",
        path.to_str().unwrap(),
        "--smoke",
        "--no-save",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    if let Some(h) = hosts {
        args.extend(["--hosts", h.name()]);
    }
    if let Some(n) = network {
        args.extend(["--network", n]);
    }
    if !systems.is_empty() {
        args.extend(["--systems", &systems]);
    }
    if !workloads.is_empty() {
        args.extend(["--workloads", &workloads]);
    }
    let out = std::process::Command::new(common::BIN)
        .args(&args)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .env("PATH", path_with_this_build())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cells: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(cells.len(), loaded.plan.systems.len() * loaded.plan.workloads.len());
    for c in &cells {
        let system = c["system"].as_str().unwrap();
        let done = c["values"].as_array().unwrap().len();
        assert_eq!(c["failed"], 0, "{name}: {c}\n{stdout}");
        if installed(&loaded, system) {
            assert_eq!((done, c["skipped"].as_u64()), (1, Some(0)), "{name}: {c}");
            assert!(c["values"][0].as_f64().unwrap() > 0.0, "{name}: {c}");
        } else {
            // Under CI a program scripts/test.sh installs is required, not skipped.
            skip::missing(
                &format!("{name}: {system}'s programs are not installed"),
                "scripts/peers.sh builds gost and frp, scripts/test.sh installs rathole and the DNS servers",
            );
            assert_eq!((done, c["skipped"].as_u64()), (0, Some(1)), "{name}: {c}");
        }
    }
    for file in ["summary.md", "summary.csv", "summary.html", "summary.svg"] {
        assert!(dir.path().join(file).is_file(), "{name}: {file}");
    }
    // Each installed program printed the version its scenario names.
    assert!(!stdout.contains("warning: version"), "{name}: {stdout}");
    (cells, dir)
}

fn cells_of<'a>(cells: &'a [Value], system: &str) -> Vec<&'a Value> {
    cells.iter().filter(|c| c["system"] == system).collect()
}

#[test]
fn examples_rathole_transports() {
    let (cells, dir) = smoke("rathole-transports.toml");
    // The tunnel's processes are sampled by role; the direct path has none.
    for c in cells_of(&cells, "rathole-tls").into_iter().filter(|c| c["values"][0].is_number()) {
        let roles: Vec<&str> =
            c["memory"].as_array().unwrap().iter().map(|m| m[0].as_str().unwrap()).collect();
        assert_eq!(roles, ["client", "server"], "{c}");
    }
    assert!(cells_of(&cells, "direct").iter().all(|c| c["memory"].as_array().unwrap().is_empty()));
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    // A sweep is one table: a row per swept value, a column per system.
    assert!(md.contains("## tcp-download: Throughput (median of repeats) by parallel"), "{md}");
    assert!(
        md.contains("| parallel | direct | rathole-tcp |") && md.contains("% of direct"),
        "{md}"
    );
}

#[test]
fn examples_rathole_http() {
    let (cells, dir) = smoke("rathole-http.toml");
    // The latency sweep, cut to three rates, keeps its p50 and p99 per rate.
    let sweep: Vec<&Value> = cells.iter().filter(|c| c["base"] == "latency").collect();
    assert_eq!(sweep.len(), 3 * 2, "three rates, two systems");
    // The direct path is the baseline, but a tunnel is no peer server: no ratio row.
    assert!(cells.iter().all(|c| c.get("compared_with").is_none()), "{cells:?}");
    for c in sweep.iter().filter(|c| c["values"][0].is_number()) {
        assert!(c["p99_ns"][0].as_f64().unwrap() >= c["p50_ns"][0].as_f64().unwrap(), "{c}");
    }
    let svg = std::fs::read_to_string(dir.path().join("summary.svg")).unwrap();
    assert!(svg.contains("latency: latency against rate"), "the latency-vs-rate chart");
    // A fixed rate's headline is its latency; the sweep is one table of p50 and p99 by rate.
    assert!(sweep.iter().all(|c| c["figure"] == "Latency p50" || c["values"][0].is_null()));
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("| rate | direct p50 | direct p99 | rathole p50 | rathole p99 |"), "{md}");
    // The same sweep under vegeta's own load, beside it.
    assert!(
        md.contains("## vegeta-latency: latency p50 and p99 (median of repeats) by rate"),
        "{md}"
    );
    if wirespeed_runner::process::which("rathole").is_some() {
        assert!(svg.contains("memory-at-1000: memory over time"), "the memory graph");
        let memory =
            cells.iter().find(|c| c["base"] == "memory-at-1000" && c["system"] == "rathole");
        let timeline = memory.unwrap()["timeline"].as_array().unwrap();
        assert_eq!(timeline.len(), 2, "server and client, each its own line");
    }
}

/// The one-worker servers, as the richer-mix study runs them.
const ONE_WORKER: &[&str] =
    &["wirespeed-fixture", "unbound", "nsd", "knot", "bind9", "coredns", "dnsproxy-cache"];

#[test]
fn examples_dns_servers() {
    let (cells, dir) = smoke_part("dns-servers.toml", None, ONE_WORKER, &["qps*"]);
    assert_eq!(cells.len(), 7 * 3, "seven servers at 1, 8 and 64 clients");
    // Each client count has BIND at 100 % of itself, and one fastest server at 100 %.
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header[9..11], ["percent_of_bind9", "percent_of_fastest"], "{csv}");
    for clients in ["1", "8", "64"] {
        let rows =
            || csv.lines().filter(move |l| l.starts_with(&format!("qps[clients={clients}],")));
        let at_100 =
            |column: usize| rows().filter(move |l| l.split(',').nth(column) == Some("100"));
        assert_eq!(at_100(10).count(), 1, "{csv}");
        if Path::new("/usr/sbin/named").exists() {
            assert!(at_100(9).all(|l| l.contains(",bind9,")) && at_100(9).count() == 1, "{csv}");
        }
    }
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("## qps: Queries/s as % of bind9 by clients"), "{md}");
    assert!(md.contains("## qps: Queries/s as % of fastest by clients"), "{md}");

    // The source's own tests, on one name, at one, four and eight workers (BIND's `-n`).
    let (cells, _dir) = smoke_part("dns-servers.toml", None, &["bind9*"], &["seed-*"]);
    let names: Vec<&str> = cells.iter().map(|c| c["system"].as_str().unwrap()).collect();
    assert_eq!(cells.len(), 3 * 3, "{names:?}");
    for system in ["bind9", "bind9-x4", "bind9-x8"] {
        assert!(names.contains(&system), "{names:?}");
    }
}

#[test]
fn examples_dns_servers_across_netns_hosts() {
    if let Err(e) = wirespeed_netlab::privilege::check() {
        skip::missing(&e.to_string(), "run as root");
        return;
    }
    let (cells, dir) =
        smoke_part("dns-servers.toml", Some(HostsMode::Netns), ONE_WORKER, &["qps*"]);
    assert_eq!(cells.len(), 7 * 3 * 2, "seven servers, three client counts, two links");
    // Every run's report keeps both directions of its link, as the cell asked.
    let mut checked = 0;
    for (run, links) in run_links(dir.path()) {
        assert_eq!(links.len(), 2, "{run}");
        let delayed = run.contains("delay=0.1ms");
        let delay = links[0]["conditions"]["delay_ns"].as_u64().unwrap_or(0);
        assert_eq!(delay, if delayed { 100_000 } else { 0 }, "{run}");
        checked += 1;
    }
    assert!(checked >= 2 * 3, "{checked} runs");
}

/// A run's report in a smoke's output directory.
/// Asserts an HTTP summary `s` (of `what`) answered something, and every request it answered
/// with success; how many it answered.
fn all_answered(s: &Value, what: &str) -> u64 {
    let responses = s["responses"].as_u64().unwrap();
    assert!(responses > 0 && s["succeeded"].as_u64() == Some(responses), "{what}: {s}");
    responses
}

fn run_report(dir: &Path, run: &str) -> Value {
    let path = dir.join("runs").join(run).join("report.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn examples_ethr_beside_wirespeed_on_loopback_and_netns_hosts() {
    // nginx on port 80, ethr's ICMP ping and network namespaces all need root.
    if let Err(e) = wirespeed_netlab::privilege::check() {
        skip::missing(&e.to_string(), "run as root");
        return;
    }
    let (cells, dir) = smoke("ethr.toml");
    assert_eq!(cells.len(), 12, "six tests, each by both tools");
    // Each of ethr's runs came back as a report of the test's own kind, saying it was ethr's.
    for (workload, kind) in [
        ("bandwidth", "bandwidth"),
        ("packets", "bandwidth"),
        ("connections", "cps"),
        ("latency", "latency"),
        ("icmp-ping", "ping"),
        ("tcp-connect", "ping"),
    ] {
        let report = run_report(dir.path(), &format!("ethr_{workload}_r1"));
        assert_eq!(report["kind"], kind, "{workload}");
        let notes = report["meta"]["notes"].to_string();
        assert!(notes.contains("load made by ethr's client (ethr "), "{workload}: {notes}");
    }
    // ethr's client counts what it sent, never what arrived: its packets/s run has a send rate
    // and no receiver's figure, and is not shown as one.
    let packets = run_report(dir.path(), "ethr_packets_r1");
    assert!(packets["summary"]["sent_pps"].as_f64().unwrap() > 0.0, "{packets}");
    assert!(packets["summary"]["received_pps"].is_null(), "{packets}");
    // Its connections/s test times no connect: no connect percentile stands in for one.
    let connections = cells_of(&cells, "ethr")
        .into_iter()
        .find(|c| c["workload"] == "connections")
        .unwrap()
        .clone();
    assert!(connections["p50_ns"].as_array().is_none_or(Vec::is_empty), "{connections}");

    let (cells, _dir) = smoke_on("ethr.toml", Some(HostsMode::Netns));
    assert_eq!(cells.len(), 12);
    // Over an emulated 1 Gbit/s link, wirespeed's stream carries at most its payload's share.
    let (_, dir) = smoke_over(
        "ethr.toml",
        Some(HostsMode::Netns),
        Some("delay=0.5ms,rate=1Gbit"),
        &["wirespeed"],
        &["bandwidth"],
        &[],
    );
    let report = run_report(dir.path(), "wirespeed_bandwidth_r1");
    let bps = report["summary"]["received_bps"].as_f64().unwrap();
    assert!(bps > 0.0 && bps <= 1e9 * 1448.0 / 1500.0 * 1.02, "{bps}");
    assert_eq!(report["meta"]["links"][0]["conditions"]["rate_bps"], 1_000_000_000u64);
}

#[test]
fn ethr_as_a_load_says_why_when_it_measured_nothing() {
    if wirespeed_runner::process::which("ethr").is_none() {
        skip::missing("ethr is not installed", "scripts/peers.sh builds it");
        return;
    }
    // No ethr server on the port: ethr prints a zero a second and exits 0; the load does not
    // pass that off as a measurement.
    let port = common::free_port().to_string();
    let out = common::client(&[
        "peer",
        "--",
        "ethr",
        "-c",
        "127.0.0.1",
        "-port",
        &port,
        "-t",
        "c",
        "-d",
        "1500ms",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("counted nothing in any second"), "{said}");
    assert!(out.stdout.is_empty());
    // A test type it cannot read is refused before ethr starts.
    let out = common::client(&["peer", "--", "ethr", "-c", "127.0.0.1", "-t", "tr"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("not a test this reads"), "{said}");
    // A scenario asking ethr for what it has no flag for is refused when read, by name.
    let dir = tempfile::tempdir().unwrap();
    let said = refused_option(dir.path(), "ethr", "udp");
    assert!(said.contains("no equivalent of bandwidth --udp"), "{said}");
}

/// A scenario whose system's load is `client`'s, with a bandwidth workload setting `option`:
/// refused when read (`--list`); what it said.
fn refused_option(dir: &Path, client: &str, option: &str) -> String {
    let file = dir.join(format!("{client}-{option}.toml"));
    let scenario = format!(
        "[scenario]\nname = \"r\"\n[[system]]\nname = \"{client}\"\nclient = \"{client}\"\n\
         entry = \"127.0.0.1:9\"\n[[workload]]\nname = \"w\"\nkind = \"bandwidth\"\n{option} = true\n"
    );
    std::fs::write(&file, scenario).unwrap();
    let out = common::client(&["bench", file.to_str().unwrap(), "--list"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{said}");
    said
}

#[test]
fn examples_gost_and_frp_run_every_cell() {
    for name in ["gost-transports.toml", "gost-http.toml", "frp-transports.toml", "frp-http.toml"] {
        let (cells, _dir) = smoke(name);
        assert!(cells_of(&cells, "direct").iter().all(|c| c["values"][0].is_number()), "{name}");
    }
}

/// The links of every run's report under `dir`, with the run's directory name.
fn run_links(dir: &Path) -> Vec<(String, Vec<Value>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir.join("runs")).unwrap() {
        let run = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(run.join("report.json")) else { continue };
        let report: Value = serde_json::from_str(&text).unwrap();
        let name = run.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, report["meta"]["links"].as_array().unwrap().clone()));
    }
    out
}

/// Across netns hosts the gost file plans every path under each loss, on the emulated link it
/// asks for. (Planned, not run: 84 runs would cost CI three minutes; the same placement of a
/// tunnel's two sides on two hosts runs for real in `examples_rathole_vs_frp_under_loss`, and
/// every gost cell runs on loopback in `examples_gost_and_frp_run_every_cell`.)
#[test]
fn examples_gost_transports_plan_a_lossy_wide_area_path() {
    let text = std::fs::read_to_string(example("gost-transports.toml")).unwrap();
    let loaded = wirespeed_runner::parse_placed(
        "gost-transports.toml",
        &text,
        WORKLOAD_KINDS,
        Some(HostsMode::Netns),
    )
    .unwrap();
    assert_eq!(loaded.plan.systems.len(), 18, "direct, the forward, 12 TCP and 4 UDP transports");
    assert_eq!(loaded.plan.workloads.len(), 3 * 2, "three tests, two losses");
    for cell in &loaded.plan.workloads {
        let lab = wirespeed_runner::paths::lab_spec(&loaded.scenario, &cell.path).unwrap();
        assert_eq!(lab.hosts, ["client", "server"]);
        let lossy = cell.name.contains("loss=0.5%");
        for c in [&lab.links[0].a_to_b, &lab.links[0].b_to_a] {
            assert_eq!((c.delay_ns, c.rate_bps), (15_000_000, Some(100_000_000)), "{}", cell.name);
            assert!((c.loss - if lossy { 0.005 } else { 0.0 }).abs() < 1e-9, "{}", cell.name);
        }
    }
    // On this machine (the file's default) the path is not swept.
    let local = wirespeed_runner::parse_placed("gost-transports.toml", &text, WORKLOAD_KINDS, None)
        .unwrap();
    assert_eq!(local.plan.workloads.len(), 3);
}

#[test]
fn examples_rathole_vs_frp_under_loss() {
    let (cells, _dir) = smoke("rathole-vs-frp-loss.toml");
    assert_eq!(cells.len(), 4 * 4, "four paths, four tests; the loss sweep is not run locally");
    if let Err(e) = wirespeed_netlab::privilege::check() {
        skip::missing(&e.to_string(), "run as root");
        return;
    }
    let (cells, dir) = smoke_on("rathole-vs-frp-loss.toml", Some(HostsMode::Netns));
    assert_eq!(cells.len(), 4 * 4 * 2);
    for (run, links) in run_links(dir.path()) {
        let loss = links[0]["conditions"]["loss"].as_f64().unwrap_or(0.0);
        assert!((loss - if run.contains("loss=1") { 0.01 } else { 0.0 }).abs() < 1e-9, "{run}");
    }
    // frp over kcp (UDP) crossed the path in every cell, or was skipped in all for want of frp.
    let kcp = cells_of(&cells, "frp-kcp");
    assert!(
        kcp.iter().all(|c| c["values"][0].is_number()) || kcp.iter().all(|c| c["skipped"] == 1)
    );
}

#[test]
fn examples_rathole_vs_frp() {
    let (cells, dir) = smoke("rathole-vs-frp.toml");
    // One table of p50 and p99 by rate, a pair of columns per tunnel and frp version.
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    let header = "| rate | direct p50 | direct p99 | rathole-tcp p50 | rathole-tcp p99 |";
    assert!(md.contains(header) && md.contains("| frp-0.38-tcp p50 | frp-0.38-tcp p99 |"), "{md}");
    // Each tunnel's memory over time at 1000 req/s, a line per process group.
    let memory = |system: &str| {
        let c = cells.iter().find(|c| c["base"] == "memory-at-1000" && c["system"] == system);
        c.unwrap()["timeline"].as_array().unwrap().len()
    };
    for system in ["rathole-tcp", "frp-tcp", "frp-0.38-tcp"] {
        if cells_of(&cells, system).iter().all(|c| c["values"][0].is_number()) {
            assert_eq!(memory(system), 2, "{system}: server and client");
        }
    }
}

/// wirespeed against iperf3, Debian's and 3.21, each client against its own server: iperf3's
/// rows are iperf3's own client's figures (read from its JSON), its version recorded, and a
/// client that failed says iperf3's own words.
#[test]
fn benches_bandwidth_against_iperf3_3_12_and_3_21() {
    let (cells, dir) = smoke("benches/bandwidth.toml");
    assert_eq!(cells.len(), 15, "five workloads, each by three systems");
    for system in ["iperf3-3.12", "iperf3-3.21"] {
        for workload in ["tcp-1", "tcp-4", "udp-1400-unlimited"] {
            let report = run_report(dir.path(), &format!("{system}_{workload}_r1"));
            assert_eq!(report["kind"], "bandwidth", "{system} {workload}");
            let notes = report["meta"]["notes"].to_string();
            assert!(notes.contains("load made by iperf3's client (iperf3"), "{notes}");
            // The spec is the workload's, as our own client would have run it.
            let parallel = if workload == "tcp-4" { 4 } else { 1 };
            assert_eq!(report["spec"]["parallel"], parallel, "{system} {workload}");
            let summary = &report["summary"];
            assert!(summary["received_bps"].as_f64().unwrap() > 0.0, "{summary}");
            assert!(summary["sent_bytes"].as_u64().unwrap() > 0, "{summary}");
            if workload.starts_with("udp") {
                assert!(summary["loss_ratio"].as_f64().is_some(), "{summary}");
                assert_eq!(report["spec"]["protocol"], "udp");
            }
        }
    }
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.contains("iperf 3.12") && summary.contains("iperf 3.21"), "{summary}");

    // No server where it connects: iperf3's own message, and no report.
    let port = common::free_port().to_string();
    let like = format!(r#"["wirespeed","bandwidth","127.0.0.1:{port}","-t","1s"]"#);
    let out = common::client(&[
        "peer",
        "--client",
        "iperf3",
        "--like",
        &like,
        "--",
        "iperf3",
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "--json",
        "-t",
        "1",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("failed: unable to connect to server"), "{said}");
    assert!(out.stdout.is_empty());
    // An option iperf3 has no equivalent for is refused when the scenario is read, by name.
    let said = refused_option(dir.path(), "iperf3", "bidir");
    assert!(said.contains("no equivalent of bandwidth --bidir"), "{said}");
}

/// wirespeed against sockperf's ping-pong, TCP and UDP, waiting and (in their own file, with
/// a spinning sockperf server) spinning: sockperf's rows are its own client's round trips,
/// made with the flags that match ours.
#[test]
fn benches_latency_against_sockperf() {
    let (waiting, waiting_dir) = smoke("benches/latency.toml");
    let (spinning, spinning_dir) = smoke("benches/latency-busy-poll.toml");
    assert_eq!((waiting.len(), spinning.len()), (4, 4), "two workloads, each by two systems");
    for workload in ["tcp", "tcp-busy-poll", "udp", "udp-busy-poll"] {
        let dir = if workload.ends_with("busy-poll") { &spinning_dir } else { &waiting_dir };
        let report = run_report(dir.path(), &format!("sockperf_{workload}_r1"));
        assert_eq!(report["kind"], "latency", "{workload}");
        let notes = report["meta"]["notes"].to_string();
        assert!(notes.contains("load made by sockperf's client (sockperf ping-pong"), "{notes}");
        let busy = workload.ends_with("busy-poll");
        assert_eq!(notes.contains("--nonblocked"), busy, "{notes}");
        assert_eq!(notes.contains("--tcp"), workload.starts_with("tcp"), "{notes}");
        assert_eq!(report["spec"]["busy_poll"], busy, "{workload}");
        let rtt = &report["summary"]["rtt"];
        let (p50, p99) = (rtt["p50_ns"].as_u64().unwrap(), rtt["p99_ns"].as_u64().unwrap());
        assert!(p50 > 0 && p50 <= p99, "{rtt}");
        assert!(report["summary"]["received"].as_u64().unwrap() > 0, "{report}");
    }
}

/// wirespeed's pps against iperf3's UDP client unlimited: iperf3's rows are datagrams
/// received per second, from its own counts (sent less lost).
#[test]
fn benches_pps_against_iperf3() {
    let (cells, dir) = smoke("benches/pps.toml");
    assert_eq!(cells.len(), 4, "one workload, by four systems");
    for system in ["iperf3-3.12", "iperf3-3.21"] {
        let report = run_report(dir.path(), &format!("{system}_udp-64_r1"));
        assert_eq!(report["spec"]["per_packet"], true, "{report}");
        assert_eq!(report["spec"]["length"], 64, "{report}");
        let notes = report["meta"]["notes"].to_string();
        assert!(notes.contains("-u -b 0") && notes.contains("-l 64"), "{notes}");
        let summary = &report["summary"];
        let (sent, received) = (
            summary["sent_packets"].as_u64().unwrap(),
            summary["received_packets"].as_u64().unwrap(),
        );
        assert!(received > 0 && received <= sent, "{summary}");
        assert!(summary["received_pps"].as_f64().unwrap() > 0.0, "{summary}");
    }
    // sockperf's throughput client counts only what it sent: its rate sent, nothing received.
    let report = run_report(dir.path(), "sockperf_udp-64_r1");
    assert_eq!(
        (report["spec"]["per_packet"].as_bool(), report["spec"]["length"].as_u64()),
        (Some(true), Some(64))
    );
    let notes = report["meta"]["notes"].to_string();
    assert!(
        notes.contains("sockperf throughput -i 127.0.0.1") && notes.contains("-m 64"),
        "{notes}"
    );
    let summary = &report["summary"];
    assert!(summary["sent_packets"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["sent_pps"].as_f64().unwrap() > 0.0, "{summary}");
    assert!(summary.get("received_packets").is_none_or(|r| r.is_null()), "{summary}");
}

/// wirespeed's HTTP client against wrk, oha, h2load and hey, HTTP/1.1 and HTTP/2, each against its
/// own nginx pinned apart from the load: every client's row is its own figures, made with the
/// flags that match ours, and every load (ours too) ran as a process of its own, so its CPU per
/// request is known.
#[test]
fn benches_http_against_wrk_oha_h2load_and_hey() {
    let (h1, h1_dir) = smoke("benches/http.toml");
    let (h2, h2_dir) = smoke("benches/http2.toml");
    assert_eq!((h1.len(), h2.len()), (5, 3), "one workload each, by five and three systems");
    let runs = [
        (&h1_dir, "wirespeed_h1-32_r1", None),
        (&h1_dir, "wrk_h1-32_r1", Some("wrk's client (wrk --latency http://127.0.0.1:")),
        (&h1_dir, "oha_h1-32_r1", Some("oha's client (oha --no-tui --output-format json -w")),
        (&h1_dir, "h2load_h1-32_r1", Some("--h1")),
        (&h1_dir, "hey_h1-32_r1", Some("hey's client (hey -c 32 -z 1s http://127.0.0.1:")),
        (&h2_dir, "wirespeed_h2-4x8_r1", None),
        (&h2_dir, "h2load_h2-4x8_r1", Some("-m 8")),
        (&h2_dir, "oha_h2-4x8_r1", Some("--http2")),
    ];
    for (dir, run, said) in runs {
        let report = run_report(dir.path(), run);
        assert_eq!(report["kind"], "http", "{run}");
        let notes = report["meta"]["notes"].to_string();
        if let Some(said) = said {
            assert!(notes.contains(said), "{run}: {notes}");
            assert!(notes.contains(if run.contains("h1") { "-c 32" } else { "-c 4" }), "{notes}");
        }
        let s = &report["summary"];
        let responses = s["responses"].as_u64().unwrap();
        assert!(responses > 0 && s["requests_per_second"].as_f64().unwrap() > 0.0, "{run}: {s}");
        // Each client ran for the workload's time (smoke: 0.5 s), not a count of its own
        // (hey's 200 requests, when its flags were taken for arguments).
        let measured = s["duration_ns"].as_u64().unwrap();
        assert!((400_000_000..5_000_000_000).contains(&measured), "{run}: {measured} ns");
        // nginx answers every request with its page.
        assert_eq!(s["succeeded"].as_u64(), Some(responses), "{run}: {s}");
        assert!(s["latency"]["mean_ns"].as_f64().unwrap() > 0.0, "{run}: {s}");
        let load = &report["meta"]["load_cpu"];
        assert!(load["user_ns"].as_u64().unwrap() + load["system_ns"].as_u64().unwrap() > 0);
    }
}

/// wirespeed's dns client against dnsperf on unbound, nsd, knot and wirespeed's own server, both asking the same
/// queries: dnsperf's rows are its own statistics, its answers by response code among them (the
/// queries hold a name that does not exist), and every load ran as a process of its own.
#[test]
fn benches_dns_against_dnsperf() {
    let (cells, dir) = smoke("benches/dns.toml");
    assert_eq!(cells.len(), 8 * 3, "eight systems at 1, 8 and 64 clients");
    for server in ["unbound", "nsd", "knot", "wirespeed"] {
        for (client, clients) in [("dnsperf", 8), ("wirespeed", 64)] {
            let run = format!("{client}-{server}_qps_clients={clients}__r1");
            let report = run_report(dir.path(), &run);
            assert_eq!(report["kind"], "dns", "{run}");
            let s = &report["summary"];
            let (sent, completed) = (s["sent"].as_u64().unwrap(), s["completed"].as_u64().unwrap());
            assert!(completed > 0 && completed <= sent, "{run}: {s}");
            let codes: Vec<&str> =
                s["rcodes"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
            assert_eq!(codes, ["NOERROR", "NXDOMAIN"], "{run}: {s}");
            assert!(s["queries_per_second"].as_f64().unwrap() > 0.0, "{run}: {s}");
            let load = &report["meta"]["load_cpu"];
            assert!(load["user_ns"].as_u64().unwrap() + load["system_ns"].as_u64().unwrap() > 0);
            if client == "dnsperf" {
                let notes = report["meta"]["notes"].to_string();
                assert!(notes.contains("dns-queries.txt") && notes.contains("-c 8"), "{notes}");
                assert!(s["exact"]["mean_ns"].as_f64().unwrap() > 0.0, "{run}: {s}");
            }
        }
    }
}

/// wirespeed's dns client over DoH against dnsperf's, both on CoreDNS with a certificate made
/// for the run: GET and POST, every query answered from the zone, and our client trusting the
/// run's certificate ({run.dir} and {port.doh} in the workload's options).
#[test]
fn benches_doh_against_dnsperf() {
    let (cells, dir) = smoke("benches/doh.toml");
    assert_eq!(cells.len(), 2 * 2, "two clients, GET and POST");
    for client in ["wirespeed", "dnsperf"] {
        for post in [false, true] {
            let run = format!("{client}-coredns_doh_doh-post={post}__r1");
            let report = run_report(dir.path(), &run);
            let s = &report["summary"];
            let completed = s["completed"].as_u64().unwrap();
            assert!(completed > 0 && completed <= s["sent"].as_u64().unwrap(), "{run}: {s}");
            let codes: Vec<&str> =
                s["rcodes"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
            assert_eq!(codes, ["NOERROR", "NXDOMAIN"], "{run}: {s}");
            if client == "dnsperf" {
                let notes = report["meta"]["notes"].to_string();
                assert!(notes.contains("-m doh -O doh-uri=https://127.0.0.1:"), "{notes}");
                assert_eq!(notes.contains("doh-method=POST"), post, "{notes}");
            } else {
                let method = if post { "post" } else { "get" };
                assert_eq!(report["spec"]["doh_method"].as_str(), Some(method), "{report}");
                assert_eq!(report["spec"]["transport"].as_str(), Some("doh"), "{report}");
            }
        }
    }
}

/// wirespeed's dns client against dnspyre over DoQ and DoH, on our server and on CoreDNS, each
/// with a certificate made for the run: both ask the fixture's names (every one answered from the
/// zone), dnspyre its server in its transport's form, and its figures are read from its summary.
#[test]
fn benches_doq_and_doh_against_dnspyre() {
    let (cells, dir) = smoke("benches/dnspyre.toml");
    assert_eq!(cells.len(), 2 * 2 * 2, "two clients, two servers, DoQ and DoH");
    for server in ["wirespeed", "coredns"] {
        for client in ["wirespeed", "dnspyre"] {
            for transport in ["doq", "doh"] {
                let run = format!("{client}-{server}_{transport}_r1");
                let report = run_report(dir.path(), &run);
                let s = &report["summary"];
                let completed = s["completed"].as_u64().unwrap();
                assert!(completed > 0 && completed <= s["sent"].as_u64().unwrap(), "{run}: {s}");
                let codes: Vec<(&str, u64)> = s["rcodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|r| Some((r["name"].as_str()?, r["count"].as_u64()?)))
                    .collect();
                assert_eq!(codes, [("NOERROR", completed)], "{run}: {s}");
                let p50 = s["latency"]["p50_ns"].as_u64().unwrap();
                assert!(p50 > 0 && p50 <= s["latency"]["p99_ns"].as_u64().unwrap(), "{run}: {s}");
                if client == "dnspyre" {
                    let notes = report["meta"]["notes"].to_string();
                    let server_word =
                        if transport == "doq" { "-s quic://127.0.0.1:" } else { "-s https://" };
                    assert!(notes.contains(server_word), "{notes}");
                    assert!(
                        notes.contains("dns-names.txt -") && notes.contains("-c 100"),
                        "{notes}"
                    );
                } else {
                    assert_eq!(report["spec"]["transport"].as_str(), Some(transport), "{report}");
                }
            }
        }
    }
}

/// iperf3's protocol both ways: iperf3's client against our server and ours (--iperf3) against
/// iperf3's, beside iperf3 against itself, each figure the receiver's.
#[test]
fn benches_iperf3_interop_both_ways() {
    let (cells, dir) = smoke("benches/iperf3-interop.toml");
    assert_eq!(cells.len(), 3, "one workload, by three systems");
    for system in ["wirespeed-to-iperf3", "iperf3-to-wirespeed", "iperf3-to-iperf3"] {
        let report = run_report(dir.path(), &format!("{system}_tcp-1_r1"));
        let notes = report["meta"]["notes"].to_string();
        assert_eq!(
            notes.contains("load made by iperf3's client"),
            system.starts_with("iperf3-to"),
            "{notes}"
        );
        assert!(report["summary"]["received_bps"].as_f64().unwrap() > 0.0, "{system}: {report}");
    }
    let ours = run_report(dir.path(), "wirespeed-to-iperf3_tcp-1_r1");
    assert!(ours["meta"]["server_version"].as_str().is_some_and(|v| v.contains("iperf")), "{ours}");
}

/// wirespeed and wrk on the fixture's `?delay=10ms`: both measure at least the server's delay.
#[test]
fn benches_http_delay_against_wrk() {
    let (cells, dir) = smoke("benches/http-delay.toml");
    assert_eq!(cells.len(), 2, "one workload, by two clients");
    for client in ["wirespeed", "wrk"] {
        let report = run_report(dir.path(), &format!("{client}_delay-10ms_r1"));
        let s = &report["summary"];
        assert!(s["responses"].as_u64().unwrap() > 0, "{client}: {s}");
        // The fixture answers 10 ms after each request came: no client can see less.
        let p50 = s["latency"]["p50_ns"].as_u64().unwrap();
        assert!(p50 >= 10_000_000, "{client}: p50 {p50} ns below the server's delay");
    }
}

/// The open model at a fixed rate against the fixture, the load sampled as a role of its own:
/// its memory is in the run's samples, its requests were answered.
#[test]
fn benches_quic_against_our_own_tcp() {
    let (cells, dir) = smoke("benches/quic.toml");
    assert_eq!(cells.len(), 4, "one system, TCP and QUIC each way");
    for (workload, protocol, direction) in [
        ("tcp-upload", "tcp", "upload"),
        ("quic-upload", "quic", "upload"),
        ("tcp-download", "tcp", "download"),
        ("quic-download", "quic", "download"),
    ] {
        let report = run_report(dir.path(), &format!("wirespeed_{workload}_r1"));
        let spec = &report["spec"];
        assert_eq!(
            (spec["protocol"].as_str(), spec["direction"].as_str()),
            (Some(protocol), Some(direction)),
            "{report}"
        );
        assert!(report["summary"]["received_bps"].as_f64().unwrap() > 0.0, "{report}");
        // Pinned: the load ran as a process of its own, its CPU known.
        assert!(report["meta"]["load_cpu"]["wall_ns"].as_u64().unwrap() > 0, "{report}");
    }
}

#[test]
fn benches_http_open_samples_the_load() {
    let (cells, dir) = smoke("benches/http-open.toml");
    assert_eq!(cells.len(), 1, "one workload, one system");
    let report = run_report(dir.path(), "wirespeed_open-20k_r1");
    let s = &report["summary"];
    assert!(s["responses"].as_u64().unwrap() > 0 && s["sent_per_second"].as_f64().unwrap() > 0.0);
    let samples: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("runs/wirespeed_open-20k_r1/samples.json"))
            .unwrap(),
    )
    .unwrap();
    let load: Vec<&Value> = samples.iter().filter(|s| s["role"] == "load").collect();
    assert!(!load.is_empty(), "{samples:?}");
    assert!(load.iter().all(|s| s["processes"] == 1 && s["rss_bytes"].as_u64() > Some(0)));
    let memory = std::fs::read_to_string(dir.path().join("memory.csv")).unwrap();
    assert!(memory.lines().any(|l| l.starts_with("open-20k,wirespeed,load,")), "{memory}");
}

/// The delay line against a veth pair between two namespaces: each run's link holds what its
/// cell asked, and a round trip through 1 ms each way takes at least 2 ms.
#[test]
fn benches_delay_line_against_a_veth_pair() {
    if let Err(e) = wirespeed_netlab::privilege::check() {
        skip::missing(&e.to_string(), "run as root");
        return;
    }
    let (cells, dir) = smoke("benches/delay-line.toml");
    assert_eq!(cells.len(), 3 * 3, "three workloads, three delays");
    for (run, links) in run_links(dir.path()) {
        let delay_ns = if run.contains("delay=1ms") {
            1_000_000
        } else if run.contains("delay=1us") {
            1_000
        } else {
            0
        };
        for link in &links {
            assert_eq!(link["conditions"]["delay_ns"].as_u64().unwrap_or(0), delay_ns, "{run}");
        }
        if run.starts_with("wirespeed_udp-rtt_delay=1ms") {
            let report = run_report(dir.path(), &run);
            let p50 = report["summary"]["rtt"]["p50_ns"].as_u64().unwrap();
            assert!(p50 >= 2_000_000, "{run}: p50 {p50} ns under the 2 ms the line holds");
        }
    }
}

/// The HTTP fixture beside nginx, both loaded by wrk: each server answers every request.
#[test]
fn benches_http_fixture_against_nginx() {
    let (cells, dir) = smoke("benches/http-fixture.toml");
    assert_eq!(cells.len(), 2, "one workload, by two servers");
    for system in ["fixture", "nginx"] {
        let report = run_report(dir.path(), &format!("{system}_h1-32_r1"));
        let s = &report["summary"];
        all_answered(s, system);
        assert!(report["meta"]["notes"].to_string().contains("load made by wrk's client"));
    }
    // Both loaded by wrk: nginx, the baseline, is the fixture's peer on the performance page.
    for c in &cells {
        let peer_of = if c["system"] == "nginx" { Some("fixture") } else { None };
        assert_eq!(c.get("compared_with").and_then(Value::as_str), peer_of, "{c}");
    }
}

/// One process against four members making the same open-model load, merged: the members
/// together send exactly the one schedule one process sends, their reports merged into one run
/// whose notes say so, and neither is a peer on the performance page.
#[test]
fn benches_distributed_members_against_one_process() {
    let (cells, dir) = smoke("benches/distributed.toml");
    assert_eq!(cells.len(), 2, "one workload, two ways");
    let one = run_report(dir.path(), "one-process_open-20k_r1");
    let members = run_report(dir.path(), "members-4_open-20k_r1");
    assert_eq!(members["summary"]["sent"], one["summary"]["sent"], "{members}");
    let merged = &members["meta"]["merged"];
    assert_eq!(merged["merged"], serde_json::json!([0, 1, 2, 3]), "{merged}");
    assert_eq!(merged["missing"], serde_json::json!([]), "{merged}");
    let notes = members["meta"]["notes"].to_string();
    assert!(notes.contains("load made by 4 members of one run"), "{notes}");
    assert!(one["meta"].get("merged").is_none_or(Value::is_null), "{one}");
    // Each member ran one of the workload's four threads.
    assert!(notes.contains("--threads 1 "), "{notes}");
    assert!(cells.iter().all(|c| c.get("compared_with").is_none()), "{cells:?}");
}

/// wirespeed's client beside oha over h2 (TLS) and HTTP/3 on the HTTP fixture: every request
/// answered, and oha's rows its own, asked for HTTP/3 where the workload is (an oha built
/// without the feature fails those runs, and so this test).
#[test]
fn benches_http3_against_oha() {
    let (cells, dir) = smoke("benches/http3.toml");
    assert_eq!(cells.len(), 2 * 2, "two workloads, by two clients");
    for workload in ["h2-4x16", "h3-4x16"] {
        for system in ["wirespeed", "oha"] {
            let report = run_report(dir.path(), &format!("{system}_{workload}_r1"));
            let s = &report["summary"];
            all_answered(s, &format!("{system} {workload}"));
            let notes = report["meta"]["notes"].to_string();
            assert_eq!(notes.contains("oha's closed model"), system == "oha", "{notes}");
            if system == "oha" {
                let h3 = notes.contains("--http-version 3");
                assert_eq!(h3, workload.starts_with("h3"), "{notes}");
            }
        }
    }
}

/// wirespeed web's data endpoints beside nginx giving and taking the same bytes (64 MiB files
/// here, to be quick): every workload made by both servers in full, and each server's memory
/// sampled, which is the browsers' workload's figure.
#[test]
fn benches_web_against_nginx() {
    let (cells, dir) = smoke_over("benches/web.toml", None, None, &[], &[], &[("WEB_MIB", "64")]);
    assert_eq!(cells.len(), 3 * 2, "three workloads, by two servers");
    const MIB: u64 = 1 << 20;
    for system in ["wirespeed", "nginx"] {
        for workload in ["download", "upload", "browsers-50"] {
            let report = run_report(dir.path(), &format!("{system}_{workload}_r1"));
            let s = &report["summary"];
            let responses = all_answered(s, system);
            let (bytes_in, bytes_out) =
                (s["bytes_in"].as_u64().unwrap(), s["bytes_out"].as_u64().unwrap());
            // Each answer was the whole file, each body the whole upload: the same on both.
            match workload {
                "download" => assert!(bytes_in >= responses * 64 * MIB, "{system}: {s}"),
                "upload" => assert!(bytes_out >= responses * 64 * MIB, "{system}: {s}"),
                _ => assert!(bytes_out >= 20 * MIB, "{system}: a blob went up: {s}"),
            }
        }
    }
    for c in &cells {
        let server = c["memory"].as_array().unwrap().iter().find(|m| m[0] == "server");
        assert!(server.is_some_and(|m| m[1].as_f64().unwrap() > 0.0), "{c}");
        // nginx, the baseline, is the peer of the server that is wirespeed's.
        let peer_of = if c["system"] == "nginx" { Some("wirespeed") } else { None };
        assert_eq!(c.get("compared_with").and_then(Value::as_str), peer_of, "{c}");
    }
}

/// wirespeed against ethr on loopback, test by test: ethr's rows are its own client's, and
/// every load (ours too) ran as a process of its own, so its CPU is in the report.
#[test]
fn benches_ethr_against_wirespeed() {
    let (cells, dir) = smoke("benches/ethr.toml");
    assert_eq!(cells.len(), 5 * 2, "five workloads, by two systems");
    for workload in ["tcp-1", "tcp-4", "packets", "connections", "latency"] {
        for system in ["wirespeed", "ethr"] {
            let report = run_report(dir.path(), &format!("{system}_{workload}_r1"));
            let notes = report["meta"]["notes"].to_string();
            assert_eq!(notes.contains("load made by ethr's client"), system == "ethr", "{notes}");
            let load = &report["meta"]["load_cpu"];
            let used = load["user_ns"].as_u64().unwrap() + load["system_ns"].as_u64().unwrap();
            assert!(used > 0, "{system} {workload}: {load}");
        }
    }
}

/// Connections, two ways: wirespeed's cps against its own server, closing with FIN and with RST
/// (a sweep), and a new connection for each HTTP request from wirespeed, wrk, oha and hey
/// against one nginx, each with its own flag for it.
#[test]
fn benches_cps_and_a_connection_per_request_against_wrk_oha_and_hey() {
    let (cells, dir) = smoke("benches/cps.toml");
    assert_eq!(cells.len(), 2, "one system, FIN and RST");
    for rst in [false, true] {
        let report = run_report(dir.path(), &format!("wirespeed_close_rst={rst}__r1"));
        assert_eq!(report["spec"]["rst"].as_bool(), Some(rst), "{report}");
        assert!(report["summary"]["connected"].as_u64().unwrap() > 0, "{report}");
        assert!(report["meta"]["load_cpu"]["wall_ns"].as_u64().unwrap() > 0, "{report}");
    }
    let (cells, dir) = smoke("benches/http-close.toml");
    assert_eq!(cells.len(), 4, "one workload, by four clients");
    for (client, flag) in [
        ("wirespeed", None),
        ("wrk", Some("-H Connection: close")),
        ("oha", Some("--disable-keepalive")),
        ("hey", Some("-disable-keepalive")),
    ] {
        let run = format!("{client}_close-8_r1");
        let report = run_report(dir.path(), &run);
        let notes = report["meta"]["notes"].to_string();
        if let Some(flag) = flag {
            assert!(notes.contains(flag) && notes.contains("-c 8"), "{run}: {notes}");
        } else {
            assert_eq!(report["spec"]["keepalive"].as_bool(), Some(false), "{report}");
        }
        let s = &report["summary"];
        all_answered(s, &run);
    }
}

/// vegeta as a system's client: its closed model (-rate 0 -max-workers) beside ours at the
/// same connections, its open model at the same rate, as a process of its own whose CPU the
/// report keeps.
#[test]
fn benches_vegeta_as_a_client_closed_and_open() {
    let (cells, dir) = smoke("benches/vegeta.toml");
    assert_eq!(cells.len(), 2 * 2, "two workloads, by two clients");
    for (workload, said) in [("closed-48", "-max-workers 48 -rate 0"), ("open-2000", "-rate 2000")]
    {
        let report = run_report(dir.path(), &format!("vegeta_{workload}_r1"));
        let notes = report["meta"]["notes"].to_string();
        assert!(notes.contains("load made by vegeta's client") && notes.contains(said), "{notes}");
        let s = &report["summary"];
        all_answered(s, workload);
        assert!(s["latency"]["p99_ns"].as_u64().unwrap() > 0, "{workload}: {s}");
        let load = &report["meta"]["load_cpu"];
        assert!(load["user_ns"].as_u64().unwrap() + load["system_ns"].as_u64().unwrap() > 0);
    }
    let open = run_report(dir.path(), "vegeta_open-2000_r1");
    assert_eq!(open["summary"]["target_rate"].as_f64(), Some(2000.0), "{open}");
}

/// `wirespeed bench DIR`: every scenario of a directory in one command, then one table of every
/// peer held against wirespeed's client; `--tabulate` makes the same page from the kept results.
#[test]
fn a_directory_of_benchmarks_runs_as_one_command_with_one_table() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let benches = dir.path().join("benches");
    std::fs::create_dir(&benches).unwrap();
    for name in ["http.toml", "pps.toml"] {
        std::fs::copy(example(&format!("benches/{name}")), benches.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    let ran = std::process::Command::new(common::BIN)
        .args(["bench", benches.to_str().unwrap(), "--smoke", "--no-save", "--out"])
        .arg(&out)
        .env("NO_COLOR", "1")
        .env("PATH", path_with_this_build())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(ran.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&ran.stderr));
    assert!(out.join("http/summary.json").is_file() && out.join("pps/summary.json").is_file());
    // Each scenario keeps when its runs started, and the page says it.
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("http/run.json")).unwrap()).unwrap();
    let started = facts["started"].as_str().unwrap();
    let page = std::fs::read_to_string(out.join("performance.md")).unwrap();
    let shown = started.replacen('T', " ", 1);
    assert!(page.contains(&format!("| http | {} |", shown.trim_end_matches('Z'))), "{page}");
    assert!(stdout.ends_with(&format!("\n{page}")), "the page is printed last: {stdout}");
    for (scenario, workload, peer) in [
        ("http", "h1-32", "wrk"),
        ("http", "h1-32", "oha"),
        ("http", "h1-32", "h2load"),
        ("http", "h1-32", "hey"),
        ("pps", "udp-64", "iperf3-3.12"),
        ("pps", "udp-64", "iperf3-3.21"),
        ("pps", "udp-64", "sockperf"),
    ] {
        let row = format!("| {scenario} | {workload} | ");
        let line = page.lines().find(|l| l.starts_with(&row) && l.contains(&format!("| {peer} |")));
        let line = line.unwrap_or_else(|| panic!("no row for {peer}: {page}"));
        // Each load ran as a process of its own, so its CPU per unit is held against the peer's.
        assert!(line.contains("× per "), "{line}");
    }
    let csv = std::fs::read_to_string(out.join("ratios.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7, "{csv}");
    // The page again, from the kept results alone.
    let again = common::client(&["bench", "--tabulate", out.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(String::from_utf8_lossy(&again.stdout), page);
}

/// docs/performance.md is exactly what `wirespeed bench --tabulate` makes of the results kept in
/// docs/performance/ (so no figure on it is typed by hand).
#[test]
fn the_performance_page_is_what_its_kept_results_render() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let kept = root.join("docs/performance");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("performance");
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(&kept).unwrap() {
        let path = entry.unwrap().path();
        let to = copy.join(path.file_name().unwrap());
        if path.is_dir() {
            std::fs::create_dir(&to).unwrap();
            for file in ["summary.json", "versions.json", "run.json"] {
                // A scenario's own run.json is kept since it was written (older ones have none).
                if file != "run.json" || path.join(file).is_file() {
                    std::fs::copy(path.join(file), to.join(file)).unwrap();
                }
            }
        } else {
            std::fs::copy(&path, &to).unwrap();
        }
    }
    let made = common::client(&["bench", "--tabulate", copy.to_str().unwrap()]);
    assert_eq!(made.status.code(), Some(0), "{}", String::from_utf8_lossy(&made.stderr));
    let page = std::fs::read_to_string(root.join("docs/performance.md")).unwrap();
    assert_eq!(String::from_utf8_lossy(&made.stdout), page, "docs/performance.md was edited by hand, or its data changed: run `wirespeed bench --tabulate docs/performance > docs/performance.md`");
    let csv = std::fs::read_to_string(kept.join("ratios.csv")).unwrap();
    assert_eq!(std::fs::read_to_string(copy.join("ratios.csv")).unwrap(), csv);
}

#[test]
fn every_benchmark_is_exercised_here() {
    let mut names: Vec<String> = std::fs::read_dir(example("benches/"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".toml") && n != "goals.toml")
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bandwidth.toml",
            "cps.toml",
            "delay-line.toml",
            "distributed.toml",
            "dns.toml",
            "dnspyre.toml",
            "doh.toml",
            "ethr.toml",
            "http-close.toml",
            "http-delay.toml",
            "http-fixture.toml",
            "http-open.toml",
            "http.toml",
            "http2.toml",
            "http3.toml",
            "iperf3-interop.toml",
            "latency-busy-poll.toml",
            "latency.toml",
            "pps.toml",
            "quic.toml",
            "vegeta.toml",
            "web.toml"
        ]
    );
}

/// `benches/builds/`: two builds side by side, here this build as both, the old one run as
/// another build's client by its path (`OLD`): every cell runs once, the old side's report is
/// the one its process printed (with that process's CPU), and the directory's table pairs the
/// new build over the old, workload by workload. Without `OLD` the file is refused, saying so.
#[test]
fn benches_builds_before_after() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let builds = example("benches/builds/");
    let out = std::process::Command::new(common::BIN)
        .args(["bench", builds.to_str().unwrap(), "--smoke", "--no-save", "--out"])
        .arg(dir.path())
        .env("OLD", common::BIN)
        .env("NO_COLOR", "1")
        .env("PATH", path_with_this_build())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // Each build's version, asked of its own binary (the version command is the cell's).
    let version = |build: &str| {
        stdout.lines().find(|l| l.starts_with(&format!("version  {build}: "))).map(str::to_string)
    };
    let old = version("old").expect(&stdout);
    assert!(
        old.contains(&format!("{} --version", common::BIN)) && old.contains("printed \"wirespeed "),
        "{old}"
    );
    let new = version("new").expect(&stdout);
    assert!(new.contains("\"wirespeed --version\" printed \"wirespeed "), "{new}");
    let kept = dir.path().join("before-after");
    let cells: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(kept.join("summary.json")).unwrap()).unwrap();
    assert_eq!(cells.len(), 2 * 10, "{cells:?}");
    for c in &cells {
        assert_eq!((c["failed"].as_u64(), c["skipped"].as_u64()), (Some(0), Some(0)), "{c}");
        assert!(c["values"][0].as_f64().unwrap() > 0.0, "{c}");
    }
    // The old build's client ran as a process of its own, by its path, and said so.
    let report = kept.join("runs/old_tcp-rtt_r1/report.json");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let notes = report["meta"]["notes"].to_string();
    assert!(notes.contains("load made by another build of wirespeed"), "{notes}");
    assert!(notes.contains(common::BIN), "{notes}");
    assert!(report["meta"]["load_cpu"]["user_ns"].as_u64().is_some(), "{report}");
    // New over old, every workload, the figure's direction kept.
    let csv = std::fs::read_to_string(dir.path().join("ratios.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 10, "{csv}");
    assert!(rows.iter().all(|r| r.contains(",new,old,")), "{csv}");
    assert!(
        rows.iter().any(|r| r.starts_with("before-after,tcp-rtt,") && r.contains(",false,")),
        "{csv}"
    );

    // Without OLD: refused, with the line that needs it.
    let refused = std::process::Command::new(common::BIN)
        .args(["bench", builds.join("before-after.toml").to_str().unwrap(), "--list"])
        .env_remove("OLD")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("{env.OLD}: OLD is not set in the environment"), "{said}");
}

#[test]
fn every_example_is_exercised_here() {
    let mut names: Vec<String> = std::fs::read_dir(example(""))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "dns-servers.toml",
            "ethr.toml",
            "frp-http.toml",
            "frp-transports.toml",
            "gost-http.toml",
            "gost-transports.toml",
            "rathole-http.toml",
            "rathole-transports.toml",
            "rathole-vs-frp-loss.toml",
            "rathole-vs-frp.toml"
        ]
    );
}
