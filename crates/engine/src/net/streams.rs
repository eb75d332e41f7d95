//! Opening a session's data streams on the client: a TCP connection that announces itself
//! with its hello, or a connected UDP socket whose hello the server answered. Every kind with
//! data streams (bandwidth, latency, cps, a UDP ping) opens them here.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use wirespeed_proto::codec::{ConnKind, DataHello, Preamble};
use wirespeed_proto::datagram::UdpHello;

use crate::error::ClientError;
use crate::net::handshake::HANDSHAKE_TIMEOUT;

/// How often a UDP stream hello is repeated until answered, and how many times.
const UDP_HELLO_RETRY: Duration = Duration::from_millis(200);
const UDP_HELLO_TRIES: u32 = 25;

/// Connects one TCP data stream of a session and sends its hello; `tune` sets socket options
/// before connecting and says which ones the OS refused.
pub(crate) fn open_tcp(
    server: SocketAddr,
    bind: Option<IpAddr>,
    hello: DataHello,
    tune: &dyn Fn(&Socket) -> Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Socket, ClientError> {
    let sock = Socket::new(Domain::for_address(server), Type::STREAM, Some(SockProto::TCP))
        .map_err(ClientError::local("data socket"))?;
    notes.extend(tune(&sock));
    if let Some(ip) = bind {
        sock.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(ClientError::local("binding the data socket"))?;
    }
    sock.connect_timeout(&server.into(), HANDSHAKE_TIMEOUT)
        .map_err(|source| ClientError::Connect { addr: server, cause: source })?;
    let mut hello_bytes = Preamble::encode(ConnKind::Data).to_vec();
    hello_bytes.extend_from_slice(&hello.encode());
    (&sock)
        .write_all(&hello_bytes)
        .map_err(|e| ClientError::ServerGone(format!("data stream hello: {e}")))?;
    Ok(sock)
}

/// Opens one UDP stream of a session: a connected socket whose hello the server answered.
pub(crate) fn open_udp(
    server: SocketAddr,
    bind: Option<IpAddr>,
    hello: UdpHello,
    tune: &dyn Fn(&Socket) -> Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Socket, ClientError> {
    let sock = Socket::new(Domain::for_address(server), Type::DGRAM, Some(SockProto::UDP))
        .map_err(ClientError::local("UDP socket"))?;
    notes.extend(tune(&sock));
    let local = bind.unwrap_or(match server {
        SocketAddr::V4(_) => IpAddr::from([0, 0, 0, 0]),
        SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
    });
    sock.bind(&SockAddr::from(SocketAddr::new(local, 0)))
        .map_err(ClientError::local("binding the UDP socket"))?;
    sock.connect(&server.into())
        .map_err(|source| ClientError::Connect { addr: server, cause: source })?;
    sock.set_read_timeout(Some(UDP_HELLO_RETRY)).map_err(ClientError::local("UDP socket"))?;
    let bytes = hello.encode();
    let mut buf = [0u8; 128];
    for _ in 0..UDP_HELLO_TRIES {
        // Refused means nothing listens on the port; keep trying until the tries run out.
        let _ = sock.send(&bytes);
        if let Ok(n) = (&sock).read_ack(&mut buf) {
            if UdpHello::decode(&buf[..n]).is_ok_and(|a| {
                a.ack
                    && a.session == hello.session
                    && a.stream == hello.stream
                    && a.flow == hello.flow
            }) {
                return Ok(sock);
            }
        }
    }
    Err(ClientError::ServerGone(format!(
        "the server did not answer UDP stream {} on {server} after {UDP_HELLO_TRIES} tries (is UDP blocked?)",
        hello.stream
    )))
}

trait ReadAck {
    fn read_ack(&self, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl ReadAck for &Socket {
    fn read_ack(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::io::Read::read(&mut &**self, buf)
    }
}
