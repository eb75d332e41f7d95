//! Sampling a system's processes while a cell runs: for each role, the resident memory (VmRSS)
//! of its whole process group summed, its peak (VmHWM, the largest of the group's), and the CPU
//! time the group has used, read from `/proc` every interval by one thread. Each sample is
//! tagged with its own role — rathole's memory script logged each process under the other's name
//! (reference/harness.md §2); here a role's numbers can only come from its own group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::process::{processes, ProcStat};
use crate::scenario::SampleMetric;

/// One reading of one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Milliseconds since sampling started.
    pub at_ms: u64,
    /// The role.
    pub role: String,
    /// Resident memory of the group, bytes.
    pub rss_bytes: u64,
    /// The largest peak resident memory in the group, bytes.
    pub hwm_bytes: u64,
    /// CPU time the group's live processes have used, user and system, nanoseconds.
    pub cpu_ns: u64,
    /// Processes in the group.
    pub processes: u32,
}

/// What a sample reads: memory (RSS and HWM) is in each member's `/proc/PID/status`, read only
/// when asked for; CPU time comes with the pass over `/proc/*/stat` that finds the members.
/// A figure not asked for is left at 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// RSS or HWM.
    pub memory: bool,
    /// CPU time.
    pub cpu: bool,
}

impl Wanted {
    /// What `metrics` (of `[sample]`) asks for.
    pub fn of(metrics: &[SampleMetric]) -> Self {
        Self {
            memory: metrics.iter().any(|m| matches!(m, SampleMetric::Rss | SampleMetric::Hwm)),
            cpu: metrics.contains(&SampleMetric::Cpu),
        }
    }

    /// Every figure.
    pub const ALL: Self = Self { memory: true, cpu: true };
}

/// One process's resident memory and its peak, bytes; `None` when it is gone.
fn read_memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    Some((kib("VmRSS:"), kib("VmHWM:")))
}

/// A reading of every role now: one pass over `/proc` finds every group's members and their
/// CPU time; memory is read from each member's status when asked for.
pub fn read(roles: &[(String, u32)], at_ms: u64, wanted: Wanted) -> Vec<Sample> {
    read_groups(roles, at_ms, wanted, false)
}

/// [`read`], where with `tool_only` a group's leader is left out when it has company: a load's
/// leader is the wirespeed process that ran another tool's client, which is what is measured.
fn read_groups(
    roles: &[(String, u32)],
    at_ms: u64,
    wanted: Wanted,
    tool_only: bool,
) -> Vec<Sample> {
    // SAFETY: sysconf reads a constant; it has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let tick_ns = 1_000_000_000 / hz;
    let all = processes();
    roles
        .iter()
        .map(|(role, pgid)| {
            let mut members: Vec<&ProcStat> = all.iter().filter(|p| p.pgrp == *pgid).collect();
            if tool_only && members.len() > 1 {
                members.retain(|p| p.pid != *pgid);
            }
            let memory: Vec<(u64, u64)> = if wanted.memory {
                members.iter().filter_map(|p| read_memory(p.pid)).collect()
            } else {
                Vec::new()
            };
            Sample {
                at_ms,
                role: role.clone(),
                rss_bytes: memory.iter().map(|m| m.0).sum(),
                hwm_bytes: memory.iter().map(|m| m.1).max().unwrap_or(0),
                cpu_ns: if wanted.cpu {
                    members.iter().map(|p| p.cpu_ticks * tick_ns).sum()
                } else {
                    0
                },
                processes: members.len() as u32,
            }
        })
        .collect()
}

/// A thread sampling `roles` every `interval` until stopped, and the roles watched for a
/// while (the load's process, from its start to its end).
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    watched: Arc<Mutex<Vec<(String, u32)>>>,
    start: Instant,
    wanted: Wanted,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `roles` (role, process group) now, every `interval`, and when stopped.
    pub fn start(roles: Vec<(String, u32)>, interval: Duration, wanted: Wanted) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let watched: Arc<Mutex<Vec<(String, u32)>>> = Arc::default();
        let (s, out, extra) = (stop.clone(), samples.clone(), watched.clone());
        let start = Instant::now();
        let thread = std::thread::spawn(move || {
            let mut next = start;
            while !s.load(Ordering::Relaxed) {
                // The watched groups before the time: a group watched since has its first
                // reading (taken by `watch`) before this one.
                let now_watched = extra.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let at_ms = start.elapsed().as_millis() as u64;
                let mut taken = read(&roles, at_ms, wanted);
                // A watched group with no process left has ended: it has nothing to say.
                let loads = read_groups(&now_watched, at_ms, wanted, true);
                taken.extend(loads.into_iter().filter(|s| s.processes > 0));
                out.lock().unwrap_or_else(|e| e.into_inner()).extend(taken);
                next += interval;
                // Sleep in short steps so a stop is prompt.
                while !s.load(Ordering::Relaxed) && Instant::now() < next {
                    std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
                }
            }
            // One more at the end, so a run shorter than the interval still has a span.
            let last = read(&roles, start.elapsed().as_millis() as u64, wanted);
            out.lock().unwrap_or_else(|e| e.into_inner()).extend(last);
        });
        Self { stop, samples, watched, start, wanted, thread: Some(thread) }
    }

    /// Samples the process group `pgid` as `role` too, from now until [`Sampler::unwatch`]:
    /// a load, whose leader is left out where it runs another tool's client.
    pub fn watch(&self, role: &str, pgid: u32) {
        let group = (role.to_string(), pgid);
        // A first reading now: the CPU it will have used is counted from here, not from the
        // next tick.
        let at_ms = self.start.elapsed().as_millis() as u64;
        let first = read_groups(std::slice::from_ref(&group), at_ms, self.wanted, true);
        self.samples.lock().unwrap_or_else(|e| e.into_inner()).extend(first);
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).push(group);
    }

    /// Stops sampling the process group `pgid`.
    pub fn unwatch(&self, pgid: u32) {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).retain(|(_, g)| *g != pgid);
    }

    /// Stops sampling and returns every sample taken.
    pub fn finish(mut self) -> Vec<Sample> {
        self.halt();
        let mut samples =
            std::mem::take(&mut *self.samples.lock().unwrap_or_else(|e| e.into_inner()));
        // A load's first reading may be recorded between a tick's reading and its record.
        samples.sort_by_key(|s| s.at_ms);
        samples
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Per role: peak RSS, peak HWM and CPU time used over the samples (last minus first).
pub fn summary(samples: &[Sample]) -> Vec<(String, u64, u64, u64)> {
    let mut roles: Vec<&str> = samples.iter().map(|s| s.role.as_str()).collect();
    roles.sort_unstable();
    roles.dedup();
    roles
        .into_iter()
        .map(|role| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.role == role).collect();
            let rss = mine.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
            let hwm = mine.iter().map(|s| s.hwm_bytes).max().unwrap_or(0);
            let cpu = match (mine.first(), mine.last()) {
                (Some(a), Some(b)) => b.cpu_ns.saturating_sub(a.cpu_ns),
                _ => 0,
            };
            (role.to_string(), rss, hwm, cpu)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn each_role_is_sampled_from_its_own_group() {
        let dir = tempfile::tempdir().unwrap();
        let words = |s: &str| crate::words::split(s).unwrap();
        // "big" holds ~64 MiB and burns CPU; "small" sleeps.
        let big = crate::process::spawn(
            "big",
            &words(
                r#"python3 -c 'b = b"x" * (64 << 20)
while True: sum(range(10000))'"#,
            ),
            &BTreeMap::new(),
            dir.path(),
            None,
        )
        .unwrap();
        let small =
            crate::process::spawn("small", &words("sleep 30"), &BTreeMap::new(), dir.path(), None)
                .unwrap();
        // Sampled once "big" holds its memory: on a loaded machine Python takes more than the
        // sampling window to start and allocate, and a fixed wait read it before it had.
        let rss = |pid: u32| -> u64 {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:"));
            kib.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0) << 10
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while rss(big.pid) <= 60 << 20 {
            assert!(Instant::now() < deadline, "big never held 60 MiB");
            std::thread::sleep(Duration::from_millis(20));
        }
        let sampler = Sampler::start(
            vec![("big".into(), big.pid), ("small".into(), small.pid)],
            Duration::from_millis(100),
            Wanted::ALL,
        );
        std::thread::sleep(Duration::from_millis(800));
        let samples = sampler.finish();
        let sum = summary(&samples);
        assert_eq!(sum.len(), 2, "{sum:?}");
        let (big_s, small_s) = (&sum[0], &sum[1]);
        assert_eq!((big_s.0.as_str(), small_s.0.as_str()), ("big", "small"));
        assert!(big_s.1 > 60 << 20, "big's RSS {}", big_s.1);
        assert!(small_s.1 < 16 << 20, "small's RSS {}", small_s.1);
        assert!(big_s.2 >= big_s.1, "HWM at least RSS");
        assert!(big_s.3 > 0, "big used CPU");
        assert!(samples.iter().filter(|s| s.role == "big").count() >= 3);
        // Memory only: the CPU file is not read.
        let only = read(&[("big".into(), big.pid)], 0, Wanted::of(&[SampleMetric::Rss]));
        assert!(only[0].rss_bytes > 60 << 20 && only[0].cpu_ns == 0, "{only:?}");
        drop((big, small));
    }

    #[test]
    fn a_watched_load_is_sampled_without_its_leader_until_unwatched() {
        let dir = tempfile::tempdir().unwrap();
        let words = crate::words::split("sh -c 'sleep 30; true'").unwrap();
        // The shell leads the group, as our wrapper leads another tool's client: the sleep it
        // forks is the load.
        let load =
            crate::process::spawn("load", &words, &BTreeMap::new(), dir.path(), None).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while processes().iter().filter(|p| p.pgrp == load.pid).count() < 2 {
            assert!(Instant::now() < deadline, "the shell never forked");
            std::thread::sleep(Duration::from_millis(10));
        }
        let sampler = Sampler::start(Vec::new(), Duration::from_millis(50), Wanted::ALL);
        sampler.watch("load", load.pid);
        std::thread::sleep(Duration::from_millis(300));
        sampler.unwatch(load.pid);
        let unwatched_ms = sampler.start.elapsed().as_millis() as u64;
        std::thread::sleep(Duration::from_millis(200));
        let samples = sampler.finish();
        assert!(samples.len() >= 3, "{samples:?}");
        for s in &samples {
            assert_eq!((s.role.as_str(), s.processes), ("load", 1), "{s:?}");
            assert!(s.rss_bytes > 0 && s.at_ms <= unwatched_ms, "{s:?}");
        }
        assert!(samples.windows(2).all(|w| w[0].at_ms <= w[1].at_ms), "in time order");
        drop(load);
    }
}
