//! `latency --quic`: each stream is a QUIC connection over the UDP socket its hello opened, its
//! messages echoed on one bidirectional QUIC stream, as over a TCP connection. Both ends run
//! on their stream's thread with a runtime of their own; the client's thread drives its
//! connection only while it sends, waits or sleeps through it, so nothing else shares it.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use quinn::{Connection, Endpoint, RecvStream, SendStream};
use socket2::Socket;
use tokio::runtime::Runtime;

use crate::net::quic::{self, Failure, Tuning};

/// How often a wait looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// How long a closing end waits for its close to reach its peer.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

fn runtime() -> io::Result<Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

fn other(e: impl ToString) -> io::Error {
    io::Error::other(e.to_string())
}

/// The client's end of one stream: its connection and its one bidirectional stream.
pub(super) struct QuicRoundTrips {
    runtime: Runtime,
    endpoint: Endpoint,
    connection: Connection,
    send: SendStream,
    recv: RecvStream,
}

impl QuicRoundTrips {
    /// Connects over `socket` (connected to the server), trusting as `config` says.
    pub(super) fn connect(socket: &Socket, config: quinn::ClientConfig) -> io::Result<Self> {
        let runtime = runtime()?;
        let (endpoint, connection, send, recv) = runtime.block_on(async {
            let (endpoint, connecting) = quic::test_connect(socket.try_clone()?.into(), config)?;
            let idle = Tuning::default().idle_timeout;
            let connection = connecting.await.map_err(|e| other(Failure::of(&e, idle)))?;
            let (send, recv) =
                connection.open_bi().await.map_err(|e| other(Failure::of(&e, idle)))?;
            Ok::<_, io::Error>((endpoint, connection, send, recv))
        })?;
        Ok(Self { runtime, endpoint, connection, send, recv })
    }

    /// Sends one message.
    pub(super) fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.runtime.block_on(self.send.write_all(msg)).map_err(other)
    }

    /// Reads one whole echoed message; false when the test stopped first.
    pub(super) fn await_reply(&mut self, buf: &mut [u8], stop: &AtomicBool) -> io::Result<bool> {
        let mut got = 0;
        while got < buf.len() {
            // `read` is cancel-safe: a look at the flag loses nothing.
            // The timer is made inside the runtime, which it needs.
            let recv = &mut self.recv;
            let read = self
                .runtime
                .block_on(async { tokio::time::timeout(POLL, recv.read(&mut buf[got..])).await });
            match read {
                Ok(Ok(Some(n))) => got += n,
                Ok(Ok(None)) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the QUIC stream",
                    ))
                }
                Ok(Err(e)) => return Err(other(e)),
                Err(_) if stop.load(Relaxed) => return Ok(false),
                Err(_) => {}
            }
        }
        Ok(true)
    }

    /// Sleeps `d` while the connection keeps being driven (acknowledgements, timers).
    pub(super) fn sleep(&mut self, d: Duration) {
        self.runtime.block_on(async { tokio::time::sleep(d).await });
    }
}

impl Drop for QuicRoundTrips {
    fn drop(&mut self) {
        let _ = self.send.finish();
        self.connection.close(0u32.into(), b"done");
        let endpoint = self.endpoint.clone();
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await });
    }
}

/// The server's end of one stream: accepts the client's connection over `socket` and echoes
/// every byte of its stream until the client finishes it or `stop` is set.
pub(super) fn echo(
    socket: &Socket,
    config: quinn::ServerConfig,
    stop: &AtomicBool,
) -> io::Result<()> {
    runtime()?.block_on(async {
        let endpoint = quic::endpoint_on(socket.try_clone()?.into(), Some(config))?;
        let result = echo_on(&endpoint, stop).await;
        endpoint.close(0u32.into(), b"done");
        let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
        result
    })
}

async fn echo_on(endpoint: &Endpoint, stop: &AtomicBool) -> io::Result<()> {
    let until_stopped = || async {
        while !stop.load(Relaxed) {
            tokio::time::sleep(POLL).await;
        }
    };
    let incoming = tokio::select! {
        i = quic::test_arrival(endpoint) => i?,
        () = until_stopped() => return Ok(()),
    };
    let idle = Tuning::default().idle_timeout;
    let connection = incoming.await.map_err(|e| other(Failure::of(&e, idle)))?;
    let (mut send, mut recv) = tokio::select! {
        s = connection.accept_bi() => s.map_err(|e| other(Failure::of(&e, idle)))?,
        () = until_stopped() => return Ok(()),
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            // Cancel-safe, as quinn documents.
            r = recv.read(&mut buf) => match r {
                Ok(Some(n)) => send.write_all(&buf[..n]).await.map_err(other)?,
                Ok(None) => return Ok(()),
                // The client closing its connection at the test's end is how it ends.
                Err(quinn::ReadError::ConnectionLost(quinn::ConnectionError::ApplicationClosed(_))) => return Ok(()),
                Err(e) => return Err(other(e)),
            },
            () = until_stopped() => return Ok(()),
        }
    }
}
