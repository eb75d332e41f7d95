//! `wirespeed bench --k8s DIR`: the study as Kubernetes manifests, for clusters. Each run is
//! two files: `NNN-RUN.systems.yaml` — a Pod per process of the system and per placed fixture
//! (readiness probes from the scenario's: `tcp` a tcpSocket probe, `http` an httpGet, `udp`
//! and `dns` an exec of `wirespeed role --probe`; the config files in a ConfigMap mounted at
//! `/run/wirespeed`), and a Service per host in front of its Pods — and `NNN-RUN.load.yaml`,
//! an Indexed Job that runs the load. A `[[host]]`'s `labels` are its Pods' nodeSelector, so
//! each role lands on the nodes meant for it; `{host.NAME.addr}` is the host's Service.
//! `run.sh` applies them run by run (systems, then the load once they are ready), keeps each
//! Job's report in `results/runs/RUN/report.json` and deletes the run's objects; `wirespeed
//! bench FILE --resume --out DIR/results` then summarizes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::fixtures::Fixtures;
use super::plan::{self, Layout, PlannedRole};
use super::{dir_name, Places, Workloads};
use crate::matrix::Run;
use crate::scenario::{Fixture, Ready, Scenario};
use crate::yaml::to_yaml;
use crate::Loaded;

/// Where the config files are mounted in every Pod.
const FILES: &str = "/run/wirespeed";

/// `text` as an RFC 1123 label of at most `max` characters.
pub fn label(text: &str, max: usize) -> String {
    let mapped: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '-' })
        .take(max)
        .collect();
    let trimmed = mapped.trim_matches('-');
    if trimmed.is_empty() {
        "wirespeed".into()
    } else {
        trimmed.into()
    }
}

/// What the manifests need beyond the scenario.
pub struct K8sOptions<'a> {
    /// The image with wirespeed in it (fixtures, probes, the load; and systems without an
    /// image of their own).
    pub image: &'a str,
    /// The namespace the objects go in (none: kubectl's current one).
    pub namespace: Option<&'a str>,
}

/// A container's readiness probe for `ready`; none for a log probe (Kubernetes has no such
/// probe: the Pod is ready when it runs).
fn probe(ready: &Ready) -> Option<Value> {
    let port_of = |text: &str| -> Option<u16> {
        text.parse().ok().or_else(|| text.rsplit(':').next()?.parse().ok())
    };
    let timeout = ready
        .timeout
        .as_deref()
        .and_then(|t| wirespeed_model::units::parse_duration(t).ok())
        .map_or(10, |d| d.as_secs().max(1));
    let mut p = if let Some(tcp) = &ready.tcp {
        json!({"tcpSocket": {"port": port_of(tcp.items()[0])?}})
    } else if let Some(url) = &ready.http {
        let u = url::Url::parse(url).ok()?;
        json!({"httpGet": {"port": u.port_or_known_default()?, "path": u.path()}})
    } else if ready.udp.is_some() || ready.dns.is_some() {
        let spec = serde_json::to_string(ready).ok()?;
        json!({"exec": {"command": ["wirespeed", "role", "--probe", spec]}})
    } else {
        return None;
    };
    p["periodSeconds"] = json!(1);
    p["failureThreshold"] = json!(timeout);
    Some(p)
}

/// The labels of run `run`'s objects.
fn labels(s: &Scenario, run: &str, extra: &[(&str, &str)]) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("app.kubernetes.io/name".into(), json!("wirespeed"));
    m.insert("wirespeed/study".into(), json!(label(&s.scenario.name, 63)));
    m.insert("wirespeed/run".into(), json!(run));
    for (k, v) in extra {
        m.insert((*k).into(), json!(v));
    }
    Value::Object(m)
}

fn metadata(name: &str, namespace: Option<&str>, labels: Value) -> Value {
    let mut m = json!({"name": name, "labels": labels});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// Writes the manifests of every run of `loaded` into `dir`, and `run.sh`.
pub fn write(
    loaded: &Loaded,
    places: &Places<'_>,
    workloads: &impl Workloads,
    options: &K8sOptions<'_>,
    dir: &Path,
) -> Result<()> {
    let s = &loaded.scenario;
    let pinned = s.system.iter().flat_map(|sys| &sys.process).any(|p| p.cpus.is_some())
        || s.workload.iter().any(|w| w.cpus.is_some());
    if pinned {
        // A Pod's CPUs are the kubelet's to place (its CPU manager), not ours.
        anyhow::bail!("cpus: not with --k8s, where the kubelet places each Pod's CPUs");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut script = String::from(RUN_SH);
    for (n, run) in loaded.plan.runs.iter().enumerate() {
        let id = loaded.plan.run_id(run);
        let (run_label, systems, load) = run_objects(loaded, run, places, workloads, options)?;
        let stem = format!("{:03}-{}", n + 1, dir_name(&id));
        let docs =
            |objects: &[Value]| objects.iter().map(to_yaml).collect::<Vec<_>>().join("---\n");
        std::fs::write(dir.join(format!("{stem}.systems.yaml")), docs(&systems))?;
        std::fs::write(dir.join(format!("{stem}.load.yaml")), docs(&[load]))?;
        script.push_str(&format!("run {stem} {run_label} {}\n", dir_name(&id)));
    }
    let path = dir.join("run.sh");
    std::fs::write(&path, script)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Applies a study's manifests run by run; written at the head of `run.sh`.
const RUN_SH: &str = r#"#!/bin/sh
# Written by `wirespeed bench --k8s`: applies each run's systems, waits until their Pods are
# ready, runs the load's Job, keeps its report in results/runs/RUN/report.json (or why it
# failed in failed.txt), and deletes the run's objects before the next run.
# NAMESPACE=… selects the namespace; then: wirespeed bench SCENARIO --resume --out results
set -u
cd "$(dirname "$0")"
ns=${NAMESPACE:+-n $NAMESPACE}
run() {
  stem=$1 label=$2 dir=results/runs/$3
  mkdir -p "$dir"
  kubectl $ns apply -f "$stem.systems.yaml" >/dev/null
  if kubectl $ns wait --for=condition=Ready pod -l "wirespeed/run=$label" --timeout=300s >/dev/null \
    && kubectl $ns apply -f "$stem.load.yaml" >/dev/null \
    && kubectl $ns wait --for=condition=complete "job/$label-load" --timeout=3600s >/dev/null; then
    kubectl $ns logs "job/$label-load" >"$dir/report.json"
    echo "done     $3"
  else
    kubectl $ns describe pod -l "wirespeed/run=$label" >"$dir/failed.txt" 2>&1
    echo "FAILED   $3"
  fi
  kubectl $ns delete --wait -f "$stem.load.yaml" -f "$stem.systems.yaml" >/dev/null 2>&1
}
"#;

/// The Pod of `r` from `image`, with the run's files (the ConfigMap named `files`) mounted
/// where its templates put them, placed by `node_selector`.
fn pod(
    r: &PlannedRole,
    image: &str,
    files: Option<&str>,
    node_selector: Option<Value>,
    metadata: Value,
) -> Value {
    let mut container = json!({
        "name": label(&r.role, 63),
        "image": image,
        "command": r.argv,
        "env": r.env.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
    });
    if let Some(probe) = r.ready.as_ref().and_then(probe) {
        container["readinessProbe"] = probe;
    }
    let mut spec = json!({"restartPolicy": "Never", "containers": [container]});
    if let Some(files) = files {
        spec["containers"][0]["volumeMounts"] = json!([{"name": "files", "mountPath": FILES}]);
        spec["volumes"] = json!([{"name": "files", "configMap": {"name": files}}]);
    }
    if let Some(sel) = node_selector {
        spec["nodeSelector"] = sel;
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// The objects of one run: its label, the systems' objects, the load's Job.
fn run_objects(
    loaded: &Loaded,
    run: &Run,
    places: &Places<'_>,
    workloads: &impl Workloads,
    options: &K8sOptions<'_>,
) -> Result<(String, Vec<Value>, Value)> {
    let s = &loaded.scenario;
    let id = loaded.plan.run_id(run);
    let name = label(&format!("{}-{}", s.scenario.name, dir_name(&id)), 50);
    let ns = options.namespace;
    let system = &s.system[loaded.plan.systems[run.system].system];
    let service = |host: &str| label(&format!("{name}-{host}"), 63);
    // Fixtures and processes that name no host go on the first host, or, in a scenario
    // without hosts, on a Pod of their own ("fixtures", "system") with a Service of its own.
    let first_host = s.host.first().map(|h| h.name.clone());
    let mut addrs: BTreeMap<String, String> =
        s.host.iter().map(|h| (h.name.clone(), service(&h.name))).collect();
    if s.host.is_empty() {
        addrs.insert("fixtures".into(), service("fixtures"));
    }
    let node_selector = |host: Option<&str>| -> Option<Value> {
        let h = s.host.iter().find(|h| Some(h.name.as_str()) == host)?;
        (!h.labels.is_empty()).then(|| json!(h.labels))
    };
    let files_dir = PathBuf::from(FILES);
    // Fixtures: a wirespeed server Pod each (the image's), a DNS fixture's zone in the
    // ConfigMap every Pod of the run mounts.
    let fixture_host = |f: &Fixture| {
        Some(f.host.clone().or_else(|| first_host.clone()).unwrap_or_else(|| "fixtures".into()))
    };
    let program = |_: &str| Ok(PathBuf::from("wirespeed"));
    let zone_there = |f: &Fixture, _: &str| {
        let key = format!("fixture-{}.zone", label(&f.name, 40));
        Some(files_dir.join(key).display().to_string())
    };
    let none = Fixtures::none();
    let layout = Layout {
        addrs,
        fixture_host: &fixture_host,
        program: &program,
        zone_there: &zone_there,
        files_dir: &files_dir,
        in_process: &none,
    };
    let plan = plan::plan(loaded, run, places, workloads, &layout)?;
    let mut config: BTreeMap<String, String> = BTreeMap::new();
    let key_of =
        |path: &Path| path.file_name().and_then(|n| n.to_str()).unwrap_or("file").to_string();
    for z in &plan.zones {
        let content =
            std::fs::read_to_string(&z.local).with_context(|| z.local.display().to_string())?;
        config.insert(key_of(Path::new(&z.there)), content);
    }
    for (path, content) in &plan.files {
        config.insert(key_of(path), content.clone());
    }
    let image = system.image.clone().unwrap_or_else(|| options.image.to_string());
    let mut pods = Vec::new();
    let mut ports: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for f in &plan.fixtures {
        let host = f.host.clone().unwrap_or_default();
        ports.entry(host.clone()).or_default().extend(f.port);
        pods.push((f, host, options.image.to_string()));
    }
    for p in &plan.processes {
        let host = p.host.clone().or_else(|| first_host.clone()).unwrap_or_else(|| "system".into());
        pods.push((p, host, image.clone()));
    }
    for &port in &plan.ports {
        for (_, host, _) in &pods {
            ports.entry(host.clone()).or_default().push(port);
        }
    }
    let mut objects = Vec::new();
    if !config.is_empty() {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(&format!("{name}-files"), ns, labels(s, &name, &[])),
            "data": config,
        }));
    }
    let files = (!config.is_empty()).then(|| format!("{name}-files"));
    for (r, host, image) in &pods {
        let pod_labels = labels(
            s,
            &name,
            &[("wirespeed/host", &label(host, 63)), ("wirespeed/role", &label(&r.role, 63))],
        );
        let metadata = metadata(&label(&format!("{name}-{}", r.role), 63), ns, pod_labels);
        objects.push(pod(r, image, files.as_deref(), node_selector(Some(host)), metadata));
    }
    for (host, mut host_ports) in ports {
        host_ports.sort_unstable();
        host_ports.dedup();
        let service_ports: Vec<Value> = host_ports
            .iter()
            .flat_map(|p| {
                ["TCP", "UDP"].map(|proto| {
                    json!({"name": format!("{}-{p}", proto.to_lowercase()), "port": p, "targetPort": p, "protocol": proto})
                })
            })
            .collect();
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(&service(&host), ns, labels(s, &name, &[])),
            "spec": {
                "selector": {"wirespeed/run": name, "wirespeed/host": label(&host, 63)},
                "ports": service_ports,
            },
        }));
    }
    let mut args: Vec<String> = plan.load.iter().skip(1).cloned().collect();
    args.extend(["--format".into(), "json".into()]);
    let mut pod_spec = json!({
        "restartPolicy": "Never",
        "containers": [{"name": "load", "image": options.image, "command": ["wirespeed"], "args": args}],
    });
    if let Some(sel) = node_selector(plan.load_host.as_deref()) {
        pod_spec["nodeSelector"] = sel;
    }
    let job_labels = labels(s, &format!("{name}-load"), &[]);
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(&format!("{name}-load"), ns, labels(s, &name, &[("wirespeed/role", "load")])),
        "spec": {
            "completionMode": "Indexed",
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 0,
            "template": {"metadata": {"labels": job_labels}, "spec": pod_spec},
        },
    });
    Ok((name, objects, job))
}
