//! HTTP/2 connections of a responsiveness test, timed phase by phase: the TCP handshake, the
//! TLS handshake (per TLS round trip: TLS 1.3 takes one, 1.2 two) and an HTTP/2 session over
//! it (ALPN `h2`, or prior knowledge over plain HTTP). A foreign probe is one such connection
//! and one small request; a self probe is a small request on a load-generating connection.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use wirespeed_proto::http_url::HttpUrl;

/// Boxed request bodies: empty for downloads and probes, streamed for uploads.
pub(super) type ReqBody = http_body_util::combinators::BoxBody<Bytes, io::Error>;

/// Where a test's requests go: one server (address, name for TLS), reached the same way by
/// every connection.
#[derive(Clone)]
pub(super) struct Server {
    /// The address connected to.
    pub addr: SocketAddr,
    /// TLS settings and the name checked, for `https://`.
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// `scheme://authority` requests are sent to.
    pub origin: String,
    /// How long connecting (TCP and TLS) may take.
    pub connect_timeout: Duration,
}

/// Unsent bytes a connection keeps in its socket at most (TCP_NOTSENT_LOWAT).
const NOTSENT_LOWAT: u32 = 16 * 1024;

/// Encrypted bytes a TLS connection keeps beyond its socket at most (rustls's buffer limit).
const TLS_BUFFER: usize = 16 * 1024;

/// A connection's phases, nanoseconds.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Phases {
    /// TCP handshake.
    pub tcp_ns: u64,
    /// TLS handshake divided by its round trips (0 without TLS).
    pub tls_ns: u64,
}

/// Why a connection or request failed, in words for the report.
pub(super) type Failure = String;

/// A connection made, before any HTTP is spoken on it.
enum Transport {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
}

/// A TCP connection to `server` (and TLS over it for `https://`), and how long its handshakes
/// took.
async fn open(server: &Server) -> Result<(Transport, Phases), Failure> {
    let started = Instant::now();
    let tcp =
        tokio::time::timeout(server.connect_timeout, tokio::net::TcpStream::connect(server.addr))
            .await
            .map_err(|_| format!("connecting to {} timed out", server.addr))?
            .map_err(|e| format!("cannot connect to {}: {e}", server.addr))?;
    let _ = tcp.set_nodelay(true);
    // An upload's next bytes, and a self probe's request behind them, wait for the network
    // rather than in a deep socket buffer of our own.
    let _ =
        crate::net::sys::set_notsent_lowat(std::os::fd::AsRawFd::as_raw_fd(&tcp), NOTSENT_LOWAT);
    let tcp_ns = started.elapsed().as_nanos() as u64;
    let Some((config, name)) = &server.tls else {
        return Ok((Transport::Plain(tcp), Phases { tcp_ns, tls_ns: 0 }));
    };
    let tls_started = Instant::now();
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let mut tls =
        tokio::time::timeout(server.connect_timeout, connector.connect(name.clone(), tcp))
            .await
            .map_err(|_| "the TLS handshake timed out".to_string())?
            .map_err(|e| format!("TLS handshake: {e}"))?;
    // rustls keeps up to 64 KiB of records the socket would not take (its default), a deeper
    // queue of our own than the socket's: held to about one record, an upload's self probe
    // waits for the network, as with TLS libraries that buffer one record.
    tls.get_mut().1.set_buffer_limit(Some(TLS_BUFFER));
    let round_trips = match tls.get_ref().1.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_2) => 2,
        _ => 1,
    };
    let tls_ns = tls_started.elapsed().as_nanos() as u64 / round_trips;
    Ok((Transport::Tls(Box::new(tls)), Phases { tcp_ns, tls_ns }))
}

/// An HTTP/2 session to `server`, and how long its handshakes took.
pub(super) async fn connect(server: &Server) -> Result<(SendRequest<ReqBody>, Phases), Failure> {
    match open(server).await? {
        (Transport::Plain(tcp), phases) => Ok((h2_over(tcp, "prior knowledge").await?, phases)),
        (Transport::Tls(tls), phases) => {
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                return Err(NOT_H2_ALPN.into());
            }
            Ok((h2_over(*tls, "ALPN h2").await?, phases))
        }
    }
}

/// A document (the test's configuration) at `path` on `server`: its status and at most `limit`
/// bytes of its body. Unlike the test, it is read over whatever HTTP the server speaks: HTTP/2
/// when TLS agrees to it, HTTP/1.1 otherwise, and over plain HTTP HTTP/1.1 first, then HTTP/2
/// with prior knowledge for a server that answers only that.
pub(super) async fn get_document(
    server: &Server,
    path: &str,
    limit: usize,
) -> Result<(hyper::StatusCode, Bytes), Failure> {
    let (transport, _) = open(server).await?;
    let uri = format!("{}{path}", server.origin);
    let authority = server.origin.split_once("://").map_or(&*server.origin, |(_, a)| a);
    match transport {
        Transport::Tls(tls) if tls.get_ref().1.alpn_protocol() == Some(b"h2") => {
            let mut sender = h2_over(*tls, "ALPN h2").await?;
            read_document(&mut sender, &uri, limit).await
        }
        Transport::Tls(tls) => read_over_http1(*tls, authority, path, limit).await,
        Transport::Plain(tcp) => match read_over_http1(tcp, authority, path, limit).await {
            Ok(document) => Ok(document),
            Err(http1) => {
                let Ok((Transport::Plain(tcp), _)) = open(server).await else {
                    return Err(http1);
                };
                let h2 = async {
                    let mut sender = h2_over(tcp, "prior knowledge").await?;
                    read_document(&mut sender, &uri, limit).await
                };
                h2.await.map_err(|h2| format!("{http1}; over HTTP/2 with prior knowledge: {h2}"))
            }
        },
    }
}

/// `path` at `authority` read over HTTP/1.1 on `stream`.
async fn read_over_http1<S>(
    stream: S,
    authority: &str,
    path: &str,
    limit: usize,
) -> Result<(hyper::StatusCode, Bytes), Failure>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("over HTTP/1.1: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender.ready().await.map_err(|e| format!("over HTTP/1.1: {e}"))?;
    // HTTP/1.1 names the server in a Host header and the resource by its path alone.
    let request = Request::get(path)
        .header(hyper::header::HOST, authority)
        .body(no_body())
        .map_err(|e| format!("request: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| format!("over HTTP/1.1: {e}"))?;
    collect(response, limit).await
}

/// `uri` read on an HTTP/2 session.
async fn read_document(
    sender: &mut SendRequest<ReqBody>,
    uri: &str,
    limit: usize,
) -> Result<(hyper::StatusCode, Bytes), Failure> {
    sender.ready().await.map_err(|e| format!("connection closed: {e}"))?;
    let response = sender.send_request(request_of(uri)?).await.map_err(|e| e.to_string())?;
    collect(response, limit).await
}

/// A GET of `uri` with no body.
fn request_of(uri: &str) -> Result<Request<ReqBody>, Failure> {
    Request::get(uri).body(no_body()).map_err(|e| format!("request: {e}"))
}

/// A response's status and at most `limit` bytes of its body.
async fn collect(
    response: hyper::Response<hyper::body::Incoming>,
    limit: usize,
) -> Result<(hyper::StatusCode, Bytes), Failure> {
    let status = response.status();
    let limited = http_body_util::Limited::new(response.into_body(), limit);
    let body = limited.collect().await.map_err(|e| format!("reading the answer: {e}"))?;
    Ok((status, body.to_bytes()))
}

/// What a server that answers TLS without offering HTTP/2 is told.
pub(super) const NOT_H2_ALPN: &str =
    "the server does not speak HTTP/2: it did not agree to ALPN h2 (the responsiveness test needs HTTP/2)";

async fn h2_over<S>(stream: S, how: &str) -> Result<SendRequest<ReqBody>, Failure>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
    // hyper's windows (2 MiB a stream, 5 MiB the connection), as Cloudflare's client has
    // them: how much the server may queue ahead of a self probe is part of what is measured.
    builder.timer(TokioTimer::new());
    let (sender, conn) = builder
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("the server does not speak HTTP/2 ({how}): {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// An empty request body.
pub(super) fn no_body() -> ReqBody {
    Empty::new().map_err(|never| match never {}).boxed()
}

/// A GET of `url` on `sender`; the whole answer is read and its length returned. A status
/// other than 200 is a failure.
pub(super) async fn get_all(
    sender: &mut SendRequest<ReqBody>,
    server: &Server,
    url: &HttpUrl,
) -> Result<u64, Failure> {
    let request = Request::get(format!("{}{}", server.origin, url.path))
        .body(no_body())
        .map_err(|e| format!("request: {e}"))?;
    sender.ready().await.map_err(|e| format!("connection closed: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| match server.tls {
        Some(_) => format!("request failed: {e}"),
        None => format!("request failed (does the server speak HTTP/2 with prior knowledge?): {e}"),
    })?;
    let status = response.status();
    let mut body = response.into_body();
    let mut n = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("answer cut short: {e}"))?;
        if let Some(d) = frame.data_ref() {
            n += d.len() as u64;
        }
    }
    if status != hyper::StatusCode::OK {
        return Err(format!("{} answered {status}", url.path));
    }
    Ok(n)
}

/// One probe on a new connection: its handshakes and its request, nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Foreign {
    pub phases: Phases,
    pub http_ns: u64,
}

impl Foreign {
    /// The whole probe: connect, TLS, request.
    pub(super) fn total_ns(&self) -> u64 {
        self.phases.tcp_ns + self.phases.tls_ns + self.http_ns
    }
}

/// Longest a probe's request may wait for its whole answer: a server that accepts and never
/// answers fails the probe in seconds instead of holding the test.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// `get_all` within [`PROBE_TIMEOUT`].
async fn probe_get(
    sender: &mut SendRequest<ReqBody>,
    server: &Server,
    small: &HttpUrl,
) -> Result<u64, Failure> {
    tokio::time::timeout(PROBE_TIMEOUT, get_all(sender, server, small))
        .await
        .map_err(|_| format!("no answer to a probe within {} s", PROBE_TIMEOUT.as_secs()))?
}

/// A foreign probe: a new connection to `server` and a GET of `small` on it.
pub(super) async fn foreign_probe(server: &Server, small: &HttpUrl) -> Result<Foreign, Failure> {
    let (mut sender, phases) = connect(server).await?;
    let started = Instant::now();
    probe_get(&mut sender, server, small).await?;
    Ok(Foreign { phases, http_ns: started.elapsed().as_nanos() as u64 })
}

/// A self probe: a GET of `small` on a load-generating connection, nanoseconds.
pub(super) async fn self_probe(
    mut sender: SendRequest<ReqBody>,
    server: &Server,
    small: &HttpUrl,
) -> Result<u64, Failure> {
    let started = Instant::now();
    probe_get(&mut sender, server, small).await?;
    Ok(started.elapsed().as_nanos() as u64)
}

/// The responsiveness configuration a server publishes (Apple's `networkQuality -C`, the
/// network-quality server spec, Cloudflare's `mach -c`): where the load and probes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The large object downloads fetch.
    pub large: String,
    /// The small object probes fetch.
    pub small: String,
    /// Where uploads go.
    pub upload: String,
}

impl Config {
    /// Reads the configuration's JSON: `urls.large_https_download_url`,
    /// `urls.small_https_download_url`, `urls.https_upload_url` (the plain-HTTP names when
    /// the `https` ones are absent).
    pub fn parse(json: &[u8]) -> Result<Self, String> {
        let v: serde_json::Value = serde_json::from_slice(json)
            .map_err(|e| format!("the responsiveness configuration is not JSON: {e}"))?;
        let urls = v.get("urls").ok_or("the responsiveness configuration has no \"urls\"")?;
        let pick = |names: [&str; 2]| -> Result<String, String> {
            names
                .iter()
                .find_map(|n| urls.get(*n).and_then(|u| u.as_str()))
                .map(str::to_string)
                .ok_or_else(|| format!("the responsiveness configuration has no urls.{}", names[0]))
        };
        Ok(Self {
            large: pick(["large_https_download_url", "large_download_url"])?,
            small: pick(["small_https_download_url", "small_download_url"])?,
            upload: pick(["https_upload_url", "upload_url"])?,
        })
    }
}

/// A body of `len` incompressible bytes whose every chunk is counted into `sent` as hyper
/// takes it.
pub(super) fn upload_body(
    len: u64,
    block: Bytes,
    sent: Arc<std::sync::atomic::AtomicU64>,
) -> ReqBody {
    struct Upload {
        left: u64,
        block: Bytes,
        sent: Arc<std::sync::atomic::AtomicU64>,
    }
    impl Body for Upload {
        type Data = Bytes;
        type Error = io::Error;
        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, io::Error>>> {
            if self.left == 0 {
                return std::task::Poll::Ready(None);
            }
            let n = self.left.min(self.block.len() as u64) as usize;
            self.left -= n as u64;
            self.sent.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            std::task::Poll::Ready(Some(Ok(http_body::Frame::data(self.block.slice(..n)))))
        }
        fn is_end_stream(&self) -> bool {
            self.left == 0
        }
        fn size_hint(&self) -> http_body::SizeHint {
            http_body::SizeHint::with_exact(self.left)
        }
    }
    Upload { left: len, block, sent }.boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_gives_its_three_urls() {
        let json = br#"{"version":1,"urls":{"small_https_download_url":"https://h/s",
            "large_https_download_url":"https://h/l","https_upload_url":"https://h/u"}}"#;
        let c = Config::parse(json).unwrap();
        assert_eq!(
            (c.small.as_str(), c.large.as_str(), c.upload.as_str()),
            ("https://h/s", "https://h/l", "https://h/u")
        );
        let plain = br#"{"urls":{"small_download_url":"http://h/s","large_download_url":"http://h/l","upload_url":"http://h/u"}}"#;
        assert_eq!(Config::parse(plain).unwrap().upload, "http://h/u");
        let e = Config::parse(br#"{"urls":{"small_https_download_url":"x"}}"#).unwrap_err();
        assert!(e.contains("large_https_download_url"), "{e}");
        assert!(Config::parse(b"<html>").unwrap_err().contains("not JSON"));
    }
}
