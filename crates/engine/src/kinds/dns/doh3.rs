//! DNS over HTTPS on HTTP/3 (`--doh-h3`): one QUIC connection per client (ALPN `h3`, h3 over
//! quinn), each query a request on a stream of its own, GET or POST as over HTTP/2 (the
//! requests are `doh`'s). A 200 answer's body is the DNS answer; any other status, a reset
//! stream or an answer over 64 KiB is a stream error. The loop is `per_query`'s.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use hyper::StatusCode;
use quinn::{Connection, Endpoint};

use super::doh::{HttpsClient, ANSWER};
use super::per_query::{Exchanges, Reply};

/// HTTP/3's code for closing a connection with no error (RFC 9114 §8.1).
const H3_NO_ERROR: u32 = 0x100;

/// One DoH connection over HTTP/3.
#[derive(Clone)]
pub(super) struct Https3Exchanges {
    endpoint: Endpoint,
    quic: Connection,
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    client: Arc<HttpsClient>,
}

impl HttpsClient {
    /// An HTTP/3 connection to the server at `addr` (as `self.h3` says), the handshake given
    /// `timeout`.
    pub(super) async fn connect_h3(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> io::Result<Https3Exchanges> {
        let quic_client = self.h3.as_ref().ok_or_else(|| io::Error::other("no HTTP/3 settings"))?;
        let (endpoint, quic) = quic_client.connection(addr, timeout).await?;
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|e| io::Error::other(format!("HTTP/3: {e}")))?;
        // The driver reads the server's control stream until the connection ends.
        tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        Ok(Https3Exchanges { endpoint, quic, send, client: Arc::new(self.clone()) })
    }
}

impl Exchanges for Https3Exchanges {
    async fn exchange(&self, msg: Vec<u8>) -> Reply {
        let Ok((head, body)) = self.client.request(msg) else {
            return Reply::StreamError("the query could not be made a request".into());
        };
        let mut send = self.send.clone();
        let Ok(mut stream) = send.send_request(head).await else { return self.gone_or_failed() };
        if !body.is_empty() && stream.send_data(body).await.is_err() {
            return self.gone_or_failed();
        }
        if stream.finish().await.is_err() {
            return self.gone_or_failed();
        }
        let Ok(response) = stream.recv_response().await else { return self.gone_or_failed() };
        if response.status() != StatusCode::OK {
            return Reply::StreamError(format!("HTTP {}", response.status()));
        }
        let mut answer = Vec::new();
        loop {
            match stream.recv_data().await {
                Ok(Some(mut chunk)) => {
                    if answer.len() + chunk.remaining() > ANSWER {
                        return Reply::StreamError(
                            "the answer was longer than a DNS message".into(),
                        );
                    }
                    while chunk.has_remaining() {
                        let piece = chunk.chunk();
                        answer.extend_from_slice(piece);
                        let n = piece.len();
                        chunk.advance(n);
                    }
                }
                Ok(None) => return Reply::Answer(answer),
                Err(_) => return self.gone_or_failed(),
            }
        }
    }

    async fn closed(&self) {
        self.quic.closed().await;
    }

    async fn close(self) {
        self.quic.close(H3_NO_ERROR.into(), b"");
        let _ = tokio::time::timeout(Duration::from_secs(1), self.endpoint.wait_idle()).await;
    }
}

impl Https3Exchanges {
    /// A request that failed: the connection's loss, or its stream's alone.
    fn gone_or_failed(&self) -> Reply {
        match self.quic.close_reason() {
            Some(_) => Reply::Lost,
            None => Reply::StreamError("the stream was reset".into()),
        }
    }
}
