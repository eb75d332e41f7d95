//! One run of a cell, planned before anything starts: the fixtures placed on hosts (each a
//! `wirespeed server` command with its port, a DNS fixture's zone copied where its host reads
//! it), the system's config files and its processes in order (words, environment, readiness),
//! and the load's command line. Every back-end translates the same plan: this machine, a lab's
//! namespaces and ssh hosts start it (`placement.rs`), Ansible and Kubernetes write it down
//! (`ansible.rs`, `k8s.rs`). What differs between them is only what [`Layout`] says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::RunError;
use super::fixtures::Fixtures;
use super::placement::fixture_command;
use super::system::{self, Bindings, FixtureAt};
use super::{workload_line, Places, Workloads};
use crate::matrix::Run;
use crate::scenario::{Fixture, FixtureKind, Ready};
use crate::Loaded;

/// What a back-end says of where a run's parts go.
pub(crate) struct Layout<'a> {
    /// Every `[[host]]`'s address as the others reach it (`{host.NAME.addr}`).
    pub addrs: BTreeMap<String, String>,
    /// The host a fixture runs on, or `None` for one of [`Layout::in_process`].
    pub fixture_host: &'a dyn Fn(&Fixture) -> Option<String>,
    /// The `wirespeed` program a fixture's host runs it with.
    pub program: &'a dyn Fn(&str) -> Result<PathBuf, RunError>,
    /// Where a DNS fixture's zone is read on `host`, given the fixture; `None`: where this
    /// machine wrote it (a host that shares its files).
    pub zone_there: &'a dyn Fn(&Fixture, &str) -> Option<String>,
    /// `{run.dir}` and the config files' directory, where the processes run.
    pub files_dir: &'a Path,
    /// The fixtures running in this process, for those with no host here.
    pub in_process: &'a Fixtures,
}

/// A process of the plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedRole {
    /// Its role: the process's (`server`), or `fixture-NAME`.
    pub role: String,
    /// Its host, as the scenario names it; `None` where it names none.
    pub host: Option<String>,
    /// Its command line, split into words.
    pub argv: Vec<String>,
    /// Its environment beyond the inherited one.
    pub env: BTreeMap<String, String>,
    /// When it is ready for the next.
    pub ready: Option<Ready>,
    /// A fixture's service port.
    pub port: Option<u16>,
    /// The CPUs it runs on (`"1"`, `"0-1"`); none: any.
    pub cpus: Option<String>,
}

/// A DNS fixture's zone, which goes with it: the hosts cannot read this machine's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZoneCopy {
    /// The fixture's name.
    pub fixture: String,
    /// Its host.
    pub host: String,
    /// This machine's copy.
    pub local: PathBuf,
    /// Where its host reads it (its command line's last word).
    pub there: String,
}

/// One run, planned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellPlan {
    /// The fixtures placed on hosts, started first.
    pub fixtures: Vec<PlannedRole>,
    /// Their zones, copied before they start.
    pub zones: Vec<ZoneCopy>,
    /// The system's config files, where its processes read them.
    pub files: Vec<(PathBuf, String)>,
    /// The system's processes, started in order, each ready before the next.
    pub processes: Vec<PlannedRole>,
    /// The ports allocated for the system's `{port.NAME}`s.
    pub ports: Vec<u16>,
    /// The programs the system `requires` (rendered), with its processes' hosts.
    pub system_requires: Vec<String>,
    /// The programs the workload `requires` (rendered).
    pub load_requires: Vec<String>,
    /// The load's command line (`wirespeed KIND …`, or another client's).
    pub load: Vec<String>,
    /// The load's host.
    pub load_host: Option<String>,
}

impl CellPlan {
    /// The hosts of the system's processes (`None` for one that names none).
    pub(crate) fn process_hosts(&self) -> Vec<Option<&str>> {
        self.processes.iter().map(|p| p.host.as_deref()).collect()
    }
}

/// Plans `run` of `loaded` as `layout` places it; the load's words come from `workloads`.
pub(crate) fn plan(
    loaded: &Loaded,
    run: &Run,
    places: &Places<'_>,
    workloads: &impl Workloads,
    layout: &Layout<'_>,
) -> Result<CellPlan, RunError> {
    let s = &loaded.scenario;
    let cell = &loaded.plan.systems[run.system];
    let system = &s.system[cell.system];
    let w = &s.workload[loaded.plan.workloads[run.workload].workload];
    let mut fixtures = Vec::new();
    let mut zones = Vec::new();
    let mut placed = BTreeMap::new();
    for f in &s.fixture {
        let Some(host) = (layout.fixture_host)(f) else { continue };
        let about = |e: RunError| e.of(format!("fixture {:?}", f.name));
        let program = (layout.program)(&host).map_err(about)?;
        let (mut argv, port) = fixture_command(f, &program, places.out).map_err(about)?;
        let mut zone = None;
        if f.kind == FixtureKind::Dns {
            let local = PathBuf::from(argv.last().cloned().unwrap_or_default());
            let there = (layout.zone_there)(f, &host);
            if let (Some(there), Some(last)) = (&there, argv.last_mut()) {
                last.clone_from(there);
                let (fixture, host) = (f.name.clone(), host.clone());
                zones.push(ZoneCopy { fixture, host, local, there: there.clone() });
            }
            zone = argv.last().cloned();
        }
        let ip = layout.addrs.get(&host).cloned().unwrap_or_default();
        placed.insert(f.name.clone(), FixtureAt { host: ip, port, zone });
        let ready = Ready { tcp: Some(port.to_string().as_str().into()), ..Ready::default() };
        fixtures.push(PlannedRole {
            role: format!("fixture-{}", f.name),
            host: Some(host),
            argv,
            env: BTreeMap::new(),
            ready: Some(ready),
            port: Some(port),
            cpus: None,
        });
    }
    let b = Bindings::allocate(
        system,
        &cell.vars,
        layout.in_process,
        (placed, layout.addrs.clone()),
        places.scenario_dir,
        layout.files_dir,
    )?;
    let files = system::rendered_files(system, &b)?;
    let processes = system
        .process
        .iter()
        .map(|p| {
            let r = system::rendered_process(system, p, &b).map_err(|e| e.of(&p.role))?;
            Ok(PlannedRole {
                role: p.role.clone(),
                host: p.host.clone(),
                argv: r.argv,
                env: r.env,
                ready: r.ready,
                port: None,
                cpus: p.cpus.clone(),
            })
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    // A program's name may be a template too; one that does not render is looked for as written.
    let rendered = |programs: &[String]| -> Vec<String> {
        programs.iter().map(|p| b.render(p).unwrap_or_else(|_| p.clone())).collect()
    };
    Ok(CellPlan {
        fixtures,
        zones,
        files,
        processes,
        ports: b.ports(),
        system_requires: rendered(&system.requires),
        load_requires: rendered(&w.requires),
        load: workload_line(loaded, run, &b, workloads)?,
        load_host: w.host.clone(),
    })
}
