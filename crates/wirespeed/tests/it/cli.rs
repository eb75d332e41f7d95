//! The built binary, end to end: a real `wirespeed server` process, clients run as processes,
//! their exit codes, output formats and saved results.

use std::process::{Child, Command, Stdio};

use crate::common::{self, client, free_port, server, StockIperf3, BIN};

#[test]
fn json_output_has_the_documented_shape_and_exit_0() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let out = client(&["bw", &target, "-t", "0.5", "-i", "0.25", "--format", "json", "--no-save"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "bandwidth");
    assert!(v["summary"]["received_bps"].as_f64().unwrap() > 0.0);
    assert!(v["meta"]["start_time"].as_str().unwrap().ends_with('Z'));
    assert!(!v["intervals"].as_array().unwrap().is_empty());
}

#[test]
fn latency_beside_a_bandwidth_test_is_probed_per_interval_and_summed_up() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let args =
        ["bw", &target, "-R", "-t", "1", "-i", "0.25", "--latency", "-f", "json", "--no-save"];
    let out = client(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // TCP handshakes and UDP echoes, ten a second each over the second measured (each in the
    // interval it ended in), and ten of each before it.
    for (summary, per_interval) in [("latency", "probe_rtt"), ("udp_latency", "probe_udp_rtt")] {
        let l = &v["summary"][summary];
        assert_eq!((l["idle"]["count"].as_u64(), l["failed"].as_u64()), (Some(10), Some(0)), "{l}");
        let loaded = l["loaded"]["count"].as_u64().unwrap();
        assert!((5..=12).contains(&loaded), "{summary}: {loaded} probes");
        let in_intervals: u64 = v["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i[per_interval]["count"].as_u64().unwrap())
            .sum();
        assert!(in_intervals >= loaded, "{summary}: {in_intervals} in intervals, {loaded} in all");
        assert!(l["loaded"]["p50_ns"].as_u64().unwrap() > 0);
    }
    assert!(v["meta"]["notes"].as_array().is_none_or(|n| n.is_empty()), "{}", v["meta"]);
    // The sender's kernel's own view, each interval: what it paced at and saw delivered.
    for iv in v["intervals"].as_array().unwrap() {
        let f = &iv["flows"][0];
        assert!(f["pacing_bps"].as_u64() > Some(0) && f["delivery_bps"].as_u64() > Some(0), "{f}");
    }
    // Text: a line per interval and the summary's.
    let out = client(&["bw", &target, "-t", "0.5", "-i", "0.25", "--latency", "--no-save"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[RTT]") && text.contains("Latency    idle p50"), "{text}");
    assert!(text.contains("UDP echo p50") && text.contains("  UDP echo idle p50"), "{text}");
    assert!(text.contains("   delivery ") && text.contains(" pacing "), "{text}");
    // Without it, nothing is probed; a stock iperf3 server takes no extra connections.
    let out = client(&["bw", &target, "-t", "0.3", "-f", "json", "--no-save"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["summary"].get("latency").is_none() && v["intervals"][0].get("probe_rtt").is_none());
    let out = client(&["bw", &target, "--latency", "--iperf3", "--no-save"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_format_renders_and_results_are_saved() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let text = client(&["bw", &target, "-u", "-b", "10M", "-t", "0.5", "--db", db, "--tag", "cli"]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("Lost/Total") && text.contains("jitter"), "{text}");
    let csv = client(&["bw", &target, "-R", "-t", "0.5", "--format", "csv", "--db", db]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.starts_with("row,index,") && csv.contains("\nsummary,"), "{csv}");
    let stream =
        client(&["bw", &target, "--bidir", "-t", "0.5", "--format", "json-stream", "--db", db]);
    let events: Vec<serde_json::Value> = String::from_utf8(stream.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["event"], "start");
    assert_eq!(events.last().unwrap()["event"], "end");
    let store = wirespeed_store::Store::open(std::path::Path::new(db)).unwrap();
    let runs =
        store.list(&wirespeed_store::RunFilter { limit: Some(10), ..Default::default() }).unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs.iter().filter(|r| r.tag.as_deref() == Some("cli")).count(), 1);
}

#[test]
fn exit_codes_say_what_went_wrong() {
    let port = free_port().to_string();
    let unreachable = client(&["bw", "127.0.0.1", "-p", &port, "-t", "0.5", "--no-save"]);
    assert_eq!(unreachable.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("cannot connect"));

    let s = server(&["--token", "abc"]);
    let target = format!("127.0.0.1:{}", s.1);
    let no_token = client(&["bw", &target, "-t", "0.5", "--no-save"]);
    assert_eq!(no_token.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&no_token.stderr).contains("--token"));
    let wrong = client(&["bw", &target, "-t", "0.5", "--no-save", "--token", "abd"]);
    assert_eq!(wrong.status.code(), Some(4));
    let right = client(&["bw", &target, "-t", "0.5", "--no-save", "--token", "abc"]);
    assert_eq!(right.status.code(), Some(0));

    let usage = client(&["bw", &target, "-P", "0"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("parallel"));
    assert_eq!(client(&["bw"]).status.code(), Some(2));
}

#[test]
fn server_killed_mid_test_gives_exit_5() {
    let mut s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let mut child = Command::new(BIN)
        .args(["bw", &target, "-t", "10", "--no-save", "--format", "json-stream"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The test is running once its start event is out (the server accepted it).
    let mut events = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut events, &mut first).unwrap();
    assert!(first.contains("\"start\""), "{first}");
    // SIGTERM: the server shuts down cleanly and tells its client.
    send_sigterm(s.0.id());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shutting down"));
    assert!(s.0.wait().unwrap().success(), "server exits 0 after SIGTERM");
}

fn send_sigterm(pid: u32) {
    Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
}

#[test]
fn quick_runs_every_test_kind_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("quick.svg");
    let out = client(&["quick", "-t", "0.5", "--no-save", "--chart", chart.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    for row in [
        "TCP upload",
        "TCP download",
        "bidir",
        "QUIC upload",
        "UDP upload",
        "64 B packets",
        "TCP latency",
        "UDP latency",
        "TCP connections/s",
        "UDP ping",
        "ICMP trace",
        "HTTP/1.1 requests",
        "HTTP/3 requests",
        "DNS queries (UDP)",
        "Web download (LibreSpeed)",
        "Web upload (LibreSpeed)",
        "Responsiveness (RPM)",
    ] {
        assert!(table.contains(row), "missing {row}: {table}");
    }
    assert!(!table.contains("FAILED"), "{table}");
    // The unpaced packet row says what was offered and what arrived ("loss 75.78 %" read
    // like a defect to a newcomer).
    let pps = table.lines().find(|l| l.contains("64 B packets")).unwrap();
    assert!(pps.contains("offered") && pps.contains("delivered") && !pps.contains("loss"), "{pps}");
    // Rows are named alike ("tcp bidir" used to stand beside "TCP upload"), and a web row's
    // figure stands in the column of the way its bodies went: request heads are no transfer.
    assert!(table.contains("TCP bidir (upload)") && table.contains("TCP bidir (download)"));
    let cells = |row: &str| -> Vec<String> {
        let line = table.lines().find(|l| l.starts_with(row)).unwrap();
        line[row.len()..]
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let download = cells("Web download (LibreSpeed)");
    assert!(download[0] == "-" && download[1].ends_with("bit/s"), "{download:?}");
    let upload = cells("Web upload (LibreSpeed)");
    assert!(upload[0].ends_with("bit/s") && upload[1] == "-", "{upload:?}");
    // Every run's charts in one image, each titled with its row.
    let svg = std::fs::read_to_string(&chart).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let titles: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    for title in [
        "TCP upload: Throughput per interval",
        "TCP latency: Latency CDF",
        "DNS queries (UDP): Rate per interval",
    ] {
        assert!(titles.contains(&title), "no chart {title:?} in {titles:?}");
    }
}

/// `--version` names the commit the binary was built from (build.rs), so two builds of one
/// version compared side by side (benches/builds/) say which is which.
#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let version = String::from_utf8(client(&["--version"]).stdout).unwrap();
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git: the tests run in a checkout");
    let head = String::from_utf8(head.stdout).unwrap();
    let want = format!("wirespeed {} (commit {})", env!("CARGO_PKG_VERSION"), head.trim());
    assert_eq!(version.trim(), want);
}

#[test]
fn help_reads_well() {
    let out = client(&["bw", "--help"]);
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--udp",
        "--parallel",
        "--reverse",
        "--bidir",
        "--bitrate",
        "--omit",
        "--congestion",
        "--dscp",
        "--token",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

/// Every key path of a JSON value (array elements collapsed to `[]`).
fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                key_paths(x, &format!("{prefix}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

/// Keys of iperf3's -J that wirespeed does not measure (documented in docs/metrics.md).
const IPERF3_KEYS_NOT_FILLED: &[&str] = &[
    ".intervals[].streams[].pmtu",
    ".intervals[].streams[].snd_wnd",
    ".end.streams[].sender.max_snd_wnd",
    ".start.cookie",
    ".start.tcp_mss_default",
    ".start.sndbuf_actual",
    ".start.rcvbuf_actual",
    ".start.timestamp.timemillisecs",
    ".start.test_start.fqrate",
    ".start.test_start.interval",
    ".start.test_start.gso",
    ".start.test_start.gro",
    ".start.fq_rate",
];

#[test]
fn iperf3_json_has_every_key_stock_iperf3_writes() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    for args in [&["-t", "1"][..], &["-t", "1", "--bidir"], &["-t", "1", "-u", "-b", "10M", "-R"]] {
        // The stock client against our server: iperf3's own -J for this test.
        let stock = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &s.1.to_string(), "-J"])
            .args(args)
            .output()
            .expect("iperf3 is installed (scripts/test.sh installs it)");
        let stock: serde_json::Value = serde_json::from_slice(&stock.stdout).unwrap();
        let mut ours_args = vec!["bw", &target, "--format", "iperf3-json", "--no-save"];
        ours_args.extend_from_slice(args);
        let out = client(&ours_args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let (mut want, mut got) = (Default::default(), Default::default());
        key_paths(&stock, "", &mut want);
        key_paths(&ours, "", &mut got);
        let missing: Vec<_> = want
            .iter()
            .filter(|k| !got.contains(*k) && !IPERF3_KEYS_NOT_FILLED.contains(&k.as_str()))
            .collect();
        assert!(missing.is_empty(), "{args:?}: keys iperf3 writes and we do not: {missing:?}");
        // Same numbers a script would read.
        let sum = if args.contains(&"-u") { "sum" } else { "sum_received" };
        assert!(ours["end"][sum]["bits_per_second"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn bandwidth_against_a_stock_iperf3_server() {
    let stock = StockIperf3::start();
    let out = stock.bw(&["-t", "1", "--format", "json", "--no-save"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["meta"]["server_version"], "iperf3");
    assert!(v["summary"]["received_bytes"].as_u64().unwrap() > 0);
    assert_eq!(v["intervals"][0]["measured_at"], "client");
}

#[test]
fn latency_renders_every_format_and_saves() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let db_arg = db_path.to_str().unwrap();
    let out = client(&["latency", &target, "-n", "500", "--format", "json", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "latency");
    assert_eq!(v["summary"]["received"], 500);
    let p50 = v["summary"]["rtt"]["p50_ns"].as_u64().unwrap();
    assert!(p50 > 0 && p50 <= v["summary"]["rtt"]["p99_ns"].as_u64().unwrap());
    let in_histogram: u64 = v["summary"]["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(in_histogram, 500);
    let store = wirespeed_store::Store::open(&db_path).unwrap();
    let runs =
        store.list(&wirespeed_store::RunFilter { limit: Some(10), ..Default::default() }).unwrap();
    assert_eq!(runs.len(), 1);
    let saved = store.get(runs[0].id).unwrap().unwrap();
    assert_eq!(saved.kind().name(), "latency");

    let text = client(&["lat", &target, "-u", "-n", "300", "-P", "2", "--no-save"]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("UDP latency, 2 connections") && text.contains("p99.99"), "{text}");

    let csv = client(&["lat", &target, "-n", "200", "--format", "csv", "--no-save"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == width), "ragged rows: {csv}");
    assert!(csv.lines().any(|l| l.starts_with("summary,")));

    // iperf3's schema has no latency test: not offered, a clear error, not a half document.
    let iperf = client(&["lat", &target, "-n", "10", "--format", "iperf3-json", "--no-save"]);
    assert_eq!(iperf.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&iperf.stderr).contains("invalid value 'iperf3-json'"));
}

#[test]
fn latency_errors_have_exit_codes() {
    // Nothing listening: 3.
    let port = free_port().to_string();
    let out = client(&["latency", "127.0.0.1", "-p", &port, "-n", "10", "--no-save"]);
    assert_eq!(out.status.code(), Some(3));
    // A listener that accepts and never answers: no test started, so not "mid-test" but
    // unreachable as a wirespeed server, 3.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    let out = client(&["latency", "127.0.0.1", "-p", &port, "-n", "10", "--no-save"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    drop(silent);
    // Out-of-range options are refused before connecting: 1.
    let out = client(&["latency", "127.0.0.1", "-l", "0", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("message length"));
}

/// The kernel's count of UDP datagrams sent over IPv4 in this network namespace.
fn udp_out_datagrams() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
    let at = names.split_whitespace().position(|n| n == "OutDatagrams").unwrap();
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

#[test]
fn pps_counts_small_datagrams_both_ways() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let before = udp_out_datagrams();
    let out = client(&["pps", &target, "-t", "0.5", "-i", "0.25", "--format", "json", "--no-save"]);
    let kernel_sent = udp_out_datagrams() - before;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every datagram counted is a packet the kernel sent (the counter is the whole machine's,
    // so it may rise by more): with GSO, 25.8 M datagrams a second were counted while the
    // kernel sent 0.8 M packets in the whole run.
    let counted = v["summary"]["sent_packets"].as_u64().unwrap();
    assert!(
        counted <= kernel_sent,
        "{counted} datagrams counted, {kernel_sent} sent by the kernel"
    );
    assert_eq!(v["spec"]["protocol"], "udp");
    assert_eq!(v["spec"]["length"], 64);
    assert_eq!(v["spec"]["bitrate_bps"], 0);
    let sum = &v["summary"];
    let (sent, received) =
        (sum["sent_packets"].as_u64().unwrap(), sum["received_packets"].as_u64().unwrap());
    assert!(received > 0 && received <= sent, "{sum}");
    assert_eq!(sent - received, sum["lost_packets"].as_u64().unwrap());
    assert!(sum["received_pps"].as_f64().unwrap() > 0.0);
    assert!(sum["sent_pps"].as_f64().unwrap() >= sum["received_pps"].as_f64().unwrap() * 0.9);

    // --rate is datagrams per second per socket: the spec carries it as a bit rate.
    let out = client(&[
        "pps",
        &target,
        "-t",
        "0.3",
        "--rate",
        "20k",
        "-P",
        "2",
        "-R",
        "-l",
        "100",
        "--format",
        "json",
        "--no-save",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["spec"]["bitrate_bps"], 20_000 * 100 * 8);
    assert_eq!(v["spec"]["direction"], "download");
    let text = client(&["pps", &target, "-t", "0.3", "--no-save"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("pkt/s"));
    assert_eq!(client(&["pps", &target, "-l", "8", "--no-save"]).status.code(), Some(1));
}

#[test]
fn cps_renders_every_format_saves_and_has_exit_codes() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let db_arg = db_path.to_str().unwrap();
    let out = client(&["cps", &target, "-n", "400", "-P", "2", "--format", "json", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "cps");
    assert_eq!(v["summary"]["connected"], 400);
    assert_eq!(v["summary"]["server_accepted"], 400);
    assert_eq!(v["summary"]["failures"]["refused"], 0);
    let saved = wirespeed_store::Store::open(&db_path).unwrap();
    assert_eq!(common::newest_kind(&saved), "cps");

    let text = client(&["cps", &target, "-t", "0.3", "-i", "0.1", "--rst", "--no-save"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("RST close") && text.contains("connect time:"), "{text}");
    let csv = client(&["cps", &target, "-n", "100", "--format", "csv", "--no-save"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == width), "ragged rows: {csv}");
    assert!(csv.lines().next().unwrap().contains("failed_ports_exhausted"), "{csv}");

    // A closed port in external mode: every attempt refused, exit 3, the cause named once.
    let port = free_port();
    let out = client(&["cps", "-x", &format!("127.0.0.1:{port}"), "-n", "20", "--no-save"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(refused 20)") && err.matches("os error 111").count() == 1, "{err}");
    // External mode needs a port: 1, before any traffic.
    let out = client(&["cps", "-x", "127.0.0.1", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs the listener's port"));
}

use wirespeed_testkit::netns;

#[test]
fn ping_over_icmp_tcp_and_udp_with_exit_codes() {
    let s = server(&[]);
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let target = format!("127.0.0.1:{}", s.1);
    let out = client(&[
        "ping",
        &target,
        "--udp",
        "-c",
        "3",
        "-i",
        "0.02",
        "-f",
        "json",
        "--db",
        db_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["kind"].as_str(), v["summary"]["received"].as_u64()), (Some("ping"), Some(3)));
    assert_eq!(v["probes"][0]["outcome"], "reply");
    let store = wirespeed_store::Store::open(&db_path).unwrap();
    assert_eq!(common::newest_kind(&store), "ping");

    let text = client(&[
        "ping",
        "127.0.0.1",
        "--tcp",
        &s.1.to_string(),
        "-c",
        "2",
        "-i",
        "0.02",
        "--no-save",
    ]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("connected to 127.0.0.1:") && text.contains("rtt min/avg/max/mdev"),
        "{text}"
    );
    let csv = client(&[
        "ping",
        "127.0.0.1",
        "--tcp",
        &s.1.to_string(),
        "-c",
        "2",
        "-i",
        "0.02",
        "-f",
        "csv",
        "--no-save",
    ]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == width), "ragged rows: {csv}");

    // Nobody answers: the summary is still printed, and the exit code is 3.
    let closed = free_port().to_string();
    let out =
        client(&["ping", "127.0.0.1", "--tcp", &closed, "-c", "2", "-i", "0.02", "--no-save"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 probes sent, 0 received, 2 errors"));
    // --udp against something that is not a wirespeed server: 3 (nothing there) before any probe.
    let out = client(&["ping", &format!("127.0.0.1:{closed}"), "--udp", "-c", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(3));
    // https is refused up front with a reason.
    let out = client(&["ping", "--http", "https://127.0.0.1/", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("plain HTTP only"));
}

#[test]
fn icmp_ping_sockets_and_their_permissions() {
    let Some(ns) = netns::Netns::new("ping") else { return };
    // A fresh namespace allows ping sockets to nobody (group range "1 0"): a clear refusal, 8.
    let out = ns
        .command(BIN)
        .args(["ping", "127.0.0.1", "-c", "1", "--icmp-socket", "dgram", "--no-save"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("net.ipv4.ping_group_range"));
    // Neither ping sockets nor raw sockets for an unprivileged user: 8, and what to try instead.
    let out = ns
        .command("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "ping",
            "127.0.0.1",
            "-c",
            "1",
            "--no-save",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("try --tcp PORT or --udp"));
    // Once the group may, the unprivileged socket works on both families.
    ns.run("sysctl -qw net.ipv4.ping_group_range='0 2147483647'");
    for host in ["127.0.0.1", "::1"] {
        let out = ns
            .command("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                BIN,
                "ping",
                host,
                "-c",
                "2",
                "-i",
                "0.02",
                "--icmp-socket",
                "dgram",
                "--no-save",
            ])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{host}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("seq=2 ttl=64"), "{host}: {text}");
    }
}

/// Debian's socat as an echo service: every byte it reads goes back (`PIPE`).
struct Socat(Child);

impl Socat {
    fn echo(listen: &str) -> Option<Self> {
        if Command::new("socat").arg("-V").output().is_err() {
            wirespeed_testkit::skip::not_installed("socat", "socat");
            return None;
        }
        let child =
            Command::new("socat").args([listen, "PIPE"]).stderr(Stdio::null()).spawn().unwrap();
        let echo = Self(child);
        echo.wait_bound(listen);
        Some(echo)
    }

    /// Waits until socat's socket is bound (listening, for TCP), as `/proc/net` shows it: a
    /// readiness wait, bounded, instead of a sleep.
    fn wait_bound(&self, listen: &str) {
        let (kind, rest) = listen.split_once(':').unwrap();
        let port: u16 = rest.split(',').next().unwrap().parse().unwrap();
        let (table, state) = match kind {
            "TCP-LISTEN" => ("/proc/net/tcp", Some("0A")),
            "TCP6-LISTEN" => ("/proc/net/tcp6", Some("0A")),
            _ if kind.starts_with("UDP6") => ("/proc/net/udp6", None),
            _ => ("/proc/net/udp", None),
        };
        let bound = || {
            let text = std::fs::read_to_string(table).unwrap_or_default();
            text.lines().skip(1).any(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let local_port = f.get(1).and_then(|a| a.rsplit(':').next());
                local_port.and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(port)
                    && state.is_none_or(|s| f.get(3) == Some(&s))
            })
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !bound() {
            assert!(std::time::Instant::now() < deadline, "socat never bound {listen}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for Socat {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn latency_against_any_echo_service() {
    let (tcp, udp, v6) = (free_port(), free_port(), free_port());
    let Some(_tcp4) = Socat::echo(&format!("TCP-LISTEN:{tcp},fork,reuseaddr,bind=127.0.0.1"))
    else {
        return;
    };
    let Some(_udp4) = Socat::echo(&format!("UDP-RECVFROM:{udp},fork,bind=127.0.0.1")) else {
        return;
    };
    let Some(_tcp6) = Socat::echo(&format!("TCP6-LISTEN:{v6},fork,reuseaddr,bind=[::1]")) else {
        return;
    };
    for (args, n) in [
        (vec!["latency", "-x", &format!("127.0.0.1:{tcp}") as &str, "-n", "1000", "-P", "2"], 1000),
        (vec!["latency", "-x", &format!("127.0.0.1:{udp}"), "-u", "-n", "50"], 50),
        (vec!["latency", "-x", &format!("[::1]:{v6}"), "-n", "300", "-l", "1K"], 300),
    ] {
        let out = Command::new(BIN).args(&args).args(["-f", "json", "--no-save"]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["spec"]["external"], true);
        assert_eq!(v["summary"]["received"], n, "{args:?}");
        assert!(v["meta"].get("server_version").is_none());
    }
    // Nothing listening: 3. No port: 1, before any traffic.
    let closed = free_port();
    let out = client(&["latency", "-x", &format!("127.0.0.1:{closed}"), "-n", "5", "--no-save"]);
    assert_eq!(out.status.code(), Some(3));
    let out = client(&["latency", "-x", "127.0.0.1", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn server_serves_the_http_fixture_when_asked() {
    let http = free_port();
    let _s = server(&["--http", &http.to_string(), "--http-body", "1K"]);
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}"])
        .arg(format!("http://127.0.0.1:{http}/"))
        .output();
    let Ok(out) = out else {
        wirespeed_testkit::skip::not_installed("curl", "curl");
        return;
    };
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200 1024");
    // A body size it cannot serve is refused at start, with the flag named.
    let out =
        client(&["server", "-p", &free_port().to_string(), "--http", "0", "--http-body", "99G"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--http-body 99G"));
}

/// A `wirespeed server` with its HTTP fixture on, and the fixture's URL.
fn http_fixture_server() -> (common::Server, String) {
    let http = free_port();
    let s = server(&["--http", &http.to_string()]);
    (s, format!("http://127.0.0.1:{http}/"))
}

/// A password in a URL is sent (as Basic credentials) but never shown or saved: the report
/// and the store hold the URL with `***` in its place, for `http` and `ping --http` alike.
#[test]
fn a_password_in_the_url_is_not_shown_or_saved() {
    let (_s, url) = http_fixture_server();
    let secret = url.replacen("http://", "http://alice:hunter2@", 1);
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let db = db_path.to_str().unwrap();
    let out = client(&["http", &secret, "-n", "5", "-f", "json", "--db", db]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = client(&["ping", "--http", &secret, "-c", "1", "-i", "0.1", "--db", db]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!shown.contains("hunter2"), "{shown}");
    let store = wirespeed_store::Store::open(&db_path).unwrap();
    let rows = store.list(&wirespeed_store::RunFilter::default()).unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let saved = serde_json::to_string(&store.get(row.id).unwrap().unwrap()).unwrap();
        assert!(!saved.contains("hunter2") && saved.contains("alice:***@"), "{saved}");
    }
}

#[test]
fn http_load_against_the_fixture_in_every_format() {
    let (_s, url) = http_fixture_server();
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let out = client(&[
        "http",
        &url,
        "-c",
        "4",
        "-n",
        "300",
        "-f",
        "json",
        "--db",
        db_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["kind"].as_str(), v["summary"]["responses"].as_u64()), (Some("http"), Some(300)));
    assert_eq!(v["summary"]["status"]["200"], 300);
    let store = wirespeed_store::Store::open(&db_path).unwrap();
    assert_eq!(common::newest_kind(&store), "http");
    let text = client(&[
        "http",
        &url,
        "-d",
        "0.3",
        "-i",
        "0.1",
        "-m",
        "POST",
        "--body",
        "hello",
        "-H",
        "X-Test: 1",
        "--no-save",
    ]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("POST http://") && text.contains("status: 200"), "{text}");
    let csv = client(&["http", &url, "-n", "50", "-f", "csv", "--no-save"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == width), "ragged rows: {csv}");
    // Bad input: a URL that is not http, a header without a colon, a closed port.
    let out = client(&["http", "ftp://127.0.0.1/", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    let out = client(&["http", &url, "-H", "no colon", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    let out =
        client(&["http", &format!("http://127.0.0.1:{}/", free_port()), "-n", "3", "--no-save"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn http_open_model_sweeps_targets_and_vegeta_lines() {
    let http = free_port();
    let _s = server(&["--http", &http.to_string()]);
    let url = format!("http://127.0.0.1:{http}/");
    // A sweep: one step per rate, in JSON and as CSV step rows, and a table in text.
    let out = client(&["http", &url, "-r", "200,400", "-n", "40", "-f", "json", "--no-save"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(
        (steps[1]["rate"].as_f64(), steps[1]["summary"]["responses"].as_u64()),
        (Some(400.0), Some(40))
    );
    assert_eq!(v["summary"]["responses"], 80);
    // The second step starts after the first has run (its CSV row used to say 0 s as well).
    let start = |i: usize| steps[i]["start_ns"].as_u64().unwrap();
    let first_took = steps[0]["summary"]["duration_ns"].as_u64().unwrap();
    assert!(start(1) >= start(0) + first_took, "{steps:?}");
    let csv = client(&["http", &url, "-r", "200,400", "-n", "20", "-f", "csv", "--no-save"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().filter(|l| l.starts_with("step,")).count(), 2, "{csv}");
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == width), "ragged rows: {csv}");
    let text = client(&["http", &url, "-r", "100,300", "-n", "20", "--no-save"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("latency vs rate:") && text.contains("open model"), "{text}");
    assert!(text.contains("scheduled send time"), "says what latency includes: {text}");

    // A targets file, round-robin; --format vegeta writes one line per request.
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    std::fs::write(&targets, format!("GET {url}\n\nGET {url}?status=404\n")).unwrap();
    let out = client(&[
        "http",
        "--targets",
        targets.to_str().unwrap(),
        "-n",
        "30",
        "-c",
        "1",
        "-f",
        "vegeta",
        "--no-save",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 30);
    let not_found = lines.iter().filter(|l| l["code"] == 404).count();
    assert_eq!(not_found, 15);
    assert!(lines.iter().all(|l| l["latency"].as_u64().unwrap() > 0 && l["method"] == "GET"));
    let mut seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..30).collect::<Vec<_>>());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("responses"),
        "the report goes to stderr"
    );

    // Bad input, each with a message that says what is wrong.
    let cases: [(&[&str], &str); 5] = [
        (&["-r", "100,fast"], "--rate 'fast'"),
        (&["-r", "0"], "each rate"),
        (&["--streams", "4"], "--h2"),
        (&["--targets", "/nonexistent/t.txt"], "--targets /nonexistent/t.txt"),
        (&["-f", "vegeta", "--unix-socket", "/nonexistent.sock"], "unix:/nonexistent.sock"),
    ];
    for (extra, says) in cases {
        let mut args = vec!["http", &url, "--no-save", "-n", "3"];
        if extra[0] == "--targets" {
            args.remove(1);
        }
        args.extend_from_slice(extra);
        let out = client(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{extra:?}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let other = dir.path().join("other.txt");
    std::fs::write(&other, format!("GET {url}\n\nGET http://127.0.0.2:{http}/\n")).unwrap();
    let out = client(&["http", "--targets", other.to_str().unwrap(), "--no-save"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("every request must go to"));
    // Only http offers vegeta's lines: refused as a value bandwidth does not have.
    let out = client(&["bandwidth", "127.0.0.1", "-f", "vegeta"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'vegeta'"));
}

#[test]
fn dns_against_the_server_fixture_in_every_format_and_saved() {
    let dns = free_port();
    let _s = server(&["--dns", &dns.to_string(), "--dns-hosts", "50"]);
    let port = dns.to_string();
    let dir = tempfile::tempdir().unwrap();
    let queries = dir.path().join("q.txt");
    std::fs::write(
        &queries,
        "; a comment\nwww.example.test A\nhost7.example.test A\nnx1.example.test A\n",
    )
    .unwrap();
    let q = queries.to_str().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let out = client(&[
        "dns", "-p", &port, "-d", q, "-n", "100", "-c", "2", "-f", "json", "--db", db, "--tag",
        "dns",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "dns");
    assert_eq!(v["summary"]["completed"], 300);
    assert_eq!(v["summary"]["rcodes"][1]["name"], "NXDOMAIN");
    assert_eq!(v["summary"]["rcodes"][1]["count"], 100);
    let text = client(&["dns", "-p", &port, "-d", q, "-l", "0.3", "-S", "0.1", "--db", db]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    for line in [
        "Queries sent:",
        "Queries completed:",
        "Response codes:       NOERROR",
        "Queries per second:",
        "Latency StdDev (s):",
        "Testing complete (time limit)",
    ] {
        assert!(text.contains(line), "missing {line}: {text}");
    }
    let csv = client(&["dns", "-p", &port, "-d", q, "-n", "3", "--tcp", "-f", "csv", "--no-save"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(
        csv.lines().all(|l| l.split(',').count() == width) && csv.contains("\nsummary,"),
        "{csv}"
    );
    let store = wirespeed_store::Store::open(std::path::Path::new(db)).unwrap();
    let rows =
        store.list(&wirespeed_store::RunFilter { limit: Some(10), ..Default::default() }).unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.kind == "dns" && r.target == "127.0.0.1"));
    let saved = store.get(rows[1].id).unwrap().unwrap();
    assert_eq!(serde_json::to_value(&saved).unwrap()["summary"]["completed"], 300);
}

/// Starts a server with the DNS fixture serving `zone`, which must refuse to start (exit 1);
/// returns what it said.
fn zone_refused(zone: &std::path::Path) -> String {
    let port = free_port().to_string();
    let zone = zone.to_str().unwrap();
    let out = client(&["server", "-B", "127.0.0.1", "-p", &port, "--dns", "0", "--zone", zone]);
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A zone file split with `$INCLUDE` (read relative to the including file, each with its
/// origin) is served whole: every included name answers NOERROR, a name nowhere NXDOMAIN.
#[test]
fn a_zone_with_includes_is_served_whole() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("parts")).unwrap();
    std::fs::write(
        dir.path().join("main.zone"),
        "$ORIGIN t.\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 127.0.0.1\n$INCLUDE parts/hosts.zone\n$INCLUDE parts/sub.zone sub.t.\n",
    )
    .unwrap();
    // Relative to parts/, where the file that names it lives.
    std::fs::write(dir.path().join("parts/hosts.zone"), "h1 A 192.0.2.1\n$INCLUDE more.zone\n")
        .unwrap();
    std::fs::write(dir.path().join("parts/more.zone"), "h2 TXT \"a\\032b\"\n").unwrap();
    std::fs::write(dir.path().join("parts/sub.zone"), "www AAAA 2001:db8::1").unwrap();
    let dns = free_port();
    let zone = dir.path().join("main.zone");
    let _s = server(&["--dns", &dns.to_string(), "--zone", zone.to_str().unwrap()]);
    let queries = dir.path().join("q.txt");
    std::fs::write(&queries, "h1.t A\nh2.t TXT\nwww.sub.t AAAA\nh3.t A\n").unwrap();
    let out = client(&[
        "dns",
        "-p",
        &dns.to_string(),
        "-d",
        queries.to_str().unwrap(),
        "-n",
        "1",
        "-f",
        "json",
        "--no-save",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes = &v["summary"]["rcodes"];
    assert_eq!((&codes[0]["name"], &codes[0]["count"]), (&"NOERROR".into(), &3.into()), "{codes}");
    assert_eq!((&codes[1]["name"], &codes[1]["count"]), (&"NXDOMAIN".into(), &1.into()), "{codes}");
    // A missing include is named, with the file that asked for it.
    std::fs::remove_file(dir.path().join("parts/more.zone")).unwrap();
    let err = zone_refused(&zone);
    assert!(err.contains("$INCLUDE parts/hosts.zone") && err.contains("parts/more.zone"), "{err}");
}

#[test]
fn dns_bad_input_has_clear_errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "www.example.test A\nwww.example.test A IN\n").unwrap();
    let out = client(&["dns", "-d", bad.to_str().unwrap(), "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("unexpected 'IN' after the type"), "{err}");
    // Nothing listening: the report is still printed, and the exit code says unreachable.
    let port = free_port().to_string();
    let out = client(&["dns", "-p", &port, "-n", "1", "-t", "0.3", "--no-save"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no query was answered"));
    // A server that answers garbage: 6, the peer broke the protocol.
    let garbage = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let gport = garbage.local_addr().unwrap().port().to_string();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((_, from)) = garbage.recv_from(&mut buf) {
            let _ = garbage.send_to(b"\x00\x01 not dns", from);
        }
    });
    let out = client(&["dns", "-p", &gport, "-n", "1", "-t", "0.3", "--no-save"]);
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("malformed"));
    // Options that do not go together, and a zone file with a bad line.
    let out = client(&["dns", "-T", "2", "-c", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("threads (-T)"));
    let zone = dir.path().join("z.zone");
    std::fs::write(&zone, "$ORIGIN t.\nwww A 1.2.3.4\nbad A 999.1.1.1\n").unwrap();
    let err = zone_refused(&zone);
    assert!(err.contains("line 3"), "{err}");
}

/// A timed open-model test lasts its duration: `http -r 1 -d 1` used to end with its only
/// response, 2 ms in, and report "sent 414.9/s (41489 %)" of a 1/s target.
#[test]
fn a_timed_open_model_run_lasts_its_duration() {
    let (_s, url) = http_fixture_server();
    let out = client(&["http", &url, "-r", "1", "-d", "1", "-f", "json", "--no-save"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["summary"];
    assert_eq!(s["responses"], 1, "{s}");
    assert!(s["duration_ns"].as_u64().unwrap() >= 1_000_000_000, "{s}");
}

/// A run in which nothing answered and nothing failed (every request still waiting at the
/// end) used to print 0 responses and exit 0; and a server answering garbage was reported as
/// one that could not be connected to.
#[test]
fn http_runs_nothing_answered_say_why_with_their_exit_code() {
    // Accepts connections (the kernel does, from its backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let out = client(&["http", &url, "-c", "4", "-d", "200ms", "--no-save"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no response to any request within the test's 200 ms"), "{err}");

    let garbage = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", garbage.local_addr().unwrap());
    garbage.set_nonblocking(true).unwrap();
    let answering = std::thread::spawn(move || {
        use std::io::{Read, Write};
        // Bounded: it answers until the client is done or 10 s have passed.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < until {
            match garbage.accept() {
                Ok((mut c, _)) => {
                    let _ = c.set_nonblocking(false);
                    let mut buf = [0u8; 1024];
                    let _ = c.read(&mut buf);
                    let _ = c.write_all(b"\x00\xff garbage not http\r\n\r\n");
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
    });
    let out = client(&["http", &url, "-n", "8", "-c", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not HTTP") && !err.contains("cannot connect"), "{err}");
    drop(answering); // it ends by itself within 10 s
}

/// Before the server's greeting no test has started, so a listener that closes at once is a
/// refusal (exit 4, as a busy server sheds) and one that never answers is not a reachable
/// wirespeed server (exit 3); both used to be "lost the server mid-test" (exit 5).
#[test]
fn a_server_lost_before_its_greeting_is_not_mid_test() {
    let closing = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = closing.local_addr().unwrap().to_string();
    let closer = std::thread::spawn(move || {
        let (c, _) = closing.accept().unwrap();
        drop(c);
    });
    let out = client(&["bw", &target, "-t", "1", "--no-save"]);
    closer.join().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("before greeting"));

    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = silent.local_addr().unwrap().to_string();
    let out = client(&["bw", &target, "-t", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no greeting within"));
}

/// `--dns-hosts 100000000` used to grow by 130 MB/s and never listen.
#[test]
fn a_generated_zone_is_bounded() {
    let out = client(&["server", "-p", "0", "--dns", "0", "--dns-hosts", "100000000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in 0..=1000000"));
}

/// The same mistake gets the same exit code and words however it is spelt: a port in
/// `HOST:PORT` and in `-p`, a count past its range (which clap used to bound by the integer
/// type, not the real limit), an unknown kind, a format the test cannot render.
#[test]
fn bad_values_exit_2_with_the_real_limits() {
    let refused = |args: &[&str], says: &str| {
        let out = client(args);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    refused(&["bw", "127.0.0.1:70000", "--no-save"], "the port must be 1 to 65535");
    refused(&["bw", "127.0.0.1:0", "--no-save"], "the port must be 1 to 65535");
    refused(&["bw", "[::1]:x", "--no-save"], "the port must be 1 to 65535");
    refused(&["bw", "127.0.0.1", "-p", "70000", "--no-save"], "not in 1..=65535");
    refused(&["bw", "127.0.0.1", "-p", "0", "--no-save"], "not in 1..=65535");
    refused(&["bw", "127.0.0.1", "-P", "129", "--no-save"], "not in 1..=128");
    refused(&["bw", "127.0.0.1", "-P", "65536", "--no-save"], "not in 1..=128");
    refused(&["http", "http://127.0.0.1:9/", "-c", "0", "--no-save"], "not in 1..=10000");
    refused(&["dns", "--server", "127.0.0.1", "-c", "5000", "--no-save"], "not in 1..=4096");
    refused(&["history", "-k", "bogus"], "possible values: bandwidth, latency");
    refused(&["lat", "127.0.0.1", "-f", "vegeta", "--no-save"], "invalid value 'vegeta'");
    refused(&["http", "http://127.0.0.1:9/", "-f", "iperf3-json"], "invalid value 'iperf3-json'");
    let help = String::from_utf8(client(&["latency", "--help"]).stdout).unwrap();
    assert!(!help.contains("vegeta") && !help.contains("iperf3-json"), "{help}");
}

/// iperf3's spellings are refused with wirespeed's in a hint, not only clap's generic tip.
#[test]
fn iperf3_spellings_are_answered_with_wirespeeds() {
    for (args, says) in [
        (&["bw", "-c", "127.0.0.1"][..], "`wirespeed bw HOST`"),
        (&["-s"], "`wirespeed server`"),
        (&["bw", "127.0.0.1", "-J"], "-f iperf3-json"),
        (&["bw", "127.0.0.1", "-f", "m"], "scaled to their size"),
    ] {
        let out = client(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(err.contains("hint: ") && err.contains(says), "{args:?}: {err}");
    }
}

/// An unknown congestion control fails the test before it starts (iperf3 does too); it used
/// to run with the default and only note it.
#[test]
fn an_unknown_congestion_control_is_refused() {
    let s = server(&[]);
    let out =
        client(&["bw", &format!("127.0.0.1:{}", s.1), "-C", "nosuch", "-t", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("congestion control 'nosuch' cannot be used here"));
}

/// A database that cannot be opened says so once (its text used to be printed three times).
#[test]
fn a_database_error_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = client(&["history", "--db", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(err.matches("unable to open").count(), 1, "{err}");
}
