//! Expanding a scenario into its runs: each system over its axes, each workload over its
//! swept options, every pair, every repeat, in the order asked for (interleaved by default, so
//! a shared machine's drift falls on every system alike).

use std::collections::BTreeMap;

use wirespeed_model::compare::SplitMix;

use crate::scenario::{AxisValue, ClientChoice, GivenClient, Order, Scenario};
use crate::template;

/// A system with its axis values chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemCell {
    /// Its name, the template rendered.
    pub name: String,
    /// Index into the scenario's systems.
    pub system: usize,
    /// The variables its axes give (the axis names, and every key of table values).
    pub vars: BTreeMap<String, String>,
    /// Whose client makes its load, its name (and program and words) rendered over its
    /// axes: `None` for wirespeed's own (no `client`, or one that reads `wirespeed`).
    pub client: Option<ClientChoice>,
}

/// A workload with its swept options chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadCell {
    /// Its name, with the swept values (`tcp-bw[parallel=4]`).
    pub name: String,
    /// Index into the scenario's workloads.
    pub workload: usize,
    /// Every option with one value.
    pub options: BTreeMap<String, toml::Value>,
    /// The swept options and the values chosen, as in the name (a swept path condition
    /// too: `loss`, or `LINK.loss` for a `[[link]]`'s).
    pub swept: Vec<(String, String)>,
    /// The value chosen for each swept path condition, by its label.
    pub path: BTreeMap<String, toml::Value>,
}

/// One measured run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Index into [`Plan::systems`].
    pub system: usize,
    /// Index into [`Plan::workloads`].
    pub workload: usize,
    /// 1-based repeat.
    pub repeat: u32,
}

/// Everything a scenario asks to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// System cells.
    pub systems: Vec<SystemCell>,
    /// Workload cells.
    pub workloads: Vec<WorkloadCell>,
    /// The runs, in order.
    pub runs: Vec<Run>,
}

impl SystemCell {
    /// `text` with each of its matrix variables (`{program}`) given this cell's value; what is
    /// not one of them stays as written.
    pub fn with_vars(&self, text: &str) -> String {
        self.vars.iter().fold(text.to_string(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
    }
}

impl Plan {
    /// A stable id for a run (`system/workload/r2`), for `--resume` and file names.
    pub fn run_id(&self, r: &Run) -> String {
        format!("{}/{}/r{}", self.systems[r.system].name, self.workloads[r.workload].name, r.repeat)
    }
}

/// A scalar TOML value as text.
pub fn scalar_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Why a scenario's runs could not be laid out: what is wrong, and the system or workload it
/// is about, as the file names it (the line to point at is the first that quotes it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PlanError {
    /// The system's or workload's name, where the problem is one's.
    pub about: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl PlanError {
    /// A problem of the system or workload named `name`.
    fn of(name: &str, message: String) -> Self {
        Self { about: Some(name.to_string()), message }
    }

    /// A problem of the matrix as a whole.
    fn matrix(message: String) -> Self {
        Self { about: None, message }
    }
}

/// The shown name and the variables of one axis value.
fn axis_value(axis: &str, v: &AxisValue) -> Result<(String, BTreeMap<String, String>), PlanError> {
    let (name, mut vars) = match v {
        AxisValue::Scalar(s) => (
            scalar_text(s).ok_or_else(|| {
                PlanError::matrix(format!(
                    "matrix.{axis}: a value must be a word, a number or a table"
                ))
            })?,
            BTreeMap::new(),
        ),
        AxisValue::Table(t) => (
            t.get("name").cloned().ok_or_else(|| {
                PlanError::matrix(format!("matrix.{axis}: a table value needs a name"))
            })?,
            t.clone(),
        ),
    };
    vars.insert(axis.to_string(), name.clone());
    Ok((name, vars))
}

/// Every combination of one value from each list.
fn product<T: Clone>(lists: &[Vec<T>]) -> Vec<Vec<T>> {
    lists.iter().fold(vec![Vec::new()], |acc, list| {
        acc.iter()
            .flat_map(|prefix| {
                list.iter().map(move |v| {
                    let mut next = prefix.clone();
                    next.push(v.clone());
                    next
                })
            })
            .collect()
    })
}

fn system_cells(s: &Scenario) -> Result<Vec<SystemCell>, PlanError> {
    let mut cells = Vec::new();
    for (index, system) in s.system.iter().enumerate() {
        let mut lists = Vec::new();
        for axis in &system.matrix {
            let values = &s
                .matrix
                .get(axis)
                .ok_or_else(|| {
                    let message =
                        format!("system {:?}: axis {axis:?} is not in [matrix]", system.name);
                    PlanError::of(&system.name, message)
                })?
                .values;
            if values.is_empty() {
                return Err(PlanError::matrix(format!("matrix.{axis}: no values")));
            }
            lists.push(values.iter().map(|v| axis_value(axis, v)).collect::<Result<Vec<_>, _>>()?);
        }
        for combo in product(&lists) {
            let vars: BTreeMap<String, String> =
                combo.into_iter().flat_map(|(_, vars)| vars).collect();
            let name = template::render(&system.name, |n| vars.get(n).cloned()).map_err(|e| {
                let n = e.0;
                let message = format!(
                    "system {:?}: {{{n}}} in its name is not one of its axes' variables",
                    system.name
                );
                PlanError::of(&system.name, message)
            })?;
            if cells.iter().any(|c: &SystemCell| c.name == name) {
                return Err(PlanError::of(&name, format!("two systems are named {name:?}")));
            }
            let client = match &system.client {
                Some(c) => client_of(c, &vars).map_err(|n| {
                    let message = format!(
                        "system {:?}: {{{n}}} in its client is not one of its axes' variables",
                        system.name
                    );
                    PlanError::of(&system.name, message)
                })?,
                None => None,
            };
            // This build's own client takes the workload's options, nothing else: words given
            // to it would be dropped without a word.
            if let Some(ClientChoice::Given(g)) = &system.client {
                if let Some(message) = members_refused(&system.name, g) {
                    return Err(PlanError::of(&system.name, message));
                }
                if client.is_none() && !g.args.is_empty() {
                    let message = format!(
                        "system {:?}: wirespeed's own client takes no args (its options are the workload's); name another build's program to pass words to it",
                        system.name
                    );
                    return Err(PlanError::of(&system.name, message));
                }
            }
            cells.push(SystemCell { name, system: index, vars, client });
        }
    }
    Ok(cells)
}

/// Why a client's `members` cannot be, if it cannot: they are processes of this build, two or
/// more, and take the workload's options alone.
fn members_refused(system: &str, g: &GivenClient) -> Option<String> {
    let n = g.members?;
    let why = if g.name != OWN_CLIENT || g.program.as_deref().is_some_and(|p| p != OWN_CLIENT) {
        "members are processes of this build: its client is `wirespeed`, with no other program"
    } else if n < 2 {
        "members = N makes the load with N processes: give 2 or more"
    } else if !g.args.is_empty() {
        "members take the workload's options, no args"
    } else {
        return None;
    };
    Some(format!("system {system:?}: {why}"))
}

/// `client` with its templates rendered over `vars`; `None` where it names wirespeed's own
/// (so that one axis can put wirespeed's client beside others), this build's. The name of a variable
/// `vars` lacks is the error.
fn client_of(
    client: &ClientChoice,
    vars: &BTreeMap<String, String>,
) -> Result<Option<ClientChoice>, String> {
    let render = |t: &str| template::render(t, |n| vars.get(n).cloned()).map_err(|e| e.0);
    let rendered = match client {
        ClientChoice::Name(name) => ClientChoice::Name(render(name)?),
        ClientChoice::Given(g) => ClientChoice::Given(GivenClient {
            name: render(&g.name)?,
            program: g.program.as_deref().map(render).transpose()?,
            args: g.args.iter().map(|a| render(a)).collect::<Result<_, _>>()?,
            members: g.members,
        }),
    };
    // `{ name = "wirespeed", program = "/other/build/wirespeed" }` is another build's client;
    // with no program (or `wirespeed`, which a scenario's PATH makes this build) it is ours,
    // run in one process unless it is to be several members.
    let own = rendered.name() == OWN_CLIENT
        && rendered.program().is_none_or(|p| p == OWN_CLIENT)
        && rendered.members().is_none();
    Ok((!own).then_some(rendered))
}

/// The client name that means wirespeed's own.
pub const OWN_CLIENT: &str = "wirespeed";

/// The swept conditions of the scenario's paths, each with its label: `KEY` for
/// `[network]`'s, `LINK.KEY` for a `[[link]]`'s (none when the hosts are this machine).
pub fn path_sweeps(s: &Scenario) -> Vec<(String, &Vec<toml::Value>)> {
    // On hosts that are this machine the links are not emulated: sweeping them would run the
    // same cell again under another name.
    if s.hosts_mode() == crate::scenario::HostsMode::Local {
        return Vec::new();
    }
    fn arrays(c: &BTreeMap<String, toml::Value>) -> Vec<(String, &Vec<toml::Value>)> {
        c.iter()
            .filter_map(|(k, v)| match v {
                toml::Value::Array(a) => Some((k.clone(), a)),
                _ => None,
            })
            .collect()
    }
    let mut out: Vec<(String, &Vec<toml::Value>)> =
        s.network.as_ref().map(arrays).unwrap_or_default();
    for link in &s.link {
        let label = link.label();
        out.extend(arrays(&link.conditions).into_iter().map(|(k, a)| (format!("{label}.{k}"), a)));
    }
    out
}

fn workload_cells(s: &Scenario) -> Result<Vec<WorkloadCell>, PlanError> {
    let mut cells = Vec::new();
    let paths = path_sweeps(s);
    for (index, w) in s.workload.iter().enumerate() {
        let mut swept: Vec<(&String, &Vec<toml::Value>)> = w
            .options
            .iter()
            .filter_map(|(k, v)| match v {
                toml::Value::Array(a) => Some((k, a)),
                _ => None,
            })
            .collect();
        let options_swept = swept.len();
        swept.extend(paths.iter().map(|(label, values)| (label, *values)));
        for (k, values) in &swept {
            if values.is_empty() || values.iter().any(|v| scalar_text(v).is_none()) {
                let message = format!("workload {:?}: {k} must list words or numbers", w.name);
                return Err(PlanError::of(&w.name, message));
            }
        }
        let lists: Vec<Vec<toml::Value>> = swept.iter().map(|(_, a)| a.to_vec()).collect();
        for combo in product(&lists) {
            let mut options = w.options.clone();
            let mut chosen = Vec::new();
            let mut path = BTreeMap::new();
            for (i, ((k, _), v)) in swept.iter().zip(combo).enumerate() {
                chosen.push(((*k).clone(), scalar_text(&v).unwrap_or_default()));
                if i < options_swept {
                    options.insert((*k).clone(), v);
                } else {
                    path.insert((*k).clone(), v);
                }
            }
            let name = if chosen.is_empty() {
                w.name.clone()
            } else {
                let label: Vec<String> = chosen.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{}[{}]", w.name, label.join(","))
            };
            if cells.iter().any(|c: &WorkloadCell| c.name == name) {
                return Err(PlanError::of(&name, format!("two workloads are named {name:?}")));
            }
            cells.push(WorkloadCell { name, workload: index, options, swept: chosen, path });
        }
    }
    Ok(cells)
}

/// Expands `s` into its runs.
pub fn expand(s: &Scenario) -> Result<Plan, PlanError> {
    let systems = system_cells(s)?;
    let workloads = workload_cells(s)?;
    let repeats = 1..=s.run.repeat;
    let (n_systems, n_workloads) = (systems.len(), workloads.len());
    let round = |repeat: u32| {
        (0..n_workloads)
            .flat_map(move |workload| {
                (0..n_systems).map(move |system| Run { system, workload, repeat })
            })
            .collect::<Vec<_>>()
    };
    let runs = match s.run.order {
        Order::Interleave => repeats.flat_map(round).collect(),
        Order::Sequential => (0..n_workloads)
            .flat_map(|workload| {
                (0..n_systems).flat_map(move |system| {
                    (1..=s.run.repeat).map(move |repeat| Run { system, workload, repeat })
                })
            })
            .collect(),
        Order::Shuffle => {
            let mut rng = SplitMix(s.run.seed);
            repeats
                .flat_map(|r| {
                    let mut runs = round(r);
                    // Fisher–Yates with the scenario's seed: the same order every time.
                    for i in (1..runs.len()).rev() {
                        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                        runs.swap(i, j);
                    }
                    runs
                })
                .collect()
        }
    };
    Ok(Plan { systems, workloads, runs })
}
