//! The client half of a cps test. Against a wirespeed server it first runs the shared
//! handshake (so the server's allow list, token and limits apply, and it counts what it
//! accepted); against any other listener (`--external`) it just connects. Then `-T` threads
//! (one by default, like wrk) each keep their share of the `-P` connections in flight: a
//! non-blocking connect per slot, watched with epoll; when a handshake finishes its connect
//! time goes into the thread's histogram, the socket is closed and the slot starts again. Failures are counted by cause,
//! never abort the run; only a run in which nothing connected at all is an error.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use socket2::{Domain, SockAddr, Socket, Type};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::histogram::{EncodedHistograms, RttHistogram};
use wirespeed_model::kinds::cps::{
    ConnectFailure, CpsInterval, CpsReport, CpsSpec, CpsSummary, FailureCounts,
};
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::control::{ClientMessage, ServerMessage};

use super::closing::{Closing, TAG_BASE};
use crate::error::ClientError;
use crate::net::framed::Framed;
use crate::net::handshake::{self, lost, protocol, recv_server, Endpoint, HANDSHAKE_TIMEOUT};
use crate::net::sys::{self, EpollOp};
use crate::run::budget::{fill_slots, share, Budget};
use crate::run::intervals::{self, Clock, Ending, Sampler, Timers};
use crate::run::threads::StreamThreads;

/// How long to wait for the server's count after `Stop`.
const RESULTS_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest a connector thread waits for events before it looks at the stop flag again.
const POLL_SLICE: Duration = Duration::from_millis(100);

/// Everything a cps client needs.
#[derive(Debug, Clone)]
pub struct CpsOptions {
    /// The test.
    pub spec: CpsSpec,
    /// The target: a wirespeed server, or any TCP listener when `spec.external` is set.
    pub endpoint: Endpoint,
    /// Its part in a run of several members (a run of its own by default).
    pub member: crate::run::member::MemberRun,
}

/// Runs one cps test and returns its report; events go to `events` as they happen.
pub async fn run(
    opts: CpsOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let ep = &opts.endpoint;
    let start_wall = SystemTime::now();
    let (target, mut meta, control, spec) = if opts.spec.external {
        let addrs = handshake::resolve(&ep.host, ep.port, ep.family).await?;
        let meta = crate::run::meta::run_meta(&ep.version, start_wall, Some(addrs[0]));
        (addrs[0], meta, None, opts.spec.clone())
    } else {
        let opened = handshake::open(ep, TestSpec::Cps(opts.spec.clone())).await?;
        let meta = opened.meta();
        let handshake::Opened { mut ctl, mut state, server_addr, spec, .. } = opened;
        let TestSpec::Cps(spec) = spec else {
            return Err(protocol("the server accepted a different kind of test"));
        };
        let ServerMessage::Begin =
            recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
        else {
            unreachable!("the state machine only lets begin through after accepted")
        };
        (server_addr, meta, Some((ctl, state)), spec)
    };
    let Connectors { threads, begin, counts } = Connectors::start(&spec, target, ep.bind)
        .map_err(ClientError::local("starting threads"))?;
    let _ = events.send(Event::Start { spec: TestSpec::Cps(spec.clone()), meta: meta.clone() });
    let mut sampler = CpsSampler {
        counts: &counts,
        events: &events,
        total: RttHistogram::default(),
        intervals: Vec::new(),
        last: (0, 0, FailureCounts::default()),
        measured: (0, 0, FailureCounts::default()),
        kept: opts.member.keep_histograms.then(EncodedHistograms::new),
    };
    let timed = spec.count.is_none().then(|| spec.total_ns());
    let clock = Clock::new(spec.interval_ns, timed, spec.warmup_ns, Ending::Stop);
    let mut timers = Timers::start(clock, begin, false);
    // Against a wirespeed server, the control connection says when the server is gone:
    // refused connects after that would measure nothing but its absence.
    // (A failed connect is a measurement here, not a failure of the test.)
    let mut control = control;
    let failure = async {
        match control.as_mut() {
            Some((ctl, state)) => handshake::server_lost(ctl, state).await,
            None => std::future::pending().await,
        }
    };
    let (interrupted, failure) =
        match intervals::drive_until(&mut sampler, &mut timers, &cancel, failure).await {
            Ok(interrupted) => (interrupted, None),
            Err(cause) => (false, Some(cause)),
        };
    // The last interval ends now; attempts still under way are abandoned, not counted, and
    // the threads are joined before the last sample so nothing finishes unseen.
    let end = begin.elapsed().as_nanos() as u64;
    let _ = tokio::task::spawn_blocking(move || threads.stop()).await;
    let last = timers.clock().last(end);
    sampler.close(last.end_ns, last.omitted);
    let (intervals, mut summary, kept) = sampler.finish();
    meta.histograms = kept;
    let failure = match (failure, control) {
        (Some(cause), _) => Some(cause),
        (None, Some((mut ctl, mut state))) => match server_count(&mut ctl, &mut state).await {
            Ok(accepted) => {
                summary.server_accepted = Some(accepted);
                ctl.close().await;
                None
            }
            Err(cause) => Some(cause),
        },
        (None, None) => None,
    };
    if let Some(cause) = failure {
        let report = Report { body: ReportBody::Cps(CpsReport { spec, intervals, summary }), meta };
        return Err(ClientError::partial(report, cause));
    }
    if summary.connected == 0 && !interrupted {
        if let Some(first) = counts.iter().find_map(|c| c.first_failure.lock().ok()?.take()) {
            let why = format!(
                "every one of {} attempts failed ({}); the first: {first}",
                summary.attempts,
                summary.failures.describe()
            );
            return Err(ClientError::Connect {
                addr: target,
                cause: io::Error::new(first.kind(), why),
            });
        }
    }
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    meta.notes.extend(port_ceiling_note(&spec, summary.connections_per_second));
    let report = Report { body: ReportBody::Cps(CpsReport { spec, intervals, summary }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// How long a connector waits at the end for the server to close its last connections.
const DRAIN: Duration = Duration::from_millis(200);

/// With a FIN close from this side every connection leaves its local port in TIME_WAIT, and Linux reuses
/// such a port for the same destination only after about a second (and only on loopback by
/// default), so the local port range caps the rate at roughly range / 2 s. A run near that
/// ceiling measured this host's port supply, not the target; say so.
fn port_ceiling_note(spec: &CpsSpec, cps: f64) -> Option<String> {
    // With --rst nothing waits; against a wirespeed server the server closes first, and the
    // TIME_WAIT is its own.
    if spec.rst || !spec.external {
        return None;
    }
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut ends = range.split_whitespace().filter_map(|v| v.parse::<f64>().ok());
    let ports = ends.next().zip(ends.next()).map(|(lo, hi)| hi - lo + 1.0)?;
    let ceiling = ports / 2.0;
    (cps >= 0.85 * ceiling).then(|| {
        format!(
            "{cps:.0} connections/s is near this host's ceiling of about {ceiling:.0}/s for FIN \
             close ({ports:.0} local ports, each held in TIME_WAIT); --rst removes it"
        )
    })
}

/// Ends the control conversation and returns how many connections the server accepted.
async fn server_count(
    ctl: &mut Framed,
    state: &mut wirespeed_proto::control::ClientState,
) -> Result<u64, ClientError> {
    ctl.send(&ClientMessage::Stop).await.map_err(lost)?;
    let results = tokio::time::timeout(RESULTS_TIMEOUT, recv_server(ctl, state, None))
        .await
        .map_err(|_| ClientError::ServerGone(format!("no results within {RESULTS_TIMEOUT:?}")))??;
    match results {
        ServerMessage::Results(r) => {
            r.accepted.ok_or_else(|| protocol("the server's results carry no connection count"))
        }
        other => Err(protocol(format!("unexpected {} message after stop", other.name()))),
    }
}

/// What one connector has counted so far; the sampler takes the histogram each interval.
#[derive(Default)]
struct ConnectorCounts {
    histogram: Mutex<RttHistogram>,
    connected: AtomicU64,
    /// Failures by cause, in [`ConnectFailure::ALL`]'s order.
    failures: [AtomicU64; 6],
    /// The first failure's error, for a run where nothing connected.
    first_failure: Mutex<Option<io::Error>>,
    /// Set when the connector's thread has ended.
    done: AtomicBool,
}

struct Connectors {
    threads: StreamThreads,
    begin: Instant,
    counts: Vec<Arc<ConnectorCounts>>,
}

impl Connectors {
    /// Starts `spec.threads` threads that share the `spec.parallel` connections in flight.
    fn start(spec: &CpsSpec, target: SocketAddr, bind: Option<IpAddr>) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let budget = Budget::new(spec.count);
        let begin = Instant::now();
        let threads = spec.threads.clamp(1, spec.parallel);
        let (mut counts, mut handles) = (Vec::new(), Vec::new());
        for i in 0..threads {
            let c = Arc::new(ConnectorCounts::default());
            let job = Connector {
                target: SockAddr::from(target),
                bind: bind.map(|ip| SockAddr::from(SocketAddr::new(ip, 0))),
                timeout: Duration::from_nanos(spec.timeout_ns),
                rst: spec.rst,
                server_closes: !spec.rst && !spec.external,
                slots: share(spec.parallel, threads, i),
                counts: c.clone(),
                stop: stop.clone(),
                budget: budget.clone(),
            };
            let handle = std::thread::Builder::new()
                .name(format!("ws-cps-{}", i + 1))
                .stack_size(256 * 1024)
                .spawn(move || {
                    if let Err(e) = job.run() {
                        // epoll itself failed: count it, the run's error names it if nothing connected.
                        job.record(Attempt::Failed(ConnectFailure::Other, e));
                    }
                    job.counts.done.store(true, Relaxed);
                    sys::thread_cpu_ns()
                })?;
            counts.push(c);
            handles.push(handle);
        }
        Ok(Self { threads: StreamThreads { stop, sockets: Vec::new(), handles }, begin, counts })
    }
}

/// How one attempt ended.
enum Attempt {
    /// The handshake finished after this long.
    Connected(Duration),
    /// It failed, for this reason.
    Failed(ConnectFailure, io::Error),
}

/// A connection whose handshake is under way.
struct InFlight {
    socket: Socket,
    started: Instant,
}

/// One thread's share of the connectors: `slots` non-blocking connects kept in flight on one
/// epoll instance, each replaced by a new one as soon as it connects, fails or times out.
struct Connector {
    target: SockAddr,
    bind: Option<SockAddr>,
    timeout: Duration,
    rst: bool,
    /// The target is a wirespeed server, which closes a probe first (see `closing`).
    server_closes: bool,
    slots: usize,
    counts: Arc<ConnectorCounts>,
    stop: Arc<AtomicBool>,
    budget: Budget,
}

impl Connector {
    fn record(&self, attempt: Attempt) {
        match attempt {
            Attempt::Connected(took) => {
                // Counted under the histogram's lock, so a sample taken at a boundary is in
                // the same interval as its count.
                let mut h = self.counts.histogram.lock().unwrap_or_else(|e| e.into_inner());
                h.record(took.as_nanos() as u64);
                self.counts.connected.fetch_add(1, Relaxed);
            }
            Attempt::Failed(cause, e) => {
                let i = ConnectFailure::ALL.iter().position(|&c| c == cause).unwrap_or(5);
                self.counts.failures[i].fetch_add(1, Relaxed);
                if let Ok(mut slot) = self.counts.first_failure.lock() {
                    slot.get_or_insert(e);
                }
            }
        }
    }

    /// Keeps every slot busy until the test stops or the count runs out. Connections still
    /// under way at the stop are abandoned, not counted.
    fn run(&self) -> io::Result<()> {
        let epoll = sys::epoll()?;
        let mut slots: Vec<Option<InFlight>> = (0..self.slots).map(|_| None).collect();
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; self.slots + 256];
        let mut closing = Closing::new(epoll.as_raw_fd(), self.timeout);
        let mut exhausted = false;
        while !self.stop.load(Relaxed) {
            // A connect that finished at once frees its slot again; it is refilled straight away.
            fill_slots(&mut slots, &self.budget, &mut exhausted, &self.stop, |i| {
                self.begin(epoll.as_raw_fd(), i as u64, &mut closing)
            });
            if exhausted && slots.iter().all(Option::is_none) {
                break;
            }
            let now = Instant::now();
            let soonest = slots.iter().flatten().map(|f| f.started + self.timeout).min();
            let wait =
                soonest.map_or(POLL_SLICE, |d| d.saturating_duration_since(now)).min(POLL_SLICE);
            // SAFETY: `ready` is writable for the length given.
            let n = unsafe {
                libc::epoll_wait(
                    epoll.as_raw_fd(),
                    ready.as_mut_ptr(),
                    ready.len() as libc::c_int,
                    wait.as_millis().max(1) as libc::c_int,
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
                if ev.u64 >= TAG_BASE {
                    closing.closed_by_peer(ev.u64);
                    continue;
                }
                let Some(flight) = slots.get_mut(ev.u64 as usize).and_then(Option::take) else {
                    continue;
                };
                let attempt = match flight.socket.take_error() {
                    Ok(None) => Attempt::Connected(flight.started.elapsed()),
                    Ok(Some(e)) | Err(e) => Attempt::Failed(classify(&e), e),
                };
                self.finish(flight.socket, attempt, &mut closing, true);
            }
            let now = Instant::now();
            closing.expire(now);
            for slot in &mut slots {
                if slot.as_ref().is_some_and(|f| now >= f.started + self.timeout) {
                    let e = io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no answer within {:?}", self.timeout),
                    );
                    self.record(Attempt::Failed(ConnectFailure::Timeout, e));
                    *slot = None; // closing the socket also takes it out of the epoll set
                }
            }
        }
        // The last connections' FINs are on their way: wait a moment for them, so that this
        // side does not close first after all (and keep their TIME_WAIT).
        let until = Instant::now() + DRAIN;
        while !closing.is_empty() && Instant::now() < until {
            // SAFETY: `ready` is writable for the length given.
            let n = unsafe {
                libc::epoll_wait(
                    epoll.as_raw_fd(),
                    ready.as_mut_ptr(),
                    ready.len() as libc::c_int,
                    10,
                )
            };
            for ev in &ready[..n.max(0) as usize] {
                if ev.u64 >= TAG_BASE {
                    closing.closed_by_peer(ev.u64);
                }
            }
        }
        Ok(())
    }

    /// Starts one connect; `None` when it already ended (recorded here).
    fn begin(&self, epoll: libc::c_int, slot: u64, closing: &mut Closing) -> Option<InFlight> {
        let domain = Domain::for_address(
            self.target.as_socket().unwrap_or_else(|| unreachable!("an IP socket address")),
        );
        let socket = match Socket::new(domain, Type::STREAM.nonblocking(), None) {
            Ok(s) => s,
            Err(e) => {
                self.record(Attempt::Failed(classify(&e), e));
                return None;
            }
        };
        if self.server_closes {
            // The handshake's last ACK waits for the probe's preamble and goes with it: one
            // packet fewer per connection (Linux delays that ACK on a socket with
            // TCP_DEFER_ACCEPT set, expecting data).
            let _ = sys::set_int(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, 1);
        }
        if let Some(local) = &self.bind {
            // Without this, bind picks a port before it knows the destination, so every
            // connection needs a port of its own and -B would exhaust them far sooner.
            let _ = sys::set_int(
                socket.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                1,
            );
            if let Err(e) = socket.bind(local) {
                self.record(Attempt::Failed(classify(&e), e));
                return None;
            }
        }
        let started = Instant::now();
        match socket.connect(&self.target) {
            Ok(()) => {
                self.finish(socket, Attempt::Connected(started.elapsed()), closing, false);
                None
            }
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                let watched =
                    sys::epoll_ctl(epoll, EpollOp::Add, socket.as_raw_fd(), slot, libc::EPOLLOUT);
                if let Err(e) = watched {
                    self.record(Attempt::Failed(ConnectFailure::Other, e));
                    return None;
                }
                Some(InFlight { socket, started })
            }
            Err(e) => {
                self.record(Attempt::Failed(classify(&e), e));
                None
            }
        }
    }

    /// Records how an attempt ended and closes its socket: with RST when asked, by the
    /// server first when it is a wirespeed server, else with a FIN from here. `registered`:
    /// the socket is on the epoll set (its connect was in flight).
    fn finish(&self, socket: Socket, attempt: Attempt, closing: &mut Closing, registered: bool) {
        let connected = matches!(attempt, Attempt::Connected(_));
        self.record(attempt);
        if connected && self.rst {
            // A zero linger time makes close send RST and skip TIME_WAIT.
            let _ = socket.set_linger(Some(Duration::ZERO));
        } else if connected && self.server_closes {
            closing.hand_over(socket, registered);
            return;
        }
        drop(socket);
    }
}

/// The cause a connect error stands for.
fn classify(e: &io::Error) -> ConnectFailure {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ConnectFailure::Refused,
        Some(libc::ETIMEDOUT) => ConnectFailure::Timeout,
        Some(libc::ECONNRESET) => ConnectFailure::Reset,
        Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => ConnectFailure::PortsExhausted,
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => ConnectFailure::Unreachable,
        _ => ConnectFailure::Other,
    }
}

/// Turns the connectors' counts into intervals and, after the warm-up, the summary.
struct CpsSampler<'a> {
    counts: &'a [Arc<ConnectorCounts>],
    events: &'a UnboundedSender<Event>,
    total: RttHistogram,
    intervals: Vec<CpsInterval>,
    last: (u64, u64, FailureCounts), // end_ns, connected, failures at the last boundary
    measured: (u64, u64, FailureCounts), // ns, connected, failures after the warm-up
    /// The histograms in their encoding, when the run keeps them (a member's).
    kept: Option<EncodedHistograms>,
}

impl Sampler for CpsSampler<'_> {
    fn close(&mut self, end_ns: u64, omitted: bool) {
        let (h, connected, failures) = self.take();
        let (start_ns, c0, f0) = self.last;
        let span = end_ns.saturating_sub(start_ns).max(1);
        let new_connected = connected - c0;
        let new_failures = failures.since(&f0);
        if !omitted {
            self.total.add(&h);
            self.measured.0 += span;
            self.measured.1 += new_connected;
            self.measured.2.add(&new_failures);
        }
        let iv = CpsInterval {
            index: self.intervals.len() as u32,
            start_ns,
            end_ns,
            omitted,
            connections_per_second: new_connected as f64 * 1e9 / span as f64,
            attempts: new_connected + new_failures.total(),
            connected: new_connected,
            failures: new_failures,
            connect: h.stats(),
        };
        if let Some(kept) = self.kept.as_mut() {
            kept.intervals.push(h.encode());
        }
        self.last = (end_ns, connected, failures);
        let _ = self.events.send(Event::CpsInterval(iv.clone()));
        self.intervals.push(iv);
    }

    fn finished(&self) -> bool {
        self.counts.iter().all(|c| c.done.load(Relaxed))
    }
}

impl CpsSampler<'_> {
    /// Takes every connector's histogram since the last call, merged, and the running counts.
    fn take(&self) -> (RttHistogram, u64, FailureCounts) {
        let mut h = RttHistogram::default();
        let mut connected = 0;
        let mut failures = FailureCounts::default();
        for c in self.counts {
            // The count is read under the lock it is kept under (see `Connector::record`).
            let mut mine = c.histogram.lock().unwrap_or_else(|e| e.into_inner());
            h.add(&mine);
            mine.clear();
            connected += c.connected.load(Relaxed);
            drop(mine);
            for (cause, n) in ConnectFailure::ALL.iter().zip(&c.failures) {
                *failures.slot(*cause) += n.load(Relaxed);
            }
        }
        (h, connected, failures)
    }

    fn finish(mut self) -> (Vec<CpsInterval>, CpsSummary, Option<EncodedHistograms>) {
        if let Some(kept) = self.kept.as_mut() {
            kept.keep("total", &self.total);
        }
        let (ns, connected, failures) = self.measured;
        let summary = CpsSummary {
            duration_ns: ns,
            attempts: connected + failures.total(),
            connected,
            failures,
            connections_per_second: if ns == 0 { 0.0 } else { connected as f64 * 1e9 / ns as f64 },
            server_accepted: None,
            connect: self.total.stats(),
            histogram: self.total.buckets(),
        };
        (self.intervals, summary, self.kept)
    }
}
