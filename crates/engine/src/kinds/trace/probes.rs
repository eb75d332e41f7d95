//! Probes with a TTL, and what answers them. Every protocol's answers from routers arrive on
//! one raw ICMP socket (time exceeded, unreachable), quoting the start of the probe; each
//! probe carries a key the quote shows: the echo sequence number (ICMP), the destination
//! port (UDP: each probe uses the next port, as traceroute does), or the source port (TCP:
//! a socket per probe). The destination's own answer ends the path: an echo reply, "port
//! unreachable" to a UDP probe, or a finished (or refused) TCP handshake.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Instant;

use socket2::{Domain, SockAddr, Socket, Type};
use wirespeed_model::kinds::trace::TraceProtocol;
use wirespeed_proto::icmp::{
    unreachable_reason, IcmpMessage, Quoted, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP,
};

use crate::net::icmp::{IcmpSocket, Incoming};

/// What identifies a probe in the answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// ICMP echo sequence number.
    Echo(u16),
    /// UDP destination port.
    UdpPort(u16),
    /// TCP source port.
    TcpPort(u16),
}

/// A probe in flight.
pub(crate) struct Pending {
    pub ttl: u8,
    pub sent: Instant,
    /// The send time on the wall clock, to compare with the kernel's arrival stamps.
    pub sent_wall_ns: i64,
    /// A TCP probe's socket, watched for its handshake to finish.
    pub tcp: Option<Socket>,
}

/// An answer to a probe.
#[derive(Debug, Clone)]
pub(crate) struct Heard {
    pub key: Key,
    pub from: IpAddr,
    /// The destination itself answered.
    pub reached: bool,
    /// An unexpected unreachable (`!H` and the like): the path ends here.
    pub note: Option<String>,
    /// When the kernel received the answer (wall clock ns), if it said.
    pub received_ns: Option<i64>,
}

/// Sends one protocol's probes.
pub(crate) struct Prober {
    protocol: TraceProtocol,
    to: IpAddr,
    port: u16,
    bind: Option<IpAddr>,
    /// The UDP probes' socket (one, so one source port).
    udp: Option<Socket>,
    udp_source_port: u16,
}

fn set_ttl(socket: &Socket, v6: bool, ttl: u8) -> io::Result<()> {
    if v6 {
        socket.set_unicast_hops_v6(u32::from(ttl))
    } else {
        socket.set_ttl_v4(u32::from(ttl))
    }
}

impl Prober {
    pub(super) fn new(
        protocol: TraceProtocol,
        to: IpAddr,
        port: u16,
        bind: Option<IpAddr>,
    ) -> io::Result<Self> {
        let mut p = Self { protocol, to, port, bind, udp: None, udp_source_port: 0 };
        if protocol == TraceProtocol::Udp {
            let socket =
                Socket::new(Domain::for_address(SocketAddr::new(to, 0)), Type::DGRAM, None)?;
            let local = bind.unwrap_or(if to.is_ipv6() {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0u8; 4])
            });
            socket.bind(&SockAddr::from(SocketAddr::new(local, 0)))?;
            p.udp_source_port = socket.local_addr()?.as_socket().map_or(0, |a| a.port());
            p.udp = Some(socket);
        }
        Ok(p)
    }

    /// Sends probe number `n` (from 0) with `ttl`.
    pub(super) fn send(
        &mut self,
        icmp: &IcmpSocket,
        ttl: u8,
        n: u64,
    ) -> io::Result<(Key, Pending)> {
        let v6 = self.to.is_ipv6();
        let sent = Instant::now();
        let sent_wall_ns = crate::net::sys::realtime_ns();
        match self.protocol {
            TraceProtocol::Icmp => {
                let seq = n as u16;
                icmp.set_ttl(ttl)?;
                icmp.send_echo(self.to, seq, &[0u8; 32])?;
                Ok((Key::Echo(seq), Pending { ttl, sent, sent_wall_ns, tcp: None }))
            }
            TraceProtocol::Udp => {
                let socket = self.udp.as_ref().ok_or_else(|| io::Error::other("no UDP socket"))?;
                let port = self.port + (n % 1000) as u16;
                set_ttl(socket, v6, ttl)?;
                socket.send_to(&[0u8; 32], &SockAddr::from(SocketAddr::new(self.to, port)))?;
                Ok((Key::UdpPort(port), Pending { ttl, sent, sent_wall_ns, tcp: None }))
            }
            TraceProtocol::Tcp => {
                let to = SocketAddr::new(self.to, self.port);
                let socket =
                    Socket::new(Domain::for_address(to), Type::STREAM.nonblocking(), None)?;
                set_ttl(&socket, v6, ttl)?;
                // Closed with RST when the round ends: no TIME_WAIT per probe.
                socket.set_linger(Some(std::time::Duration::ZERO))?;
                if let Some(ip) = self.bind {
                    socket.bind(&SockAddr::from(SocketAddr::new(ip, 0)))?;
                }
                match socket.connect(&SockAddr::from(to)) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                    // Refused at once: still an answer from the destination, seen by `poll_tcp`.
                    Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
                    Err(e) => return Err(e),
                }
                let port = socket.local_addr()?.as_socket().map_or(0, |a| a.port());
                Ok((Key::TcpPort(port), Pending { ttl, sent, sent_wall_ns, tcp: Some(socket) }))
            }
        }
    }

    /// The probe an ICMP message answers, if it answers one of ours.
    pub(super) fn heard(&self, icmp: &IcmpSocket, m: &Incoming) -> Option<Heard> {
        let from = m.from?;
        let received_ns = m.received_ns;
        let v6 = self.to.is_ipv6();
        match m.message {
            IcmpMessage::EchoReply { id, seq, .. } => {
                (self.protocol == TraceProtocol::Icmp && id == icmp.id() && from == self.to)
                    .then_some(Heard {
                        key: Key::Echo(seq),
                        from,
                        reached: true,
                        note: None,
                        received_ns,
                    })
            }
            IcmpMessage::TimeExceeded(q) => self.key_of(icmp, &q).map(|key| Heard {
                key,
                from,
                reached: false,
                note: None,
                received_ns,
            }),
            IcmpMessage::Unreachable { code, quoted } => {
                let key = self.key_of(icmp, &quoted)?;
                let port_unreachable = if v6 { code == 4 } else { code == 3 };
                if self.protocol == TraceProtocol::Udp && port_unreachable && from == self.to {
                    Some(Heard { key, from, reached: true, note: None, received_ns })
                } else {
                    let note = format!("!{}", unreachable_reason(v6, code));
                    Some(Heard {
                        key,
                        from,
                        reached: from == self.to,
                        note: Some(note),
                        received_ns,
                    })
                }
            }
            IcmpMessage::Other => None,
        }
    }

    fn key_of(&self, icmp: &IcmpSocket, q: &Quoted) -> Option<Key> {
        if q.destination != self.to {
            return None;
        }
        match (self.protocol, q.protocol) {
            (TraceProtocol::Icmp, PROTO_ICMP | PROTO_ICMPV6) if q.first == icmp.id() => {
                Some(Key::Echo(q.second))
            }
            (TraceProtocol::Udp, PROTO_UDP) if q.first == self.udp_source_port => {
                Some(Key::UdpPort(q.second))
            }
            (TraceProtocol::Tcp, PROTO_TCP) => Some(Key::TcpPort(q.first)),
            _ => None,
        }
    }

    /// Waits up to `wait` for the ICMP socket to have something or a TCP probe's handshake
    /// to end; returns the TCP probes that ended with the destination's answer (SYN-ACK or
    /// RST), and whether the ICMP socket is readable.
    pub(super) fn wait<'a>(
        &self,
        icmp: &IcmpSocket,
        pending: impl Iterator<Item = (&'a Key, &'a Pending)>,
        wait: std::time::Duration,
    ) -> io::Result<(Vec<Heard>, bool)> {
        let tcp: Vec<(Key, &Socket)> =
            pending.filter_map(|(k, p)| p.tcp.as_ref().map(|s| (*k, s))).collect();
        let mut fds = vec![libc::pollfd { fd: icmp.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        fds.extend(tcp.iter().map(|(_, s)| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        }));
        let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid array of pollfds, for the length given.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok((Vec::new(), false))
            } else {
                Err(e)
            };
        }
        let mut heard = Vec::new();
        for ((key, socket), fd) in tcp.iter().zip(&fds[1..]) {
            if fd.revents == 0 {
                continue;
            }
            let reached = match socket.take_error() {
                Ok(None) => true,
                Ok(Some(e)) => e.raw_os_error() == Some(libc::ECONNREFUSED),
                Err(_) => false,
            };
            // Other errors (host unreachable) also arrive as ICMP, where they are matched.
            if reached {
                let received_ns = Some(crate::net::sys::realtime_ns());
                heard.push(Heard {
                    key: *key,
                    from: self.to,
                    reached: true,
                    note: None,
                    received_ns,
                });
            }
        }
        Ok((heard, fds[0].revents != 0))
    }
}
