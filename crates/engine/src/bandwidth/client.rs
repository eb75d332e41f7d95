//! The client half of a bandwidth test: resolve, connect, handshake, open the data streams,
//! run until the time or byte budget is spent (or the user interrupts), then collect both
//! ends' figures into a [`Report`].

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use std::io::Write;
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::report::{BandwidthReport, Meta, Report, ReportBody};
use wirespeed_model::spec::{BandwidthSpec, End, Flow, Protocol, TestSpec};
use wirespeed_model::units::CivilTime;
use wirespeed_model::Event;
use wirespeed_proto::auth;
use wirespeed_proto::codec::{from_hex, ConnKind, DataHello, Preamble, SESSION_ID_LEN};
use wirespeed_proto::control::{ClientMessage, ClientState, ServerMessage, ServerResults};
use wirespeed_proto::datagram::{UdpHello, Wire};

use super::collect::{Collector, LocalEnd};
use super::workers::{self, Attached, Role, Side};
use crate::error::ClientError;
use crate::framed::{FrameError, Framed};

/// How long each handshake step may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for the server's results after `Stop`.
const RESULTS_TIMEOUT: Duration = Duration::from_secs(15);
/// How often a UDP stream hello is repeated until answered, and how many times.
const UDP_HELLO_RETRY: Duration = Duration::from_millis(200);
const UDP_HELLO_TRIES: u32 = 25;

/// IP version to use for the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// IPv4 only (`-4`).
    V4,
    /// IPv6 only (`-6`).
    V6,
}

/// Everything the client needs besides the spec.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The test.
    pub spec: BandwidthSpec,
    /// Host name or address of the server.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// Restrict to one IP version.
    pub family: Option<Family>,
    /// Local address to send from (`-B`).
    pub bind: Option<IpAddr>,
    /// Shared secret for servers started with `--token`.
    pub token: Option<String>,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// This client's version, sent in `Hello` and recorded in the report.
    pub version: String,
}

fn protocol<E: std::fmt::Display>(e: E) -> ClientError {
    ClientError::Protocol(e.to_string())
}

fn lost(e: FrameError) -> ClientError {
    match e {
        FrameError::Invalid(why) => ClientError::Protocol(why),
        other => ClientError::ServerGone(other.to_string()),
    }
}

async fn recv_server(
    ctl: &mut Framed,
    state: &mut ClientState,
    limit: Option<Duration>,
) -> Result<ServerMessage, ClientError> {
    let msg: ServerMessage = match limit {
        Some(l) => ctl.recv_within(l).await,
        None => ctl.recv().await,
    }
    .map_err(|e| match e {
        FrameError::Invalid(why) => {
            ClientError::Protocol(format!("not a wirespeed server, or a broken one: {why}"))
        }
        other => ClientError::ServerGone(other.to_string()),
    })?;
    state.on_server(&msg).map_err(protocol)?;
    match msg {
        ServerMessage::Abort { reason } => Err(ClientError::Aborted(reason)),
        ServerMessage::Refused { code, message } => Err(ClientError::Refused { code, message }),
        other => Ok(other),
    }
}

/// Resolves `host:port`, keeping only addresses of `family`.
pub async fn resolve(
    host: &str,
    port: u16,
    family: Option<Family>,
) -> Result<Vec<SocketAddr>, ClientError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let found: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|source| ClientError::Resolve { host: host.to_string(), source })?
        .collect();
    let keep: Vec<SocketAddr> = found
        .into_iter()
        .filter(|a| match family {
            Some(Family::V4) => a.is_ipv4(),
            Some(Family::V6) => a.is_ipv6(),
            None => true,
        })
        .collect();
    if keep.is_empty() {
        let family = if family == Some(Family::V6) { "IPv6" } else { "IPv4" };
        return Err(ClientError::NoAddress { host: host.to_string(), family });
    }
    Ok(keep)
}

pub(crate) async fn connect_control(
    addrs: &[SocketAddr],
    bind: Option<IpAddr>,
    limit: Duration,
) -> Result<TcpStream, ClientError> {
    let mut last = None;
    for &addr in addrs {
        let attempt = async {
            let sock = match addr {
                SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
            };
            if let Some(ip) = bind {
                sock.bind(SocketAddr::new(ip, 0))?;
            }
            sock.connect(addr).await
        };
        match tokio::time::timeout(limit, attempt).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(source)) => last = Some(ClientError::Connect { addr, source }),
            Err(_) => {
                last = Some(ClientError::Connect {
                    addr,
                    source: std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer within {limit:?}"),
                    ),
                })
            }
        }
    }
    Err(last.unwrap_or_else(|| unreachable!("resolve returns at least one address")))
}

/// Runs one bandwidth test and returns its report. Events go to `events` as they happen;
/// cancelling `cancel` ends the test early but still collects and reports what was measured.
pub async fn run(
    opts: ClientOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let start_wall = SystemTime::now();
    let addrs = resolve(&opts.host, opts.port, opts.family).await?;
    let stream = connect_control(&addrs, opts.bind, opts.connect_timeout).await?;
    let server_addr = stream
        .peer_addr()
        .map_err(|source| ClientError::Local { context: "control socket".into(), source })?;
    let local_addr = stream.local_addr().ok();
    let mut ctl = Framed::new(stream, Vec::new());
    let mut state = ClientState::default();
    ctl.send_raw(&Preamble::encode(ConnKind::Control)).await.map_err(lost)?;
    ctl.send(&ClientMessage::Hello { version: opts.version.clone() }).await.map_err(lost)?;
    let ServerMessage::Challenge { version: server_version, nonce, auth_required } =
        recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
    else {
        unreachable!("the state machine only lets a challenge through first")
    };
    let proof = match (&opts.token, auth_required) {
        (Some(token), _) => {
            let nonce = from_hex::<{ auth::NONCE_LEN }>(&nonce)
                .ok_or_else(|| protocol("malformed nonce"))?;
            Some(auth::prove(token, &nonce))
        }
        (None, true) => return Err(ClientError::TokenRequired),
        (None, false) => None,
    };
    let start = ClientMessage::Start { spec: TestSpec::Bandwidth(opts.spec.clone()), auth: proof };
    ctl.send(&start).await.map_err(lost)?;
    let ServerMessage::Accepted { session, spec, notes } =
        recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
    else {
        unreachable!("the state machine only lets accepted or refused through")
    };
    let TestSpec::Bandwidth(spec) = spec;
    let session =
        from_hex::<SESSION_ID_LEN>(&session).ok_or_else(|| protocol("malformed session id"))?;
    if spec.protocol != opts.spec.protocol
        || spec.parallel != opts.spec.parallel
        || spec.direction != opts.spec.direction
    {
        return Err(protocol("the server changed the test's shape"));
    }

    let mut meta = Meta {
        version: opts.version.clone(),
        host: hostname(),
        start_time: humantime_rfc3339(start_wall),
        start_unix_ms: start_wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
        local_addr: local_addr.map(|a| a.to_string()),
        remote_addr: Some(server_addr.to_string()),
        server_version: Some(server_version),
        notes,
    };
    let sockets = {
        let spec = spec.clone();
        let bind = opts.bind;
        tokio::task::spawn_blocking(move || open_streams(&spec, server_addr, bind, session))
            .await
            .map_err(|e| ClientError::Local {
                context: "opening data streams".into(),
                source: std::io::Error::other(e),
            })??
    };
    meta.notes.extend(sockets.1);
    let ServerMessage::Begin = recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
    else {
        unreachable!("the state machine only lets begin through after accepted")
    };
    let side = Side::start(End::Client, &spec, Wire::Wirespeed, sockets.0)
        .map_err(|source| ClientError::Local { context: "starting data threads".into(), source })?;
    let _ =
        events.send(Event::Start { spec: TestSpec::Bandwidth(spec.clone()), meta: meta.clone() });
    let (intervals, summary, interrupted) =
        drive(&mut ctl, &mut state, side, &spec, &events, &cancel).await?;
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    ctl.close().await;
    let report =
        Report { body: ReportBody::Bandwidth(BandwidthReport { spec, intervals, summary }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

type Outcome = (
    Vec<wirespeed_model::report::BandwidthInterval>,
    wirespeed_model::report::BandwidthSummary,
    bool,
);

async fn drive(
    ctl: &mut Framed,
    state: &mut ClientState,
    mut side: Side,
    spec: &BandwidthSpec,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Result<Outcome, ClientError> {
    let mut collector = Collector::new(spec.clone());
    let begin = tokio::time::Instant::now();
    let interval = Duration::from_nanos(spec.interval_ns);
    let mut ticks = tokio::time::interval_at(begin + interval, interval);
    let mut at_omit = if spec.omit_ns == 0 { Some(side.zeros()) } else { None };
    let omit_at = tokio::time::sleep_until(begin + Duration::from_nanos(spec.omit_ns));
    tokio::pin!(omit_at);
    let timed = spec.bytes.is_none();
    let deadline = tokio::time::sleep_until(
        begin + Duration::from_nanos(if timed { spec.total_ns() } else { u64::MAX / 4 }),
    );
    tokio::pin!(deadline);
    let mut remote_sent_download = 0u64;
    // When the warm-up ends on an interval boundary, the tick's snapshot is the warm-up's end,
    // so the summary equals the sum of the measured intervals exactly.
    let omit_on_tick = spec.omit_ns % spec.interval_ns == 0;
    let mut tick_count = 0u64;
    let mut interrupted = false;
    let emit = |ivs: Vec<_>| {
        for iv in ivs {
            let _ = events.send(Event::Interval(iv));
        }
    };
    let bytes_done = |side: &Side, remote_sent: u64| {
        let download_done = match spec.protocol {
            // UDP has no end-of-stream: the server's ticks say when it has sent its budget.
            Protocol::Udp => {
                !spec.direction.server_sends() || spec.bytes.is_some_and(|b| remote_sent >= b)
            }
            Protocol::Tcp => side.finished(Role::Recv),
        };
        side.finished(Role::Send) && download_done
    };
    loop {
        if !timed && bytes_done(&side, remote_sent_download) {
            break;
        }
        tokio::select! {
            _ = &mut deadline => break,
            _ = cancel.cancelled() => { interrupted = true; break; }
            _ = ticks.tick() => {
                let now = side.shared.now_ns();
                tick_count += 1;
                if !timed || now + 1_000_000 < spec.total_ns() {
                    let snap = side.snapshot();
                    if omit_on_tick && at_omit.is_none() && tick_count * spec.interval_ns == spec.omit_ns {
                        at_omit = Some(snap.clone());
                    }
                    emit(collector.local_tick(now, &snap));
                }
            }
            _ = &mut omit_at, if at_omit.is_none() && !omit_on_tick => at_omit = Some(side.snapshot()),
            msg = recv_server(ctl, state, None) => match msg? {
                ServerMessage::Tick { index, streams } => {
                    remote_sent_download = streams.iter().filter(|s| s.flow == Flow::Download).map(|s| s.totals.bytes).sum();
                    emit(collector.remote_tick(index, &streams));
                }
                other => return Err(protocol(format!("unexpected {} message before the test ended", other.name()))),
            },
            Some(done) = side.next_done() => {
                if let Some(err) = done.error {
                    return Err(explain_stream_failure(ctl, state, err).await);
                }
            }
        }
    }
    let at_omit = at_omit.unwrap_or_else(|| side.snapshot());
    ctl.send(&ClientMessage::Stop).await.map_err(lost)?;
    side.stop_sending();
    let results = tokio::time::timeout(RESULTS_TIMEOUT, async {
        loop {
            match recv_server(ctl, state, None).await? {
                ServerMessage::Tick { index, streams } => {
                    emit(collector.remote_tick(index, &streams))
                }
                ServerMessage::Results(r) => return Ok::<ServerResults, ClientError>(*r),
                other => {
                    return Err(protocol(format!("unexpected {} message after stop", other.name())))
                }
            }
        }
    })
    .await
    .map_err(|_| {
        ClientError::ServerGone(format!("no results within {RESULTS_TIMEOUT:?} of stopping"))
    })??;
    // The server has stopped sending by now: TCP receivers see EOF, UDP receivers drain.
    side.drain();
    let finished = tokio::time::timeout(Duration::from_secs(5), async {
        side.wait_role(Role::Send).await;
        side.wait_role(Role::Recv).await;
    })
    .await;
    if finished.is_err() {
        return Err(ClientError::Stream(
            "local data streams did not finish after the server's results".into(),
        ));
    }
    if let Some(err) = side.first_error() {
        return Err(ClientError::Stream(err));
    }
    let mut active_ns = side.active_ns(Role::Send, spec.omit_ns);
    active_ns.extend(side.active_ns(Role::Recv, spec.omit_ns));
    let local = LocalEnd {
        at_omit,
        at_end: side.snapshot(),
        end_ns: side.shared.now_ns(),
        active_ns,
        cpu_ns: side.cpu_ns(),
    };
    let live = collector.emitted();
    let (intervals, summary) = collector.finish(&local, &results);
    emit(intervals[live.min(intervals.len())..].to_vec());
    Ok((intervals, summary, interrupted))
}

/// A data stream failed: if the server said why (it aborted the test, or closed the control
/// connection), that is the better message; otherwise the stream's own error.
async fn explain_stream_failure(
    ctl: &mut Framed,
    state: &mut ClientState,
    err: String,
) -> ClientError {
    loop {
        match tokio::time::timeout(Duration::from_secs(1), recv_server(ctl, state, None)).await {
            Ok(Ok(ServerMessage::Tick { .. })) => continue,
            Ok(Err(e @ (ClientError::Aborted(_) | ClientError::ServerGone(_)))) => return e,
            _ => return ClientError::Stream(err),
        }
    }
}

/// Opens every data stream of the session (blocking); returns the sockets and any notes about
/// options the OS did not take.
fn open_streams(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    session: [u8; SESSION_ID_LEN],
) -> Result<(Vec<Attached>, Vec<String>), ClientError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for &flow in Flow::of(spec.direction) {
        for id in 1..=spec.parallel {
            let socket = match spec.protocol {
                Protocol::Tcp => open_tcp(
                    spec,
                    server,
                    bind,
                    DataHello { session, flow, stream: id },
                    &mut notes,
                )?,
                Protocol::Udp => open_udp(
                    spec,
                    server,
                    bind,
                    UdpHello { ack: false, session, flow, stream: id },
                    &mut notes,
                )?,
            };
            out.push(Attached { flow, id, socket });
        }
    }
    notes.sort();
    notes.dedup();
    Ok((out, notes))
}

pub(crate) fn local_err(context: &str) -> impl Fn(std::io::Error) -> ClientError + '_ {
    move |source| ClientError::Local { context: context.to_string(), source }
}

fn open_tcp(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    hello: DataHello,
    notes: &mut Vec<String>,
) -> Result<Socket, ClientError> {
    let sock = Socket::new(Domain::for_address(server), Type::STREAM, Some(SockProto::TCP))
        .map_err(local_err("data socket"))?;
    notes.extend(workers::tune_tcp(&sock, spec, server.is_ipv6()));
    if let Some(ip) = bind {
        sock.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(local_err("binding the data socket"))?;
    }
    sock.connect_timeout(&server.into(), HANDSHAKE_TIMEOUT)
        .map_err(|source| ClientError::Connect { addr: server, source })?;
    let mut hello_bytes = Preamble::encode(ConnKind::Data).to_vec();
    hello_bytes.extend_from_slice(&hello.encode());
    (&sock)
        .write_all(&hello_bytes)
        .map_err(|e| ClientError::ServerGone(format!("data stream hello: {e}")))?;
    Ok(sock)
}

fn open_udp(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    hello: UdpHello,
    notes: &mut Vec<String>,
) -> Result<Socket, ClientError> {
    let sock = Socket::new(Domain::for_address(server), Type::DGRAM, Some(SockProto::UDP))
        .map_err(local_err("UDP socket"))?;
    notes.extend(workers::tune_udp(&sock, spec, server.is_ipv6()));
    let local = bind.unwrap_or(match server {
        SocketAddr::V4(_) => IpAddr::from([0, 0, 0, 0]),
        SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
    });
    sock.bind(&SockAddr::from(SocketAddr::new(local, 0)))
        .map_err(local_err("binding the UDP socket"))?;
    sock.connect(&server.into()).map_err(|source| ClientError::Connect { addr: server, source })?;
    sock.set_read_timeout(Some(UDP_HELLO_RETRY)).map_err(local_err("UDP socket"))?;
    let bytes = hello.encode();
    let mut buf = [0u8; 128];
    for _ in 0..UDP_HELLO_TRIES {
        // Refused means nothing listens on the port; keep trying until the tries run out.
        let _ = sock.send(&bytes);
        if let Ok(n) = (&sock).read_ack(&mut buf) {
            if UdpHello::decode(&buf[..n]).is_ok_and(|a| {
                a.ack
                    && a.session == hello.session
                    && a.stream == hello.stream
                    && a.flow == hello.flow
            }) {
                return Ok(sock);
            }
        }
    }
    Err(ClientError::ServerGone(format!(
        "the server did not answer UDP stream {} on {server} after {UDP_HELLO_TRIES} tries (is UDP blocked?)",
        hello.stream
    )))
}

trait ReadAck {
    fn read_ack(&self, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl ReadAck for &Socket {
    fn read_ack(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::io::Read::read(&mut &**self, buf)
    }
}

pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `t` as RFC 3339 in UTC with second precision.
pub fn humantime_rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let c = CivilTime::from_unix(secs);
    let (h, m, s) = c.hms;
    format!("{:04}-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z", c.year, c.month, c.day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(humantime_rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            humantime_rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_212_800)),
            "2026-12-02T12:00:00Z"
        );
        assert_eq!(
            humantime_rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }
}
