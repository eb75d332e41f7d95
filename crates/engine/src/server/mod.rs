//! `wirespeed server`: one TCP and one UDP listener per bound address, all on one port. Each
//! TCP connection announces what it is in its first bytes: `WSPD` for ours (control or data),
//! a lower-case iperf3 cookie for a stock iperf3 client; UDP datagrams on the listener are
//! stream hellos (ours, or iperf3's 4-byte connect datagram). Tests are isolated sessions, any number at once up to
//! `--max-tests`; a shutdown signal reaches every session, which tells its client before
//! stopping.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipnet::IpNet;
use socket2::{Domain, Protocol as SockProto, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use wirespeed_proto::codec::{
    ConnKind, DataHello, DecodeError, Preamble, DATA_HELLO_LEN, PREAMBLE_LEN, SESSION_ID_LEN,
};
use wirespeed_proto::datagram::{UdpHello, HELLO_LEN};
use wirespeed_proto::iperf3::wire as iperf3_wire;
use wirespeed_proto::iperf3::{Cookie, State, COOKIE_LEN};

pub(crate) mod handshakes;
pub(crate) mod session;

use crate::kinds::bandwidth::workers::Attached;
use crate::net::framed::Framed;
use crate::server::handshakes::Handshakes;

/// How the server behaves and what it allows.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Most tests running at once; further clients are refused as busy.
    pub max_tests: usize,
    /// Longest test allowed (warm-up included); byte-count tests are cut off here. Zero: no limit.
    pub max_duration: Duration,
    /// Most bits per second one test may move, all streams and directions together. Zero: no limit.
    pub max_bitrate_bps: u64,
    /// Shared secret clients must prove they know.
    pub token: Option<String>,
    /// Networks clients may come from; empty allows everyone.
    pub allow: Vec<IpNet>,
    /// How long a connection may stay silent before its test starts.
    pub idle_timeout: Duration,
    /// Version announced to clients.
    pub version: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_tests: 16,
            max_duration: Duration::from_secs(86_400),
            max_bitrate_bps: 0,
            token: None,
            allow: Vec::new(),
            idle_timeout: Duration::from_secs(10),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

impl ServerConfig {
    /// True when `ip` may use the server.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.allow.is_empty() || self.allow.iter().any(|net| net.contains(&ip))
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The bound sockets a server listens on.
#[derive(Debug)]
pub struct Listeners {
    tcp: Vec<TcpListener>,
    udp: Vec<UdpSocket>,
}

impl Listeners {
    /// Binds TCP and UDP on `addr`. An unspecified IPv6 address accepts IPv4 too (dual stack).
    pub fn bind(addrs: &[SocketAddr]) -> io::Result<Self> {
        let mut tcp = Vec::new();
        let mut udp = Vec::new();
        for addr in addrs {
            let (t, u) = Self::bind_pair(*addr)?;
            u.set_nonblocking(true)?;
            tcp.push(TcpListener::from_std(t.into())?);
            udp.push(UdpSocket::from_std(u.into())?);
        }
        Ok(Self { tcp, udp })
    }

    /// A TCP listener and a UDP socket on one port. Port 0 means "any": UDP takes the port TCP
    /// got, and when some other UDP socket already holds that number, both try a fresh one.
    fn bind_pair(addr: SocketAddr) -> io::Result<(Socket, Socket)> {
        const TRIES: usize = 16;
        for attempt in 1..=TRIES {
            let t = tcp_listener(addr)?;
            let port = t.local_addr()?.as_socket().map_or(addr.port(), |a| a.port());
            match udp_socket(SocketAddr::new(addr.ip(), port)) {
                Ok(u) => return Ok((t, u)),
                Err(e)
                    if addr.port() == 0
                        && e.kind() == io::ErrorKind::AddrInUse
                        && attempt < TRIES => {}
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// Binds the default `[::]:port` dual-stack, or `0.0.0.0:port` where IPv6 is unavailable.
    pub fn bind_default(port: u16) -> io::Result<Self> {
        Self::bind(&[SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port)])
            .or_else(|_| Self::bind(&[SocketAddr::from(([0, 0, 0, 0], port))]))
    }

    /// TCP listeners only (for the HTTP fixture) on `addrs`, or on every address (IPv6 and
    /// IPv4, or IPv4 alone where there is no IPv6) when `addrs` is empty.
    pub fn bind_tcp(addrs: &[SocketAddr], default_port: u16) -> io::Result<Vec<TcpListener>> {
        let listen = |addr: SocketAddr| TcpListener::from_std(tcp_listener(addr)?.into());
        if addrs.is_empty() {
            return listen(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), default_port))
                .or_else(|_| listen(SocketAddr::from(([0, 0, 0, 0], default_port))))
                .map(|l| vec![l]);
        }
        addrs.iter().map(|a| listen(*a)).collect()
    }

    /// The TCP addresses bound.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.tcp.iter().filter_map(|l| l.local_addr().ok()).collect()
    }
}

fn tcp_listener(addr: SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(SockProto::TCP))?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s)
}

/// A UDP socket on `addr` that shares its port with the listener and the other streams.
pub(crate) fn udp_socket(addr: SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(SockProto::UDP))?;
    // Every stream's socket binds the listener's port and connects to its client; the kernel
    // delivers each datagram to the socket whose connected peer matches.
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())?;
    Ok(s)
}

/// A session waiting for its data streams.
#[derive(Debug)]
pub(crate) struct Pending {
    pub peer: IpAddr,
    pub attach: mpsc::Sender<Attached>,
}

/// Sessions by id, shared by the accept loops.
pub(crate) type Registry = Arc<Mutex<HashMap<[u8; SESSION_ID_LEN], Pending>>>;

/// iperf3 tests waiting for their data connections: TCP ones by cookie (with the client's
/// address), UDP ones by the client's address alone, since iperf3's UDP connect datagram
/// carries no cookie.
#[derive(Debug, Default)]
pub(crate) struct Iperf3Waiting {
    pub tcp: HashMap<Cookie, (IpAddr, mpsc::Sender<ArrivedStream>)>,
    pub udp: HashMap<IpAddr, mpsc::Sender<ArrivedStream>>,
}

/// An iperf3 data connection and when it arrived. iperf3 numbers streams in connection order
/// and the client connects them one after another, so the accept order is the stream order;
/// routing runs concurrently and may finish out of order, hence the number.
#[derive(Debug)]
pub(crate) struct ArrivedStream {
    pub arrival: u64,
    pub socket: Socket,
}

/// Everything a connection handler needs.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub config: ServerConfig,
    pub tests: Arc<Semaphore>,
    pub sessions: Registry,
    pub iperf3: Mutex<Iperf3Waiting>,
    /// Running cps tests by client address: connections from it that close unread count here.
    pub cps: Mutex<HashMap<IpAddr, Arc<AtomicU64>>>,
    /// Counts accepted connections and UDP hellos, for [`ArrivedStream::arrival`].
    pub arrivals: AtomicU64,
    pub shutdown: CancellationToken,
    pub tasks: TaskTracker,
}

/// Serves until `shutdown` is cancelled, then tells running tests to stop and waits for them.
pub async fn run(
    listeners: Listeners,
    config: ServerConfig,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let ctx = Arc::new(Ctx {
        tests: Arc::new(Semaphore::new(config.max_tests.max(1))),
        config,
        sessions: Arc::default(),
        iperf3: Mutex::default(),
        cps: Mutex::default(),
        arrivals: AtomicU64::new(0),
        shutdown: shutdown.clone(),
        tasks: TaskTracker::new(),
    });
    let handshakes = Arc::new(Handshakes::default());
    for listener in listeners.tcp {
        let ctx = ctx.clone();
        let handshakes = handshakes.clone();
        ctx.tasks.clone().spawn(accept_loop(listener, ctx, handshakes));
    }
    for socket in listeners.udp {
        let ctx = ctx.clone();
        ctx.tasks.clone().spawn(udp_hello_loop(socket, ctx));
    }
    shutdown.cancelled().await;
    ctx.tasks.close();
    ctx.tasks.wait().await;
    Ok(())
}

async fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>, handshakes: Arc<Handshakes>) {
    let mut backoff = Duration::from_millis(5);
    loop {
        let accepted = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            r = listener.accept() => r,
        };
        let arrival = ctx.arrivals.fetch_add(1, Ordering::Relaxed);
        let (stream, peer) = match accepted {
            Ok(x) => {
                backoff = Duration::from_millis(5);
                x
            }
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let (pending, shed) = handshakes.admit(arrival, peer.ip());
        if let Some(ip) = shed {
            tracing::debug!(%ip, "too many connections mid-handshake; shedding the longest silent");
        }
        let ctx2 = ctx.clone();
        ctx.tasks.spawn(async move {
            let routed = tokio::select! {
                // A route that has finished wins over a shed that came at the same time.
                biased;
                r = route(stream, peer, arrival, &ctx2) => r,
                _ = pending.shed.cancelled() => {
                    // A cps test's connections close unread: one shed is counted like them.
                    if crate::kinds::cps::server::count_empty_connection(&ctx2, peer.ip()) {
                        Ok(Route::Done)
                    } else {
                        Err("shed: silent while newer connections waited".into())
                    }
                }
            };
            drop(pending);
            match routed {
                Ok(Route::Control(framed)) => session::serve(framed, peer, ctx2).await,
                Ok(Route::Iperf3(stream, cookie)) => {
                    crate::kinds::bandwidth::iperf3_server::serve(stream, cookie, peer, ctx2).await
                }
                Ok(Route::Done) => {}
                Err(why) => tracing::debug!(%peer, "connection dropped: {why}"),
            }
        });
    }
}

enum Route {
    Control(Framed),
    Iperf3(TcpStream, Cookie),
    Done,
}

/// Reads a connection's preamble and sends it where it belongs.
async fn route(
    mut stream: TcpStream,
    peer: SocketAddr,
    arrival: u64,
    ctx: &Ctx,
) -> Result<Route, String> {
    let idle = ctx.config.idle_timeout;
    let mut buf = Vec::with_capacity(64);
    if let Err(why) = read_more(&mut stream, &mut buf, idle).await {
        // A cps test's connections close (or reset) without a byte: count, don't log.
        return match crate::kinds::cps::server::count_empty_connection(ctx, peer.ip()) {
            true => Ok(Route::Done),
            false => Err(why),
        };
    }
    if iperf3_wire::could_be_cookie(buf[0]) {
        return route_iperf3(stream, buf, peer, arrival, ctx).await;
    }
    let preamble = loop {
        match Preamble::decode(&buf) {
            Ok(p) => break p,
            Err(DecodeError::Invalid(why)) => return Err(why),
            Err(DecodeError::Incomplete(_)) => read_more(&mut stream, &mut buf, idle).await?,
        }
    };
    buf.drain(..PREAMBLE_LEN);
    match preamble.kind {
        ConnKind::Control => Ok(Route::Control(Framed::new(stream, buf))),
        ConnKind::Probe => {
            // Counted (when its address runs a cps test) and closed at once, by this side.
            crate::kinds::cps::server::count_empty_connection(ctx, peer.ip());
            Ok(Route::Done)
        }
        ConnKind::Data => {
            let hello = loop {
                match DataHello::decode(&buf) {
                    Ok(h) => break h,
                    Err(DecodeError::Invalid(why)) => return Err(why),
                    Err(DecodeError::Incomplete(_)) => {
                        read_more(&mut stream, &mut buf, idle).await?
                    }
                }
            };
            if buf.len() > DATA_HELLO_LEN {
                return Err("data sent before the test began".into());
            }
            let std = stream.into_std().map_err(|e| e.to_string())?;
            std.set_nonblocking(false).map_err(|e| e.to_string())?;
            attach(
                ctx,
                peer.ip(),
                hello.session,
                Attached { flow: hello.flow, id: hello.stream, socket: Socket::from(std) },
            )?;
            Ok(Route::Done)
        }
    }
}

/// An iperf3 connection: a data stream of a test setting up, or a new control connection.
async fn route_iperf3(
    mut stream: TcpStream,
    mut buf: Vec<u8>,
    peer: SocketAddr,
    arrival: u64,
    ctx: &Ctx,
) -> Result<Route, String> {
    let cookie = loop {
        match Cookie::decode(&buf) {
            Ok(c) => break c,
            Err(DecodeError::Invalid(why)) => return Err(why),
            Err(DecodeError::Incomplete(_)) => {
                read_more(&mut stream, &mut buf, ctx.config.idle_timeout).await?
            }
        }
    };
    if buf.len() > COOKIE_LEN {
        // A client writes its cookie and waits; anything after it is not iperf3.
        return Err("bytes after the iperf3 cookie".into());
    }
    let waiting = {
        let reg = ctx.iperf3.lock().map_err(|_| "iperf3 registry poisoned".to_string())?;
        reg.tcp.get(&cookie).cloned()
    };
    let Some((owner, tx)) = waiting else { return Ok(Route::Iperf3(stream, cookie)) };
    if owner != canonical(peer.ip()) {
        // iperf3 answers a data connection with a foreign cookie with ACCESS_DENIED.
        let _ = stream.write_all(&[State::AccessDenied.byte()]).await;
        return Err(format!("iperf3 data stream from {} for a test of {owner}", peer.ip()));
    }
    let std = stream.into_std().map_err(|e| e.to_string())?;
    std.set_nonblocking(false).map_err(|e| e.to_string())?;
    tx.try_send(ArrivedStream { arrival, socket: Socket::from(std) })
        .map_err(|_| "iperf3 test is not accepting streams".to_string())?;
    Ok(Route::Done)
}

async fn read_more(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    idle: Duration,
) -> Result<(), String> {
    buf.reserve(64);
    match tokio::time::timeout(idle, stream.read_buf(buf)).await {
        Err(_) => Err(format!("silent for {idle:?}")),
        Ok(Ok(0)) => Err("closed before saying what it is".into()),
        Ok(Ok(_)) if buf.len() > 1024 => Err("handshake too long".into()),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
    }
}

/// Hands a data socket to the session it names, if that session exists and the socket comes
/// from the same host as the session's control connection.
fn attach(
    ctx: &Ctx,
    from: IpAddr,
    session: [u8; SESSION_ID_LEN],
    socket: Attached,
) -> Result<(), String> {
    let sessions = ctx.sessions.lock().map_err(|_| "session table poisoned".to_string())?;
    let pending = sessions.get(&session).ok_or("unknown session")?;
    if canonical(pending.peer) != canonical(from) {
        return Err(format!("data stream from {from} for a session of {}", pending.peer));
    }
    pending.attach.try_send(socket).map_err(|_| "session is not accepting streams".to_string())
}

async fn udp_hello_loop(socket: UdpSocket, ctx: Arc<Ctx>) {
    let Ok(local) = socket.local_addr() else { return };
    let mut buf = [0u8; 64];
    loop {
        let (n, peer) = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            r = socket.recv_from(&mut buf) => match r {
                Ok(x) => x,
                Err(_) => continue, // ICMP errors from earlier sends; nothing to do
            },
        };
        if n == 4 {
            iperf3_udp_connect(&buf[..4], local, peer, &ctx);
            continue;
        }
        if n != HELLO_LEN {
            continue;
        }
        let Ok(hello) = UdpHello::decode(&buf[..n]) else { continue };
        if hello.ack {
            continue;
        }
        match connect_udp_stream(local, peer) {
            Ok(sock) => {
                let ack = UdpHello { ack: true, ..hello }.encode();
                if sock.send(&ack).is_err() {
                    continue;
                }
                let attached = Attached { flow: hello.flow, id: hello.stream, socket: sock };
                if let Err(why) = attach(&ctx, peer.ip(), hello.session, attached) {
                    tracing::debug!(%peer, "UDP hello refused: {why}");
                }
            }
            Err(e) => tracing::warn!(%peer, "could not open a UDP stream socket: {e}"),
        }
    }
}

/// An iperf3 client's UDP connect datagram: gives the client's UDP test a socket connected to
/// it and answers with iperf3's reply.
fn iperf3_udp_connect(msg: &[u8], local: SocketAddr, peer: SocketAddr, ctx: &Ctx) {
    const LEGACY_CONNECT_MSG: [u8; 4] = 123_456_789u32.to_le_bytes();
    if msg != iperf3_wire::UDP_CONNECT_MSG && msg != LEGACY_CONNECT_MSG {
        return;
    }
    let tx = match ctx.iperf3.lock() {
        Ok(reg) => reg.udp.get(&canonical(peer.ip())).cloned(),
        Err(_) => None,
    };
    let Some(tx) = tx else {
        tracing::debug!(%peer, "iperf3 UDP connect with no test setting up");
        return;
    };
    match connect_udp_stream(local, peer) {
        Ok(sock) => {
            let arrival = ctx.arrivals.fetch_add(1, Ordering::Relaxed);
            let stream = ArrivedStream { arrival, socket: sock };
            if stream.socket.send(&iperf3_wire::UDP_CONNECT_REPLY).is_ok()
                && tx.try_send(stream).is_err()
            {
                tracing::debug!(%peer, "iperf3 UDP stream beyond what its test expects");
            }
        }
        Err(e) => tracing::warn!(%peer, "could not open a UDP stream socket: {e}"),
    }
}

/// A blocking UDP socket on the listener's address, connected to `peer`.
fn connect_udp_stream(local: SocketAddr, peer: SocketAddr) -> io::Result<Socket> {
    let sock = udp_socket(local)?;
    sock.connect(&peer.into())?;
    Ok(sock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list_matches_mapped_addresses() {
        let mut c = ServerConfig::default();
        assert!(c.allows("192.0.2.1".parse().unwrap()));
        c.allow = vec!["127.0.0.0/8".parse().unwrap()];
        assert!(c.allows("127.0.0.1".parse().unwrap()));
        assert!(c.allows("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!c.allows("::1".parse().unwrap()));
        assert!(!c.allows("10.0.0.1".parse().unwrap()));
    }
}
