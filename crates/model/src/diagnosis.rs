//! Is the tester the limit? What the measuring side saw of itself during a run (each thread's
//! CPU and wait for a CPU, how late its sleeps woke, the kernel's drop counters, its local
//! ports) and the findings drawn from it in plain words: a saturated core, a machine with
//! more runnable threads than cores, pacing finer than the timer, a full socket buffer or
//! accept queue, the TIME_WAIT port ceiling, interval lines that came late or not at all.
//!
//! The engine samples; [`Diagnosis::judge`] decides, here, without I/O, so each rule is tested
//! with made-up figures. The thresholds are constants below and documented in
//! docs/metrics.md, "Diagnosis".

use serde::{Deserialize, Serialize};

use crate::kind::KindReport;

/// A thread busier than this share of the time it was watched had a core to itself and
/// wanted more.
pub const SATURATED: f64 = 0.90;
/// A thread that waited for a CPU this share of the time it was watched was held back by
/// the machine, not by the network.
pub const CPU_WAIT: f64 = 0.10;
/// Threads watched for less than this are too short-lived to judge.
pub const MIN_SPAN_NS: u64 = 500_000_000;
/// Sleeps that wake this share of the pacing interval late (at the median) make the pacing
/// the timer's rather than the schedule's.
pub const TIMER_SHARE: f64 = 0.25;
/// TIME_WAIT entries at the end above this share of the ephemeral range are near the ceiling.
pub const PORTS_SHARE: f64 = 0.5;
/// An interval this much longer than asked came late (its line was held up).
pub const LATE_INTERVAL: f64 = 1.5;

/// Which end of the test a figure or finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The process that ran the test.
    Client,
    /// The wirespeed server at the far end (its figures travel in its results).
    Server,
}

impl Side {
    /// The word a finding uses.
    pub fn word(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// What the measuring side saw of itself over a run, and what it concludes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Diagnosis {
    /// How long the client was watched, nanoseconds (the whole run, set-up included).
    pub wall_ns: u64,
    /// Processors the client's machine has online.
    pub cpus: u32,
    /// Every thread of the client's process that ran during the test (the sampler excepted;
    /// an in-process server's threads are here too), busiest first.
    pub client_threads: Vec<ThreadCpu>,
    /// The server's threads for this test, where a wirespeed server reports them (bandwidth,
    /// pps, latency and cps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_threads: Vec<ThreadCpu>,
    /// How late the client's sleeps woke during the test (about 200 of them in a paced test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<WakeupLateness>,
    /// The probe thread that watched: what the watching cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ThreadCpu>,
    /// The kernel's drop counters of the client's network namespace, over the test.
    pub kernel: KernelCounters,
    /// The client's local ports at the end of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<PortUse>,
    /// What the figures above mean, in plain words; empty when the tester was not the limit.
    pub findings: Vec<Finding>,
}

/// One thread's processor time over the part of the test it was watched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadCpu {
    /// The thread's name (`ws-bw-1`, `tokio-runtime-w`, …).
    pub name: String,
    /// User-mode CPU time, nanoseconds.
    pub user_ns: u64,
    /// Kernel-mode CPU time, nanoseconds.
    pub system_ns: u64,
    /// Time it was runnable but waiting for a CPU, nanoseconds (Linux schedstat), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ns: Option<u64>,
    /// How long it was watched, nanoseconds.
    pub span_ns: u64,
}

impl ThreadCpu {
    /// CPU time over the time watched (1.0: a whole core).
    pub fn busy_ratio(&self) -> f64 {
        ratio(self.user_ns + self.system_ns, self.span_ns)
    }

    /// Time waiting for a CPU over the time watched.
    pub fn wait_ratio(&self) -> f64 {
        ratio(self.wait_ns.unwrap_or(0), self.span_ns)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// How late sleeps woke: a probe thread sleeps (in a paced test a two-hundredth of its
/// planned time, at least 20 ms) with the 1 ns timer slack the pacers use, and keeps how much
/// later than asked it woke.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WakeupLateness {
    /// Sleeps measured.
    pub samples: u64,
    /// Median lateness, nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// Largest, nanoseconds.
    pub max_ns: u64,
}

/// Drop counters of the network namespace (`/proc/net/snmp`, `/proc/net/netstat`), as the
/// difference between the end and the start of the test. They count every socket in the
/// namespace: the client's, an in-process or local server's, and any other program's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelCounters {
    /// UDP datagrams dropped at a full receive buffer (`Udp: RcvbufErrors`, IPv4 and IPv6).
    pub udp_receive_buffer_errors: u64,
    /// UDP sends refused for a full send buffer (`Udp: SndbufErrors`, IPv4 and IPv6).
    pub udp_send_buffer_errors: u64,
    /// TCP segments dropped at a full receive queue (`TcpExt: TCPRcvQDrop`).
    pub tcp_receive_queue_drops: u64,
    /// Connections dropped at a full accept queue (`TcpExt: ListenOverflows`).
    pub listen_overflows: u64,
}

/// The client's local ports when the test ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortUse {
    /// TCP connections from an ephemeral port in TIME_WAIT towards the test's far end (the most
    /// towards any one far end where the test's is unknown); 0 where the kernel may reuse them
    /// all (`tcp_tw_reuse`).
    pub time_wait: u64,
    /// Ports in the ephemeral range (`net.ipv4.ip_local_port_range`).
    pub ephemeral: u64,
    /// Connects the run counted as failed for want of a local port (`EADDRNOTAVAIL`).
    pub exhausted: u64,
}

/// Something that makes the figures the tester's rather than the network's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// What kind of limit.
    pub code: FindingCode,
    /// Which end it was found at.
    pub side: Side,
    /// The finding in plain words, with its figures.
    pub text: String,
}

/// The limits a diagnosis knows, as JSON and `compare` name them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FindingCode {
    /// A thread kept a core busy ([`SATURATED`]).
    SaturatedCore,
    /// Threads waited for a CPU ([`CPU_WAIT`]): more runnable threads than cores.
    CpuWait,
    /// Sleeps woke late against the pacing interval ([`TIMER_SHARE`]).
    TimerSlack,
    /// The kernel dropped data at a full socket buffer or receive queue.
    SocketBufferFull,
    /// The kernel dropped connections at a full accept queue.
    AcceptQueueFull,
    /// Local ports ran out, or TIME_WAIT held most of them ([`PORTS_SHARE`]).
    PortCeiling,
    /// Interval lines came late or are missing ([`LATE_INTERVAL`]).
    LostResults,
}

impl FindingCode {
    /// The name, as JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            FindingCode::SaturatedCore => "saturated_core",
            FindingCode::CpuWait => "cpu_wait",
            FindingCode::TimerSlack => "timer_slack",
            FindingCode::SocketBufferFull => "socket_buffer_full",
            FindingCode::AcceptQueueFull => "accept_queue_full",
            FindingCode::PortCeiling => "port_ceiling",
            FindingCode::LostResults => "lost_results",
        }
    }
}

/// What the run asked that the rules need, taken from its spec and report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunShape {
    /// Nanoseconds between two sends of one sending thread, when the test is paced.
    pub pacing_ns: Option<u64>,
    /// The client polls without sleeping by design, and a wirespeed server's echoes with it
    /// (a busy core is then no finding on either side).
    pub busy_polls: bool,
    /// The reporting interval asked, nanoseconds.
    pub interval_ns: Option<u64>,
    /// Intervals the plan calls for (a run that ends by time, neither interrupted nor aborted).
    pub intervals_planned: Option<u64>,
    /// Ends of the intervals the report holds, nanoseconds from the start.
    pub interval_ends_ns: Vec<u64>,
}

impl RunShape {
    /// The shape of a run from its report (`report.body.as_kind()`) and the report's notes.
    pub fn of(kind: &dyn KindReport, notes: &[String]) -> Self {
        let spec = kind.spec();
        let interval_ns = spec.interval_ns();
        // A run cut short by the user or by a failure has fewer intervals than planned.
        let interrupted =
            notes.iter().any(|n| n.starts_with("interrupted") || n.starts_with("aborted"));
        let intervals_planned = match (spec.planned_ns(), interval_ns) {
            (Some(p), Some(i)) if i > 0 && !interrupted => Some(p / i),
            _ => None,
        };
        let series = kind.series();
        let interval_ends_ns = series
            .rate
            .first()
            .map(|s| s.points.iter().map(|&(x, _)| (x * 1e9).round() as u64).collect())
            .unwrap_or_default();
        Self {
            pacing_ns: spec.pacing_ns(),
            busy_polls: spec.busy_polls(),
            interval_ns,
            intervals_planned,
            interval_ends_ns,
        }
    }
}

impl Diagnosis {
    /// Draws the findings from the figures, for a run of `shape`; replaces any before.
    pub fn judge(&mut self, shape: &RunShape) {
        let mut found = Vec::new();
        self.judge_threads(Side::Client, &self.client_threads, shape, &mut found);
        self.judge_threads(Side::Server, &self.server_threads, shape, &mut found);
        self.judge_timer(shape, &mut found);
        self.judge_kernel(&mut found);
        self.judge_ports(&mut found);
        judge_intervals(shape, &mut found);
        self.findings = found;
    }

    /// Saturated cores and waits for a CPU.
    fn judge_threads(
        &self,
        side: Side,
        threads: &[ThreadCpu],
        shape: &RunShape,
        found: &mut Vec<Finding>,
    ) {
        let judged = threads.iter().filter(|t| t.span_ns >= MIN_SPAN_NS);
        let saturated: Vec<&ThreadCpu> =
            judged.clone().filter(|t| t.busy_ratio() >= SATURATED).collect();
        // Polling by design keeps the client's core busy, and the server's echo threads'
        // (which poll for such a client): the method, not a limit.
        let by_design = shape.busy_polls;
        if !saturated.is_empty() && !by_design {
            let list = saturated
                .iter()
                .map(|t| format!("{} {:.0} %", t.name, t.busy_ratio() * 100.0))
                .collect::<Vec<_>>()
                .join(", ");
            found.push(Finding {
                code: FindingCode::SaturatedCore,
                side,
                text: format!(
                    "the {} kept a core busy ({list} of the time): it could go no faster, so \
                     the figures may be its limit, not the network's",
                    side.word()
                ),
            });
        }
        if let Some(worst) = judged
            .filter(|t| t.wait_ratio() >= CPU_WAIT)
            .max_by(|a, b| a.wait_ratio().total_cmp(&b.wait_ratio()))
        {
            let cpus = if side == Side::Client && self.cpus > 0 {
                format!(" ({} cores)", self.cpus)
            } else {
                String::new()
            };
            found.push(Finding {
                code: FindingCode::CpuWait,
                side,
                text: format!(
                    "the {}'s thread {} waited for a CPU {:.0} % of the time: the machine{cpus} \
                     had more threads ready to run than cores, so the figures include waiting \
                     to run",
                    side.word(),
                    worst.name,
                    worst.wait_ratio() * 100.0
                ),
            });
        }
    }

    /// Pacing finer than the timer wakes.
    fn judge_timer(&self, shape: &RunShape, found: &mut Vec<Finding>) {
        let (Some(pacing), Some(w)) = (shape.pacing_ns, self.wakeup) else { return };
        if pacing == 0 || w.samples == 0 || (w.p50_ns as f64) < pacing as f64 * TIMER_SHARE {
            return;
        }
        found.push(Finding {
            code: FindingCode::TimerSlack,
            side: Side::Client,
            text: format!(
                "sleeps woke {} late at the median (p99 {}) against {} between sends: sends \
                 leave in bursts when the timer fires, so spacing and jitter are the timer's",
                micros(w.p50_ns),
                micros(w.p99_ns),
                micros(pacing)
            ),
        });
    }

    /// Drops at full buffers and queues.
    fn judge_kernel(&self, found: &mut Vec<Finding>) {
        let k = &self.kernel;
        let mut parts = Vec::new();
        if k.udp_receive_buffer_errors > 0 {
            // The kernel counts packets: one sent with GSO (wirespeed's UDP bandwidth test)
            // holds up to 64 datagrams, so this is no datagram count.
            parts.push(format!(
                "{} UDP packets at a full receive buffer (a GSO packet holds many datagrams)",
                k.udp_receive_buffer_errors
            ));
        }
        if k.udp_send_buffer_errors > 0 {
            parts.push(format!("{} UDP sends at a full send buffer", k.udp_send_buffer_errors));
        }
        if k.tcp_receive_queue_drops > 0 {
            parts.push(format!(
                "{} TCP segments at a full receive queue",
                k.tcp_receive_queue_drops
            ));
        }
        if !parts.is_empty() {
            found.push(Finding {
                code: FindingCode::SocketBufferFull,
                side: Side::Client,
                // The counters are the whole namespace's: an emulated link's or a relay's
                // socket on this host drops into them too (a rate limit's drops were blamed
                // on the receiver), so they say where, not whose.
                text: format!(
                    "the kernel dropped {} at full socket buffers on this machine during the \
                     test: some loss happened here, not on the network; the counters are every \
                     socket's of this network namespace, so the full buffer may be the test's \
                     receiver (a larger --window helps it) or a relay's or an emulated link's \
                     on this host",
                    parts.join(" and ")
                ),
            });
        }
        if k.listen_overflows > 0 {
            found.push(Finding {
                code: FindingCode::AcceptQueueFull,
                side: Side::Client,
                text: format!(
                    "the kernel dropped {} connection attempts at a full accept queue on this \
                     machine: each waits for a SYN retransmission (1 s and more), so connect \
                     times and connections/s show the listener's backlog",
                    k.listen_overflows
                ),
            });
        }
    }

    /// The ephemeral port range running out.
    fn judge_ports(&self, found: &mut Vec<Finding>) {
        let Some(p) = self.ports else { return };
        let near = p.ephemeral > 0 && p.time_wait as f64 >= p.ephemeral as f64 * PORTS_SHARE;
        if p.exhausted == 0 && !near {
            return;
        }
        let exhausted = if p.exhausted > 0 {
            format!("{} connects found no free local port; ", p.exhausted)
        } else {
            String::new()
        };
        found.push(Finding {
            code: FindingCode::PortCeiling,
            side: Side::Client,
            text: format!(
                "{exhausted}{} of the {} ephemeral ports were in TIME_WAIT at the end: the \
                 client closes first, each port stays out of use for 60 s, so connections/s to \
                 one address cannot stay above {:.0}/s (more source addresses, --rst or \
                 keep-alive lift it)",
                p.time_wait,
                p.ephemeral,
                p.ephemeral as f64 / 60.0
            ),
        });
    }
}

/// Interval lines that came late or not at all.
fn judge_intervals(shape: &RunShape, found: &mut Vec<Finding>) {
    let Some(interval) = shape.interval_ns.filter(|&i| i > 0) else { return };
    let ends = &shape.interval_ends_ns;
    let mut late = 0;
    let mut worst = 0u64;
    let mut previous = 0u64;
    for &end in ends {
        let length = end.saturating_sub(previous);
        // The last interval of a run may be short, never long.
        if length as f64 > interval as f64 * LATE_INTERVAL {
            late += 1;
            worst = worst.max(length);
        }
        previous = end;
    }
    let missing =
        shape.intervals_planned.map_or(0, |planned| planned.saturating_sub(ends.len() as u64 + 1));
    if late == 0 && missing == 0 {
        return;
    }
    let mut parts = Vec::new();
    if late > 0 {
        parts.push(format!(
            "{late} interval lines came late (the longest covered {} against {} asked)",
            millis(worst),
            millis(interval)
        ));
    }
    if missing > 0 {
        parts.push(format!(
            "{missing} of the {} planned interval lines are missing",
            shape.intervals_planned.unwrap_or(0)
        ));
    }
    found.push(Finding {
        code: FindingCode::LostResults,
        side: Side::Client,
        text: format!(
            "{}: the tester was too busy to report on time, so per-interval figures are \
             smeared (the totals still hold)",
            parts.join(" and ")
        ),
    });
}

/// Nanoseconds as microseconds with one decimal.
fn micros(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

/// Nanoseconds as milliseconds.
fn millis(ns: u64) -> String {
    format!("{:.0} ms", ns as f64 / 1e6)
}

/// The findings of each run that the others do not share, by code: what `compare` warns of,
/// since two runs limited by different things measure different things. Empty when every
/// run's findings name the same limits (runs without a diagnosis count as having none).
pub fn differences(runs: &[Option<&Diagnosis>]) -> Vec<Vec<FindingCode>> {
    let codes: Vec<Vec<FindingCode>> = runs
        .iter()
        .map(|d| {
            let mut c: Vec<FindingCode> =
                d.map(|d| d.findings.iter().map(|f| f.code).collect()).unwrap_or_default();
            c.sort();
            c.dedup();
            c
        })
        .collect();
    if codes.windows(2).all(|w| w[0] == w[1]) {
        return Vec::new();
    }
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(name: &str, busy: f64, wait: f64) -> ThreadCpu {
        let span = 2_000_000_000u64;
        ThreadCpu {
            name: name.into(),
            user_ns: (span as f64 * busy * 0.3) as u64,
            system_ns: (span as f64 * busy * 0.7) as u64,
            wait_ns: Some((span as f64 * wait) as u64),
            span_ns: span,
        }
    }

    fn codes(d: &Diagnosis) -> Vec<(FindingCode, Side)> {
        d.findings.iter().map(|f| (f.code, f.side)).collect()
    }

    #[test]
    fn an_idle_run_has_no_findings() {
        let mut d = Diagnosis {
            cpus: 2,
            client_threads: vec![thread("ws-bw-1", 0.4, 0.01)],
            wakeup: Some(WakeupLateness {
                samples: 900,
                p50_ns: 60_000,
                p99_ns: 200_000,
                max_ns: 1,
            }),
            ..Diagnosis::default()
        };
        d.judge(&RunShape { pacing_ns: Some(1_000_000), ..RunShape::default() });
        assert_eq!(d.findings, vec![]);
    }

    #[test]
    fn a_busy_thread_is_a_saturated_core_unless_it_busy_polls_by_design() {
        let mut d = Diagnosis {
            client_threads: vec![thread("ws-rtt-1", 0.97, 0.0), thread("main", 0.01, 0.0)],
            server_threads: vec![thread("ws-echo-1", 0.95, 0.0)],
            ..Diagnosis::default()
        };
        d.judge(&RunShape::default());
        assert_eq!(
            codes(&d),
            vec![
                (FindingCode::SaturatedCore, Side::Client),
                (FindingCode::SaturatedCore, Side::Server)
            ]
        );
        assert!(d.findings[0].text.contains("ws-rtt-1 97 %"), "{}", d.findings[0].text);
        d.judge(&RunShape { busy_polls: true, ..RunShape::default() });
        assert_eq!(codes(&d), vec![]);
    }

    #[test]
    fn short_lived_threads_are_not_judged() {
        let mut t = thread("ws-bw-1", 1.0, 0.5);
        t.span_ns = MIN_SPAN_NS - 1;
        let mut d = Diagnosis { client_threads: vec![t], ..Diagnosis::default() };
        d.judge(&RunShape::default());
        assert_eq!(d.findings, vec![]);
    }

    #[test]
    fn waiting_for_a_cpu_names_the_worst_thread() {
        let mut d = Diagnosis {
            cpus: 2,
            client_threads: vec![thread("a", 0.5, 0.12), thread("b", 0.5, 0.3)],
            ..Diagnosis::default()
        };
        d.judge(&RunShape::default());
        assert_eq!(codes(&d), vec![(FindingCode::CpuWait, Side::Client)]);
        assert!(d.findings[0].text.contains("thread b waited for a CPU 30 %"));
        assert!(d.findings[0].text.contains("(2 cores)"));
    }

    #[test]
    fn late_wakeups_matter_only_against_fine_pacing() {
        let wakeup = WakeupLateness { samples: 500, p50_ns: 80_000, p99_ns: 300_000, max_ns: 1 };
        let mut d = Diagnosis { wakeup: Some(wakeup), ..Diagnosis::default() };
        d.judge(&RunShape { pacing_ns: Some(1_000_000), ..RunShape::default() });
        assert_eq!(d.findings, vec![]);
        d.judge(&RunShape { pacing_ns: Some(100_000), ..RunShape::default() });
        assert_eq!(codes(&d), vec![(FindingCode::TimerSlack, Side::Client)]);
        assert!(d.findings[0].text.contains("80.0 µs"));
        d.judge(&RunShape::default());
        assert_eq!(d.findings, vec![], "an unpaced run has no schedule to miss");
    }

    #[test]
    fn kernel_drops_are_reported_with_their_counts() {
        let mut d = Diagnosis {
            kernel: KernelCounters {
                udp_receive_buffer_errors: 12,
                listen_overflows: 3,
                ..KernelCounters::default()
            },
            ..Diagnosis::default()
        };
        d.judge(&RunShape::default());
        assert_eq!(
            codes(&d),
            vec![
                (FindingCode::SocketBufferFull, Side::Client),
                (FindingCode::AcceptQueueFull, Side::Client)
            ]
        );
        assert!(d.findings[0].text.contains("12 UDP packets at a full receive buffer"));
        assert!(d.findings[1].text.contains("dropped 3 connection attempts"));
    }

    #[test]
    fn the_port_ceiling_shows_in_time_wait_or_in_failed_connects() {
        let mut d = Diagnosis {
            ports: Some(PortUse { time_wait: 10_000, ephemeral: 28_232, exhausted: 0 }),
            ..Diagnosis::default()
        };
        d.judge(&RunShape::default());
        assert_eq!(d.findings, vec![]);
        d.ports = Some(PortUse { time_wait: 20_000, ephemeral: 28_232, exhausted: 0 });
        d.judge(&RunShape::default());
        assert_eq!(codes(&d), vec![(FindingCode::PortCeiling, Side::Client)]);
        assert!(d.findings[0].text.contains("above 471/s"), "{}", d.findings[0].text);
        d.ports = Some(PortUse { time_wait: 5, ephemeral: 28_232, exhausted: 7 });
        d.judge(&RunShape::default());
        assert!(d.findings[0].text.starts_with("7 connects found no free local port"));
    }

    #[test]
    fn late_and_missing_intervals_are_lost_results() {
        let second = 1_000_000_000u64;
        let on_time = RunShape {
            interval_ns: Some(second),
            intervals_planned: Some(5),
            interval_ends_ns: vec![second, 2 * second, 3 * second, 4 * second, 5 * second],
            ..RunShape::default()
        };
        let mut d = Diagnosis::default();
        d.judge(&on_time);
        assert_eq!(d.findings, vec![]);
        // A last short interval and one fewer than planned are normal endings.
        let ends = vec![second, 2 * second, 3 * second, 4 * second, 4 * second + second / 3];
        d.judge(&RunShape {
            interval_ends_ns: ends,
            intervals_planned: Some(6),
            ..on_time.clone()
        });
        assert_eq!(d.findings, vec![]);
        let held_up = vec![second, 3 * second, 4 * second];
        d.judge(&RunShape { interval_ends_ns: held_up, ..on_time });
        assert_eq!(codes(&d), vec![(FindingCode::LostResults, Side::Client)]);
        let text = &d.findings[0].text;
        assert!(text.contains("1 interval lines came late (the longest covered 2000 ms"), "{text}");
        assert!(text.contains("1 of the 5 planned interval lines are missing"), "{text}");
    }
}
