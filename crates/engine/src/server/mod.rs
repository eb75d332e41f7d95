//! `wirespeed server`: one TCP and one UDP listener per bound address, all on one port. Each
//! TCP connection announces what it is in its first bytes (`route`); UDP datagrams on the
//! listener are stream hellos, or a protocol a kind claims. Tests are isolated sessions, any
//! number at once up to `--max-tests`; a shutdown signal reaches every session, which tells
//! its client before stopping.
//!
//! The generic server knows no kind by name: kinds find the kit they share in `admit` and
//! `ctx` and hang what only they need on `ctx::ServerHook`; `dispatch` is the one place
//! that lists them, so the modules form a DAG (`mod` → `dispatch` → kinds → `admit`/`ctx`).

pub(crate) mod admit;
pub(crate) mod ctx;
mod dispatch;
pub(crate) mod handshakes;
pub(crate) mod listeners;
pub(crate) mod route;
mod session;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use wirespeed_proto::datagram::{UdpEcho, UdpHello, ECHO_LEN, HELLO_LEN};

pub use ctx::{canonical, ServerConfig};
pub use listeners::Listeners;

use ctx::{Attached, Ctx, Dropped};
use handshakes::Handshakes;
use listeners::connect_udp_stream;
use route::{attach, in_session, route, Route};

/// Serves until `shutdown` is cancelled, then tells running tests to stop and waits for them.
pub async fn run(
    listeners: Listeners,
    config: ServerConfig,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let ctx = Arc::new(Ctx {
        tests: Arc::new(Semaphore::new(config.max_tests.max(1))),
        config,
        sessions: Arc::default(),
        hooks: dispatch::hooks(),
        arrivals: AtomicU64::new(0),
        shutdown: shutdown.clone(),
        tasks: TaskTracker::new(),
    });
    let handshakes = Arc::new(Handshakes::default());
    for listener in listeners.tcp {
        let ctx = ctx.clone();
        let handshakes = handshakes.clone();
        ctx.tasks.clone().spawn(accept_loop(listener, ctx, handshakes));
    }
    for socket in listeners.udp {
        let ctx = ctx.clone();
        ctx.tasks.clone().spawn(udp_hello_loop(socket, ctx));
    }
    shutdown.cancelled().await;
    ctx.tasks.close();
    ctx.tasks.wait().await;
    Ok(())
}

async fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>, handshakes: Arc<Handshakes>) {
    let mut backoff = Duration::from_millis(5);
    loop {
        let accepted = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            r = listener.accept() => r,
        };
        let arrival = ctx.arrivals.fetch_add(1, Ordering::Relaxed);
        let (stream, peer) = match accepted {
            Ok(x) => {
                backoff = Duration::from_millis(5);
                x
            }
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let (pending, shed) = handshakes.admit(arrival, peer.ip());
        if let Some(ip) = shed {
            tracing::debug!(%ip, "too many connections mid-handshake; shedding the longest silent");
        }
        let ctx2 = ctx.clone();
        // A data connection's test keeps a share of this as long as it holds the socket.
        let open = Arc::new(ctx.config.metrics.server.connection());
        ctx.tasks.spawn(async move {
            let routed = tokio::select! {
                // A route that has finished wins over a shed that came at the same time.
                biased;
                r = route(stream, peer, arrival, &ctx2, &open) => r,
                _ = pending.shed.cancelled() => {
                    // A cps test's connections close unread: one shed is counted like them.
                    if ctx2.empty_connection(peer.ip()) {
                        Ok(Route::Done)
                    } else {
                        Err(Dropped::new("shed", "shed: silent while newer connections waited"))
                    }
                }
            };
            drop(pending);
            match routed {
                Ok(Route::Control(framed)) => session::serve(framed, peer, ctx2).await,
                Ok(Route::Claimed(conversation)) => conversation.await,
                Ok(Route::Done) => {}
                Err(why) => {
                    ctx2.config.metrics.server.protocol_error(why.reason);
                    tracing::debug!(%peer, "connection dropped: {why}");
                }
            }
        });
    }
}

async fn udp_hello_loop(socket: UdpSocket, ctx: Arc<Ctx>) {
    let Ok(local) = socket.local_addr() else { return };
    let mut buf = [0u8; 64];
    loop {
        let (n, peer) = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            r = socket.recv_from(&mut buf) => match r {
                Ok(x) => x,
                Err(_) => continue, // ICMP errors from earlier sends; nothing to do
            },
        };
        if n == ECHO_LEN {
            // A round-trip probe beside a test: answered, same size, to its session's client.
            if let Ok(echo) = UdpEcho::decode(&buf[..n]) {
                if !echo.ack && in_session(&ctx, peer.ip(), &echo.session) {
                    let _ = socket.send_to(&UdpEcho { ack: true, ..echo }.encode(), peer).await;
                }
                continue;
            }
        }
        if n != HELLO_LEN {
            // Not our hello: someone else's protocol a kind claims, or noise.
            let _ = ctx.hooks.iter().any(|h| h.take_datagram(&buf[..n], local, peer, &ctx));
            continue;
        }
        let Ok(hello) = UdpHello::decode(&buf[..n]) else { continue };
        if hello.ack {
            continue;
        }
        match connect_udp_stream(local, peer) {
            Ok(sock) => {
                let ack = UdpHello { ack: true, ..hello }.encode();
                if sock.send(&ack).is_err() {
                    continue;
                }
                let attached =
                    Attached { flow: hello.flow, id: hello.stream, socket: sock, open: None };
                if let Err(why) = attach(&ctx, peer.ip(), hello.session, attached) {
                    ctx.config.metrics.server.protocol_error(why.reason);
                    tracing::debug!(%peer, "UDP hello refused: {why}");
                }
            }
            Err(e) => tracing::warn!(%peer, "could not open a UDP stream socket: {e}"),
        }
    }
}
