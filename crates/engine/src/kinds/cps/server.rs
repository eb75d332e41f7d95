//! The server half of a cps test against a wirespeed server. The connections themselves
//! need nothing from a test: the listener accepts them and the router drops each one that
//! closes before saying what it is. This half admits the test (allow list, token, limits),
//! registers the client's address so the router counts those connections for it, and
//! returns the count when the client says `Stop`.

use std::any::Any;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wirespeed_model::kinds::cps::CpsSpec;
use wirespeed_model::spec::TestSpec;
use wirespeed_proto::codec::{to_hex, SESSION_ID_LEN};
use wirespeed_proto::control::{RefuseCode, ServerMessage, ServerResults, ServerState};

use crate::net::framed::Framed;
use crate::net::sys;
use crate::server::admit::{admit, await_stop, refuse, time_limit, Ended};
use crate::server::ctx::{canonical, Ctx, ServerHook};

/// Grace after a timed test's end before the server gives up on the client's `Stop`.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// Runs a cps test whose start the shared handshake has read.
pub(crate) async fn run(
    ctl: &mut Framed,
    mut state: ServerState,
    ctx: &Arc<Ctx>,
    spec: CpsSpec,
    peer: SocketAddr,
) -> Result<(), Ended> {
    let timed = spec.count.is_none().then(|| spec.total_ns());
    let permit = admit(ctl, ctx, spec.validate(), timed).await?;
    let Some(counter) = CpsCounter::register(ctx, peer.ip()) else {
        let why = format!(
            "a connections-per-second test from {} is already running",
            canonical(peer.ip())
        );
        return Err(refuse(ctl, RefuseCode::Busy, why).await);
    };
    let mut session = [0u8; SESSION_ID_LEN];
    sys::fill_random(&mut session);
    ctl.send(&ServerMessage::Accepted {
        session: to_hex(&session),
        spec: TestSpec::Cps(spec.clone()),
        notes: Vec::new(),
        quic_pin: None,
    })
    .await?;
    tracing::info!(%peer, parallel = spec.parallel, "cps test accepted");
    ctl.send(&ServerMessage::Begin).await?;
    let begin = tokio::time::Instant::now();
    let limit = time_limit(ctx, timed, STOP_GRACE);
    let outcome = await_stop(ctl, &mut state, ctx, begin, limit).await;
    let wall_ns = begin.elapsed().as_nanos() as u64;
    if outcome.is_ok() {
        settle(&counter.count).await;
    }
    let accepted = counter.count.load(Relaxed);
    drop(counter);
    drop(permit);
    outcome?;
    let results =
        ServerResults { accepted: Some(accepted), ..ServerResults::without_streams(0, 0, wall_ns) };
    ctl.send(&ServerMessage::Results(Box::new(results))).await?;
    tracing::info!(%peer, accepted, "cps test finished");
    Ok(())
}

/// Waits until `count` has stood still for a moment: the client's last connections may still
/// be in the accept queue when its `Stop` arrives.
async fn settle(count: &AtomicU64) {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(2);
    let mut seen = count.load(Relaxed);
    while tokio::time::Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = count.load(Relaxed);
        if now == seen {
            return;
        }
        seen = now;
    }
}

/// The count of one client address's cps test, removed from the server when dropped.
struct CpsCounter<'a> {
    ctx: &'a Ctx,
    ip: IpAddr,
    count: Arc<AtomicU64>,
}

impl<'a> CpsCounter<'a> {
    /// Registers `ip`; `None` when a cps test from it is already counting (the router can
    /// tell tests apart only by address).
    fn register(ctx: &'a Ctx, ip: IpAddr) -> Option<Self> {
        let ip = canonical(ip);
        let count = Arc::new(AtomicU64::new(0));
        let mut tests = ctx.hook::<EmptyConnections>()?.tests.lock().ok()?;
        if tests.contains_key(&ip) {
            return None;
        }
        tests.insert(ip, count.clone());
        Some(Self { ctx, ip, count })
    }
}

impl Drop for CpsCounter<'_> {
    fn drop(&mut self) {
        let hook = self.ctx.hook::<EmptyConnections>();
        if let Some(Ok(mut tests)) = hook.map(|h| h.tests.lock()) {
            tests.remove(&self.ip);
        }
    }
}

/// The server hook of cps: running cps tests by client address. Connections from that
/// address that close without a byte (or are shed, or are probes) count there: a cps client
/// opens connections that say nothing.
#[derive(Debug, Default)]
pub(crate) struct EmptyConnections {
    tests: Mutex<HashMap<IpAddr, Arc<AtomicU64>>>,
}

impl ServerHook for EmptyConnections {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn empty_connection(&self, peer: IpAddr) -> bool {
        let Ok(tests) = self.tests.lock() else { return false };
        match tests.get(&canonical(peer)) {
            Some(c) => {
                c.fetch_add(1, Relaxed);
                true
            }
            None => false,
        }
    }
}
