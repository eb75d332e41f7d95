//! Faults end to end: a real `wirespeed server` (or, for rpm, `wirespeed web`) process killed
//! with SIGKILL mid-test. Each kind that runs against a wirespeed server reports the loss with
//! exit 5 and keeps what it measured: the report it prints and the run it saves end at the
//! last interval both ends reported (or the last probe that ended), marked aborted, and their
//! figures still add up. An HTTP load run, like vegeta's, goes on to its time limit and counts
//! each request after the loss as failed, by cause.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::web::web;
use crate::common::{self, server, BIN};

/// What a client killed mid-test left: its exit code, standard error, the report its last
/// event carried, the intervals it printed, and the run it saved.
struct Aftermath {
    code: Option<i32>,
    stderr: String,
    printed: Value,
    intervals_printed: usize,
    saved: Value,
}

/// The server a test runs against: `wirespeed server`, or `wirespeed web` for rpm. Each kills
/// its process when dropped.
enum Peer {
    Server(common::Server),
    Web(common::web::Web),
}

impl Peer {
    fn process(&mut self) -> &mut std::process::Child {
        match self {
            Peer::Server(s) => &mut s.0,
            Peer::Web(w) => &mut w.child,
        }
    }
}

/// Runs `wirespeed KIND TARGET ARGS… -f json-stream` against a server of its own, kills the
/// server with SIGKILL once `before` intervals (or ping probes) have been printed, and collects
/// the aftermath. The client is bounded by coreutils' `timeout` so a client that hangs fails
/// the test.
fn kill_server_mid_test(kind: &str, args: &[&str], before: usize) -> Aftermath {
    let (mut peer, target) = match kind {
        "rpm" => {
            let w = web(&["--no-save"]);
            let target = format!("http://127.0.0.1:{}/", w.port);
            (Peer::Web(w), target)
        }
        "http" => {
            let http = common::free_port();
            (
                Peer::Server(server(&["--http", &http.to_string()])),
                format!("http://127.0.0.1:{http}/"),
            )
        }
        _ => {
            let s = server(&[]);
            let target = format!("127.0.0.1:{}", s.1);
            (Peer::Server(s), target)
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let mut child = Command::new("timeout")
        .args(["-s", "KILL", "60", BIN, kind, &target])
        .args(args)
        .args(["-f", "json-stream", "--db", db])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let (mut intervals_printed, mut printed) = (0, Value::Null);
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match event["event"].as_str().unwrap() {
            name if name.ends_with("interval") || name == "ping_probe" => {
                intervals_printed += 1;
                if intervals_printed == before {
                    peer.process().kill().unwrap();
                    peer.process().wait().unwrap();
                }
            }
            "end" => printed = event["data"].clone(),
            _ => {}
        }
    }
    let code = child.wait().unwrap().code();
    let stderr = stderr.join().unwrap();
    assert!(intervals_printed >= before, "the test ended before the kill: {stderr}");
    let show = Command::new(BIN).args(["show", "1", "--db", db, "-f", "json"]).output().unwrap();
    assert_eq!(show.status.code(), Some(0), "{}", String::from_utf8_lossy(&show.stderr));
    let saved = serde_json::from_slice(&show.stdout).unwrap();
    Aftermath { code, stderr, printed, intervals_printed, saved }
}

/// What every kind promises when its server dies: exit 5 with the reason, and the same
/// report printed and saved, marked aborted (`assert_kept` adds: holding the intervals printed
/// before the kill).
fn assert_aborted(a: &Aftermath) {
    assert_eq!(a.code, Some(5), "exit 5, the test failed while running: {}", a.stderr);
    assert!(a.stderr.contains("lost the server mid-test"), "{}", a.stderr);
    let notes = a.printed["meta"]["notes"].as_array().expect("an end event with the report");
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().starts_with("aborted: lost the server")),
        "{notes:?}"
    );
    // The intervals after the failure are missing because of it, not a tester too busy.
    let findings = a.printed["meta"]["diagnosis"]["findings"].as_array().unwrap();
    assert!(!findings.iter().any(|f| f["code"] == "lost_results"), "{findings:?}");
    assert_eq!(a.saved["summary"], a.printed["summary"], "saved as printed");
    assert_eq!(a.saved["meta"]["notes"], a.printed["meta"]["notes"]);
}

/// [`assert_aborted`], and the report holds the intervals printed before and after the kill.
fn assert_kept(a: &Aftermath, before: usize) -> &Value {
    assert_aborted(a);
    let intervals = a.printed["intervals"].as_array().unwrap();
    assert!(intervals.len() >= before, "{} intervals kept", intervals.len());
    assert_eq!(intervals.len(), a.intervals_printed, "the report holds what was printed");
    assert_eq!(a.saved["intervals"], a.printed["intervals"], "saved as printed");
    &a.printed
}

/// The first flow's `field` (a count) summed over the intervals, and in the summary.
fn counts(report: &Value, field: &str) -> (u64, u64) {
    let in_intervals = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["flows"][0][field].as_u64().unwrap())
        .sum();
    (in_intervals, report["summary"][field].as_u64().unwrap())
}

#[test]
fn bandwidth_over_tcp_keeps_the_intervals_both_ends_reported() {
    let a = kill_server_mid_test("bw", &["-t", "30", "-i", "0.2"], 3);
    let report = assert_kept(&a, 3);
    let (sent, summed_sent) = counts(report, "sent_bytes");
    let (received, summed_received) = counts(report, "received_bytes");
    assert_eq!((sent, received), (summed_sent, summed_received), "intervals add up to the summary");
    // Each end's count is its own at its last report, taken a moment apart: either may be
    // ahead by the bytes in flight, as in any interval.
    assert!(received > 0 && sent > 0, "{received} of {sent}");
    assert!(report["summary"]["server_cpu"].is_null(), "the server's figures died with it");
}

#[test]
fn bandwidth_over_quic_keeps_the_intervals_both_ends_reported() {
    let a = kill_server_mid_test("bw", &["--quic", "-t", "30", "-i", "0.2"], 3);
    let report = assert_kept(&a, 3);
    let (sent, summed_sent) = counts(report, "sent_bytes");
    let (received, summed_received) = counts(report, "received_bytes");
    assert_eq!((sent, received), (summed_sent, summed_received), "intervals add up to the summary");
    assert!(received > 0 && sent > 0, "{received} of {sent}");
}

#[test]
fn bandwidth_over_udp_from_the_server_keeps_its_loss_accounting() {
    let a = kill_server_mid_test("bw", &["-u", "-R", "-b", "50M", "-t", "30", "-i", "0.2"], 3);
    let report = assert_kept(&a, 3);
    let (sent, summed_sent) = counts(report, "sent_bytes");
    let (received, summed_received) = counts(report, "received_bytes");
    assert_eq!((sent, received), (summed_sent, summed_received));
    assert!(received > 0, "the client received the server's datagrams");
    // Datagrams in flight at the cut are neither received nor lost: loss is the receiver's
    // sequence gaps, interval by interval and in all.
    let (lost, summed_lost) = counts(report, "lost_packets");
    assert_eq!(lost, summed_lost);
    let (packets, summed_packets) = counts(report, "received_packets");
    assert_eq!(packets, summed_packets);
}

#[test]
fn latency_over_tcp_and_udp_ends_when_the_server_does() {
    for protocol in [&[][..], &["-u"][..], &["--quic"][..]] {
        let args = [protocol, &["-t", "30", "-i", "0.2"][..]].concat();
        let a = kill_server_mid_test("lat", &args, 3);
        let report = assert_kept(&a, 3);
        let summary = &report["summary"];
        let (sent, received) =
            (summary["sent"].as_u64().unwrap(), summary["received"].as_u64().unwrap());
        assert!(received > 0 && received <= sent, "{received} of {sent}");
    }
}

#[test]
fn udp_ping_ends_every_probe_when_the_echo_stops() {
    let a = kill_server_mid_test("ping", &["--udp", "-c", "1000", "-i", "0.02"], 10);
    assert_aborted(&a);
    let (report, saved) = (&a.printed, &a.saved);
    assert_eq!(saved["probes"], report["probes"], "saved as printed");
    let probes = report["probes"].as_array().unwrap();
    assert_eq!(probes.len(), a.intervals_printed, "every probe printed is kept");
    let s = &report["summary"];
    let (sent, received, errors) = (
        s["sent"].as_u64().unwrap(),
        s["received"].as_u64().unwrap(),
        s["errors"].as_u64().unwrap(),
    );
    assert!(received >= 9 && sent < 1000, "{s}");
    // Every probe sent ended: answered, or failed because the echo stopped; none is left
    // counted as lost for want of an answer.
    assert_eq!(probes.len() as u64, sent, "{s}");
    assert_eq!(received + errors, sent, "{s}");
    assert!(probes.iter().any(|p| p["outcome"] == "error"), "{probes:?}");
}

#[test]
fn rpm_keeps_the_idle_figures_and_the_leg_up_to_the_loss() {
    let a = kill_server_mid_test("rpm", &["-i", "0.2", "-t", "10", "--idle-probes", "5"], 2);
    let report = assert_kept(&a, 2);
    let s = &report["summary"];
    assert_eq!(s["idle"]["count"], 5, "{s}");
    let legs = s["legs"].as_array().unwrap();
    assert_eq!(legs.len(), 1, "the download leg, cut short; no upload leg: {s}");
    assert!(legs[0]["failures"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["working_conditions"], false);
    // It stopped soon after the first interval in which nothing answered (probes fail again
    // each interval), not after the 40 or so more its time limit allowed.
    let intervals = report["intervals"].as_array().unwrap();
    let silent = intervals.iter().rev().take_while(|iv| iv["download_bytes"] == 0).count();
    assert!((1..=3).contains(&silent), "{silent} silent intervals at the end: {intervals:?}");
}

#[test]
fn cps_stops_counting_refusals_when_the_server_is_gone() {
    let a = kill_server_mid_test("cps", &["-t", "30", "-i", "0.2"], 3);
    let report = assert_kept(&a, 3);
    let summary = &report["summary"];
    assert!(summary["connected"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["server_accepted"].is_null(), "the server's count died with it");
}

#[test]
fn http_counts_every_request_after_the_server_is_gone_as_an_error_by_cause() {
    let a = kill_server_mid_test("http", &["-r", "500", "-d", "3", "-i", "0.2"], 3);
    // Like vegeta: a load run measures failures too, and ends by its time limit.
    assert_eq!(a.code, Some(0), "{}", a.stderr);
    let s = &a.printed["summary"];
    let errors: u64 = s["errors"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert!(s["succeeded"].as_u64().unwrap() > 0, "{s}");
    assert!(s["errors"]["connection refused"].as_u64().unwrap() > 0, "{s}");
    // Every request that fell due is counted once: answered, or failed with its cause.
    let responses = s["responses"].as_u64().unwrap();
    let ratio = s["success_ratio"].as_f64().unwrap();
    assert!((ratio - responses as f64 / (responses + errors) as f64).abs() < 1e-9, "{s}");
    assert_eq!(a.saved["summary"], a.printed["summary"], "saved as printed");
}
