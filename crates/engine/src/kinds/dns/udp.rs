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
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wirespeed_proto::dns::wire::set_id;

use super::queries::Cursor;
use super::shared::{since, Local, Part};
use super::tracker::Answered;
use crate::net::mmsg::MsgBatch;
use crate::net::sys::{self, EpollOp};
use crate::run::pacer::Due;

/// Datagrams per system call.
const BATCH: usize = 32;
/// Largest query a template can be (a 255-byte name, header, question and OPT).
const QUERY_BUF: usize = 320;
/// Largest answer read whole (the biggest UDP payload).
const ANSWER_BUF: usize = 65_535;
/// The shortest nap worth taking while the window refills: below it, a sleep costs about
/// what it saves, and waiting on epoll wakes the thread as the first answer lands.
const MIN_NAP: Duration = Duration::from_micros(40);
/// Longest sleep between looks at the run's flags.
const HEARTBEAT: Duration = Duration::from_millis(10);

/// One UDP worker thread's share of the test.
pub(super) struct UdpWorker {
    pub sockets: Vec<UdpSocket>,
    pub cursor: Cursor,
    /// What every worker has: queries, window, schedule, tracker, flags.
    pub part: Part,
    /// Where truncated answers go to be asked again over TCP (`--tc-retry`).
    pub retry: Option<mpsc::Sender<u32>>,
    /// Send runs of equal-length queries with UDP GSO (cleared where the kernel refuses).
    pub gso: bool,
    /// Where a GSO run is packed.
    pub gso_buf: Vec<u8>,
}

impl UdpWorker {
    /// Runs until this worker's queries are sent and answered or timed out, or the run is
    /// stopped; publishes its counts for the last time and marks itself done.
    pub(super) fn run(mut self) -> io::Result<()> {
        let mut local = Local::new();
        let result = self.turns(&mut local);
        let now = since(self.part.begin);
        if self.part.control.interrupt.load(Relaxed) {
            self.part.tracker.abandon(true);
        } else {
            self.part.tracker.expire(now);
        }
        self.part.shared.finish(&mut local, &self.part.tracker.counts, now);
        result
    }

    fn turns(&mut self, local: &mut Local) -> io::Result<()> {
        let epoll = self.watch()?;
        let fds: Vec<RawFd> = self.sockets.iter().map(|s| s.as_raw_fd()).collect();
        // Kernel receive times: the latency then ends when the answer arrived, not when this
        // thread got round to reading it (it may be sleeping while the window refills).
        let stamped = fds.iter().all(|&fd| sys::enable_rx_timestamps(fd));
        sys::tighten_timer_slack();
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().min(256)];
        let mut out = MsgBatch::new(BATCH, QUERY_BUF, false);
        let mut inbox = MsgBatch::new(BATCH, ANSWER_BUF, false);
        if stamped {
            inbox = inbox.stamped();
        }
        // How long an answer takes, smoothed: with the queries in flight it says how soon the
        // window will have room again.
        let mut latency_ewma = 0f64;
        let mut next_socket = 0usize;
        let mut plan: Vec<(u16, u32)> = Vec::with_capacity(BATCH);
        let mut lens: Vec<usize> = Vec::with_capacity(BATCH);
        loop {
            if self.part.control.interrupt.load(Relaxed) {
                return Ok(());
            }
            let sending = !self.part.control.stop.load(Relaxed) && !self.cursor.exhausted();
            if !sending && self.part.tracker.in_flight() == 0 {
                return Ok(());
            }
            let wait = self.wait(sending, since(self.part.begin));
            // A window that is filling up again is not woken for every answer: the thread
            // sleeps about as long as the answers it waits for take to come, then reads them
            // all at once (their kernel receive times keep the latency exact). Each wake-up
            // saved is one the server's sending CPU does not pay for either.
            let nap = if sending && stamped { self.nap(latency_ewma) } else { None };
            let n = match nap {
                Some(nap) => {
                    std::thread::sleep(nap.min(wait));
                    sys::epoll_wait(epoll.as_raw_fd(), &mut ready, Duration::ZERO)?
                }
                None => sys::epoll_wait(epoll.as_raw_fd(), &mut ready, wait)?,
            };
            for ev in &ready[..n] {
                let socket = ev.u64 as usize;
                self.read_answers(socket, fds[socket], &mut inbox, local, &mut latency_ewma)?;
            }
            let now = since(self.part.begin);
            self.part.tracker.expire(now);
            let room = self.part.window.saturating_sub(self.part.tracker.in_flight());
            if sending && room >= self.min_send() {
                self.send_due(now, &fds, &mut out, &mut next_socket, &mut plan, &mut lens);
            }
            local.publish(&self.part.shared, &self.part.tracker.counts, now, false);
        }
    }

    /// An epoll instance watching every socket for answers.
    fn watch(&self) -> io::Result<std::os::fd::OwnedFd> {
        let epoll = sys::epoll()?;
        for (i, s) in self.sockets.iter().enumerate() {
            let (epoll, socket) = (epoll.as_raw_fd(), s.as_raw_fd());
            sys::epoll_ctl(epoll, EpollOp::Add, socket, i as u64, libc::EPOLLIN)?;
        }
        Ok(epoll)
    }

    /// How long this turn may wait for answers: not at all when queries may go now, until
    /// the next is due on a schedule, at most until the next timeout, and never more than
    /// the heartbeat.
    fn wait(&self, sending: bool, now: u64) -> Duration {
        let room = self.part.window.saturating_sub(self.part.tracker.in_flight());
        let wait = if sending && room >= self.min_send() {
            match &self.part.pace {
                Some(p) => {
                    Duration::from_nanos(p.next_due_ns().unwrap_or(u64::MAX).saturating_sub(now))
                }
                None => Duration::ZERO,
            }
        } else {
            HEARTBEAT
        };
        match self.part.tracker.next_deadline() {
            Some(d) => wait.min(Duration::from_nanos(d.saturating_sub(now))),
            None => wait,
        }
        .min(HEARTBEAT)
    }

    /// In the closed loop, with a window of 8 or more short of room for a send, the nap
    /// until about enough answers are in (at most 1 ms); none when it would be too short to
    /// be worth it (or latency is not known yet).
    fn nap(&self, latency_ewma: f64) -> Option<Duration> {
        let room = self.part.window.saturating_sub(self.part.tracker.in_flight());
        let need = self.min_send().saturating_sub(room);
        if need == 0 || self.part.pace.is_some() || self.part.window < 8 || latency_ewma <= 0.0 {
            return None;
        }
        let per_answer = latency_ewma / f64::from(self.part.tracker.in_flight().max(1));
        let nap = Duration::from_nanos((per_answer * f64::from(need)) as u64);
        (nap >= MIN_NAP).then(|| nap.min(Duration::from_millis(1)))
    }

    /// Reads every answer waiting on one socket, completing its queries; a truncated answer
    /// goes to the TC retry client when there is one.
    fn read_answers(
        &mut self,
        socket: usize,
        fd: RawFd,
        inbox: &mut MsgBatch,
        local: &mut Local,
        latency_ewma: &mut f64,
    ) -> io::Result<()> {
        loop {
            let got = match inbox.recv(fd) {
                Ok(got) => got,
                // An ICMP error for an earlier query (port unreachable): the query it belonged
                // to times out; the socket goes on.
                Err(e) if is_icmp_error(&e) => continue,
                Err(e) => return Err(e),
            };
            let (now, offset) = clock_offset(self.part.begin);
            for i in 0..got {
                let at = inbox.stamp_ns(i).map_or(now, |t| ((t - offset).max(0) as u64).min(now));
                let msg = inbox.received(i);
                let answered = self.part.tracker.answer_stamped(
                    msg,
                    socket as u16,
                    (at, now),
                    &self.part.queries,
                );
                if let Answered::Completed { query, latency_ns, truncated } = answered {
                    local.pending.push(latency_ns);
                    *latency_ewma = if *latency_ewma == 0.0 {
                        latency_ns as f64
                    } else {
                        *latency_ewma + (latency_ns as f64 - *latency_ewma) / 16.0
                    };
                    if truncated {
                        if let Some(retry) = &self.retry {
                            if retry.try_send(query).is_ok() {
                                self.part.tracker.counts.tc_retried += 1;
                            }
                        }
                    }
                }
            }
            if got < inbox.capacity() {
                return Ok(());
            }
        }
    }

    /// The fewest free places in the window worth a send in the closed loop: a quarter of
    /// the window, at most a batch. Topping the window up one answer at a time would cost a
    /// system call per query; a window three-quarters full still keeps the server as busy.
    /// A paced worker (`-Q`, `--rate`) sends on its schedule.
    fn min_send(&self) -> u32 {
        if self.part.pace.is_some() {
            1
        } else {
            (self.part.window / 4).clamp(1, BATCH as u32)
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
        let room = u64::from(self.part.window.saturating_sub(self.part.tracker.in_flight()));
        let mut want = match &mut self.part.pace {
            Some(p) => {
                let Due { count: due, skipped } = p.due(now);
                if skipped > 0 {
                    self.part.tracker.counts.unsent += skipped;
                    // Skipped queries still use up the file, as if sent and dropped.
                    for _ in 0..skipped {
                        if self.cursor.next().is_none() {
                            break;
                        }
                    }
                }
                if p.skips_counted() && due > room {
                    // No ID free: the open loop cannot wait, so these are not sent.
                    let short = due - room;
                    self.part.tracker.counts.unsent += short;
                    p.book(short);
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
        // Each socket in turn takes up to a batch: one system call, and runs of equal-length
        // queries for GSO, instead of a query per socket.
        let sockets = fds.len();
        let per_socket = BATCH;
        while want > 0 {
            let socket = *next_socket;
            *next_socket = (socket + 1) % sockets;
            plan.clear();
            for _ in 0..per_socket.min(want as usize).min(BATCH) {
                let Some(id) = self.part.tracker.take_id() else { break };
                let Some(q) = self.cursor.next() else {
                    self.part.tracker.give_back(id);
                    break;
                };
                plan.push((id, q));
            }
            if plan.is_empty() {
                break;
            }
            let sent = self.send_plan(fds[socket], socket as u16, out, plan, lens);
            if let Some(p) = &mut self.part.pace {
                p.book(plan.len() as u64);
            }
            want = want.saturating_sub(plan.len() as u64);
            if sent < plan.len() {
                break; // the socket is full or failing: try again next turn
            }
        }
    }

    /// Sends the queries of `plan` on one socket; returns how many left. Queries of equal
    /// length go out as one UDP GSO send (the kernel walks its stack once for the whole
    /// run and splits it into datagrams at the receiver), the rest in one `sendmmsg`. A query
    /// the kernel would not take counts as a send error and gives its ID back.
    fn send_plan(
        &mut self,
        fd: RawFd,
        socket: u16,
        out: &mut MsgBatch,
        plan: &mut [(u16, u32)],
        lens: &mut Vec<usize>,
    ) -> usize {
        let queries = self.part.queries.clone();
        let len_of = |q: u32| queries.get(q).bytes.len();
        plan.sort_by_key(|&(_, q)| len_of(q));
        let mut sent = 0;
        let mut singles: Vec<(u16, u32)> = Vec::new();
        let mut i = 0;
        while i < plan.len() {
            let len = len_of(plan[i].1);
            let run = plan[i..].iter().take_while(|&&(_, q)| len_of(q) == len).count();
            let group = &plan[i..i + run];
            i += run;
            if run < 2 || !self.gso {
                singles.extend_from_slice(group);
                continue;
            }
            self.gso_buf.clear();
            for &(id, q) in group {
                let at = self.gso_buf.len();
                self.gso_buf.extend_from_slice(&queries.get(q).bytes);
                set_id(&mut self.gso_buf[at..], id);
            }
            let sent_at = since(self.part.begin);
            match sys::send_gso(fd, &self.gso_buf, len as u16) {
                Ok(_) => {
                    for &(id, q) in group {
                        self.part.tracker.sent(id, q, socket, sent_at, len);
                    }
                    sent += run;
                }
                // No UDP GSO here (an old kernel, a device without it): per datagram from now on.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT)
                    ) =>
                {
                    self.gso = false;
                    singles.extend_from_slice(group);
                }
                Err(_) => self.failed(group),
            }
        }
        for chunk in singles.chunks(out.capacity()) {
            lens.clear();
            for (slot, &(id, q)) in chunk.iter().enumerate() {
                let template = &queries.get(q).bytes;
                let buf = out.buf_mut(slot);
                buf[..template.len()].copy_from_slice(template);
                set_id(buf, id);
                lens.push(template.len());
            }
            let sent_at = since(self.part.begin);
            let n = out.send(fd, lens).unwrap_or(0);
            for (k, &(id, q)) in chunk.iter().enumerate().take(n) {
                self.part.tracker.sent(id, q, socket, sent_at, lens[k]);
            }
            sent += n;
            self.failed(&chunk[n..]);
        }
        sent
    }

    /// Counts queries the kernel would not send and frees their IDs.
    fn failed(&mut self, group: &[(u16, u32)]) {
        for &(id, _) in group {
            self.part.tracker.counts.send_errors += 1;
            self.part.tracker.give_back(id);
        }
    }
}

/// Now on the run's monotonic clock, and what to subtract from a wall-clock time (a kernel
/// receive stamp) to put it on that clock. The monotonic reading is taken between two
/// wall-clock ones; a pair more than 5 µs apart (the thread was preempted between them, which
/// would shift every stamp of the batch) is read again.
fn clock_offset(begin: Instant) -> (u64, i64) {
    let (now, wall) = sys::paired_clocks();
    let mono = now.saturating_duration_since(begin).as_nanos() as u64;
    (mono, wall - mono as i64)
}

/// True for the errors a connected UDP socket reports when an ICMP error came back for an
/// earlier datagram.
pub(super) fn is_icmp_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_stamp_lands_on_the_monotonic_clock() {
        let begin = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let (now, offset) = clock_offset(begin);
        let stamp = sys::realtime_ns();
        let moved = (stamp - offset) as u64;
        // Taken just after `now`: on the same clock it is no earlier, and only a little later
        // (a loaded machine may preempt the test between the two; 50 ms is far beyond that).
        assert!(moved + 5_000 >= now && moved < now + 50_000_000, "{now} {moved}");
    }
}
