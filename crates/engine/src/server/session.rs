//! The server's side of the control conversation every kind with a server half shares:
//! `hello`, the allow list, the challenge, `start` with the token check, then the kind's own
//! half ([`super::dispatch`]).

use std::net::SocketAddr;
use std::sync::Arc;

use wirespeed_metrics::{RefusalReason, ServerTest, TestOutcome, TestRecord};
use wirespeed_proto::auth::{self, NONCE_LEN};
use wirespeed_proto::codec::to_hex;
use wirespeed_proto::control::{ClientMessage, RefuseCode, ServerMessage, ServerState};

use super::admit::{recv_checked, refuse, Ended};
use super::ctx::{canonical, Ctx};
use super::dispatch;
use crate::net::framed::Framed;
use crate::net::sys;

/// Serves one control connection to its end, logging and counting how it went.
pub(crate) async fn serve(mut ctl: Framed, peer: SocketAddr, ctx: Arc<Ctx>) {
    let mut record = None;
    let ended = conversation(&mut ctl, peer, &ctx, &mut record).await;
    let metrics = &ctx.config.metrics.server;
    if let Err(why) = &ended {
        if why.protocol {
            metrics.protocol_error("control");
        }
    }
    // A client that never named a test (it went away, or broke the protocol first) ran none.
    let outcome = match &ended {
        Ok(()) => TestOutcome::Completed,
        Err(Ended { refused: Some(code), .. }) => TestOutcome::Refused(reason(*code)),
        Err(_) => TestOutcome::Aborted,
    };
    match (record, outcome) {
        (Some(record), outcome) => record.end(outcome),
        (None, TestOutcome::Refused(why)) => {
            metrics.begin(ServerTest::Unknown).end(TestOutcome::Refused(why))
        }
        (None, _) => {}
    }
    match ended {
        Ok(()) => {}
        Err(why) => {
            tracing::info!(%peer, "test ended: {why}");
            if why.tell_client {
                let _ = ctl.send(&ServerMessage::Abort { reason: why.message.clone() }).await;
            }
        }
    }
    ctl.close().await;
}

/// The `reason` label of a refusal.
fn reason(code: RefuseCode) -> RefusalReason {
    match code {
        RefuseCode::Auth => RefusalReason::Auth,
        RefuseCode::NotAllowed => RefusalReason::NotAllowed,
        RefuseCode::Busy => RefusalReason::Busy,
        RefuseCode::Limit => RefusalReason::Limit,
        RefuseCode::Version => RefusalReason::Version,
    }
}

/// The conversation; `record` holds the test once the client has named it.
async fn conversation(
    ctl: &mut Framed,
    peer: SocketAddr,
    ctx: &Arc<Ctx>,
    record: &mut Option<TestRecord>,
) -> Result<(), Ended> {
    let cfg = &ctx.config;
    let mut state = ServerState::default();
    let ClientMessage::Hello { version } =
        recv_checked(ctl, &mut state, Some(cfg.idle_timeout)).await?
    else {
        unreachable!("the state machine only lets hello through first")
    };
    tracing::debug!(%peer, client_version = %version, "hello");
    if !cfg.allows(peer.ip()) {
        return Err(refuse(
            ctl,
            RefuseCode::NotAllowed,
            format!("{} is not allowed to use this server", canonical(peer.ip())),
        )
        .await);
    }
    let mut nonce = [0u8; NONCE_LEN];
    sys::fill_random(&mut nonce);
    ctl.send(&ServerMessage::Challenge {
        version: cfg.version.clone(),
        nonce: to_hex(&nonce),
        auth_required: cfg.token.is_some(),
    })
    .await?;
    let ClientMessage::Start { spec, auth } =
        recv_checked(ctl, &mut state, Some(cfg.idle_timeout)).await?
    else {
        unreachable!("the state machine only lets start through second")
    };
    *record = Some(cfg.metrics.server.begin(dispatch::label(&spec)));
    if let Some(token) = &cfg.token {
        let ok = auth.as_deref().is_some_and(|proof| auth::verify(token, &nonce, proof));
        if !ok {
            let why = if auth.is_none() {
                "this server requires a token (--token)"
            } else {
                "wrong token"
            };
            return Err(refuse(ctl, RefuseCode::Auth, why.into()).await);
        }
    }
    dispatch::serve_test(ctl, state, ctx, spec, peer).await
}
