//! The threads that own a test's data sockets, one per stream on either side, and how to
//! stop them: raise the flag, shut the sockets so blocked calls return, join. And what a
//! thread used over its life, as it tells it when it ends ([`own_usage`]).

use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use socket2::Socket;
use wirespeed_model::diagnosis::ThreadCpu;

use crate::net::sys;

/// One thread per stream on either side, each returning its CPU time, and how to stop them:
/// raise the flag, shut the sockets so blocked calls return, join.
pub(crate) struct StreamThreads {
    pub stop: Arc<AtomicBool>,
    pub sockets: Vec<Arc<Socket>>,
    pub handles: Vec<JoinHandle<(u64, u64)>>,
}

impl StreamThreads {
    /// True when every thread has ended.
    pub(crate) fn finished(&self) -> bool {
        self.handles.iter().all(|t| t.is_finished())
    }

    /// Stops every thread and returns their CPU time (user, system) in nanoseconds.
    pub(crate) fn stop(self) -> (u64, u64) {
        self.stop.store(true, Relaxed);
        for s in &self.sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.handles
            .into_iter()
            .filter_map(|t| t.join().ok())
            .fold((0, 0), |(u, s), (a, b)| (u + a, s + b))
    }
}

/// What the calling thread used since `born`, as it ends: CPU time from `getrusage`, its wait
/// for a CPU from its schedstat (where the kernel keeps one), under its own name. What a
/// server's data threads send back for the client's diagnosis.
pub(crate) fn own_usage(born: Instant) -> ThreadCpu {
    let (user_ns, system_ns) = sys::thread_cpu_ns();
    let wait_ns = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|line| line.split_whitespace().nth(1)?.parse().ok());
    ThreadCpu {
        name: std::thread::current().name().unwrap_or("").to_string(),
        user_ns,
        system_ns,
        wait_ns,
        span_ns: born.elapsed().as_nanos() as u64,
    }
}
