//! The user-space delay line, for kernels without netem (in the spirit of mahimahi's
//! `mm-delay`): a link whose two ends are TUN devices, one in each host's namespace, and two
//! threads of this process that carry each direction's packets from one device to the other,
//! holding each for its delay ([`schedule`]). A thread sleeps with `ppoll` until a packet
//! arrives or the next one is due, its timer slack set to a nanosecond so the kernel does not
//! round its wake-ups; what it adds of its own (a few microseconds a packet) and how fast it
//! can go are measured and written down in `docs/network-emulation.md`.

pub mod schedule;
pub mod tun;

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wirespeed_model::path::Conditions;

use self::schedule::{LineCounts, Schedule};

/// Longest sleep between looks at the stop flag.
const TICK: Duration = Duration::from_millis(20);

/// Largest packet a TUN device hands over (its MTU is 1500; this leaves room).
const MAX_PACKET: usize = 65_536;

/// Packets read in one go before the due ones are looked at again.
const READ_BATCH: usize = 64;

/// A running delay line between two TUN devices; stopped when dropped.
#[derive(Debug)]
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    counts: [Arc<Mutex<LineCounts>>; 2],
}

impl DelayLine {
    /// Starts carrying packets from `a` to `b` under `a_to_b` and from `b` to `a` under
    /// `b_to_a`; `name` names its threads.
    pub fn start(
        name: &str,
        a: OwnedFd,
        b: OwnedFd,
        a_to_b: Conditions,
        b_to_a: Conditions,
        seed: u64,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b) = (Arc::new(a), Arc::new(b));
        let counts = [Arc::default(), Arc::default()];
        let mut threads = Vec::new();
        for (k, (from, to, c)) in [(&a, &b, a_to_b), (&b, &a, b_to_a)].into_iter().enumerate() {
            let (from, to, stop) = (Arc::clone(from), Arc::clone(to), Arc::clone(&stop));
            let count = Arc::clone(&counts[k]);
            let schedule = Schedule::new(c, seed.wrapping_add(k as u64));
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{name}-{}", ["fwd", "back"][k]))
                    .spawn(move || carry(&from, &to, schedule, &stop, &count))?,
            );
        }
        Ok(Self { stop, threads, counts })
    }

    /// What it has done so far, each direction (a to b, then b to a).
    pub fn counts(&self) -> [LineCounts; 2] {
        self.counts.each_ref().map(|c| *c.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Stops both threads and waits for them; the devices go when their descriptors close.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One direction: read from `from`, hold, write to `to`, until `stop`.
fn carry(
    from: &OwnedFd,
    to: &OwnedFd,
    mut schedule: Schedule,
    stop: &AtomicBool,
    shared: &Mutex<LineCounts>,
) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) changes only this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut buf = vec![0u8; MAX_PACKET];
    let mut last_shared = LineCounts::default();
    while !stop.load(Ordering::Relaxed) {
        let t = now();
        while let Some(packet) = schedule.pop_due(t) {
            // SAFETY: writes `packet.len()` bytes from a live buffer to a descriptor we own.
            let n = unsafe { libc::write(to.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
            if n < 0 {
                schedule.counts.write_errors += 1;
            } else {
                schedule.counts.delivered += 1;
            }
        }
        let wait = schedule
            .next_release()
            .map_or(TICK, |due| Duration::from_nanos(due.saturating_sub(now())).min(TICK));
        if readable(from, wait) {
            for _ in 0..READ_BATCH {
                // SAFETY: reads at most `buf.len()` bytes into a buffer we own.
                let n = unsafe { libc::read(from.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                let Ok(n) = usize::try_from(n) else { break };
                if n == 0 {
                    break;
                }
                schedule.accept(now(), buf[..n].to_vec());
            }
        }
        if schedule.counts != last_shared {
            last_shared = schedule.counts;
            *shared.lock().unwrap_or_else(|e| e.into_inner()) = last_shared;
        }
    }
}

/// Waits up to `wait` for `fd` to have a packet; true when it has.
fn readable(fd: &OwnedFd, wait: Duration) -> bool {
    let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let timeout = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32),
    };
    // SAFETY: one pollfd and a timespec, both live for the call; no signal mask change.
    let rc = unsafe { libc::ppoll(&mut poll, 1, &timeout, std::ptr::null()) };
    rc > 0 && poll.revents & libc::POLLIN != 0
}
