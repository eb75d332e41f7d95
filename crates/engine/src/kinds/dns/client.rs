//! `wirespeed dns`'s orchestration: resolve the server once, start the workers — `-T` UDP
//! threads sharing `-c` connected sockets, or `-c` TCP/DoT connections on a runtime of `-T`
//! threads, plus one TCP client for `--tc-retry` — then sample an interval at a time. At the
//! time limit (`-l`) the workers stop sending and wait for what is in flight, as dnsperf
//! does; the run time ends with the last answer or timeout. A run always has a report, even
//! when nothing answered (the report says so, and the caller's exit code does).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::histogram::EncodedHistograms;
use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::dns::{
    DnsConnections, DnsInterval, DnsReport, DnsSpec, DnsSummary, DnsTransport, ExactLatency,
    RcodeCount,
};
use wirespeed_model::member::Stripe;
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::dns::wire::rcode_name;

use super::doh::HttpsClient;
use super::doq::{self, QuicClient};
use super::queries::{Cursor, QuerySet};
use super::shared::Source;
use super::shared::{Control, Part, WorkerShared};
use super::stream::StreamClient;
use super::tracker::{Counts, Tracker, IDS};
use super::udp::UdpWorker;
use crate::error::ClientError;
use crate::net::handshake::{self, Family};
use crate::net::tls::{self, TlsOptions};
use crate::net::{quic, sys};
use crate::run::intervals::{Clock, Ending, Tick, Timers};
use crate::run::pacer::{CatchUp, Pacer};

/// Everything a DNS load test needs.
#[derive(Debug, Clone)]
pub struct DnsOptions {
    /// The test.
    pub spec: DnsSpec,
    /// The queries, encoded.
    pub queries: Arc<QuerySet>,
    /// Restrict the server's address to one IP version.
    pub family: Option<Family>,
    /// DoT's certificates.
    pub tls: TlsOptions,
    /// How long connecting may take (TCP, DoT).
    pub connect_timeout: Duration,
    /// This client's version, for the report.
    pub version: String,
    /// Its part in a run of several members (a run of its own by default).
    pub member: crate::run::member::MemberRun,
}

/// Runs one DNS load test and returns its report.
pub async fn run(
    opts: DnsOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let spec = opts.spec.clone();
    let start_wall = SystemTime::now();
    let addr = handshake::resolve(&spec.server, spec.port, opts.family).await?[0];
    let mut meta = crate::run::meta::run_meta(&opts.version, start_wall, Some(addr));
    let _ = events
        .send(Event::Start { spec: TestSpec::Dns(Box::new(spec.clone())), meta: meta.clone() });
    let control = Arc::new(Control::default());
    let begin = Instant::now();
    let Started { workers, retry, threads } = start(&opts, addr, &control, begin)?;
    let mut sampler = DnsSampler {
        workers: &workers,
        retry: retry.as_ref(),
        total: RttHistogram::default(),
        setup: RttHistogram::default(),
        last: (0, Counts::default()),
        last_hist: RttHistogram::default(),
        intervals: Vec::new(),
        kept: opts.member.keep_histograms.then(Vec::new),
        events: &events,
    };
    // The deadline stops new queries; the run ends when the last answers are in or timed out.
    let clock = Clock::new(spec.interval_ns, spec.duration_ns, 0, Ending::Drain);
    let mut timers = Timers::start(clock, begin, false);
    let mut poll = tokio::time::interval(Duration::from_millis(5));
    let mut reason = "end of file";
    loop {
        tokio::select! {
            biased;
            tick = timers.next() => match tick {
                Tick::Boundary(b) => sampler.close(b.end_ns),
                Tick::Deadline if !control.stop.load(Relaxed) => {
                    control.stop.store(true, Relaxed);
                    reason = "time limit";
                }
                Tick::Deadline | Tick::WarmUpEnded => {}
            },
            _ = cancel.cancelled(), if !control.interrupt.load(Relaxed) => {
                control.interrupt.store(true, Relaxed);
                reason = "interruption";
            }
            _ = poll.tick() => {
                if sampler.finished() {
                    break;
                }
            }
        }
    }
    join(threads).await;
    let end_ns = sampler.end_ns().max(1);
    sampler.close_last(end_ns, timers.clock());
    let mut totals = sampler.counts();
    let retry = sampler.retry_counts();
    if let Some(r) = &retry {
        totals.tc_retry_completed = r.completed;
    }
    let summary = summarize(&spec, &totals, retry.as_ref(), &sampler, end_ns, reason);
    if reason == "interruption" {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    if let Some(note) = silence_note(&summary, &totals) {
        meta.notes.push(note);
    } else if totals.stream_errors > 0 {
        meta.notes.push(stream_errors_note(&totals));
    }
    if summary.unsent > 0 {
        meta.notes.push(format!(
            "{} queries were never sent: the open loop fell more than a burst behind its schedule, had no free ID, or a connection could not be made",
            summary.unsent
        ));
    }
    let intervals = std::mem::take(&mut sampler.intervals);
    if let Some(kept) = sampler.kept.take() {
        let mut h = EncodedHistograms::new();
        h.intervals = kept;
        h.keep("total", &sampler.total);
        h.keep("setup", &sampler.setup);
        meta.histograms = Some(h);
    }
    // Every connection lost and none to be had again: the server went away mid-test (a DoQ
    // server killed 2.5 s into a 6 s run read as "completed 99.90 %", exit 0).
    let cut_off = totals.cut_off > 0 && totals.cut_off == workers.len() as u64;
    let report = Report { body: ReportBody::Dns(DnsReport { spec, intervals, summary }), meta };
    if cut_off && reason != "interruption" {
        let why = format!(
            "its connections closed {:.1} s into the test and none could be made again{}",
            totals.cut_off_at_ns as f64 / 1e9,
            totals
                .last_connect_failure
                .as_deref()
                .map(|e| format!(" (the last: {e})"))
                .unwrap_or_default()
        );
        return Err(ClientError::partial(report, ClientError::ServerGone(why)));
    }
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// Queries whose exchange failed on its own stream (DoQ, DoH), and the last reason.
fn stream_errors_note(t: &Counts) -> String {
    format!(
        "{} queries failed on their own streams and were counted lost at once (the last: {})",
        t.stream_errors,
        t.last_stream_error.as_deref().unwrap_or("unknown")
    )
}

/// What to say about a run in which nothing was answered.
fn silence_note(s: &DnsSummary, t: &Counts) -> Option<String> {
    if s.completed > 0 || s.interrupted > 0 {
        return None;
    }
    let mut why = vec![];
    if s.stray.total() > 0 {
        why.push(format!("{} answers that match no query", s.stray.total()));
    }
    if s.send_errors > 0 {
        why.push(format!(
            "{} sends refused (ICMP unreachable: nothing listens there?)",
            s.send_errors
        ));
    }
    if let Some(c) = &s.connections {
        if c.successful == 0 {
            let last = c.last_failure.as_deref().map(|e| format!(" (the last: {e})"));
            why.push(format!(
                "{} connection attempts, none successful{}",
                c.attempts,
                last.unwrap_or_default()
            ));
        }
    }
    if s.stream_errors > 0 {
        why.push(stream_errors_note(t));
    }
    let timed_out = s.lost.saturating_sub(s.stream_errors);
    if timed_out > 0 {
        why.push(format!("{timed_out} queries timed out"));
    }
    Some(format!(
        "no query was answered: {}",
        if why.is_empty() { "nothing was sent".into() } else { why.join(", ") }
    ))
}

/// The workers of a run, running.
struct Started {
    workers: Vec<Arc<WorkerShared>>,
    retry: Option<Arc<WorkerShared>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Waits for the workers' threads without holding up the runtime.
async fn join(threads: Vec<std::thread::JoinHandle<()>>) {
    let _ = tokio::task::spawn_blocking(move || {
        for t in threads {
            let _ = t.join();
        }
    })
    .await;
}

/// `total` split into `parts` shares, share `i` (the first ones one larger).
fn share(total: u64, parts: u64, i: u64) -> u64 {
    total / parts + u64::from(i < total % parts)
}

/// Starts the run's workers: UDP threads or stream clients (TCP, DoT), and the TC retry
/// client when asked.
fn start(
    opts: &DnsOptions,
    addr: SocketAddr,
    control: &Arc<Control>,
    begin: Instant,
) -> Result<Started, ClientError> {
    let spec = &opts.spec;
    let parts = Parts { opts, control, begin, seed: seed() };
    let mut started = Started { workers: Vec::new(), retry: None, threads: Vec::new() };
    let mut stream_clients = Vec::new();
    let mut retry_tx = None;
    if spec.tc_retry {
        let (tx, rx) = mpsc::channel(IDS);
        retry_tx = Some(tx);
        let part =
            parts.part((IDS as u32, None), Tracker::new(spec.timeout_ns, parts.seed ^ 0x5eed));
        started.retry = Some(part.shared.clone());
        stream_clients.push(StreamClient {
            addr,
            tls: None,
            connect_timeout: opts.connect_timeout,
            quic: None,
            https: None,
            source: Source::Retry { rx, queue: Default::default(), closed: false },
            part,
        });
    }
    match spec.transport {
        DnsTransport::Udp => start_udp(&parts, addr, retry_tx.as_ref(), &mut started)?,
        DnsTransport::Tcp | DnsTransport::Dot | DnsTransport::Doq | DnsTransport::Doh => {
            stream_clients.extend(stream_clients_of(&parts, addr, &mut started)?)
        }
    }
    // The UDP workers hold the retry channel's senders; when they end, it closes.
    drop(retry_tx);
    // The stream clients (and the TC retry client) run on their own runtime, so they never
    // wait on the sampler's, and `-T` sets its threads.
    if !stream_clients.is_empty() {
        started.threads.push(start_stream_runtime(stream_clients, spec.threads)?);
    }
    Ok(started)
}

/// What every worker's part is made from.
struct Parts<'a> {
    opts: &'a DnsOptions,
    control: &'a Arc<Control>,
    begin: Instant,
    /// The run's seed for the ID shuffles.
    seed: u64,
}

impl Parts<'_> {
    /// A worker's part: its window and schedule, its tracker, and what it publishes.
    fn part(&self, (window, pace): (u32, Option<Pacer>), tracker: Tracker) -> Part {
        Part {
            queries: self.opts.queries.clone(),
            window,
            pace,
            tracker,
            shared: Arc::new(WorkerShared::default()),
            control: self.control.clone(),
            begin: self.begin,
        }
    }
}

/// Starts `-T` UDP worker threads, the `-c` sockets shared out among them.
fn start_udp(
    parts: &Parts<'_>,
    addr: SocketAddr,
    retry: Option<&mpsc::Sender<u32>>,
    started: &mut Started,
) -> Result<(), ClientError> {
    let spec = &parts.opts.spec;
    let (len, passes) = (parts.opts.queries.len(), spec.effective_passes());
    let threads = u64::from(spec.threads);
    let mut socket_at = 0u64;
    for i in 0..threads {
        let sockets = share(u64::from(spec.clients), threads, i);
        let socks = (0..sockets)
            .map(|_| udp_socket(addr))
            .collect::<io::Result<Vec<_>>>()
            .map_err(ClientError::local("opening UDP sockets"))?;
        socket_at += sockets;
        let tracker = Tracker::new(spec.timeout_ns, parts.seed.wrapping_add(i));
        let part = parts.part(part_of(spec, threads, i, parts.opts.member.stripe), tracker);
        started.workers.push(part.shared.clone());
        let worker = UdpWorker {
            sockets: socks,
            cursor: Cursor::new(i as usize, threads as usize, len, passes),
            part,
            retry: retry.cloned(),
            gso: true,
            gso_buf: Vec::with_capacity(64 * 1024),
        };
        let handle = std::thread::Builder::new()
            .name(format!("ws-dns-{}", i + 1))
            .spawn(move || {
                if let Err(e) = worker.run() {
                    tracing::warn!("DNS worker failed: {e}");
                }
            })
            .map_err(ClientError::local("starting threads"))?;
        started.threads.push(handle);
    }
    debug_assert_eq!(socket_at, u64::from(spec.clients));
    Ok(())
}

/// One stream client (TCP, DoT or DoQ) per `-c`, each with its share of the window and schedule.
fn stream_clients_of(
    parts: &Parts<'_>,
    addr: SocketAddr,
    started: &mut Started,
) -> Result<Vec<StreamClient>, ClientError> {
    let (opts, spec) = (parts.opts, &parts.opts.spec);
    let (len, passes) = (opts.queries.len(), spec.effective_passes());
    let tls = if spec.transport == DnsTransport::Dot {
        let config = tls::client_config(&opts.tls, &[b"dot"]).map_err(ClientError::local("TLS"))?;
        let name = tls::server_name(&opts.tls, spec.sni.as_deref().unwrap_or(&spec.server))
            .map_err(ClientError::local("TLS"))?;
        Some((config, name))
    } else {
        None
    };
    let quic = if spec.transport == DnsTransport::Doq {
        let crypto =
            tls::client_config(&opts.tls, &[doq::ALPN]).map_err(ClientError::local("TLS"))?;
        let config = quic::client_config(crypto, &quic::Tuning::default())
            .map_err(ClientError::local("QUIC"))?;
        let name = opts.tls.server_name.clone().or_else(|| spec.sni.clone());
        let name = name.unwrap_or_else(|| spec.server.clone());
        Some(QuicClient { config, name })
    } else {
        None
    };
    let https = if spec.transport == DnsTransport::Doh {
        let config = tls::client_config(&opts.tls, &[b"h2"]).map_err(ClientError::local("TLS"))?;
        let name = tls::server_name(&opts.tls, spec.sni.as_deref().unwrap_or(&spec.server))
            .map_err(ClientError::local("TLS"))?;
        let host = if spec.server.contains(':') {
            format!("[{}]", spec.server)
        } else {
            spec.server.clone()
        };
        let h3 = if spec.doh_http3 {
            let crypto =
                tls::client_config(&opts.tls, &[b"h3"]).map_err(ClientError::local("TLS"))?;
            let config = quic::client_config(crypto, &quic::Tuning::default())
                .map_err(ClientError::local("QUIC"))?;
            Some(QuicClient { config, name: name.to_str().into_owned() })
        } else {
            None
        };
        Some(HttpsClient {
            tls: (config, name),
            origin: format!("https://{host}:{}", spec.port),
            path: spec.doh_path.clone().unwrap_or_else(|| "/dns-query".into()),
            method: spec.doh_method,
            h3,
        })
    } else {
        None
    };
    let clients = u64::from(spec.clients);
    let mut out = Vec::new();
    for i in 0..clients {
        let (window, pace) = part_of(spec, clients, i, opts.member.stripe);
        // Eight IDs per place in the window, so a freed ID still waits a while.
        let ids = (window as usize * 8).next_power_of_two().max(1024);
        let tracker = Tracker::with_ids(spec.timeout_ns, parts.seed.wrapping_add(i), ids);
        let part = parts.part((window, pace), tracker);
        started.workers.push(part.shared.clone());
        out.push(StreamClient {
            addr,
            tls: tls.clone(),
            quic: quic.clone(),
            https: https.clone(),
            connect_timeout: opts.connect_timeout,
            source: Source::File(Cursor::new(i as usize, clients as usize, len, passes)),
            part,
        });
    }
    Ok(out)
}

/// Runs the stream clients on a runtime of `threads` threads in a thread of their own.
fn start_stream_runtime(
    clients: Vec<StreamClient>,
    threads: u16,
) -> Result<std::thread::JoinHandle<()>, ClientError> {
    let runtime = crate::run::runtime::for_connections(threads, "ws-dns-stream")
        .map_err(ClientError::local("starting the DNS stream runtime"))?;
    std::thread::Builder::new()
        .name("ws-dns-streams".into())
        .spawn(move || {
            runtime.block_on(async move {
                let tasks: Vec<_> = clients.into_iter().map(|c| tokio::spawn(c.run())).collect();
                for t in tasks {
                    let _ = t.await;
                }
            });
        })
        .map_err(ClientError::local("starting threads"))
}

/// Worker `i` of `parts`' window (its share of `-q`, at least one; the whole ID space in the
/// open loop) and schedule (its share of `--rate` or `-Q`, its first query `i` slots in).
fn part_of(spec: &DnsSpec, parts: u64, i: u64, stripe: Stripe) -> (u32, Option<Pacer>) {
    let open = spec.rate.is_some();
    let window = if open {
        IDS as u32
    } else {
        share(u64::from(spec.max_outstanding), parts, i).max(1) as u32
    };
    // The open loop (`--rate`): a worker that falls more than a burst (2 ms, at least 32)
    // behind skips the missed queries and counts them unsent, so it never catches up in a
    // flood; `-Q`'s ceiling forgets what it missed.
    let pace = spec.rate.or(spec.max_qps).map(|r| {
        let rate = r / parts as f64;
        let burst = ((rate * 0.002).ceil() as u64).max(32);
        let offset_ns = stripe.offset_ns(r, i);
        Pacer::new(rate, offset_ns, CatchUp::Skip { burst, counted: open })
    });
    (window, pace)
}

/// A connected, non-blocking UDP socket to `addr` with a roomy receive buffer (bursts of
/// answers must not overflow it while the worker is busy sending).
fn udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let any: IpAddr =
        if addr.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() };
    let s = UdpSocket::bind((any, 0))?;
    s.connect(addr)?;
    s.set_nonblocking(true)?;
    sys::raise_rcvbuf(s.as_raw_fd(), 4 << 20);
    sys::raise_sndbuf(s.as_raw_fd(), 1 << 20);
    Ok(s)
}

/// A seed for the ID shuffles, different every run.
fn seed() -> u64 {
    let mut b = [0u8; 8];
    sys::fill_random(&mut b);
    u64::from_le_bytes(b)
}

/// Turns the workers' published counts into intervals and totals.
struct DnsSampler<'a> {
    workers: &'a [Arc<WorkerShared>],
    retry: Option<&'a Arc<WorkerShared>>,
    total: RttHistogram,
    setup: RttHistogram,
    last: (u64, Counts),
    /// The last interval's latencies, in case the run's tail joins it.
    last_hist: RttHistogram,
    intervals: Vec<DnsInterval>,
    /// Each interval's latency histogram, encoded, when the run keeps them (a member's).
    kept: Option<Vec<String>>,
    events: &'a UnboundedSender<Event>,
}

impl DnsSampler<'_> {
    /// Every worker's counts, summed (the retry client's are kept apart).
    fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for w in self.workers {
            if let Ok(p) = w.published.lock() {
                c.add(&p.counts);
            }
        }
        c
    }

    fn retry_counts(&self) -> Option<Counts> {
        self.retry.and_then(|r| r.published.lock().ok().map(|p| p.counts.clone()))
    }

    fn finished(&self) -> bool {
        self.workers.iter().chain(self.retry).all(|w| w.done.load(Relaxed))
    }

    fn end_ns(&self) -> u64 {
        self.workers.iter().chain(self.retry).map(|w| w.end_ns.load(Relaxed)).max().unwrap_or(0)
    }

    /// Closes the run's last interval; a sliver (the wait for the last answers) joins the
    /// interval before it, by the clock's rule.
    fn close_last(&mut self, end_ns: u64, clock: &Clock) {
        let short = clock.tail_joins_previous(self.last.0, end_ns);
        match self.intervals.pop() {
            Some(prev) if short => {
                // Reopen the previous interval and close it again at the end.
                let mut before = self.last.1.clone();
                before.sent -= prev.sent;
                before.completed -= prev.completed;
                before.lost -= prev.lost;
                before.truncated -= prev.truncated;
                self.last = (prev.start_ns, before);
                let seed = std::mem::take(&mut self.last_hist);
                if let Some(kept) = self.kept.as_mut() {
                    kept.pop();
                }
                // Already shown live; the report keeps the extended interval.
                self.close_with(end_ns, seed, false);
            }
            Some(prev) => {
                self.intervals.push(prev);
                self.close(end_ns);
            }
            None => self.close(end_ns),
        }
    }

    /// Closes the interval ending at `end_ns`.
    fn close(&mut self, end_ns: u64) {
        self.close_with(end_ns, RttHistogram::default(), true);
    }

    /// Closes the interval ending at `end_ns` whose latencies so far are `earlier` (already
    /// counted in the total).
    fn close_with(&mut self, end_ns: u64, earlier: RttHistogram, emit: bool) {
        let mut h = RttHistogram::default();
        let mut now = Counts::default();
        for w in self.workers.iter().chain(self.retry) {
            if let Ok(mut p) = w.published.lock() {
                if !self.retry.is_some_and(|r| Arc::ptr_eq(r, w)) {
                    h.add(&p.interval);
                    now.add(&p.counts);
                }
                p.interval.clear();
                self.setup.add(&p.setup);
                p.setup.clear();
            }
        }
        self.total.add(&h);
        h.add(&earlier);
        let (start_ns, before) = (self.last.0, &self.last.1);
        if end_ns <= start_ns {
            return;
        }
        let span = (end_ns - start_ns) as f64;
        let iv = DnsInterval {
            index: self.intervals.len() as u32,
            start_ns,
            end_ns,
            sent: now.sent - before.sent,
            completed: now.completed - before.completed,
            lost: now.lost - before.lost,
            truncated: now.truncated - before.truncated,
            queries_per_second: (now.completed - before.completed) as f64 * 1e9 / span,
            latency: h.stats(),
        };
        self.last = (end_ns, now);
        if let Some(kept) = self.kept.as_mut() {
            kept.push(h.encode());
        }
        self.last_hist = h;
        if emit {
            let _ = self.events.send(Event::DnsInterval(iv.clone()));
        }
        self.intervals.push(iv);
    }
}

/// The run's summary.
fn summarize(
    spec: &DnsSpec,
    t: &Counts,
    retry: Option<&Counts>,
    s: &DnsSampler<'_>,
    end_ns: u64,
    reason: &str,
) -> DnsSummary {
    let mut rcodes: Vec<RcodeCount> = t
        .rcodes
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| (code as u16, *n))
        .chain(t.rcodes_high.iter().map(|(c, n)| (*c, *n)))
        .map(|(code, count)| RcodeCount { code, name: rcode_name(code), count })
        .collect();
    rcodes.sort_by_key(|r| r.code);
    let n = t.completed as f64;
    let mean = if t.completed > 0 { t.latency_sum_ns / n } else { 0.0 };
    let stddev = if t.completed > 1 {
        ((t.latency_sum_sq - n * mean * mean) / (n - 1.0)).max(0.0).sqrt()
    } else {
        0.0
    };
    let streams = spec.transport != DnsTransport::Udp || spec.tc_retry;
    let connections = streams.then(|| {
        let mut attempts = t.connect_attempts;
        let mut successful = t.connects;
        let mut last_failure = t.last_connect_failure.clone();
        if let Some(r) = retry {
            attempts += r.connect_attempts;
            successful += r.connects;
            last_failure = last_failure.or_else(|| r.last_connect_failure.clone());
        }
        DnsConnections { attempts, successful, setup: s.setup.stats(), last_failure }
    });
    DnsSummary {
        duration_ns: end_ns,
        end_reason: reason.to_string(),
        sent: t.sent,
        completed: t.completed,
        lost: t.lost,
        interrupted: t.interrupted,
        rcodes,
        truncated: t.truncated,
        tc_retried: t.tc_retried,
        tc_retry_completed: t.tc_retry_completed,
        stray: t.stray,
        send_errors: t.send_errors,
        stream_errors: t.stream_errors,
        unsent: t.unsent,
        request_bytes: t.request_bytes,
        response_bytes: t.response_bytes,
        queries_per_second: t.completed as f64 * 1e9 / end_ns as f64,
        latency: s.total.stats(),
        exact: ExactLatency {
            mean_ns: mean,
            stddev_ns: stddev,
            min_ns: t.latency_min_ns,
            max_ns: t.latency_max_ns,
        },
        histogram: s.total.buckets(),
        connections,
    }
}
