//! The sockets a server listens on: a TCP listener and a UDP socket per bound address, both
//! on one port, and the UDP stream sockets that share that port.

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use socket2::{Domain, Protocol as SockProto, Socket, Type};
use tokio::net::{TcpListener, UdpSocket};

/// The bound sockets a server listens on.
#[derive(Debug)]
pub struct Listeners {
    pub(crate) tcp: Vec<TcpListener>,
    pub(crate) udp: Vec<UdpSocket>,
}

impl Listeners {
    /// Binds TCP and UDP on `addr`. An unspecified IPv6 address accepts IPv4 too (dual stack).
    pub fn bind(addrs: &[SocketAddr]) -> io::Result<Self> {
        let mut tcp = Vec::new();
        let mut udp = Vec::new();
        for addr in addrs {
            let (t, u) = Self::bind_pair(*addr)?;
            u.set_nonblocking(true)?;
            tcp.push(TcpListener::from_std(t.into())?);
            udp.push(UdpSocket::from_std(u.into())?);
        }
        Ok(Self { tcp, udp })
    }

    /// A TCP listener and a UDP socket on one port. Port 0 means "any": UDP takes the port TCP
    /// got, and when some other UDP socket already holds that number, both try a fresh one.
    fn bind_pair(addr: SocketAddr) -> io::Result<(Socket, Socket)> {
        const TRIES: usize = 16;
        for attempt in 1..=TRIES {
            let t = tcp_listener(addr)?;
            let port = t.local_addr()?.as_socket().map_or(addr.port(), |a| a.port());
            match udp_socket(SocketAddr::new(addr.ip(), port)) {
                Ok(u) => return Ok((t, u)),
                Err(e)
                    if addr.port() == 0
                        && e.kind() == io::ErrorKind::AddrInUse
                        && attempt < TRIES => {}
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// Binds the default `[::]:port` dual-stack, or `0.0.0.0:port` where IPv6 is unavailable.
    pub fn bind_default(port: u16) -> io::Result<Self> {
        Self::bind(&[SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port)])
            .or_else(|_| Self::bind(&[SocketAddr::from(([0, 0, 0, 0], port))]))
    }

    /// TCP listeners only (for the HTTP fixture) on `addrs`, or on every address (IPv6 and
    /// IPv4, or IPv4 alone where there is no IPv6) when `addrs` is empty.
    pub fn bind_tcp(addrs: &[SocketAddr], default_port: u16) -> io::Result<Vec<TcpListener>> {
        let listen = |addr: SocketAddr| TcpListener::from_std(tcp_listener(addr)?.into());
        if addrs.is_empty() {
            return listen(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), default_port))
                .or_else(|_| listen(SocketAddr::from(([0, 0, 0, 0], default_port))))
                .map(|l| vec![l]);
        }
        addrs.iter().map(|a| listen(*a)).collect()
    }

    /// The TCP addresses bound.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.tcp.iter().filter_map(|l| l.local_addr().ok()).collect()
    }
}

pub(crate) fn tcp_listener(addr: SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(SockProto::TCP))?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s)
}

/// A UDP socket on `addr` that shares its port with the listener and the other streams.
pub(crate) fn udp_socket(addr: SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(SockProto::UDP))?;
    // Every stream's socket binds the listener's port and connects to its client; the kernel
    // delivers each datagram to the socket whose connected peer matches.
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())?;
    Ok(s)
}

/// A blocking UDP socket on the listener's address, connected to `peer`.
pub(crate) fn connect_udp_stream(local: SocketAddr, peer: SocketAddr) -> io::Result<Socket> {
    let sock = udp_socket(local)?;
    sock.connect(&peer.into())?;
    Ok(sock)
}
