//! wirespeed and the real vegeta (built by `scripts/peers.sh`) both ways: `vegeta report` counts
//! the same requests, status codes, bytes and slowest latency as `wirespeed http -f vegeta`
//! lines say, and `vegeta plot` draws them; and `wirespeed http --targets` sends, from the same
//! targets files in both of vegeta's formats, the requests `vegeta attack -targets` sends, as a
//! recording server on loopback reads them.

use wirespeed_testkit::skip;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::common::{client, free_port, server};

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
    // Numbered as vegeta numbers: in the order requests began (vegeta plot refuses a timestamp
    // that goes back as the number goes up).
    let mut by_seq: Vec<(u64, String)> = ours
        .iter()
        .map(|l| (l["seq"].as_u64().unwrap(), l["timestamp"].as_str().unwrap().to_string()))
        .collect();
    by_seq.sort();
    assert!(by_seq.iter().enumerate().all(|(i, (seq, _))| *seq == i as u64), "{by_seq:?}");
    assert!(by_seq.windows(2).all(|w| w[0].1 <= w[1].1), "{by_seq:?}");

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

/// One request as the recording server read it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Recorded {
    method: String,
    target: String,
    /// Lower-case names, in the order sent.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// An HTTP/1.1 server on loopback that answers every request `200 ok` and records it; stopped
/// and joined, with every connection's thread, when dropped.
struct Recorder {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (s, halt) = (seen.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            let mut connections = Vec::new();
            for conn in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                connections.push(std::thread::spawn(move || serve(conn, &s)));
            }
            for c in connections {
                c.join().unwrap();
            }
        });
        Self { addr, seen, stop, accept: Some(accept) }
    }

    /// The requests recorded so far, and none after.
    fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

/// Reads requests off one connection until it closes (or is idle for 5 s), answering each.
fn serve(conn: std::net::TcpStream, seen: &Mutex<Vec<Recorded>>) {
    use std::io::{BufRead, BufReader, Read};
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split_whitespace();
        let (Some(method), Some(target)) = (words.next(), words.next()) else { return };
        let (method, target) = (method.to_string(), target.to_string());
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (name, value) = h.split_once(':').unwrap();
            headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
        }
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or(0, |(_, v)| v.parse::<usize>().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        seen.lock().unwrap().push(Recorded { method, target, headers, body });
        if out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

/// The requests as the targets file describes them: only the headers it names (each client
/// adds its own User-Agent, Accept-Encoding, Content-Length), and each distinct request with
/// how many times it was sent.
fn as_described(requests: Vec<Recorded>, named: &[&str]) -> Vec<(Recorded, usize)> {
    let mut kept: Vec<Recorded> = requests
        .into_iter()
        .map(|mut r| {
            r.headers.retain(|(n, _)| named.contains(&n.as_str()));
            r
        })
        .collect();
    kept.sort();
    let mut counted: Vec<(Recorded, usize)> = Vec::new();
    for r in kept {
        match counted.last_mut() {
            Some((last, n)) if *last == r => *n += 1,
            _ => counted.push((r, 1)),
        }
    }
    counted
}

#[test]
fn our_targets_send_what_vegeta_attack_sends_from_the_same_files() {
    if wirespeed_runner::process::which("vegeta").is_none() {
        skip::missing("vegeta is not installed", "scripts/peers.sh builds it");
        return;
    }
    let recorder = Recorder::start();
    let origin = format!("http://{}", recorder.addr);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(&body, b"{\"hello\": \"vegeta\"}\n").unwrap();
    let http_format = format!(
        "# three requests, vegeta's http format\n\
         GET {origin}/a?x=1&y=two\n\
         X-Case: One\n\
         X-Multi: a\n\
         X-Multi: b\n\
         \n\
         POST {origin}/upload\n\
         Content-Type: application/json\n\
         @{body}\n\
         \n\
         PUT {origin}/put/item\n\
         Authorization: Bearer token\n\
         @{body}\n",
        body = body.display()
    );
    let json_format = format!(
        "{{\"method\":\"POST\",\"url\":\"{origin}/j\",\"body\":\"aGVsbG8gd29ybGQ=\",\"header\":{{\"X-A\":[\"1\"]}}}}\n\
         {{\"method\":\"GET\",\"url\":\"{origin}/g?q=1\",\"header\":{{\"X-B\":[\"2\",\"3\"]}}}}\n\
         {{\"method\":\"DELETE\",\"url\":\"{origin}/d\"}}\n"
    );
    let named = ["host", "x-case", "x-multi", "content-type", "authorization", "x-a", "x-b"];
    for (format, text) in [("http", http_format), ("json", json_format)] {
        let file = dir.path().join(format!("targets.{format}"));
        std::fs::write(&file, text).unwrap();
        let file = file.to_str().unwrap();
        // 30 requests each: ten of every target, round-robin.
        let attack = Command::new("vegeta")
            .args(["attack", "-targets", file, "-format", format, "-rate", "30/1s"])
            .args(["-duration", "1s", "-max-workers", "2", "-output", "/dev/null"])
            .output()
            .unwrap();
        assert!(attack.status.success(), "{}", String::from_utf8_lossy(&attack.stderr));
        let theirs = as_described(recorder.take(), &named);
        let out = client(&[
            "http",
            "--targets",
            file,
            "--targets-format",
            format,
            "-n",
            "30",
            "-c",
            "2",
            "--no-save",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let ours = as_described(recorder.take(), &named);
        assert_eq!(theirs.len(), 3, "{format}: three distinct requests: {theirs:#?}");
        assert!(theirs.iter().all(|(_, n)| *n == 10), "{format}: {theirs:#?}");
        assert_eq!(ours, theirs, "{format}: the same requests, as often");
    }
}

#[test]
fn a_scenario_workload_can_be_vegetas_own_load() {
    if wirespeed_runner::process::which("vegeta").is_none() {
        skip::missing("vegeta is not installed", "scripts/peers.sh builds it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("vegeta.toml");
    // A warm-up, so vegeta is also stopped mid-attack (SIGINT) and its partial run thrown away.
    std::fs::write(
        &scenario,
        r#"
[scenario]
name = "vegeta-load"
[run]
repeat = 1
warmup = "500ms"
[[fixture]]
name = "web"
kind = "http"
[[system]]
name = "direct"
entry = "{fixture.web.addr}"
[[workload]]
name = "fixed"
kind = "vegeta"
rate = 40
duration = "2s"
[[workload]]
name = "most"
kind = "vegeta"
rate = 0
max-workers = 2
duration = "1s"
"#,
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = client(&[
        "bench",
        scenario.to_str().unwrap(),
        "--no-save",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let report = |run: &str| -> Value {
        let path = out_dir.join("runs").join(run).join("report.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    // 40 requests/s for 2 s is 80 requests, every one answered, read back as an HTTP report
    // whose headline at a fixed rate is latency.
    let fixed = report("direct_fixed_r1");
    assert_eq!(fixed["kind"], "http");
    assert_eq!(
        (fixed["summary"]["sent"].as_u64(), fixed["summary"]["responses"].as_u64()),
        (Some(80), Some(80))
    );
    assert_eq!(fixed["summary"]["target_rate"], 40.0);
    assert!(fixed["meta"]["notes"][0].as_str().unwrap().contains("vegeta attack -rate 40/s"));
    assert!(text.contains("## fixed\n") && text.contains("Latency p50 (median)"), "{text}");
    // The load generator's version is on record beside the systems'.
    assert!(
        text.contains("version  load of fixed, most: \"vegeta -version\" printed \"Version: v"),
        "{text}"
    );
    assert!(text.contains("| load of fixed, most | `vegeta -version` | Version: v"), "{text}");
    let most = report("direct_most_r1");
    let s = &most["summary"];
    assert!(
        s["responses"].as_u64().unwrap() > 0 && s["errors"].as_object().unwrap().is_empty(),
        "{s}"
    );
    assert_eq!(most["spec"]["connections"], 2);
}
