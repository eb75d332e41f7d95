//! What every part of the server shares: its configuration, the context each connection
//! handler gets ([`Ctx`]), the session registry data streams find their test by, and the
//! hooks kinds hang on the server ([`ServerHook`]).

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipnet::IpNet;
use socket2::Socket;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use wirespeed_metrics::{ConnectionRecord, Metrics};
use wirespeed_model::flow::Flow;
use wirespeed_proto::codec::SESSION_ID_LEN;

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
    /// Where the server counts what it does (served at `/metrics` when `--metrics` asks).
    pub metrics: Arc<Metrics>,
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
            metrics: Metrics::new(env!("CARGO_PKG_VERSION")),
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

/// A connected data socket waiting for its test's worker.
#[derive(Debug)]
pub(crate) struct Attached {
    /// Its flow.
    pub(crate) flow: Flow,
    /// Stream number within the flow.
    pub(crate) id: u16,
    /// The socket, connected to the peer, in blocking mode.
    pub(crate) socket: Socket,
    /// Counts it in `wirespeed_connections_open` for as long as the test holds it (a server's
    /// data connection; a client's have none).
    pub(crate) open: Option<Arc<ConnectionRecord>>,
}

/// A session waiting for its data streams.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) peer: IpAddr,
    pub(crate) attach: mpsc::Sender<Attached>,
}

/// Sessions by id, shared by the accept loops.
pub(crate) type Registry = Arc<Mutex<HashMap<[u8; SESSION_ID_LEN], Pending>>>;

/// What a kind hangs on the generic server, so the server calls it without naming it: a
/// count of connections that say nothing (cps), a protocol of someone else's on our port
/// (iperf3's cookie and UDP connect datagram). Each kind keeps its own registry inside its
/// hook and finds it again with [`Ctx::hook`].
pub(crate) trait ServerHook: Any + Send + Sync + std::fmt::Debug {
    /// The hook as [`Any`], for [`Ctx::hook`].
    fn as_any(&self) -> &dyn Any;

    /// A TCP connection from `ip` closed, reset or was shed before it said anything, or was
    /// a probe; true when this hook counted it (then it is not logged as dropped).
    fn empty_connection(&self, _ip: IpAddr) -> bool {
        false
    }

    /// True when a TCP connection whose first byte is `first` speaks this hook's protocol.
    fn claims(&self, _first: u8) -> bool {
        false
    }

    /// Routes a TCP connection [`Self::claims`] took, its bytes so far in `buf`: `Ok(None)`
    /// when it was handed to a running test, `Ok(Some(conversation))` when it starts one
    /// (run once the connection no longer counts as mid-handshake).
    /// `open` counts the connection as open; a data connection keeps it as long as its test
    /// holds the socket.
    fn route_tcp(
        &self,
        stream: TcpStream,
        buf: Vec<u8>,
        peer: SocketAddr,
        arrival: u64,
        ctx: Arc<Ctx>,
        open: Arc<ConnectionRecord>,
    ) -> Routing {
        let _ = (stream, buf, peer, arrival, ctx, open);
        Box::pin(async { Err(Dropped::new("invalid", "no protocol claims this connection")) })
    }

    /// A datagram on a listener's UDP socket that is not our hello; true when this hook took
    /// it.
    fn take_datagram(
        &self,
        _msg: &[u8],
        _local: SocketAddr,
        _peer: SocketAddr,
        _ctx: &Ctx,
    ) -> bool {
        false
    }
}

/// A conversation a hook starts on a connection it claimed.
pub(crate) type Conversation = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Where a hook sends a connection it claimed ([`ServerHook::route_tcp`]).
pub(crate) type Routing =
    Pin<Box<dyn Future<Output = Result<Option<Conversation>, Dropped>> + Send>>;

/// Everything a connection handler needs.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) config: ServerConfig,
    pub(crate) tests: Arc<Semaphore>,
    pub(crate) sessions: Registry,
    /// What the kinds hung on the server ([`ServerHook`]).
    pub(crate) hooks: Vec<Arc<dyn ServerHook>>,
    /// Counts accepted connections and UDP hellos, for [`ArrivedStream::arrival`].
    pub(crate) arrivals: AtomicU64,
    pub(crate) shutdown: CancellationToken,
    pub(crate) tasks: TaskTracker,
}

impl Ctx {
    /// The hook of type `T` the kinds registered, if any.
    pub(crate) fn hook<T: ServerHook>(&self) -> Option<&T> {
        self.hooks.iter().find_map(|h| h.as_any().downcast_ref::<T>())
    }

    /// Tells every hook about a connection from `ip` that said nothing; true when one counted
    /// it.
    pub(crate) fn empty_connection(&self, ip: IpAddr) -> bool {
        let mut counted = false;
        for hook in &self.hooks {
            counted |= hook.empty_connection(ip);
        }
        counted
    }
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

/// Why a connection was dropped before it joined a test: the reason counted in
/// `wirespeed_protocol_errors_total` (one of `wirespeed_metrics::PROTOCOL_ERRORS`) and what
/// is logged.
#[derive(Debug)]
pub(crate) struct Dropped {
    pub(crate) reason: &'static str,
    pub(crate) detail: String,
}

impl Dropped {
    pub(crate) fn new(reason: &'static str, detail: impl Into<String>) -> Self {
        Self { reason, detail: detail.into() }
    }

    /// A socket call failed.
    pub(crate) fn io(e: impl std::fmt::Display) -> Self {
        Self::new("io", e.to_string())
    }
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}
