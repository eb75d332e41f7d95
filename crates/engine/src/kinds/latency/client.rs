//! The client half of a latency test: after the shared handshake it opens `-P` streams, and a
//! thread per stream sends a message and waits for its echo, again and again. In the closed
//! model the next message leaves when the answer arrives; with `--rate` messages leave on a
//! fixed schedule and each round trip is measured from its *scheduled* send time, so a stall
//! shows in the figures instead of hiding (no coordinated omission). Each thread records into
//! its own histogram; the sampler swaps them out once per interval.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use socket2::{Domain, Socket, Type};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::diagnosis::{Diagnosis, ThreadCpu};
use wirespeed_model::flow::Flow;
use wirespeed_model::histogram::{EncodedHistograms, RttHistogram};
use wirespeed_model::kinds::latency::{
    LatencyInterval, LatencyReport, LatencySpec, LatencySummary,
};
use wirespeed_model::report::{Meta, Report, ReportBody};
use wirespeed_model::rules::Protocol;
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::codec::{from_hex, DataHello, SESSION_ID_LEN};
use wirespeed_proto::control::{ClientMessage, ClientState, ServerMessage};
use wirespeed_proto::datagram::UdpHello;

use super::quic_stream::QuicRoundTrips;
use crate::error::ClientError;
use crate::net::framed::Framed;
use crate::net::handshake::{self, lost, protocol, recv_server, Endpoint, HANDSHAKE_TIMEOUT};
use crate::net::quic;
use crate::net::streams::{open_tcp, open_udp};
use crate::net::sys;
use crate::run::budget::Budget;
use crate::run::intervals::{self, Clock, Ending, Sampler, Timers};
use crate::run::pacer::{CatchUp, Pacer};
use crate::run::threads::StreamThreads;

/// How long to wait for the server's results after `Stop`.
const RESULTS_TIMEOUT: Duration = Duration::from_secs(15);

/// Everything a latency client needs.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// The test.
    pub spec: LatencySpec,
    /// The server.
    pub endpoint: Endpoint,
    /// Its part in a run of several members (a run of its own by default).
    pub member: crate::run::member::MemberRun,
}

/// Runs one latency test and returns its report; events go to `events` as they happen.
pub async fn run(
    opts: LatencyOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let mut quic = None;
    let (mut meta, spec, sockets, control) = if opts.spec.external {
        let (meta, sockets) = connect_external(&opts).await?;
        (meta, opts.spec.clone(), sockets, None)
    } else {
        let opened = handshake::open(&opts.endpoint, TestSpec::Latency(opts.spec.clone())).await?;
        let mut meta = opened.meta();
        let handshake::Opened { mut ctl, mut state, server_addr, session, spec, quic_pin, .. } =
            opened;
        let TestSpec::Latency(spec) = spec else {
            return Err(protocol("the server accepted a different kind of test"));
        };
        quic = match spec.protocol {
            Protocol::Quic => {
                let pin = quic_pin.as_deref().and_then(from_hex::<32>).ok_or_else(|| {
                    protocol("the server named no QUIC certificate for a QUIC test")
                })?;
                Some(
                    quic::pinned_test_client(pin, &quic::Tuning::default())
                        .map_err(ClientError::local("QUIC settings"))?,
                )
            }
            _ => None,
        };
        let (sockets, notes) = {
            let spec = spec.clone();
            let bind = opts.endpoint.bind;
            tokio::task::spawn_blocking(move || open_streams(&spec, server_addr, bind, session))
                .await
                .map_err(ClientError::joined("opening streams"))??
        };
        meta.notes.extend(notes);
        let ServerMessage::Begin =
            recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
        else {
            unreachable!("the state machine only lets begin through after accepted")
        };
        (meta, spec, sockets, Some((ctl, state)))
    };
    let workers =
        Workers::start(&spec, sockets, quic).map_err(ClientError::local("starting threads"))?;
    let _ = events.send(Event::Start { spec: TestSpec::Latency(spec.clone()), meta: meta.clone() });
    let keep = opts.member.keep_histograms;
    let mut control = control;
    let ((intervals, summary, interrupted, kept), failure) =
        drive(&workers, &spec, (&events, keep), &cancel, control.as_mut()).await;
    let _ = tokio::task::spawn_blocking(move || workers.threads.stop()).await;
    meta.histograms = kept;
    let failure = match (failure, control) {
        (Some(cause), _) => Some(cause),
        (None, Some((mut ctl, mut state))) => match stop(&mut ctl, &mut state).await {
            Ok(server_threads) => {
                meta.diagnosis = Some(Diagnosis { server_threads, ..Diagnosis::default() });
                ctl.close().await;
                None
            }
            Err(cause) => Some(cause),
        },
        (None, None) => None,
    };
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    let report =
        Report { body: ReportBody::Latency(LatencyReport { spec, intervals, summary }), meta };
    if let Some(cause) = failure {
        return Err(ClientError::partial(report, cause));
    }
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// Ends the control conversation; the server's data threads, for the diagnosis.
async fn stop(ctl: &mut Framed, state: &mut ClientState) -> Result<Vec<ThreadCpu>, ClientError> {
    ctl.send(&ClientMessage::Stop).await.map_err(lost)?;
    let results = tokio::time::timeout(RESULTS_TIMEOUT, recv_server(ctl, state, None))
        .await
        .map_err(|_| ClientError::ServerGone(format!("no results within {RESULTS_TIMEOUT:?}")))??;
    match results {
        ServerMessage::Results(results) => Ok(results.threads),
        other => Err(protocol(format!("unexpected {} message after stop", other.name()))),
    }
}

/// Connects straight to an echo service (`--external`): a TCP connection or a connected UDP
/// socket per stream, nothing else on the wire.
async fn connect_external(opts: &LatencyOptions) -> Result<(Meta, Vec<Socket>), ClientError> {
    let ep = &opts.endpoint;
    let start_wall = SystemTime::now();
    let target = handshake::resolve(&ep.host, ep.port, ep.family).await?[0];
    let meta = crate::run::meta::run_meta(&ep.version, start_wall, Some(target));
    let (spec, bind, limit) = (opts.spec.clone(), ep.bind, ep.connect_timeout);
    let sockets = tokio::task::spawn_blocking(move || {
        (0..spec.parallel)
            .map(|_| {
                let ty = match spec.protocol {
                    Protocol::Tcp => Type::STREAM,
                    Protocol::Udp => Type::DGRAM,
                    Protocol::Quic => return Err(no_quic()),
                };
                let s = Socket::new(Domain::for_address(target), ty, None)?;
                if let Some(ip) = bind {
                    s.bind(&SocketAddr::new(ip, 0).into())?;
                }
                match spec.protocol {
                    Protocol::Tcp => {
                        s.connect_timeout(&target.into(), limit)?;
                        // Nagle would hold small messages back a round trip.
                        s.set_tcp_nodelay(true)?;
                    }
                    Protocol::Udp => s.connect(&target.into())?,
                    Protocol::Quic => return Err(no_quic()),
                }
                Ok(s)
            })
            .collect::<io::Result<Vec<Socket>>>()
    })
    .await
    .map_err(ClientError::joined("connecting"))?
    .map_err(|source| ClientError::Connect { addr: target, cause: source })?;
    Ok((meta, sockets))
}

fn open_streams(
    spec: &LatencySpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    session: [u8; SESSION_ID_LEN],
) -> Result<(Vec<Socket>, Vec<String>), ClientError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for id in 1..=spec.parallel {
        let socket = match spec.protocol {
            Protocol::Tcp => {
                // Nagle would hold small messages back a round trip.
                let tune = |s: &Socket| match s.set_tcp_nodelay(true) {
                    Ok(()) => Vec::new(),
                    Err(e) => vec![format!("TCP_NODELAY not applied: {e}")],
                };
                let hello = DataHello { session, flow: Flow::Upload, stream: id };
                open_tcp(server, bind, hello, &tune, &mut notes)?
            }
            Protocol::Udp => {
                let hello = UdpHello { ack: false, session, flow: Flow::Upload, stream: id };
                open_udp(server, bind, hello, &|_| Vec::new(), &mut notes)?
            }
            // A QUIC stream's connection runs over the socket its hello opened.
            Protocol::Quic => {
                let hello = UdpHello { ack: false, session, flow: Flow::Upload, stream: id };
                open_udp(server, bind, hello, &|_| Vec::new(), &mut notes)?
            }
        };
        out.push(socket);
    }
    notes.sort();
    notes.dedup();
    Ok((out, notes))
}

/// What one stream's thread has counted so far; the sampler takes the histogram each interval.
#[derive(Default)]
struct StreamCounts {
    histogram: Mutex<RttHistogram>,
    sent: AtomicU64,
    received: AtomicU64,
    lost: AtomicU64,
    /// Why the stream failed, if it did.
    error: Mutex<Option<String>>,
}

struct Workers {
    threads: StreamThreads,
    begin: Instant,
    counts: Vec<Arc<StreamCounts>>,
    /// Fired by the first stream that fails.
    failed: CancellationToken,
}

impl Workers {
    fn start(
        spec: &LatencySpec,
        sockets: Vec<Socket>,
        quic: Option<quinn::ClientConfig>,
    ) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let budget = Budget::new(spec.count);
        let begin = Instant::now();
        let failed = CancellationToken::new();
        let (mut counts, mut shared, mut threads) = (Vec::new(), Vec::new(), Vec::new());
        for (i, s) in sockets.into_iter().enumerate() {
            let s = Arc::new(s);
            let c = Arc::new(StreamCounts::default());
            let job = Job {
                spec: spec.clone(),
                quic: quic.clone(),
                socket: s.clone(),
                counts: c.clone(),
                stop: stop.clone(),
                budget: budget.clone(),
                begin,
            };
            let failed = failed.clone();
            threads.push(std::thread::Builder::new().name(format!("ws-rtt-{}", i + 1)).spawn(
                move || {
                    if let Err(e) = job.run() {
                        if !job.stop.load(Relaxed) {
                            if let Ok(mut slot) = job.counts.error.lock() {
                                *slot = Some(format!("stream {}: {e}", i + 1));
                            }
                            failed.cancel();
                        }
                    }
                    sys::thread_cpu_ns()
                },
            )?);
            counts.push(c);
            shared.push(s);
        }
        Ok(Self {
            threads: StreamThreads { stop, sockets: shared, handles: threads },
            begin,
            counts,
            failed,
        })
    }

    /// Takes every stream's histogram since the last call, merged, and the running counts.
    fn take(&self) -> (RttHistogram, u64, u64, u64) {
        let mut h = RttHistogram::default();
        let (mut sent, mut received, mut lost) = (0, 0, 0);
        for c in &self.counts {
            // `received` is read under the lock it is counted under (see the worker).
            let mut mine = c.histogram.lock().unwrap_or_else(|e| e.into_inner());
            h.add(&mine);
            mine.clear();
            received += c.received.load(Relaxed);
            drop(mine);
            sent += c.sent.load(Relaxed);
            lost += c.lost.load(Relaxed);
        }
        (h, sent, received, lost)
    }

    fn finished(&self) -> bool {
        self.threads.finished()
    }

    fn first_error(&self) -> Option<String> {
        self.counts.iter().find_map(|c| c.error.lock().ok().and_then(|e| e.clone()))
    }
}

struct Job {
    spec: LatencySpec,
    /// For QUIC: how to trust the server's certificate.
    quic: Option<quinn::ClientConfig>,
    socket: Arc<Socket>,
    counts: Arc<StreamCounts>,
    stop: Arc<AtomicBool>,
    budget: Budget,
    begin: Instant,
}

impl Job {
    fn claim(&self) -> bool {
        self.budget.claim()
    }

    fn run(&self) -> io::Result<()> {
        let len = self.spec.length as usize;
        let mut msg = vec![0u8; len];
        sys::fill_random(&mut msg);
        let mut reply = vec![0u8; len.max(65_536)];
        let udp = self.spec.protocol == Protocol::Udp;
        let mut quic = match &self.quic {
            Some(config) => Some(QuicRoundTrips::connect(&self.socket, config.clone())?),
            None => None,
        };
        let timeout = Duration::from_nanos(self.spec.timeout_ns);
        self.socket.set_read_timeout(Some(if udp {
            timeout
        } else {
            Duration::from_millis(100)
        }))?;
        // The open model: message k is due at k / rate from the start, whenever it goes out.
        let mut schedule = self.spec.rate.map(|r| Pacer::new(r, 0, CatchUp::Keep));
        if schedule.is_some() {
            // A late wake-up is measured as latency in the open model; keep it small.
            sys::tighten_timer_slack();
        }
        let mut seq: u64 = 0;
        while !self.stop.load(Relaxed) && self.claim() {
            // Open model: the send time is the schedule's, whether or not we are late.
            let sent_at = match &mut schedule {
                Some(p) => {
                    let due = self.begin + Duration::from_nanos(p.next_due_ns().unwrap_or(0));
                    p.book(1);
                    let now = Instant::now();
                    if due > now {
                        match &mut quic {
                            Some(q) => q.sleep(due - now),
                            None => std::thread::sleep(due - now),
                        }
                    }
                    due
                }
                None => Instant::now(),
            };
            seq += 1;
            if len >= 8 {
                msg[..8].copy_from_slice(&seq.to_be_bytes());
            }
            if let Some(q) = &mut quic {
                q.send(&msg)?;
            } else if udp {
                self.socket.send(&msg)?;
            } else {
                (&*self.socket).write_all(&msg)?;
            }
            self.counts.sent.fetch_add(1, Relaxed);
            let answered = if let Some(q) = &mut quic {
                q.await_reply(&mut reply[..len], &self.stop)?
            } else if udp {
                self.await_datagram(&mut reply, seq, len, Instant::now() + timeout)?
            } else {
                self.await_bytes(&mut reply[..len])?
            };
            if !answered {
                if self.stop.load(Relaxed) {
                    break;
                }
                self.counts.lost.fetch_add(1, Relaxed);
                continue;
            }
            let rtt = sent_at.elapsed().as_nanos() as u64;
            // Counted under the histogram's lock, so a sample taken at a boundary (or by the
            // last close, which does not wait for the threads) is in the same interval as its
            // count and the summary's count is the sum of the measured intervals'.
            let mut h = self.counts.histogram.lock().unwrap_or_else(|e| e.into_inner());
            h.record(rtt);
            self.counts.received.fetch_add(1, Relaxed);
            drop(h);
        }
        Ok(())
    }

    /// One read: blocking (up to the socket's timeout), or with `--busy-poll` a non-blocking
    /// one that the caller repeats.
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.spec.busy_poll {
            return (&*self.socket).read(buf);
        }
        // SAFETY: `buf` is writable for its whole length.
        let n = unsafe {
            libc::recv(
                self.socket.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Reads one whole echoed message; false when the test stopped first.
    fn await_bytes(&self, buf: &mut [u8]) -> io::Result<bool> {
        let mut got = 0;
        while got < buf.len() {
            match self.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the stream",
                    ))
                }
                Ok(n) => got += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.stop.load(Relaxed) {
                        return Ok(false);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Waits for the echo of datagram `seq` (older echoes are late answers and skipped);
    /// false when it did not come by `deadline`.
    fn await_datagram(
        &self,
        buf: &mut [u8],
        seq: u64,
        len: usize,
        deadline: Instant,
    ) -> io::Result<bool> {
        let mut spins = 0u32;
        loop {
            match self.read(buf) {
                Ok(n) if n == len && (len < 8 || buf[..8] == seq.to_be_bytes()) => return Ok(true),
                // A late echo of an earlier message, or the empty reads of a socket shut down
                // at the end (which would spin for ever while the answer never comes).
                Ok(_) => {
                    if self.stop.load(Relaxed) || Instant::now() >= deadline {
                        return Ok(false);
                    }
                }
                // Busy polling: nothing yet; look at the clock and the stop flag now and then.
                Err(e) if self.spec.busy_poll && e.kind() == io::ErrorKind::WouldBlock => {
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(256)
                        && (self.stop.load(Relaxed) || Instant::now() >= deadline)
                    {
                        return Ok(false);
                    }
                }
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
                {
                    return Ok(false)
                }
                Err(e)
                    if e.kind() == io::ErrorKind::Interrupted
                        || e.raw_os_error() == Some(libc::ECONNREFUSED) =>
                {
                    if self.stop.load(Relaxed) {
                        return Ok(false);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

type Outcome = (Vec<LatencyInterval>, LatencySummary, bool, Option<EncodedHistograms>);

/// Turns the workers' counts into intervals and, over the intervals after the warm-up, the
/// summary. The warm-up ends at the first interval boundary at or after `--warmup`.
struct RttSampler<'a> {
    workers: &'a Workers,
    spec: &'a LatencySpec,
    events: &'a UnboundedSender<Event>,
    total: RttHistogram,
    intervals: Vec<LatencyInterval>,
    last: (u64, u64, u64, u64), // end_ns, sent, received, lost at the last boundary
    measured: (u64, u64, u64, u64), // ns, sent, received, lost after the warm-up
    /// The histograms in their encoding, when the run keeps them (a member's).
    kept: Option<EncodedHistograms>,
}

impl Sampler for RttSampler<'_> {
    fn close(&mut self, end_ns: u64, omitted: bool) {
        let (h, sent, received, lost) = self.workers.take();
        let (start_ns, s0, r0, l0) = self.last;
        let span = end_ns.saturating_sub(start_ns).max(1);
        if !omitted {
            self.total.add(&h);
            let m = &mut self.measured;
            *m = (m.0 + span, m.1 + (sent - s0), m.2 + (received - r0), m.3 + (lost - l0));
        }
        let iv = LatencyInterval {
            index: self.intervals.len() as u32,
            start_ns,
            end_ns,
            omitted,
            messages_per_second: (received - r0) as f64 * 1e9 / span as f64,
            lost: (self.spec.protocol == Protocol::Udp).then_some(lost - l0),
            rtt: h.stats(),
        };
        if let Some(kept) = self.kept.as_mut() {
            kept.intervals.push(h.encode());
        }
        self.last = (end_ns, sent, received, lost);
        let _ = self.events.send(Event::LatencyInterval(iv.clone()));
        self.intervals.push(iv);
    }

    fn finished(&self) -> bool {
        self.workers.finished()
    }
}

impl RttSampler<'_> {
    fn finish(mut self) -> (Vec<LatencyInterval>, LatencySummary, Option<EncodedHistograms>) {
        if let Some(kept) = self.kept.as_mut() {
            kept.keep("total", &self.total);
        }
        let (ns, sent, received, lost) = self.measured;
        let summary = LatencySummary {
            duration_ns: ns,
            sent,
            received,
            lost: (self.spec.protocol == Protocol::Udp).then_some(lost),
            messages_per_second: if ns == 0 { 0.0 } else { received as f64 * 1e9 / ns as f64 },
            rtt: self.total.stats(),
            histogram: self.total.buckets(),
        };
        (self.intervals, summary, self.kept)
    }
}

/// Runs the test's intervals; what was measured, and why the test could not finish if it
/// could not (the server lost, a stream failed), in which case the figures end there.
async fn drive(
    workers: &Workers,
    spec: &LatencySpec,
    (events, keep): (&UnboundedSender<Event>, bool),
    cancel: &CancellationToken,
    control: Option<&mut (Framed, ClientState)>,
) -> (Outcome, Option<ClientError>) {
    let mut sampler = RttSampler {
        workers,
        spec,
        events,
        total: RttHistogram::default(),
        intervals: Vec::new(),
        last: (0, 0, 0, 0),
        measured: (0, 0, 0, 0),
        kept: keep.then(EncodedHistograms::new),
    };
    let timed = spec.count.is_none().then(|| spec.total_ns());
    let clock = Clock::new(spec.interval_ns, timed, spec.warmup_ns, Ending::Stop);
    let mut timers = Timers::start(clock, workers.begin, false);
    let why = || workers.first_error().unwrap_or_else(|| "a stream failed".into());
    let failure = handshake::test_failure(control.map(|(c, s)| (c, s)), &workers.failed, why);
    let (interrupted, mut failure) =
        match intervals::drive_until(&mut sampler, &mut timers, cancel, failure).await {
            Ok(interrupted) => (interrupted, None),
            Err(cause) => (false, Some(cause)),
        };
    // A counted test whose streams all failed ends as finished: still a failure.
    if failure.is_none() {
        failure = workers.first_error().map(ClientError::Stream);
    }
    workers.threads.stop.store(true, Relaxed);
    let end = workers.begin.elapsed().as_nanos() as u64;
    let last = timers.clock().last(end);
    sampler.close(last.end_ns, last.omitted);
    let (intervals, summary, kept) = sampler.finish();
    ((intervals, summary, interrupted, kept), failure)
}

/// The spec's validation refuses QUIC with `--external`; this says so if it ever gets further.
fn no_quic() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "an external echo service is TCP or UDP, not QUIC")
}
