//! Runs made by several member processes (`--members`), end to end: real member processes
//! placed as a Kubernetes Indexed Job would place them (`JOB_COMPLETION_INDEX`), started
//! one after another, meeting at the barrier in a real PostgreSQL server or at a `--start-at` time;
//! `wirespeed merge` checked exact against every raw sample by an HdrHistogram library that is
//! not ours; and every way a member can fail to take part, each with its message and exit 12.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use wirespeed_testkit::postgres::TestPostgres;
use wirespeed_testkit::ready::until_stderr_line;

use crate::common::{self, client, free_port, server, BIN};

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// A member process: `wirespeed ARGS…` as index `index` of a Kubernetes Indexed Job, its
/// standard output into `stdout` (the vegeta result lines) when given.
fn member(args: &[&str], index: u32, env: &[(&str, &str)], stdout: Option<&Path>) -> Child {
    let mut c = Command::new(BIN);
    c.args(args).env("JOB_COMPLETION_INDEX", index.to_string()).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(match stdout {
        Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
        None => Stdio::piped(),
    });
    c.stderr(Stdio::piped()).spawn().unwrap()
}

/// An RFC 3339 time `secs` from now.
fn in_secs(secs: f64) -> String {
    let now = std::time::SystemTime::now();
    let at = if secs >= 0.0 {
        now + Duration::from_secs_f64(secs)
    } else {
        now - Duration::from_secs_f64(-secs)
    };
    humantime::format_rfc3339_millis(at).to_string()
}

/// The merged report `merge ARGS…` prints as JSON.
fn merged(args: &[&str]) -> serde_json::Value {
    let out = client(&[&["merge", "-f", "json", "--no-save"][..], args].concat());
    serde_json::from_str(&ok(&out)).unwrap()
}

/// Python with the `hdrhistogram` package, or `None` (a skip, or a failure under CI).
fn python_hdr() -> Option<()> {
    common::pypi_tool(&["python3", "-c", "import hdrh.histogram"], "hdrhistogram")
}

/// Checks `merged` exact against the raw samples in `lines` with Python's HdrHistogram.
fn assert_exact(dir: &Path, merged: &serde_json::Value, lines: &[std::path::PathBuf]) {
    let file = dir.join("merged.json");
    std::fs::write(&file, merged.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/members/exact.py");
    let out = Command::new("python3").arg(script).arg(&file).args(lines).output().unwrap();
    let found: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    let samples = found["samples"].as_u64().unwrap();
    assert!(samples > 0, "{found}");
    assert_eq!(found["merged_count"], found["reference_count"], "{found}");
    assert_eq!(found["merged_count"].as_u64(), Some(samples), "{found}");
    assert_eq!(found["buckets_equal"], true, "every bucket, not close: {found}");
    assert_eq!(found["merged_percentiles"], found["reference_percentiles"], "{found}");
    assert_eq!(found["merged_max"], found["reference_max"], "{found}");
    assert_eq!(found["merged_min"], found["reference_min"], "{found}");
    assert_eq!(merged["summary"]["latency"]["count"].as_u64(), Some(samples));
}

/// Three members of one open-model run, started 1.5 s apart, meet at the barrier in
/// PostgreSQL and start within 20 ms of each other; `merge --run-id` sums them to the rate
/// asked, interval by interval, with percentiles exactly those of every sample.
#[test]
fn members_started_apart_meet_at_the_postgres_barrier_and_merge_exactly() {
    let Some(pg) = TestPostgres::start() else { return };
    let Some(()) = python_hdr() else { return };
    let http = free_port();
    let _s = server(&["--http", &http.to_string()]);
    let url = format!("http://127.0.0.1:{http}/");
    let dir = tempfile::tempdir().unwrap();
    let db = pg.url();
    let args = [
        "http",
        &url,
        "-r",
        "900",
        "-d",
        "2",
        "--members",
        "3",
        "--run-id",
        "exact-pg",
        "-f",
        "vegeta",
        "--db",
        &db,
    ];
    let lines: Vec<_> = (0..3).map(|i| dir.path().join(format!("m{i}.lines"))).collect();
    let mut children = Vec::new();
    // They arrive one after another: each waits at the barrier before the next starts.
    for (i, path) in lines.iter().enumerate() {
        let mut m = member(&args, i as u32, &[], Some(path));
        if i < 2 {
            until_stderr_line(&mut m, "is at the barrier");
        }
        children.push(m);
    }
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    let m = merged(&["--run-id", "exact-pg", "--db", &db]);
    let record = &m["meta"]["merged"];
    assert_eq!(record["merged"], serde_json::json!([0, 1, 2]), "{record}");
    assert_eq!(record["partial"], false);
    let skew = record["start_skew_ns"].as_u64().unwrap();
    assert!(skew < 20_000_000, "the members started {skew} ns apart");
    // 900 requests/s for 2 s, striped over three members: 1800 sent, whatever the split.
    let summary = &m["summary"];
    assert_eq!(summary["sent"], 1800, "{summary}");
    assert!(summary["responses"].as_u64().unwrap() >= 1782, "{summary}");
    assert_eq!(summary["target_rate"], 900.0);
    assert_eq!(m["spec"]["rates"], serde_json::json!([900.0]), "the run's spec, not a share");
    for iv in m["intervals"].as_array().unwrap() {
        let sent = iv["sent"].as_u64().unwrap();
        assert!((855..=945).contains(&sent), "an interval's merged rate: {iv}");
    }
    assert_exact(dir.path(), &m, &lines);

    // Merged and saved twice, the run is listed once: the second merge replaces the first.
    let first = client(&["merge", "--run-id", "exact-pg", "--db", &db]);
    ok(&first);
    let store =
        wirespeed_store::Store::open_at(&wirespeed_store::Location::parse(&pg.url()).unwrap())
            .unwrap();
    let first_id = store.merge_of("exact-pg").unwrap().expect("the merge was saved");
    let again = client(&["merge", "--run-id", "exact-pg", "--db", &db]);
    ok(&again);
    let second_id = store.merge_of("exact-pg").unwrap().unwrap();
    assert_ne!(first_id, second_id);
    assert!(store.get(first_id).unwrap().is_none(), "the first merge is still saved");
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains(&format!("in place of run {first_id}")), "{said}");
}

/// The same run with no database: every member is given the start, and keeps its own SQLite
/// file; `merge` reads the files, refuses a partial or doubled set, and flags a partial merge
/// it was allowed to make.
#[test]
fn members_given_a_start_time_merge_from_their_own_files() {
    let Some(()) = python_hdr() else { return };
    let http = free_port();
    let _s = server(&["--http", &http.to_string()]);
    let url = format!("http://127.0.0.1:{http}/");
    let dir = tempfile::tempdir().unwrap();
    // Each member says it waits while a second or more is left (then the next is started):
    // 4 s leaves that to the third even when starting a process takes most of a second.
    let at = in_secs(4.0);
    let dbs: Vec<String> =
        (0..3).map(|i| dir.path().join(format!("m{i}.db")).display().to_string()).collect();
    let lines: Vec<_> = (0..3).map(|i| dir.path().join(format!("m{i}.lines"))).collect();
    let mut children = Vec::new();
    for i in 0..3 {
        let args = [
            "http",
            &url,
            "-r",
            "600",
            "-d",
            "2",
            "--members",
            "3",
            "--run-id",
            "exact-files",
            "--start-at",
            &at,
            "--max-clock-error",
            "1m",
            "-f",
            "vegeta",
            "--db",
            &dbs[i],
        ];
        // One after another: each is waiting for the start before the next is started.
        let mut m = member(&args, i as u32, &[], Some(&lines[i]));
        until_stderr_line(&mut m, "for the run's start");
        children.push(m);
    }
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    let m = merged(&[&dbs[0], &dbs[1], &dbs[2]]);
    assert_eq!(m["summary"]["sent"], 1200, "{}", m["summary"]);
    assert_exact(dir.path(), &m, &lines);

    let partial = client(&["merge", &dbs[0], &dbs[2], "--no-save"]);
    assert_eq!(partial.status.code(), Some(12), "{}", stderr(&partial));
    assert!(stderr(&partial).contains("members [1] of 3 are missing"), "{}", stderr(&partial));
    let allowed = merged(&[&dbs[0], &dbs[2], "--allow-partial"]);
    assert_eq!(allowed["meta"]["merged"]["partial"], true);
    assert_eq!(allowed["meta"]["merged"]["missing"], serde_json::json!([1]));
    let notes = allowed["meta"]["notes"].to_string();
    assert!(notes.contains("PARTIAL: members [1] of 3 are missing"), "{notes}");
    let twice = client(&["merge", &dbs[0], &dbs[0], &dbs[1], &dbs[2], "--no-save"]);
    assert_eq!(twice.status.code(), Some(12));
    assert!(
        stderr(&twice).contains("member 0 of run exact-files appears twice"),
        "{}",
        stderr(&twice)
    );
    // A run that is not one: a report of a run of its own.
    let alone = dir.path().join("alone.json");
    let out = client(&["http", &url, "-n", "20", "-f", "json", "--no-save"]);
    std::fs::write(&alone, ok(&out)).unwrap();
    let mixed = client(&["merge", &dbs[0], alone.to_str().unwrap(), "--no-save"]);
    assert_eq!(mixed.status.code(), Some(12));
    assert!(stderr(&mixed).contains("was not run as a member"), "{}", stderr(&mixed));
}

/// `args` as the `&str`s a command takes.
fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Members that must not start, each with its reason and exit 12, and the run marked so that
/// it is never merged as if whole: one missing (the barrier times out and aborts the run), an
/// index twice, one late, one with another spec, a clock too far off; and a start time with a
/// clock the kernel cannot vouch for, or already past.
#[test]
fn members_that_cannot_take_part_are_refused_with_exit_12() {
    let Some(pg) = TestPostgres::start() else { return };
    let http = free_port();
    let _s = server(&["--http", &http.to_string()]);
    let url = format!("http://127.0.0.1:{http}/");
    let db = pg.url();
    let run = |id: &str, members: &str, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["http", &url, "-r", "200", "-d", "1", "--members", members]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(["--run-id", id, "--db", &db, "--no-save"].iter().map(|s| s.to_string()));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };

    // One of three never comes: both others give up after the timeout, and the run is aborted.
    let missing = run("missing", "3", &["--barrier-timeout", "2s"]);
    let a = member(&refs(&missing), 0, &[], None);
    let b = member(&refs(&missing), 1, &[], None);
    for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
        assert_eq!(out.status.code(), Some(12), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("only 2 of 3 members arrived within --barrier-timeout 2s"),
            "{}",
            stderr(&out)
        );
    }
    let late_third = member(&refs(&missing), 2, &[], None).wait_with_output().unwrap();
    assert_eq!(late_third.status.code(), Some(12));
    assert!(
        stderr(&late_third).contains("arrived at a run that was aborted"),
        "{}",
        stderr(&late_third)
    );
    let nothing = client(&["merge", "--run-id", "missing", "--db", &db, "--no-save"]);
    assert_eq!(nothing.status.code(), Some(9), "nothing was saved: {}", stderr(&nothing));

    // An index twice: the second is turned away, the run goes on with the first.
    let twice = run("twice", "2", &["--barrier-timeout", "30s"]);
    let mut first = member(&refs(&twice), 0, &[], None);
    until_stderr_line(&mut first, "is at the barrier");
    let again = member(&refs(&twice), 0, &[], None).wait_with_output().unwrap();
    assert_eq!(again.status.code(), Some(12));
    assert!(stderr(&again).contains("is already there"), "{}", stderr(&again));
    // Another spec for the same run is turned away too.
    let other = run("twice", "2", &["-c", "3"]);
    let mismatched = member(&refs(&other), 1, &[], None).wait_with_output().unwrap();
    assert_eq!(mismatched.status.code(), Some(12));
    assert!(stderr(&mismatched).contains("does not match the run"), "{}", stderr(&mismatched));
    let second = member(&refs(&twice), 1, &[], None);
    ok(&first.wait_with_output().unwrap());
    ok(&second.wait_with_output().unwrap());
    // ... and after the start, a late member (a restarted pod) is too.
    let late = member(&refs(&twice), 1, &[], None).wait_with_output().unwrap();
    assert_eq!(late.status.code(), Some(12));
    assert!(stderr(&late).contains("arrived after the run's start was set"), "{}", stderr(&late));

    // A clock 500 ms off the database's.
    let skewed = run("skewed", "2", &[]);
    let out = member(&refs(&skewed), 0, &[("WIRESPEED_TEST_CLOCK_SKEW_MS", "500")], None)
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(12), "{}", stderr(&out));
    assert!(stderr(&out).contains("off the database's"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--max-clock-error 10.0 ms"), "{}", stderr(&out));

    // --start-at with a clock the kernel bounds at 50 ms, and a start already past.
    let at = in_secs(5.0);
    let timed = [
        "http",
        &url,
        "-n",
        "10",
        "--members",
        "2",
        "--run-id",
        "t",
        "--start-at",
        &at,
        "--no-save",
    ];
    let out = member(&timed, 0, &[("WIRESPEED_TEST_CLOCK_MAX_ERROR_US", "50000")], None)
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(12), "{}", stderr(&out));
    assert!(stderr(&out).contains("may be off by up to 50.0 ms"), "{}", stderr(&out));
    let past = in_secs(-1.0);
    let gone = [
        "http",
        &url,
        "-n",
        "10",
        "--members",
        "2",
        "--run-id",
        "t",
        "--start-at",
        &past,
        "--max-clock-error",
        "1m",
        "--no-save",
    ];
    let out = member(&gone, 0, &[], None).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(12), "{}", stderr(&out));
    assert!(stderr(&out).contains("after the run's start"), "{}", stderr(&out));
    // A member waiting for its start stops at once on SIGINT or SIGTERM (it slept through
    // both, and a pod waited out its grace period), measuring and saving nothing.
    let later = in_secs(600.0);
    for signal in ["-INT", "-TERM"] {
        let waiting = [
            "http",
            &url,
            "-n",
            "10",
            "--members",
            "2",
            "--run-id",
            "w",
            "--start-at",
            &later,
            "--max-clock-error",
            "1m",
            "--no-save",
        ];
        let mut m = member(&waiting, 0, &[], None);
        let line = until_stderr_line(&mut m, "for the run's start");
        assert!(line.contains("waits"), "{line}");
        Command::new("kill").args([signal, &m.id().to_string()]).status().unwrap();
        let out = m.wait_with_output().unwrap();
        let rest = stderr(&out);
        assert_eq!(out.status.code(), Some(130), "{signal}: {rest}");
        assert!(rest.contains("interrupted") && rest.contains("measured nothing"), "{rest}");
        assert!(out.stdout.is_empty(), "{signal}: a report was printed");
    }
    let far = in_secs(3.0 * 86400.0);
    let out = member(
        &["http", &url, "-n", "10", "--members", "2", "--run-id", "f", "--start-at", &far],
        0,
        &[],
        None,
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("more than 24 h ahead"), "{}", stderr(&out));
    // Flags that cannot make a member: no index, no run id, no way to start together, too
    // little to share.
    let file = tempfile::tempdir().unwrap();
    let db = file.path().join("x.db").display().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--run-id", "x", "--start-at", &at], "needs this member's index"),
        (&["--index", "0", "--start-at", &at], "--members needs --run-id"),
        (&["--index", "0", "--run-id", "x", "--db", &db], "members need a common start"),
        (
            &["-c", "1", "--index", "0", "--run-id", "x", "--start-at", &at],
            "1 connections cannot be shared by 2 members",
        ),
    ];
    for (extra, why) in cases {
        let out = client(&[&["http", &url, "--members", "2"][..], extra].concat());
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{extra:?}: {}", stderr(&out));
    }
}

/// The database stops while the members run: each keeps its report in a file and says where,
/// exits 7, and `merge` puts the kept files together — nothing is lost.
#[test]
fn members_keep_their_reports_when_the_database_stops_mid_run() {
    let Some(mut pg) = TestPostgres::start() else { return };
    let http = free_port();
    let _s = server(&["--http", &http.to_string()]);
    let url = format!("http://127.0.0.1:{http}/");
    let home = tempfile::tempdir().unwrap();
    let data = home.path().to_str().unwrap();
    let db = pg.url();
    let args = [
        "http",
        &url,
        "-r",
        "300",
        "-d",
        "3",
        "--members",
        "2",
        "--run-id",
        "kept",
        "-f",
        "json-stream",
        "-i",
        "0.5",
        "--db",
        &db,
        "--start-lead",
        "500ms",
    ];
    let env = [("XDG_DATA_HOME", data)];
    let mut a = member(&args, 0, &env, None);
    let b = member(&args, 1, &env, None);
    // The database goes away once the run is measuring: after member 0's first interval.
    let mut events = BufReader::new(a.stdout.take().unwrap()).lines();
    let first_interval =
        events.by_ref().map(Result::unwrap).find(|l| l.contains(r#""event":"http_interval""#));
    assert!(first_interval.is_some(), "member 0 ended before its first interval");
    std::thread::spawn(move || for _ in events {});
    pg.stop_server();
    let mut kept = Vec::new();
    for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(7), "{err}");
        let path = err
            .lines()
            .find_map(|l| l.strip_prefix("wirespeed: the report is kept in "))
            .unwrap_or_else(|| panic!("where it was kept: {err}"))
            .to_string();
        assert!(Path::new(&path).starts_with(home.path()), "{path}");
        kept.push(path);
    }
    let m = merged(&[&kept[0], &kept[1]]);
    assert_eq!(m["summary"]["sent"], 900, "{}", m["summary"]);
    assert_eq!(m["meta"]["merged"]["partial"], false);
}

/// Every kind that makes load runs as two members and merges: the merged totals are the
/// members' sums, the spec the whole run's.
#[test]
fn every_load_kind_runs_as_members_and_merges() {
    let (http, dns) = (free_port(), free_port());
    let s = server(&["--http", &http.to_string(), "--dns", &dns.to_string(), "--dns-hosts", "20"]);
    let target = format!("127.0.0.1:{}", s.1);
    let url = format!("http://127.0.0.1:{http}/");
    let dns = dns.to_string();
    let dir = tempfile::tempdir().unwrap();
    let kinds: Vec<(&str, Vec<&str>, &str)> = vec![
        ("http", vec!["http", &url, "-c", "4", "-d", "1"], "/summary/responses"),
        (
            "dns",
            vec!["dns", "-s", "127.0.0.1", "-p", &dns, "-c", "2", "-l", "1"],
            "/summary/completed",
        ),
        ("cps", vec!["cps", &target, "-P", "2", "-t", "1"], "/summary/connected"),
        ("latency", vec!["lat", &target, "-P", "2", "-t", "1"], "/summary/received"),
        ("bandwidth", vec!["bw", &target, "-P", "2", "-t", "1"], "/summary/received_bytes"),
        ("pps", vec!["pps", &target, "-P", "2", "-t", "1"], "/summary/received_packets"),
    ];
    // Each member from an address of its own, as from hosts of their own (the server runs one
    // test of a kind per client address at a time).
    let sources = ["127.0.0.2", "127.0.0.3"];
    for (name, args, figure) in kinds {
        let at = in_secs(1.5);
        let files: Vec<_> = (0..2).map(|i| dir.path().join(format!("{name}{i}.json"))).collect();
        let children: Vec<Child> = (0..2)
            .map(|i| {
                let mut a = args.clone();
                if !matches!(name, "http" | "dns") {
                    a.extend(["-B", sources[i as usize]]);
                }
                a.extend(["--members", "2", "--run-id", name, "--start-at", &at]);
                a.extend(["--max-clock-error", "1m", "-f", "json", "--no-save"]);
                member(&a, i, &[], Some(&files[i as usize]))
            })
            .collect();
        for c in children {
            ok(&c.wait_with_output().unwrap());
        }
        let parts: Vec<serde_json::Value> = files
            .iter()
            .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
            .collect();
        let m = merged(&[files[0].to_str().unwrap(), files[1].to_str().unwrap()]);
        let figure_of = |p: &serde_json::Value| {
            p.pointer(figure)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or_else(|| panic!("{name}: no {figure} in {p}"))
        };
        let sum: u64 = parts.iter().map(figure_of).sum();
        assert!(sum > 0, "{name}: the members measured something");
        assert_eq!(m.pointer(figure).unwrap().as_u64(), Some(sum), "{name}: {figure}");
        assert_eq!(
            m["spec"],
            parts[0]["meta"]["member"]["run_spec"]
                .as_object()
                .map(|o| {
                    let mut o = o.clone();
                    o.remove("kind");
                    serde_json::Value::Object(o)
                })
                .unwrap(),
            "{name}: the run's whole spec"
        );
    }
}
