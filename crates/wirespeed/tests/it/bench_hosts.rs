//! `wirespeed bench` with its roles placed on hosts: `hosts = "netns"` makes each `[[host]]` a
//! network namespace, joined by links that carry `[network]`'s conditions (a swept loss
//! here), with a fixture and a system process on the server host and the load on the client
//! host. What the link dropped is recorded with each run and matches what the load counted;
//! Ctrl-C in the middle leaves no namespace and no process behind; a scenario whose hosts
//! cannot be made is refused with its exit code before anything starts.

use wirespeed_testkit::skip;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wirespeed_netlab::namespace;

use crate::common;

/// The lab namespaces made by process `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let mine = format!("{}{pid}-", namespace::PREFIX);
    namespace::list().into_iter().filter(|n| n.starts_with(&mine)).collect()
}

fn can_make_labs() -> bool {
    match wirespeed_netlab::privilege::check() {
        Ok(()) => true,
        Err(e) => {
            skip::missing(&e.to_string(), "run as root");
            false
        }
    }
}

/// A DNS study between two hosts: the fixture and a `wirespeed server --dns` on `server`, the
/// queries from `client`, a 1 ms link losing 0 % and then 3 % each way.
fn dns_study(seconds: &str) -> String {
    format!(
        r#"
[scenario]
name = "dns-across-hosts"
[run]
repeat = 1
hosts = "netns"
[[host]]
name = "client"
[[host]]
name = "server"
[network]
delay = "1ms"
loss = ["0%", "3%"]
[[fixture]]
name = "auth"
kind = "dns"
host = "server"
[[system]]
name = "fixture"
entry = "{{fixture.auth.addr}}"
[[system]]
name = "wirespeed"
entry = "{{host.server.addr}}:{{port.dns}}"
process = [ {{ role = "dns", host = "server", cmd = "{bin} server -p {{port.main}} --dns {{port.dns}}", ready = {{ dns = "{{port.dns}}" }} }} ]
[[workload]]
name = "qps"
kind = "dns"
host = "client"
time-limit = "{seconds}"
max-qps = 2000
max-outstanding = 1000
timeout = "1s"
"#,
        bin = common::BIN
    )
}

#[test]
fn a_study_runs_across_netns_hosts_and_records_what_its_links_did() {
    if !can_make_labs() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, dns_study("2s")).unwrap();
    let out_dir = dir.path().join("out");
    let child = Command::new(common::BIN)
        .args(["bench", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--no-save"])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for id in ["fixture/qps[loss=0%]/r1", "wirespeed/qps[loss=3%]/r1"] {
        assert!(text.lines().any(|l| l.starts_with("done") && l.contains(id)), "{id}: {text}");
    }
    for (run, loss) in [
        ("fixture_qps_loss=0___r1", 0.0),
        ("fixture_qps_loss=3___r1", 0.03),
        ("wirespeed_qps_loss=3___r1", 0.03),
    ] {
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join("runs").join(run).join("report.json")).unwrap(),
        )
        .unwrap();
        let links = report["meta"]["links"].as_array().unwrap();
        assert_eq!(links.len(), 2, "{run}: both directions recorded");
        assert_eq!(links[0]["from"], "client");
        assert_eq!(links[0]["conditions"]["delay_ns"], 1_000_000);
        let asked = links[0]["conditions"]["loss"].as_f64().unwrap_or(0.0);
        assert!((asked - loss).abs() < 1e-9, "{run}: {asked}");
        let dropped: u64 = links.iter().filter_map(|l| l["lost"].as_u64()).sum();
        let lost = report["summary"]["lost"].as_u64().unwrap();
        // The readiness probes' TCP packets crossed the lossy link too, so the link may have
        // dropped a few more than the queries lost.
        assert!(dropped >= lost && dropped <= lost + 10, "{run}: link {dropped}, test {lost}");
        if loss > 0.0 {
            assert!(lost > 0, "{run}");
        } else {
            assert_eq!(lost, 0, "{run}");
        }
        let notes: Vec<&str> =
            report["meta"]["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
        assert!(
            notes.iter().any(|n| n.starts_with("bench: load qps from host client (10.77.0.1)")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.starts_with("bench: on host server (10.77.0.2)")),
            "{notes:?}"
        );
    }
    // The process on the server host was sampled under its role and host.
    let samples: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("runs/wirespeed_qps_loss=0___r1/samples.json"))
            .unwrap(),
    )
    .unwrap();
    assert!(samples.iter().any(|s| s["role"] == "dns@server"), "{samples:?}");
    assert!(namespaces_of(pid).is_empty(), "namespaces left: {:?}", namespaces_of(pid));
}

#[test]
fn ctrl_c_removes_every_namespace_and_process_it_made() {
    if !can_make_labs() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, dns_study("30s")).unwrap();
    let child = Command::new(common::BIN)
        .args([
            "bench",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--no-save",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the load runs on the client host: a wirespeed process there (not one of the
    // commands that set the host up, which a busy machine may show there first).
    let t0 = Instant::now();
    let loaded = || {
        namespaces_of(pid).iter().any(|ns| {
            ns.ends_with("-client")
                && Command::new("ip").args(["netns", "pids", ns]).output().is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout).split_whitespace().any(|p| {
                        std::fs::read_to_string(format!("/proc/{p}/comm"))
                            .is_ok_and(|c| c.trim() == "wirespeed")
                    })
                })
        })
    };
    while !loaded() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the load never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let made = namespaces_of(pid);
    assert_eq!(made.len(), 2, "{made:?}");
    // SAFETY: kill(2) touches no memory.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(namespaces_of(pid).is_empty(), "namespaces left: {:?}", namespaces_of(pid));
    for ns in made {
        let path = std::path::Path::new("/run/netns").join(&ns);
        assert!(!path.exists(), "{ns} is still there");
    }
}

#[test]
fn a_scenario_whose_paths_netem_would_refuse_is_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let text = dns_study("1s").replace("loss = [\"0%\", \"3%\"]", "loss = [\"0%\", \"130%\"]");
    std::fs::write(&file, &text).unwrap();
    let out = common::client(&["bench", file.to_str().unwrap(), "--dry-run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = text.lines().position(|l| l.starts_with("loss =")).unwrap() + 1;
    assert!(err.contains(&format!("s.toml:{line}:")), "{err}");
    assert!(err.contains("loss = \"130%\": a share must be between 0% and 100%"), "{err}");
}

#[test]
fn without_the_privileges_netns_hosts_are_refused_before_anything_is_made() {
    if !can_make_labs() {
        return;
    }
    // The same study as an unprivileged user (setpriv drops to nobody, with no capabilities).
    let dir = tempfile::tempdir().unwrap();
    let open = |p: &std::path::Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    open(dir.path(), 0o777);
    let file = dir.path().join("s.toml");
    std::fs::write(&file, dns_study("1s")).unwrap();
    open(&file, 0o644);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", common::BIN])
        .args([
            "bench",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--no-save",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(
        err.contains("need CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root, or under sudo)"),
        "{err}"
    );
    assert!(!dir.path().join("out/runs").exists(), "no run was started");
}
