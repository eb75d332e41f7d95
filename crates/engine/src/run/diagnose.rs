//! The client watching itself while a test runs, for the report's diagnosis
//! ([`wirespeed_model::diagnosis`]): one thread sleeps with the pacers' 1 ns timer slack and
//! keeps how late it woke, and now and then (a fortieth of the test, from 100 ms to 1 s)
//! reads each thread's CPU time and wait for a CPU (`/proc/self/task/*/stat` and `schedstat`); the namespace's drop counters
//! are read at both ends and the TCP table at the end. What it means is decided in the model.
//!
//! A thread is judged over the part of the run it was watched: from the later of the watch's
//! start and its own, to the last sample that saw it. A thread that ends loses at most its
//! reading's worth, from its CPU time and its span alike, so its busy share stays right.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wirespeed_model::diagnosis::{
    Diagnosis, KernelCounters, PortUse, RunShape, ThreadCpu, WakeupLateness,
};
use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::Report;

/// How often the probe wakes and reads, chosen from the test's planned length: enough wake-ups
/// for lateness percentiles (about 200 in a paced test) and enough readings to see every
/// data thread of a short test (about 40), but never more often than these bounds. The cost
/// adds up where many clients run at once: 200 slow 30-second clients, each waking 200 times
/// a second and reading its threads 10 times, took a core of two (docs/reliability.md, the
/// soak at 2fce5f4); `probe` in every diagnosis says what one probe cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pace {
    /// How long each nap lasts.
    nap: Duration,
    /// Time between two readings of the threads' CPU time (two files per thread).
    sample_every: Duration,
}

/// Wake-ups wanted over a paced test, for the lateness percentiles.
const NAPS_WANTED: u32 = 200;
/// Readings wanted over a test, so a short test's threads are each seen more than once.
const READINGS_WANTED: u32 = 40;
/// The shortest nap. A probe waking 200 times a second on the client's core put 14 % on an
/// unpaced UDP round trip's p99 (pinned to one core, benches/builds/before-after.toml), so
/// only a paced test, where wake-ups are the question, naps this short.
const SHORTEST_NAP: Duration = Duration::from_millis(20);
/// The fewest readings: at least one a second.
const LONGEST_BETWEEN_READINGS: Duration = Duration::from_secs(1);
/// The most readings: ten a second.
const SHORTEST_BETWEEN_READINGS: Duration = Duration::from_millis(100);
/// A test without a planned length (counted in bytes or messages) is read as one of this.
const UNPLANNED: Duration = Duration::from_secs(10);

impl Pace {
    /// The pace for a test planned to last `planned` (`None`: ends by count), `paced` or not.
    fn of(planned: Option<Duration>, paced: bool) -> Self {
        let planned = planned.unwrap_or(UNPLANNED);
        let sample_every =
            (planned / READINGS_WANTED).clamp(SHORTEST_BETWEEN_READINGS, LONGEST_BETWEEN_READINGS);
        let nap = match paced {
            true => (planned / NAPS_WANTED).clamp(SHORTEST_NAP, sample_every),
            false => sample_every,
        };
        Self { nap, sample_every }
    }
}

/// A watch running beside a test; [`Watch::finish`] ends it and diagnoses the report.
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
    probe: Option<JoinHandle<Probed>>,
    started: Instant,
    kernel: KernelCounters,
}

/// What the probe thread gathered.
#[derive(Default)]
struct Probed {
    threads: Vec<ThreadCpu>,
    lateness: Option<WakeupLateness>,
    itself: Option<ThreadCpu>,
}

impl Watch {
    /// Starts watching a test planned to last `planned_ns` (`None`: it ends by count),
    /// `paced` or not. Where the probe thread cannot start, the diagnosis goes without threads
    /// and wake-ups.
    pub(crate) fn start(planned_ns: Option<u64>, paced: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let started = Instant::now();
        let pace = Pace::of(planned_ns.map(Duration::from_nanos), paced);
        let probe = std::thread::Builder::new()
            .name(PROBE_NAME.into())
            .spawn(move || probe(&flag, started, pace))
            .ok();
        Self { stop, probe, started, kernel: kernel_counters() }
    }

    /// Ends the watch and returns the diagnosis of `report`'s run, with `server_threads` as
    /// its server reported them.
    pub(crate) fn finish(self, report: &Report, server_threads: Vec<ThreadCpu>) -> Diagnosis {
        let exhausted = report.body.as_kind().ports_exhausted();
        // "address:port", or a bare address (an ICMP ping's).
        let far_end = report.meta.remote_addr.as_deref().and_then(|a| {
            a.parse::<std::net::SocketAddr>().map(|a| a.ip()).or_else(|_| a.parse::<IpAddr>()).ok()
        });
        let mut d = self.measured(server_threads, exhausted, far_end);
        d.judge(&RunShape::of(report.body.as_kind(), &report.meta.notes));
        d
    }

    /// Ends the watch: the figures, not yet judged.
    fn measured(
        mut self,
        server_threads: Vec<ThreadCpu>,
        ports_exhausted: u64,
        far_end: Option<IpAddr>,
    ) -> Diagnosis {
        let probed = self.stop_probe().unwrap_or_default();
        let end = kernel_counters();
        let was = self.kernel;
        Diagnosis {
            wall_ns: self.started.elapsed().as_nanos() as u64,
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
            client_threads: probed.threads,
            server_threads,
            wakeup: probed.lateness,
            probe: probed.itself,
            kernel: KernelCounters {
                udp_receive_buffer_errors: end
                    .udp_receive_buffer_errors
                    .saturating_sub(was.udp_receive_buffer_errors),
                udp_send_buffer_errors: end
                    .udp_send_buffer_errors
                    .saturating_sub(was.udp_send_buffer_errors),
                tcp_receive_queue_drops: end
                    .tcp_receive_queue_drops
                    .saturating_sub(was.tcp_receive_queue_drops),
                listen_overflows: end.listen_overflows.saturating_sub(was.listen_overflows),
            },
            ports: port_use(ports_exhausted, far_end),
            findings: Vec::new(),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // A run that failed still stops its probe.
        let _ = self.stop_probe();
    }
}

impl Watch {
    /// Stops the probe, waking it from its nap, and returns what it gathered.
    fn stop_probe(&mut self) -> Option<Probed> {
        self.stop.store(true, Relaxed);
        let probe = self.probe.take()?;
        probe.thread().unpark();
        probe.join().ok()
    }
}

/// The probe thread's name, left out of the threads it reports.
const PROBE_NAME: &str = "ws-diagnose";

/// The probe: naps of `pace.nap`, keeps their lateness, and samples the threads every
/// `pace.sample_every`.
fn probe(stop: &AtomicBool, started: Instant, pace: Pace) -> Probed {
    let nap = pace.nap;
    let born = Instant::now();
    crate::net::sys::tighten_timer_slack();
    let me = crate::net::sys::thread_id();
    let mut lateness = RttHistogram::default();
    let mut seen: HashMap<i32, Seen> = HashMap::new();
    sample(&mut seen, me, started);
    let mut sampled = Instant::now();
    while !stop.load(Relaxed) {
        let asked = Instant::now();
        // Parked rather than asleep, so the end of the run wakes it at once (a 100 ms sleep
        // held the runtime thread that joins it for up to that long).
        std::thread::park_timeout(nap);
        let slept = asked.elapsed();
        if stop.load(Relaxed) {
            break;
        }
        // An early (spurious) wake-up says nothing about lateness.
        if slept >= nap {
            lateness.record((slept - nap).as_nanos() as u64);
        }
        if sampled.elapsed() >= pace.sample_every {
            sampled = Instant::now();
            sample(&mut seen, me, started);
        }
    }
    sample(&mut seen, me, started);
    let mut threads: Vec<ThreadCpu> = seen.into_values().filter_map(Seen::cpu).collect();
    threads.sort_by(|a, b| b.busy_ratio().total_cmp(&a.busy_ratio()).then(a.name.cmp(&b.name)));
    let stats = lateness.stats();
    let lateness = (stats.count > 0).then_some(WakeupLateness {
        samples: stats.count,
        p50_ns: stats.p50_ns,
        p99_ns: stats.p99_ns,
        max_ns: stats.max_ns,
    });
    Probed { threads, lateness, itself: Some(crate::run::threads::own_usage(born)) }
}

/// One reading of one thread's counters.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    /// When, nanoseconds since the watch started.
    at_ns: u64,
    /// CPU time (schedstat), nanoseconds.
    run_ns: u64,
    /// Time runnable but waiting for a CPU (schedstat), nanoseconds.
    wait_ns: u64,
    /// User and system clock ticks (stat), for the split of `run_ns`.
    user_ticks: u64,
    system_ticks: u64,
}

/// A thread as the samples saw it: its first and its latest reading.
struct Seen {
    name: String,
    first: Reading,
    last: Reading,
}

impl Seen {
    /// Its CPU over the time watched, or `None` when it was seen only once.
    fn cpu(self) -> Option<ThreadCpu> {
        let span_ns = self.last.at_ns.saturating_sub(self.first.at_ns);
        if span_ns == 0 {
            return None;
        }
        let run = self.last.run_ns.saturating_sub(self.first.run_ns);
        let user = self.last.user_ticks.saturating_sub(self.first.user_ticks);
        let system = self.last.system_ticks.saturating_sub(self.first.system_ticks);
        // schedstat's time is exact; the ticks (10 ms) only say how it splits.
        let user_ns = if user + system == 0 {
            run
        } else {
            (run as f64 * user as f64 / (user + system) as f64) as u64
        };
        Some(ThreadCpu {
            name: self.name,
            user_ns,
            system_ns: run - user_ns.min(run),
            wait_ns: Some(self.last.wait_ns.saturating_sub(self.first.wait_ns)),
            span_ns,
        })
    }
}

/// Reads every thread of this process but the probe (`me`).
fn sample(seen: &mut HashMap<i32, Seen>, me: i32, started: Instant) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
    let now_ns = started.elapsed().as_nanos() as u64;
    let uptime_ns = uptime_ns();
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<i32>().ok()) else {
            continue;
        };
        if tid == me {
            continue;
        }
        let dir = task.path();
        let Some((name, user_ticks, system_ticks, start_ticks)) =
            std::fs::read_to_string(dir.join("stat")).ok().as_deref().and_then(parse_stat)
        else {
            continue;
        };
        let (run_ns, wait_ns) = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .as_deref()
            .and_then(parse_schedstat)
            .unwrap_or(((user_ticks + system_ticks) * tick_ns(), 0));
        let reading = Reading { at_ns: now_ns, run_ns, wait_ns, user_ticks, system_ticks };
        seen.entry(tid)
            .and_modify(|s| {
                s.last = reading;
                // A new thread names itself after it starts: the latest name is its own.
                s.name.clone_from(&name);
            })
            .or_insert_with(|| {
                // Present at the first sample: watched from then. Born later: watched from
                // its birth, with nothing used before it.
                let born_ago_ns = uptime_ns
                    .zip(Some(start_ticks * tick_ns()))
                    .map(|(up, born)| up.saturating_sub(born));
                let first = match born_ago_ns {
                    Some(ago) if now_ns > 0 && ago < now_ns => {
                        Reading { at_ns: now_ns - ago, ..Reading::default() }
                    }
                    _ => reading,
                };
                Seen { name, first, last: reading }
            });
    }
}

/// Name, user ticks, system ticks and start time (ticks since boot) from a `stat` line. The
/// name sits in parentheses and may hold spaces and parentheses itself, so fields are counted
/// from the last `)`.
fn parse_stat(line: &str) -> Option<(String, u64, u64, u64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let name = line.get(open + 1..close)?.to_string();
    // Fields after the name start at field 3 (state); utime is 14, stime 15, starttime 22.
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3)?.parse::<u64>().ok();
    Some((name, field(14)?, field(15)?, field(22)?))
}

/// CPU time and run-queue wait, nanoseconds, from a `schedstat` line.
fn parse_schedstat(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// Nanoseconds in one clock tick of `/proc`'s times.
fn tick_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        1_000_000_000 / hz as u64
    } else {
        10_000_000
    }
}

/// Time since boot, nanoseconds (`/proc/uptime`, the clock thread start times count on).
fn uptime_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some((secs * 1e9) as u64)
}

/// The namespace's drop counters now (zero where a file cannot be read).
fn kernel_counters() -> KernelCounters {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let snmp6 = std::fs::read_to_string("/proc/net/snmp6").unwrap_or_default();
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let v4 = |name| table_value(&snmp, "Udp", name);
    let v6 = |name: &str| {
        snmp6.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok()).unwrap_or(0)
    };
    KernelCounters {
        udp_receive_buffer_errors: v4("RcvbufErrors") + v6("Udp6RcvbufErrors"),
        udp_send_buffer_errors: v4("SndbufErrors") + v6("Udp6SndbufErrors"),
        tcp_receive_queue_drops: table_value(&netstat, "TcpExt", "TCPRcvQDrop"),
        listen_overflows: table_value(&netstat, "TcpExt", "ListenOverflows"),
    }
}

/// A value from the two-line tables of `/proc/net/snmp` and `netstat`: a line of names after
/// `prefix:`, then a line of values.
fn table_value(text: &str, prefix: &str, name: &str) -> u64 {
    let head = format!("{prefix}:");
    let mut rows = text.lines().filter(|l| l.starts_with(&head));
    let (Some(names), Some(values)) = (rows.next(), rows.next()) else { return 0 };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// The client's local ports at the end: the most TIME_WAIT entries towards any one far end
/// whose local port is in the ephemeral range (where the kernel cannot reuse them for that far
/// end), and the connects the run counted as failed for want of a port. `None` when the
/// kernel's tables cannot be read.
fn port_use(exhausted: u64, far_end: Option<IpAddr>) -> Option<PortUse> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut bounds = range.split_whitespace().filter_map(|v| v.parse::<u32>().ok());
    let (low, high) = (bounds.next()?, bounds.next()?);
    // tcp_tw_reuse: 1 reuses TIME_WAIT ports for new connects everywhere, 2 (the default)
    // only towards loopback.
    let reuse = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse")
        .ok()
        .and_then(|v| v.trim().parse::<u8>().ok())
        .unwrap_or(0);
    let mut per_far_end: HashMap<IpAddr, u64> = HashMap::new();
    // The ceiling is per far end: only the test's counts. Where the kernel reuses them all
    // (or every one towards the test's far end), nothing can cap and nothing is asked: the
    // kernel walks its whole connection table for the answer, which takes seconds on a busy
    // host.
    let reusable = reuse == 1 || (reuse == 2 && far_end.is_some_and(is_loopback));
    if !reusable {
        for (local, remote) in crate::net::sock_diag::time_wait().ok()? {
            if !(low..=high).contains(&u32::from(local.port())) {
                continue;
            }
            if reuse == 2 && is_loopback(remote.ip()) {
                continue;
            }
            if far_end.is_some_and(|ip| ip != remote.ip()) {
                continue;
            }
            *per_far_end.entry(remote.ip()).or_default() += 1;
        }
    }
    Some(PortUse {
        time_wait: per_far_end.into_values().max().unwrap_or(0),
        ephemeral: u64::from(high.saturating_sub(low) + 1),
        exhausted,
    })
}

/// Loopback, IPv4-mapped loopback included.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Socket, Type};
    use std::net::SocketAddr;
    use wirespeed_model::diagnosis::FindingCode;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "1234 (ws (a) b) S 1 1 1 0 -1 4194368 100 0 0 0 17 5 0 0 20 0 12 0 987 0 0";
        assert_eq!(parse_stat(line), Some(("ws (a) b".into(), 17, 5, 987)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_schedstat("123 45 6\n"), Some((123, 45)));
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn snmp_tables_read_by_name() {
        let text = "Udp: InDatagrams NoPorts RcvbufErrors\nUdp: 41 0 7\nUdpLite: RcvbufErrors\nUdpLite: 9\n";
        assert_eq!(table_value(text, "Udp", "RcvbufErrors"), 7);
        assert_eq!(table_value(text, "Udp", "Missing"), 0);
        assert_eq!(table_value(text, "TcpExt", "RcvbufErrors"), 0);
    }

    #[test]
    fn loopback_is_known_in_every_spelling() {
        assert!(is_loopback("127.0.0.1".parse().unwrap()));
        assert!(is_loopback("127.0.0.2".parse().unwrap()));
        assert!(!is_loopback("192.0.2.2".parse().unwrap()));
        assert!(is_loopback("::1".parse().unwrap()));
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("::".parse().unwrap()));
    }

    #[test]
    fn datagrams_dropped_at_a_full_receive_buffer_are_found() {
        let watch = Watch::start(Some(1_000_000_000), true);
        // A receiver with the smallest buffer the kernel allows, never read.
        let deaf = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        deaf.set_recv_buffer_size(1).unwrap();
        deaf.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
        let to = deaf.local_addr().unwrap();
        let sender = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        for _ in 0..200 {
            sender.send_to(&[0u8; 1200], &to).unwrap();
        }
        let mut d = watch.measured(Vec::new(), 0, None);
        d.judge(&RunShape::default());
        assert!(d.kernel.udp_receive_buffer_errors >= 150, "{:?}", d.kernel);
        assert!(
            d.findings.iter().any(|f| f.code == FindingCode::SocketBufferFull),
            "{:?}",
            d.findings
        );
    }

    #[test]
    fn a_busy_thread_of_this_process_is_seen_busy() {
        let watch = Watch::start(Some(1_000_000_000), true);
        let spinner = std::thread::Builder::new()
            .name("ws-test-spin".into())
            .spawn(|| {
                let until = Instant::now() + Duration::from_millis(800);
                let mut x = 0u64;
                while Instant::now() < until {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                x
            })
            .unwrap();
        let sleeper = std::thread::Builder::new()
            .name("ws-test-nap".into())
            .spawn(|| std::thread::sleep(Duration::from_millis(800)))
            .unwrap();
        spinner.join().unwrap();
        sleeper.join().unwrap();
        let mut watch = watch;
        let probed = watch.stop_probe().expect("the probe ran");
        let find = |name: &str| probed.threads.iter().find(|t| t.name == name).cloned();
        let names: Vec<_> = probed.threads.iter().map(|t| (t.name.clone(), t.span_ns)).collect();
        let spin = find("ws-test-spin")
            .unwrap_or_else(|| panic!("the spinning thread was not seen: {names:?}"));
        let nap = find("ws-test-nap").expect("the sleeping thread was seen");
        assert!(spin.busy_ratio() > nap.busy_ratio() + 0.3, "{spin:?} against {nap:?}");
        assert!(find(PROBE_NAME).is_none(), "the probe leaves itself out");
        assert!(probed.lateness.is_some_and(|l| l.samples > 10));
    }

    #[test]
    fn the_probe_wakes_less_often_the_longer_the_test() {
        let ms = Duration::from_millis;
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(Pace::of(secs(1), true), Pace { nap: ms(20), sample_every: ms(100) });
        assert_eq!(Pace::of(secs(10), true), Pace { nap: ms(50), sample_every: ms(250) });
        assert_eq!(Pace::of(secs(30), true), Pace { nap: ms(150), sample_every: ms(750) });
        assert_eq!(Pace::of(secs(3600), true), Pace { nap: ms(1000), sample_every: ms(1000) });
        // Unpaced, it wakes only to read; a test counted in bytes is taken as 10 s.
        assert_eq!(Pace::of(secs(1), false), Pace { nap: ms(100), sample_every: ms(100) });
        assert_eq!(Pace::of(None, false), Pace { nap: ms(250), sample_every: ms(250) });
    }
}
