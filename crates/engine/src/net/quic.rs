//! QUIC endpoints (quinn, chosen in docs/architecture.md) for the kinds that test over QUIC:
//! the transport settings a test asks for (congestion controller, flow-control windows, idle
//! timeout), client and server endpoints on the same rustls settings as TCP's TLS, a path's
//! statistics as a test samples them, and why a connection failed, in a user's words.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{ConnectionError, IdleTimeout, TransportConfig, VarInt};

use super::tls::{self, TlsOptions};

/// A congestion controller quinn offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Congestion {
    /// NewReno (RFC 9002's reference controller).
    NewReno,
    /// quinn's default, as the kernel's.
    #[default]
    Cubic,
    /// quinn's BBR (version 1), which it calls experimental.
    Bbr,
}

impl Congestion {
    /// The names `--congestion` accepts with QUIC.
    pub const NAMES: &'static str = "newreno, cubic, bbr";
}

impl FromStr for Congestion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "newreno" | "reno" => Ok(Self::NewReno),
            "cubic" => Ok(Self::Cubic),
            "bbr" => Ok(Self::Bbr),
            _ => Err(format!("no QUIC congestion controller '{s}' (one of {})", Self::NAMES)),
        }
    }
}

/// What a test sets on its QUIC connections.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// The congestion controller on both ends' sending side.
    pub congestion: Congestion,
    /// A connection with nothing heard for this long fails (and a handshake that gets no
    /// answer: blocked UDP is reported in seconds, not after quinn's 30). Keep-alives go at a
    /// third of it, so a quiet but live connection stays up.
    pub idle_timeout: Duration,
    /// How far a peer may send ahead on one stream, bytes.
    pub stream_window: u64,
    /// How far a peer may send ahead on the whole connection, bytes.
    pub connection_window: u64,
}

impl Default for Tuning {
    fn default() -> Self {
        // Windows large enough that a loopback transfer is limited by the stack, not by flow
        // control (quinn's own default stream window, 1.25 MB, holds one stream to ~1
        // Gbit/s at a 10 ms round trip).
        Self {
            congestion: Congestion::default(),
            idle_timeout: Duration::from_secs(5),
            stream_window: 16 << 20,
            connection_window: 32 << 20,
        }
    }
}

impl Tuning {
    fn transport(&self) -> io::Result<Arc<TransportConfig>> {
        let mut t = TransportConfig::default();
        let idle =
            IdleTimeout::try_from(self.idle_timeout).map_err(|e| invalid("idle timeout", e))?;
        t.max_idle_timeout(Some(idle));
        t.keep_alive_interval(Some(self.idle_timeout / 3));
        let window = |n: u64| VarInt::from_u64(n).map_err(|e| invalid("flow-control window", e));
        t.stream_receive_window(window(self.stream_window)?);
        t.receive_window(window(self.connection_window)?);
        t.send_window(self.connection_window);
        match self.congestion {
            Congestion::NewReno => {
                t.congestion_controller_factory(Arc::new(NewRenoConfig::default()))
            }
            Congestion::Cubic => t.congestion_controller_factory(Arc::new(CubicConfig::default())),
            Congestion::Bbr => t.congestion_controller_factory(Arc::new(BbrConfig::default())),
        };
        Ok(Arc::new(t))
    }
}

fn invalid(what: &str, e: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
}

/// A client endpoint bound to `bind` (port 0 for any), trusting as `tls` says and offering
/// `alpn`.
pub fn client_endpoint(
    bind: SocketAddr,
    tls: &TlsOptions,
    alpn: &[&[u8]],
    tuning: &Tuning,
) -> io::Result<quinn::Endpoint> {
    let config = client_config(tls::client_config(tls, alpn)?, tuning)?;
    let mut endpoint = quinn::Endpoint::client(bind)?;
    endpoint.set_default_client_config(config);
    Ok(endpoint)
}

/// quinn's client settings for `crypto` (whom to trust, which ALPN) and `tuning`.
pub fn client_config(
    crypto: Arc<rustls::ClientConfig>,
    tuning: &Tuning,
) -> io::Result<quinn::ClientConfig> {
    let crypto = QuicClientConfig::try_from(crypto).map_err(|e| invalid("QUIC's TLS", e))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(tuning.transport()?);
    Ok(config)
}

/// quinn's server settings for `crypto` (its certificate and ALPN protocols) and `tuning`.
pub fn server_config(
    crypto: Arc<rustls::ServerConfig>,
    tuning: &Tuning,
) -> io::Result<quinn::ServerConfig> {
    let crypto = QuicServerConfig::try_from(crypto).map_err(|e| invalid("QUIC's TLS", e))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(tuning.transport()?);
    Ok(config)
}

/// A server endpoint on `addr` with `crypto` (its certificate and ALPN protocols).
pub fn server_endpoint(
    addr: SocketAddr,
    crypto: Arc<rustls::ServerConfig>,
    tuning: &Tuning,
) -> io::Result<quinn::Endpoint> {
    quinn::Endpoint::server(server_config(crypto, tuning)?, addr)
}

/// An endpoint on a socket a test already holds (bound, and connected to its one peer: a data
/// stream whose hello the server answered), serving with `server` when given. Must be called
/// within a tokio runtime, which then drives it.
pub fn endpoint_on(
    socket: std::net::UdpSocket,
    server: Option<quinn::ServerConfig>,
) -> io::Result<quinn::Endpoint> {
    socket.set_nonblocking(true)?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        server,
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// ALPN of the QUIC connections a wirespeed test opens to a wirespeed server (bandwidth and
/// latency data streams).
pub const TEST_ALPN: &[u8] = b"wirespeed";

/// The name a test's client asks for in SNI: the certificate is trusted by its fingerprint,
/// whatever it names.
const TEST_SERVER_NAME: &str = "wirespeed";

/// How long a test's server end waits for its client's QUIC connection after the test began.
pub const TEST_ARRIVAL: Duration = Duration::from_secs(10);

/// A test's client connection over `socket` (bound, and connected to the server's end): its
/// endpoint, and the handshake under way. Must be called within a tokio runtime.
pub fn test_connect(
    socket: std::net::UdpSocket,
    config: quinn::ClientConfig,
) -> io::Result<(quinn::Endpoint, quinn::Connecting)> {
    let peer = socket.peer_addr()?;
    let endpoint = endpoint_on(socket, None)?;
    let connecting = endpoint
        .connect_with(config, peer, TEST_SERVER_NAME)
        .map_err(|e| io::Error::other(Failure::Local(e.to_string()).to_string()))?;
    Ok((endpoint, connecting))
}

/// The client's connection arriving at a test's server end, waited for [`TEST_ARRIVAL`].
pub async fn test_arrival(endpoint: &quinn::Endpoint) -> io::Result<quinn::Incoming> {
    tokio::time::timeout(TEST_ARRIVAL, endpoint.accept())
        .await
        .map_err(|_| {
            io::Error::other(format!(
                "the client's QUIC connection did not arrive within {} s",
                TEST_ARRIVAL.as_secs()
            ))
        })?
        .ok_or_else(|| io::Error::other("the QUIC endpoint closed"))
}

/// A server's QUIC certificate: the TLS settings that present it (offering [`TEST_ALPN`]), and
/// its SHA-256.
pub type Identity = (Arc<rustls::ServerConfig>, [u8; 32]);

/// The server's certificate for its tests' QUIC connections, made once a process and kept for
/// its life; `Accepted` tells each QUIC test's client its SHA-256 (see
/// [`tls::pinned_client_config`]).
pub fn test_identity() -> Result<&'static Identity, String> {
    static IDENTITY: std::sync::OnceLock<Result<Identity, String>> = std::sync::OnceLock::new();
    IDENTITY
        .get_or_init(|| tls::self_signed(&[TEST_ALPN]).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| format!("no QUIC certificate: {e}"))
}

/// Client settings for a test's QUIC connections: trusting only the certificate whose
/// SHA-256 is `pin`.
pub fn pinned_test_client(pin: [u8; 32], tuning: &Tuning) -> io::Result<quinn::ClientConfig> {
    client_config(tls::pinned_client_config(pin, &[TEST_ALPN])?, tuning)
}

/// A path's figures as quinn keeps them, read at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathSample {
    /// The smoothed round trip, nanoseconds.
    pub rtt_ns: u64,
    /// The congestion window, bytes.
    pub cwnd: u64,
    /// Packets sent so far (a counter: a test takes differences).
    pub sent_packets: u64,
    /// Packets declared lost so far.
    pub lost_packets: u64,
    /// Bytes in the packets declared lost so far.
    pub lost_bytes: u64,
    /// How often the congestion controller has backed off so far.
    pub congestion_events: u64,
    /// The UDP payload in use, bytes.
    pub mtu: u16,
}

impl PathSample {
    /// `connection`'s path now.
    pub fn of(connection: &quinn::Connection) -> Self {
        let path = connection.stats().path;
        Self {
            rtt_ns: path.rtt.as_nanos() as u64,
            cwnd: path.cwnd,
            sent_packets: path.sent_packets,
            lost_packets: path.lost_packets,
            lost_bytes: path.lost_bytes,
            congestion_events: path.congestion_events,
            mtu: path.current_mtu,
        }
    }
}

/// Why a QUIC connection failed, by the causes a report counts apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The peer speaks no QUIC version we do.
    VersionNegotiation,
    /// TLS failed: a certificate that does not verify, no common ALPN protocol.
    Handshake(String),
    /// Nothing heard within the idle timeout: a handshake no one answered (UDP blocked, no
    /// server), or a peer gone quiet.
    IdleTimeout(Duration),
    /// The peer answered with a stateless reset (it has no such connection).
    Reset,
    /// The peer closed the connection, with its reason.
    Closed(String),
    /// A protocol violation, seen by us or by the peer.
    Protocol(String),
    /// This side could not start the connection (bad name, endpoint closing).
    Local(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::VersionNegotiation => f.write_str("QUIC version negotiation failed: the server speaks no version we do"),
            Self::Handshake(why) => write!(f, "QUIC handshake failed: {why}"),
            Self::IdleTimeout(after) => write!(
                f,
                "no QUIC answer within {:.1} s (is UDP blocked on the way, or is no QUIC server listening?)",
                after.as_secs_f64()
            ),
            Self::Reset => f.write_str("the server reset the QUIC connection (it has no state for it)"),
            Self::Closed(why) => write!(f, "the server closed the QUIC connection: {why}"),
            Self::Protocol(why) => write!(f, "QUIC protocol error: {why}"),
            Self::Local(why) => write!(f, "cannot start a QUIC connection: {why}"),
        }
    }
}

/// A crypto error in QUIC's transport error space (0x100 + the TLS alert).
fn is_crypto(code: u64) -> bool {
    (0x100..0x200).contains(&code)
}

impl Failure {
    /// The cause of `e`, on a connection whose idle timeout is `idle`.
    pub fn of(e: &ConnectionError, idle: Duration) -> Self {
        match e {
            ConnectionError::VersionMismatch => Self::VersionNegotiation,
            ConnectionError::TimedOut => Self::IdleTimeout(idle),
            ConnectionError::Reset => Self::Reset,
            ConnectionError::TransportError(t) if is_crypto(u64::from(t.code)) => {
                Self::Handshake(t.reason.clone())
            }
            ConnectionError::TransportError(t) => Self::Protocol(t.to_string()),
            ConnectionError::ConnectionClosed(c) if is_crypto(u64::from(c.error_code)) => {
                Self::Handshake(format!("the server refused it ({})", c.error_code))
            }
            ConnectionError::ConnectionClosed(c) => Self::Protocol(format!("the server said {c}")),
            ConnectionError::ApplicationClosed(c) => {
                Self::Closed(String::from_utf8_lossy(&c.reason).into_owned())
            }
            ConnectionError::LocallyClosed => Self::Local("closed here".into()),
            ConnectionError::CidsExhausted => Self::Local("out of connection IDs".into()),
        }
    }
}

/// A connection to `addr`, naming `server_name` in SNI; its handshake and the failure's
/// cause as [`Failure`].
pub async fn connect(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    server_name: &str,
    tuning: &Tuning,
) -> Result<quinn::Connection, Failure> {
    let connecting =
        endpoint.connect(addr, server_name).map_err(|e| Failure::Local(e.to_string()))?;
    connecting.await.map_err(|e| Failure::of(&e, tuning.idle_timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALPN: &[u8] = b"wirespeed-test";

    /// A server on an ephemeral loopback port with a fresh self-signed certificate for
    /// 127.0.0.1, and that certificate's PEM file.
    fn server(
        dir: &std::path::Path,
        alpn: &[u8],
        tuning: &Tuning,
    ) -> (quinn::Endpoint, std::path::PathBuf) {
        let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let (cert, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, key.cert.pem()).unwrap();
        std::fs::write(&key_file, key.key_pair.serialize_pem()).unwrap();
        let crypto = tls::server_config_for(&cert, &key_file, &[alpn]).unwrap();
        (server_endpoint("127.0.0.1:0".parse().unwrap(), crypto, tuning).unwrap(), cert)
    }

    fn trusting(cert: &std::path::Path) -> TlsOptions {
        TlsOptions { cacert: Some(cert.to_path_buf()), ..TlsOptions::default() }
    }

    #[tokio::test]
    async fn a_stream_crosses_and_the_path_is_sampled() {
        let dir = tempfile::tempdir().unwrap();
        let tuning = Tuning { congestion: Congestion::NewReno, ..Tuning::default() };
        let (server, cert) = server(dir.path(), ALPN, &tuning);
        let addr = server.local_addr().unwrap();
        let echo = tokio::spawn(async move {
            let connection = server.accept().await.unwrap().await.unwrap();
            let (mut send, mut recv) = connection.accept_bi().await.unwrap();
            let got = recv.read_to_end(1 << 20).await.unwrap();
            send.write_all(&(got.len() as u64).to_be_bytes()).await.unwrap();
            send.finish().unwrap();
            connection.closed().await;
        });
        let client =
            client_endpoint("127.0.0.1:0".parse().unwrap(), &trusting(&cert), &[ALPN], &tuning)
                .unwrap();
        let connection = connect(&client, addr, "127.0.0.1", &tuning).await.unwrap();
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(&[7u8; 300_000]).await.unwrap();
        send.finish().unwrap();
        let answer = recv.read_to_end(8).await.unwrap();
        assert_eq!(u64::from_be_bytes(answer.try_into().unwrap()), 300_000);
        let sample = PathSample::of(&connection);
        // 300 kB in datagrams of at most the path's payload: at least that many packets.
        assert!(sample.sent_packets >= 300_000 / u64::from(sample.mtu), "{sample:?}");
        assert!(sample.rtt_ns > 0 && sample.cwnd > 0, "{sample:?}");
        connection.close(0u32.into(), b"done");
        echo.await.unwrap();
        client.wait_idle().await;
    }

    #[tokio::test]
    async fn a_certificate_that_does_not_verify_fails_the_handshake() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let tuning = Tuning::default();
        let (server, _) = server(dir.path(), ALPN, &tuning);
        let someone_else = other_certificate(other.path());
        let addr = server.local_addr().unwrap();
        tokio::spawn(async move {
            if let Some(incoming) = server.accept().await {
                let _ = incoming.await;
            }
        });
        let client = client_endpoint(
            "127.0.0.1:0".parse().unwrap(),
            &trusting(&someone_else),
            &[ALPN],
            &tuning,
        )
        .unwrap();
        match connect(&client, addr, "127.0.0.1", &tuning).await {
            Err(Failure::Handshake(why)) => assert!(why.contains("certificate"), "{why}"),
            other => panic!("expected a handshake failure, got {other:?}"),
        }
    }

    /// The PEM file of another self-signed certificate for the same name.
    fn other_certificate(dir: &std::path::Path) -> std::path::PathBuf {
        let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let cert = dir.join("cert.pem");
        std::fs::write(&cert, key.cert.pem()).unwrap();
        cert
    }

    #[tokio::test]
    async fn no_common_alpn_fails_the_handshake() {
        let dir = tempfile::tempdir().unwrap();
        let tuning = Tuning::default();
        let (server, cert) = server(dir.path(), b"h3", &tuning);
        let addr = server.local_addr().unwrap();
        tokio::spawn(async move {
            if let Some(incoming) = server.accept().await {
                let _ = incoming.await;
            }
        });
        let client =
            client_endpoint("127.0.0.1:0".parse().unwrap(), &trusting(&cert), &[ALPN], &tuning)
                .unwrap();
        let failure = connect(&client, addr, "127.0.0.1", &tuning).await.unwrap_err();
        assert!(matches!(failure, Failure::Handshake(_)), "{failure:?}");
    }

    #[tokio::test]
    async fn a_silent_port_is_an_idle_timeout_not_a_hang() {
        // A UDP socket that reads nothing and answers nothing: what blocked UDP looks like.
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tuning = Tuning { idle_timeout: Duration::from_millis(600), ..Tuning::default() };
        let client = client_endpoint(
            "127.0.0.1:0".parse().unwrap(),
            &TlsOptions::default(),
            &[ALPN],
            &tuning,
        )
        .unwrap();
        let failure =
            connect(&client, silent.local_addr().unwrap(), "127.0.0.1", &tuning).await.unwrap_err();
        assert_eq!(failure, Failure::IdleTimeout(tuning.idle_timeout));
        assert!(failure.to_string().contains("UDP blocked"), "{failure}");
    }

    #[test]
    fn congestion_controllers_by_name() {
        assert_eq!("reno".parse(), Ok(Congestion::NewReno));
        assert_eq!("BBR".parse(), Ok(Congestion::Bbr));
        let e = "vegas".parse::<Congestion>().unwrap_err();
        assert!(e.contains("vegas") && e.contains(Congestion::NAMES), "{e}");
    }

    #[tokio::test]
    async fn a_pinned_client_trusts_that_certificate_and_no_other() {
        let tuning = Tuning::default();
        let (crypto, pin) = tls::self_signed(&[ALPN]).unwrap();
        let (_, other_pin) = tls::self_signed(&[ALPN]).unwrap();
        let server = server_endpoint("127.0.0.1:0".parse().unwrap(), crypto, &tuning).unwrap();
        let addr = server.local_addr().unwrap();
        tokio::spawn(async move {
            while let Some(incoming) = server.accept().await {
                if let Ok(c) = incoming.await {
                    c.closed().await;
                }
            }
        });
        let connect_pinned = |pin: [u8; 32]| {
            let tuning = tuning.clone();
            async move {
                let crypto = tls::pinned_client_config(pin, &[ALPN]).unwrap();
                let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
                let config = client_config(crypto, &tuning).unwrap();
                let connecting = endpoint.connect_with(config, addr, "any-name").unwrap();
                connecting.await.map_err(|e| Failure::of(&e, tuning.idle_timeout))
            }
        };
        // Whatever name it asks for: the certificate is trusted by its fingerprint.
        let good = connect_pinned(pin).await.expect("the pinned certificate is trusted");
        good.close(0u32.into(), b"done");
        match connect_pinned(other_pin).await {
            Err(Failure::Handshake(why)) => assert!(why.contains("announced"), "{why}"),
            other => panic!("expected a handshake failure, got {other:?}"),
        }
    }
}
