//! The threads that own a test's data sockets, one per stream on either side, and how to
//! stop them: raise the flag, shut the sockets so blocked calls return, join.

use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;

use socket2::Socket;

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
