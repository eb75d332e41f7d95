//! Real LibreSpeed clients against `wirespeed web` on loopback: librespeed-cli (crates.io,
//! installed by scripts/test.sh) runs a whole test through a local server list and posts its
//! telemetry, which must be saved with what the server measured.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::web::web;

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

#[test]
fn librespeed_cli_completes_a_run_and_its_telemetry_is_saved() {
    let w = web(&[]);
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
    let out = Command::new(librespeed_cli())
        .args(["--local-json", list.to_str().unwrap(), "--duration", "5", "--no-icmp", "--json"])
        .args(["--telemetry-server", &base, "--telemetry-path", "/results/telemetry.php"])
        .args(["--telemetry-share", "/results/"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let report = &report[0];
    let figure = |k: &str| report[k].as_f64().unwrap_or_else(|| panic!("{k} in {report}"));
    // Plausible, not fast: any loopback moves more than 10 Mbit/s.
    assert!(figure("download") > 10.0, "{report}");
    assert!(figure("upload") > 10.0, "{report}");
    assert!(figure("ping") >= 0.0);
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
