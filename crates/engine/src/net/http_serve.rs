//! Serving HTTP with hyper — HTTP/1.1 and h2c told apart on one port, or both over TLS chosen
//! by ALPN, or (`plain_too`) TLS and cleartext told apart by the first byte — for the HTTP fixture, the DNS fixture's DoH and the web speed test: an accept loop per listener, a task
//! per connection, optional limits on how long a client may take to send a request head (and
//! to finish its TLS handshake), and shutdown that lets requests in flight finish (within a
//! grace period, when one is set).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body::Body;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::delivered::Tapped;

/// How connections are served.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// What the server is, in log lines ("HTTP fixture", "web").
    pub label: &'static str,
    /// A client must start a request head within this time of connecting or of its last
    /// answer, and finish it within this time more (slowloris); `None`: no limit.
    pub head_timeout: Option<Duration>,
    /// At shutdown, connections still busy after this are dropped; `None`: wait for them.
    pub shutdown_grace: Option<Duration>,
    /// Count what each connection's peer acknowledges: its requests carry the connection's
    /// [`super::delivered::DeliveryTap`] in their extensions.
    pub delivery: bool,
    /// Most bytes a connection keeps unsent in its socket (TCP_NOTSENT_LOWAT), so that an
    /// answer queued behind a download waits for the network, not for a deep socket buffer;
    /// `None`: the system's default (no limit).
    pub notsent_lowat: Option<u32>,
    /// Serve TLS with these settings (ALPN picks HTTP/2 or HTTP/1.1); `None`: plain TCP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// With `tls`: a connection whose first byte does not start a TLS handshake is served in
    /// the clear, so one port serves http:// and https:// alike.
    pub plain_too: bool,
}

/// Serves `handler` on every listener until `shutdown`, then waits for the connections.
pub async fn serve<F, Fut, B>(
    listeners: Vec<TcpListener>,
    options: ServeOptions,
    shutdown: CancellationToken,
    handler: F,
) where
    F: Fn(SocketAddr, Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if let Some(t) = options.head_timeout {
        builder.http1().timer(TokioTimer::new()).header_read_timeout(t);
        builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(t)).keep_alive_timeout(t);
    }
    let tasks = TaskTracker::new();
    let label = options.label;
    let acceptor = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    for listener in listeners {
        // The accept loop and every connection it takes are tracked alike, so shutdown waits
        // for all of them.
        let (builder, shutdown, connections, handler, options, acceptor) = (
            builder.clone(),
            shutdown.clone(),
            tasks.clone(),
            handler.clone(),
            options.clone(),
            acceptor.clone(),
        );
        tasks.spawn(async move {
            loop {
                let (stream, peer) = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok(x) => x,
                        Err(e) => {
                            // Out of file descriptors and the like: wait instead of spinning.
                            tracing::warn!("{label} accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let _ = stream.set_nodelay(true);
                if let Some(bytes) = options.notsent_lowat {
                    use std::os::fd::AsRawFd;
                    let _ = crate::net::sys::set_notsent_lowat(stream.as_raw_fd(), bytes);
                }
                let (builder, shutdown, handler, acceptor) =
                    (builder.clone(), shutdown.clone(), handler.clone(), acceptor.clone());
                let (head_timeout, shutdown_grace, delivery) =
                    (options.head_timeout, options.shutdown_grace, options.delivery);
                let plain_too = options.plain_too;
                connections.spawn(async move {
                    // hyper's head timeout starts with the first byte: a client that connects
                    // and says nothing would otherwise hold the socket for ever.
                    let mut first = [0u8; 1];
                    if head_timeout.is_some() || plain_too {
                        let t = head_timeout.unwrap_or(Duration::from_secs(30));
                        if !matches!(
                            tokio::time::timeout(t, stream.peek(&mut first)).await,
                            Ok(Ok(1))
                        ) {
                            return;
                        }
                    }
                    // A TLS record of type handshake (22) starts every ClientHello.
                    let acceptor = acceptor.filter(|_| !plain_too || first[0] == 22);
                    let stream = Tapped::new(stream, delivery);
                    let tap = stream.tap();
                    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                        if let Some(tap) = &tap {
                            req.extensions_mut().insert(tap.clone());
                        }
                        handler(peer, req)
                    });
                    let Some(acceptor) = acceptor else {
                        let conn = builder.serve_connection(TokioIo::new(stream), service);
                        return finish(conn, &shutdown, shutdown_grace, peer, label).await;
                    };
                    // The handshake gets the head's time limit: a client that stalls in it
                    // holds a socket like one that stalls before its request.
                    let limit = head_timeout.unwrap_or(Duration::from_secs(30));
                    let tls = match tokio::time::timeout(limit, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            return tracing::debug!(%peer, "{label} TLS handshake failed: {e}")
                        }
                        Err(_) => return tracing::debug!(%peer, "{label} TLS handshake timed out"),
                    };
                    let conn = builder.serve_connection(TokioIo::new(tls), service);
                    finish(conn, &shutdown, shutdown_grace, peer, label).await
                });
            }
        });
    }
    shutdown.cancelled().await;
    tasks.close();
    tasks.wait().await;
}

/// Drives one connection to its end, or at shutdown lets it finish within `grace`.
async fn finish<C, E>(
    conn: C,
    shutdown: &CancellationToken,
    grace: Option<Duration>,
    peer: SocketAddr,
    label: &str,
) where
    C: Future<Output = Result<(), E>> + GracefulConnection,
    E: std::fmt::Display,
{
    tokio::pin!(conn);
    let served = tokio::select! {
        r = conn.as_mut() => r,
        _ = shutdown.cancelled() => {
            conn.as_mut().shutdown_gracefully();
            match grace {
                Some(g) => tokio::time::timeout(g, conn).await.unwrap_or(Ok(())),
                None => conn.await,
            }
        }
    };
    if let Err(e) = served {
        tracing::debug!(%peer, "{label} connection ended: {e}");
    }
}

/// hyper's auto connection over any stream, as [`finish`] asks it to shut down.
trait GracefulConnection {
    fn shutdown_gracefully(self: std::pin::Pin<&mut Self>);
}

impl<I, S, B> GracefulConnection for auto::Connection<'_, I, S, TokioExecutor>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
{
    fn shutdown_gracefully(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}
