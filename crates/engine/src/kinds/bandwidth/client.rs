//! The client half of a bandwidth test: resolve, connect, handshake, open the data streams,
//! run until the time or byte budget is spent (or the user interrupts), then collect both
//! ends' figures into a [`Report`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use socket2::Socket;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::diagnosis::{Diagnosis, ThreadCpu};
use wirespeed_model::kinds::bandwidth::{BandwidthInterval, BandwidthReport, BandwidthSummary};
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::rules::Protocol;
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;
use wirespeed_proto::codec::{from_hex, DataHello, SESSION_ID_LEN};
use wirespeed_proto::control::{
    ClientMessage, ClientState, ServerMessage, ServerResults, StreamTotals,
};
use wirespeed_proto::datagram::{UdpHello, Wire};

use super::collect::{Collector, LocalEnd};
use super::probing::Probing;
use super::quic_ends::QuicSide;
use super::schedule::{emit_intervals, finish_and_emit, Outcome, Schedule};
use super::shared::Role;
use super::workers::{self, Finishing, Side};
use crate::error::ClientError;
use crate::net::framed::Framed;
use crate::net::handshake::{self, explain_stream_failure, lost, protocol, recv_server};
use crate::net::handshake::{Endpoint, HANDSHAKE_TIMEOUT};
use crate::net::streams::{open_tcp, open_udp};
use crate::run::intervals::Tick;
use crate::server::ctx::Attached;

/// How long to wait for the server's results after `Stop`: the server may spend up to
/// [`workers::FINISH_LIMIT`] letting its receivers drain a slow path, and then answers.
const RESULTS_TIMEOUT: Duration = workers::FINISH_LIMIT.saturating_add(Duration::from_secs(15));

/// Everything a bandwidth client needs.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The test.
    pub spec: BandwidthSpec,
    /// The server.
    pub endpoint: Endpoint,
    /// Probe the path's round trip on new connections before and during the test
    /// (`--latency`).
    pub latency: bool,
}

/// Runs one bandwidth test and returns its report. Events go to `events` as they happen;
/// cancelling `cancel` ends the test early but still collects and reports what was measured.
pub async fn run(
    opts: ClientOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let opened = handshake::open(&opts.endpoint, TestSpec::Bandwidth(opts.spec.clone())).await?;
    let mut meta = opened.meta();
    let handshake::Opened { mut ctl, mut state, server_addr, session, spec, quic_pin, .. } = opened;
    let TestSpec::Bandwidth(spec) = spec else {
        return Err(protocol("the server accepted a different kind of test"));
    };
    if spec.protocol != opts.spec.protocol
        || spec.parallel != opts.spec.parallel
        || spec.direction != opts.spec.direction
    {
        return Err(protocol("the server changed the test's shape"));
    }
    // Idle round trips first, while nothing of the test moves.
    let probing = match opts.latency {
        true => {
            let (probing, note) = Probing::idle(server_addr, opts.endpoint.bind, session).await;
            meta.notes.extend(note);
            Some(probing)
        }
        false => None,
    };
    let sockets = {
        let spec = spec.clone();
        let bind = opts.endpoint.bind;
        tokio::task::spawn_blocking(move || open_streams(&spec, server_addr, bind, session))
            .await
            .map_err(ClientError::joined("opening data streams"))??
    };
    meta.notes.extend(sockets.1);
    let quic = match spec.protocol {
        Protocol::Quic => {
            let pin = quic_pin
                .as_deref()
                .and_then(from_hex::<32>)
                .ok_or_else(|| protocol("the server named no QUIC certificate for a QUIC test"))?;
            Some(QuicSide::client(&spec, pin).map_err(ClientError::local("QUIC settings"))?)
        }
        _ => None,
    };
    let ServerMessage::Begin = recv_server(&mut ctl, &mut state, Some(HANDSHAKE_TIMEOUT)).await?
    else {
        unreachable!("the state machine only lets begin through after accepted")
    };
    let side = Side::start(End::Client, &spec, Wire::Wirespeed, quic, sockets.0)
        .map_err(ClientError::local("starting data threads"))?;
    let _ =
        events.send(Event::Start { spec: TestSpec::Bandwidth(spec.clone()), meta: meta.clone() });
    let probing = probing.map(|p| p.start(side.shared.begin));
    let ((intervals, summary, interrupted), server_threads) =
        match drive(&mut ctl, &mut state, side, &spec, probing, &events, &cancel).await {
            Ok(done) => done,
            Err(cut) => {
                let (intervals, summary, cause) = cut.measured().await;
                let body = ReportBody::Bandwidth(BandwidthReport { spec, intervals, summary });
                return Err(ClientError::partial(Report { body, meta }, cause));
            }
        };
    meta.diagnosis = Some(Diagnosis { server_threads, ..Diagnosis::default() });
    if interrupted {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    ctl.close().await;
    let report =
        Report { body: ReportBody::Bandwidth(BandwidthReport { spec, intervals, summary }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

async fn drive(
    ctl: &mut Framed,
    state: &mut ClientState,
    mut side: Side,
    spec: &BandwidthSpec,
    probing: Option<Probing>,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Result<(Outcome, Vec<ThreadCpu>), Cut> {
    let mut collector = Collector::new(spec.clone());
    if let Some(p) = probing {
        collector = collector.with_probes(Box::new(p));
    }
    let mut schedule = Schedule::start(spec, &side);
    let timed = schedule.timed();
    let mut remote_sent_download = 0u64;
    let mut interrupted = false;
    let emit = |ivs: Vec<_>| emit_intervals(events, ivs);
    let bytes_done = |side: &Side, remote_sent: u64| {
        let download_done = match spec.protocol {
            // UDP has no end-of-stream: the server's ticks say when it has sent its budget.
            Protocol::Udp => {
                !spec.direction.server_sends() || spec.bytes.is_some_and(|b| remote_sent >= b)
            }
            Protocol::Tcp | Protocol::Quic => side.finished(Role::Recv),
        };
        side.finished(Role::Send) && download_done
    };
    let running = loop {
        if !timed && bytes_done(&side, remote_sent_download) {
            break Ok(());
        }
        tokio::select! {
            _ = cancel.cancelled() => { interrupted = true; break Ok(()); }
            tick = schedule.next() => match tick {
                Tick::Deadline => break Ok(()),
                tick => emit(schedule.on(tick, &side, &mut collector)),
            },
            msg = recv_server(ctl, state, None) => match msg {
                Ok(ServerMessage::Tick { index, streams }) => {
                    remote_sent_download = streams.iter().filter(|s| s.flow == Flow::Download).map(|s| s.totals.bytes).sum();
                    emit(collector.remote_tick(index, &streams));
                }
                Ok(other) => break Err(protocol(format!("unexpected {} message before the test ended", other.name()))),
                Err(e) => break Err(e),
            },
            Some(done) = side.next_done() => {
                if let Some(err) = done.error {
                    break Err(explain_stream_failure(ctl, state, err).await);
                }
            }
        }
    };
    if let Err(cause) = running {
        return Err(Cut { collector, side, cause });
    }
    let at_omit = schedule.take_omit(&side);
    let (results, local) =
        match stop(ctl, state, &mut side, spec, &mut collector, events, at_omit).await {
            Ok(ended) => ended,
            Err(cause) => return Err(Cut { collector, side, cause }),
        };
    let (intervals, summary) = finish_and_emit(collector, &local, &results, events);
    Ok(((intervals, summary, interrupted), results.threads))
}

/// A test that failed after it began: why, and what both ends had reported until then.
struct Cut {
    collector: Collector,
    side: Side,
    cause: ClientError,
}

impl Cut {
    /// Stops this end's streams and returns the figures up to the last interval both ends
    /// reported (a stream that fails is told to stop at once; a second is plenty to end).
    async fn measured(self) -> (Vec<BandwidthInterval>, BandwidthSummary, ClientError) {
        let Cut { collector, mut side, cause } = self;
        side.abort();
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            side.wait_role(Role::Send).await;
            side.wait_role(Role::Recv).await;
        })
        .await;
        let (intervals, summary) = collector.abandon(side.cpu_ns(), side.shared.now_ns());
        (intervals, summary, cause)
    }
}

/// Tells the server to stop and waits for its results (its last ticks still feed the
/// collector), then for this end's streams to finish; the server's results and this end's.
async fn stop(
    ctl: &mut Framed,
    state: &mut ClientState,
    side: &mut Side,
    spec: &BandwidthSpec,
    collector: &mut Collector,
    events: &UnboundedSender<Event>,
    at_omit: Vec<StreamTotals>,
) -> Result<(ServerResults, LocalEnd), ClientError> {
    let emit = |ivs: Vec<_>| emit_intervals(events, ivs);
    ctl.send(&ClientMessage::Stop).await.map_err(lost)?;
    side.stop_sending();
    let results = tokio::time::timeout(RESULTS_TIMEOUT, async {
        loop {
            match recv_server(ctl, state, None).await? {
                ServerMessage::Tick { index, streams } => {
                    emit(collector.remote_tick(index, &streams))
                }
                ServerMessage::Results(r) => return Ok::<ServerResults, ClientError>(*r),
                other => {
                    return Err(protocol(format!("unexpected {} message after stop", other.name())))
                }
            }
        }
    })
    .await
    .map_err(|_| {
        ClientError::ServerGone(format!("no results within {RESULTS_TIMEOUT:?} of stopping"))
    })??;
    // The server has stopped sending by now: TCP receivers see EOF, UDP receivers drain.
    side.drain();
    let mut finishing = Finishing::new();
    let finished = side.finish_role(Role::Send, &mut finishing).await
        && side.finish_role(Role::Recv, &mut finishing).await;
    if !finished {
        return Err(ClientError::Stream(
            "local data streams did not finish after the server's results".into(),
        ));
    }
    if let Some(err) = side.first_error() {
        return Err(ClientError::Stream(err));
    }
    let mut active_ns = side.active_ns(Role::Send, spec.omit_ns);
    active_ns.extend(side.active_ns(Role::Recv, spec.omit_ns));
    let local = LocalEnd {
        at_omit,
        at_end: side.snapshot(),
        end_ns: side.ended_ns(),
        active_ns,
        cpu_ns: side.cpu_ns(),
    };
    Ok((results, local))
}

/// Opens every data stream of the session (blocking); returns the sockets and any notes about
/// options the OS did not take.
fn open_streams(
    spec: &BandwidthSpec,
    server: SocketAddr,
    bind: Option<IpAddr>,
    session: [u8; SESSION_ID_LEN],
) -> Result<(Vec<Attached>, Vec<String>), ClientError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for &flow in Flow::of(spec.direction) {
        for id in 1..=spec.parallel {
            let socket = match spec.protocol {
                Protocol::Tcp => {
                    let tune = |s: &Socket| workers::tune_tcp(s, spec, server.is_ipv6());
                    let hello = DataHello { session, flow, stream: id };
                    open_tcp(server, bind, hello, &tune, &mut notes)?
                }
                // A QUIC stream's connection runs over the socket its hello opened.
                Protocol::Udp | Protocol::Quic => {
                    let tune = |s: &Socket| workers::tune_udp(s, spec, server.is_ipv6());
                    let hello = UdpHello { ack: false, session, flow, stream: id };
                    open_udp(server, bind, hello, &tune, &mut notes)?
                }
            };
            out.push(Attached { flow, id, socket, open: None });
        }
    }
    notes.sort();
    notes.dedup();
    Ok((out, notes))
}
