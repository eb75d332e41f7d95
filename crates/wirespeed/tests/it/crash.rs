//! The store killed mid-write: `wirespeed bench` killed with SIGKILL while it saves one short
//! run after another (into SQLite, and into PostgreSQL), and `wirespeed web` killed in the middle of a burst of results from many
//! visitors. Afterwards the database opens, everything acknowledged before the kill (a `done`
//! line printed, a result's id answered) is in it, whole, and nothing half-written is visible.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use crate::common::web::web;

/// A scenario of `repeat` short latency runs straight at an in-process fixture: saves come
/// every few tens of milliseconds.
fn short_runs(repeat: u32) -> String {
    format!(
        r#"
[scenario]
name = "crash"
[run]
repeat = {repeat}
[[fixture]]
name = "sink"
kind = "bandwidth-sink"
[[system]]
name = "direct"
entry = "{{fixture.sink.addr}}"
[[workload]]
name = "rtt"
kind = "latency"
time = "50ms"
"#
    )
}

#[test]
fn bench_killed_while_saving_keeps_every_run_it_reported_done() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // Killed at a different point each time: after 5, 17 and 40 runs were reported.
    kill_bench_while_saving(&dir, db.to_str().unwrap(), &[5, 17, 40]);
    assert!(integrity_ok(&db));
}

/// The same with the runs saved to PostgreSQL: a transaction cut by the kill is rolled back.
#[test]
fn bench_killed_while_saving_to_postgres_keeps_every_run_it_reported_done() {
    let Some(pg) = wirespeed_testkit::postgres::TestPostgres::start() else { return };
    kill_bench_while_saving(&tempfile::tempdir().unwrap(), &pg.url(), &[5, 23]);
}

/// Runs `wirespeed bench` into the store `db` once per entry of `kills`, killing it with
/// SIGKILL after that many runs were reported done; after each kill, the store opens and
/// every run reported done is in it, each loading whole.
fn kill_bench_while_saving(dir: &tempfile::TempDir, db: &str, kills: &[usize]) {
    let file = dir.path().join("s.toml");
    std::fs::write(&file, short_runs(400)).unwrap();
    let location = wirespeed_store::Location::parse(db).unwrap();
    for (attempt, &kill_after) in kills.iter().enumerate() {
        let out = dir.path().join(format!("out{attempt}"));
        let mut child = Command::new("timeout")
            .args(["-s", "KILL", "120", common::BIN, "bench"])
            .arg(&file)
            .args(["--db", db])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut done = Vec::new();
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if let Some(id) = line.strip_prefix("done").map(|r| r.split_whitespace().next()) {
                done.push(format!("crash {}", id.unwrap()));
                if done.len() == kill_after {
                    // `timeout` runs bench as its child: kill bench itself.
                    let pid = bench_pid(child.id()).expect("bench runs under timeout");
                    assert!(Command::new("kill").args(["-KILL", &pid]).status().unwrap().success());
                }
            }
        }
        let status = child.wait().unwrap();
        // `timeout` passes its child's death by a signal on by dying of the same signal.
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
        assert!(done.len() >= kill_after, "{} runs reported before the kill", done.len());

        let store =
            wirespeed_store::Store::open_at(&location).expect("the database opens after the kill");
        let saved = store.list(&wirespeed_store::RunFilter::default()).unwrap();
        let tags: HashSet<String> = saved.iter().filter_map(|r| r.tag.clone()).collect();
        for id in &done {
            assert!(tags.contains(id), "{id} was reported done but is not saved");
        }
        for run in &saved {
            let report = store.get(run.id).unwrap().expect("every listed run loads whole");
            assert_eq!(report.kind().name(), "latency");
        }
    }
}

/// The pid of the first child of `parent`, as text.
fn bench_pid(parent: u32) -> Option<String> {
    let children =
        std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children.split_whitespace().next().map(str::to_string)
}

/// SQLite's own check of the file: every page and index consistent.
fn integrity_ok(db: &std::path::Path) -> bool {
    let conn = rusqlite::Connection::open(db).unwrap();
    let verdict: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(verdict, "ok");
    true
}

/// Posts one LibreSpeed result (download `n` Mbit/s, upload `2n`) from `from`; its id, or
/// `None` once the server is gone.
fn post_result(port: u16, from: Ipv4Addr, n: u32) -> Option<String> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket.bind(&SocketAddr::from((from, 0)).into()).ok()?;
    socket.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into()).ok()?;
    let mut s: TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let body = format!("dl={n}&ul={}&ping=1&jitter=0&log=&extra=", 2 * n);
    let request = format!(
        "POST /results/telemetry.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.strip_prefix("id ").map(str::to_string))?
}

#[test]
fn web_killed_in_a_burst_of_results_keeps_every_result_it_answered() {
    let mut w = web(&["--same-ip-multi-results", "--max-results", "100000"]);
    let port = w.port;
    let answered: Arc<Mutex<Vec<(String, u32)>>> = Arc::default();
    let gone = Arc::new(AtomicBool::new(false));
    // Four visitors' worth of threads, each from addresses of its own (the per-visitor budget
    // stays far away), posting until the server is gone.
    let posters: Vec<_> = (0..4u8)
        .map(|t| {
            let (answered, gone) = (answered.clone(), gone.clone());
            std::thread::spawn(move || {
                for k in 0..20_000u32 {
                    let from = Ipv4Addr::new(127, 0, 20 + t, (k % 250) as u8 + 1);
                    let n = u32::from(t) * 100_000 + k + 1;
                    match post_result(port, from, n) {
                        Some(id) => answered.lock().unwrap().push((id, n)),
                        None if gone.load(Ordering::Relaxed) => return,
                        None => {}
                    }
                }
            })
        })
        .collect();
    while answered.lock().unwrap().len() < 300 {
        std::thread::sleep(Duration::from_millis(5));
    }
    gone.store(true, Ordering::Relaxed);
    w.child.kill().unwrap();
    w.child.wait().unwrap();
    for p in posters {
        p.join().unwrap();
    }

    let answered = answered.lock().unwrap().clone();
    let saved = w.saved();
    assert!(integrity_ok(&w.db()));
    let by_id: std::collections::HashMap<&str, &wirespeed_model::web::WebResult> =
        saved.iter().map(|r| (r.id.as_str(), r)).collect();
    for (id, n) in &answered {
        let row = by_id
            .get(id.as_str())
            .unwrap_or_else(|| panic!("result {id} was answered but not saved"));
        assert_eq!(row.claimed_download_bps, Some(f64::from(*n) * 1e6), "{row:?}");
    }
    // Nothing half-written: every row's fields were written together.
    for row in &saved {
        let (down, up) = (row.claimed_download_bps.unwrap(), row.claimed_upload_bps.unwrap());
        assert_eq!(up, 2.0 * down, "{row:?}");
    }
    // At most the results in flight at the kill were saved without an answer.
    assert!(saved.len() >= answered.len() && saved.len() <= answered.len() + 4);
}
