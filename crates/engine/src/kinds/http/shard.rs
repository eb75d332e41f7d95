//! One load thread: an edge-triggered epoll loop over its share of the connections, in one of
//! two models. Closed (`-c`): each connection has one request in flight and sends the next as
//! soon as the response is read. Open (`--rate`): requests fall due on a fixed schedule
//! whatever the server does; each goes out on an idle connection, or a new one up to the
//! thread's share of `--max-connections`, or waits (late) — and a request that waited longer
//! than the timeout is dropped and counted. Latency starts at the scheduled time, so a
//! stalled server shows in the percentiles instead of slowing the schedule down. It ends at
//! the kernel's receive stamp of the response's last bytes, so in the open model responses
//! need not wake the thread: it reads them when it wakes for the next request due.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};
use socket2::{Domain, SockAddr, Socket, Type};
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::member::Stripe;

use super::conn::{Conn, Mode, Phase, Step, Transport};
use super::counts::{Cause, ShardCounts, Tally};
use super::requests::RequestSet;
use super::results::ResultSink;
use super::step::{Running, FINISH_GRACE};
use crate::net::sys::{self, EpollOp};
use crate::run::budget::{fill_slots, share, Budget};
use crate::run::pacer::{CatchUp, Pacer};
use crate::run::threads::StreamThreads;

/// Where connections go.
pub(super) struct Peer {
    pub addr: SockAddr,
    /// TLS settings and the server name, for https://.
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
}

/// The open model's request schedule of one sender, on the step's clock: the one [`Pacer`],
/// every request keeping its due time however late it goes out (latency counts from it), and
/// nothing due at or after a timed step's end: R requests/s for D s is R × D requests, not one
/// more at the very end.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    begin: Instant,
    pacer: Pacer,
}

impl Schedule {
    /// The schedule of thread `thread` of `threads` sharing `rate` requests/s in a step of
    /// `spec` that began at `begin`: each thread at its share, staggered by one request — of
    /// this process's `stripe` of the whole run's schedule, when it is one member of several.
    pub(super) fn new(
        spec: &HttpSpec,
        begin: Instant,
        rate: f64,
        thread: u16,
        threads: u16,
        stripe: Stripe,
    ) -> Self {
        let offset_ns = stripe.offset_ns(rate, u64::from(thread));
        let mut pacer = Pacer::new(rate / f64::from(threads), offset_ns, CatchUp::Keep);
        if spec.count.is_none() {
            pacer = pacer.ending_at(spec.total_ns());
        }
        Self { begin, pacer }
    }

    /// When the next request falls due; `None` past the end of a timed step.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.pacer.next_due_ns().map(|ns| self.begin + Duration::from_nanos(ns))
    }

    /// Books the next request: it went out, or was given up on.
    pub(super) fn book(&mut self) {
        self.pacer.book(1);
    }
}

/// The key of the open model's arrivals set in the thread's own epoll set (while it wakes the
/// thread): no connection's slot.
const ARRIVALS: u64 = u64::MAX;

/// What every connection's responses are watched for in the open model's arrivals set.
const ARRIVING: libc::c_int = libc::EPOLLIN | libc::EPOLLET | libc::EPOLLRDHUP;

/// What a connection is doing after an event.
enum After {
    Busy,
    Idle,
    Gone,
}

/// One thread's connections and what it counts.
pub(super) struct Shard {
    pub peer: Arc<Peer>,
    pub set: Arc<RequestSet>,
    pub mode: Mode,
    pub keepalive: bool,
    pub max_redirects: u8,
    /// Connections this thread may hold.
    pub slots: usize,
    pub schedule: Option<Schedule>,
    pub counts: Arc<ShardCounts>,
    pub stop: Arc<AtomicBool>,
    pub budget: Budget,
    /// Where each request's record goes (`--format vegeta`).
    pub results: Option<ResultSink>,
    /// Next request of the set (round-robin).
    pub next: Cell<usize>,
    /// Counted here first and published to `counts` every 10 ms: no lock per request.
    pub tally: RefCell<Tally>,
    /// This thread's epoll descriptor, once its loop has started.
    pub epoll: Cell<libc::c_int>,
    /// The open model's second epoll set, where responses arrive (-1 in the closed model). It
    /// is read whenever the thread wakes, and does not itself wake the thread while requests
    /// keep falling due: a response's latency ends at the kernel's receive stamp, not when it
    /// is read, so one wake-up per request (when it falls due) is enough instead of two.
    pub arrivals: Cell<libc::c_int>,
    /// Whether arrivals wake the thread: at the end of the schedule, and for good once a
    /// response took more than one read (a large one, which must not wait in the socket
    /// until the next request falls due).
    pub eager: Cell<bool>,
}

impl Shard {
    /// Runs until stopped or, with a count, until every request has ended.
    pub(super) fn run(&self) -> io::Result<()> {
        if self.schedule.is_some() {
            sys::tighten_timer_slack();
            self.run_open()
        } else {
            self.run_closed()
        }
    }

    /// Moves what this thread counted since the last call to where the sampler reads it.
    pub(super) fn publish(&self) {
        self.tally.borrow_mut().publish();
    }

    /// What this thread's own epoll set watches on a connection: hang-ups always, writable
    /// when `writable`, and readable, except in the open model while a response is awaited
    /// or the connection idles (the arrivals set hears of those).
    fn events(&self, writable: bool) -> libc::c_int {
        let mut events = libc::EPOLLET | libc::EPOLLRDHUP;
        if writable {
            events |= libc::EPOLLOUT | libc::EPOLLIN;
        } else if !self.mode.open {
            events |= libc::EPOLLIN;
        }
        events
    }

    /// Moves connection `i` on after an event (from either epoll set) and files it as idle or
    /// free. A slot already emptied by the other set's event in the same wake-up is left alone.
    fn on_event(
        &self,
        i: usize,
        conns: &mut [Option<Conn>],
        idle: &mut Vec<usize>,
        free: &mut Vec<usize>,
        scratch: &mut [u8],
    ) {
        let Some(conn) = conns[i].as_ref() else { return };
        let was_idle = conn.phase == Phase::Idle;
        match self.advance(&mut conns[i], scratch) {
            After::Idle if !was_idle => idle.push(i),
            After::Gone => {
                idle.retain(|&j| j != i);
                free.push(i);
            }
            _ => {}
        }
    }

    /// Reads every response that arrived since the last look (the open model's arrivals set,
    /// without waiting).
    fn collect(
        &self,
        conns: &mut [Option<Conn>],
        ready: &mut [libc::epoll_event],
        idle: &mut Vec<usize>,
        free: &mut Vec<usize>,
        scratch: &mut [u8],
    ) -> io::Result<()> {
        loop {
            let n = sys::epoll_wait(self.arrivals.get(), ready, Duration::ZERO)?;
            for ev in &ready[..n] {
                self.on_event(ev.u64 as usize, conns, idle, free, scratch);
            }
            if n < ready.len() {
                return Ok(());
            }
        }
    }

    fn next_request(&self) -> usize {
        let i = self.next.get();
        self.next.set(if i + 1 >= self.set.len() { 0 } else { i + 1 });
        i
    }

    /// Counts request `request` (due or sent at `started`) as failed, and records it.
    fn failed(&self, cause: Cause, detail: Option<String>, request: usize, started: Instant) {
        if let Some(sink) = &self.results {
            let out = self.set.requests[request].body.len() as u64;
            sink.emit(request, started, started.elapsed(), 0, (out, 0), Some(cause.name()));
        }
        let mut tally = self.tally.borrow_mut();
        tally.totals.fail(cause);
        if tally.totals.tls_error.is_none() {
            tally.totals.tls_error = detail;
        }
    }

    fn run_closed(&self) -> io::Result<()> {
        let epoll = sys::epoll()?;
        self.epoll.set(epoll.as_raw_fd());
        let mut conns: Vec<Option<Conn>> = (0..self.slots).map(|_| None).collect();
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; self.slots.max(1)];
        let mut scratch = vec![0u8; 64 * 1024];
        let mut exhausted = false;
        let mut last_sweep = Instant::now();
        while !self.stop.load(Relaxed) {
            fill_slots(&mut conns, &self.budget, &mut exhausted, &self.stop, |i| {
                self.open(epoll.as_raw_fd(), i, Instant::now())
            });
            if exhausted && conns.iter().all(Option::is_none) {
                break;
            }
            let n = sys::epoll_wait(epoll.as_raw_fd(), &mut ready, Duration::from_millis(10))?;
            for ev in &ready[..n] {
                let slot = &mut conns[ev.u64 as usize];
                // Through as many requests as complete at once on this connection.
                while let After::Idle = self.advance(slot, &mut scratch) {
                    let Some(conn) = slot.as_mut() else { break };
                    if exhausted || self.stop.load(Relaxed) || !self.budget.claim() {
                        exhausted |= !self.stop.load(Relaxed);
                        *slot = None;
                        break;
                    }
                    conn.start(
                        self.next_request(),
                        Instant::now(),
                        self.mode,
                        &mut self.tally.borrow_mut(),
                    );
                }
            }
            self.sweep(&mut conns, &mut last_sweep, |_| {});
        }
        Ok(())
    }

    fn run_open(&self) -> io::Result<()> {
        let Some(mut schedule) = self.schedule.clone() else { return Ok(()) };
        let epoll = sys::epoll()?;
        let arrivals = sys::epoll()?;
        self.epoll.set(epoll.as_raw_fd());
        self.arrivals.set(arrivals.as_raw_fd());
        let mut conns: Vec<Option<Conn>> = (0..self.slots).map(|_| None).collect();
        let mut free: Vec<usize> = (0..self.slots).rev().collect();
        let mut idle: Vec<usize> = Vec::new();
        let mut pending: VecDeque<Instant> = VecDeque::new();
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; self.slots.clamp(1, 1024)];
        let mut scratch = vec![0u8; 64 * 1024];
        let mut exhausted = false;
        let mut waking = false;
        let mut last_sweep = Instant::now();
        // Set when the step is stopped: when it was, and how long its last requests may take
        // to go out.
        let mut finishing: Option<(Instant, Instant)> = None;
        loop {
            let now = Instant::now();
            if finishing.is_none() && self.stop.load(Relaxed) {
                finishing = Some((now, now + FINISH_GRACE.min(self.mode.timeout)));
            }
            // Once stopped, what fell due before the stop still goes out (late), and nothing
            // after it: a thread that woke after the end must not lose the last requests.
            let horizon = finishing.map_or(now, |(stopped, _)| stopped);
            while !exhausted {
                let Some(due) = schedule.next_due().filter(|d| *d <= horizon) else {
                    // Not due yet, or past the step's end (then nothing more falls due).
                    exhausted = schedule.next_due().is_none();
                    break;
                };
                if !self.budget.claim() {
                    exhausted = true;
                    break;
                }
                pending.push_back(due);
                schedule.book();
            }
            // A request that could not get a connection within the timeout is given up.
            while let Some(due) =
                pending.front().copied().filter(|&due| now.duration_since(due) > self.mode.timeout)
            {
                pending.pop_front();
                self.failed(Cause::Dropped, None, self.next.get(), due);
            }
            while let Some(&due) = pending.front() {
                if let Some(i) = idle.pop() {
                    let Some(conn) = conns[i].as_mut() else { continue };
                    conn.start(self.next_request(), due, self.mode, &mut self.tally.borrow_mut());
                    match self.advance(&mut conns[i], &mut scratch) {
                        After::Idle => idle.push(i),
                        After::Gone => free.push(i),
                        After::Busy => {}
                    }
                } else if let Some(i) = free.pop() {
                    conns[i] = self.open(epoll.as_raw_fd(), i, due);
                    if conns[i].is_none() {
                        free.push(i);
                    }
                } else {
                    break;
                }
                pending.pop_front();
            }
            if let Some((_, by)) = finishing {
                // Every request due before the stop is written (its response is not waited
                // for), or failed by the usual rules; what the grace did not see out is dropped.
                let unwritten =
                    |c: &Conn| matches!(c.phase, Phase::Connecting | Phase::Handshaking);
                if pending.is_empty() && !conns.iter().flatten().any(unwritten) {
                    break;
                }
                if now >= by {
                    for due in pending.drain(..) {
                        self.failed(Cause::Dropped, None, self.next.get(), due);
                    }
                    for conn in conns.iter().flatten().filter(|c| unwritten(c)) {
                        self.failed(Cause::Dropped, None, conn.request, conn.scheduled);
                    }
                    break;
                }
            } else if exhausted && pending.is_empty() && free.len() + idle.len() == self.slots {
                break;
            }
            // Once nothing more falls due, or the step is finishing, the responses still out
            // are what the thread waits for: they wake it.
            let eager = exhausted || finishing.is_some() || self.eager.get();
            if eager != waking {
                let fd = arrivals.as_raw_fd();
                if eager {
                    sys::epoll_ctl(epoll.as_raw_fd(), EpollOp::Add, fd, ARRIVALS, libc::EPOLLIN)?;
                } else {
                    sys::epoll_ctl(epoll.as_raw_fd(), EpollOp::Delete, fd, 0, 0)?;
                }
                waking = eager;
            }
            // Sleep until the next request is due, or 10 ms for the sweep.
            let next = schedule
                .next_due()
                .filter(|_| !exhausted)
                .unwrap_or(now + Duration::from_millis(10));
            let wait =
                next.saturating_duration_since(Instant::now()).min(Duration::from_millis(10));
            let n = sys::epoll_wait(epoll.as_raw_fd(), &mut ready, wait)?;
            for ev in &ready[..n] {
                if ev.u64 != ARRIVALS {
                    self.on_event(ev.u64 as usize, &mut conns, &mut idle, &mut free, &mut scratch);
                }
            }
            // The responses that came in meanwhile, before the sweep judges deadlines.
            self.collect(&mut conns, &mut ready, &mut idle, &mut free, &mut scratch)?;
            self.sweep(&mut conns, &mut last_sweep, |i| free.push(i));
        }
        Ok(())
    }

    /// Every 10 ms: publish the tally and time out requests past their deadline.
    fn sweep(&self, conns: &mut [Option<Conn>], last: &mut Instant, mut freed: impl FnMut(usize)) {
        let now = Instant::now();
        if now.duration_since(*last) < Duration::from_millis(10) {
            return;
        }
        *last = now;
        self.publish();
        for (i, slot) in conns.iter_mut().enumerate() {
            let Some(conn) = slot.as_ref() else { continue };
            if conn.phase == Phase::Idle || now < conn.deadline {
                continue;
            }
            let cause = match conn.phase {
                Phase::Connecting | Phase::Handshaking => Cause::ConnectTimeout,
                _ => Cause::Timeout,
            };
            self.failed(cause, None, conn.request, conn.scheduled);
            *slot = None;
            freed(i);
        }
    }

    /// Opens a connection for a request scheduled at `scheduled`; `None` when that failed at
    /// once (counted).
    fn open(&self, epoll: libc::c_int, slot: usize, scheduled: Instant) -> Option<Conn> {
        let request = self.next_request();
        let fail = |e: &io::Error| {
            self.failed(Cause::of(e, true), None, request, scheduled);
            None
        };
        let domain = self.peer.addr.domain();
        let socket = match Socket::new(domain, Type::STREAM.nonblocking(), None) {
            Ok(s) => s,
            Err(e) => return fail(&e),
        };
        if domain != Domain::UNIX {
            let _ = socket.set_tcp_nodelay(true);
        }
        let connected = match socket.connect(&self.peer.addr) {
            Ok(()) => true,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => false,
            Err(e) => return fail(&e),
        };
        let tls = match &self.peer.tls {
            None => None,
            Some((config, name)) => match ClientConnection::new(config.clone(), name.clone()) {
                Ok(c) => Some(Box::new(c)),
                Err(e) => {
                    self.failed(Cause::Tls, Some(e.to_string()), request, scheduled);
                    return None;
                }
            },
        };
        let (fd, key) = (socket.as_raw_fd(), slot as u64);
        let watched = sys::epoll_ctl(epoll, EpollOp::Add, fd, key, self.events(true)).and_then(
            |()| match self.arrivals.get() {
                -1 => Ok(()),
                arrivals => sys::epoll_ctl(arrivals, EpollOp::Add, fd, key, ARRIVING),
            },
        );
        if let Err(e) = watched {
            return fail(&e);
        }
        self.tally.borrow_mut().totals.connections += 1;
        let mut conn = Conn::new(Transport::new(socket, tls), connected, request, scheduled);
        conn.deadline = conn.opened + self.mode.timeout;
        conn.slot = slot as u64;
        conn.watching_writable = true;
        Some(conn)
    }

    /// Drives a connection after an event until it waits, idles or ends.
    fn advance(&self, slot: &mut Option<Conn>, scratch: &mut [u8]) -> After {
        loop {
            let Some(conn) = slot.as_mut() else { return After::Gone };
            let step = conn.step(&self.set, self.mode, &mut self.tally.borrow_mut(), scratch);
            if let Step::Wait = step {
                // Writability is watched only while there is something to write: a socket
                // that is always writable would wake the loop for every ACK.
                let want = conn.wants_writable();
                if want != conn.watching_writable {
                    let (fd, slot_id) = (conn.io.socket.as_raw_fd(), conn.slot);
                    let events = self.events(want);
                    if let Err(e) =
                        sys::epoll_ctl(self.epoll.get(), EpollOp::Modify, fd, slot_id, events)
                    {
                        self.failed(Cause::of(&e, false), None, conn.request, conn.scheduled);
                        *slot = None;
                        return After::Gone;
                    }
                    conn.watching_writable = want;
                }
            }
            match step {
                Step::Wait if conn.phase == Phase::Idle => return After::Idle,
                Step::Wait => return After::Busy,
                Step::PeerClosed => {
                    *slot = None;
                    return After::Gone;
                }
                Step::Failed(cause, detail) => {
                    self.failed(cause, detail, conn.request, conn.scheduled);
                    *slot = None;
                    return After::Gone;
                }
                Step::Done { head, bytes_in } => {
                    self.tally.borrow_mut().totals.bytes_in += bytes_in;
                    if conn.reads > 1 {
                        self.eager.set(true);
                    }
                    if self.max_redirects > 0 && matches!(head.status, 301 | 302 | 303 | 307 | 308)
                    {
                        match self.redirect_target(conn, head.keep_alive) {
                            Some((bytes, url, is_head)) => {
                                conn.follow(bytes, url, is_head, self.mode);
                                continue;
                            }
                            None => {
                                self.failed(Cause::Redirect, None, conn.request, conn.scheduled);
                                *slot = None;
                                return After::Gone;
                            }
                        }
                    }
                    let took = conn.arrived.saturating_duration_since(conn.scheduled);
                    if let Some(sink) = &self.results {
                        let out = self.set.requests[conn.request].body.len() as u64;
                        let body = bytes_in.saturating_sub(head.len as u64);
                        let (request, status) = (conn.request, head.status);
                        sink.emit(request, conn.scheduled, took, status, (out, body), None);
                    }
                    // (Its bytes went into the thread's totals as the response ended, above.)
                    self.counts.respond(took.as_nanos() as u64, head.status, 0);
                    // The open model keeps a connection while it finishes: a request due
                    // before the stop may still need it.
                    let stopping = !self.mode.open && self.stop.load(Relaxed);
                    if self.keepalive && head.keep_alive && !stopping {
                        conn.phase = Phase::Idle;
                        return After::Idle;
                    }
                    *slot = None;
                    return After::Gone;
                }
            }
        }
    }

    /// The request a redirect asks for, when it may be followed on this connection: within
    /// `--follow` hops, to the same origin, on a connection that stays open.
    fn redirect_target(
        &self,
        conn: &Conn,
        keep_alive: bool,
    ) -> Option<(Vec<u8>, wirespeed_proto::http_url::HttpUrl, bool)> {
        if conn.hops >= self.max_redirects || !keep_alive {
            return None;
        }
        let here = conn.url(&self.set);
        let to = here.join(conn.location()?).ok()?;
        if to.origin() != here.origin() {
            return None;
        }
        let status = conn.head_status()?;
        let (bytes, is_head) = self.set.redirected(conn.request, status, &to);
        Some((bytes, to, is_head))
    }
}

/// Starts the HTTP/1.1 threads of one step (`rate`: the open model's, or `None`).
pub(super) fn start(
    spec: &HttpSpec,
    peer: &Arc<Peer>,
    set: &Arc<RequestSet>,
    (rate, stripe): (Option<f64>, Stripe),
    results: Option<ResultSink>,
) -> io::Result<Running> {
    let stop = Arc::new(AtomicBool::new(false));
    let budget = Budget::new(spec.count);
    let begin = Instant::now();
    let pool = if rate.is_some() { spec.max_connections } else { spec.connections };
    let threads = spec.threads.clamp(1, pool);
    let (mut counts, mut handles) = (Vec::new(), Vec::new());
    for i in 0..threads {
        let c = Arc::new(ShardCounts::default());
        let schedule = rate.map(|r| Schedule::new(spec, begin, r, i, threads, stripe));
        let shard = Shard {
            peer: peer.clone(),
            set: set.clone(),
            mode: Mode { open: rate.is_some(), timeout: Duration::from_nanos(spec.timeout_ns) },
            keepalive: spec.keepalive,
            max_redirects: spec.max_redirects,
            slots: share(pool, threads, i),
            schedule,
            counts: c.clone(),
            stop: stop.clone(),
            budget: budget.clone(),
            results: results.clone(),
            // Threads start at different requests of a targets file.
            next: Cell::new(usize::from(i) % set.len().max(1)),
            tally: RefCell::new(Tally::new(c.clone())),
            epoll: Cell::new(-1),
            arrivals: Cell::new(-1),
            eager: Cell::new(false),
        };
        handles.push(std::thread::Builder::new().name(format!("ws-http-{}", i + 1)).spawn(
            move || {
                if let Err(e) = shard.run() {
                    tracing::warn!("HTTP thread failed: {e}");
                }
                // Whatever was counted since the last publish, before saying we are done.
                shard.publish();
                shard.counts.done.store(true, Relaxed);
                sys::thread_cpu_ns()
            },
        )?);
        counts.push(c);
    }
    let threads = StreamThreads { stop, sockets: Vec::new(), handles };
    Ok(Running { begin, counts, stopper: Box::new(threads) })
}
