//! The ping client. ICMP and UDP probes are datagrams: one leaves every `-i`, several may be
//! in flight, each answer is matched to its probe by sequence number, and a probe unanswered
//! after `-W` is lost. TCP and HTTP probes are connections and run one after another, each
//! bounded by `-W`. A UDP ping is a latency test underneath: the wirespeed server echoes the
//! datagrams of a session it admitted (allow list, token and limits apply). Probes run on a
//! blocking thread; the user's interrupt ends the run and still gives the summary.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime};

use socket2::Socket;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::flow::Flow;
use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::kinds::ping::{
    PingMode, PingProbe, PingReport, PingSpec, PingSummary, ProbeOutcome, MAX_LISTED_PROBES,
};
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::rules::Protocol;
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::control::{ClientMessage, ClientState, ServerMessage};
use wirespeed_proto::datagram::UdpHello;
use wirespeed_proto::http_url::HttpUrl;
use wirespeed_proto::icmp::{unreachable_reason, IcmpMessage, PROTO_ICMP, PROTO_ICMPV6};

use super::probes;
use crate::error::ClientError;
use crate::net::framed::Framed;
use crate::net::handshake::{self, lost, protocol, recv_server, Endpoint, HANDSHAKE_TIMEOUT};
use crate::net::icmp::{IcmpSocket, IcmpSocketKind};
use crate::net::streams::open_udp;
use crate::run::blocking::run_stoppable;

/// Everything a ping needs.
#[derive(Debug, Clone)]
pub struct PingOptions {
    /// The test.
    pub spec: PingSpec,
    /// The host (and, for `--udp`, the wirespeed server's port, token and so on).
    pub endpoint: Endpoint,
    /// Which ICMP socket to use.
    pub icmp_socket: IcmpSocketKind,
}

/// What a probe is sent with.
enum Prober {
    Icmp { socket: IcmpSocket, to: IpAddr },
    Udp { socket: Socket },
    Tcp { to: SocketAddr, bind: Option<IpAddr> },
    Http { to: SocketAddr, bind: Option<IpAddr>, request: Vec<u8> },
}

/// Runs one ping and returns its report; each probe's line goes to `events` as it ends.
pub async fn run(
    opts: PingOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let ep = &opts.endpoint;
    let mut spec = opts.spec.clone();
    // The report shows and keeps the URL without its password; the probes use it whole.
    if let PingMode::Http { url } = &mut spec.mode {
        *url = HttpUrl::redacted(url);
    }
    let start_wall = SystemTime::now();
    let first = |addrs: Vec<SocketAddr>| addrs[0];
    let mut control = None;
    let (address, prober) = match &opts.spec.mode {
        PingMode::Icmp => {
            let ip = first(handshake::resolve(&ep.host, 0, ep.family).await?).ip();
            let socket = IcmpSocket::open(ip.is_ipv6(), opts.icmp_socket)
                .map_err(ClientError::local("opening an ICMP socket"))?;
            if let Some(b) = ep.bind {
                socket.bind(b).map_err(|source| ClientError::Local {
                    context: format!("binding to {b}"),
                    cause: source,
                })?;
            }
            (ip.to_string(), Prober::Icmp { socket, to: ip })
        }
        PingMode::Tcp { port } => {
            let to = first(handshake::resolve(&ep.host, *port, ep.family).await?);
            (to.to_string(), Prober::Tcp { to, bind: ep.bind })
        }
        PingMode::Http { url } => {
            let target = probes::http_target(url).map_err(ClientError::Protocol)?;
            let to = first(handshake::resolve(&target.host, target.port, ep.family).await?);
            let request = probes::probe_request(&target);
            (to.to_string(), Prober::Http { to, bind: ep.bind, request })
        }
        PingMode::Udp { .. } => {
            let (ctl, state, socket, server) = open_udp_echo(ep, &spec).await?;
            control = Some((ctl, state));
            (server.to_string(), Prober::Udp { socket })
        }
    };
    let mut meta = crate::run::meta::run_meta(&ep.version, start_wall, None);
    meta.remote_addr = Some(address.clone());
    let _ = events.send(Event::Start { spec: TestSpec::Ping(spec.clone()), meta: meta.clone() });
    let udp = control.is_some();
    let (probes, summary, failed) = {
        let (spec, events) = (spec.clone(), events.clone());
        run_stoppable(&cancel, move |stop| {
            let mut run = ProbeRun::new(&spec, &events, stop);
            // A probing loop that fails keeps the probes that ended before it.
            let failed = run.probe(prober).err();
            let (probes, summary) = run.finish(address);
            (probes, summary, failed)
        })
        .await?
    };
    let mut failure = failed.map(|cause| match cause.kind() {
        io::ErrorKind::ConnectionRefused if udp => ClientError::ServerGone(cause.to_string()),
        _ => ClientError::Local { context: "probing".into(), cause },
    });
    if let Some((mut ctl, mut state)) = control {
        // The session is ended even after a failure (a firewall's "unreachable" leaves the
        // server running); the first failure is the one reported.
        if let Err(e) = end_udp_echo(&mut ctl, &mut state).await {
            failure.get_or_insert(e);
        }
        ctl.close().await;
    }
    if cancel.is_cancelled() {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    let report = Report { body: ReportBody::Ping(PingReport { spec, probes, summary }), meta };
    if let Some(cause) = failure {
        return Err(ClientError::partial(report, cause));
    }
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// Starts the latency session a UDP ping runs in and returns its echo socket.
async fn open_udp_echo(
    ep: &Endpoint,
    spec: &PingSpec,
) -> Result<(Framed, ClientState, Socket, SocketAddr), ClientError> {
    let mut echo = LatencySpec::new(spec.target.clone(), Protocol::Udp);
    echo.length = spec.size;
    echo.timeout_ns = spec.timeout_ns;
    // Counted, so the server holds the session until our Stop (or its own time limit).
    echo.count = Some(spec.count.unwrap_or(u64::MAX / 2));
    let opened = handshake::open(ep, TestSpec::Latency(echo)).await?;
    let handshake::Opened { mut ctl, mut state, server_addr, session, spec: accepted, .. } = opened;
    let TestSpec::Latency(accepted) = accepted else {
        return Err(protocol("the server accepted a different kind of test"));
    };
    if accepted.protocol != Protocol::Udp || accepted.parallel != 1 {
        return Err(protocol("the server accepted a different echo than the one asked"));
    }
    let bind = ep.bind;
    // The echo is stream 1 of the latency session, as a latency client would open it.
    let hello = UdpHello { ack: false, session, flow: Flow::Upload, stream: 1 };
    let socket = tokio::task::spawn_blocking(move || {
        open_udp(server_addr, bind, hello, &|_| Vec::new(), &mut Vec::new())
    })
    .await
    .map_err(ClientError::joined("opening the UDP socket"))??;
    let ServerMessage::Begin = recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
    else {
        unreachable!("the state machine only lets begin through after accepted")
    };
    Ok((ctl, state, socket, server_addr))
}

async fn end_udp_echo(ctl: &mut Framed, state: &mut ClientState) -> Result<(), ClientError> {
    ctl.send(&ClientMessage::Stop).await.map_err(lost)?;
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, recv_server(ctl, state, None)).await {
        Ok(Ok(ServerMessage::Results(_))) => Ok(()),
        Ok(Ok(other)) => Err(protocol(format!("unexpected {} message after stop", other.name()))),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ClientError::ServerGone("no results after stop".into())),
    }
}

/// An answer to a datagram probe.
struct Answer {
    /// The probe's sequence number as the wire carries it.
    seq: u64,
    outcome: ProbeOutcome,
}

/// One run's probes and running totals.
struct ProbeRun<'a> {
    spec: &'a PingSpec,
    events: &'a UnboundedSender<Event>,
    stop: &'a AtomicBool,
    begin: Instant,
    timeout: Duration,
    interval: Duration,
    payload: Vec<u8>,
    histogram: RttHistogram,
    probes: Vec<PingProbe>,
    sent: u64,
    received: u64,
    errors: u64,
    /// When the last probe ended.
    last_end: Instant,
}

impl<'a> ProbeRun<'a> {
    fn new(spec: &'a PingSpec, events: &'a UnboundedSender<Event>, stop: &'a AtomicBool) -> Self {
        let mut payload = vec![0u8; spec.size as usize];
        // ping's pattern: the bytes count up, so a corrupted echo is easy to spot in a capture.
        for (i, b) in payload.iter_mut().enumerate() {
            *b = i as u8;
        }
        let now = Instant::now();
        Self {
            spec,
            events,
            stop,
            begin: now,
            timeout: Duration::from_nanos(spec.timeout_ns),
            interval: Duration::from_nanos(spec.interval_ns),
            payload,
            histogram: RttHistogram::default(),
            probes: Vec::new(),
            sent: 0,
            received: 0,
            errors: 0,
            last_end: now,
        }
    }

    /// True while another probe may be sent.
    fn more(&self) -> bool {
        let within =
            self.spec.deadline_ns.is_none_or(|d| self.begin.elapsed() < Duration::from_nanos(d));
        !self.stop.load(Relaxed) && within && self.spec.count.is_none_or(|c| self.sent < c)
    }

    fn ended(&mut self, seq: u64, sent_at: Instant, outcome: ProbeOutcome) {
        match &outcome {
            ProbeOutcome::Reply { rtt_ns, .. } => {
                self.received += 1;
                self.histogram.record(*rtt_ns);
            }
            ProbeOutcome::Error { .. } => self.errors += 1,
            ProbeOutcome::Lost => {}
        }
        self.last_end = Instant::now();
        let probe = PingProbe {
            seq,
            sent_ns: sent_at.duration_since(self.begin).as_nanos() as u64,
            outcome,
        };
        let _ = self.events.send(Event::PingProbe(probe.clone()));
        if self.probes.len() < MAX_LISTED_PROBES {
            self.probes.push(probe);
        }
    }

    fn probe(&mut self, prober: Prober) -> io::Result<()> {
        match prober {
            Prober::Tcp { to, bind } => {
                let timeout = self.timeout;
                self.one_at_a_time(|| probes::tcp(to, bind, timeout));
                Ok(())
            }
            Prober::Http { to, bind, request } => {
                let timeout = self.timeout;
                self.one_at_a_time(|| probes::http(to, bind, &request, timeout));
                Ok(())
            }
            Prober::Icmp { socket, to } => {
                let mut buf = vec![0u8; 65_536];
                self.in_flight(
                    |seq, payload| socket.send_echo(to, seq as u16, payload),
                    |wait| icmp_answer(&socket, &mut buf, wait, to),
                )
            }
            Prober::Udp { socket } => {
                let mut buf = vec![0u8; 65_536];
                self.in_flight(
                    |seq, payload| {
                        payload[..8].copy_from_slice(&seq.to_be_bytes());
                        socket.send(payload).map(drop).map_err(|e| match e.raw_os_error() {
                            Some(libc::ECONNREFUSED) => stopped_echoing(e),
                            _ => e,
                        })
                    },
                    |wait| udp_answer(&socket, &mut buf, wait),
                )
            }
        }
    }

    /// Connection probes: each runs to its end before the next is due.
    fn one_at_a_time(&mut self, mut probe: impl FnMut() -> ProbeOutcome) {
        let mut due = self.begin;
        while self.more() {
            let now = Instant::now();
            if due > now {
                // Sleep in slices so an interrupt is seen within 100 ms.
                std::thread::sleep((due - now).min(Duration::from_millis(100)));
                continue;
            }
            self.sent += 1;
            let sent_at = Instant::now();
            let outcome = probe();
            self.ended(self.sent, sent_at, outcome);
            due += self.interval;
        }
    }

    /// Datagram probes: one leaves every interval while earlier ones may still be in flight.
    fn in_flight(
        &mut self,
        mut send: impl FnMut(u64, &mut [u8]) -> io::Result<()>,
        mut recv: impl FnMut(Duration) -> io::Result<Option<Answer>>,
    ) -> io::Result<()> {
        let mut waiting: BTreeMap<u64, Instant> = BTreeMap::new();
        let mut due = self.begin;
        let mut payload = self.payload.clone();
        loop {
            let sending = self.more();
            if !sending && (waiting.is_empty() || self.stop.load(Relaxed)) {
                break;
            }
            let now = Instant::now();
            if sending && now >= due {
                self.sent += 1;
                let seq = self.sent;
                match send(seq, &mut payload) {
                    Ok(()) => {
                        waiting.insert(seq, Instant::now());
                    }
                    // The echo server is gone: this probe and those waiting end with that.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        waiting.insert(seq, now);
                        return Err(self.unanswerable(&mut waiting, e));
                    }
                    // A send the kernel refuses (no route, say) is that probe's answer.
                    Err(e) => self.ended(seq, now, ProbeOutcome::Error { reason: e.to_string() }),
                }
                due += self.interval;
                continue;
            }
            let expired: Vec<u64> =
                waiting.iter().filter(|(_, &t)| now >= t + self.timeout).map(|(&s, _)| s).collect();
            for seq in expired {
                if let Some(t) = waiting.remove(&seq) {
                    self.ended(seq, t, ProbeOutcome::Lost);
                }
            }
            let mut wake = now + Duration::from_millis(100);
            if sending {
                wake = wake.min(due);
            }
            if let Some(t) = waiting.values().min() {
                wake = wake.min(*t + self.timeout);
            }
            let answer = match recv(wake.saturating_duration_since(now)) {
                Ok(Some(answer)) => answer,
                Ok(None) => continue,
                Err(e) => return Err(self.unanswerable(&mut waiting, e)),
            };
            // ICMP carries 16 bits of sequence number: match the oldest probe they fit.
            let wide = matches!(self.spec.mode, PingMode::Udp { .. });
            let key = waiting.keys().copied().find(|&s| {
                if wide {
                    s == answer.seq
                } else {
                    s as u16 == answer.seq as u16
                }
            });
            if let Some(seq) = key {
                let sent_at = waiting.remove(&seq).unwrap_or(now);
                let outcome = match answer.outcome {
                    ProbeOutcome::Reply { bytes, ttl, status, .. } => ProbeOutcome::Reply {
                        rtt_ns: sent_at.elapsed().as_nanos() as u64,
                        bytes,
                        ttl,
                        status,
                    },
                    other => other,
                };
                self.ended(seq, sent_at, outcome);
            }
        }
        Ok(())
    }

    /// Ends the probes still `waiting` with `failure`, which stops the run: none can be
    /// answered now, and every probe sent keeps an outcome.
    fn unanswerable(
        &mut self,
        waiting: &mut BTreeMap<u64, Instant>,
        failure: io::Error,
    ) -> io::Error {
        for (seq, sent_at) in std::mem::take(waiting) {
            self.ended(seq, sent_at, ProbeOutcome::Error { reason: failure.to_string() });
        }
        failure
    }

    fn finish(self, address: String) -> (Vec<PingProbe>, PingSummary) {
        let summary = PingSummary {
            address,
            duration_ns: self.last_end.duration_since(self.begin).as_nanos() as u64,
            sent: self.sent,
            received: self.received,
            errors: self.errors,
            loss_ratio: if self.sent == 0 {
                0.0
            } else {
                (self.sent - self.received) as f64 / self.sent as f64
            },
            rtt: self.histogram.stats(),
            histogram: self.histogram.buckets(),
        };
        (self.probes, summary)
    }
}

/// Waits for an ICMP answer to one of our echo requests to `to`: a reply, or an error a
/// router sent about it.
fn icmp_answer(
    socket: &IcmpSocket,
    buf: &mut [u8],
    wait: Duration,
    to: IpAddr,
) -> io::Result<Option<Answer>> {
    let Some(m) = socket.recv(buf, wait)? else { return Ok(None) };
    let ours = |q: &wirespeed_proto::icmp::Quoted| {
        matches!(q.protocol, PROTO_ICMP | PROTO_ICMPV6)
            && q.first == socket.id()
            && q.destination == to
    };
    Ok(match m.message {
        // A raw socket sees every reply on the host; keep the ones from our target to us.
        IcmpMessage::EchoReply { id, seq, .. }
            if !socket.is_raw() || (id == socket.id() && m.from == Some(to)) =>
        {
            Some(Answer {
                seq: u64::from(seq),
                outcome: ProbeOutcome::Reply {
                    rtt_ns: 0,
                    bytes: Some(m.len as u32),
                    ttl: m.ttl,
                    status: None,
                },
            })
        }
        IcmpMessage::Unreachable { code, quoted } if ours(&quoted) => Some(Answer {
            seq: u64::from(quoted.second),
            outcome: ProbeOutcome::Error {
                reason: format!(
                    "{} (from {})",
                    unreachable_reason(to.is_ipv6(), code),
                    m.from.map_or("?".into(), |a| a.to_string())
                ),
            },
        }),
        IcmpMessage::TimeExceeded(quoted) if ours(&quoted) => Some(Answer {
            seq: u64::from(quoted.second),
            outcome: ProbeOutcome::Error {
                reason: format!(
                    "time to live exceeded (from {})",
                    m.from.map_or("?".into(), |a| a.to_string())
                ),
            },
        }),
        _ => None,
    })
}

/// Waits for a UDP echo; its first 8 bytes are the probe's sequence number.
fn udp_answer(socket: &Socket, buf: &mut [u8], wait: Duration) -> io::Result<Option<Answer>> {
    use std::os::fd::AsRawFd;
    if !crate::net::sys::wait_readable(socket.as_raw_fd(), wait)? {
        return Ok(None);
    }
    let n = match crate::net::sys::recv_datagram(socket.as_raw_fd(), buf) {
        Ok(d) => d.len,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
        // The server's port answered "unreachable": it is gone.
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => return Err(stopped_echoing(e)),
        Err(e) => return Err(e),
    };
    if n < 8 {
        return Ok(None);
    }
    let seq = u64::from_be_bytes(buf[..8].try_into().unwrap_or_default());
    Ok(Some(Answer {
        seq,
        outcome: ProbeOutcome::Reply { rtt_ns: 0, bytes: Some(n as u32), ttl: None, status: None },
    }))
}

/// The error for an echo port that answered "unreachable": the server is gone.
fn stopped_echoing(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), "the server stopped echoing (port unreachable)")
}
