//! Reading a scenario file: TOML into [`Scenario`] (an unknown key is an error with its line),
//! then the checks TOML cannot make — names that must exist, probes, placeholders every cell
//! can fill, checks that parse — each error naming the line it is about.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::Rule;
use crate::cpus::CpuSet;
use crate::matrix::{self, Plan, PlanError};
use crate::scenario::{Entry, FixtureKind, HostsMode, Scenario, System, Workload};
use crate::template::{self, FixturePart, Placeholder};
use wirespeed_model::metrics::FASTEST;

/// What is wrong with a scenario file.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{file}{}: {message}", .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ScenarioError {
    /// The file, as given.
    pub file: String,
    /// The line the problem is on, when it can be told.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// A scenario read and checked, with its expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The file's content.
    pub scenario: Scenario,
    /// Its runs.
    pub plan: Plan,
}

impl Loaded {
    /// Cuts the scenario down to a quick check that it runs ([`Scenario::smoke`]) and expands
    /// it again.
    pub fn smoke(&mut self, length: impl Fn(&str) -> Option<(&'static str, toml::Value)>) {
        self.scenario.smoke(length);
        // The cut scenario has a subset of the checked one's cells: it expands as that did.
        if let Ok(plan) = matrix::expand(&self.scenario) {
            self.plan = plan;
        }
    }
}

impl Loaded {
    /// Runs each cell `repeat` times whatever the file says (`bench --repeat`), and expands
    /// the runs again.
    pub fn set_repeat(&mut self, repeat: u32) -> Result<(), PlanError> {
        if repeat == 0 {
            return Err(PlanError { about: None, message: "--repeat must be at least 1".into() });
        }
        self.scenario.run.repeat = repeat;
        self.plan = matrix::expand(&self.scenario)?;
        Ok(())
    }

    /// Puts every pair of hosts on a path with `conditions` whatever `[network]` says
    /// (`bench --network`: the same study over another path without a copy of its file; an
    /// empty list, a plain link), and expands the runs again. `[[link]]`s still override it.
    pub fn set_network(&mut self, conditions: Vec<(String, String)>) -> Result<(), PlanError> {
        let table: crate::scenario::Conditions =
            conditions.into_iter().map(|(k, v)| (k, toml::Value::String(v))).collect();
        self.scenario.network = (!table.is_empty()).then_some(table);
        let network = |message: String| PlanError { about: None, message };
        check_hosts(&self.scenario).map_err(|(_, m)| network(format!("--network: {m}")))?;
        crate::paths::check(&self.scenario).map_err(|e| network(format!("--network: {e}")))?;
        self.plan = matrix::expand(&self.scenario)?;
        Ok(())
    }

    /// Keeps the systems whose names match one of `patterns` (`*`, `{a,b}`: `bench --systems`)
    /// and their runs, in order. A pattern that matches no system is an error naming them.
    pub fn keep_systems(&mut self, patterns: &[String]) -> Result<(), PlanError> {
        let names: Vec<String> = self.plan.systems.iter().map(|s| s.name.clone()).collect();
        let kept = matching("--systems", patterns, &names, "systems")?;
        self.keep_runs(&kept, |r| &mut r.system);
        let systems = std::mem::take(&mut self.plan.systems);
        self.plan.systems = keep_indices(systems, &kept);
        Ok(())
    }

    /// Keeps the workloads (by their cells' names, swept values included: `h3-latency*`)
    /// matching one of `patterns` and their runs (`bench --workloads`).
    pub fn keep_workloads(&mut self, patterns: &[String]) -> Result<(), PlanError> {
        let names: Vec<String> = self.plan.workloads.iter().map(|w| w.name.clone()).collect();
        let kept = matching("--workloads", patterns, &names, "workloads")?;
        self.keep_runs(&kept, |r| &mut r.workload);
        let workloads = std::mem::take(&mut self.plan.workloads);
        self.plan.workloads = keep_indices(workloads, &kept);
        Ok(())
    }

    /// Keeps the runs whose index (`index` of a run: its system's or its workload's) is one of
    /// `kept`, renumbered to its place there.
    fn keep_runs(&mut self, kept: &[usize], index: fn(&mut matrix::Run) -> &mut usize) {
        let runs = std::mem::take(&mut self.plan.runs);
        self.plan.runs = runs
            .into_iter()
            .filter_map(|mut r| {
                let i = index(&mut r);
                *i = kept.iter().position(|k| k == i)?;
                Some(r)
            })
            .collect();
    }
}

/// The indices of `names` that match one of `patterns`; a pattern matching none is an error.
fn matching(
    flag: &str,
    patterns: &[String],
    names: &[String],
    what: &str,
) -> Result<Vec<usize>, PlanError> {
    use wirespeed_model::glob::glob;
    if let Some(p) = patterns.iter().find(|p| !names.iter().any(|n| glob(p, n))) {
        let message = format!("{flag} '{p}' matches none of the {what}: {}", names.join(", "));
        return Err(PlanError { about: None, message });
    }
    Ok((0..names.len()).filter(|&i| patterns.iter().any(|p| glob(p, &names[i]))).collect())
}

/// The items of `all` at the indices `kept`, in order.
fn keep_indices<T>(all: Vec<T>, kept: &[usize]) -> Vec<T> {
    all.into_iter().enumerate().filter(|(i, _)| kept.contains(i)).map(|(_, t)| t).collect()
}

/// The 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.find(needle).map(|at| text[..at].matches('\n').count() + 1)
}

/// Parses and checks `text`, read from `file`; a workload's `kind` must be one of `kinds`
/// (the binary's test subcommands: the runner does not know them).
pub fn parse(file: &str, text: &str, kinds: &[&str]) -> Result<Loaded, ScenarioError> {
    parse_placed(file, text, kinds, None)
}

/// [`parse`], with the hosts' mode set to `hosts` whatever the file says (`bench --hosts`).
pub fn parse_placed(
    file: &str,
    text: &str,
    kinds: &[&str],
    hosts: Option<HostsMode>,
) -> Result<Loaded, ScenarioError> {
    let err = |line: Option<usize>, message: String| ScenarioError {
        file: file.to_string(),
        line,
        message,
    };
    let text = &template::with_env(text, |n| std::env::var(n).ok())
        .map_err(|(at, why)| err(Some(text[..at].matches('\n').count() + 1), why))?;
    let mut scenario: Scenario = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        err(line, e.message().trim().to_string())
    })?;
    if hosts.is_some() {
        scenario.run.hosts = hosts;
    }
    // A problem about `name` is reported on the line that first mentions it.
    let at = |name: &str, message: String| err(line_of(text, &format!("\"{name}\"")), message);
    check(&scenario, kinds).map_err(|(name, message)| at(&name, message))?;
    check_hosts(&scenario).map_err(|(name, message)| at(&name, message))?;
    crate::paths::check(&scenario)
        .map_err(|e| err(line_of_condition(text, &e.key), format!("path condition {e}")))?;
    // An expansion error says which system or workload it is about: its line is that name's.
    let plan = matrix::expand(&scenario).map_err(|e| {
        let line = e.about.as_deref().and_then(|n| line_of(text, &format!("\"{n}\"")));
        err(line, e.message)
    })?;
    placeholders(&scenario, &plan).map_err(|(name, message)| at(&name, message))?;
    Ok(Loaded { scenario, plan })
}

/// The line of the first `KEY = …` inside a `[network]` or `[[link]]` table.
fn line_of_condition(text: &str, key: &str) -> Option<usize> {
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[network]" || line == "[[link]]";
        } else if inside
            && line.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return Some(i + 1);
        }
    }
    None
}

/// Hosts and links: unique names, every `host = …` a `[[host]]`, links between two different
/// known hosts and at most one per direction, and what each way of placing hosts needs.
fn check_hosts(s: &Scenario) -> Result<(), (String, String)> {
    let mut names = BTreeSet::new();
    for h in &s.host {
        if !names.insert(h.name.as_str()) {
            return Err((h.name.clone(), format!("two hosts are named {:?}", h.name)));
        }
    }
    let placed = s
        .system
        .iter()
        .flat_map(|sys| {
            sys.process
                .iter()
                .map(move |p| (format!("system {:?}, process {:?}", sys.name, p.role), &p.host))
        })
        .chain(s.workload.iter().map(|w| (format!("workload {:?}", w.name), &w.host)))
        .chain(s.fixture.iter().map(|f| (format!("fixture {:?}", f.name), &f.host)));
    let mode = s.hosts_mode();
    for (what, host) in placed {
        match host {
            Some(h) if !names.contains(h.as_str()) => {
                return Err((h.clone(), format!("{what}: host {h:?} is not a [[host]]")))
            }
            None if mode != HostsMode::Local && !s.host.is_empty() => {
                return Err((
                    mode.name().into(),
                    format!("{what} has no host: with hosts = {:?} each process, workload and fixture names its host", mode.name()),
                ))
            }
            _ => {}
        }
    }
    let mut directions = BTreeSet::new();
    for link in &s.link {
        let Some((a, b)) = link.ends() else {
            return Err((
                "[[link]]".into(),
                "a [[link]] needs between = [\"A\", \"B\"], or from and to".into(),
            ));
        };
        for end in [a, b] {
            if !names.contains(end.as_str()) {
                return Err((
                    end.clone(),
                    format!("a [[link]] names {end:?}, which is not a [[host]]"),
                ));
            }
        }
        if a == b {
            return Err((a.clone(), format!("a [[link]] joins {a:?} to itself")));
        }
        let ways = if link.both_ways() { vec![(a, b), (b, a)] } else { vec![(a, b)] };
        for (from, to) in ways {
            if !directions.insert((from, to)) {
                return Err((from.clone(), format!("two [[link]]s carry {from} to {to}")));
            }
        }
    }
    match mode {
        HostsMode::Netns | HostsMode::Ssh if s.host.is_empty() => Err((
            mode.name().into(),
            format!("hosts = {:?} needs [[host]]s to place roles on", mode.name()),
        )),
        HostsMode::Ssh if !s.link.is_empty() || s.network.is_some() => Err((
            "ssh".into(),
            "emulated links need hosts = \"netns\"; between ssh hosts the path is the real one"
                .into(),
        )),
        HostsMode::Ssh => match s.host.iter().find(|h| h.ssh.is_none()) {
            Some(h) => Err((h.name.clone(), format!("host {:?} has no ssh destination", h.name))),
            None => Ok(()),
        },
        HostsMode::Netns => match s.workload.iter().find(|w| w.kind == "vegeta") {
            Some(w) => Err((
                w.name.clone(),
                format!(
                    "workload {:?}: vegeta loads run on this machine only, not on netns hosts",
                    w.name
                ),
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Checks that need the whole file: `(a name to find the line by, message)`.
fn check(s: &Scenario, kinds: &[&str]) -> Result<(), (String, String)> {
    if s.run.repeat == 0 {
        return Err(("repeat".into(), "run.repeat must be at least 1".into()));
    }
    let durations = [
        ("warmup", s.run.warmup.as_ref()),
        ("cooldown", s.run.cooldown.as_ref()),
        ("interval", Some(&s.sample.interval)),
    ];
    for (key, value) in durations {
        if let Some(v) = value {
            if wirespeed_model::units::parse_duration(v).is_err() {
                return Err((
                    v.clone(),
                    format!("{key} {v:?}: expected a duration such as 2s or 500ms"),
                ));
            }
        }
    }
    let unique = |what: &str, names: Vec<&String>| {
        let mut seen = BTreeSet::new();
        names.into_iter().try_for_each(|n| {
            if seen.insert(n) {
                Ok(())
            } else {
                Err((n.clone(), format!("two {what}s are named {n:?}")))
            }
        })
    };
    unique("fixture", s.fixture.iter().map(|f| &f.name).collect())?;
    unique("workload", s.workload.iter().map(|w| &w.name).collect())?;
    for system in &s.system {
        check_system(system, &s.workload)?;
    }
    for w in &s.workload {
        if let Some(Err(e)) = w.cpus.as_deref().map(CpuSet::parse) {
            return Err((w.name.clone(), format!("workload {:?}: {e}", w.name)));
        }
        if !kinds.contains(&w.kind.as_str()) {
            return Err((
                w.name.clone(),
                format!(
                    "workload {:?}: kind {:?} is not one of {}",
                    w.name,
                    w.kind,
                    kinds.join(", ")
                ),
            ));
        }
    }
    for c in &s.check {
        let rule = Rule::parse(&c.expr).map_err(|e| (c.expr.clone(), format!("check: {e}")))?;
        if let Some(w) = &c.workload {
            if !s.workload.iter().any(|x| &x.name == w) {
                return Err((w.clone(), format!("check {:?}: there is no workload {w:?}", c.expr)));
            }
        }
        // A figure the workloads' reports cannot have is refused now, not after the study.
        let judged = s.workload.iter().filter(|w| c.workload.as_ref().is_none_or(|n| n == &w.name));
        for w in judged {
            let Some(known) = crate::check::figures_of(&w.kind) else { continue };
            if !known.contains(&rule.figure.as_str()) {
                return Err((
                    c.expr.clone(),
                    format!(
                        "check {:?}: a {} report of workload {:?} has no figure {:?}; its figures: {}",
                        c.expr,
                        w.kind,
                        w.name,
                        rule.figure,
                        known.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A system's own checks: unique roles, `after` naming an earlier process, one readiness
/// probe each, a command, and an entry for every workload's target.
fn check_system(system: &System, workloads: &[Workload]) -> Result<(), (String, String)> {
    let named = |m: String| (system.name.clone(), format!("system {:?}: {m}", system.name));
    let mut roles = BTreeSet::new();
    for p in &system.process {
        if !roles.insert(&p.role) {
            return Err(named(format!("two processes have the role {:?}", p.role)));
        }
        if let Some(after) = &p.after {
            if !roles.contains(after) || after == &p.role {
                return Err(named(format!(
                    "{:?} starts after {after:?}, which is not an earlier process",
                    p.role
                )));
            }
        }
        if let Some(r) = &p.ready {
            let probes = [&r.udp, &r.http, &r.dns].iter().filter(|p| p.is_some()).count()
                + usize::from(r.tcp.is_some())
                + usize::from(r.log.is_some());
            if probes != 1 {
                return Err(named(format!(
                    "{:?}: ready needs exactly one of tcp, udp, http, dns or log (not a fixed sleep)",
                    p.role
                )));
            }
        }
        if p.cmd.split_whitespace().next().is_none() {
            return Err(named(format!("{:?}: empty cmd", p.role)));
        }
        if let Some(Err(e)) = p.cpus.as_deref().map(CpuSet::parse) {
            return Err(named(format!("{:?}: {e}", p.role)));
        }
    }
    if let Some(v) = &system.version {
        match crate::words::split(&v.cmd) {
            Ok(words) if !words.is_empty() => {}
            Ok(_) => return Err(named("version: empty cmd".into())),
            Err(e) => return Err(named(format!("version: {e}"))),
        }
    }
    for w in workloads {
        match (&system.entry, &w.target) {
            (Entry::Named(map), Some(t)) if !map.contains_key(t) => {
                return Err(named(format!("no entry for workload {:?}'s target {t:?}", w.name)))
            }
            (Entry::Named(_), None) => {
                return Err(named(format!(
                    "entry has names, so workload {:?} needs a target",
                    w.name
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every placeholder of every system cell resolves: ports (any name), its own files, known
/// fixtures, and its axis variables.
fn placeholders(s: &Scenario, plan: &Plan) -> Result<(), (String, String)> {
    let fixtures: BTreeSet<&str> = s.fixture.iter().map(|f| f.name.as_str()).collect();
    for cell in &plan.systems {
        let system = &s.system[cell.system];
        let known = |name: &str| match Placeholder::of(name) {
            Some(Placeholder::Port(_)) => true,
            Some(Placeholder::File(f)) => system.file.contains_key(f),
            Some(Placeholder::Fixture(f, FixturePart::Zone)) => {
                s.fixture.iter().any(|x| x.name == f && x.kind == FixtureKind::Dns)
            }
            Some(Placeholder::Fixture(f, _)) => fixtures.contains(f),
            Some(Placeholder::ScenarioDir | Placeholder::RunDir) => true,
            Some(Placeholder::HostAddr(h)) => s.host.iter().any(|x| x.name == h),
            Some(Placeholder::Var(v)) => cell.vars.contains_key(v),
            None => false,
        };
        let texts = system.templates();
        for text in texts {
            if let Some(bad) = template::placeholders(text).into_iter().find(|n| !known(n)) {
                return Err((
                    system.name.clone(),
                    format!("system {:?}: {{{bad}}} is not a port, file, fixture, host or axis variable it has", cell.name),
                ));
            }
        }
    }
    // A workload's option values may name fixtures and the scenario's directory, which are the
    // same for every system; a port every system has (a DoH URL, `https://127.0.0.1:{port.doh}/…`)
    // and, with no hosts, the run's directory (a certificate a system's process made there) and
    // a file every system writes (a targets file naming the system's own port), which every run
    // has on the machine the load runs on.
    let every_system_has = |name: &str| {
        s.system.iter().all(|system| {
            system.templates().into_iter().any(|t| template::placeholders(t).contains(&name))
        })
    };
    for w in &s.workload {
        let texts = w.options.values().flat_map(|v| match v {
            toml::Value::String(t) => vec![t.as_str()],
            toml::Value::Array(a) => a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>(),
            _ => vec![],
        });
        for text in texts {
            let bad = template::placeholders(text).into_iter().find(|n| match Placeholder::of(n) {
                Some(Placeholder::Fixture(f, _)) => !fixtures.contains(f),
                Some(Placeholder::ScenarioDir) => false,
                Some(Placeholder::HostAddr(h)) => !s.host.iter().any(|x| x.name == h),
                Some(Placeholder::Port(_)) => !every_system_has(n),
                Some(Placeholder::RunDir) => !s.host.is_empty(),
                Some(Placeholder::File(f)) => {
                    !s.host.is_empty() || !s.system.iter().all(|x| x.file.contains_key(f))
                }
                _ => true,
            });
            if let Some(bad) = bad {
                return Err((
                    text.to_string(),
                    format!("workload {:?}: {{{bad}}}: an option can name only fixtures, {{scenario.dir}}, a port every system has and (with no hosts) {{run.dir}} and a file every system has", w.name),
                ));
            }
        }
    }
    for b in s.report.baselines() {
        if b != FASTEST && !plan.systems.iter().any(|c| c.name == b) {
            return Err((
                b.to_string(),
                format!("report.baseline {b:?} is not a system (nor {FASTEST:?})"),
            ));
        }
    }
    Ok(())
}

/// The expanded matrix as lines of text, for `--list` and `--dry-run`.
pub fn describe(loaded: &Loaded) -> String {
    let Loaded { scenario: s, plan } = loaded;
    let mut out = format!(
        "{}: {} systems × {} workloads × {} repeats = {} runs ({} order)\n",
        s.scenario.name,
        plan.systems.len(),
        plan.workloads.len(),
        s.run.repeat,
        plan.runs.len(),
        format!("{:?}", s.run.order).to_lowercase()
    );
    for c in &plan.systems {
        // A matrix system's programs as its cell names them (`{program}` rendered).
        let mut requires: Vec<String> = Vec::new();
        for p in s.system[c.system].requires.iter().map(|p| c.with_vars(p)) {
            if !requires.contains(&p) {
                requires.push(p);
            }
        }
        let needs = if requires.is_empty() {
            String::new()
        } else {
            format!("  (needs {})", requires.join(", "))
        };
        out.push_str(&format!("system   {}{needs}\n", c.name));
    }
    for w in &plan.workloads {
        let kind = &s.workload[w.workload].kind;
        let requires = &s.workload[w.workload].requires;
        let needs = if requires.is_empty() {
            String::new()
        } else {
            format!("  (needs {})", requires.join(", "))
        };
        let opts: BTreeMap<&String, String> =
            w.options.iter().filter_map(|(k, v)| Some((k, matrix::scalar_text(v)?))).collect();
        let opts: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("workload {} ({kind} {}){needs}\n", w.name, opts.join(" ")));
    }
    for r in &plan.runs {
        out.push_str(&format!("run      {}\n", plan.run_id(r)));
    }
    out
}
