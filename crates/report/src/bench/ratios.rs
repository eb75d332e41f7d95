//! The one table of every benchmark scenario run together (`wirespeed bench DIR`): for each
//! workload and each other tool's client, wirespeed's median over the peer's, the ratio in each
//! repeat (the spread a claim should be read with), the load's CPU per unit of work against the
//! peer's, and the peer's version. Each ratio keeps its figure's direction: a rate is better
//! higher, a time lower, and the table says which.

use serde::{Deserialize, Serialize};

use super::goals::Goals;
use super::{median, BenchCell, ProgramVersion};
use crate::table::Table;
use crate::units::figure;

/// One scenario's results, as `wirespeed bench` wrote them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResults {
    /// The scenario's name.
    pub name: String,
    /// Its cells (`summary.json`).
    pub cells: Vec<BenchCell>,
    /// Its programs' versions (`versions.json`).
    pub versions: Vec<ProgramVersion>,
}

/// One comparison: a workload, a peer, and wirespeed beside it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// The scenario.
    pub scenario: String,
    /// The workload (with its swept values).
    pub workload: String,
    /// The headline figure's label.
    pub figure: String,
    /// Whether more of it is better.
    pub higher_is_better: bool,
    /// The system with wirespeed's client.
    pub ours: String,
    /// The system with the peer's.
    pub peer: String,
    /// wirespeed's median, in the figure's unit, shown.
    pub ours_median: String,
    /// The peer's.
    pub peer_median: String,
    /// wirespeed's median ÷ the peer's.
    pub ratio: f64,
    /// The lowest and highest of the repeats' ratios (repeat i of each, run side by side).
    pub spread: Option<(f64, f64)>,
    /// wirespeed's load CPU per unit of work ÷ the peer's (lower is better), where both ran as
    /// processes of their own.
    pub cpu_ratio: Option<f64>,
    /// The unit of work that CPU is per.
    pub work_unit: Option<String>,
    /// What the peer's client (or the peer's program) said its version was.
    pub peer_version: String,
}

/// Every comparison the scenarios hold, in their order.
pub fn ratios(scenarios: &[ScenarioResults]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for s in scenarios {
        for peer in s.cells.iter() {
            let Some(ours_name) = &peer.compared_with else { continue };
            let ours =
                s.cells.iter().find(|c| &c.system == ours_name && c.workload == peer.workload);
            let Some(ours) = ours else { continue };
            let (Some(a), Some(b)) = (median(&ours.values), median(&peer.values)) else {
                continue;
            };
            if b == 0.0 {
                continue;
            }
            let each: Vec<f64> = ours
                .values
                .iter()
                .zip(&peer.values)
                .filter(|(_, p)| **p != 0.0)
                .map(|(o, p)| o / p)
                .collect();
            let spread =
                each.iter().copied().reduce(f64::min).zip(each.iter().copied().reduce(f64::max));
            let cpu_ratio = match (median(&ours.load_cpu_per_unit), median(&peer.load_cpu_per_unit))
            {
                (Some(o), Some(p)) if p > 0.0 => Some(o / p),
                _ => None,
            };
            out.push(Ratio {
                scenario: s.name.clone(),
                workload: peer.workload.clone(),
                figure: peer.figure.clone(),
                higher_is_better: peer.higher_is_better,
                ours: ours.system.clone(),
                peer: peer.system.clone(),
                ours_median: figure(a, ours.unit),
                peer_median: figure(b, peer.unit),
                ratio: a / b,
                spread,
                cpu_ratio,
                work_unit: peer.work_unit.clone().or_else(|| ours.work_unit.clone()),
                peer_version: version_of(&s.versions, &peer.system, &ours.system),
            });
        }
    }
    out
}

/// What `system`'s client said its version was (`client of SYSTEM`), else its own program:
/// its own too where `ours` has the same client, which then is not what the row compares (two
/// servers loaded by wrk).
fn version_of(versions: &[ProgramVersion], system: &str, ours: &str) -> String {
    let names =
        |v: &ProgramVersion| -> Vec<String> { v.systems.split(", ").map(str::to_string).collect() };
    let (client, ours) = (format!("client of {system}"), format!("client of {ours}"));
    versions
        .iter()
        .find(|v| names(v).contains(&client) && !names(v).contains(&ours))
        .or_else(|| versions.iter().find(|v| names(v).iter().any(|n| n == system)))
        .map_or_else(|| "-".into(), |v| v.printed.clone())
}

fn times(x: f64) -> String {
    format!("{x:.2}×")
}

/// The table, one row per comparison.
pub fn table(ratios: &[Ratio]) -> Table {
    let mut t = Table::new(&[
        "Scenario",
        "Workload",
        "Figure",
        "Peer",
        ">wirespeed",
        ">Peer",
        ">wirespeed ÷ peer",
        ">Each repeat",
        ">Load CPU ÷ peer's",
        "Peer's version",
    ]);
    for r in ratios {
        let better = if r.higher_is_better { "higher is better" } else { "lower is better" };
        let cpu = match (r.cpu_ratio, &r.work_unit) {
            (Some(x), Some(unit)) => format!("{} per {unit}", times(x)),
            _ => "-".into(),
        };
        t.push(vec![
            r.scenario.clone(),
            r.workload.clone(),
            format!("{} ({better})", r.figure),
            r.peer.clone(),
            r.ours_median.clone(),
            r.peer_median.clone(),
            times(r.ratio),
            r.spread.map_or("-".into(), |(lo, hi)| format!("{lo:.2}–{hi:.2}")),
            cpu,
            r.peer_version.clone(),
        ]);
    }
    t
}

/// The ratios as CSV, unrounded.
pub fn csv(ratios: &[Ratio]) -> String {
    let mut out = String::from(
        "scenario,workload,figure,higher_is_better,ours,peer,ratio,ratio_min,ratio_max,cpu_ratio,work_unit\n",
    );
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for r in ratios {
        out.push_str(&crate::csv::record([
            r.scenario.clone(),
            r.workload.clone(),
            r.figure.clone(),
            r.higher_is_better.to_string(),
            r.ours.clone(),
            r.peer.clone(),
            r.ratio.to_string(),
            num(r.spread.map(|s| s.0)),
            num(r.spread.map(|s| s.1)),
            num(r.cpu_ratio),
            r.work_unit.clone().unwrap_or_default(),
        ]));
        out.push('\n');
    }
    out
}

/// The page of every comparison: what ran where, the table, how each scenario pairs its
/// sides, the goals it is held to (none: no section), then when each scenario ran (`runs`:
/// its name and its runs' start, where kept; none: no section).
pub fn markdown(
    version: &str,
    machine: &str,
    ratios: &[Ratio],
    goals: &Goals,
    runs: &[(String, Option<String>)],
) -> String {
    let when = if runs.is_empty() {
        String::new()
    } else {
        let mut t = Table::new(&["Scenario", "Runs started (UTC)"]);
        for (name, started) in runs {
            let started = started.as_deref().map_or("not kept with its results".into(), |s| {
                s.replacen('T', " ", 1).trim_end_matches('Z').to_string()
            });
            t.push(vec![name.clone(), started]);
        }
        format!("\n## When each scenario ran\n\n{}", t.markdown())
    };
    let pairing = if goals.pairing.is_empty() {
        String::new()
    } else {
        let lines: Vec<String> =
            goals.pairing.iter().map(|p| format!("- **{}**: {}", p.scenario, p.text)).collect();
        format!("\n## What each pair is\n\n{}\n", lines.join("\n"))
    };
    let goals = if goals.goal.is_empty() {
        String::new()
    } else {
        format!(
            "\n## Goals\n\nWhat `benches/goals.toml` asks of these figures, and whether this \
             run met it (with a bound on the ratio and one on the load's CPU, either \
             suffices).\n\n{}",
            super::goals::table(&goals.goal, ratios).markdown()
        )
    };
    format!(
        "# wirespeed against its peers\n\n\
         wirespeed {version}, the benchmark scenarios of `benches/` run with `wirespeed bench` \
         (all of them with `wirespeed bench benches/`, or some at a time: a ratio compares runs \
         of one scenario only), on {machine}. Each row is one workload made by wirespeed's \
         client and by a peer's, run alternately (A B A B) against the same kind of server, or, \
         where the peer is another server, made by one client against wirespeed's server and \
         the peer's; the ratio is wirespeed's median over the \
         peer's, and *Each repeat* the lowest and highest of the repeats' own ratios. *Load \
         CPU* is the load process's CPU per unit of its work, wirespeed's over the peer's \
         (lower is better), where both ran as processes of their own: against two servers, \
         what one client spent on each.\n\n{}{pairing}{goals}{when}",
        table(ratios).markdown()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::metrics::{Events, Unit};

    fn cell(system: &str, values: Vec<f64>, cpu: Vec<f64>, with: Option<&str>) -> BenchCell {
        BenchCell {
            workload: "h1".into(),
            base: "h1".into(),
            swept: vec![],
            system: system.into(),
            figure: "Requests/s".into(),
            unit: Unit::PerSecond(Events::Requests),
            higher_is_better: true,
            values,
            p50_ns: vec![],
            p99_ns: vec![],
            load_cpu_per_unit: cpu,
            work_unit: Some("request".into()),
            planned: 3,
            skipped: 0,
            failed: 0,
            memory: vec![],
            cpu: vec![],
            figures: vec![],
            timeline: vec![],
            compared_with: with.map(str::to_string),
        }
    }

    #[test]
    fn each_peer_is_held_against_our_client_repeat_by_repeat() {
        let s = ScenarioResults {
            name: "http".into(),
            cells: vec![
                cell("wirespeed", vec![110.0, 90.0, 100.0], vec![2e-6, 2e-6, 2e-6], None),
                cell("wrk", vec![100.0, 100.0, 80.0], vec![4e-6, 4e-6, 4e-6], Some("wirespeed")),
                cell("lonely", vec![1.0], vec![], None),
            ],
            versions: vec![ProgramVersion {
                systems: "client of wrk".into(),
                command: "wrk --version".into(),
                printed: "wrk 4.1.0".into(),
                expected: None,
                as_expected: true,
            }],
        };
        let r = ratios(std::slice::from_ref(&s));
        assert_eq!(r.len(), 1, "only the peer with a system to hold it against");
        assert_eq!((r[0].ours.as_str(), r[0].peer.as_str()), ("wirespeed", "wrk"));
        assert_eq!(r[0].ratio, 1.0);
        assert_eq!(r[0].spread, Some((0.9, 1.25)));
        assert_eq!(r[0].cpu_ratio, Some(0.5));
        assert_eq!(r[0].peer_version, "wrk 4.1.0");
        let plain = markdown("0.1.0", "2 cores", &r, &Goals::default(), &[]);
        assert!(!plain.contains("## What each pair is"), "{plain}");
        let goals = Goals {
            goal: vec![],
            pairing: vec![super::super::goals::Pairing {
                scenario: "http".into(),
                text: "both keep connections alive".into(),
            }],
        };
        let page = markdown("0.1.0", "2 cores", &r, &goals, &[]);
        assert!(page.contains("- **http**: both keep connections alive"), "{page}");
        assert!(page.contains("| http | h1 | Requests/s (higher is better) | wrk |"), "{page}");
        assert!(page.contains("| 1.00× | 0.90–1.25 | 0.50× per request | wrk 4.1.0 |"), "{page}");
        assert!(csv(&r).contains("http,h1,Requests/s,true,wirespeed,wrk,1,0.9,1.25,0.5,request"));
        assert!(!page.contains("## When each scenario ran"), "{page}");
        // Scenarios run apart say when each ran, where their results kept it.
        let runs =
            [("dns".to_string(), Some("2026-12-07T19:11:15Z".to_string())), ("http".into(), None)];
        let page = markdown("0.1.0", "2 cores", &r, &goals, &runs);
        assert!(page.contains("## When each scenario ran"), "{page}");
        assert!(page.contains("| dns | 2026-12-07 19:11:15 |"), "{page}");
        assert!(page.contains("| http | not kept with its results |"), "{page}");
    }
}
