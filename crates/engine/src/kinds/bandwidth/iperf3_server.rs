//! `wirespeed server` answering a stock iperf3 client: the iperf3 conversation from the cookie
//! to IPERF_DONE, run on our own stream workers. Each client gets its own test, so unlike
//! iperf3's server a second client is not turned away while the first one runs.

use std::any::Any;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use socket2::Socket;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use wirespeed_metrics::{ConnectionRecord, RefusalReason, TestOutcome};
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::rules::Protocol;
use wirespeed_proto::codec::DecodeError;
use wirespeed_proto::control::StreamTotals;
use wirespeed_proto::datagram::Wire;
use wirespeed_proto::iperf3::wire::{self, encode_json, encode_server_error, errno};
use wirespeed_proto::iperf3::{stream_slot, Cookie, Params, Results, State, COOKIE_LEN};

use super::iperf3_results::local_results;
use super::server::{apply_limits, UploadCap};
use super::tally::Tally;
use super::workers::{self, Side};
use crate::run::intervals::{Clock, Ending, Tick, Timers};
use crate::server::ctx::Attached;
use crate::server::ctx::Dropped;
use crate::server::ctx::{canonical, Conversation, Ctx, Routing, ServerHook};
use crate::server::listeners::connect_udp_stream;
use crate::server::route::read_more;

/// How long the client has to connect every data stream after CREATE_STREAMS.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);
/// Grace after a timed test's end before the server gives up waiting for TEST_END (iperf3's
/// own server allows 40 s).
const END_GRACE: Duration = Duration::from_secs(40);
/// How long stream ends may take to stop once the test is over.
const FINISH_TIMEOUT: Duration = Duration::from_secs(5);

/// How a conversation ended early, and what the client is told.
#[derive(Debug)]
struct Ended {
    message: String,
    answer: Answer,
    /// The test was refused before it ran, for this reason.
    refused: Option<RefusalReason>,
}

#[derive(Debug, Clone, Copy)]
enum Answer {
    /// Nothing: the client is gone or already knows.
    Nothing,
    /// The ACCESS_DENIED byte (busy, or not on the allow list), as iperf3's server sends.
    Denied,
    /// SERVER_ERROR with an iperf3 error number.
    Error(i32),
    /// SERVER_TERMINATE: the server is shutting down.
    Terminate,
}

fn ended(answer: Answer, message: impl Into<String>) -> Ended {
    Ended { message: message.into(), answer, refused: None }
}

/// The test is refused: `answer` tells the client, `reason` is counted.
fn refused(answer: Answer, reason: RefusalReason, message: impl Into<String>) -> Ended {
    Ended { refused: Some(reason), ..ended(answer, message) }
}

/// Serves one iperf3 control connection whose cookie has been read.
pub(crate) async fn serve(mut ctl: TcpStream, cookie: Cookie, peer: SocketAddr, ctx: Arc<Ctx>) {
    let _ = ctl.set_nodelay(true);
    let record = ctx.config.metrics.server.begin(wirespeed_metrics::ServerTest::Iperf3);
    let ended = conversation(&mut ctl, cookie, peer, &ctx).await;
    record.end(match &ended {
        Ok(()) => TestOutcome::Completed,
        Err(Ended { refused: Some(reason), .. }) => TestOutcome::Refused(*reason),
        Err(_) => TestOutcome::Aborted,
    });
    match ended {
        Ok(()) => {}
        Err(e) => {
            tracing::info!(%peer, "iperf3 test ended: {}", e.message);
            let bytes: Vec<u8> = match e.answer {
                Answer::Nothing => Vec::new(),
                Answer::Denied => vec![State::AccessDenied.byte()],
                Answer::Error(code) => encode_server_error(code, 0).to_vec(),
                Answer::Terminate => vec![State::ServerTerminate.byte()],
            };
            if !bytes.is_empty() {
                let _ = tokio::time::timeout(Duration::from_secs(1), ctl.write_all(&bytes)).await;
            }
        }
    }
    let _ = ctl.shutdown().await;
}

async fn send_state(ctl: &mut TcpStream, state: State) -> Result<(), Ended> {
    ctl.write_all(&[state.byte()])
        .await
        .map_err(|e| ended(Answer::Nothing, format!("control connection: {e}")))
}

/// Reads one JSON frame of at most `cap` bytes within `limit`.
async fn read_json(
    ctl: &mut TcpStream,
    cap: u32,
    limit: Duration,
    what: &str,
    code: i32,
) -> Result<serde_json::Map<String, serde_json::Value>, Ended> {
    let read = async {
        let mut head = [0u8; 4];
        ctl.read_exact(&mut head).await?;
        let len = u32::from_be_bytes(head);
        if len == 0 || len > cap {
            return Ok(Err(format!("{what} of {len} bytes; the limit is {cap}")));
        }
        let mut frame = head.to_vec();
        frame.resize(4 + len as usize, 0);
        ctl.read_exact(&mut frame[4..]).await?;
        Ok::<_, std::io::Error>(
            wire::decode_json(&frame, cap).map(|(m, _)| m).map_err(|e| format!("{what}: {e}")),
        )
    };
    match tokio::time::timeout(limit, read).await {
        Err(_) => Err(ended(Answer::Error(code), format!("no {what} within {limit:?}"))),
        Ok(Err(e)) => Err(ended(Answer::Nothing, format!("reading the {what}: {e}"))),
        Ok(Ok(Err(why))) => Err(ended(Answer::Error(code), why)),
        Ok(Ok(Ok(map))) => Ok(map),
    }
}

async fn conversation(
    ctl: &mut TcpStream,
    cookie: Cookie,
    peer: SocketAddr,
    ctx: &Arc<Ctx>,
) -> Result<(), Ended> {
    let cfg = &ctx.config;
    if !cfg.allows(peer.ip()) {
        return Err(refused(
            Answer::Denied,
            RefusalReason::NotAllowed,
            format!("{} is not on the allow list", canonical(peer.ip())),
        ));
    }
    // Refused before anything is held: an iperf3 client cannot give our token, and a bare
    // cookie (no parameters yet) must not take a test slot from clients that can.
    if cfg.token.is_some() {
        return Err(refused(
            Answer::Error(errno::AUTH_TEST),
            RefusalReason::Auth,
            "this server requires a wirespeed --token, which iperf3 clients cannot give",
        ));
    }
    send_state(ctl, State::ParamExchange).await?;
    let doc =
        read_json(ctl, wire::MAX_PARAMS_LEN, cfg.idle_timeout, "parameters", errno::RECV_PARAMS)
            .await?;
    let limit = RefusalReason::Limit;
    let params = Params::from_json(&doc)
        .map_err(|e| refused(Answer::Error(e.errno), limit, format!("bad parameters: {e}")))?;
    let Ok(permit) = ctx.tests.clone().try_acquire_owned() else {
        let why = format!("busy: {} tests running", cfg.max_tests);
        return Err(refused(Answer::Denied, RefusalReason::Busy, why));
    };
    let mut spec = params
        .to_spec(&peer.to_string())
        .map_err(|e| refused(Answer::Error(e.errno), limit, format!("refused parameters: {e}")))?;
    check_client_rate(&spec, cfg.max_bitrate_bps)?;
    let notes = apply_limits(&mut spec, cfg.max_duration, cfg.max_bitrate_bps)
        .map_err(|why| refused(Answer::Error(errno::DURATION), limit, why))?;
    for n in notes {
        tracing::info!(%peer, "{n}");
    }
    let wire = match spec.protocol {
        // iperf3's parameters name TCP or UDP only.
        Protocol::Tcp | Protocol::Quic => Wire::Wirespeed,
        Protocol::Udp => Wire::Iperf3 { seq64: params.udp_counters_64bit },
    };
    tracing::info!(%peer, protocol = ?spec.protocol, direction = ?spec.direction, parallel = spec.parallel,
        client_version = params.client_version.as_deref().unwrap_or("?"), "iperf3 test accepted");

    let expected = Flow::of(spec.direction).len() * usize::from(spec.parallel);
    let (tx, rx) = mpsc::channel(expected + 8);
    let registration = Registration::new(ctx, &spec, cookie, peer.ip(), tx).await?;
    send_state(ctl, State::CreateStreams).await?;
    let sockets = tokio::select! {
        r = collect_streams(rx, &spec, expected, peer.ip()) => r?,
        r = read_state(ctl) => return Err(match r {
            Ok(s) => ended(Answer::Error(errno::MESSAGE), format!("{s:?} before the streams connected")),
            Err(e) => e,
        }),
        _ = ctx.shutdown.cancelled() => return Err(ended(Answer::Terminate, "the server is shutting down")),
    };
    drop(registration);
    run_test(ctl, ctx, &spec, &params, wire, sockets, peer).await?;
    drop(permit);
    Ok(())
}

/// iperf3's server refuses a test whose requested total rate is over its limit. We pace our
/// own senders to the limit, but an iperf3 client sends at the rate it chose, so a test where
/// the client sends faster than the limit allows is refused up front.
fn check_client_rate(spec: &BandwidthSpec, cap: u64) -> Result<(), Ended> {
    if cap == 0 || !spec.direction.client_sends() {
        return Ok(());
    }
    let streams = u64::from(spec.parallel) * Flow::of(spec.direction).len() as u64;
    let total = spec.bitrate_bps.saturating_mul(streams);
    if spec.bitrate_bps == 0 || total > cap {
        return Err(refused(
            Answer::Error(errno::TOTAL_RATE),
            RefusalReason::Limit,
            format!(
                "the client would send {} but this server allows {cap} bit/s per test (use -b)",
                if spec.bitrate_bps == 0 {
                    "unlimited".to_string()
                } else {
                    format!("{total} bit/s")
                }
            ),
        ));
    }
    Ok(())
}

/// Where data connections find their test: TCP ones by cookie, UDP ones (which carry no cookie)
/// by the client's address, one setting-up test per address at a time.
struct Registration {
    ctx: Arc<Ctx>,
    key: RegKey,
}

enum RegKey {
    Tcp(Cookie),
    Udp(IpAddr),
}

impl Registration {
    async fn new(
        ctx: &Arc<Ctx>,
        spec: &BandwidthSpec,
        cookie: Cookie,
        peer: IpAddr,
        tx: mpsc::Sender<ArrivedStream>,
    ) -> Result<Self, Ended> {
        let peer = canonical(peer);
        let key = match spec.protocol {
            // iperf3's parameters name TCP or UDP only ([`Params::to_spec`]).
            Protocol::Tcp | Protocol::Quic => {
                let mut reg = ctx
                    .hook::<Iperf3Hook>()
                    .ok_or_else(poisoned)?
                    .waiting
                    .lock()
                    .map_err(|_| poisoned())?;
                reg.tcp.insert(cookie, (peer, tx));
                RegKey::Tcp(cookie)
            }
            Protocol::Udp => {
                // A UDP connect datagram names no test, so two clients at one address must not
                // set up UDP streams at the same moment: the second waits for the first.
                let deadline = tokio::time::Instant::now() + ATTACH_TIMEOUT;
                loop {
                    {
                        let mut reg = ctx
                            .hook::<Iperf3Hook>()
                            .ok_or_else(poisoned)?
                            .waiting
                            .lock()
                            .map_err(|_| poisoned())?;
                        if let std::collections::hash_map::Entry::Vacant(slot) = reg.udp.entry(peer)
                        {
                            slot.insert(tx);
                            break;
                        }
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(ended(
                            Answer::Error(errno::NEW_TEST),
                            "another test from this address kept setting up its UDP streams",
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                RegKey::Udp(peer)
            }
        };
        Ok(Self { ctx: ctx.clone(), key })
    }
}

fn poisoned() -> Ended {
    ended(Answer::Error(errno::NEW_TEST), "stream registry poisoned")
}

impl Drop for Registration {
    fn drop(&mut self) {
        let hook = self.ctx.hook::<Iperf3Hook>();
        if let Some(Ok(mut reg)) = hook.map(|h| h.waiting.lock()) {
            match &self.key {
                RegKey::Tcp(c) => {
                    reg.tcp.remove(c);
                }
                RegKey::Udp(ip) => {
                    reg.udp.remove(ip);
                }
            }
        }
    }
}

async fn collect_streams(
    mut rx: mpsc::Receiver<ArrivedStream>,
    spec: &BandwidthSpec,
    expected: usize,
    peer: IpAddr,
) -> Result<Vec<Attached>, Ended> {
    let deadline = tokio::time::Instant::now() + ATTACH_TIMEOUT;
    let mut arrived = Vec::with_capacity(expected);
    while arrived.len() < expected {
        let Ok(Some(stream)) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            return Err(ended(
                Answer::Error(errno::ACCEPT),
                format!(
                    "only {} of {expected} data streams connected within {ATTACH_TIMEOUT:?}",
                    arrived.len()
                ),
            ));
        };
        arrived.push(stream);
    }
    arrived.sort_by_key(|s| s.arrival);
    let ipv6 = matches!(peer, IpAddr::V6(_));
    let mut got = Vec::with_capacity(expected);
    for (index, stream) in arrived.into_iter().enumerate() {
        let notes = match spec.protocol {
            Protocol::Tcp | Protocol::Quic => {
                workers::tune_accepted_tcp(&stream.socket, spec, ipv6)
            }
            Protocol::Udp => workers::tune_udp(&stream.socket, spec, ipv6),
        };
        for n in notes {
            tracing::warn!("{n}");
        }
        let (flow, id) = stream_slot(spec.direction, spec.parallel, index);
        got.push(Attached { flow, id, socket: stream.socket, open: stream.open });
    }
    Ok(got)
}

/// Reads one state byte from the client.
async fn read_state(ctl: &mut TcpStream) -> Result<State, Ended> {
    let mut b = [0u8; 1];
    match ctl.read(&mut b).await {
        Ok(0) => Err(ended(Answer::Nothing, "the client closed the control connection")),
        Ok(_) => {
            State::from_byte(b[0]).map_err(|e| ended(Answer::Error(errno::MESSAGE), e.to_string()))
        }
        Err(e) => Err(ended(Answer::Nothing, format!("control connection: {e}"))),
    }
}

async fn run_test(
    ctl: &mut TcpStream,
    ctx: &Arc<Ctx>,
    spec: &BandwidthSpec,
    params: &Params,
    wire: Wire,
    sockets: Vec<Attached>,
    peer: SocketAddr,
) -> Result<(), Ended> {
    let mut side = Side::start(End::Server, spec, wire, None, sockets).map_err(|e| {
        ended(Answer::Error(errno::NEW_TEST), format!("could not start streams: {e}"))
    })?;
    send_state(ctl, State::TestStart).await?;
    send_state(ctl, State::TestRunning).await?;
    let mut at_omit = if spec.omit_ns == 0 { Some(side.zeros()) } else { None };
    let mut tally = Tally::new(&ctx.config.metrics.server, wirespeed_metrics::ServerTest::Iperf3);
    let outcome = run_until_end(ctl, ctx, spec, &mut side, &mut at_omit, &mut tally).await;
    // iperf3 ends a test by closing the data connections: what is still in flight is lost, as
    // with iperf3's own server.
    let at_omit = at_omit.unwrap_or_else(|| side.zeros());
    let wall_ns = side.shared.now_ns();
    side.abort();
    let _ =
        tokio::time::timeout(FINISH_TIMEOUT, async { while side.next_done().await.is_some() {} })
            .await;
    // Counted once the workers have stopped (regression: taken before, a sender's last writes
    // were missing from its total, and a loaded client received more than we said we sent).
    let at_end = side.snapshot();
    tally.catch_up(&at_end);
    outcome?;
    let (user, system) = side.cpu_ns();
    let mut ours = local_results(spec, End::Server, &at_omit, &at_end, (user, system), wall_ns);
    if params.get_server_output {
        ours.server_output_text = Some(server_text(spec, &ours));
    }
    exchange_results(ctl, ctx, &ours, peer, spec).await
}

/// The test's run, until the client's TEST_END: the warm-up's totals taken when it ends (on
/// the shared interval clock), `--max-bitrate` enforced at each boundary, the server's time
/// limit and shutdown watched.
async fn run_until_end(
    ctl: &mut TcpStream,
    ctx: &Arc<Ctx>,
    spec: &BandwidthSpec,
    side: &mut Side,
    at_omit: &mut Option<Vec<StreamTotals>>,
    tally: &mut Tally,
) -> Result<(), Ended> {
    let clock = Clock::new(spec.interval_ns, None, spec.omit_ns, Ending::Stop);
    let mut timers = Timers::start(clock, std::time::Instant::now(), true);
    let limit = match (spec.bytes, ctx.config.max_duration.is_zero()) {
        (None, _) => Duration::from_nanos(spec.total_ns()) + END_GRACE,
        (Some(_), false) => ctx.config.max_duration,
        (Some(_), true) => Duration::from_secs(86_400 * 365),
    };
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let mut cap = UploadCap::new(ctx.config.max_bitrate_bps);
    loop {
        tokio::select! {
            s = read_state(ctl) => return match s {
                Ok(State::TestEnd) => Ok(()),
                Ok(State::ClientTerminate) => Err(ended(Answer::Nothing, "the client was interrupted")),
                Ok(other) => Err(ended(Answer::Error(errno::MESSAGE), format!("unexpected {other:?} during the test"))),
                Err(e) => Err(e),
            },
            tick = timers.next() => match tick {
                Tick::Boundary(b) => {
                    let streams = side.snapshot();
                    tally.catch_up(&streams);
                    if b.ends_warm_up {
                        at_omit.get_or_insert_with(|| streams.clone());
                    }
                    if cap.cap > 0 {
                        if let Some(rate) = cap.exceeded(&streams, spec.interval_ns) {
                            return Err(ended(Answer::Error(errno::TOTAL_RATE), format!("the client sent {rate:.0} bit/s, above the limit of {} bit/s", cap.cap)));
                        }
                    }
                }
                Tick::WarmUpEnded => {
                    at_omit.get_or_insert_with(|| side.snapshot());
                }
                Tick::Deadline => {}
            },
            Some(done) = side.next_done() => {
                // A receiver whose peer went away ends with an error; a sender that spent its
                // -n budget ends cleanly and the client decides when the test is over.
                if let Some(err) = done.error {
                    return Err(ended(Answer::Error(errno::NO_MSG), err));
                }
            }
            _ = &mut deadline => return Err(ended(Answer::Error(errno::TEST_EXPIRED), format!("no TEST_END within {} s", limit.as_secs()))),
            _ = ctx.shutdown.cancelled() => return Err(ended(Answer::Terminate, "the server is shutting down")),
        }
    }
}

/// iperf3's results exchange: the client's results in, ours out, then the display state;
/// waits for the client's IPERF_DONE or close.
async fn exchange_results(
    ctl: &mut TcpStream,
    ctx: &Arc<Ctx>,
    ours: &Results,
    peer: SocketAddr,
    spec: &BandwidthSpec,
) -> Result<(), Ended> {
    send_state(ctl, State::ExchangeResults).await?;
    let theirs = read_json(
        ctl,
        wire::MAX_RESULTS_LEN,
        ctx.config.idle_timeout,
        "results",
        errno::RECV_RESULTS,
    )
    .await?;
    let theirs = Results::from_json(&theirs)
        .map_err(|e| ended(Answer::Error(errno::RECV_RESULTS), e.to_string()))?;
    ctl.write_all(&encode_json(&ours.to_json()))
        .await
        .map_err(|e| ended(Answer::Nothing, format!("sending results: {e}")))?;
    send_state(ctl, State::DisplayResults).await?;
    log_outcome(peer, spec, ours, &theirs);
    // The client answers IPERF_DONE and closes; either is the end.
    let mut b = [0u8; 1];
    let _ = tokio::time::timeout(ctx.config.idle_timeout, ctl.read(&mut b)).await;
    Ok(())
}

/// The server's view as text lines in iperf3's summary style, for `--get-server-output`.
fn server_text(spec: &BandwidthSpec, ours: &Results) -> String {
    let mut out = format!(
        "wirespeed {} server: {:?} {:?}, {} stream(s) per direction\n",
        env!("CARGO_PKG_VERSION"),
        spec.protocol,
        spec.direction,
        spec.parallel
    );
    for (i, s) in ours.streams.iter().enumerate() {
        let (flow, _) = stream_slot(spec.direction, spec.parallel, i);
        let role = if flow.sender() == End::Server { "sender" } else { "receiver" };
        let secs = s.end_time_s - s.start_time_s;
        let rate = if secs > 0.0 { s.bytes as f64 * 8.0 / secs } else { 0.0 };
        out.push_str(&format!(
            "[{:>3}] 0.00-{secs:.2} sec  {} bytes  {:.0} bits/sec  {role}\n",
            s.id, s.bytes, rate
        ));
    }
    out
}

fn log_outcome(peer: SocketAddr, spec: &BandwidthSpec, ours: &Results, theirs: &Results) {
    let sum = |r: &Results| r.streams.iter().map(|s| s.bytes).sum::<u64>();
    tracing::info!(
        %peer,
        protocol = ?spec.protocol,
        direction = ?spec.direction,
        server_bytes = sum(ours),
        client_bytes = sum(theirs),
        "iperf3 test finished"
    );
}

/// The server hook of iperf3 interop: a stock iperf3 client's connections (a lower-case
/// cookie first) and UDP connect datagrams, and the tests waiting for their data streams.
#[derive(Debug, Default)]
pub(crate) struct Iperf3Hook {
    waiting: Mutex<Iperf3Waiting>,
}

impl ServerHook for Iperf3Hook {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn claims(&self, first: u8) -> bool {
        wire::could_be_cookie(first)
    }

    fn route_tcp(
        &self,
        stream: TcpStream,
        buf: Vec<u8>,
        peer: SocketAddr,
        arrival: u64,
        ctx: Arc<Ctx>,
        open: Arc<ConnectionRecord>,
    ) -> Routing {
        Box::pin(route(stream, buf, peer, arrival, ctx, open))
    }

    fn take_datagram(&self, msg: &[u8], local: SocketAddr, peer: SocketAddr, ctx: &Ctx) -> bool {
        msg.len() == 4 && udp_connect(msg, local, peer, ctx)
    }
}

/// iperf3 tests waiting for their data connections: TCP ones by cookie (with the client's
/// address), UDP ones by the client's address alone, since iperf3's UDP connect datagram
/// carries no cookie.
#[derive(Debug, Default)]
pub(crate) struct Iperf3Waiting {
    tcp: HashMap<Cookie, (IpAddr, mpsc::Sender<ArrivedStream>)>,
    udp: HashMap<IpAddr, mpsc::Sender<ArrivedStream>>,
}

/// An iperf3 data connection and when it arrived. iperf3 numbers streams in connection order
/// and the client connects them one after another, so the accept order is the stream order;
/// routing runs concurrently and may finish out of order, hence the number.
#[derive(Debug)]
pub(crate) struct ArrivedStream {
    pub(crate) arrival: u64,
    pub(crate) socket: Socket,
    /// Counts a TCP stream in `wirespeed_connections_open` while the test holds it.
    pub(crate) open: Option<Arc<ConnectionRecord>>,
}

/// An iperf3 connection: a data stream of a test setting up, or a new control connection.
async fn route(
    mut stream: TcpStream,
    mut buf: Vec<u8>,
    peer: SocketAddr,
    arrival: u64,
    ctx: Arc<Ctx>,
    open: Arc<ConnectionRecord>,
) -> Result<Option<Conversation>, Dropped> {
    let cookie = loop {
        match Cookie::decode(&buf) {
            Ok(c) => break c,
            Err(DecodeError::Invalid(why)) => return Err(Dropped::new("invalid", why)),
            Err(DecodeError::Incomplete(_)) => {
                read_more(&mut stream, &mut buf, ctx.config.idle_timeout).await?
            }
        }
    };
    if buf.len() > COOKIE_LEN {
        // A client writes its cookie and waits; anything after it is not iperf3.
        return Err(Dropped::new("invalid", "bytes after the iperf3 cookie"));
    }
    let waiting = {
        let hook = ctx.hook::<Iperf3Hook>().ok_or(Dropped::io("no iperf3 registry"))?;
        let reg = hook.waiting.lock().map_err(|_| Dropped::io("iperf3 registry poisoned"))?;
        reg.tcp.get(&cookie).cloned()
    };
    let Some((owner, tx)) = waiting else {
        return Ok(Some(Box::pin(serve(stream, cookie, peer, ctx))));
    };
    if owner != canonical(peer.ip()) {
        // iperf3 answers a data connection with a foreign cookie with ACCESS_DENIED.
        let _ = stream.write_all(&[State::AccessDenied.byte()]).await;
        return Err(Dropped::new(
            "wrong_host",
            format!("iperf3 data stream from {} for a test of {owner}", peer.ip()),
        ));
    }
    let std = stream.into_std().map_err(Dropped::io)?;
    std.set_nonblocking(false).map_err(Dropped::io)?;
    tx.try_send(ArrivedStream { arrival, socket: Socket::from(std), open: Some(open) })
        .map_err(|_| Dropped::new("unknown_session", "iperf3 test is not accepting streams"))?;
    Ok(None)
}

/// An iperf3 client's UDP connect datagram: gives the client's UDP test a socket connected to
/// it and answers with iperf3's reply.
fn udp_connect(msg: &[u8], local: SocketAddr, peer: SocketAddr, ctx: &Ctx) -> bool {
    const LEGACY_CONNECT_MSG: [u8; 4] = 123_456_789u32.to_le_bytes();
    if msg != wire::UDP_CONNECT_MSG && msg != LEGACY_CONNECT_MSG {
        return false;
    }
    let tx = match ctx.hook::<Iperf3Hook>().map(|h| h.waiting.lock()) {
        Some(Ok(reg)) => reg.udp.get(&canonical(peer.ip())).cloned(),
        _ => None,
    };
    let Some(tx) = tx else {
        tracing::debug!(%peer, "iperf3 UDP connect with no test setting up");
        return true;
    };
    match connect_udp_stream(local, peer) {
        Ok(sock) => {
            let arrival = ctx.arrivals.fetch_add(1, Ordering::Relaxed);
            let stream = ArrivedStream { arrival, socket: sock, open: None };
            if stream.socket.send(&wire::UDP_CONNECT_REPLY).is_ok() && tx.try_send(stream).is_err()
            {
                tracing::debug!(%peer, "iperf3 UDP stream beyond what its test expects");
            }
        }
        Err(e) => tracing::warn!(%peer, "could not open a UDP stream socket: {e}"),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::kinds::bandwidth::Direction;

    #[test]
    fn a_client_sending_past_the_cap_is_refused() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        assert!(check_client_rate(&spec, 0).is_ok());
        assert!(check_client_rate(&spec, 1_000_000).is_err());
        spec.bitrate_bps = 100_000;
        spec.parallel = 4;
        assert!(check_client_rate(&spec, 1_000_000).is_ok());
        spec.direction = Direction::Download;
        spec.bitrate_bps = 0;
        assert!(check_client_rate(&spec, 1_000_000).is_ok());
    }
}
