//! The live panel: on a terminal (a pseudo-terminal from util-linux's `script`) a running test
//! shows it and erases it before the final report; `--quiet` and pipes get plain output.

use std::process::Command;

use crate::common::{client, server, BIN};

/// Runs `wirespeed args` on a pseudo-terminal; returns everything the terminal received.
fn on_a_terminal(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tty.log");
    let cmd = std::iter::once(BIN).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
    let out = Command::new("script")
        .args(["-q", "-f", "-e", "-c", &cmd])
        .arg(&log)
        .env("NO_COLOR", "1")
        .output()
        .expect("util-linux `script` runs");
    assert_eq!(out.status.code(), Some(0), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&log).unwrap()
}

const ERASE: &str = "\r\x1b[2K";

#[test]
fn a_terminal_gets_a_live_panel_that_leaves_a_clean_report() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let tty = on_a_terminal(&["lat", &target, "-t", "1", "-i", "0.25", "--no-save"]);
    let panels = tty.matches("▶ latency ").count();
    assert!(panels >= 3, "a panel per interval: {tty}");
    assert!(tty.contains(" s / 1 s ") && tty.contains("p99 "), "{tty}");
    // After the last erase comes the report, and no panel.
    let tail = &tty[tty.rfind(ERASE).expect("the panel is erased")..];
    assert!(!tail.contains('▶'), "panel left behind: {tail}");
    assert!(tail.contains("p99"), "the final report follows: {tail}");

    let quiet = on_a_terminal(&["lat", &target, "-t", "0.5", "-i", "0.25", "--no-save", "--quiet"]);
    assert!(!quiet.contains('▶') && !quiet.contains("\x1b[1A"), "{quiet}");

    let piped = client(&["lat", &target, "-t", "0.5", "-i", "0.25", "--no-save"]);
    assert_eq!(piped.status.code(), Some(0));
    for stream in [&piped.stdout, &piped.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(!text.contains('\x1b') && !text.contains('▶'), "escapes in plain output: {text}");
    }
}
