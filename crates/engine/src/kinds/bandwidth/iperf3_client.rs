//! `wirespeed bandwidth --iperf3`: the client half of a test against a stock `iperf3 -s`. It
//! speaks iperf3's control protocol, runs our own stream workers, and builds the same
//! [`Report`] as a test against our server. iperf3 servers share no interval figures, so
//! intervals carry this end's side only; the summary pairs both ends from the results exchange.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime};

use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::kinds::bandwidth::BandwidthReport;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::kinds::bandwidth::{TcpSample, Totals};
use wirespeed_model::report::{Meta, Report, ReportBody};
use wirespeed_model::rules::Protocol;
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::control::{RefuseCode, ServerResults, StreamTotals};
use wirespeed_proto::datagram::Wire;
use wirespeed_proto::iperf3::wire::{self, errno, errno_text, COOKIE_LEN};
use wirespeed_proto::iperf3::{stream_id, stream_slot, Cookie, Params, Results, State};

use super::client::ClientOptions;
use super::collect::{Collector, LocalEnd};
use super::iperf3_results::{local_results, stream_count, totals_of};
use super::schedule::{emit_intervals, finish_and_emit, Outcome, Schedule};
use super::shared::Role;
use super::workers::{self, Side};
use crate::error::ClientError;
use crate::net::handshake::{connect_control, resolve};
use crate::net::sys;
use crate::run::intervals::Tick;
use crate::server::ctx::Attached;

/// How long each handshake step may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the results exchange may take once the test is over.
const RESULTS_TIMEOUT: Duration = Duration::from_secs(15);
/// How long to wait for the server's answer to a UDP connect datagram. iperf3 sends it once
/// (a repeat would open a second stream), so this is the only chance.
const UDP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a byte-count test checks whether its budget is spent.
const BYTES_POLL: Duration = Duration::from_millis(10);

/// Runs one test against a stock iperf3 server; see [`super::client::run`] for the contract.
pub async fn run(
    opts: ClientOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let start_wall = SystemTime::now();
    let spec = opts.spec.clone();
    let ep = &opts.endpoint;
    if spec.protocol == Protocol::Quic {
        return Err(ClientError::Protocol(
            "iperf3 has no QUIC: --quic needs a wirespeed server".into(),
        ));
    }
    if ep.token.is_some() {
        return Err(ClientError::Protocol(
            "--token is wirespeed's; iperf3 servers use RSA authentication, which is not supported"
                .into(),
        ));
    }
    let addrs = resolve(&ep.host, ep.port, ep.family).await?;
    let mut ctl = connect_control(&addrs, ep.bind, ep.connect_timeout).await?;
    let _ = ctl.set_nodelay(true);
    let server_addr = ctl.peer_addr().map_err(ClientError::local("control socket"))?;
    let local_addr = ctl.local_addr().ok();
    let mut random = [0u8; COOKIE_LEN];
    sys::fill_random(&mut random);
    let cookie = Cookie::from_random(random);
    send(&mut ctl, &cookie.0).await?;
    expect_state(&mut ctl, State::ParamExchange).await?;
    let params = Params::from_spec(&spec, false, &format!("wirespeed-{}", ep.version));
    send(&mut ctl, &wire::encode_json(&params.to_json())).await?;
    expect_state(&mut ctl, State::CreateStreams).await?;

    let wire = match spec.protocol {
        Protocol::Tcp | Protocol::Quic => Wire::Wirespeed,
        Protocol::Udp => Wire::Iperf3 { seq64: params.udp_counters_64bit },
    };
    let (sockets, notes) = {
        let spec = spec.clone();
        let bind = ep.bind;
        tokio::task::spawn_blocking(move || open_streams(&spec, server_addr, bind, cookie))
            .await
            .map_err(ClientError::joined("opening data streams"))??
    };
    expect_state(&mut ctl, State::TestStart).await?;
    expect_state(&mut ctl, State::TestRunning).await?;
    let side = Side::start(End::Client, &spec, wire, None, sockets)
        .map_err(ClientError::local("starting data threads"))?;
    let mut meta = Meta {
        local_addr: local_addr.map(|a| a.to_string()),
        server_version: Some("iperf3".into()),
        notes,
        ..crate::run::meta::run_meta(&ep.version, start_wall, Some(server_addr))
    };
    meta.notes.push(
        "iperf3 server: intervals show this end's counts only; the summary has both ends".into(),
    );
    let _ =
        events.send(Event::Start { spec: TestSpec::Bandwidth(spec.clone()), meta: meta.clone() });
    let (intervals, summary, interrupted) = drive(&mut ctl, side, &spec, &events, &cancel).await?;
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    let _ = ctl.shutdown().await;
    let report =
        Report { body: ReportBody::Bandwidth(BandwidthReport { spec, intervals, summary }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

async fn send(ctl: &mut TcpStream, bytes: &[u8]) -> Result<(), ClientError> {
    ctl.write_all(bytes)
        .await
        .map_err(|e| ClientError::ServerGone(format!("control connection: {e}")))
}

/// Reads one state byte, turning iperf3's refusals into our errors.
async fn read_state(ctl: &mut TcpStream, limit: Duration) -> Result<State, ClientError> {
    let mut b = [0u8; 1];
    let n = tokio::time::timeout(limit, ctl.read(&mut b))
        .await
        .map_err(|_| ClientError::ServerGone(format!("no answer within {limit:?}")))?
        .map_err(|e| ClientError::ServerGone(format!("control connection: {e}")))?;
    if n == 0 {
        return Err(ClientError::ServerGone(
            "the iperf3 server closed the control connection".into(),
        ));
    }
    let state = State::from_byte(b[0])
        .map_err(|e| ClientError::Protocol(format!("not an iperf3 server: {e}")))?;
    match state {
        State::AccessDenied => Err(ClientError::Refused {
            code: RefuseCode::Busy,
            message:
                "the iperf3 server is busy running a test (iperf3 serves one client at a time)"
                    .into(),
        }),
        State::ServerError => {
            let mut codes = [0u8; 8];
            let _ = tokio::time::timeout(Duration::from_secs(1), ctl.read_exact(&mut codes)).await;
            let code = i32::from_be_bytes([codes[0], codes[1], codes[2], codes[3]]);
            let os = i32::from_be_bytes([codes[4], codes[5], codes[6], codes[7]]);
            let message = format!("{} (iperf3 error {code}, errno {os})", errno_text(code));
            Err(match code {
                errno::AUTH_TEST => ClientError::Refused { code: RefuseCode::Auth, message },
                errno::SERVER_TERM | errno::TEST_EXPIRED | errno::NO_MSG => {
                    ClientError::Aborted(message)
                }
                _ => ClientError::Refused { code: RefuseCode::Limit, message },
            })
        }
        State::ServerTerminate => {
            Err(ClientError::Aborted("the iperf3 server is shutting down".into()))
        }
        other => Ok(other),
    }
}

async fn expect_state(ctl: &mut TcpStream, want: State) -> Result<(), ClientError> {
    match read_state(ctl, HANDSHAKE_TIMEOUT).await? {
        got if got == want => Ok(()),
        got => Err(ClientError::Protocol(format!(
            "the iperf3 server sent {got:?} where {want:?} belongs"
        ))),
    }
}

/// Opens the data streams in iperf3's order (in `--bidir`, the sending ones first).
fn open_streams(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    cookie: Cookie,
) -> Result<(Vec<Attached>, Vec<String>), ClientError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for &flow in Flow::of(spec.direction) {
        for id in 1..=spec.parallel {
            let socket = match spec.protocol {
                Protocol::Tcp | Protocol::Quic => open_tcp(spec, server, bind, cookie, &mut notes)?,
                Protocol::Udp => open_udp(spec, server, bind, &mut notes)?,
            };
            out.push(Attached { flow, id, socket, open: None });
        }
    }
    notes.sort();
    notes.dedup();
    Ok((out, notes))
}

fn bound_socket(
    server: SocketAddr,
    ty: Type,
    proto: SockProto,
    bind: Option<IpAddr>,
) -> Result<Socket, ClientError> {
    let sock = Socket::new(Domain::for_address(server), ty, Some(proto))
        .map_err(ClientError::local("data socket"))?;
    if let Some(ip) = bind {
        sock.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(ClientError::local("binding the data socket"))?;
    }
    Ok(sock)
}

fn open_tcp(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    cookie: Cookie,
    notes: &mut Vec<String>,
) -> Result<Socket, ClientError> {
    let sock = bound_socket(server, Type::STREAM, SockProto::TCP, bind)?;
    notes.extend(workers::tune_tcp(&sock, spec, server.is_ipv6()));
    sock.connect_timeout(&server.into(), HANDSHAKE_TIMEOUT)
        .map_err(|source| ClientError::Connect { addr: server, cause: source })?;
    (&sock)
        .write_all(&cookie.0)
        .map_err(|e| ClientError::ServerGone(format!("data stream cookie: {e}")))?;
    Ok(sock)
}

fn open_udp(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    notes: &mut Vec<String>,
) -> Result<Socket, ClientError> {
    let sock = bound_socket(server, Type::DGRAM, SockProto::UDP, bind)?;
    if bind.is_none() {
        let any = match server {
            SocketAddr::V4(_) => IpAddr::from([0, 0, 0, 0]),
            SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
        };
        sock.bind(&SockAddr::from(SocketAddr::new(any, 0)))
            .map_err(ClientError::local("binding the UDP socket"))?;
    }
    notes.extend(workers::tune_udp(&sock, spec, server.is_ipv6()));
    sock.connect(&server.into())
        .map_err(|source| ClientError::Connect { addr: server, cause: source })?;
    sock.set_read_timeout(Some(UDP_CONNECT_TIMEOUT)).map_err(ClientError::local("UDP socket"))?;
    sock.send(&wire::UDP_CONNECT_MSG)
        .map_err(|source| ClientError::Connect { addr: server, cause: source })?;
    let mut buf = [0u8; 64];
    match std::io::Read::read(&mut &sock, &mut buf) {
        Ok(4) if buf[..4] == wire::UDP_CONNECT_REPLY || buf[..4] == wire::LEGACY_UDP_CONNECT_REPLY => Ok(sock),
        Ok(n) => Err(ClientError::Protocol(format!("unexpected {n}-byte answer to the UDP connect datagram"))),
        Err(e) => Err(ClientError::ServerGone(format!(
            "the iperf3 server did not answer the UDP connect datagram on {server}: {e} (is UDP blocked?)"
        ))),
    }
}

async fn drive(
    ctl: &mut TcpStream,
    mut side: Side,
    spec: &BandwidthSpec,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Result<Outcome, ClientError> {
    let mut collector = Collector::client_only(spec.clone());
    let mut schedule = Schedule::start(spec, &side);
    let timed = schedule.timed();
    let mut poll = tokio::time::interval(BYTES_POLL);
    let mut interrupted = false;
    let emit = |ivs: Vec<_>| emit_intervals(events, ivs);
    // iperf3's rule: a byte-count test ends when this end has sent or received the count.
    let budget_spent = |side: &Side| {
        let Some(n) = spec.bytes else { return false };
        let received: u64 = side
            .snapshot()
            .iter()
            .filter(|s| s.flow.sender() == End::Server)
            .map(|s| s.totals.bytes)
            .sum();
        (spec.direction.client_sends() && side.finished(Role::Send)) || received >= n
    };
    loop {
        tokio::select! {
            _ = cancel.cancelled() => { interrupted = true; break; }
            _ = poll.tick(), if !timed => if budget_spent(&side) { break },
            tick = schedule.next() => match tick {
                Tick::Deadline => break,
                tick => emit(schedule.on(tick, &side, &mut collector)),
            },
            s = read_state(ctl, Duration::from_secs(86_400 * 365)) => {
                return Err(match s {
                    Ok(other) => ClientError::Protocol(format!("the iperf3 server sent {other:?} during the test")),
                    Err(e) => e,
                });
            }
            Some(done) = side.next_done() => {
                if let Some(err) = done.error {
                    return Err(ClientError::Stream(err));
                }
            }
        }
    }
    let at_omit = schedule.take_omit(&side);
    let (local, theirs) = end_test(ctl, spec, &mut side, at_omit).await?;
    let server = server_results(spec, &theirs, &local.at_omit);
    let (intervals, summary) = finish_and_emit(collector, &local, &server, events);
    Ok((intervals, summary, interrupted))
}

/// Ends the test as iperf3's client does: stop sending, take the counts, tell the server
/// (after what was just sent has had time to arrive), exchange results, then let the
/// receivers count what was still in flight. This end's figures and the server's results.
async fn end_test(
    ctl: &mut TcpStream,
    spec: &BandwidthSpec,
    side: &mut Side,
    at_omit: Vec<StreamTotals>,
) -> Result<(LocalEnd, Results), ClientError> {
    side.stop_sending();
    let _ = tokio::time::timeout(Duration::from_secs(5), side.wait_role(Role::Send)).await;
    let at_stop = side.snapshot();
    let stop_ns = side.shared.now_ns();
    if spec.direction.client_sends() {
        // iperf3's server stops counting at TEST_END; let what we just sent arrive first, or
        // the last datagrams would read as lost. About one round trip, from the control
        // connection's TCP_INFO.
        let rtt = sys::tcp_sample(ctl.as_raw_fd()).map_or(20_000_000, |s| s.rtt_ns);
        let grace = Duration::from_nanos(rtt.saturating_mul(2)) + Duration::from_millis(5);
        tokio::time::sleep(grace.min(Duration::from_millis(250))).await;
    }
    send(ctl, &[State::TestEnd.byte()]).await?;
    let theirs = tokio::time::timeout(
        RESULTS_TIMEOUT,
        exchange_results(ctl, spec, &at_omit, &at_stop, side, stop_ns),
    )
    .await
    .map_err(|_| {
        ClientError::ServerGone(format!("no results within {RESULTS_TIMEOUT:?} of the end"))
    })??;
    // The server stopped sending at TEST_END and has counted what it sent; our receivers keep
    // counting what was still in flight (TCP to end-of-stream, UDP until quiet), so the
    // summary's loss is not inflated by data that was merely late.
    side.drain();
    let _ = tokio::time::timeout(Duration::from_secs(2), side.wait_role(Role::Recv)).await;
    let at_end = side.snapshot();
    let end_ns = side.ended_ns();
    let mut active_ns = side.active_ns(Role::Send, spec.omit_ns);
    active_ns.extend(side.active_ns(Role::Recv, spec.omit_ns));
    side.abort();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while side.next_done().await.is_some() {}
    })
    .await;
    let local = LocalEnd { at_omit, at_end, end_ns, active_ns, cpu_ns: side.cpu_ns() };
    Ok((local, theirs))
}

/// EXCHANGE_RESULTS: our results go first, the server's come back, then DISPLAY_RESULTS and
/// our IPERF_DONE.
async fn exchange_results(
    ctl: &mut TcpStream,
    spec: &BandwidthSpec,
    at_omit: &[StreamTotals],
    at_end: &[StreamTotals],
    side: &Side,
    end_ns: u64,
) -> Result<Results, ClientError> {
    match read_state(ctl, RESULTS_TIMEOUT).await? {
        State::ExchangeResults => {}
        other => {
            return Err(ClientError::Protocol(format!(
                "the iperf3 server sent {other:?} instead of EXCHANGE_RESULTS"
            )))
        }
    }
    let ours = local_results(spec, End::Client, at_omit, at_end, side.cpu_ns(), end_ns);
    send(ctl, &wire::encode_json(&ours.to_json())).await?;
    let mut head = [0u8; 4];
    ctl.read_exact(&mut head)
        .await
        .map_err(|e| ClientError::ServerGone(format!("reading results: {e}")))?;
    let len = u32::from_be_bytes(head);
    if len == 0 || len > wire::MAX_RESULTS_LEN {
        return Err(ClientError::Protocol(format!(
            "the iperf3 server announced {len} bytes of results"
        )));
    }
    let mut frame = head.to_vec();
    frame.resize(4 + len as usize, 0);
    ctl.read_exact(&mut frame[4..])
        .await
        .map_err(|e| ClientError::ServerGone(format!("reading results: {e}")))?;
    let (map, _) = wire::decode_json(&frame, wire::MAX_RESULTS_LEN)
        .map_err(|e| ClientError::Protocol(format!("server results: {e}")))?;
    let theirs = Results::from_json(&map)
        .map_err(|e| ClientError::Protocol(format!("server results: {e}")))?;
    match read_state(ctl, RESULTS_TIMEOUT).await? {
        State::DisplayResults => {}
        other => {
            return Err(ClientError::Protocol(format!(
                "the iperf3 server sent {other:?} instead of DISPLAY_RESULTS"
            )))
        }
    }
    send(ctl, &[State::IperfDone.byte()]).await?;
    Ok(theirs)
}

/// The server's final figures in the shape our collector pairs with ours. iperf3's byte
/// counts already leave out the warm-up, but its UDP datagram counts (highest sequence seen,
/// gaps, datagrams sent) run from the start; the warm-up's share is what the server says it
/// counted when its warm-up ended (`omitted_packets`, `omitted_errors`), or, from a server too
/// old to say, what this end had seen of the stream by then (`ours_at_omit`), counting every
/// warm-up datagram as delivered, so any loss in the warm-up shows in the measured span.
fn server_results(
    spec: &BandwidthSpec,
    theirs: &Results,
    ours_at_omit: &[StreamTotals],
) -> ServerResults {
    let mut at_end = Vec::new();
    let mut at_omit = Vec::new();
    let mut active_ns: Vec<(Flow, u64)> = Vec::new();
    let mut wall_ns = 0u64;
    for i in 0..stream_count(spec) {
        let (flow, id) = stream_slot(spec.direction, spec.parallel, i);
        let Some(r) = theirs.streams.iter().find(|s| s.id == stream_id(i)) else { continue };
        let server_sends = flow.sender() == End::Server;
        let totals = Totals {
            bytes: r.bytes,
            // A receiving iperf3 stream reports its highest sequence number and its gap count.
            packets: if server_sends { r.packets } else { r.packets.saturating_sub(r.errors) },
            lost: if server_sends { 0 } else { r.errors },
            jitter_ns: r.jitter_s * 1e9,
            tcp: (server_sends && r.retransmits >= 0 && spec.protocol == Protocol::Tcp)
                .then(|| TcpSample { retransmits: r.retransmits as u64, ..Default::default() }),
            ..Default::default()
        };
        at_end.push(StreamTotals { flow, id, totals });
        if spec.protocol == Protocol::Udp && spec.omit_ns > 0 {
            let totals = match r.omitted {
                // The server's own counts when its warm-up ended (iperf3 3.21 sends them).
                Some(o) if server_sends => Totals { packets: o.packets, ..Default::default() },
                Some(o) => Totals {
                    packets: o.packets.saturating_sub(o.errors),
                    lost: o.errors,
                    ..Default::default()
                },
                // An older server's: a sending server had sent what we had seen by then
                // (received + gaps); a receiving one had received what we had sent.
                None => {
                    let mine = totals_of(ours_at_omit, flow, id);
                    let packets =
                        if server_sends { mine.packets + mine.lost } else { mine.packets };
                    Totals { packets, ..Default::default() }
                }
            };
            at_omit.push(StreamTotals { flow, id, totals });
        }
        let span = ((r.end_time_s - r.start_time_s).max(0.0) * 1e9) as u64;
        wall_ns = wall_ns.max((r.end_time_s.max(0.0) * 1e9) as u64);
        match active_ns.iter_mut().find(|(f, _)| *f == flow) {
            Some((_, v)) => *v = (*v).max(span),
            None => active_ns.push((flow, span)),
        }
    }
    let cpu = |pct: f64| (pct.max(0.0) / 100.0 * wall_ns as f64) as u64;
    ServerResults {
        at_omit,
        at_end,
        active_ns,
        cpu_user_ns: cpu(theirs.cpu_util[1]),
        cpu_system_ns: cpu(theirs.cpu_util[2]),
        wall_ns,
        accepted: None,
        threads: Vec::new(),
    }
}
