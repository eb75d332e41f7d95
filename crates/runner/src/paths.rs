//! A scenario's hosts and the paths between them as a lab to build: every pair of hosts is
//! linked, each direction with `[network]`'s conditions overridden key by key by a `[[link]]`
//! of that pair (`between` both ways, `from`/`to` one way), a swept key taking the value its
//! workload cell chose. Checked when the file is read, so a condition netem would refuse never
//! reaches a run.

use std::collections::BTreeMap;

use wirespeed_model::path::{ConditionError, Conditions};
use wirespeed_netlab::{LabSpec, LinkSpec};

use crate::matrix::scalar_text;
use crate::scenario::{Conditions as Written, Link, Scenario};

/// The written conditions of one direction, `[network]` first, then the link's own keys.
fn written<'a>(s: &'a Scenario, from: &str, to: &str) -> Vec<(String, &'a toml::Value)> {
    let mut keys: BTreeMap<String, (String, &toml::Value)> = BTreeMap::new();
    if let Some(n) = &s.network {
        for (k, v) in n {
            keys.insert(k.clone(), (k.clone(), v));
        }
    }
    for link in s.link.iter().filter(|l| carries(l, from, to)) {
        let label = link.label();
        for (k, v) in &link.conditions {
            keys.insert(k.clone(), (format!("{label}.{k}"), v));
        }
    }
    keys.into_iter().map(|(k, (label, v))| (format!("{k}\u{0}{label}"), v)).collect()
}

/// True when `link` carries packets from `from` to `to`.
fn carries(link: &Link, from: &str, to: &str) -> bool {
    match link.ends() {
        Some((a, b)) if link.both_ways() => (a == from && b == to) || (a == to && b == from),
        Some((a, b)) => a == from && b == to,
        None => false,
    }
}

/// The conditions from `from` to `to`, swept keys set from `chosen` (by label).
pub fn direction(
    s: &Scenario,
    from: &str,
    to: &str,
    chosen: &BTreeMap<String, toml::Value>,
) -> Result<Conditions, ConditionError> {
    let mut c = Conditions::default();
    for (key_label, value) in written(s, from, to) {
        let (key, label) = key_label.split_once('\u{0}').unwrap_or((&key_label, &key_label));
        let value = match value {
            toml::Value::Array(values) => {
                chosen.get(label).or_else(|| values.first()).unwrap_or(value)
            }
            v => v,
        };
        let text = scalar_text(value).unwrap_or_default();
        c.set(key, &text)?;
    }
    c.check()?;
    Ok(c)
}

/// The lab a run of a workload cell that chose `chosen` needs: every host, every pair linked.
pub fn lab_spec(
    s: &Scenario,
    chosen: &BTreeMap<String, toml::Value>,
) -> Result<LabSpec, ConditionError> {
    let hosts: Vec<String> = s.host.iter().map(|h| h.name.clone()).collect();
    let mut links = Vec::new();
    for (i, a) in hosts.iter().enumerate() {
        for b in &hosts[i + 1..] {
            links.push(LinkSpec {
                a: a.clone(),
                b: b.clone(),
                a_to_b: direction(s, a, b, chosen)?,
                b_to_a: direction(s, b, a, chosen)?,
            });
        }
    }
    Ok(LabSpec { hosts, links })
}

/// Checks every path condition as written: each key known, each value (each swept value too)
/// one netem would take, and each combination of swept values consistent (reordering with a
/// delay, a queue with a rate). The error names the key.
pub fn check(s: &Scenario) -> Result<(), ConditionError> {
    let tables: Vec<&Written> =
        s.network.iter().chain(s.link.iter().map(|l| &l.conditions)).collect();
    for table in tables {
        for (key, value) in table {
            let values = match value {
                toml::Value::Array(a) => a.iter().collect(),
                v => vec![v],
            };
            for v in values {
                let text = scalar_text(v).ok_or_else(|| ConditionError {
                    key: key.clone(),
                    value: v.to_string(),
                    why: "expected a word or a number".into(),
                })?;
                Conditions::default().set(key, &text)?;
            }
        }
    }
    // Every combination a cell can choose, for every direction.
    let sweeps = crate::matrix::path_sweeps(s);
    let mut combos = vec![BTreeMap::new()];
    for (label, values) in &sweeps {
        combos = combos
            .into_iter()
            .flat_map(|c: BTreeMap<String, toml::Value>| {
                values.iter().map(move |v| {
                    let mut next = c.clone();
                    next.insert(label.clone(), v.clone());
                    next
                })
            })
            .take(10_000)
            .collect();
    }
    for chosen in &combos {
        lab_spec(s, chosen)?;
    }
    Ok(())
}
