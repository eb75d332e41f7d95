//! Operators' monitoring, with the real programs: `server --metrics` and `web --metrics`
//! scraped by Debian's Prometheus (and checked by its `promtool`), a counter read back with
//! PromQL; `export --format openmetrics` checked by promtool and pushed through Debian's
//! Pushgateway.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::web::web;
use crate::common::{client, debian, free_port, server, BIN};

/// A peer process, killed and reaped when dropped.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 exchange with a loopback port: the status and the body.
fn http(port: u16, method: &str, target: &str, body: &[u8]) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_string());
    // The endpoints here answer with a length or chunked; a chunked body keeps its size lines,
    // which the checks below do not mind.
    Some((status, body))
}

/// The endpoint's series now.
fn scrape(port: u16) -> String {
    let (status, body) = http(port, "GET", "/metrics", b"").expect("the metrics endpoint answers");
    assert_eq!(status, 200, "{body}");
    body
}

/// The value of the sample `series` (its name and labels exactly as exposed).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// `promtool check metrics` on `text`: its verdict and what it said.
fn promtool(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

/// `s` as a URL query value.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn prometheus_scrapes_a_servers_metrics_and_reads_a_counter_back() {
    let Some(()) = debian("/usr/bin/prometheus", "prometheus") else { return };
    let (metrics, web_port) = (free_port(), free_port());
    let srv = server(&[
        "--metrics",
        &format!("127.0.0.1:{metrics}"),
        "--web",
        &web_port.to_string(),
        "--no-save",
        "--max-duration",
        "60",
    ]);
    let target = format!("127.0.0.1:{}", srv.1);
    let before = scrape(metrics);
    assert_eq!(
        sample(&before, "wirespeed_tests_total{kind=\"bandwidth\",outcome=\"completed\"}"),
        0.0
    );

    // One test that completes, one refused as too long, one connection of garbage, one page.
    let ok = client(&["bw", &target, "-t", "0.5", "--no-save"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let refused = client(&["bw", &target, "-t", "120", "--no-save"]);
    assert!(!refused.status.success());
    let mut garbage = TcpStream::connect(("127.0.0.1", srv.1)).unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    garbage.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = garbage.read_to_end(&mut Vec::new());
    let (status, _) = http(web_port, "GET", "/getIP", b"").unwrap();
    assert_eq!(status, 200);

    let text = scrape(metrics);
    let (clean, said) = promtool(&text);
    assert!(clean, "promtool check metrics:\n{said}\n{text}");
    assert_eq!(
        sample(&text, "wirespeed_tests_total{kind=\"bandwidth\",outcome=\"completed\"}"),
        1.0
    );
    assert_eq!(
        sample(&text, "wirespeed_tests_refused_total{kind=\"bandwidth\",reason=\"limit\"}"),
        1.0
    );
    assert_eq!(sample(&text, "wirespeed_protocol_errors_total{reason=\"invalid\"}"), 1.0);
    assert_eq!(sample(&text, "wirespeed_test_duration_seconds_count{kind=\"bandwidth\"}"), 1.0);
    assert_eq!(sample(&text, "wirespeed_tests_active{kind=\"bandwidth\"}"), 0.0);
    let moved =
        sample(&text, "wirespeed_test_bytes_total{direction=\"received\",kind=\"bandwidth\"}");
    assert!(moved > 0.0, "an upload test moved no bytes:\n{text}");
    assert_eq!(sample(&text, "wirespeed_web_requests_total{code=\"200\",route=\"getIP\"}"), 1.0);
    assert!(sample(&text, "process_resident_memory_bytes") > 0.0);
    // Control connection, data stream, refused control connection, garbage: four accepted.
    assert_eq!(sample(&text, "wirespeed_connections_accepted_total"), 4.0);
    let (status, _) = http(metrics, "GET", "/other", b"").unwrap();
    assert_eq!(status, 404);
    let (status, _) = http(metrics, "POST", "/metrics", b"x").unwrap();
    assert_eq!(status, 405);

    // Prometheus itself scrapes the endpoint and answers a query over what it stored.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: wirespeed\n    static_configs:\n      - targets: ['127.0.0.1:{metrics}']\n"
        ),
    )
    .unwrap();
    let api = free_port();
    let _prometheus = Peer(
        Command::new("/usr/bin/prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{api}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let query = "wirespeed_tests_total{job=\"wirespeed\",kind=\"bandwidth\",outcome=\"completed\"}";
    let path = format!("/api/v1/query?query={}", percent(query));
    let deadline = Instant::now() + Duration::from_secs(90);
    let answer = loop {
        if let Some((200, body)) = http(api, "GET", &path, b"") {
            let json: serde_json::Value = serde_json::from_str(body.trim()).unwrap_or_default();
            if let Some(first) = json["data"]["result"].get(0) {
                break first.clone();
            }
        }
        assert!(Instant::now() < deadline, "Prometheus never stored {query}");
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(answer["value"][1], "1", "{answer}");
    assert_eq!(answer["metric"]["instance"], format!("127.0.0.1:{metrics}"));
}

/// `wirespeed_connections_open` showed 1 while a `bw -P 3` test held four connections on the
/// port: a data connection left the count as soon as it was handed to its test.
#[test]
fn open_connections_count_data_streams_while_their_test_holds_them() {
    let metrics = free_port();
    let srv = server(&["--metrics", &format!("127.0.0.1:{metrics}"), "--no-save"]);
    let target = format!("127.0.0.1:{}", srv.1);
    let running = Peer(
        Command::new(BIN)
            .args(["bw", &target, "-P", "3", "-t", "8", "-i", "0.2", "--no-save"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Bytes are added at each interval: once some are, every stream is attached.
    let received = "wirespeed_test_bytes_total{direction=\"received\",kind=\"bandwidth\"}";
    let deadline = Instant::now() + Duration::from_secs(7);
    let text = loop {
        let text = scrape(metrics);
        if sample(&text, received) > 0.0 {
            break text;
        }
        assert!(Instant::now() < deadline, "no bytes counted mid-test:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(sample(&text, "wirespeed_tests_active{kind=\"bandwidth\"}"), 1.0);
    assert_eq!(sample(&text, "wirespeed_connections_open"), 4.0, "control and 3 data streams");
    drop(running);
    // Once the client is gone and the server has noticed, nothing is left open.
    let deadline = Instant::now() + Duration::from_secs(20);
    while sample(&scrape(metrics), "wirespeed_connections_open") > 0.0 {
        assert!(Instant::now() < deadline, "connections left counted open");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_web_servers_metrics_count_budget_refusals_and_saved_results() {
    let metrics = free_port();
    let w = web(&["--metrics", &format!("127.0.0.1:{metrics}"), "--requests-per-ip", "3"]);
    let me = [127, 0, 0, 1];
    let saved = w.telemetry_form(me, b"dl=93.50&ul=12.25&ping=3.10&jitter=0.40");
    assert_eq!(saved.status, 200, "{}", saved.text());
    let invalid = w.telemetry_form(me, b"dl=fast");
    assert_eq!(invalid.status, 400);
    assert_eq!(w.get(me, "/getIP").status, 200);
    assert_eq!(w.get(me, "/getIP").status, 429);
    // Another visitor has a budget of its own.
    assert_eq!(w.get([127, 0, 0, 2], "/getIP").status, 200);
    let text = scrape(metrics);
    let (clean, said) = promtool(&text);
    assert!(clean, "promtool check metrics:\n{said}\n{text}");
    assert_eq!(sample(&text, "wirespeed_web_results_saved_total"), 1.0);
    assert_eq!(sample(&text, "wirespeed_web_results_unsaved_total{reason=\"invalid\"}"), 1.0);
    assert_eq!(sample(&text, "wirespeed_web_budget_refusals_total{reason=\"requests\"}"), 1.0);
    assert_eq!(sample(&text, "wirespeed_web_requests_total{code=\"429\",route=\"getIP\"}"), 1.0);
    assert_eq!(sample(&text, "wirespeed_web_requests_total{code=\"200\",route=\"getIP\"}"), 2.0);
    assert_eq!(w.saved().len(), 1);
}

#[test]
fn exported_runs_pass_promtool_and_a_pushgateway() {
    let Some(()) = debian("/usr/bin/prometheus-pushgateway", "prometheus-pushgateway") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let srv = server(&[]);
    let target = format!("127.0.0.1:{}", srv.1);
    let bw = client(&["bw", &target, "-t", "0.5", "--db", db, "--tag", "night \"run\"\\2"]);
    assert!(bw.status.success(), "{}", String::from_utf8_lossy(&bw.stderr));
    let lat = client(&["latency", &target, "-t", "0.5", "--db", db]);
    assert!(lat.status.success(), "{}", String::from_utf8_lossy(&lat.stderr));
    let out = client(&["export", "last~1", "last", "-f", "openmetrics", "--db", db]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let (clean, said) = promtool(&text);
    assert!(clean, "promtool check metrics:\n{said}\n{text}");
    // The throughput in bytes per second is the saved run's bits per second over 8.
    let json = client(&["export", "last~1", "--db", db]);
    let saved: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let bps = saved[0]["report"]["summary"]["received_bps"].as_f64().expect("a received rate");
    let series = "wirespeed_run_throughput_bytes_per_second{run=\"1\",kind=\"bandwidth\"";
    let line = text.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("{text}"));
    let ours: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((ours - bps / 8.0).abs() <= 1e-6 * ours, "{ours} against {bps} bit/s");

    let port = free_port();
    let _gateway = Peer(
        Command::new("/usr/bin/prometheus-pushgateway")
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Pushgateway starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let pushed = loop {
        if let Some(answer) = http(port, "POST", "/metrics/job/wirespeed", text.as_bytes()) {
            break answer;
        }
        assert!(Instant::now() < deadline, "the Pushgateway never listened");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(pushed.0 == 200 || pushed.0 == 202, "push refused: {pushed:?}");
    let (_, exposed) = http(port, "GET", "/metrics", b"").unwrap();
    let back = exposed
        .lines()
        .find(|l| {
            l.starts_with("wirespeed_run_throughput_bytes_per_second{")
                && l.contains("job=\"wirespeed\"")
                && l.contains("tag=\"night \\\"run\\\"\\\\2\"")
        })
        .unwrap_or_else(|| panic!("the pushed run is not exposed:\n{exposed}"));
    let value: f64 = back.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((value - ours).abs() <= 1e-9 * ours, "{back} against {line}");
    assert!(exposed.contains("wirespeed_run_rtt_p50_seconds{"), "{exposed}");
}
