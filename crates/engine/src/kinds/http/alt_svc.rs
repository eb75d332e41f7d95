//! `http --alt-svc`: finds a server's HTTP/3 as a browser does, by asking the URL once over
//! HTTPS on TCP (HTTP/1.1) and reading the answer's Alt-Svc header (RFC 7838) for `h3`.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use wirespeed_proto::alt_svc::{self, AltSvc};
use wirespeed_proto::http_url::HttpUrl;

use crate::error::ClientError;
use crate::net::handshake::{self, Family};
use crate::net::tls::{self, TlsOptions};

/// Where the server's HTTP/3 is, and what its Alt-Svc said.
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub addr: SocketAddr,
    pub header: String,
}

/// Asks `url` (reached at `addr`) over HTTPS on TCP and returns the address of the first
/// `h3` alternative its answer names.
pub(super) async fn discover(
    url: &HttpUrl,
    addr: SocketAddr,
    tls_options: &TlsOptions,
    family: Option<Family>,
    timeout: Duration,
) -> Result<Found, ClientError> {
    let header =
        tokio::time::timeout(timeout, ask(url, addr, tls_options)).await.map_err(|_| {
            ClientError::Connect {
                addr,
                cause: io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no answer over TCP within {:.1} s to find its Alt-Svc",
                        timeout.as_secs_f64()
                    ),
                ),
            }
        })??;
    let Some(value) = header else {
        return Err(ClientError::Protocol(format!(
            "{} answered without an Alt-Svc header: it does not offer HTTP/3 (--h3 without \
             --alt-svc tries the same port over UDP anyway)",
            url.origin()
        )));
    };
    let offered = alt_svc::parse(&value).map_err(|why| {
        ClientError::Protocol(format!("{}'s Alt-Svc '{value}' is malformed: {why}", url.origin()))
    })?;
    let Some(h3) = offered.first("h3") else {
        let what = match &offered {
            AltSvc::Clear => "clears every alternative".to_string(),
            AltSvc::Offer(all) => {
                let names: Vec<&str> = all.iter().map(|a| a.protocol.as_str()).collect();
                format!("offers {} but not h3", names.join(", "))
            }
        };
        return Err(ClientError::Protocol(format!("{}'s Alt-Svc '{value}' {what}", url.origin())));
    };
    let addr = match &h3.host {
        None => SocketAddr::new(addr.ip(), h3.port),
        Some(host) => handshake::resolve(host, h3.port, family).await?[0],
    };
    Ok(Found { addr, header: value })
}

/// One GET of `url` over HTTP/1.1 on TLS: its Alt-Svc header's values, joined, if any.
async fn ask(
    url: &HttpUrl,
    addr: SocketAddr,
    tls_options: &TlsOptions,
) -> Result<Option<String>, ClientError> {
    let local = |what: &'static str| ClientError::local(what);
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|cause| ClientError::Connect { addr, cause })?;
    let config = tls::client_config(tls_options, &[b"http/1.1"]).map_err(local("TLS"))?;
    let name = tls::server_name(tls_options, &url.host).map_err(local("TLS"))?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| ClientError::Connect { addr, cause: io::Error::other(format!("TLS: {e}")) })?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ClientError::Protocol(format!("HTTP/1.1 to find the Alt-Svc: {e}")))?;
    let driver = tokio::spawn(connection);
    let request = hyper::Request::get(url.path.as_str())
        .header("host", url.authority.as_str())
        .header("user-agent", concat!("wirespeed/", env!("CARGO_PKG_VERSION")))
        .body(Empty::<Bytes>::new())
        .map_err(|e| ClientError::Protocol(format!("the request for the Alt-Svc: {e}")))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| ClientError::Protocol(format!("HTTP/1.1 to find the Alt-Svc: {e}")));
    // Only the head matters: the connection and its body go.
    driver.abort();
    let values: Vec<String> = response?
        .headers()
        .get_all(hyper::header::ALT_SVC)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    Ok((!values.is_empty()).then(|| values.join(", ")))
}
