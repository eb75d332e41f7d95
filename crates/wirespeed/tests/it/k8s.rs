//! `wirespeed k8s job`, tested as far as a machine with no cluster allows: the manifest is
//! validated offline against Kubernetes' own schemas (`kubernetes-validate`, strict), and its
//! container's command is then run as the Job would run it — N processes with
//! `JOB_COMPLETION_INDEX` set and the database URL from the "Secret", each in a network
//! namespace of its own (a host of its own), started seconds apart — and must start together.

use wirespeed_testkit::netns;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use netns::Netns;
use wirespeed_testkit::postgres::{TestPostgres, PASSWORD};

use crate::common::{self, client, free_port, BIN};

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The YAML document at `path`, as JSON (read by PyYAML, not by us).
fn yaml(path: &Path) -> serde_json::Value {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(path)
        .output()
        .unwrap();
    serde_json::from_str(&ok(&out)).unwrap()
}

/// A bridge on the host that the test's namespaces hang off, removed when dropped.
struct Bridge(String);

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).output();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_indexed_job_validates_and_its_members_start_together_from_hosts_of_their_own() {
    let Some(()) = common::pypi_tool(&["kubernetes-validate", "--version"], "kubernetes-validate")
    else {
        return;
    };
    // Three hosts: namespaces on a bridge of their own, 10.213.N.0/24.
    let net = std::process::id() % 250;
    let (host, network) = (format!("10.213.{net}.1"), format!("10.213.{net}.0/24"));
    let Some(first) = Netns::new("k8s0") else { return };
    let namespaces = [first, Netns::new("k8s1").unwrap(), Netns::new("k8s2").unwrap()];
    let bridge = Bridge(format!("wkb{net}"));
    ip(&["link", "add", &bridge.0, "type", "bridge"]);
    ip(&["addr", "add", &format!("{host}/24"), "dev", &bridge.0]);
    ip(&["link", "set", &bridge.0, "up"]);
    for (i, ns) in namespaces.iter().enumerate() {
        let (outside, inside) = (format!("wk{net}h{i}"), format!("wk{net}n{i}"));
        ip(&["link", "add", &outside, "type", "veth", "peer", "name", &inside, "netns", &ns.name]);
        ip(&["link", "set", &outside, "master", &bridge.0, "up"]);
        ns.run(&format!(
            "ip addr add 10.213.{net}.{}/24 dev {inside} && ip link set {inside} up",
            i + 2
        ));
    }
    let Some(pg) = TestPostgres::start_reachable(Some((&host, &network))) else { return };
    let (http, control) = (free_port(), free_port());
    let _server = common::Server(
        common::spawn_until(
            Command::new(BIN).args([
                "server",
                "-B",
                &host,
                "-p",
                &control.to_string(),
                "--http",
                &http.to_string(),
            ]),
            "listening on",
        ),
        control,
    );
    let url = format!("http://{host}:{http}/");

    let dir = tempfile::tempdir().unwrap();
    let out = client(&[
        "k8s",
        "job",
        "--members",
        "3",
        "--image",
        "registry.example/wirespeed:1",
        "--run-id",
        "k8s-run",
        "--db-secret",
        "wirespeed-db",
        "--node-selector",
        "wirespeed/role=load",
        "--cpu",
        "2",
        "--memory",
        "1Gi",
        "--",
        "http",
        &url,
        "-r",
        "600",
        "-d",
        "2",
    ]);
    let manifest = dir.path().join("job.yaml");
    std::fs::write(&manifest, ok(&out)).unwrap();
    let valid = Command::new("kubernetes-validate")
        .args(["--strict", "-k", "1.34.0"])
        .arg(&manifest)
        .output()
        .unwrap();
    ok(&valid);
    let job = yaml(&manifest);
    let spec = &job["spec"];
    assert_eq!(job["kind"], "Job");
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!((&spec["completions"], &spec["parallelism"]), (&3.into(), &3.into()));
    assert_eq!(spec["backoffLimit"], 0);
    assert_eq!(spec["podFailurePolicy"]["rules"][0]["action"], "FailJob");
    assert_eq!(
        spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"],
        serde_json::json!([12, 10])
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let anti =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(pod["nodeSelector"]["wirespeed/role"], "load");
    let container = &pod["containers"][0];
    assert_eq!(container["env"][0]["valueFrom"]["secretKeyRef"]["name"], "wirespeed-db");
    assert_eq!(container["resources"]["limits"]["memory"], "1Gi");
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert!(args.windows(2).any(|w| w == ["--members", "3"]), "{args:?}");
    assert!(!args.iter().any(|a| a == "--index"), "{args:?}");

    // The Job, as Kubernetes would run it: one pod per index, 2 s apart, each on its own host,
    // the database URL from the Secret in WIRESPEED_DB.
    let db = format!("postgres://wirespeed:{PASSWORD}@{host}:{}/postgres?sslmode=disable", pg.port);
    let mut pods = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        let child = ns
            .command(BIN)
            .args(&args)
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .env("WIRESPEED_DB", &db)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        pods.push(child);
        if i < 2 {
            std::thread::sleep(Duration::from_secs(2));
        }
    }
    for pod in pods {
        ok(&pod.wait_with_output().unwrap());
    }
    let merged = client(&["merge", "--run-id", "k8s-run", "--db", &db, "-f", "json", "--no-save"]);
    let merged: serde_json::Value = serde_json::from_str(&ok(&merged)).unwrap();
    let record = &merged["meta"]["merged"];
    assert_eq!(record["merged"], serde_json::json!([0, 1, 2]));
    let skew = record["start_skew_ns"].as_u64().unwrap();
    assert!(skew < 20_000_000, "the pods started {skew} ns apart");
    assert_eq!(merged["summary"]["sent"], 1200);
    drop(bridge);
}

#[test]
fn a_job_that_could_not_run_is_refused_before_it_is_printed() {
    let job = |test: &[&str]| {
        let out = client(
            &[
                &["k8s", "job", "--members", "3", "--image", "x", "--db-secret", "s", "--"][..],
                test,
            ]
            .concat(),
        );
        assert_ne!(out.status.code(), Some(0), "{test:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    assert!(job(&["ping", "example.org"]).contains("measures a path, not load"));
    assert!(job(&["http", "http://sut/", "-c", "2"])
        .contains("2 connections cannot be shared by 3 members"));
    assert!(job(&["http", "--nonsense"]).contains("do not parse"));
    assert!(job(&["http", "http://sut/", "--index", "1"]).contains("leave --index out"));
    assert!(job(&["history"]).contains("is not a test"));
    let out =
        client(&["k8s", "job", "--members", "2", "--image", "x", "--", "http", "http://sut/"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("need a common start"));
}

/// Every YAML document of `path`, as JSON (read by PyYAML).
fn yaml_documents(path: &Path) -> Vec<serde_json::Value> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .unwrap();
    serde_json::from_str(&ok(&out)).unwrap()
}

#[test]
fn a_study_written_as_manifests_validates_and_places_each_role_by_its_hosts_labels() {
    let Some(()) = common::pypi_tool(&["kubernetes-validate", "--version"], "kubernetes-validate")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("study.toml");
    std::fs::write(
        &file,
        r#"
[scenario]
name = "DNS across nodes"
[run]
repeat = 2
[[host]]
name = "client"
labels = { "wirespeed/role" = "load" }
[[host]]
name = "server"
labels = { "kubernetes.io/hostname" = "node-2" }
[[fixture]]
name = "auth"
kind = "dns"
host = "server"
[[system]]
name = "fixture"
entry = "{fixture.auth.addr}"
[[system]]
name = "unbound"
image = "registry.example/unbound:1.17"
entry = "{host.server.addr}:{port.dns}"
file.conf = "server:\n  port: {port.dns}\n  interface: 0.0.0.0\n"
process = [ { role = "dns", host = "server", cmd = "unbound -d -c {file.conf}", ready = { dns = "{port.dns}" } } ]
[[workload]]
name = "qps"
kind = "dns"
host = "client"
clients = [1, 8]
time-limit = "10s"
"#,
    )
    .unwrap();
    let out_dir = dir.path().join("k8s");
    let out = client(&[
        "bench",
        file.to_str().unwrap(),
        "--k8s",
        out_dir.to_str().unwrap(),
        "--image",
        "registry.example/wirespeed:1",
        "--namespace",
        "lab",
    ]);
    ok(&out);
    let mut files: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    // 2 systems × 2 cells × 2 repeats, a systems file and a load file each.
    assert_eq!(files.len(), 16, "{files:?}");
    let valid = Command::new("kubernetes-validate")
        .args(["--strict", "-k", "1.34.0"])
        .args(&files)
        .output()
        .unwrap();
    ok(&valid);
    let script = out_dir.join("run.sh");
    ok(&Command::new("sh").arg("-n").arg(&script).output().unwrap());
    let run_sh = std::fs::read_to_string(&script).unwrap();
    assert_eq!(run_sh.lines().filter(|l| l.starts_with("run ")).count(), 8, "{run_sh}");
    // The unbound run: its config in a ConfigMap, its Pod on the server's node with a DNS
    // probe, a Service per host, the load's Job on the load nodes aimed at the Service.
    let systems = files
        .iter()
        .find(|f| f.to_string_lossy().contains("unbound_qps_clients=8__r1.systems"))
        .unwrap();
    let docs = yaml_documents(systems);
    let kind = |k: &str| docs.iter().filter(|d| d["kind"] == k).collect::<Vec<_>>();
    let config = kind("ConfigMap")[0];
    let conf = config["data"]["conf.conf"].as_str().unwrap();
    assert!(conf.starts_with("server:\n  port: "), "{conf}");
    let pods = kind("Pod");
    let unbound = pods.iter().find(|p| p["metadata"]["labels"]["wirespeed/role"] == "dns").unwrap();
    let container = &unbound["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example/unbound:1.17");
    assert_eq!(container["command"][0], "unbound");
    assert_eq!(container["command"][3], "/run/wirespeed/conf.conf");
    assert_eq!(container["readinessProbe"]["exec"]["command"][1], "role");
    assert_eq!(unbound["spec"]["nodeSelector"]["kubernetes.io/hostname"], "node-2");
    assert_eq!(unbound["metadata"]["namespace"], "lab");
    let fixture =
        pods.iter().find(|p| p["metadata"]["labels"]["wirespeed/role"] == "fixture-auth").unwrap();
    assert_eq!(fixture["spec"]["containers"][0]["image"], "registry.example/wirespeed:1");
    assert!(fixture["spec"]["containers"][0]["readinessProbe"]["tcpSocket"]["port"].is_u64());
    let services = kind("Service");
    assert_eq!(services.len(), 1, "the server host's Service");
    let service = services[0]["metadata"]["name"].as_str().unwrap().to_string();
    assert!(service.ends_with("-server"), "{service}");
    let load =
        yaml_documents(&PathBuf::from(systems.to_string_lossy().replace(".systems.", ".load.")));
    let job = &load[0];
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"]["wirespeed/role"], "load");
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(&args[..3], ["dns", "--server", service.as_str()], "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--clients", "8"]), "{args:?}");
}
