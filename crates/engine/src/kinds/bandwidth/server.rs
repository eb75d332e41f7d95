//! The server half of a bandwidth test, after the shared handshake (`crate::server::session`): it
//! applies the server's limits, hands out a session id, collects the data streams, runs its
//! stream ends, reports ticks, and on `Stop` reports its final totals.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::rules::Protocol;
use wirespeed_model::spec::TestSpec;
use wirespeed_model::units::bits_per_second;
use wirespeed_proto::codec::{to_hex, SESSION_ID_LEN};
use wirespeed_proto::control::{
    ClientMessage, RefuseCode, ServerMessage, ServerResults, ServerState, StreamTotals,
};
use wirespeed_proto::datagram::Wire;

use super::quic_ends::QuicSide;
use super::shared::Role;
use super::tally::Tally;
use super::workers::{self, Finishing, Side};
use crate::net::framed::Framed;
use crate::net::sys;
use crate::run::intervals::{Clock, Ending, Tick, Timers};
use crate::server::admit::{abort, recv_checked, refuse, Ended, Registration};
use crate::server::ctx::Attached;
use crate::server::ctx::Ctx;

/// How long the client has to connect every data stream after `Accepted`.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);
/// Grace after a time-based test's end before the server gives up on the client's `Stop`.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// Runs an accepted-to-be bandwidth test: validates and limits the spec, registers the session,
/// collects the streams and runs them.
pub(crate) async fn run(
    ctl: &mut Framed,
    mut state: ServerState,
    ctx: &Arc<Ctx>,
    mut spec: BandwidthSpec,
    peer: SocketAddr,
) -> Result<(), Ended> {
    let cfg = &ctx.config;
    if let Err(e) = spec.validate() {
        return Err(refuse(ctl, RefuseCode::Limit, e.to_string()).await);
    }
    let notes = match apply_limits(&mut spec, cfg.max_duration, cfg.max_bitrate_bps) {
        Ok(notes) => notes,
        Err(why) => return Err(refuse(ctl, RefuseCode::Limit, why).await),
    };
    let Ok(permit) = ctx.tests.clone().try_acquire_owned() else {
        return Err(refuse(
            ctl,
            RefuseCode::Busy,
            format!(
                "the server is running its maximum of {} tests; try again later",
                cfg.max_tests
            ),
        )
        .await);
    };

    let mut session = [0u8; SESSION_ID_LEN];
    sys::fill_random(&mut session);
    let expected = Flow::of(spec.direction).len() * usize::from(spec.parallel);
    let (attach_tx, attach_rx) = mpsc::channel(expected + 8);
    // Registered until the test ends: streams attach by it, and the client's UDP echo
    // probes (`--latency`) are answered while it is.
    let _registration = Registration::new(ctx, session, peer.ip(), attach_tx);
    let quic_pin = match spec.protocol {
        Protocol::Quic => Some(to_hex(&crate::net::quic::test_identity().map_err(abort)?.1)),
        _ => None,
    };
    let accepted = TestSpec::Bandwidth(spec.clone());
    ctl.send(&ServerMessage::Accepted {
        session: to_hex(&session),
        spec: accepted,
        notes,
        quic_pin,
    })
    .await?;
    tracing::info!(%peer, protocol = ?spec.protocol, direction = ?spec.direction, parallel = spec.parallel, "test accepted");

    let sockets = tokio::select! {
        r = collect_streams(attach_rx, &spec, peer.ip()) => r.map_err(abort)?,
        r = recv_checked(ctl, &mut state, None) => {
            return Err(match r { Ok(m) => abort(format!("unexpected {} before the streams connected", m.name())), Err(e) => e });
        }
        _ = ctx.shutdown.cancelled() => return Err(abort("the server is shutting down")),
    };
    run_test(ctl, &mut state, ctx, spec, sockets, peer, permit).await
}

/// Applies the server's limits to a client's spec: refuses what cannot be capped, caps the
/// rest, and says what changed.
pub fn apply_limits(
    spec: &mut BandwidthSpec,
    max_duration: Duration,
    max_bitrate_bps: u64,
) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    if !max_duration.is_zero()
        && spec.bytes.is_none()
        && spec.total_ns() > max_duration.as_nanos() as u64
    {
        return Err(format!(
            "the test would run {:.0} s (warm-up included) but this server allows at most {} s",
            spec.total_ns() as f64 / 1e9,
            max_duration.as_secs()
        ));
    }
    if max_bitrate_bps > 0 {
        let streams = u64::from(spec.parallel) * Flow::of(spec.direction).len() as u64;
        let per_stream = (max_bitrate_bps / streams).max(1);
        if spec.bitrate_bps == 0 || spec.bitrate_bps > per_stream {
            spec.bitrate_bps = per_stream;
            notes.push(format!(
                "the server caps a test at {max_bitrate_bps} bit/s: each of the {streams} streams is paced at {per_stream} bit/s"
            ));
        }
    }
    Ok(notes)
}

async fn collect_streams(
    mut rx: mpsc::Receiver<Attached>,
    spec: &BandwidthSpec,
    peer: IpAddr,
) -> Result<Vec<Attached>, String> {
    let want: HashSet<(Flow, u16)> = Flow::of(spec.direction)
        .iter()
        .flat_map(|&f| (1..=spec.parallel).map(move |id| (f, id)))
        .collect();
    let mut got = Vec::with_capacity(want.len());
    let mut seen = HashSet::new();
    let deadline = tokio::time::Instant::now() + ATTACH_TIMEOUT;
    while seen.len() < want.len() {
        let Ok(Some(a)) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            return Err(format!(
                "only {} of {} data streams connected within {ATTACH_TIMEOUT:?}",
                seen.len(),
                want.len()
            ));
        };
        let key = (a.flow, a.id);
        if !want.contains(&key) || !seen.insert(key) {
            continue; // a stream the test does not have, or a repeated hello: drop that socket
        }
        let ipv6 = matches!(peer, IpAddr::V6(_));
        let notes = match spec.protocol {
            Protocol::Tcp => workers::tune_accepted_tcp(&a.socket, spec, ipv6),
            Protocol::Udp | Protocol::Quic => workers::tune_udp(&a.socket, spec, ipv6),
        };
        for n in notes {
            tracing::warn!("{n}");
        }
        got.push(a);
    }
    Ok(got)
}

async fn run_test(
    ctl: &mut Framed,
    state: &mut ServerState,
    ctx: &Arc<Ctx>,
    spec: BandwidthSpec,
    sockets: Vec<Attached>,
    peer: SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<(), Ended> {
    // The certificate was made (or found) before `Accepted` named it.
    let quic = match spec.protocol {
        Protocol::Quic => Some(
            crate::net::quic::test_identity()
                .and_then(|(crypto, _)| {
                    QuicSide::server(&spec, crypto.clone()).map_err(|e| e.to_string())
                })
                .map_err(|e| abort(format!("QUIC settings: {e}")))?,
        ),
        _ => None,
    };
    let mut side = Side::start(End::Server, &spec, Wire::Wirespeed, quic, sockets)
        .map_err(|e| abort(format!("could not start streams: {e}")))?;
    ctl.send(&ServerMessage::Begin).await?;
    let mut tally =
        Tally::new(&ctx.config.metrics.server, wirespeed_metrics::ServerTest::Bandwidth);
    let at_omit = tick_until_stop(ctl, state, ctx, &spec, &mut side, &mut tally).await?;
    let results = finish(&mut side, &spec, at_omit).await?;
    tally.catch_up(&results.at_end);
    let moved: u64 = results.at_end.iter().map(|s| s.totals.bytes).sum();
    let seconds = results.wall_ns as f64 / 1e9;
    // Release the streams and the test slot before answering, so a client that starts its
    // next test as soon as it has these results finds the slot free.
    drop(side);
    drop(permit);
    ctl.send(&ServerMessage::Results(Box::new(results))).await?;
    tracing::info!(%peer, bytes = moved, seconds, "test finished");
    Ok(())
}

/// Sends the client a tick of every stream's totals at each interval boundary until it says
/// stop; enforces `--max-bitrate` on uploads and the server's time limit. The totals when the
/// warm-up ended.
async fn tick_until_stop(
    ctl: &mut Framed,
    state: &mut ServerState,
    ctx: &Arc<Ctx>,
    spec: &BandwidthSpec,
    side: &mut Side,
    tally: &mut Tally,
) -> Result<Vec<StreamTotals>, Ended> {
    // The client decides when the test ends: this clock has no deadline of its own, only
    // the server's limit below. As on the client, a warm-up ending on a tick uses that tick's
    // snapshot, and one between ticks the totals at its exact time.
    let clock = Clock::new(spec.interval_ns, None, spec.omit_ns, Ending::Stop);
    let mut timers = Timers::start(clock, std::time::Instant::now(), true);
    let mut at_omit = if spec.omit_ns == 0 { Some(side.zeros()) } else { None };
    let limit = match (spec.bytes, ctx.config.max_duration.is_zero()) {
        (None, _) => Duration::from_nanos(spec.total_ns()) + STOP_GRACE,
        (Some(_), false) => ctx.config.max_duration,
        (Some(_), true) => Duration::from_secs(86_400 * 365),
    };
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let mut cap = UploadCap::new(ctx.config.max_bitrate_bps);
    let mut index = 0u32;
    loop {
        tokio::select! {
            msg = recv_checked(ctl, state, None) => {
                let msg = msg?;
                debug_assert!(matches!(msg, ClientMessage::Stop));
                return Ok(at_omit.unwrap_or_else(|| side.snapshot()));
            }
            tick = timers.next() => match tick {
                Tick::Boundary(b) => {
                    let streams = side.snapshot();
                    tally.catch_up(&streams);
                    if b.ends_warm_up && at_omit.is_none() {
                        at_omit = Some(streams.clone());
                    }
                    if let Some(rate) = cap.exceeded(&streams, spec.interval_ns) {
                        return Err(abort(format!("the client sent {rate:.0} bit/s, above this server's limit of {} bit/s", cap.cap)));
                    }
                    ctl.send(&ServerMessage::Tick { index, streams }).await?;
                    index += 1;
                }
                Tick::WarmUpEnded => {
                    at_omit.get_or_insert_with(|| side.snapshot());
                }
                Tick::Deadline => {}
            },
            Some(done) = side.next_done() => {
                if let Some(err) = done.error {
                    return Err(abort(err));
                }
            }
            _ = &mut deadline => return Err(abort(format!("the test exceeded the server's time limit of {} s", limit.as_secs()))),
            _ = ctx.shutdown.cancelled() => return Err(abort("the server is shutting down")),
        }
    }
}

/// `--max-bitrate` on what clients send us (our own sends are paced to it): two intervals
/// in a row above one and a half times the cap end the test.
pub(super) struct UploadCap {
    /// The cap in bit/s; 0 for none.
    pub(super) cap: u64,
    last_bytes: u64,
    over: u32,
}

impl UploadCap {
    pub(super) fn new(cap: u64) -> Self {
        Self { cap, last_bytes: 0, over: 0 }
    }

    /// Takes an interval's totals; the upload rate when it ends the test.
    pub(super) fn exceeded(&mut self, streams: &[StreamTotals], interval_ns: u64) -> Option<f64> {
        if self.cap == 0 {
            return None;
        }
        let up: u64 =
            streams.iter().filter(|s| s.flow == Flow::Upload).map(|s| s.totals.bytes).sum();
        let rate = bits_per_second(up - self.last_bytes, interval_ns);
        self.last_bytes = up;
        self.over = if rate > self.cap as f64 * 1.5 { self.over + 1 } else { 0 };
        (self.over >= 2).then_some(rate)
    }
}

/// Stops sending, lets the streams finish, and gathers this end's results.
async fn finish(
    side: &mut Side,
    spec: &BandwidthSpec,
    at_omit: Vec<StreamTotals>,
) -> Result<ServerResults, Ended> {
    side.stop_sending();
    let mut finishing = Finishing::new();
    let finished = side.finish_role(Role::Send, &mut finishing).await && {
        side.drain();
        side.finish_role(Role::Recv, &mut finishing).await
    };
    if !finished {
        return Err(abort("the data streams did not finish after stop"));
    }
    if let Some(err) = side.first_error() {
        return Err(abort(err));
    }
    let at_end = side.snapshot();
    let wall_ns = side.shared.now_ns();
    let mut active_ns = side.active_ns(Role::Recv, spec.omit_ns);
    active_ns.extend(side.active_ns(Role::Send, spec.omit_ns));
    let (cpu_user_ns, cpu_system_ns) = side.cpu_ns();
    Ok(ServerResults {
        at_omit,
        at_end,
        active_ns,
        cpu_user_ns,
        cpu_system_ns,
        wall_ns,
        accepted: None,
        threads: side.thread_usage(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::kinds::bandwidth::Direction;

    #[test]
    fn limits_refuse_long_tests_and_cap_rates() {
        let mut spec = BandwidthSpec::new("h", Protocol::Tcp);
        spec.duration_ns = 100_000_000_000;
        assert!(apply_limits(&mut spec, Duration::from_secs(60), 0).is_err());
        spec.duration_ns = 10_000_000_000;
        spec.parallel = 2;
        spec.direction = Direction::Bidir;
        let notes = apply_limits(&mut spec, Duration::from_secs(60), 100_000_000).unwrap();
        assert_eq!(spec.bitrate_bps, 25_000_000);
        assert_eq!(notes.len(), 1);
        let mut slow = BandwidthSpec::new("h", Protocol::Udp);
        assert!(apply_limits(&mut slow, Duration::ZERO, 100_000_000).unwrap().is_empty());
        assert_eq!(slow.bitrate_bps, 1_000_000);
    }
}
