//! First-byte routing: a connection's preamble says whether it is our control or data
//! connection or a probe; a first byte that is not ours goes to the kind hook that claims it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use socket2::Socket;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use wirespeed_proto::codec::{
    ConnKind, DataHello, DecodeError, Preamble, DATA_HELLO_LEN, PREAMBLE_LEN, SESSION_ID_LEN,
};

use wirespeed_metrics::ConnectionRecord;

use super::ctx::{canonical, Attached, Conversation, Ctx, Dropped};
use crate::net::framed::Framed;

/// Where a connection goes once it said what it is.
pub(super) enum Route {
    /// Our control connection: a session.
    Control(Framed),
    /// A conversation a kind's hook starts (an iperf3 client's control connection).
    Claimed(Conversation),
    /// Handed over (a data stream to its test) or counted and closed (a probe).
    Done,
}

/// Reads a connection's preamble and sends it where it belongs.
pub(super) async fn route(
    mut stream: TcpStream,
    peer: SocketAddr,
    arrival: u64,
    ctx: &Arc<Ctx>,
    open: &Arc<ConnectionRecord>,
) -> Result<Route, Dropped> {
    let idle = ctx.config.idle_timeout;
    let mut buf = Vec::with_capacity(64);
    if let Err(why) = read_more(&mut stream, &mut buf, idle).await {
        // A cps test's connections close (or reset) without a byte: count, don't log.
        return if ctx.empty_connection(peer.ip()) { Ok(Route::Done) } else { Err(why) };
    }
    if let Some(hook) = ctx.hooks.iter().find(|h| h.claims(buf[0])) {
        let routed = hook.route_tcp(stream, buf, peer, arrival, ctx.clone(), open.clone()).await?;
        return Ok(routed.map_or(Route::Done, Route::Claimed));
    }
    let preamble = loop {
        match Preamble::decode(&buf) {
            Ok(p) => break p,
            Err(DecodeError::Invalid(why)) => return Err(Dropped::new("invalid", why)),
            Err(DecodeError::Incomplete(_)) => read_more(&mut stream, &mut buf, idle).await?,
        }
    };
    buf.drain(..PREAMBLE_LEN);
    match preamble.kind {
        ConnKind::Control => Ok(Route::Control(Framed::new(stream, buf))),
        ConnKind::Probe => {
            // Counted (when its address runs a cps test) and closed at once, by this side.
            ctx.empty_connection(peer.ip());
            Ok(Route::Done)
        }
        ConnKind::Data => {
            let hello = loop {
                match DataHello::decode(&buf) {
                    Ok(h) => break h,
                    Err(DecodeError::Invalid(why)) => return Err(Dropped::new("invalid", why)),
                    Err(DecodeError::Incomplete(_)) => {
                        read_more(&mut stream, &mut buf, idle).await?
                    }
                }
            };
            if buf.len() > DATA_HELLO_LEN {
                return Err(Dropped::new("invalid", "data sent before the test began"));
            }
            let std = stream.into_std().map_err(Dropped::io)?;
            std.set_nonblocking(false).map_err(Dropped::io)?;
            attach(
                ctx,
                peer.ip(),
                hello.session,
                Attached {
                    flow: hello.flow,
                    id: hello.stream,
                    socket: Socket::from(std),
                    open: Some(open.clone()),
                },
            )?;
            Ok(Route::Done)
        }
    }
}

/// Reads more of a connection's first bytes, within the idle timeout and a size cap.
pub(crate) async fn read_more(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    idle: Duration,
) -> Result<(), Dropped> {
    buf.reserve(64);
    match tokio::time::timeout(idle, stream.read_buf(buf)).await {
        Err(_) => Err(Dropped::new("silent", format!("silent for {idle:?}"))),
        Ok(Ok(0)) => Err(Dropped::new("closed", "closed before saying what it is")),
        Ok(Ok(_)) if buf.len() > 1024 => Err(Dropped::new("too_long", "handshake too long")),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Dropped::io(e)),
    }
}

/// Hands a data socket to the session it names, if that session exists and the socket comes
/// from the same host as the session's control connection.
/// True when `session` is a test in progress whose client is `from` (a UDP echo probe's
/// answer goes to no one else).
pub(super) fn in_session(ctx: &Ctx, from: IpAddr, session: &[u8; SESSION_ID_LEN]) -> bool {
    ctx.sessions
        .lock()
        .is_ok_and(|s| s.get(session).is_some_and(|p| canonical(p.peer) == canonical(from)))
}

pub(super) fn attach(
    ctx: &Ctx,
    from: IpAddr,
    session: [u8; SESSION_ID_LEN],
    socket: Attached,
) -> Result<(), Dropped> {
    let sessions = ctx.sessions.lock().map_err(|_| Dropped::io("session table poisoned"))?;
    let pending =
        sessions.get(&session).ok_or(Dropped::new("unknown_session", "unknown session"))?;
    if canonical(pending.peer) != canonical(from) {
        return Err(Dropped::new(
            "wrong_host",
            format!("data stream from {from} for a session of {}", pending.peer),
        ));
    }
    pending
        .attach
        .try_send(socket)
        .map_err(|_| Dropped::new("unknown_session", "session is not accepting streams"))
}
