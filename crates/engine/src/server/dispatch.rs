//! The one place the server names the kinds: which hooks they hang on it, and which kind's
//! server half a test's spec starts. Adding a kind with a server half is one arm here (the
//! `match` is exhaustive) and, when it needs one, one hook.

use std::net::SocketAddr;
use std::sync::Arc;

use wirespeed_metrics::ServerTest;
use wirespeed_model::spec::TestSpec;
use wirespeed_proto::control::{RefuseCode, ServerState};

use super::admit::{refuse, Ended};
use super::ctx::{Ctx, ServerHook};
use crate::kinds::{bandwidth, cps, latency};
use crate::net::framed::Framed;

/// The hooks the kinds hang on a new server.
pub(super) fn hooks() -> Vec<Arc<dyn ServerHook>> {
    vec![
        Arc::new(cps::server::EmptyConnections::default()),
        Arc::new(bandwidth::iperf3_server::Iperf3Hook::default()),
    ]
}

/// The metrics' `kind` label of the test `spec` asks for: its kind's server half, or
/// [`ServerTest::Unknown`] for a kind without one (refused by [`serve_test`]).
pub(super) fn label(spec: &TestSpec) -> ServerTest {
    match spec {
        TestSpec::Bandwidth(_) => ServerTest::Bandwidth,
        TestSpec::Latency(_) => ServerTest::Latency,
        TestSpec::Cps(_) => ServerTest::Cps,
        TestSpec::Ping(_)
        | TestSpec::Trace(_)
        | TestSpec::Http(_)
        | TestSpec::Dns(_)
        | TestSpec::Rpm(_) => ServerTest::Unknown,
    }
}

/// Runs the server half of the test `spec` asks for; each kind validates its own spec and
/// applies its own limits.
pub(super) async fn serve_test(
    ctl: &mut Framed,
    state: ServerState,
    ctx: &Arc<Ctx>,
    spec: TestSpec,
    peer: SocketAddr,
) -> Result<(), Ended> {
    match spec {
        TestSpec::Bandwidth(spec) => bandwidth::server::run(ctl, state, ctx, spec, peer).await,
        TestSpec::Latency(spec) => latency::server::run(ctl, state, ctx, spec, peer).await,
        TestSpec::Cps(spec) => cps::server::run(ctl, state, ctx, spec, peer).await,
        // A UDP ping runs as a latency test; nothing else of ping's, or trace's, needs a server.
        TestSpec::Ping(_)
        | TestSpec::Trace(_)
        | TestSpec::Http(_)
        | TestSpec::Dns(_)
        | TestSpec::Rpm(_) => Err(refuse(
            ctl,
            RefuseCode::Limit,
            "ping, trace, http and dns are not server-side tests (UDP ping starts a latency test)"
                .into(),
        )
        .await),
    }
}
