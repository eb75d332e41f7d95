//! DNS over QUIC (RFC 9250): one QUIC connection per client (ALPN `doq`), each query on a
//! bidirectional stream of its own, the message length-prefixed and the stream finished, the
//! answer the stream's whole reply. The loop is `per_query`'s.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use quinn::{Connection, Endpoint, VarInt};
use wirespeed_proto::dns::encrypted::{doq_frame, doq_message};

use super::per_query::{Exchanges, Reply};
use crate::net::quic::{Failure, Tuning};

/// ALPN of DNS over QUIC.
pub(super) const ALPN: &[u8] = b"doq";
/// RFC 9250's code for closing a connection with no error.
const DOQ_NO_ERROR: VarInt = VarInt::from_u32(0);
/// Largest reply read: a length prefix and the largest DNS message.
const REPLY: usize = 2 + 65_535;

/// How a DoQ client reaches its server.
#[derive(Clone)]
pub(super) struct QuicClient {
    /// quinn's settings: whom to trust, ALPN `doq`.
    pub config: quinn::ClientConfig,
    /// The name sent in SNI and verified.
    pub name: String,
}

/// A DoQ connection on its own endpoint.
#[derive(Clone)]
pub(super) struct QuicExchanges {
    endpoint: Endpoint,
    connection: Connection,
}

impl QuicClient {
    /// A DoQ connection to the server at `addr`, the handshake given `timeout`.
    pub(super) async fn connect(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> io::Result<QuicExchanges> {
        let (endpoint, connection) = self.connection(addr, timeout).await?;
        Ok(QuicExchanges { endpoint, connection })
    }

    /// A QUIC connection to the server at `addr` (DoQ's, or DoH's over HTTP/3), on an
    /// endpoint of its own.
    pub(super) async fn connection(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> io::Result<(Endpoint, Connection)> {
        let any: IpAddr = if addr.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        let endpoint = Endpoint::client(SocketAddr::new(any, 0))?;
        let connecting = endpoint
            .connect_with(self.config.clone(), addr, &self.name)
            .map_err(|e| io::Error::other(Failure::Local(e.to_string()).to_string()))?;
        let idle = Tuning::default().idle_timeout;
        let connection = tokio::time::timeout(timeout, connecting)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "QUIC handshake timed out"))?
            .map_err(|e| io::Error::other(Failure::of(&e, idle).to_string()))?;
        Ok((endpoint, connection))
    }
}

impl Exchanges for QuicExchanges {
    async fn exchange(&self, msg: Vec<u8>) -> Reply {
        let Ok((mut send, mut recv)) = self.connection.open_bi().await else { return Reply::Lost };
        let Some(frame) = doq_frame(&msg) else {
            return Reply::StreamError("the query is too long for a DoQ frame".into());
        };
        if send.write_all(&frame).await.is_err() || send.finish().is_err() {
            return self.gone_or_stream_error();
        }
        match recv.read_to_end(REPLY).await {
            Ok(reply) => match doq_message(&reply) {
                Some(answer) => Reply::Answer(answer.to_vec()),
                None => Reply::StreamError("the reply was not one DNS message".into()),
            },
            Err(_) => self.gone_or_stream_error(),
        }
    }

    async fn closed(&self) {
        self.connection.closed().await;
    }

    async fn close(self) {
        self.connection.close(DOQ_NO_ERROR, b"");
        let _ = tokio::time::timeout(Duration::from_secs(1), self.endpoint.wait_idle()).await;
    }
}

impl QuicExchanges {
    /// A stream that failed: the connection's loss, or this stream's alone.
    fn gone_or_stream_error(&self) -> Reply {
        match self.connection.close_reason() {
            Some(_) => Reply::Lost,
            None => Reply::StreamError("the stream was reset".into()),
        }
    }
}
