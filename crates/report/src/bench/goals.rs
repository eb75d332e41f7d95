//! The goals a benchmark table is held to (`benches/goals.toml`): for a workload and a peer, a
//! bound on wirespeed's ratio to the peer (`ratio = ">= 1.3"`), on its load's CPU per unit of
//! work against the peer's (`cpu = "<= 0.7"`), or either. Each goal is shown with what the
//! table measured and whether it was met, so a page says which claims hold on its machine.

use serde::Deserialize;

use super::ratios::Ratio;
use crate::table::Table;

/// The goals file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goals {
    /// Every goal, in the order shown.
    #[serde(default)]
    pub goal: Vec<Goal>,
    /// How each scenario pairs its peers with wirespeed, where a reader must know it to read
    /// a ratio (a mode one side cannot match, a count only one side keeps).
    #[serde(default)]
    pub pairing: Vec<Pairing>,
}

/// What a scenario's pairs are: which modes and counts stand side by side.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pairing {
    /// The scenario (its file's name).
    pub scenario: String,
    /// What is paired with what, in words.
    pub text: String,
}

/// One goal.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    /// The scenario (its file's name), the workload and the peer system it is about.
    pub scenario: String,
    /// The workload, as the table names it.
    pub workload: String,
    /// The peer system.
    pub peer: String,
    /// A bound on wirespeed's median over the peer's (`>= 1.3`).
    #[serde(default)]
    pub ratio: Option<String>,
    /// A bound on the load's CPU per unit of work over the peer's (`<= 0.7`). With `ratio`
    /// too, the goal is met when either holds.
    #[serde(default)]
    pub cpu: Option<String>,
}

/// `OP NUMBER`, as a goal writes a bound.
fn holds(bound: &str, value: f64) -> Result<bool, String> {
    let bound = bound.trim();
    let (op, number) = ["<=", ">=", "<", ">"]
        .iter()
        .find_map(|op| bound.strip_prefix(op).map(|rest| (*op, rest.trim())))
        .ok_or_else(|| format!("goal {bound:?}: expected >=, <=, > or < and a number"))?;
    let n: f64 =
        number.parse().map_err(|_| format!("goal {bound:?}: {number:?} is not a number"))?;
    Ok(match op {
        "<=" => value <= n,
        ">=" => value >= n,
        "<" => value < n,
        _ => value > n,
    })
}

impl Goal {
    /// Checks its bounds read, and that it names something to bound.
    pub fn check(&self) -> Result<(), String> {
        if self.ratio.is_none() && self.cpu.is_none() {
            return Err(format!(
                "goal for {} {} against {}: give ratio, cpu or both",
                self.scenario, self.workload, self.peer
            ));
        }
        for bound in self.ratio.iter().chain(&self.cpu) {
            holds(bound, 1.0)?;
        }
        Ok(())
    }

    /// What it asks, in words.
    fn asked(&self) -> String {
        let ratio = self.ratio.as_ref().map(|b| format!("wirespeed ÷ peer {b}"));
        let cpu = self.cpu.as_ref().map(|b| format!("load CPU ÷ peer's {b}"));
        [ratio, cpu].into_iter().flatten().collect::<Vec<_>>().join(", or ")
    }

    /// The row of `ratios` it is about.
    fn measured<'a>(&self, ratios: &'a [Ratio]) -> Option<&'a Ratio> {
        ratios.iter().find(|r| {
            r.scenario == self.scenario && r.workload == self.workload && r.peer == self.peer
        })
    }

    /// Whether the measured row meets it; `None` when nothing was measured.
    fn met(&self, r: &Ratio) -> Option<bool> {
        let ratio = self.ratio.as_ref().map(|b| holds(b, r.ratio).unwrap_or(false));
        let cpu = match (&self.cpu, r.cpu_ratio) {
            (Some(b), Some(x)) => Some(holds(b, x).unwrap_or(false)),
            (Some(_), None) => Some(false),
            (None, _) => None,
        };
        match (ratio, cpu) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(false) || b.unwrap_or(false)),
        }
    }
}

/// The goals with what was measured and whether each was met.
pub fn table(goals: &[Goal], ratios: &[Ratio]) -> Table {
    let mut t =
        Table::new(&["Scenario", "Workload", "Peer", "Goal", ">Measured", ">Load CPU", "Met"]);
    for g in goals {
        let found = g.measured(ratios);
        let (measured, cpu, met) = match found {
            Some(r) => (
                format!("{:.2}×", r.ratio),
                r.cpu_ratio.map_or("-".into(), |x| format!("{x:.2}×")),
                match g.met(r) {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                },
            ),
            None => ("-".into(), "-".into(), "not measured"),
        };
        t.push(vec![
            g.scenario.clone(),
            g.workload.clone(),
            g.peer.clone(),
            g.asked(),
            measured,
            cpu,
            met.into(),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(peer: &str, ratio: f64, cpu: Option<f64>) -> Ratio {
        Ratio {
            scenario: "bandwidth".into(),
            workload: "tcp-4".into(),
            figure: "Throughput".into(),
            higher_is_better: true,
            ours: "wirespeed".into(),
            peer: peer.into(),
            ours_median: String::new(),
            peer_median: String::new(),
            ratio,
            spread: None,
            cpu_ratio: cpu,
            work_unit: Some("GB".into()),
            peer_version: String::new(),
        }
    }

    fn goal(peer: &str, ratio: Option<&str>, cpu: Option<&str>) -> Goal {
        Goal {
            scenario: "bandwidth".into(),
            workload: "tcp-4".into(),
            peer: peer.into(),
            ratio: ratio.map(str::to_string),
            cpu: cpu.map(str::to_string),
        }
    }

    #[test]
    fn a_goal_is_met_when_its_bound_holds_or_either_of_two() {
        let measured = [ratio("a", 1.1, Some(0.6)), ratio("b", 1.4, None)];
        let goals = [
            goal("a", Some(">= 1.3"), None),
            goal("a", Some(">= 1.3"), Some("<= 0.7")),
            goal("b", Some(">= 1.3"), None),
            goal("c", Some(">= 1.3"), None),
        ];
        let shown = table(&goals, &measured).markdown();
        let met: Vec<&str> = shown
            .lines()
            .skip(2)
            .map(|l| l.trim_end_matches(" |").rsplit("| ").next().unwrap())
            .collect();
        assert_eq!(met, ["no", "yes", "yes", "not measured"], "{shown}");
        assert!(shown.contains("wirespeed ÷ peer >= 1.3, or load CPU ÷ peer's <= 0.7"), "{shown}");
        assert!(goal("a", Some("about 2"), None).check().is_err());
        assert!(goal("a", None, None).check().is_err());
        assert!(goal("a", None, Some("< 0.5")).check().is_ok());
    }
}
