//! `wirespeed bench` with `hosts = "ssh"`, through real OpenSSH: each host a network namespace
//! on a bridge of the test's own, running Debian's sshd on its address with a host key made
//! for the test, logged into with a client key made for the test (through an ssh config file
//! given with `--ssh-config`, as a lab's own would be). Roles and the load run there as plain
//! `wirespeed` commands; a host that refuses the key fails only its cells, one without
//! wirespeed skips its cells, and one that dies mid-run fails its runs while the study goes
//! on. Nothing the runner started is left on any host.

use wirespeed_testkit::netns;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use netns::Netns;

use crate::common;

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A bridge the test's namespaces hang off, removed when dropped.
struct Bridge(String);

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).output();
    }
}

/// An sshd in a namespace; killed when dropped.
struct Sshd(Child);

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Hosts reachable over ssh: namespaces on a bridge, an sshd in each but the last (which has
/// an address and nothing listening), keys and a client config.
struct Lab {
    // Drop order: sshds, then namespaces, then the bridge.
    sshd: Vec<Sshd>,
    hosts: Vec<Netns>,
    _bridge: Bridge,
    addrs: Vec<String>,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

fn keygen(path: &Path) {
    run("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f", path.to_str().unwrap()]);
}

impl Lab {
    fn new(names: &[&str]) -> Option<Self> {
        if !Path::new("/usr/sbin/sshd").exists() {
            wirespeed_testkit::skip::not_installed("sshd", "openssh-server");
            return None;
        }
        // The bridge's name claims the test's number: tests run side by side in processes
        // whose ids may agree modulo 200, and the kernel makes one link of a name at most. A
        // number whose veth names are still held (a namespace outlives its last process while
        // its orphaned sockets time out) is passed over too.
        let start = std::process::id() % 200;
        let (net, bridge) = (0..200)
            .map(|k| (start + k) % 200 + 20)
            .filter(|net| !Path::new(&format!("/sys/class/net/ws{net}h0")).exists())
            .find_map(|net| {
                let name = format!("wsb{net}");
                let made =
                    Command::new("ip").args(["link", "add", &name, "type", "bridge"]).output();
                made.ok().filter(|o| o.status.success()).map(|_| (net, Bridge(name)))
            })
            .expect("a free bridge number");
        let dir = tempfile::tempdir().unwrap();
        let first = Netns::new(&format!("ssh{net}a"))?;
        let mut hosts = vec![first];
        for i in 1..names.len() {
            hosts.push(Netns::new(&format!("ssh{net}{i}")).unwrap());
        }
        run("ip", &["addr", "add", &format!("10.214.{net}.1/24"), "dev", &bridge.0]);
        run("ip", &["link", "set", &bridge.0, "up"]);
        let mut addrs = Vec::new();
        for (i, ns) in hosts.iter().enumerate() {
            let (outside, inside) = (format!("ws{net}h{i}"), format!("ws{net}n{i}"));
            run(
                "ip",
                &[
                    "link", "add", &outside, "type", "veth", "peer", "name", &inside, "netns",
                    &ns.name,
                ],
            );
            run("ip", &["link", "set", &outside, "master", &bridge.0, "up"]);
            let addr = format!("10.214.{net}.{}", i + 2);
            ns.run(&format!("ip addr add {addr}/24 dev {inside} && ip link set {inside} up"));
            addrs.push(addr);
        }
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        keygen(&d.join("stranger_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut sshd = Vec::new();
        let mut config = String::new();
        for (i, name) in names.iter().enumerate() {
            let listening = i + 1 < names.len();
            if listening {
                let conf = d.join(format!("sshd_{i}.conf"));
                std::fs::write(
                    &conf,
                    format!(
                        "ListenAddress {}\nHostKey {}\nAuthorizedKeysFile {}\nPidFile none\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nSubsystem sftp internal-sftp\nLogLevel ERROR\n",
                        addrs[i],
                        d.join("host_key").display(),
                        d.join("authorized_keys").display()
                    ),
                )
                .unwrap();
                let child = hosts[i]
                    .command("/usr/sbin/sshd")
                    .args(["-D", "-e", "-f", conf.to_str().unwrap()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                sshd.push(Sshd(child));
            }
            let key = if *name == "locked" { "stranger_key" } else { "client_key" };
            config.push_str(&format!(
                "Host lab-{name}\n  HostName {}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
                addrs[i],
                d.join(key).display()
            ));
        }
        let config_path = d.join("ssh_config");
        std::fs::write(&config_path, config).unwrap();
        let lab = Self { sshd, hosts, _bridge: bridge, addrs, config: config_path, _dir: dir };
        for name in names.iter().take(lab.sshd.len()) {
            lab.wait_for_ssh(name);
        }
        Some(lab)
    }

    /// Waits until `ssh lab-NAME true` works.
    fn wait_for_ssh(&self, name: &str) {
        let t0 = Instant::now();
        loop {
            let ok = Command::new("ssh")
                .args([
                    "-F",
                    self.config.to_str().unwrap(),
                    "-o",
                    "BatchMode=yes",
                    &format!("lab-{name}"),
                    "true",
                ])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "sshd on {name} never answered");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The processes in host `i`'s namespace other than its sshd.
    fn leftovers(&self, i: usize) -> Vec<u32> {
        let out = Command::new("ip").args(["netns", "pids", &self.hosts[i].name]).output().unwrap();
        let sshd = self.sshd.get(i).map(|s| s.0.id());
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|p| Some(*p) != sshd)
            .filter(|p| {
                !std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .unwrap_or_default()
                    .starts_with("sshd")
            })
            .collect()
    }
}

/// A DNS study on ssh hosts: a fixture and a `wirespeed server --dns` on `server`, the load on
/// `client`, and systems on a host that refuses the key and on one without wirespeed.
fn scenario(lab: &Lab, seconds: &str) -> String {
    format!(
        r#"
[scenario]
name = "dns-over-ssh"
[run]
repeat = 1
[[host]]
name = "client"
ssh = "lab-client"
address = "{client}"
wirespeed = "{bin}"
[[host]]
name = "server"
ssh = "lab-server"
address = "{server}"
wirespeed = "{bin}"
[[host]]
name = "locked"
ssh = "lab-locked"
wirespeed = "{bin}"
[[host]]
name = "bare"
ssh = "lab-bare"
wirespeed = "/nonexistent/wirespeed"
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
file.note = "zone served by {{host.server.addr}}"
process = [ {{ role = "dns", host = "server", cmd = "{bin} server -p {{port.main}} --dns {{port.dns}}", ready = {{ dns = "{{port.dns}}" }} }} ]
[[system]]
name = "refused"
entry = "{{host.locked.addr}}:53"
process = [ {{ role = "dns", host = "locked", cmd = "{bin} server --dns 53", ready = {{ dns = "53" }} }} ]
[[system]]
name = "bare"
entry = "{{host.bare.addr}}:53"
process = [ {{ role = "dns", host = "bare", cmd = "/nonexistent/wirespeed server --dns 53" }} ]
[[workload]]
name = "qps"
kind = "dns"
host = "client"
time-limit = "{seconds}"
max-qps = 1000
"#,
        client = lab.addrs[0],
        server = lab.addrs[1],
        bin = common::BIN
    )
}

#[test]
fn a_study_runs_on_ssh_hosts_and_a_bad_host_fails_or_skips_only_its_cells() {
    // `bare` has an sshd too (it is `locked`'s address that refuses the key); the last name
    // has no sshd.
    let Some(lab) = Lab::new(&["client", "server", "bare", "locked"]) else { return };
    // `locked` reaches bare's sshd with a key it does not know.
    let text = scenario(&lab, "2s");
    let config = std::fs::read_to_string(&lab.config).unwrap();
    let config = config.replace(
        &format!("Host lab-locked\n  HostName {}", lab.addrs[3]),
        &format!("Host lab-locked\n  HostName {}", lab.addrs[2]),
    );
    std::fs::write(&lab.config, config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, &text).unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(common::BIN)
        .args(["bench", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--no-save"])
        .args(["--ssh-config", lab.config.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let status = |id: &str| {
        text.lines()
            .find(|l| l.contains(id))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
    };
    assert_eq!(status("fixture/qps/r1").as_deref(), Some("done"), "{text}");
    assert_eq!(status("wirespeed/qps/r1").as_deref(), Some("done"), "{text}");
    assert_eq!(status("refused/qps/r1").as_deref(), Some("FAILED"), "{text}");
    assert_eq!(status("bare/qps/r1").as_deref(), Some("skipped"), "{text}");
    assert!(text.contains("Permission denied (publickey"), "the key's refusal is said: {text}");
    assert!(text.contains("host bare: /nonexistent/wirespeed is not installed there"), "{text}");
    assert_eq!(out.status.code(), Some(5), "a failed run: {text}");
    // The load ran on the client host against the server host's address.
    let run = out_dir.join("runs/wirespeed_qps_r1");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["spec"]["server"], lab.addrs[1].as_str());
    assert!(report["summary"]["completed"].as_u64().unwrap() > 500, "{}", report["summary"]);
    // The server host sampled its role and sent the samples; its log came back.
    let samples: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(run.join("samples.json")).unwrap()).unwrap();
    assert!(
        samples.iter().any(|s| s["role"] == "dns@server" && s["rss_bytes"].as_u64() > Some(0)),
        "{samples:?}"
    );
    assert!(run.join("dns@server.log").exists());
    for i in 0..3 {
        assert!(lab.leftovers(i).is_empty(), "host {i} kept {:?}", lab.leftovers(i));
    }
}

#[test]
fn a_host_that_dies_mid_run_fails_its_runs_and_the_study_goes_on() {
    let Some(lab) = Lab::new(&["client", "server", "spare"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let text = scenario(&lab, "6s")
        .replace("[run]\nrepeat = 1", "[run]\nrepeat = 2\norder = \"sequential\"");
    // Only the systems on the client and server hosts.
    let cut = text.find("[[system]]\nname = \"refused\"").unwrap();
    let rest = &text[text.find("[[workload]]").unwrap()..];
    let text = format!("{}{rest}", &text[..cut])
        .replace("[[host]]\nname = \"locked\"", "[[host]]\nname = \"locked0\"");
    std::fs::write(&file, &text).unwrap();
    let child = Command::new(common::BIN)
        .args([
            "bench",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--no-save",
        ])
        .args(["--ssh-config", lab.config.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // When the first run's load is going on the client, the server host dies: everything in
    // its namespace is killed, sshd too. The load is `wirespeed role --load -- wirespeed dns`;
    // other commands run on the client host before it (bench asks each host for its version),
    // and a kill while the server host is still being set up fails the run for another reason.
    let t0 = Instant::now();
    let load_running = || {
        lab.leftovers(0).iter().any(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmdline.split(|&b| b == 0).any(|arg| arg == b"dns")
        })
    };
    while !load_running() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let pids = Command::new("ip").args(["netns", "pids", &lab.hosts[1].name]).output().unwrap();
    for pid in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
        let pid: libc::pid_t = pid.parse().unwrap();
        // SAFETY: kill(2) touches no memory.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("/qps/")).collect();
    assert_eq!(lines.len(), 4, "every run was tried: {text}");
    assert!(lines.iter().all(|l| l.starts_with("FAILED")), "{text}");
    assert!(text.contains("the ssh session to lab-server ended"), "the first run says why: {text}");
    assert!(text.contains("Connection refused"), "the later runs say why: {text}");
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(lab.leftovers(0).is_empty(), "the client host kept {:?}", lab.leftovers(0));
}

#[test]
fn the_study_written_as_an_ansible_playbook_runs_with_ansible_on_the_same_hosts() {
    let Some(()) = common::pypi_tool(&["ansible-playbook", "--version"], "ansible-core") else {
        return;
    };
    let Some(lab) = Lab::new(&["client", "server", "spare"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    // The systems on the client and server hosts only.
    let text = scenario(&lab, "2s");
    let cut = text.find("[[system]]\nname = \"refused\"").unwrap();
    let rest = &text[text.find("[[workload]]").unwrap()..];
    std::fs::write(&file, format!("{}{rest}", &text[..cut])).unwrap();
    let playbook = dir.path().join("ansible");
    let config = lab.config.to_str().unwrap();
    let out = common::client(&[
        "bench",
        file.to_str().unwrap(),
        "--ansible",
        playbook.to_str().unwrap(),
        "--ssh-config",
        config,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let inventory = std::fs::read_to_string(playbook.join("inventory.ini")).unwrap();
    assert!(inventory.contains("server ansible_host=lab-server"), "{inventory}");
    // Ansible's own run of it, against the same hosts.
    let ran = Command::new("ansible-playbook")
        .args(["-i", "inventory.ini", "study.yml"])
        // This machine's Python for the modules (a pyenv shim on PATH would be found first).
        .args(["-e", "ansible_python_interpreter=/usr/bin/python3"])
        .current_dir(&playbook)
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_HOST_KEY_CHECKING", "False")
        .env("ANSIBLE_LOCAL_TEMP", dir.path().join("ansible-tmp"))
        // Its ssh connection masters of its own: one left by an earlier test (60 s) would
        // lead to a host that is gone.
        .env("ANSIBLE_SSH_CONTROL_PATH_DIR", dir.path().join("ansible-cp"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "{said}\n{}", String::from_utf8_lossy(&ran.stderr));
    assert!(said.contains("failed=0"), "{said}");
    let results = playbook.join("results");
    for run in ["fixture_qps_r1", "wirespeed_qps_r1"] {
        let report = std::fs::read_to_string(results.join("runs").join(run).join("report.json"));
        let report: serde_json::Value = serde_json::from_str(&report.unwrap()).unwrap();
        let s = &report["summary"];
        assert!(s["completed"].as_u64().unwrap() > 500, "{run}: {} {}", s["completed"], s["lost"]);
        assert!(!results.join("runs").join(run).join("failed.txt").exists());
    }
    assert!(results.join("runs/wirespeed_qps_r1/dns@server.events").exists());
    // wirespeed summarizes what the playbook kept, samples included.
    let summary = common::client(&[
        "bench",
        file.to_str().unwrap(),
        "--resume",
        "--out",
        results.to_str().unwrap(),
        "--ssh-config",
        config,
        "--no-save",
    ]);
    let text = String::from_utf8_lossy(&summary.stdout);
    assert_eq!(summary.status.code(), Some(0), "{text}");
    assert!(text.contains("2 runs: 0 done, 2 kept"), "{text}");
    assert!(text.contains("dns@server"), "the role's samples are in the summary: {text}");
    for i in 0..2 {
        assert!(lab.leftovers(i).is_empty(), "host {i} kept {:?}", lab.leftovers(i));
    }
}
