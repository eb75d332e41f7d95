//! `wirespeed http -f vegeta` read by the real vegeta (built by `scripts/peers.sh`): `vegeta
//! report` counts the same requests, status codes, bytes and slowest latency as our lines say,
//! and `vegeta plot` draws them.

mod common;
#[path = "../../engine/tests/common/skip.rs"]
mod skip;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{client, free_port, server};
use serde_json::Value;

/// Runs `vegeta ARGS` with `input` on its stdin; its stdout.
fn vegeta(args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new("vegeta")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "vegeta {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn vegeta_reads_our_result_lines() {
    if wirespeed_runner::process::which("vegeta").is_none() {
        skip::missing("vegeta is not installed", "scripts/peers.sh builds it");
        return;
    }
    let http = free_port();
    let _s = server(&["--http", &http.to_string()]);
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    let url = format!("http://127.0.0.1:{http}/");
    std::fs::write(&targets, format!("GET {url}\n\nGET {url}?status=404\n")).unwrap();
    let out = client(&[
        "http",
        "--targets",
        targets.to_str().unwrap(),
        "-n",
        "40",
        "-c",
        "2",
        "-f",
        "vegeta",
        "--no-save",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let ours: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), 40);

    let report: Value = serde_json::from_str(&vegeta(&["report", "-type=json"], &out.stdout))
        .expect("vegeta report -type=json");
    assert_eq!(report["requests"], 40, "{report}");
    let count = |code: u64| ours.iter().filter(|l| l["code"] == code).count() as u64;
    assert_eq!(report["status_codes"]["200"].as_u64(), Some(count(200)), "{report}");
    assert_eq!(report["status_codes"]["404"].as_u64(), Some(count(404)), "{report}");
    assert_eq!(report["success"].as_f64(), Some(count(200) as f64 / 40.0), "{report}");
    let bytes_in: u64 = ours.iter().map(|l| l["bytes_in"].as_u64().unwrap()).sum();
    assert_eq!(report["bytes_in"]["total"].as_u64(), Some(bytes_in), "{report}");
    let slowest = ours.iter().map(|l| l["latency"].as_u64().unwrap()).max().unwrap();
    assert_eq!(report["latencies"]["max"].as_u64(), Some(slowest), "{report}");

    let text = vegeta(&["report"], &out.stdout);
    assert!(text.contains("Requests") && text.contains("404:"), "{text}");
    let plot = vegeta(&["plot"], &out.stdout);
    assert!(
        plot.contains("<html") && plot.contains("Vegeta Plot"),
        "{}",
        &plot[..200.min(plot.len())]
    );
}
