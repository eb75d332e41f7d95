//! Real LibreSpeed clients against `wirespeed web` on loopback: librespeed-cli (crates.io,
//! installed by scripts/test.sh) runs a whole test through a local server list and posts its
//! telemetry, which must be saved with what the server measured.

use std::path::PathBuf;
use std::process::Command;

use crate::common;
use crate::common::web::web;

/// librespeed-cli on PATH or in cargo's bin directory.
fn librespeed_cli() -> PathBuf {
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|d| d.join("bin/librespeed-cli"));
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("librespeed-cli"))
        .chain(cargo_bin)
        .find(|p| p.exists())
        .expect("librespeed-cli is not installed: run scripts/test.sh (cargo install librespeed-cli --locked)")
}

/// Starts librespeed-cli against `w` for `seconds` a phase, telemetry on, from 127.0.0.1.
fn start_cli(w: &common::web::Web, seconds: u32) -> std::process::Child {
    let list = w.dir.path().join("servers.json");
    std::fs::write(
        &list,
        format!(
            r#"[{{"id": 1, "name": "wirespeed on loopback", "server": "http://127.0.0.1:{}/",
                 "dlURL": "backend/garbage.php", "ulURL": "backend/empty.php",
                 "pingURL": "backend/empty.php", "getIpURL": "backend/getIP.php"}}]"#,
            w.port
        ),
    )
    .unwrap();
    let base = format!("http://127.0.0.1:{}", w.port);
    Command::new(librespeed_cli())
        .args(["--local-json", list.to_str().unwrap(), "--no-icmp", "--json"])
        .args(["--duration", &seconds.to_string()])
        .args(["--telemetry-server", &base, "--telemetry-path", "/results/telemetry.php"])
        .args(["--telemetry-share", "/results/"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn librespeed_cli_completes_a_run_and_its_telemetry_is_saved() {
    let w = web(&[]);
    let out = start_cli(&w, 5).wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let report = &report[0];
    let figure = |k: &str| report[k].as_f64().unwrap_or_else(|| panic!("{k} in {report}"));
    // Plausible, not fast: any loopback moves more than 10 Mbit/s.
    assert!(figure("download") > 10.0, "{report}");
    assert!(figure("upload") > 10.0, "{report}");
    // An HTTP round trip on loopback: more than the 0.005 ms the CLI rounds away, under a second.
    let ping = figure("ping");
    assert!(ping > 0.0 && ping < 1000.0, "ping {ping}: {report}");
    assert_eq!(report["client"]["ip"], "127.0.0.1");
    assert_eq!(report["client"]["org"], "localhost IPv4 access");
    let share = report["share"].as_str().unwrap();

    let saved = w.saved();
    assert_eq!(saved.len(), 1, "the telemetry was saved");
    let r = &saved[0];
    assert!(share.ends_with(&r.id), "{share} names {}", r.id);
    assert_eq!(r.source, wirespeed_model::web::WebSource::Telemetry);
    assert!(r.download_by_server && r.upload_by_server, "{r:?}");
    assert!(r.download_bps.unwrap() > 10e6 && r.upload_bps.unwrap() > 10e6, "{r:?}");
    // The server's figures and the client's describe the same transfers (the CLI counts its
    // ramp-up, the server skips LibreSpeed's grace period): within a factor of 4.
    for (server, client) in
        [(r.download_bps, r.claimed_download_bps), (r.upload_bps, r.claimed_upload_bps)]
    {
        let ratio = server.unwrap() / client.unwrap();
        assert!((0.25..4.0).contains(&ratio), "server/client {ratio}: {r:?}");
    }
    assert!(r.user_agent.starts_with("librespeed-cli"), "{}", r.user_agent);
    // The telemetry carries the ping the CLI printed (both to 0.01 ms).
    assert!(r.ping_ms.is_some_and(|saved| (saved - ping).abs() < 0.006), "{r:?} vs {ping}");
}

/// A slow client's download was saved with what the server handed to its connections: send
/// buffers and the 1 MiB chunk in hand made a client reading exactly 8 Mbit/s over six streams
/// read as 11.8 (+48 %). The server now counts what the client acknowledged, so its figure is
/// what the client read, give or take what sits in the client's receive buffers.
#[test]
fn a_slow_clients_download_is_saved_at_the_rate_it_read() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let w = web(&[]);
    const STREAMS: usize = 6;
    const PER_STREAM: f64 = 8e6 / 8.0 / STREAMS as f64; // bytes/s: 8 Mbit/s in all
    const RUN: Duration = Duration::from_secs(6);
    // LibreSpeed's grace period, which the server leaves out; the client's own figure too.
    const GRACE: Duration = Duration::from_millis(1500);
    let start = Instant::now();
    let readers: Vec<_> = (0..STREAMS)
        .map(|_| {
            let port = w.port;
            std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                // A small receive buffer, as a slow client's would autotune to.
                let s2 = socket2::SockRef::from(&s);
                s2.set_recv_buffer_size(64 * 1024).unwrap();
                s.write_all(b"GET /backend/garbage.php?ckSize=100 HTTP/1.1\r\nHost: x\r\n\r\n")
                    .unwrap();
                s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                let (mut got, mut after_grace) = (0f64, 0u64);
                let mut buf = vec![0u8; 16 * 1024];
                while start.elapsed() < RUN {
                    let allowed = PER_STREAM * start.elapsed().as_secs_f64() - got;
                    if allowed < 1.0 {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                    let want = (allowed as usize).min(buf.len());
                    if let Ok(n) = s.read(&mut buf[..want]) {
                        got += n as f64;
                        if start.elapsed() >= GRACE {
                            after_grace += n as u64;
                        }
                    }
                }
                after_grace
            })
        })
        .collect();
    let read: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let measured_span = start.elapsed() - GRACE;
    let client_bps = read as f64 * 8.0 / measured_span.as_secs_f64();
    let reply = w.post(
        [127, 0, 0, 1],
        "/results/telemetry.php",
        "Content-Type: application/x-www-form-urlencoded\r\n",
        b"ispinfo=&dl=8.00&ul=1.00&ping=1&jitter=0&log=&extra=",
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    let saved = w.saved();
    assert_eq!(saved.len(), 1);
    let r = &saved[0];
    assert!(r.download_by_server, "{r:?}");
    let ratio = r.download_bps.unwrap() / client_bps;
    assert!(
        (0.85..1.15).contains(&ratio),
        "server {:.2} Mbit/s against the {:.2} the client read: {ratio:.3}",
        r.download_bps.unwrap() / 1e6,
        client_bps / 1e6
    );
}

/// A LibreSpeed client has no token, so its address tied every transfer from it since its last
/// result to its test: a download of something else before the test took the server's figures
/// down (the span from that download to the test's end), and one run 40 s earlier made the
/// saved upload 0 bit/s "measured by the server". Now the test's own phases are measured.
#[test]
fn an_earlier_download_from_the_same_address_is_not_the_tests() {
    let w = web(&[]);
    let other = w.get([127, 0, 0, 1], "/backend/garbage.php?ckSize=20");
    assert_eq!((other.status, other.body.len()), (200, 20 << 20));
    let up = w.post([127, 0, 0, 1], "/backend/empty.php", "", &vec![7u8; 4 << 20]);
    assert_eq!(up.status, 200);
    // The test starts well after those (by timing alone; before, the span counted from them).
    std::thread::sleep(std::time::Duration::from_secs(12));
    let out = start_cli(&w, 5).wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let saved = w.saved();
    assert_eq!(saved.len(), 1);
    let r = &saved[0];
    assert!(r.download_by_server && r.upload_by_server, "{r:?}");
    for (server, client) in
        [(r.download_bps, r.claimed_download_bps), (r.upload_bps, r.claimed_upload_bps)]
    {
        let ratio = server.unwrap() / client.unwrap();
        assert!((0.5..2.0).contains(&ratio), "server/client {ratio}: {r:?}");
    }
}

/// Two visitors behind one address testing at once: one was saved with about twice its own
/// upload and the other with no server figure. Their transfers cannot be told apart by
/// address, but their timing shows two tests; each is saved with its own client's figures,
/// marked as such, and neither takes the other's bytes.
#[test]
fn two_clients_behind_one_address_testing_at_once_keep_their_own_figures() {
    let w = web(&["--same-ip-multi-results"]);
    let first = start_cli(&w, 6);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let second = start_cli(&w, 6);
    for c in [first, second] {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let saved = w.saved();
    assert_eq!(saved.len(), 2, "{saved:?}");
    for r in &saved {
        assert!(!r.download_by_server && !r.upload_by_server, "{r:?}");
        assert_eq!(r.download_bps, r.claimed_download_bps, "{r:?}");
        assert_eq!(r.upload_bps, r.claimed_upload_bps, "{r:?}");
    }
}
