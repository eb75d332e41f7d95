//! How a run's diagnosis reads: one line on the tester and one per finding for the text
//! format, and a table of the busiest threads with the findings for Markdown and HTML.

use wirespeed_model::diagnosis::{Diagnosis, Side, ThreadCpu};

use crate::table::Table;

/// Threads each side shows in the table; the rest are summed on one row.
const SHOWN: usize = 6;

/// The text format's lines: the tester in one line, then `limit:` and each finding.
pub fn lines(d: &Diagnosis) -> Vec<String> {
    let mut out = vec![summary(d)];
    out.extend(d.findings.iter().map(|f| format!("limit ({}): {}", f.code.name(), f.text)));
    out
}

/// The tester in one line: its busiest thread on each side, and how late its sleeps woke.
pub fn summary(d: &Diagnosis) -> String {
    let mut parts = Vec::new();
    for (side, threads) in [(Side::Client, &d.client_threads), (Side::Server, &d.server_threads)] {
        if let Some(t) = threads.first() {
            parts.push(format!(
                "busiest {} thread {} at {:.0} % of a core",
                side.word(),
                t.name,
                t.busy_ratio() * 100.0
            ));
        }
    }
    if let Some(w) = d.wakeup {
        parts.push(format!("sleeps woke {:.1} µs late (median)", w.p50_ns as f64 / 1e3));
    }
    let verdict = if d.findings.is_empty() {
        "no limit of the tester found"
    } else {
        "the tester may be the limit"
    };
    if parts.is_empty() {
        format!("tester: {verdict}")
    } else {
        format!("tester: {}; {verdict}", parts.join(", "))
    }
}

/// The busiest threads of each side: CPU as a share of a core, user and system shares, and
/// the share of time spent waiting for a CPU.
pub fn threads(d: &Diagnosis) -> Table {
    let mut t = Table::new(&["Side", "Thread", ">CPU", ">User", ">System", ">Waited for a CPU"]);
    for (side, threads) in [(Side::Client, &d.client_threads), (Side::Server, &d.server_threads)] {
        for th in threads.iter().take(SHOWN) {
            t.push(row(side, &th.name, th));
        }
        let rest: Vec<&ThreadCpu> = threads.iter().skip(SHOWN).collect();
        if !rest.is_empty() {
            let sum = |f: fn(&ThreadCpu) -> u64| rest.iter().map(|t| f(t)).sum::<u64>();
            let others = ThreadCpu {
                name: String::new(),
                user_ns: sum(|t| t.user_ns),
                system_ns: sum(|t| t.system_ns),
                wait_ns: Some(sum(|t| t.wait_ns.unwrap_or(0))),
                // Shares of one core each, summed over the threads.
                span_ns: rest.iter().map(|t| t.span_ns).max().unwrap_or(0),
            };
            t.push(row(side, &format!("{} others", rest.len()), &others));
        }
    }
    t
}

fn row(side: Side, name: &str, t: &ThreadCpu) -> Vec<String> {
    let pct = |ns: u64| {
        if t.span_ns == 0 {
            "-".to_string()
        } else {
            format!("{:.1} %", ns as f64 * 100.0 / t.span_ns as f64)
        }
    };
    vec![
        side.word().into(),
        name.into(),
        pct(t.user_ns + t.system_ns),
        pct(t.user_ns),
        pct(t.system_ns),
        t.wait_ns.map_or("-".into(), pct),
    ]
}

/// The findings, one line each, or a line saying there are none.
pub fn findings(d: &Diagnosis) -> Vec<String> {
    if d.findings.is_empty() {
        return vec![summary(d)];
    }
    d.findings
        .iter()
        .map(|f| format!("{} ({}): {}", f.side.word(), f.code.name(), f.text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::diagnosis::{Finding, FindingCode, WakeupLateness};

    fn thread(name: &str, busy_ms: u64) -> ThreadCpu {
        ThreadCpu {
            name: name.into(),
            user_ns: busy_ms * 250_000,
            system_ns: busy_ms * 750_000,
            wait_ns: Some(busy_ms * 100_000),
            span_ns: 1_000_000_000,
        }
    }

    fn diagnosis() -> Diagnosis {
        Diagnosis {
            wall_ns: 1_000_000_000,
            cpus: 2,
            client_threads: (0..8)
                .map(|i| thread(&format!("ws-tx-u{}", i + 1), 900 - i * 100))
                .collect(),
            server_threads: vec![thread("ws-rx-u1", 300)],
            wakeup: Some(WakeupLateness {
                samples: 400,
                p50_ns: 52_300,
                p99_ns: 200_000,
                max_ns: 1,
            }),
            findings: vec![Finding {
                code: FindingCode::SaturatedCore,
                side: Side::Client,
                text: "the client kept a core busy (ws-tx-u1 90 % of the time)".into(),
            }],
            ..Diagnosis::default()
        }
    }

    #[test]
    fn the_text_lines_name_the_busiest_threads_and_each_finding() {
        let lines = lines(&diagnosis());
        assert_eq!(
            lines[0],
            "tester: busiest client thread ws-tx-u1 at 90 % of a core, busiest server thread \
             ws-rx-u1 at 30 % of a core, sleeps woke 52.3 µs late (median); the tester may be \
             the limit"
        );
        assert_eq!(
            lines[1],
            "limit (saturated_core): the client kept a core busy (ws-tx-u1 90 % of the time)"
        );
        let calm = Diagnosis { findings: vec![], ..diagnosis() };
        assert!(summary(&calm).ends_with("no limit of the tester found"));
    }

    #[test]
    fn the_table_shows_six_threads_a_side_and_sums_the_rest() {
        let t = threads(&diagnosis());
        let rows: Vec<String> = t.rows.iter().map(|r| r.join(" | ")).collect();
        assert_eq!(rows.len(), 6 + 1 + 1, "{rows:#?}");
        assert_eq!(rows[0], "client | ws-tx-u1 | 90.0 % | 22.5 % | 67.5 % | 9.0 %");
        // ws-tx-u7 and ws-tx-u8: 300 + 200 ms of CPU in a second.
        assert_eq!(rows[6], "client | 2 others | 50.0 % | 12.5 % | 37.5 % | 5.0 %");
        assert_eq!(rows[7], "server | ws-rx-u1 | 30.0 % | 7.5 % | 22.5 % | 3.0 %");
    }
}
