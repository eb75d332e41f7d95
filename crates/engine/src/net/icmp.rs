//! An ICMP socket for echo probes, IPv4 or IPv6. It prefers the unprivileged "ping socket"
//! (`SOCK_DGRAM` with `IPPROTO_ICMP`, allowed to the groups in `net.ipv4.ping_group_range`),
//! where the kernel fills in the identifier and checksum and delivers only our replies; it
//! falls back to a raw socket (root or `CAP_NET_RAW`), which sees every ICMP message and so
//! also the errors routers send — what `trace` needs. If neither is allowed, it says so.

use std::cell::Cell;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use wirespeed_proto::icmp::{self, IcmpMessage};

use crate::net::sys;

/// Which kind of ICMP socket to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpSocketKind {
    /// A ping socket if allowed, else a raw socket.
    Auto,
    /// Only an unprivileged ping socket.
    Datagram,
    /// Only a raw socket.
    Raw,
}

/// An ICMP message received, with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Incoming {
    /// The sender (the target, or a router on the way).
    pub from: Option<IpAddr>,
    /// The packet's TTL or hop limit, when known.
    pub ttl: Option<u8>,
    /// When the kernel received it (wall clock ns), so a round trip does not include the
    /// time the prober took to get to it.
    pub received_ns: Option<i64>,
    /// Bytes of the ICMP message (header included, IP header not).
    pub len: usize,
    /// What it says.
    pub message: IcmpMessage,
}

/// An open ICMP socket.
#[derive(Debug)]
pub struct IcmpSocket {
    socket: Socket,
    v6: bool,
    raw: bool,
    /// The echo identifier our requests carry (the kernel's choice for a ping socket, known
    /// after the first send).
    id: Cell<u16>,
}

/// True for the errors that mean "not allowed", as opposed to "not supported".
fn denied(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

impl IcmpSocket {
    /// Opens a socket of `kind` for `v6`; the error says which permission is missing.
    pub fn open(v6: bool, kind: IcmpSocketKind) -> io::Result<Self> {
        let dgram = match kind {
            IcmpSocketKind::Raw => None,
            _ => Some(Self::open_as(v6, false)),
        };
        match dgram {
            Some(Ok(s)) => return Ok(s),
            Some(Err(e)) if kind == IcmpSocketKind::Datagram || !denied(&e) => {
                return Err(explain(e, kind, v6))
            }
            _ => {}
        }
        Self::open_as(v6, true).map_err(|e| explain(e, kind, v6))
    }

    fn open_as(v6: bool, raw: bool) -> io::Result<Self> {
        let (domain, proto) =
            if v6 { (Domain::IPV6, Protocol::ICMPV6) } else { (Domain::IPV4, Protocol::ICMPV4) };
        let ty = if raw { Type::RAW } else { Type::DGRAM };
        let socket = Socket::new(domain, ty, Some(proto))?;
        let fd = socket.as_raw_fd();
        sys::enable_rx_timestamps(fd);
        if v6 {
            let _ = sys::set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1);
        } else if !raw {
            // A raw IPv4 socket sees the IP header and reads the TTL there.
            let _ = sys::set_int(fd, libc::IPPROTO_IP, libc::IP_RECVTTL, 1);
        }
        let mut id = [0u8; 2];
        sys::fill_random(&mut id);
        Ok(Self { socket, v6, raw, id: Cell::new(u16::from_be_bytes(id)) })
    }

    /// True for a raw socket (it also receives routers' errors).
    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// The identifier our echo requests carry and replies must match.
    pub fn id(&self) -> u16 {
        self.id.get()
    }

    /// Binds the source address (`-B`).
    pub fn bind(&self, ip: IpAddr) -> io::Result<()> {
        self.socket.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
    }

    /// Sets the TTL (hop limit) of the packets sent from now on.
    pub fn set_ttl(&self, ttl: u8) -> io::Result<()> {
        if self.v6 {
            self.socket.set_unicast_hops_v6(u32::from(ttl))
        } else {
            self.socket.set_ttl_v4(u32::from(ttl))
        }
    }

    /// Sends an echo request with sequence number `seq` and `payload` to `to`.
    pub fn send_echo(&self, to: IpAddr, seq: u16, payload: &[u8]) -> io::Result<()> {
        let msg = icmp::echo_request(self.v6, self.id.get(), seq, payload);
        self.socket.send_to(&msg, &SockAddr::from(SocketAddr::new(to, 0)))?;
        if !self.raw {
            // A ping socket's identifier is its local "port", chosen at the first send.
            if let Some(port) = self.socket.local_addr().ok().and_then(|a| a.as_socket()) {
                self.id.set(port.port());
            }
        }
        Ok(())
    }

    /// Waits up to `wait` for one ICMP message; `None` when nothing (parseable) came.
    pub fn recv(&self, buf: &mut [u8], wait: Duration) -> io::Result<Option<Incoming>> {
        if !sys::wait_readable(self.socket.as_raw_fd(), wait)? {
            return Ok(None);
        }
        let d = match sys::recv_datagram(self.socket.as_raw_fd(), buf) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        let bytes = &buf[..d.len];
        let parsed = if self.raw && !self.v6 {
            icmp::parse_ipv4_packet(bytes).map(|(src, ttl, m)| {
                let header = usize::from(bytes[0] & 0x0f) * 4;
                (Some(IpAddr::V4(src)), Some(ttl), d.len - header, m)
            })
        } else {
            icmp::parse_message(self.v6, bytes).map(|m| (d.from, d.ttl, d.len, m))
        };
        // Anything that is not ICMP we understand is skipped, never an error.
        Ok(parsed.ok().map(|(from, ttl, len, message)| Incoming {
            from,
            ttl,
            received_ns: d.received_ns,
            len,
            message,
        }))
    }
}

impl AsRawFd for IcmpSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
    }
}

/// An error that says which permission is missing and what else to try.
fn explain(e: io::Error, kind: IcmpSocketKind, v6: bool) -> io::Error {
    if !denied(&e) {
        return e;
    }
    let _ = v6; // one sysctl governs ping sockets of both families
    let range = "net.ipv4.ping_group_range";
    let why = match kind {
        IcmpSocketKind::Datagram => {
            format!("ICMP ping sockets are not allowed for this user's group ({range})")
        }
        IcmpSocketKind::Raw => "raw ICMP sockets need root or CAP_NET_RAW".to_string(),
        IcmpSocketKind::Auto => format!(
            "ICMP is not permitted: ping sockets are not allowed for this user's group ({range}) \
             and raw sockets need root or CAP_NET_RAW; try --tcp PORT or --udp"
        ),
    };
    io::Error::new(io::ErrorKind::PermissionDenied, why)
}
