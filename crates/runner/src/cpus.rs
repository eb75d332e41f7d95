//! The CPUs a process of a study may run on (`cpus = "1"`, `"0-1"`, `"0,2-3"`, as `taskset
//! -c` writes them): a role pinned apart from the load, or a load pinned apart from its
//! server, so that one side's CPU is the ceiling and the other's CPU per unit of work is what
//! tells two clients apart. Applied by the kernel's affinity mask between fork and exec, so a
//! pinned program's children are pinned too, and no `taskset` is needed.

use std::fmt;
use std::os::unix::process::CommandExt;

/// The highest CPU number a set may hold (the kernel's `cpu_set_t` holds 1024).
const MOST: usize = 1024;

/// A set of CPUs by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet {
    cpus: Vec<usize>,
    written: String,
}

impl CpuSet {
    /// Reads `"0"`, `"0-1"` or `"0,2-3"`: numbers and ranges, comma-separated.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "cpus {text:?}: {why} (expected CPU numbers and ranges: \"1\", \"0-1\", \"0,2-3\")"
            )
        };
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            let number = |n: &str| n.trim().parse::<usize>().map_err(|_| bad("not a CPU number"));
            let (first, last) = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => (number(part)?, number(part)?),
            };
            if first > last {
                return Err(bad("a range runs backwards"));
            }
            if last >= MOST {
                return Err(bad(&format!("CPU {last} is beyond the kernel's {MOST}")));
            }
            cpus.extend(first..=last);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(Self { cpus, written: text.trim().to_string() })
    }

    /// The CPUs, in order.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// The kernel's mask of the set.
    fn mask(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
        let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &self.cpus {
            // SAFETY: cpu < MOST, the set's capacity.
            unsafe { libc::CPU_SET(cpu, &mut mask) };
        }
        mask
    }

    /// Makes `command` run on these CPUs only (it and whatever it starts). Its spawn fails with
    /// the kernel's EINVAL when none of them is online.
    pub fn apply(&self, command: &mut std::process::Command) {
        let mask = self.mask();
        // SAFETY: the closure runs between fork and exec and makes one system call, which is
        // async-signal-safe; the mask was built before the fork.
        unsafe {
            command.pre_exec(move || {
                let size = size_of::<libc::cpu_set_t>();
                if libc::sched_setaffinity(0, size, &mask) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// The CPUs this machine lets this process run on, to say which a set may name.
    pub fn available() -> Vec<usize> {
        // SAFETY: as in `mask`; sched_getaffinity fills the mask it is given.
        let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = size_of::<libc::cpu_set_t>();
        if unsafe { libc::sched_getaffinity(0, size, &mut mask) } != 0 {
            return Vec::new();
        }
        // SAFETY: every cpu < MOST is within the mask.
        (0..MOST).filter(|&c| unsafe { libc::CPU_ISSET(c, &mask) }).collect()
    }

    /// Refused, with what there is, when it names a CPU this process may not run on.
    pub fn check_available(&self) -> Result<(), String> {
        let there = Self::available();
        match self.cpus.iter().find(|c| !there.contains(c)) {
            Some(c) if !there.is_empty() => Err(format!(
                "cpus {:?}: CPU {c} is not one this machine runs us on ({})",
                self.written,
                there.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_ranges_and_lists_are_read_and_nonsense_is_refused() {
        assert_eq!(CpuSet::parse("1").unwrap().cpus(), [1]);
        assert_eq!(CpuSet::parse("0-2").unwrap().cpus(), [0, 1, 2]);
        assert_eq!(CpuSet::parse("3, 0-1,1").unwrap().cpus(), [0, 1, 3]);
        for bad in ["", "a", "2-1", "1-", "4096", "0,,1"] {
            let e = CpuSet::parse(bad).unwrap_err();
            assert!(e.starts_with(&format!("cpus {bad:?}")), "{e}");
        }
    }

    #[test]
    fn a_pinned_child_runs_on_its_cpus_only() {
        let first = *CpuSet::available().first().expect("this process runs somewhere");
        let set = CpuSet::parse(&first.to_string()).unwrap();
        set.check_available().unwrap();
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        set.apply(&mut command);
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.split_whitespace().last(), Some(first.to_string().as_str()), "{text}");
        // A CPU this machine does not have: refused before, and by the kernel at spawn.
        let beyond = CpuSet::parse("1023").unwrap();
        assert!(beyond.check_available().unwrap_err().contains("CPU 1023"));
        let mut command = std::process::Command::new("true");
        beyond.apply(&mut command);
        assert!(command.status().is_err());
    }
}
