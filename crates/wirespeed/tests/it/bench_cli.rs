//! `wirespeed bench`'s checks of a scenario file: read, checked and expanded (`--list`,
//! `--dry-run`), workload options checked against their test kind's own flags, the JSON schema
//! printed, and bad files refused with where and why (running is in bench_run.rs).

use std::path::PathBuf;

use crate::common::client;

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runner/tests/scenarios").join(name)
}

#[test]
fn scenarios_expand_and_show_their_command_lines() {
    let out = client(&["bench", scenario("valid/transports.toml").to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("transports: 7 systems × 3 workloads × 2 repeats = 42 runs"),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("run ")).count(), 42);
    assert!(
        text.contains("process  tunnel-ws-relay server: gost -L relay+ws://127.0.0.1:<port.tunnel>/<fixture.sink.addr>"),
        "{text}"
    );
    assert!(
        text.contains("load     tunnel-tls-plain tcp-bw[parallel=4]: wirespeed bandwidth 127.0.0.1:<port.entry> --parallel 4 --time 3s"),
        "{text}"
    );
}

/// `--systems` and `--workloads` keep part of a scenario, its runs in the file's order; a
/// pattern that matches nothing is refused with the names it could have matched.
#[test]
fn part_of_a_scenario_runs_without_a_copy_of_its_file() {
    let file = scenario("valid/transports.toml");
    let file = file.to_str().unwrap();
    let out = client(&[
        "bench",
        file,
        "--systems",
        "direct,tunnel-ws*",
        "--workloads",
        "tcp-bw*",
        "--list",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let systems: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("system   ")).collect();
    assert!(systems.len() >= 2 && systems[0] == "direct", "{text}");
    assert!(systems[1..].iter().all(|s| s.starts_with("tunnel-ws")), "{text}");
    let runs: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("run      ")).collect();
    assert!(!runs.is_empty() && runs.iter().all(|r| r.contains("/tcp-bw")), "{text}");
    assert!(runs.iter().all(|r| r.starts_with("direct/") || r.starts_with("tunnel-ws")), "{text}");
    let none = client(&["bench", file, "--systems", "gost-*", "--list"]);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("--systems 'gost-*' matches none of the systems: direct"), "{err}");
}

#[test]
fn bad_scenarios_are_refused_with_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let bad_option = dir.path().join("bad_option.toml");
    std::fs::write(
        &bad_option,
        "[scenario]\nname = \"x\"\n[[system]]\nname = \"d\"\nentry = \"127.0.0.1:5201\"\n\
         [[workload]]\nname = \"bw\"\nkind = \"bandwidth\"\nparallels = 4\n",
    )
    .unwrap();
    let out = client(&["bench", bad_option.to_str().unwrap(), "--list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("workload \"bw\" (bandwidth): unexpected argument '--parallels'"),
        "{err}"
    );

    let unknown = scenario("invalid/unknown_key.toml");
    let out = client(&["bench", unknown.to_str().unwrap(), "--list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown_key.toml:5: unknown field `repeats`"), "{err}");

    let out = client(&["bench", "/nonexistent/s.toml", "--list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading /nonexistent/s.toml"));
    // Run rather than listed, it is refused the same way, before anything starts.
    let out = client(&["bench", unknown.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field `repeats`"));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_schema_is_json_and_refuses_unknown_keys() {
    let out = client(&["bench", "--schema"]);
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema["$defs"]["System"]["properties"]["process"].is_object(), "{schema}");
}

/// Every example shows its command lines, fixtures' addresses included: `--dry-run` of the DNS
/// study used to fail on the DNS entry `<fixture.zone.addr>`, which it could not split.
#[test]
fn every_example_shows_its_command_lines() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let out = client(&["bench", path.to_str().unwrap(), "--dry-run"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.lines().any(|l| l.starts_with("load ")), "{}: {text}", path.display());
        seen += 1;
    }
    assert!(seen >= 7, "examples found: {seen}");
    let dns = client(&["bench", dir.join("dns-servers.toml").to_str().unwrap(), "--dry-run"]);
    assert!(String::from_utf8_lossy(&dns.stdout)
        .contains("wirespeed dns --server <fixture.zone.host> --port <fixture.zone.port>"));
}
