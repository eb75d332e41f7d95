//! DNS over HTTPS (RFC 8484): one HTTP/2 connection per client (TLS, ALPN `h2`), each query a
//! request on a stream of its own: GET with the message base64url-encoded in `dns`, or POST
//! with it as the body, both `application/dns-message`. A 200 answer's body is the DNS answer;
//! any other status is a stream error. The loop is `per_query`'s; over HTTP/3, `doh3`'s.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http2::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use wirespeed_model::kinds::dns::DohMethod;
use wirespeed_proto::dns::encrypted::doh_get_param;

use super::per_query::{Exchanges, Reply};

/// The media type of a DNS message over HTTP.
const DNS_MESSAGE: &str = "application/dns-message";
/// Largest answer body read: the largest DNS message.
pub(super) const ANSWER: usize = 65_535;

/// How a DoH client reaches its server.
#[derive(Clone)]
pub(super) struct HttpsClient {
    /// TLS settings offering `h2`, and the name verified.
    pub tls: (Arc<rustls::ClientConfig>, ServerName<'static>),
    /// `https://host:port`, for the requests' URIs.
    pub origin: String,
    /// Where queries go (`/dns-query`).
    pub path: String,
    /// GET or POST.
    pub method: DohMethod,
    /// Over HTTP/3 instead: QUIC's settings (ALPN `h3`).
    pub h3: Option<super::doq::QuicClient>,
}

impl HttpsClient {
    /// The request that carries `msg`: its head, and its body (POST's).
    pub(super) fn request(&self, msg: Vec<u8>) -> hyper::http::Result<(Request<()>, Bytes)> {
        let (head, body) = match self.method {
            DohMethod::Get => {
                let dns = doh_get_param(&msg);
                let uri = format!("{}{}?dns={dns}", self.origin, self.path);
                (Request::builder().method(Method::GET).uri(uri), Bytes::new())
            }
            DohMethod::Post => {
                let uri = format!("{}{}", self.origin, self.path);
                let head = Request::builder()
                    .method(Method::POST)
                    .uri(uri)
                    .header("content-type", DNS_MESSAGE);
                (head, Bytes::from(msg))
            }
        };
        Ok((head.header("accept", DNS_MESSAGE).body(())?, body))
    }
}

/// One DoH connection.
#[derive(Clone)]
pub(super) struct HttpsExchanges {
    sender: SendRequest<Full<Bytes>>,
    client: Arc<HttpsClient>,
    /// Cancelled when the connection has ended.
    gone: CancellationToken,
}

impl HttpsClient {
    /// An HTTP/2 connection over TLS to the server at `addr`, each step given `timeout`.
    pub(super) async fn connect(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> io::Result<HttpsExchanges> {
        let timed_out =
            |what: &str| io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out"));
        let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| timed_out("connect"))??;
        tcp.set_nodelay(true)?;
        let (config, name) = &self.tls;
        let connector = tokio_rustls::TlsConnector::from(config.clone());
        let tls = tokio::time::timeout(timeout, connector.connect(name.clone(), tcp))
            .await
            .map_err(|_| timed_out("the TLS handshake"))??;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(io::Error::other(
                "the server did not agree to HTTP/2 (ALPN h2), which DNS over HTTPS needs here",
            ));
        }
        let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
        builder.timer(TokioTimer::new());
        let (sender, conn) = builder
            .handshake(TokioIo::new(tls))
            .await
            .map_err(|e| io::Error::other(format!("HTTP/2: {e}")))?;
        let gone = CancellationToken::new();
        let ended = gone.clone();
        tokio::spawn(async move {
            let _ = conn.await;
            ended.cancel();
        });
        Ok(HttpsExchanges { sender, client: Arc::new(self.clone()), gone })
    }
}

impl Exchanges for HttpsExchanges {
    async fn exchange(&self, msg: Vec<u8>) -> Reply {
        let Ok((head, body)) = self.client.request(msg) else {
            return Reply::StreamError("the query could not be made a request".into());
        };
        let request = head.map(|()| Full::new(body));
        let mut sender = self.sender.clone();
        if sender.ready().await.is_err() {
            return Reply::Lost;
        }
        let response = match sender.send_request(request).await {
            Ok(r) => r,
            Err(_) if self.sender.is_closed() => return Reply::Lost,
            Err(e) => return Reply::StreamError(format!("the request failed: {e}")),
        };
        if response.status() != StatusCode::OK {
            return Reply::StreamError(format!("HTTP {}", response.status()));
        }
        match Limited::new(response.into_body(), ANSWER).collect().await {
            Ok(body) => Reply::Answer(body.to_bytes().to_vec()),
            Err(_) => {
                Reply::StreamError("the answer failed or was longer than a DNS message".into())
            }
        }
    }

    async fn closed(&self) {
        self.gone.cancelled().await;
    }

    async fn close(self) {
        // The connection ends once every clone of its sender is gone.
        drop(self.sender);
    }
}
