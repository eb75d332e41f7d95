//! The DNS fixture `wirespeed server --dns PORT` serves: an authoritative server for one zone
//! (a `--zone` file, or [`Zone::generated`]'s records) over UDP and TCP on the same port. Each
//! UDP thread owns a socket of an `SO_REUSEPORT` group and answers in `recvmmsg`/`sendmmsg`
//! batches, so the fixture is not what a load test measures; TCP connections are served on
//! the async runtime, queries pipelined. It answers what the zone says (see
//! [`wirespeed_proto::dns::responder`]) and drops what is not a query.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use wirespeed_proto::dns::responder::respond;
use wirespeed_proto::dns::zone::Zone;

use crate::net::mmsg::MsgBatch;
use crate::net::sys;

/// Datagrams per system call.
const BATCH: usize = 64;
/// Largest query read.
const QUERY: usize = 4096;
/// Largest answer sent (the biggest UDP payload; a client's EDNS size may allow it).
const DATAGRAM: usize = 65_535;
/// How long a TCP connection may stay silent before the fixture closes it.
const TCP_IDLE: Duration = Duration::from_secs(30);

/// Reads the zone file at `path`; its `$INCLUDE`s are read relative to the including file's
/// directory (as Knot and NSD do), so a zone and its parts move together. The message names
/// the file.
pub fn read_zone_file(path: &std::path::Path, origin: Option<&str>) -> Result<Zone, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Zone::parse_with_includes(&text, origin, &mut |from, name| {
        let from = from.map_or(path, std::path::Path::new);
        let file = from.parent().unwrap_or(std::path::Path::new("")).join(name);
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok((file.to_string_lossy().into_owned(), text))
    })
    .map_err(|e| format!("zone file {}: {e}", path.display()))
}

/// The fixture's sockets, bound.
#[derive(Debug)]
pub struct DnsListeners {
    udp: Vec<UdpSocket>,
    tcp: Vec<TcpListener>,
}

impl DnsListeners {
    /// Binds UDP (`threads` sockets per address, sharing the port) and TCP on each of
    /// `addrs`; with port 0 every address gets the first one's free port (free for UDP
    /// and TCP both: a port whose TCP side is taken is given up and another tried).
    pub fn bind(addrs: &[SocketAddr], threads: usize) -> io::Result<Self> {
        let any_port = addrs.first().is_some_and(|a| a.port() == 0);
        let mut tries = 0;
        loop {
            match Self::bind_once(addrs, threads) {
                Err(e) if any_port && e.kind() == io::ErrorKind::AddrInUse && tries < 50 => {
                    tries += 1
                }
                other => return other,
            }
        }
    }

    fn bind_once(addrs: &[SocketAddr], threads: usize) -> io::Result<Self> {
        let mut udp = Vec::new();
        let mut tcp = Vec::new();
        let mut port = addrs.first().map_or(0, |a| a.port());
        for &addr in addrs {
            let mut addr = addr;
            addr.set_port(port);
            for _ in 0..threads.max(1) {
                let s = socket(addr, Type::DGRAM, Protocol::UDP, threads > 1)?;
                let bound = s.local_addr()?.as_socket().unwrap_or(addr);
                port = bound.port();
                addr.set_port(port);
                udp.push(UdpSocket::from(s));
            }
            let t = socket(addr, Type::STREAM, Protocol::TCP, false)?;
            t.listen(1024)?;
            t.set_nonblocking(true)?;
            tcp.push(TcpListener::from_std(t.into())?);
        }
        Ok(Self { udp, tcp })
    }

    /// Every bound address (one per address given).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.tcp.iter().filter_map(|l| l.local_addr().ok()).collect()
    }
}

/// A bound socket; `group` joins an `SO_REUSEPORT` group (only the fixture's own UDP threads
/// need one, and a port shared by accident with another server would split its queries).
fn socket(addr: SocketAddr, ty: Type, proto: Protocol, group: bool) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, Some(proto))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.set_reuse_address(true)?;
    s.set_reuse_port(group)?;
    s.bind(&addr.into())?;
    Ok(s)
}

/// Serves `zone` on every listener until `shutdown`.
pub async fn run(
    listeners: DnsListeners,
    zone: Arc<Zone>,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for (i, socket) in listeners.udp.into_iter().enumerate() {
        let (zone, stop) = (zone.clone(), stop.clone());
        threads.push(std::thread::Builder::new().name(format!("ws-dns-fixture-{}", i + 1)).spawn(
            move || {
                if let Err(e) = serve_udp(&socket, &zone, &stop) {
                    tracing::warn!("DNS fixture UDP thread failed: {e}");
                }
            },
        )?);
    }
    let tracker = TaskTracker::new();
    for listener in listeners.tcp {
        let (zone, shutdown, conns) = (zone.clone(), shutdown.clone(), tracker.clone());
        tracker.spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let (zone, shutdown) = (zone.clone(), shutdown.clone());
                            conns.spawn(async move {
                                tokio::select! {
                                    _ = shutdown.cancelled() => {}
                                    r = serve_tcp(stream, &zone) => if let Err(e) = r {
                                        tracing::debug!("DNS fixture TCP connection: {e}");
                                    },
                                }
                            });
                        }
                        // Out of descriptors, or a connection reset before accept: go on.
                        Err(e) => {
                            tracing::warn!("DNS fixture accept: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }
        });
    }
    shutdown.cancelled().await;
    stop.store(true, Relaxed);
    tracker.close();
    tracker.wait().await;
    tokio::task::spawn_blocking(move || {
        for t in threads {
            let _ = t.join();
        }
    })
    .await
    .map_err(io::Error::other)?;
    Ok(())
}

/// One UDP thread: read a batch, answer each query, send the answers back as a batch.
fn serve_udp(socket: &UdpSocket, zone: &Zone, stop: &AtomicBool) -> io::Result<()> {
    let fd = socket.as_raw_fd();
    sys::raise_rcvbuf(fd, 8 << 20);
    sys::raise_sndbuf(fd, 8 << 20);
    let mut inbox = MsgBatch::new(BATCH, QUERY, true);
    let mut outbox = MsgBatch::new(BATCH, DATAGRAM, true);
    let mut answer = Vec::with_capacity(DATAGRAM);
    let mut lens = Vec::with_capacity(BATCH);
    let mut pack = Vec::with_capacity(64 * 1024);
    let mut gso = true;
    while !stop.load(Relaxed) {
        let got = match inbox.recv(fd) {
            Ok(0) => {
                sys::wait_readable(fd, Duration::from_millis(100))?;
                continue;
            }
            Ok(n) => n,
            // An ICMP error for an earlier answer (the client went away).
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => continue,
            Err(e) => return Err(e),
        };
        lens.clear();
        for i in 0..got {
            if !respond(inbox.received(i), zone, true, &mut answer) || answer.len() > DATAGRAM {
                continue;
            }
            let k = lens.len();
            outbox.buf_mut(k)[..answer.len()].copy_from_slice(&answer);
            outbox.reply_to(k, &inbox, i);
            lens.push(answer.len());
        }
        send_answers(fd, &mut outbox, &lens, &mut gso, &mut pack);
    }
    Ok(())
}

/// Sends a batch of answers: runs of equal-length answers to one client as one UDP GSO send
/// each (a load generator's queries come in runs of equal length, and so do their answers),
/// the rest with `sendmmsg`, waiting for room rather than dropping when the buffer is full.
fn send_answers(
    fd: libc::c_int,
    outbox: &mut MsgBatch,
    lens: &[usize],
    gso: &mut bool,
    pack: &mut Vec<u8>,
) {
    let mut first = 0;
    while first < lens.len() {
        let run = if *gso {
            (first..lens.len())
                .take_while(|&i| lens[i] == lens[first] && outbox.same_peer(first, i))
                .count()
        } else {
            1
        };
        let result = if run >= 2 {
            outbox.send_gso_run(fd, first, run, lens[first], pack)
        } else {
            // Up to the next run of two, one datagram each.
            let mut end = first + 1;
            while end < lens.len()
                && !(*gso
                    && end + 1 < lens.len()
                    && lens[end + 1] == lens[end]
                    && outbox.same_peer(end, end + 1))
            {
                end += 1;
            }
            outbox.send_from(fd, first, &lens[..end])
        };
        match result {
            Ok(n) => first += n.max(1),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // The send buffer is full: wait until it drains rather than drop.
                let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd for the length given.
                unsafe { libc::poll(&mut p, 1, 100) };
            }
            Err(e)
                if run >= 2
                    && matches!(
                        e.raw_os_error(),
                        Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT)
                    ) =>
            {
                *gso = false; // no UDP GSO here: one datagram each from now on
            }
            // One answer could not go (its client vanished): skip it.
            Err(_) => first += 1,
        }
    }
}

/// One TCP connection: frames in, frames out, pipelined.
async fn serve_tcp(mut stream: TcpStream, zone: &Zone) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut inbuf = BytesMut::with_capacity(16 * 1024);
    let mut outbuf = Vec::with_capacity(16 * 1024);
    let mut answer = Vec::new();
    loop {
        let n = match tokio::time::timeout(TCP_IDLE, stream.read_buf(&mut inbuf)).await {
            Ok(r) => r?,
            Err(_) => return Ok(()), // idle: close, as servers do
        };
        if n == 0 {
            return Ok(());
        }
        while inbuf.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([inbuf[0], inbuf[1]]));
            if inbuf.len() < 2 + len {
                break;
            }
            if respond(&inbuf[2..2 + len], zone, false, &mut answer) && answer.len() <= 65_535 {
                outbuf.extend_from_slice(&(answer.len() as u16).to_be_bytes());
                outbuf.extend_from_slice(&answer);
            }
            inbuf.advance(2 + len);
        }
        if !outbuf.is_empty() {
            stream.write_all(&outbuf).await?;
            outbuf.clear();
        }
    }
}
