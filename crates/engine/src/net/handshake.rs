//! The client's side of the control handshake every test kind shares: resolve, connect,
//! `hello`, answer the challenge, `start` a spec of any kind, and read `accepted`. Each kind's
//! client then opens its own data streams on the session it was given.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use tokio::net::TcpStream;
use wirespeed_model::report::Meta;
use wirespeed_model::spec::TestSpec;
use wirespeed_proto::auth;
use wirespeed_proto::codec::{from_hex, ConnKind, Preamble, SESSION_ID_LEN};
use wirespeed_proto::control::{ClientMessage, ClientState, RefuseCode, ServerMessage};

use crate::error::ClientError;
use crate::net::framed::{FrameError, Framed};

/// How long each handshake step may take.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// IP version to use for the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// IPv4 only (`-4`).
    V4,
    /// IPv6 only (`-6`).
    V6,
}

/// Where a server is and how to reach it; the same for every test kind.
#[derive(Debug, Clone)]
pub struct Endpoint {
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

/// A control connection whose test the server has accepted.
pub(crate) struct Opened {
    pub ctl: Framed,
    pub state: ClientState,
    pub server_addr: SocketAddr,
    pub local_addr: Option<SocketAddr>,
    pub server_version: String,
    pub session: [u8; SESSION_ID_LEN],
    /// The spec as the server will run it.
    pub spec: TestSpec,
    /// Why the server changed the spec, if it did.
    pub notes: Vec<String>,
    /// The QUIC certificate's SHA-256 (hex) for a QUIC test.
    pub quic_pin: Option<String>,
    pub start_wall: SystemTime,
    pub version: String,
}

impl Opened {
    /// The report's meta for this connection.
    pub(crate) fn meta(&self) -> Meta {
        Meta {
            local_addr: self.local_addr.map(|a| a.to_string()),
            server_version: Some(self.server_version.clone()),
            notes: self.notes.clone(),
            ..crate::run::meta::run_meta(&self.version, self.start_wall, Some(self.server_addr))
        }
    }
}

/// Connects and runs the handshake up to `accepted` for `spec`.
pub(crate) async fn open(endpoint: &Endpoint, spec: TestSpec) -> Result<Opened, ClientError> {
    let start_wall = SystemTime::now();
    let addrs = resolve(&endpoint.host, endpoint.port, endpoint.family).await?;
    let stream = connect_control(&addrs, endpoint.bind, endpoint.connect_timeout).await?;
    let server_addr = stream.peer_addr().map_err(ClientError::local("control socket"))?;
    let local_addr = stream.local_addr().ok();
    let mut ctl = Framed::new(stream, Vec::new());
    let mut state = ClientState::default();
    let greeting_lost = |e| before_greeting(e, server_addr);
    ctl.send_raw(&Preamble::encode(ConnKind::Control)).await.map_err(greeting_lost)?;
    ctl.send(&ClientMessage::Hello { version: endpoint.version.clone() })
        .await
        .map_err(greeting_lost)?;
    let ServerMessage::Challenge { version: server_version, nonce, auth_required } =
        recv_server_or(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT), greeting_lost).await?
    else {
        unreachable!("the state machine only lets a challenge through first")
    };
    let proof = match (&endpoint.token, auth_required) {
        (Some(token), _) => {
            let nonce = from_hex::<{ auth::NONCE_LEN }>(&nonce)
                .ok_or_else(|| protocol("malformed nonce"))?;
            Some(auth::prove(token, &nonce))
        }
        (None, true) => return Err(ClientError::TokenRequired),
        (None, false) => None,
    };
    ctl.send(&ClientMessage::Start { spec, auth: proof }).await.map_err(lost)?;
    let ServerMessage::Accepted { session, spec, notes, quic_pin } =
        recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
    else {
        unreachable!("the state machine only lets accepted or refused through")
    };
    let session =
        from_hex::<SESSION_ID_LEN>(&session).ok_or_else(|| protocol("malformed session id"))?;
    Ok(Opened {
        ctl,
        state,
        server_addr,
        local_addr,
        server_version,
        session,
        spec,
        notes,
        quic_pin,
        start_wall,
        version: endpoint.version.clone(),
    })
}

/// No test has started before the server's greeting, so losing the server there is not
/// "mid-test": a listener that never answers is not a reachable wirespeed server (exit 3), and
/// one that closes at once is refusing (a busy server sheds connections it cannot serve, exit 4).
fn before_greeting(e: FrameError, server: SocketAddr) -> ClientError {
    match e {
        FrameError::Timeout(limit) => ClientError::Unreachable {
            target: server.to_string(),
            cause: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "connected, but no greeting within {limit:?}: not a wirespeed server, or one \
                     too busy to answer"
                ),
            ),
        },
        FrameError::Closed | FrameError::Io(_) => ClientError::Refused {
            code: RefuseCode::Busy,
            message: format!(
                "it closed the connection before greeting ({e}): busy, or not a wirespeed server"
            ),
        },
        FrameError::Invalid(why) => {
            ClientError::Protocol(format!("not a wirespeed server, or a broken one: {why}"))
        }
    }
}

pub(crate) fn protocol<E: std::fmt::Display>(e: E) -> ClientError {
    ClientError::Protocol(e.to_string())
}

pub(crate) fn lost(e: FrameError) -> ClientError {
    match e {
        FrameError::Invalid(why) => ClientError::Protocol(why),
        other => ClientError::ServerGone(other.to_string()),
    }
}

pub(crate) async fn recv_server(
    ctl: &mut Framed,
    state: &mut ClientState,
    limit: Option<Duration>,
) -> Result<ServerMessage, ClientError> {
    recv_server_or(ctl, state, limit, |e| match e {
        FrameError::Invalid(why) => {
            ClientError::Protocol(format!("not a wirespeed server, or a broken one: {why}"))
        }
        other => ClientError::ServerGone(other.to_string()),
    })
    .await
}

/// A data stream failed: if the server said why (it aborted the test, or closed the control
/// connection), that is the better message; otherwise the stream's own error.
pub(crate) async fn explain_stream_failure(
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

/// Waits through a test in which the server says nothing until asked to stop: returns why
/// the conversation ended early (the server gone or aborting, or a message out of turn).
pub(crate) async fn server_lost(ctl: &mut Framed, state: &mut ClientState) -> ClientError {
    match recv_server(ctl, state, None).await {
        Ok(msg) => protocol(format!("unexpected {} message during the test", msg.name())),
        Err(e) => e,
    }
}

/// Resolves when a running test can go no further: the server's conversation ended (gone,
/// aborting, a message out of turn) or one of this side's workers failed (`failed` fired;
/// `why` gives its error), explained by the server when it says why. `control` is `None` for
/// a test without a wirespeed server (`--external`).
pub(crate) async fn test_failure(
    control: Option<(&mut Framed, &mut ClientState)>,
    failed: &tokio_util::sync::CancellationToken,
    why: impl FnOnce() -> String,
) -> ClientError {
    match control {
        Some((ctl, state)) => tokio::select! {
            e = server_lost(ctl, state) => e,
            _ = failed.cancelled() => explain_stream_failure(ctl, state, why()).await,
        },
        None => {
            failed.cancelled().await;
            ClientError::Stream(why())
        }
    }
}

/// [`recv_server`], with `on_error` saying what a failure to read a message means here.
async fn recv_server_or(
    ctl: &mut Framed,
    state: &mut ClientState,
    limit: Option<Duration>,
    on_error: impl FnOnce(FrameError) -> ClientError,
) -> Result<ServerMessage, ClientError> {
    let msg: ServerMessage = match limit {
        Some(l) => ctl.recv_within(l).await,
        None => ctl.recv().await,
    }
    .map_err(on_error)?;
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
        .map_err(|source| ClientError::Resolve { host: host.to_string(), cause: source })?
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
            Ok(Err(source)) => last = Some(ClientError::Connect { addr, cause: source }),
            Err(_) => {
                last = Some(ClientError::Connect {
                    addr,
                    cause: std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer within {limit:?}"),
                    ),
                })
            }
        }
    }
    Err(last.unwrap_or_else(|| unreachable!("resolve returns at least one address")))
}
