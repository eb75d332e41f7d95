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
