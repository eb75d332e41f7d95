//! A UDP worker: one thread owning its connected sockets (the kernel drops datagrams from
//! any other source), its IDs and its counts, with no lock on the hot path. Each turn it
//! waits on epoll for answers (not at all when it may send), drains every ready socket with
//! `recvmmsg`, expires what timed out, then sends as many queries as the window (`-q`) or the
//! schedule (`-Q`, `--rate`) allows, spread over its sockets in `sendmmsg` batches, each
//! query copied from its template with a fresh ID.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wirespeed_proto::dns::wire::set_id;

use super::queries::{Cursor, QuerySet};
use super::shared::{since, Control, Local, Pace, WorkerShared};
use super::tracker::{Answered, Tracker};
use crate::mmsg::MsgBatch;
use crate::sys;

/// Datagrams per system call.
const BATCH: usize = 32;
/// Largest query a template can be (a 255-byte name, header, question and OPT).
const QUERY_BUF: usize = 320;
/// Largest answer read whole (the biggest UDP payload).
const ANSWER_BUF: usize = 65_535;
/// Longest sleep between looks at the run's flags.
const HEARTBEAT: Duration = Duration::from_millis(10);

/// One UDP worker thread's share of the test.
pub(super) struct UdpWorker {
    pub sockets: Vec<UdpSocket>,
    pub queries: Arc<QuerySet>,
    pub cursor: Cursor,
    /// Most queries in flight (the closed loop's `-q` share; the ID space in the open loop).
    pub window: u32,
    pub pace: Option<Pace>,
    pub tracker: Tracker,
    pub shared: Arc<WorkerShared>,
    pub control: Arc<Control>,
    pub begin: Instant,
    /// Where truncated answers go to be asked again over TCP (`--tc-retry`).
    pub retry: Option<mpsc::Sender<u32>>,
}

impl UdpWorker {
    /// Runs until this worker's queries are sent and answered or timed out, or the run is
    /// stopped; publishes its counts for the last time and marks itself done.
    pub fn run(mut self) -> io::Result<()> {
        let mut local = Local::new();
        let result = self.turns(&mut local);
        let now = since(self.begin);
        if self.control.interrupt.load(Relaxed) {
            self.tracker.abandon(true);
        } else {
            self.tracker.expire(now);
        }
        self.shared.finish(&mut local, &self.tracker.counts, now);
        result
    }

    fn turns(&mut self, local: &mut Local) -> io::Result<()> {
        let epoll = sys::epoll()?;
        for (i, s) in self.sockets.iter().enumerate() {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: i as u64 };
            // SAFETY: both descriptors are open; ev is a valid event for the call.
            let r = unsafe {
                libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev)
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let fds: Vec<RawFd> = self.sockets.iter().map(|s| s.as_raw_fd()).collect();
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().min(256)];
        let mut out = MsgBatch::new(BATCH, QUERY_BUF, false);
        let mut inbox = MsgBatch::new(BATCH, ANSWER_BUF, false);
        let mut next_socket = 0usize;
        let mut plan: Vec<(u16, u32)> = Vec::with_capacity(BATCH);
        let mut lens: Vec<usize> = Vec::with_capacity(BATCH);
        loop {
            if self.control.interrupt.load(Relaxed) {
                return Ok(());
            }
            let sending = !self.control.stop.load(Relaxed) && !self.cursor.exhausted();
            if !sending && self.tracker.in_flight() == 0 {
                return Ok(());
            }
            let now = since(self.begin);
            let room = self.window.saturating_sub(self.tracker.in_flight());
            let wait = if sending && room > 0 {
                match &self.pace {
                    Some(p) => Duration::from_nanos(p.next_ns().saturating_sub(now)),
                    None => Duration::ZERO,
                }
            } else {
                HEARTBEAT
            };
            let wait = match self.tracker.next_deadline() {
                Some(d) => wait.min(Duration::from_nanos(d.saturating_sub(now))),
                None => wait,
            }
            .min(HEARTBEAT);
            let n = sys::epoll_wait(epoll.as_raw_fd(), &mut ready, wait)?;
            for ev in &ready[..n] {
                let socket = ev.u64 as usize;
                loop {
                    let got = match inbox.recv(fds[socket]) {
                        Ok(got) => got,
                        // An ICMP error for an earlier query (port unreachable): the query
                        // it belonged to times out; the socket goes on.
                        Err(e) if is_icmp_error(&e) => continue,
                        Err(e) => return Err(e),
                    };
                    let now = since(self.begin);
                    for i in 0..got {
                        let msg = inbox.received(i);
                        let answered = self.tracker.answer(msg, socket as u16, now, &self.queries);
                        if let Answered::Completed { query, latency_ns, truncated } = answered {
                            local.pending.push(latency_ns);
                            if truncated {
                                if let Some(retry) = &self.retry {
                                    if retry.try_send(query).is_ok() {
                                        self.tracker.counts.tc_retried += 1;
                                    }
                                }
                            }
                        }
                    }
                    if got < inbox.capacity() {
                        break;
                    }
                }
            }
            let now = since(self.begin);
            self.tracker.expire(now);
            if sending {
                self.send_due(now, &fds, &mut out, &mut next_socket, &mut plan, &mut lens);
            }
            local.publish(&self.shared, &self.tracker.counts, now, false);
        }
    }

    /// Sends what the window and the schedule allow at `now`.
    fn send_due(
        &mut self,
        now: u64,
        fds: &[RawFd],
        out: &mut MsgBatch,
        next_socket: &mut usize,
        plan: &mut Vec<(u16, u32)>,
        lens: &mut Vec<usize>,
    ) {
        let room = u64::from(self.window.saturating_sub(self.tracker.in_flight()));
        let mut want = match &mut self.pace {
            Some(p) => {
                let (due, skipped) = p.due(now);
                if skipped > 0 {
                    self.tracker.counts.unsent += skipped;
                    // Skipped queries still use up the file, as if sent and dropped.
                    for _ in 0..skipped {
                        if self.cursor.next().is_none() {
                            break;
                        }
                    }
                }
                if p.is_open() && due > room {
                    // No ID free: the open loop cannot wait, so these are not sent.
                    let short = due - room;
                    self.tracker.counts.unsent += short;
                    p.consume(short);
                    for _ in 0..short {
                        if self.cursor.next().is_none() {
                            break;
                        }
                    }
                    room
                } else {
                    due.min(room)
                }
            }
            None => room,
        };
        let sockets = fds.len();
        let per_socket = (want as usize).div_ceil(sockets).max(1);
        let mut tried = 0;
        while want > 0 && tried < sockets {
            let socket = *next_socket;
            *next_socket = (socket + 1) % sockets;
            tried += 1;
            plan.clear();
            lens.clear();
            let take = per_socket.min(want as usize).min(BATCH);
            for slot in 0..take {
                let Some(id) = self.tracker.take_id() else { break };
                let Some(q) = self.cursor.next() else {
                    self.tracker.give_back(id);
                    break;
                };
                let template = &self.queries.get(q).bytes;
                let buf = out.buf_mut(slot);
                buf[..template.len()].copy_from_slice(template);
                set_id(buf, id);
                plan.push((id, q));
                lens.push(template.len());
            }
            if plan.is_empty() {
                break;
            }
            let sent_at = since(self.begin);
            let (sent, failed) = match out.send(fds[socket], lens) {
                Ok(n) => (n, false),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => (0, false),
                // The first message failed (a refused port, no route): it counts as a send
                // error and the rest wait for the next turn.
                Err(_) => (0, true),
            };
            for (i, &(id, q)) in plan.iter().enumerate().take(sent) {
                self.tracker.sent(id, q, socket as u16, sent_at, lens[i]);
            }
            let mut unsent = plan.len() - sent;
            if failed {
                self.tracker.counts.send_errors += 1;
                self.tracker.give_back(plan[0].0);
                unsent -= 1;
            }
            for &(id, _) in plan[plan.len() - unsent..].iter().rev() {
                self.tracker.give_back(id);
                self.cursor.undo();
            }
            let used = (sent + usize::from(failed)) as u64;
            if let Some(p) = &mut self.pace {
                p.consume(used);
            }
            want = want.saturating_sub(used);
            if unsent > 0 {
                break; // the socket is full or failing: try again next turn
            }
        }
    }
}

/// True for the errors a connected UDP socket reports when an ICMP error came back for an
/// earlier datagram.
pub(super) fn is_icmp_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN)
    )
}
