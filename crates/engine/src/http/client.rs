//! The HTTP load generator's closed model: `-t` threads share `-c` connections, each with one
//! request in flight; the next request leaves as soon as the response has been read. Each
//! thread runs one edge-triggered epoll loop over its connections, writes request bytes
//! built once, and reads responses with the sans-I/O parser in `wirespeed_proto::http1`
//! (nothing is copied but the head). Latency is from the request's first byte written to the
//! response's last byte read; failures are counted by cause and the connection is replaced.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use socket2::{Domain, SockAddr, Socket, Type};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::http::{HttpInterval, HttpReport, HttpSpec, HttpSummary};
use wirespeed_model::latency::RttHistogram;
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::codec::DecodeError;
use wirespeed_proto::http1::{parse_head, ChunkedScanner, Framing, ResponseHead, MAX_HEAD};

use crate::budget::{fill_slots, share, Budget};
use crate::error::ClientError;
use crate::handshake::{self, Family};
use crate::intervals::{self, Sampler};
use crate::latency::StreamThreads;
use crate::ping::probes::HttpTarget;
use crate::sys;

/// Everything an HTTP load test needs.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The test.
    pub spec: HttpSpec,
    /// The body each request carries (`spec.body_bytes` long).
    pub body: Vec<u8>,
    /// Restrict the target's address to one IP version.
    pub family: Option<Family>,
    /// This client's version, for the report and the User-Agent.
    pub version: String,
}

/// Why a request got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Refused,
    ConnectTimeout,
    Unreachable,
    Timeout,
    Reset,
    Closed,
    Invalid,
    Other,
}

impl Cause {
    const ALL: [Cause; 8] = [
        Cause::Refused,
        Cause::ConnectTimeout,
        Cause::Unreachable,
        Cause::Timeout,
        Cause::Reset,
        Cause::Closed,
        Cause::Invalid,
        Cause::Other,
    ];

    fn name(self) -> &'static str {
        match self {
            Cause::Refused => "connection refused",
            Cause::ConnectTimeout => "connect timeout",
            Cause::Unreachable => "unreachable",
            Cause::Timeout => "timeout",
            Cause::Reset => "connection reset",
            Cause::Closed => "closed before the response ended",
            Cause::Invalid => "invalid response",
            Cause::Other => "other",
        }
    }

    fn of(e: &io::Error, connecting: bool) -> Cause {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => Cause::Refused,
            Some(libc::ETIMEDOUT) if connecting => Cause::ConnectTimeout,
            Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => Cause::Unreachable,
            Some(libc::ECONNRESET | libc::EPIPE) => Cause::Reset,
            _ => Cause::Other,
        }
    }
}

/// Runs one closed-model HTTP load test and returns its report.
pub async fn run(
    opts: HttpOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let spec = opts.spec.clone();
    let start_wall = SystemTime::now();
    let target = HttpTarget::parse(&spec.url).map_err(|m| ClientError::Local {
        context: "the URL".into(),
        cause: io::Error::new(io::ErrorKind::InvalidInput, m),
    })?;
    let addr = handshake::resolve(&target.host, target.port, opts.family).await?[0];
    let request = Arc::new(request_bytes(&spec, &target, &opts.body, &opts.version));
    let meta = handshake::run_meta(&opts.version, start_wall, Some(addr));
    let Shards { threads, begin, counts } =
        Shards::start(&spec, addr, request).map_err(ClientError::local("starting threads"))?;
    let _ = events.send(Event::Start { spec: TestSpec::Http(spec.clone()), meta: meta.clone() });
    let mut sampler = HttpSampler {
        counts: &counts,
        spec: &spec,
        events: &events,
        total: RttHistogram::default(),
        intervals: Vec::new(),
        last: (0, Totals::default()),
        measured: (0, Totals::default()),
    };
    let timed = spec.count.is_none().then(|| spec.total_ns());
    let interrupted = intervals::drive(&mut sampler, begin, spec.interval_ns, timed, &cancel).await;
    let end = begin.elapsed().as_nanos() as u64;
    let _ = tokio::task::spawn_blocking(move || threads.stop()).await;
    sampler.close(end, end);
    let (intervals, summary) = sampler.finish();
    if summary.responses == 0 && !interrupted {
        if let Some((cause, n)) = summary.errors.iter().next() {
            let why = format!("no response to any request: {n} × {cause}");
            let kind = if cause == Cause::Refused.name() {
                io::ErrorKind::ConnectionRefused
            } else {
                io::ErrorKind::Other
            };
            return Err(ClientError::Connect { addr, cause: io::Error::new(kind, why) });
        }
    }
    let mut meta = meta;
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    let report = Report { body: ReportBody::Http(HttpReport { spec, intervals, summary }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// The bytes of one request, built once and written again and again.
fn request_bytes(spec: &HttpSpec, target: &HttpTarget, body: &[u8], version: &str) -> Vec<u8> {
    let mut head =
        format!("{} {} HTTP/1.1\r\nHost: {}\r\n", spec.method, target.path, target.authority);
    let has = |name: &str| spec.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if !has("user-agent") {
        head.push_str(&format!("User-Agent: wirespeed/{version}\r\n"));
    }
    for (k, v) in &spec.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    if !spec.keepalive {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Running totals of one thread (or of all, summed).
#[derive(Debug, Clone, Default)]
struct Totals {
    responses: u64,
    succeeded: u64,
    bytes_in: u64,
    bytes_out: u64,
    connections: u64,
    status: std::collections::BTreeMap<u16, u64>,
    errors: [u64; 8],
}

impl Totals {
    fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn minus(&self, earlier: &Totals) -> Totals {
        let mut d = Totals {
            responses: self.responses - earlier.responses,
            succeeded: self.succeeded - earlier.succeeded,
            bytes_in: self.bytes_in - earlier.bytes_in,
            bytes_out: self.bytes_out - earlier.bytes_out,
            connections: self.connections - earlier.connections,
            ..Default::default()
        };
        for (code, n) in &self.status {
            let before = earlier.status.get(code).copied().unwrap_or(0);
            if *n > before {
                d.status.insert(*code, n - before);
            }
        }
        for i in 0..8 {
            d.errors[i] = self.errors[i] - earlier.errors[i];
        }
        d
    }

    fn add(&mut self, other: &Totals) {
        self.responses += other.responses;
        self.succeeded += other.succeeded;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.connections += other.connections;
        for (code, n) in &other.status {
            *self.status.entry(*code).or_default() += n;
        }
        for i in 0..8 {
            self.errors[i] += other.errors[i];
        }
    }
}

/// What one thread has counted; the sampler takes the histogram each interval.
#[derive(Default)]
struct ShardCounts {
    histogram: Mutex<RttHistogram>,
    totals: Mutex<Totals>,
    done: AtomicBool,
}

struct Shards {
    threads: StreamThreads,
    begin: Instant,
    counts: Vec<Arc<ShardCounts>>,
}

impl Shards {
    fn start(spec: &HttpSpec, addr: SocketAddr, request: Arc<Vec<u8>>) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let budget = Budget::new(spec.count);
        let begin = Instant::now();
        let threads = spec.threads.clamp(1, spec.connections);
        let (mut counts, mut handles) = (Vec::new(), Vec::new());
        for i in 0..threads {
            let c = Arc::new(ShardCounts::default());
            let shard = Shard {
                addr,
                request: request.clone(),
                keepalive: spec.keepalive,
                head_request: spec.method == "HEAD",
                timeout: Duration::from_nanos(spec.timeout_ns),
                slots: share(spec.connections, threads, i),
                counts: c.clone(),
                stop: stop.clone(),
                budget: budget.clone(),
                local: RefCell::default(),
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
        Ok(Self { threads: StreamThreads { stop, sockets: Vec::new(), handles }, begin, counts })
    }
}

/// Where a connection is in its request.
enum Phase {
    Connecting,
    Sending { written: usize },
    Receiving,
}

/// One connection and the request on it.
struct Conn {
    socket: Socket,
    phase: Phase,
    /// When the current request's first byte was written (latency starts here).
    started: Instant,
    /// When the request (connecting included) times out.
    deadline: Instant,
    /// The response head so far, and then its parse.
    head_buf: Vec<u8>,
    head: Option<ResponseHead>,
    body_left: u64,
    chunked: Option<ChunkedScanner>,
    bytes_in: u64,
}

/// What driving a connection led to.
enum Step {
    /// Waiting for the socket.
    Wait,
    /// The response is complete.
    Done { head: ResponseHead },
    /// The request failed.
    Failed(Cause),
}

/// One thread's connections.
struct Shard {
    addr: SocketAddr,
    request: Arc<Vec<u8>>,
    keepalive: bool,
    head_request: bool,
    timeout: Duration,
    slots: usize,
    counts: Arc<ShardCounts>,
    stop: Arc<AtomicBool>,
    budget: Budget,
    /// Counted here first and published to `counts` every 10 ms: no lock per request.
    local: RefCell<(RttHistogram, Totals)>,
}

impl Shard {
    fn claim(&self) -> bool {
        self.budget.claim()
    }

    fn totals(&self, f: impl FnOnce(&mut Totals)) {
        f(&mut self.local.borrow_mut().1);
    }

    /// Moves what this thread counted since the last call to where the sampler reads it.
    fn publish(&self) {
        let mut local = self.local.borrow_mut();
        if let Ok(mut h) = self.counts.histogram.lock() {
            h.add(&local.0);
        }
        local.0.clear();
        if let Ok(mut t) = self.counts.totals.lock() {
            t.add(&local.1);
        }
        local.1 = Totals::default();
    }

    fn run(&self) -> io::Result<()> {
        let epoll = sys::epoll()?;
        let mut conns: Vec<Option<Conn>> = (0..self.slots).map(|_| None).collect();
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; self.slots.max(1)];
        let mut scratch = vec![0u8; 64 * 1024];
        let mut exhausted = false;
        let mut last_sweep = Instant::now();
        while !self.stop.load(Relaxed) {
            fill_slots(&mut conns, &self.budget, &mut exhausted, &self.stop, |i| {
                self.open(epoll.as_raw_fd(), i as u64)
            });
            if exhausted && conns.iter().all(Option::is_none) {
                break;
            }
            // SAFETY: `ready` is writable for the length given.
            let n = unsafe {
                libc::epoll_wait(
                    epoll.as_raw_fd(),
                    ready.as_mut_ptr(),
                    ready.len() as libc::c_int,
                    10,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            for ev in &ready[..n as usize] {
                let i = ev.u64 as usize;
                self.advance(&mut conns[i], &mut scratch, &mut exhausted);
            }
            let now = Instant::now();
            if now.duration_since(last_sweep) >= Duration::from_millis(10) {
                last_sweep = now;
                self.publish();
                for slot in &mut conns {
                    if slot.as_ref().is_some_and(|c| now >= c.deadline) {
                        let cause = match slot.as_ref().map(|c| &c.phase) {
                            Some(Phase::Connecting) => Cause::ConnectTimeout,
                            _ => Cause::Timeout,
                        };
                        self.failed(cause);
                        *slot = None;
                    }
                }
            }
        }
        Ok(())
    }

    /// Opens a connection for a claimed request; `None` when that failed at once (counted).
    fn open(&self, epoll: libc::c_int, slot: u64) -> Option<Conn> {
        let socket =
            match Socket::new(Domain::for_address(self.addr), Type::STREAM.nonblocking(), None) {
                Ok(s) => s,
                Err(e) => {
                    self.failed(Cause::of(&e, true));
                    return None;
                }
            };
        let _ = socket.set_tcp_nodelay(true);
        let phase = match socket.connect(&SockAddr::from(self.addr)) {
            Ok(()) => Phase::Sending { written: 0 },
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Phase::Connecting,
            Err(e) => {
                self.failed(Cause::of(&e, true));
                return None;
            }
        };
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLET | libc::EPOLLRDHUP) as u32,
            u64: slot,
        };
        // SAFETY: a live epoll descriptor, a live socket and a valid event.
        if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, socket.as_raw_fd(), &mut ev) } < 0 {
            self.failed(Cause::Other);
            return None;
        }
        self.totals(|t| t.connections += 1);
        let now = Instant::now();
        Some(Conn {
            socket,
            phase,
            started: now,
            deadline: now + self.timeout,
            head_buf: Vec::with_capacity(1024),
            head: None,
            body_left: 0,
            chunked: None,
            bytes_in: 0,
        })
    }

    fn failed(&self, cause: Cause) {
        let i = Cause::ALL.iter().position(|&c| c == cause).unwrap_or(7);
        self.totals(|t| t.errors[i] += 1);
    }

    /// Drives a connection after an event, through as many requests as complete.
    fn advance(&self, slot: &mut Option<Conn>, scratch: &mut [u8], exhausted: &mut bool) {
        loop {
            let Some(conn) = slot.as_mut() else { return };
            match self.step(conn, scratch) {
                Step::Wait => return,
                Step::Failed(cause) => {
                    self.failed(cause);
                    *slot = None;
                    return;
                }
                Step::Done { head } => {
                    let took = conn.started.elapsed().as_nanos() as u64;
                    self.local.borrow_mut().0.record(took);
                    let bytes_in = conn.bytes_in;
                    self.totals(|t| {
                        t.responses += 1;
                        t.succeeded += u64::from((200..400).contains(&head.status));
                        t.bytes_in += bytes_in;
                        *t.status.entry(head.status).or_default() += 1;
                    });
                    let reuse = self.keepalive && head.keep_alive && !self.stop.load(Relaxed);
                    if !reuse || *exhausted || !self.claim() {
                        if reuse {
                            *exhausted = true;
                        }
                        // A new connection (if any) is opened by the main loop.
                        *slot = None;
                        return;
                    }
                    let now = Instant::now();
                    conn.phase = Phase::Sending { written: 0 };
                    conn.started = now;
                    conn.deadline = now + self.timeout;
                    conn.head = None;
                    conn.head_buf.clear();
                    conn.chunked = None;
                    conn.bytes_in = 0;
                }
            }
        }
    }

    /// Moves one request along as far as the socket allows.
    fn step(&self, conn: &mut Conn, scratch: &mut [u8]) -> Step {
        loop {
            match conn.phase {
                Phase::Connecting => match conn.socket.take_error() {
                    Ok(None) => {
                        // Writable means connected; otherwise the next event tells.
                        if conn.socket.peer_addr().is_err() {
                            return Step::Wait;
                        }
                        conn.phase = Phase::Sending { written: 0 };
                        conn.started = Instant::now();
                    }
                    Ok(Some(e)) | Err(e) => return Step::Failed(Cause::of(&e, true)),
                },
                Phase::Sending { written } => {
                    match (&conn.socket).write(&self.request[written..]) {
                        Ok(n) => {
                            self.totals(|t| t.bytes_out += n as u64);
                            if written + n == self.request.len() {
                                conn.phase = Phase::Receiving;
                            } else {
                                conn.phase = Phase::Sending { written: written + n };
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Step::Failed(Cause::of(&e, false)),
                    }
                }
                Phase::Receiving => {
                    let n = match (&conn.socket).read(scratch) {
                        Ok(0) => {
                            return match (conn.head, conn.body_left) {
                                (Some(head), _) if head.framing == Framing::UntilClose => {
                                    Step::Done { head }
                                }
                                _ => Step::Failed(Cause::Closed),
                            }
                        }
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Step::Failed(Cause::of(&e, false)),
                    };
                    conn.bytes_in += n as u64;
                    match self.take(conn, &scratch[..n]) {
                        Ok(Some(head)) => return Step::Done { head },
                        Ok(None) => {}
                        Err(cause) => return Step::Failed(cause),
                    }
                }
            }
        }
    }

    /// Takes received bytes; the head when the response is complete.
    fn take(&self, conn: &mut Conn, mut data: &[u8]) -> Result<Option<ResponseHead>, Cause> {
        if conn.head.is_none() {
            let keep = data.len().min(MAX_HEAD + 1 - conn.head_buf.len().min(MAX_HEAD));
            conn.head_buf.extend_from_slice(&data[..keep]);
            let head = match parse_head(&conn.head_buf, self.head_request) {
                Ok(h) => h,
                Err(DecodeError::Incomplete(_)) => return Ok(None),
                Err(DecodeError::Invalid(_)) => return Err(Cause::Invalid),
            };
            // What came after the head in this read is body.
            let before = conn.head_buf.len() - keep;
            data = &data[head.len - before..];
            conn.head = Some(head);
            match head.framing {
                Framing::Length(n) => conn.body_left = n,
                Framing::Chunked => conn.chunked = Some(ChunkedScanner::default()),
                Framing::Empty | Framing::UntilClose => conn.body_left = 0,
            }
        }
        let Some(head) = conn.head else { return Ok(None) };
        let used = match head.framing {
            Framing::Empty => 0,
            Framing::UntilClose => data.len(),
            Framing::Length(_) => {
                let n = (data.len() as u64).min(conn.body_left);
                conn.body_left -= n;
                n as usize
            }
            Framing::Chunked => match conn.chunked.as_mut().map(|c| c.feed(data)) {
                Some(Ok(n)) => n,
                _ => return Err(Cause::Invalid),
            },
        };
        if used < data.len() {
            // Bytes after the response: with one request in flight there can be none.
            return Err(Cause::Invalid);
        }
        let complete = match head.framing {
            Framing::Empty => true,
            Framing::Length(_) => conn.body_left == 0,
            Framing::Chunked => conn.chunked.as_ref().is_some_and(ChunkedScanner::done),
            Framing::UntilClose => false,
        };
        Ok(complete.then_some(head))
    }
}

/// Turns the threads' counts into intervals and, after the warm-up, the summary.
struct HttpSampler<'a> {
    counts: &'a [Arc<ShardCounts>],
    spec: &'a HttpSpec,
    events: &'a UnboundedSender<Event>,
    total: RttHistogram,
    intervals: Vec<HttpInterval>,
    last: (u64, Totals),
    measured: (u64, Totals),
}

impl Sampler for HttpSampler<'_> {
    fn close(&mut self, end_ns: u64, nominal_ns: u64) {
        let mut h = RttHistogram::default();
        let mut now = Totals::default();
        for c in self.counts {
            if let Ok(mut mine) = c.histogram.lock() {
                h.add(&mine);
                mine.clear();
            }
            if let Ok(t) = c.totals.lock() {
                now.add(&t);
            }
        }
        let (start_ns, before) = (self.last.0, &self.last.1);
        let d = now.minus(before);
        let omitted = nominal_ns <= self.spec.warmup_ns;
        let span = end_ns.saturating_sub(start_ns).max(1);
        if !omitted {
            self.total.add(&h);
            self.measured.0 += span;
            self.measured.1.add(&d);
        }
        let iv = HttpInterval {
            index: self.intervals.len() as u32,
            start_ns,
            end_ns,
            omitted,
            requests_per_second: d.responses as f64 * 1e9 / span as f64,
            responses: d.responses,
            errors: d.error_total(),
            latency: h.stats(),
        };
        self.last = (end_ns, now);
        let _ = self.events.send(Event::HttpInterval(iv.clone()));
        self.intervals.push(iv);
    }

    fn finished(&self) -> bool {
        self.counts.iter().all(|c| c.done.load(Relaxed))
    }
}

impl HttpSampler<'_> {
    fn finish(self) -> (Vec<HttpInterval>, HttpSummary) {
        let (ns, t) = self.measured;
        let attempts = t.responses + t.error_total();
        let errors = Cause::ALL
            .iter()
            .zip(t.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (c.name().to_string(), n))
            .collect();
        let summary = HttpSummary {
            duration_ns: ns,
            responses: t.responses,
            succeeded: t.succeeded,
            success_ratio: if attempts == 0 { 0.0 } else { t.succeeded as f64 / attempts as f64 },
            status: t.status.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            errors,
            requests_per_second: if ns == 0 { 0.0 } else { t.responses as f64 * 1e9 / ns as f64 },
            bytes_in: t.bytes_in,
            bytes_out: t.bytes_out,
            connections_opened: t.connections,
            latency: self.total.stats(),
            histogram: self.total.buckets(),
        };
        (self.intervals, summary)
    }
}
