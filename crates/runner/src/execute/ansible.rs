//! `wirespeed bench --ansible DIR`: the same study, written as an Ansible playbook and
//! inventory for labs that run everything through Ansible, instead of run over ssh by
//! wirespeed. Each run is a play on the controller whose tasks are delegated to the hosts: a
//! block writes the run's files, starts each role as a detached `wirespeed role` (which
//! probes and samples it there), waits for its word, runs the load on its host and keeps its
//! JSON report on the controller; whatever happened, the roles are stopped and their events
//! and logs fetched. A run that fails is written down (`failed.txt`) and the next one goes
//! on. The results directory it fills is `--out`'s: `wirespeed bench FILE --resume --out
//! DIR/results` then summarizes it as if wirespeed had run it.
//!
//! Ports, addresses and config files are fixed when the playbook is written, as a run of
//! wirespeed's own would fix them. Every string taken from the scenario is marked `!unsafe`,
//! so Ansible never reads braces in a config file as a template.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::error::RunError;
use super::fixtures::Fixtures;
use super::placement::Placement;
use super::plan::{self, Layout, PlannedRole};
use super::ssh::Ssh;
use super::{dir_name, Places, Workloads};
use crate::matrix::Run;
use crate::ready;
use crate::role::{pid_file, RoleSpec};
use crate::scenario::Fixture;
use crate::yaml::{to_yaml, UNSAFE};
use crate::Loaded;

/// A string Ansible must take as it is.
fn raw(text: impl Into<String>) -> Value {
    Value::String(format!("{UNSAFE}{}", text.into()))
}

/// A task delegated to `host`.
fn on(host: &str, name: impl Into<String>, module: &str, args: Value) -> Value {
    let mut t = serde_json::Map::new();
    t.insert("name".into(), Value::String(name.into()));
    t.insert(module.into(), args);
    t.insert("delegate_to".into(), Value::String(host.into()));
    Value::Object(t)
}

/// What a playbook starts for one role.
struct Started {
    label: String,
    host: String,
    spec: RoleSpec,
}

/// Writes `DIR/inventory.ini`, `DIR/study.yml` and `DIR/README.md` for `loaded`, whose hosts
/// are ssh hosts.
pub fn write(
    loaded: &Loaded,
    places: &Places<'_>,
    workloads: &impl Workloads,
    dir: &Path,
    scenario_file: &Path,
) -> Result<()> {
    let s = &loaded.scenario;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::path::absolute(dir)?;
    let results = dir.join("results");
    let ssh: BTreeMap<String, Ssh> =
        s.host.iter().map(|h| (h.name.clone(), Ssh::new(h, places.ssh_config))).collect();
    let fixtures = Fixtures::none();
    let mut plays = Vec::new();
    for run in &loaded.plan.runs {
        plays.push(play(loaded, run, places, workloads, &ssh, &fixtures, &results)?);
    }
    std::fs::write(dir.join("study.yml"), to_yaml(&Value::Array(plays)))?;
    std::fs::write(dir.join("inventory.ini"), inventory(&ssh, places.ssh_config))?;
    std::fs::write(
        dir.join("README.md"),
        format!(
            "# {name}, as an Ansible playbook\n\nWritten by `wirespeed bench --ansible` from `{file}`: {runs} runs on {hosts} hosts.\n\n```sh\nansible-playbook -i inventory.ini study.yml\nwirespeed bench {file} --resume --out {results}\n```\n\nThe first runs the study (each host needs `wirespeed` and Python); the second summarizes\nthe reports the playbook kept in `results/`, as `wirespeed bench` does after its own runs.\n",
            name = s.scenario.name,
            file = scenario_file.display(),
            runs = loaded.plan.runs.len(),
            hosts = s.host.len(),
            results = results.display(),
        ),
    )?;
    Ok(())
}

/// The inventory: each host by its scenario name, reached at its ssh destination.
fn inventory(ssh: &BTreeMap<String, Ssh>, config: Option<&Path>) -> String {
    let mut text = String::from("[study]\n");
    for (name, h) in ssh {
        let (user, host) = match h.dest.split_once('@') {
            Some((u, host)) => (Some(u), host),
            None => (None, h.dest.as_str()),
        };
        text.push_str(&format!("{name} ansible_host={host}"));
        if let Some(u) = user {
            text.push_str(&format!(" ansible_user={u}"));
        }
        text.push('\n');
    }
    text.push_str("\n[study:vars]\nansible_python_interpreter=auto_silent\n");
    if let Some(cfg) = config {
        text.push_str(&format!("ansible_ssh_common_args='-F {}'\n", cfg.display()));
    }
    text
}

/// The play of one run.
fn play(
    loaded: &Loaded,
    run: &Run,
    places: &Places<'_>,
    workloads: &impl Workloads,
    ssh: &BTreeMap<String, Ssh>,
    fixtures: &Fixtures,
    results: &Path,
) -> Result<Value> {
    let s = &loaded.scenario;
    let id = loaded.plan.run_id(run);
    let run_dir = dir_name(&id);
    let local = results.join("runs").join(&run_dir);
    let remote = PathBuf::from("/tmp/wirespeed-bench")
        .join(dir_name(&s.scenario.name))
        .join("ansible")
        .join(&run_dir);
    let placement = Placement::ssh(s, ssh, remote.clone(), None);
    let wcell = &loaded.plan.workloads[run.workload];
    let sample_ms = wirespeed_model::units::parse_duration(&s.sample.interval)
        .map_or(1000, |d| d.as_millis() as u64);
    let wanted = crate::sample::Wanted::of(&s.sample.metrics);
    let role_spec = |r: &PlannedRole| RoleSpec {
        role: r.role.clone(),
        dir: remote.clone(),
        argv: r.argv.clone(),
        env: r.env.clone(),
        ready: r.ready.clone(),
        sample_ms: (!s.sample.metrics.is_empty()).then_some(sample_ms),
        memory: wanted.memory,
        cpu: wanted.cpu,
        cpus: r.cpus.clone(),
        detached: true,
    };
    let fixture_host = |f: &Fixture| f.host.clone();
    let program = |host: &str| {
        let known = ssh.get(host).map(|h| PathBuf::from(&h.program));
        known.ok_or_else(|| RunError::Host(format!("no host {host:?}")))
    };
    // A DNS fixture's zone is copied beside it (below), where its host's processes read it.
    let zone_there = |f: &Fixture, _: &str| {
        Some(remote.join(format!("fixture-{}.zone", f.name)).display().to_string())
    };
    let layout = Layout {
        addrs: placement.addrs.clone(),
        fixture_host: &fixture_host,
        program: &program,
        zone_there: &zone_there,
        files_dir: &remote,
        in_process: fixtures,
    };
    let plan = plan::plan(loaded, run, places, workloads, &layout)?;
    let roles: Vec<Started> = plan
        .fixtures
        .iter()
        .chain(&plan.processes)
        .map(|r| {
            let host = r.host.clone().unwrap_or_default();
            Started { label: format!("{}@{host}", r.role), host, spec: role_spec(r) }
        })
        .collect();
    let mut block = vec![json!({
        "name": "results directory",
        "ansible.builtin.file": {"path": raw(local.display().to_string()), "state": "directory"},
    })];
    let hosts: Vec<&str> = {
        let mut h: Vec<&str> = roles.iter().map(|r| r.host.as_str()).collect();
        h.extend(plan.load_host.as_deref());
        h.sort_unstable();
        h.dedup();
        h
    };
    for h in &hosts {
        block.push(on(
            h,
            format!("run directory on {h}"),
            "ansible.builtin.file",
            json!({"path": raw(remote.display().to_string()), "state": "directory"}),
        ));
    }
    for r in &plan.processes {
        let host = r.host.clone().unwrap_or_default();
        for (path, content) in &plan.files {
            block.push(on(
                &host,
                format!("{} on {host}", path.display()),
                "ansible.builtin.copy",
                json!({"content": raw(content.clone()), "dest": raw(path.display().to_string())}),
            ));
        }
    }
    for z in &plan.zones {
        // A DNS fixture's zone goes with it: the hosts cannot read the controller's files.
        block.push(on(
            &z.host,
            format!("zone of fixture {}", z.fixture),
            "ansible.builtin.copy",
            json!({"src": raw(z.local.display().to_string()), "dest": raw(z.there.clone())}),
        ));
    }
    let mut always = Vec::new();
    for r in &roles {
        let (start, stop) = role_tasks(r, &ssh[&r.host].program, &remote, &local)?;
        block.extend(start);
        always.extend(stop);
    }
    let load_host = plan.load_host.clone().unwrap_or_default();
    let mut argv = vec![raw(program(&load_host)?.display().to_string())];
    argv.extend(plan.load.iter().skip(1).map(|w| raw(w.clone())));
    argv.extend([raw("--format"), raw("json")]);
    let mut load = on(
        &load_host,
        format!("load {} from {load_host}", wcell.name),
        "ansible.builtin.command",
        json!({"argv": argv}),
    );
    load["register"] = json!("load");
    load["failed_when"] = json!("load.stdout | length == 0");
    block.push(load);
    block.push(json!({
        "name": "keep the report",
        "ansible.builtin.copy": {"content": "{{ load.stdout }}", "dest": raw(local.join("report.json").display().to_string())},
    }));
    let rescue = vec![json!({
        "name": "write down why the run failed",
        "ansible.builtin.copy": {
            "content": "{{ ansible_failed_task.name }}: {{ ansible_failed_result.msg | default('') }} {{ ansible_failed_result.stderr | default('') }}\n",
            "dest": raw(local.join("failed.txt").display().to_string()),
        },
    })];
    Ok(json!({
        "name": raw(id.clone()),
        "hosts": "localhost",
        "gather_facts": false,
        "tasks": [{"name": raw(id), "block": block, "rescue": rescue, "always": always}],
    }))
}

/// The tasks of role `r` on its host: those that start it and wait for its word, and those
/// that, whatever happened, stop it and bring back its events and log from `remote` to `local`.
fn role_tasks(
    r: &Started,
    program: &str,
    remote: &Path,
    local: &Path,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let events = remote.join(format!("{}.events", r.spec.role)).display().to_string();
    let json = serde_json::to_string(&r.spec)?;
    let line = format!(
        "nohup {} role --spec {} > {} 2>&1 < /dev/null &",
        super::ssh::quote(program),
        super::ssh::quote(&json),
        super::ssh::quote(&events)
    );
    let timeout = r
        .spec
        .ready
        .as_ref()
        .and_then(|rd| ready::Probe::from_ready(rd).ok())
        .map_or(ready::DEFAULT_TIMEOUT, |(_, t)| t);
    let start = vec![
        on(&r.host, format!("start {}", r.label), "ansible.builtin.shell", raw(line)),
        on(
            &r.host,
            format!("{} has said how it started", r.label),
            "ansible.builtin.wait_for",
            json!({"path": raw(events.clone()), "search_regex": raw("\"(ready|not_ready|exited)\""), "timeout": timeout.as_secs().max(1) + 5}),
        ),
        on(
            &r.host,
            format!("{} is ready", r.label),
            "ansible.builtin.command",
            json!({"argv": [raw("grep"), raw("-q"), raw("^{\"ready\""), raw(events)]}),
        ),
    ];
    let pid = pid_file(&r.spec).display().to_string();
    let kill =
        format!("if test -f {p}; then kill -TERM \"$(cat {p})\"; fi", p = super::ssh::quote(&pid));
    let mut stop = vec![
        on(&r.host, format!("stop {}", r.label), "ansible.builtin.shell", raw(kill)),
        on(
            &r.host,
            format!("{} has stopped", r.label),
            "ansible.builtin.wait_for",
            json!({"path": raw(pid), "state": "absent", "timeout": 30}),
        ),
    ];
    for what in ["events", "log"] {
        stop.push(on(
            &r.host,
            format!("bring back {}'s {what}", r.label),
            "ansible.builtin.fetch",
            json!({
                "src": raw(remote.join(format!("{}.{what}", r.spec.role)).display().to_string()),
                "dest": raw(local.join(format!("{}.{what}", r.label)).display().to_string()),
                "flat": true,
                "fail_on_missing": false,
            }),
        ));
    }
    Ok((start, stop))
}
