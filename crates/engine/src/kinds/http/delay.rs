//! A timer for the fixture's `?delay=`: tokio's ticks in whole milliseconds and fires up to
//! one late, which would turn `?delay=10ms` into 10–11 ms. One thread sleeps with a 1 µs
//! timer slack until shortly before the earliest deadline (a sleeping thread wakes 100–200 µs
//! late on a virtual machine), spins the rest, and wakes each waiter on time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Instant;

use tokio::sync::oneshot;

/// How long before a deadline the timer thread stops sleeping and spins.
const SPIN: std::time::Duration = std::time::Duration::from_micros(250);

/// Hands deadlines to the timer thread.
#[derive(Debug, Clone)]
pub(super) struct DelayTimer(mpsc::Sender<(Instant, u64, oneshot::Sender<()>)>);

impl DelayTimer {
    /// Starts the timer thread; it ends when every handle is dropped.
    pub(super) fn start() -> Self {
        let (tx, rx) = mpsc::channel::<(Instant, u64, oneshot::Sender<()>)>();
        let _ = std::thread::Builder::new().name("ws-http-delay".into()).spawn(move || {
            crate::net::sys::tighten_timer_slack();
            // Deadline, then arrival order (senders are not ordered).
            let mut heap: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
            let mut waiters = std::collections::HashMap::new();
            loop {
                let next = match heap.peek() {
                    Some(Reverse((at, _))) => {
                        let wake = at.checked_sub(SPIN).unwrap_or(*at);
                        let got = rx.recv_timeout(wake.saturating_duration_since(Instant::now()));
                        if matches!(got, Err(RecvTimeoutError::Timeout)) {
                            while Instant::now() < *at {
                                std::hint::spin_loop();
                            }
                        }
                        got
                    }
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok((at, id, waiter)) => {
                        heap.push(Reverse((at, id)));
                        waiters.insert(id, waiter);
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                let now = Instant::now();
                while heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
                    if let Some(Reverse((_, id))) = heap.pop() {
                        if let Some(w) = waiters.remove(&id) {
                            let _ = w.send(());
                        }
                    }
                }
            }
        });
        Self(tx)
    }

    /// Waits until `deadline`.
    pub(super) async fn until(&self, deadline: Instant, id: u64) {
        let (tx, rx) = oneshot::channel();
        if self.0.send((deadline, id, tx)).is_err() {
            tokio::time::sleep_until(deadline.into()).await;
            return;
        }
        let _ = rx.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn delays_end_on_time() {
        let timer = DelayTimer::start();
        let mut late = Vec::new();
        for id in 0..20 {
            let at = Instant::now() + std::time::Duration::from_millis(10);
            timer.until(at, id).await;
            assert!(Instant::now() >= at, "woken early");
            late.push(Instant::now().duration_since(at).as_micros());
        }
        late.sort();
        // Never early; how late is the machine's business (no timing assertions in tests).
        assert!(late.iter().all(|&l| l < 60_000_000), "{late:?}");
    }
}
