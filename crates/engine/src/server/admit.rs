//! The kit every kind's server half uses: how a conversation ends ([`Ended`]), refusing and
//! admitting a test against the server's limits, waiting for the client's `Stop` within a time
//! limit, and the registry entry that lets data streams find their test ([`Registration`]).

use std::net::IpAddr;
use std::time::Duration;

use tokio::sync::{mpsc, OwnedSemaphorePermit};
use wirespeed_model::rules::SpecError;
use wirespeed_proto::codec::SESSION_ID_LEN;
use wirespeed_proto::control::{ClientMessage, RefuseCode, ServerMessage, ServerState};

use super::ctx::{Attached, Ctx, Pending};
use crate::net::framed::{FrameError, Framed};

/// Why a conversation ended early.
#[derive(Debug)]
pub(crate) struct Ended {
    pub(crate) message: String,
    /// Whether the client should get an `Abort` with the message.
    pub(crate) tell_client: bool,
    /// The test was refused before it ran, for this reason.
    pub(crate) refused: Option<RefuseCode>,
    /// The client broke the control protocol (a malformed frame, a message out of turn).
    pub(crate) protocol: bool,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub(crate) fn quiet(message: impl Into<String>) -> Ended {
    Ended { message: message.into(), tell_client: false, refused: None, protocol: false }
}

pub(crate) fn abort(message: impl Into<String>) -> Ended {
    Ended { message: message.into(), tell_client: true, refused: None, protocol: false }
}

/// The client broke the control protocol; it is told what it did.
fn broke_protocol(message: impl Into<String>) -> Ended {
    Ended { protocol: true, ..abort(message) }
}

impl From<FrameError> for Ended {
    fn from(e: FrameError) -> Self {
        match e {
            // Tell a client that sent garbage what was wrong; a closed or dead one can't hear it.
            FrameError::Invalid(_) => broke_protocol(e.to_string()),
            _ => quiet(e.to_string()),
        }
    }
}

pub(crate) async fn refuse(ctl: &mut Framed, code: RefuseCode, message: String) -> Ended {
    let _ = ctl.send(&ServerMessage::Refused { code, message: message.clone() }).await;
    Ended { refused: Some(code), ..quiet(format!("refused: {message}")) }
}

pub(crate) async fn recv_checked(
    ctl: &mut Framed,
    state: &mut ServerState,
    limit: Option<Duration>,
) -> Result<ClientMessage, Ended> {
    let msg: ClientMessage = match limit {
        Some(l) => ctl.recv_within(l).await?,
        None => ctl.recv().await?,
    };
    state.on_client(&msg).map_err(|e| broke_protocol(e.to_string()))?;
    if let ClientMessage::Abort { reason } = &msg {
        return Err(quiet(format!("client aborted: {reason}")));
    }
    Ok(msg)
}

/// Refuses a test whose spec broke a rule (`valid`), that would run longer than
/// `--max-duration` (`total_ns` is `None` for a test bounded by a count) or that finds the
/// server full; otherwise returns the permit that holds its place among `--max-tests`.
pub(crate) async fn admit(
    ctl: &mut Framed,
    ctx: &Ctx,
    valid: Result<(), SpecError>,
    total_ns: Option<u64>,
) -> Result<OwnedSemaphorePermit, Ended> {
    if let Err(e) = valid {
        return Err(refuse(ctl, RefuseCode::Limit, e.to_string()).await);
    }
    let max = ctx.config.max_duration;
    if let Some(total) = total_ns {
        if !max.is_zero() && total > max.as_nanos() as u64 {
            let why = format!(
                "the test would run {:.0} s but this server allows at most {} s",
                total as f64 / 1e9,
                max.as_secs()
            );
            return Err(refuse(ctl, RefuseCode::Limit, why).await);
        }
    }
    match ctx.tests.clone().try_acquire_owned() {
        Ok(permit) => Ok(permit),
        Err(_) => {
            let why = format!(
                "the server is running its maximum of {} tests; try again later",
                ctx.config.max_tests
            );
            Err(refuse(ctl, RefuseCode::Busy, why).await)
        }
    }
}

/// Waits for the client's `Stop`, ending the test early when it outruns `limit` (from
/// `begin`) or the server shuts down.
pub(crate) async fn await_stop(
    ctl: &mut Framed,
    state: &mut ServerState,
    ctx: &Ctx,
    begin: tokio::time::Instant,
    limit: Duration,
) -> Result<(), Ended> {
    tokio::select! {
        msg = recv_checked(ctl, state, None) => msg.map(|m| debug_assert!(matches!(m, ClientMessage::Stop))),
        _ = tokio::time::sleep_until(begin + limit) => Err(abort(format!("the test exceeded the server's time limit of {} s", limit.as_secs()))),
        _ = ctx.shutdown.cancelled() => Err(abort("the server is shutting down")),
    }
}

/// How long the server lets a test run before aborting it: a timed test gets its time plus
/// `grace` for the client's `Stop`, a counted one gets `--max-duration` (if any).
pub(crate) fn time_limit(ctx: &Ctx, total_ns: Option<u64>, grace: Duration) -> Duration {
    match (total_ns, ctx.config.max_duration.is_zero()) {
        (Some(total), _) => Duration::from_nanos(total) + grace,
        (None, false) => ctx.config.max_duration,
        (None, true) => Duration::from_secs(86_400 * 365),
    }
}

/// Removes the session from the registry when dropped, whatever path the conversation takes.
pub(crate) struct Registration<'a> {
    ctx: &'a Ctx,
    id: [u8; SESSION_ID_LEN],
}

impl<'a> Registration<'a> {
    pub(crate) fn new(
        ctx: &'a Ctx,
        id: [u8; SESSION_ID_LEN],
        peer: IpAddr,
        attach: mpsc::Sender<Attached>,
    ) -> Self {
        if let Ok(mut s) = ctx.sessions.lock() {
            s.insert(id, Pending { peer, attach });
        }
        Self { ctx, id }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.ctx.sessions.lock() {
            s.remove(&self.id);
        }
    }
}
