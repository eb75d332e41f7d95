//! The HTTP fixture over HTTP/3: the same answers as over TCP (`super::fixture`), on a QUIC
//! endpoint (h3 over quinn, ALPN `h3`), usually on the TCP port's number. A connection that
//! breaks the protocol is closed by h3 with its error code; a request stream that does is
//! reset; the endpoint keeps serving the others.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use h3::server::RequestStream;
use hyper::Response;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::fixture_answer::Answers;

/// A QUIC endpoint (quinn's), as [`endpoint`] makes it.
pub use quinn::Endpoint;

/// TLS settings, as [`identity`] makes them.
pub type Tls = Arc<rustls::ServerConfig>;
use crate::net::quic::{self, Tuning};
use crate::net::tls;

/// The fixture's TLS settings, for HTTP/3 and for https:// on TCP alike (ALPN h3, h2 and
/// http/1.1: a client offers only what it speaks): `identity`'s certificate (PEM files,
/// certificate chain then key), or a self-signed one made now, whose SHA-256 is returned
/// for the log (a client trusts it with `--insecure`, or by that fingerprint).
pub fn identity(identity: Option<(&Path, &Path)>) -> io::Result<(Tls, Option<[u8; 32]>)> {
    let alpn = [super::h3::ALPN, b"h2", b"http/1.1"];
    Ok(match identity {
        Some((cert, key)) => (tls::server_config_for(cert, key, &alpn)?, None),
        None => {
            let (crypto, pin) = tls::self_signed(&alpn)?;
            (crypto, Some(pin))
        }
    })
}

/// A QUIC endpoint for the fixture on `addr`, with `crypto` (from [`identity`]).
pub fn endpoint(addr: SocketAddr, crypto: Tls) -> io::Result<Endpoint> {
    // 0-RTT: a client resuming a session may send its first request as early data (QUIC
    // allows no other limit than all or nothing). The fixture's answers change nothing, so a
    // replayed request does no harm.
    let mut early = (*crypto).clone();
    early.max_early_data_size = u32::MAX;
    quic::server_endpoint(addr, Arc::new(early), &Tuning::default())
}

/// Serves HTTP/3 on `endpoint` until `shutdown`, then closes its connections.
pub(super) async fn serve(endpoint: Endpoint, shared: Arc<Answers>, shutdown: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    connections.spawn(connection(incoming, shared.clone()));
                }
                None => break,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    // H3_NO_ERROR: the fixture is going away, not failing.
    endpoint.close(quinn::VarInt::from_u32(0x100), b"the fixture is shutting down");
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    endpoint.wait_idle().await;
}

/// One connection: its requests, each on a task of its own, until the client closes it.
async fn connection(incoming: quinn::Incoming, shared: Arc<Answers>) {
    let Ok(connection) = incoming.await else { return };
    let Ok(mut h3) =
        h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(connection)).await
    else {
        return;
    };
    let mut requests = JoinSet::new();
    // accept() ends with the connection: closed by the client, timed out, or broken (h3 has
    // then closed it with the error's code).
    while let Ok(Some(resolver)) = h3.accept().await {
        let shared = shared.clone();
        requests.spawn(async move {
            if let Ok((request, stream)) = resolver.resolve_request().await {
                let _ = answer(&shared, request, stream).await;
            }
        });
        while requests.try_join_next().is_some() {}
    }
    requests.abort_all();
}

/// Answers one request: drains its body, then sends the fixture's answer.
async fn answer<S>(
    shared: &Answers,
    request: hyper::Request<()>,
    mut stream: RequestStream<S, Bytes>,
) -> Result<(), h3::error::StreamError>
where
    S: h3::quic::BidiStream<Bytes>,
{
    let arrived = Instant::now();
    while stream.recv_data().await?.is_some() {}
    let (status, mut body) = shared.respond(request.uri().query(), arrived).await;
    let mut response = Response::new(());
    *response.status_mut() = status;
    for (name, value) in shared.headers(status) {
        // Alt-Svc is for the TCP side: this is the alternative.
        if name != hyper::header::ALT_SVC {
            response.headers_mut().insert(name, value);
        }
    }
    stream.send_response(response).await?;
    while let Some(piece) = body.next_piece() {
        stream.send_data(piece).await?;
    }
    stream.finish().await?;
    Ok(())
}
