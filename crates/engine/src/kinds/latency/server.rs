//! The server half of a latency test: after the shared handshake it collects the client's
//! connections (or UDP sockets, or QUIC connections over them) and echoes every byte straight
//! back until `Stop`.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::sync::mpsc;
use wirespeed_model::diagnosis::ThreadCpu;
use wirespeed_model::flow::Flow;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::rules::Protocol;
use wirespeed_model::spec::TestSpec;
use wirespeed_proto::codec::{to_hex, SESSION_ID_LEN};
use wirespeed_proto::control::{ServerMessage, ServerResults, ServerState};
use wirespeed_proto::datagram::{HELLO_LEN, HELLO_MAGIC};

use super::quic_stream;
use crate::net::framed::Framed;
use crate::net::{quic, sys};
use crate::run::threads::{own_usage, StreamThreads};
use crate::server::admit::{
    abort, admit, await_stop, recv_checked, time_limit, Ended, Registration,
};
use crate::server::ctx::Attached;
use crate::server::ctx::Ctx;

/// How long the client has to connect every stream after `Accepted`.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);
/// Grace after a timed test's end before the server gives up on the client's `Stop`.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// How often a blocked echo call wakes up to look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// Runs a latency test whose start the shared handshake has read.
pub(crate) async fn run(
    ctl: &mut Framed,
    mut state: ServerState,
    ctx: &Arc<Ctx>,
    spec: LatencySpec,
    peer: SocketAddr,
) -> Result<(), Ended> {
    let timed = spec.count.is_none().then(|| spec.total_ns());
    let permit = admit(ctl, ctx, spec.validate(), timed).await?;
    let mut session = [0u8; SESSION_ID_LEN];
    sys::fill_random(&mut session);
    let (tx, rx) = mpsc::channel(usize::from(spec.parallel) + 8);
    let registration = Registration::new(ctx, session, peer.ip(), tx);
    // QUIC streams present the server's certificate, which the client learns here.
    let quic = match spec.protocol {
        Protocol::Quic => {
            let (crypto, pin) = quic::test_identity().map_err(abort)?;
            let config = quic::server_config(crypto.clone(), &quic::Tuning::default())
                .map_err(|e| abort(format!("QUIC settings: {e}")))?;
            Some((config, to_hex(pin)))
        }
        _ => None,
    };
    let accepted = TestSpec::Latency(spec.clone());
    ctl.send(&ServerMessage::Accepted {
        session: to_hex(&session),
        spec: accepted,
        notes: Vec::new(),
        quic_pin: quic.as_ref().map(|(_, pin)| pin.clone()),
    })
    .await?;
    tracing::info!(%peer, protocol = ?spec.protocol, parallel = spec.parallel, "latency test accepted");
    let sockets = tokio::select! {
        r = collect(rx, spec.parallel) => r.map_err(abort)?,
        r = recv_checked(ctl, &mut state, None) => {
            return Err(match r { Ok(m) => abort(format!("unexpected {} before the streams connected", m.name())), Err(e) => e });
        }
        _ = ctx.shutdown.cancelled() => return Err(abort("the server is shutting down")),
    };
    drop(registration);
    let echo = Echo::start(&spec, sockets, quic.map(|(config, _)| config))
        .map_err(|e| abort(format!("could not start echo threads: {e}")))?;
    ctl.send(&ServerMessage::Begin).await?;
    let begin = tokio::time::Instant::now();
    let limit = time_limit(ctx, timed, STOP_GRACE);
    let outcome = await_stop(ctl, &mut state, ctx, begin, limit).await;
    let wall_ns = begin.elapsed().as_nanos() as u64;
    let usage = echo.usage.clone();
    let (cpu_user_ns, cpu_system_ns) =
        tokio::task::spawn_blocking(move || echo.stop()).await.unwrap_or_default();
    drop(permit);
    outcome?;
    let threads = std::mem::take(&mut *usage.lock().unwrap_or_else(|p| p.into_inner()));
    let results = ServerResults {
        threads,
        ..ServerResults::without_streams(cpu_user_ns, cpu_system_ns, wall_ns)
    };
    ctl.send(&ServerMessage::Results(Box::new(results))).await?;
    tracing::info!(%peer, seconds = wall_ns as f64 / 1e9, "latency test finished");
    Ok(())
}

async fn collect(mut rx: mpsc::Receiver<Attached>, parallel: u16) -> Result<Vec<Socket>, String> {
    let deadline = tokio::time::Instant::now() + ATTACH_TIMEOUT;
    let mut got: Vec<Attached> = Vec::new();
    while got.len() < usize::from(parallel) {
        let Ok(Some(a)) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            return Err(format!(
                "only {} of {parallel} streams connected within {ATTACH_TIMEOUT:?}",
                got.len()
            ));
        };
        // A stream the test does not have, or a repeated hello: drop that socket.
        if a.flow == Flow::Upload
            && (1..=parallel).contains(&a.id)
            && !got.iter().any(|g| g.id == a.id)
        {
            got.push(a);
        }
    }
    Ok(got.into_iter().map(|a| a.socket).collect())
}

/// The echo threads of one test, and what each used, as it ended.
struct Echo {
    threads: StreamThreads,
    usage: Arc<Mutex<Vec<ThreadCpu>>>,
}

impl Echo {
    fn start(
        spec: &LatencySpec,
        sockets: Vec<Socket>,
        quic: Option<quinn::ServerConfig>,
    ) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let all = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        let mut shared = Vec::new();
        // A client that busy-polls (`--busy-poll`) has its echoes polled too, so that neither
        // side's round trip waits for a sleeping thread to wake; at most one spinning thread per
        // core, so a client asking for more cannot take the whole machine.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin = spec.busy_poll && usize::from(spec.parallel) <= cores;
        for (i, s) in sockets.into_iter().enumerate() {
            let usage = all.clone();
            let _ = s.set_read_timeout(Some(POLL));
            let s = Arc::new(s);
            shared.push(s.clone());
            let stop = stop.clone();
            let protocol = spec.protocol;
            if protocol == Protocol::Tcp {
                let _ = s.set_tcp_nodelay(true);
            }
            let quic = quic.clone();
            let thread = std::thread::Builder::new().name(format!("ws-echo-{}", i + 1)).spawn(
                move || {
                    let born = Instant::now();
                    let _ = match (protocol, quic) {
                        (Protocol::Quic, Some(config)) => quic_stream::echo(&s, config, &stop),
                        (Protocol::Udp, _) => echo_udp(&s, &stop, spin),
                        _ => echo_tcp(&s, &stop, spin),
                    };
                    let used = own_usage(born);
                    let cpu = (used.user_ns, used.system_ns);
                    usage.lock().unwrap_or_else(|p| p.into_inner()).push(used);
                    cpu
                },
            )?;
            threads.push(thread);
        }
        Ok(Self { threads: StreamThreads { stop, sockets: shared, handles: threads }, usage: all })
    }

    /// Stops every thread and returns their CPU time (user, system) in nanoseconds.
    fn stop(self) -> (u64, u64) {
        self.threads.stop()
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// One read: blocking (up to the socket's timeout), or when `spin`, a non-blocking one that
/// the caller repeats at once.
fn read(s: &Socket, buf: &mut [u8], spin: bool) -> io::Result<usize> {
    if !spin {
        return (&*s).read(buf);
    }
    use std::os::fd::AsRawFd;
    // SAFETY: `buf` is writable for its whole length.
    let n = unsafe {
        libc::recv(s.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT)
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Writes back every byte read, as it arrives; the client reads whole messages.
fn echo_tcp(s: &Socket, stop: &AtomicBool, spin: bool) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Relaxed) {
        match read(s, &mut buf, spin) {
            Ok(0) => return Ok(()),
            Ok(n) => (&*s).write_all(&buf[..n])?,
            Err(e) if timed_out(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends every datagram back on the connected socket, except repeated stream hellos.
fn echo_udp(s: &Socket, stop: &AtomicBool, spin: bool) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    let started = Instant::now();
    while !stop.load(Relaxed) {
        match read(s, &mut buf, spin) {
            Ok(n)
                if n == HELLO_LEN
                    && buf.starts_with(&HELLO_MAGIC)
                    && started.elapsed() < ATTACH_TIMEOUT => {}
            Ok(n) => {
                let _ = s.send(&buf[..n]);
            }
            Err(e) if timed_out(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
