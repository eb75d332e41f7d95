//! The kernel's TCP connections in TIME_WAIT, asked over netlink (`NETLINK_SOCK_DIAG`, as `ss`
//! asks): the kernel filters by state and sends only those. `/proc/net/tcp` lists every socket
//! as text, and the kernel walks its whole table again for each page read: on a host holding
//! thousands of connections, reading it took a client 8 s at the end of every run (the soak,
//! docs/reliability.md).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SOCK_DIAG_BY_FAMILY`, the request type of an inet_diag dump.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `TCP_TIME_WAIT` in the kernel's TCP states.
const TCP_TIME_WAIT: u32 = 6;
/// Bytes of an `nlmsghdr`.
const NLMSG_HDR: usize = 16;
/// Bytes of an `inet_diag_req_v2`.
const REQUEST: usize = 56;
/// Bytes of an `inet_diag_msg` up to the end of its socket id (family, state, timer, retrans,
/// then the id: ports, addresses, interface, cookie).
const MSG_UP_TO_ID: usize = 52;

/// Every TCP connection in TIME_WAIT in this network namespace, IPv4 and IPv6: (local, remote).
pub(crate) fn time_wait() -> io::Result<Vec<(SocketAddr, SocketAddr)>> {
    let mut out = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        dump(family as u8, &mut out)?;
    }
    Ok(out)
}

/// One dump for `family`, appended to `out`.
fn dump(family: u8, out: &mut Vec<(SocketAddr, SocketAddr)>) -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the fd is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let request = request(family);
    // SAFETY: `request` is readable for its length; the kernel is the default destination.
    let sent = unsafe { libc::send(socket.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(socket.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(());
        }
        if parse(&buf[..n as usize], out)? {
            return Ok(());
        }
    }
}

/// The dump request: every TCP socket of `family` in TIME_WAIT.
fn request(family: u8) -> Vec<u8> {
    let mut r = Vec::with_capacity(NLMSG_HDR + REQUEST);
    r.extend_from_slice(&((NLMSG_HDR + REQUEST) as u32).to_ne_bytes());
    r.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    r.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    r.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    r.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel fills it in
    r.push(family);
    r.push(libc::IPPROTO_TCP as u8);
    r.push(0); // no extensions
    r.push(0); // pad
    r.extend_from_slice(&(1u32 << TCP_TIME_WAIT).to_ne_bytes());
    r.resize(NLMSG_HDR + REQUEST, 0); // any ports, any addresses
    r
}

/// Appends the connections in one batch of netlink messages to `out`; true at the dump's end.
fn parse(mut batch: &[u8], out: &mut Vec<(SocketAddr, SocketAddr)>) -> io::Result<bool> {
    while batch.len() >= NLMSG_HDR {
        let len = u32::from_ne_bytes(batch[0..4].try_into().unwrap_or_default()) as usize;
        let kind = u16::from_ne_bytes(batch[4..6].try_into().unwrap_or_default());
        if len < NLMSG_HDR || len > batch.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a truncated netlink message"));
        }
        let body = &batch[NLMSG_HDR..len];
        match kind as i32 {
            libc::NLMSG_DONE => return Ok(true),
            libc::NLMSG_ERROR => {
                let code = body
                    .get(..4)
                    .map_or(0, |b| i32::from_ne_bytes(b.try_into().unwrap_or_default()));
                return Err(io::Error::from_raw_os_error(-code));
            }
            _ if kind == SOCK_DIAG_BY_FAMILY => {
                if let Some(pair) = connection(body) {
                    out.push(pair);
                }
            }
            _ => {}
        }
        // Messages are aligned to 4 bytes.
        let step = (len + 3) & !3;
        batch = batch.get(step..).unwrap_or_default();
    }
    Ok(false)
}

/// The (local, remote) addresses of one `inet_diag_msg`.
fn connection(msg: &[u8]) -> Option<(SocketAddr, SocketAddr)> {
    if msg.len() < MSG_UP_TO_ID {
        return None;
    }
    let family = i32::from(msg[0]);
    let port = |at: usize| u16::from_be_bytes([msg[at], msg[at + 1]]);
    let addr = |at: usize| -> Option<IpAddr> {
        let raw: [u8; 16] = msg.get(at..at + 16)?.try_into().ok()?;
        match family {
            libc::AF_INET => Some(IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3]))),
            libc::AF_INET6 => Some(IpAddr::V6(Ipv6Addr::from(raw))),
            _ => None,
        }
    };
    // The id starts at byte 4: source port, destination port, source, destination.
    let local = SocketAddr::new(addr(8)?, port(4));
    let remote = SocketAddr::new(addr(24)?, port(6));
    Some((local, remote))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_connection_closed_first_here_is_found_in_time_wait() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let here = client.local_addr().unwrap();
        // The client closes first, so its end waits; the server sees the FIN and closes too.
        drop(client);
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).unwrap();
        drop(server);
        let mut found = false;
        for _ in 0..100 {
            found = time_wait().unwrap().iter().any(|&(local, _)| local == here);
            if found {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(found, "{here} in TIME_WAIT");
        let remote = time_wait().unwrap().into_iter().find(|&(l, _)| l == here).unwrap().1;
        assert_eq!(remote, listener.local_addr().unwrap());
    }

    #[test]
    fn truncated_and_error_messages_are_refused() {
        let mut out = Vec::new();
        let mut short = 100u32.to_ne_bytes().to_vec();
        short.extend_from_slice(&[0; 12]);
        assert!(parse(&short, &mut out).is_err());
        let mut error = (NLMSG_HDR as u32 + 4).to_ne_bytes().to_vec();
        error.extend_from_slice(&(libc::NLMSG_ERROR as u16).to_ne_bytes());
        error.extend_from_slice(&[0; 10]);
        error.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
        let e = parse(&error, &mut out).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        assert!(out.is_empty());
    }
}
