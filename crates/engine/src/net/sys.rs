//! Thin, Linux-specific wrappers over the system calls the data path needs and the standard
//! library does not offer: `TCP_INFO`, per-thread CPU time, UDP GSO/GRO, `sendmmsg`,
//! `recvmmsg` with kernel receive timestamps, `sendfile` from a memfd, and socket options set
//! by number. Every `unsafe` block here is a plain FFI call on a file descriptor the caller owns.

use std::fs::File;
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

use wirespeed_model::kinds::bandwidth::TcpSample;

use crate::net::buffer::PageBuf;

/// `UDP_SEGMENT` (linux/udp.h): GSO segment size for a send.
const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO` (linux/udp.h): let the kernel coalesce received datagrams.
const UDP_GRO: libc::c_int = 104;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Sets an integer socket option.
pub(crate) fn set_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Keeps at most `bytes` of a TCP socket's data unsent in its buffer (TCP_NOTSENT_LOWAT): the
/// writer is woken only below it, so what it writes next waits behind that much at most.
pub(crate) fn set_notsent_lowat(fd: RawFd, bytes: u32) -> io::Result<()> {
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes.min(i32::MAX as u32) as i32)
}

/// Reads an integer socket option.
fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len are live and sized for the option.
    cvt(unsafe {
        libc::getsockopt(fd, level, name, (&mut value as *mut libc::c_int).cast(), &mut len)
    })?;
    Ok(value)
}

/// Sets the congestion-control algorithm of a TCP socket.
pub(crate) fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: passes the bytes of a live str and their length.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Whether this host lets a TCP socket use congestion control `name`: tried on a socket that
/// is never connected, so a test can refuse an unknown algorithm before it starts, as iperf3
/// does, instead of running with the default.
pub fn congestion_available(name: &str) -> io::Result<()> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    set_congestion(socket.as_raw_fd(), name)
}

/// Reads the congestion-control algorithm of a TCP socket (the tests read back what
/// `set_congestion` set).
#[cfg(test)]
fn congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are live and len is buf's size.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    let end = buf[..len as usize].iter().position(|&b| b == 0).unwrap_or(len as usize);
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Sets the socket's pacing ceiling in bytes per second (`SO_MAX_PACING_RATE`); TCP paces
/// itself to it per packet since Linux 4.13.
pub(crate) fn set_max_pacing_rate(fd: RawFd, bytes_per_sec: u64) -> io::Result<()> {
    let rate: u64 = bytes_per_sec;
    // SAFETY: passes a pointer to a live u64 and its size (the kernel accepts u32 or u64).
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&rate as *const u64).cast(),
            size_of::<u64>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Sets both socket buffers, using the `FORCE` variants (which ignore `rmem_max`/`wmem_max`)
/// when running privileged, so the size asked for is the size obtained.
pub(crate) fn set_buffers(fd: RawFd, bytes: u32) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    if set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
        set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, v)?;
    }
    if set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
        set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, v)?;
    }
    Ok(())
}

/// Limits an established TCP connection's window to `bytes`: the send buffer as
/// [`set_buffers`] does, and the advertised receive window with `TCP_WINDOW_CLAMP`. Shrinking
/// `SO_RCVBUF` below a window already advertised makes the kernel drop data it invited: the
/// sender then crawls through retransmits (1 Mbit/s where 200 were asked, with `-w 8K`).
pub(crate) fn set_window_established(fd: RawFd, bytes: u32) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    if set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
        set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, v)?;
    }
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, v)
}

/// Raises a TCP socket's `SO_RCVLOWAT` towards `want` as far as its receive buffer allows, and
/// returns the mark now set (`current` when unchanged). The limit matters: when the buffer a
/// mark needs exceeds the socket's buffer, the kernel grows the buffer and clamps the window to
/// the mark (`tcp_set_rcvlowat`), and autotuning never lifts that clamp, so 128 KiB asked at
/// the start held every path to 128 KiB per round trip (25 Mbit/s at 30 ms). A mark of a
/// quarter of the buffer needs about half of it: no clamp, and the mark follows the buffer as
/// autotuning grows it.
pub(crate) fn raise_rcvlowat(fd: RawFd, want: u32, current: u32) -> u32 {
    let Ok(rcvbuf) = get_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF) else {
        return current;
    };
    let mark = want.min(rcvbuf.max(0) as u32 / 4);
    if mark <= current {
        return current;
    }
    match set_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, mark as libc::c_int) {
        Ok(()) => mark,
        Err(_) => current,
    }
}

/// Raises the receive buffer to at least `bytes` where permitted; errors are ignored because a
/// smaller buffer only means more loss, which the test then reports.
pub(crate) fn raise_rcvbuf(fd: RawFd, bytes: u32) {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    if set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
        let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, v);
    }
}

/// Raises the send buffer like [`raise_rcvbuf`].
pub(crate) fn raise_sndbuf(fd: RawFd, bytes: u32) {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    if set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
        let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, v);
    }
}

/// Marks outgoing packets with a DSCP value (IPv4 TOS or IPv6 traffic class).
pub(crate) fn set_dscp(fd: RawFd, ipv6: bool, dscp: u8) -> io::Result<()> {
    let tos = libc::c_int::from(dscp) << 2;
    if ipv6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos)?;
        // A v6 socket may carry v4-mapped traffic; mark that too, best effort.
        let _ = set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos);
        Ok(())
    } else {
        set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos)
    }
}

/// Bytes of this connection's data the peer has acknowledged (`tcpi_bytes_acked`): what it
/// has received, as against what was handed to the kernel.
pub(crate) fn bytes_acked(fd: RawFd) -> Option<u64> {
    tcp_info(fd).map(|i| i.tcpi_bytes_acked)
}

/// Samples `TCP_INFO` of a sending socket.
pub(crate) fn tcp_sample(fd: RawFd) -> Option<TcpSample> {
    let info = tcp_info(fd)?;
    Some(TcpSample {
        retransmits: u64::from(info.tcpi_total_retrans),
        cwnd_bytes: u64::from(info.tcpi_snd_cwnd) * u64::from(info.tcpi_snd_mss),
        rtt_ns: u64::from(info.tcpi_rtt) * 1000,
        rttvar_ns: u64::from(info.tcpi_rttvar) * 1000,
        // The kernel gives both in bytes a second; u64::MAX pacing means "not paced".
        pacing_bps: match info.tcpi_pacing_rate {
            u64::MAX => 0,
            r => r.saturating_mul(8),
        },
        delivery_bps: info.tcpi_delivery_rate.saturating_mul(8),
    })
}

fn tcp_info(fd: RawFd) -> Option<libc::tcp_info> {
    let mut info = MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: info is a zeroed tcp_info and len its size; the kernel writes at most len bytes.
    let r = unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, info.as_mut_ptr().cast(), &mut len)
    };
    if r < 0 {
        return None;
    }
    // SAFETY: zero-initialised and partly filled by the kernel; every field is plain integers.
    Some(unsafe { info.assume_init() })
}

/// CPU time used so far by the calling thread: (user, system) in nanoseconds.
pub(crate) fn thread_cpu_ns() -> (u64, u64) {
    cpu_ns(libc::RUSAGE_THREAD)
}

/// CPU time used so far by this whole process, every thread: (user, system) in nanoseconds.
pub fn process_cpu_ns() -> (u64, u64) {
    cpu_ns(libc::RUSAGE_SELF)
}

/// `getrusage(who)`'s CPU times in nanoseconds; (0, 0) if the kernel refuses.
fn cpu_ns(who: libc::c_int) -> (u64, u64) {
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: usage is a valid out-pointer for getrusage.
    let r = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    if r < 0 {
        return (0, 0);
    }
    // SAFETY: getrusage succeeded and filled the struct.
    let usage = unsafe { usage.assume_init() };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    (ns(usage.ru_utime), ns(usage.ru_stime))
}

/// Lets `nanosleep` wake the calling thread within a microsecond instead of the default 50 µs
/// slack, so per-packet pacing can hit its schedule.
pub(crate) fn tighten_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// The calling thread's kernel id (what `/proc/self/task/` lists).
pub(crate) fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Wall-clock time in nanoseconds since the Unix epoch: the clock kernel receive timestamps
/// (`SO_TIMESTAMPNS`) use, so a datagram's send and receive times share one clock.
pub(crate) fn realtime_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The monotonic clock and the wall clock read at one moment: the monotonic reading is taken
/// between two wall-clock ones and paired with their midpoint, and a pair more than 5 µs
/// apart (the thread was preempted between the reads) is read again. What puts a kernel
/// receive stamp (wall clock) on the monotonic clock: reading the two one after the other
/// put a preemption between them into every stamp's age, and an HTTP response "arrived"
/// before its request was sent (1 ns latencies).
pub(crate) fn paired_clocks() -> (std::time::Instant, i64) {
    let mut best = (std::time::Instant::now(), 0i64, i64::MAX);
    for _ in 0..4 {
        let before = realtime_ns();
        let mono = std::time::Instant::now();
        let after = realtime_ns();
        let gap = after - before;
        if gap < best.2 {
            best = (mono, before + gap / 2, gap);
        }
        if gap <= 5_000 {
            break;
        }
    }
    (best.0, best.1)
}

/// Nanoseconds of `CLOCK_MONOTONIC` (what iperf3 stamps its datagrams with).
pub(crate) fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Turns on UDP receive coalescing (GRO); false if the kernel does not support it.
pub(crate) fn enable_udp_gro(fd: RawFd) -> bool {
    set_int(fd, libc::SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Asks the kernel to stamp each received datagram with its arrival time.
pub(crate) fn enable_rx_timestamps(fd: RawFd) -> bool {
    set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
}

/// Sends `buf` as datagrams of `segment` bytes each in one call (UDP GSO).
pub(crate) fn send_gso(fd: RawFd, buf: &[u8], segment: u16) -> io::Result<usize> {
    let mut iov = libc::iovec { iov_base: buf.as_ptr() as *mut _, iov_len: buf.len() };
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
    let mut control = [0u64; 4]; // 32 bytes, aligned, more than CMSG_SPACE(2)
                                 // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg_control points at a buffer of at least `space` bytes, so the first header fits.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
    }
    // SAFETY: msg references iov/control which outlive the call.
    let r = unsafe { libc::sendmsg(fd, &msg, 0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Sends each of `bufs` as its own datagram, in as few calls as the kernel allows; returns
/// how many were sent.
pub(crate) fn send_many(fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    let mut iovs: Vec<libc::iovec> = bufs
        .iter()
        .map(|b| libc::iovec { iov_base: b.as_ptr() as *mut _, iov_len: b.len() })
        .collect();
    // SAFETY: mmsghdr is plain data; zeroed is valid.
    let mut msgs: Vec<libc::mmsghdr> =
        (0..bufs.len()).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, iov) in msgs.iter_mut().zip(iovs.iter_mut()) {
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: msgs and the iovecs they point at are live for the call.
    let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), msgs.len() as libc::c_uint, 0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// One received (possibly GRO-coalesced) datagram in a [`RecvBatch`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Received {
    /// Bytes received.
    pub len: usize,
    /// Size of each coalesced segment; equals `len` when not coalesced.
    pub segment: usize,
    /// Kernel arrival time (ns since the epoch), if stamped.
    pub stamp_ns: Option<i64>,
}

/// Buffers for receiving up to `N` datagrams with one `recvmmsg` call.
pub(crate) struct RecvBatch {
    bufs: Vec<PageBuf>,
    controls: Vec<[u64; 16]>,
    /// What each slot received in the last call.
    pub got: Vec<Received>,
}

impl RecvBatch {
    /// Buffers for `count` datagrams of up to `size` bytes each.
    pub(crate) fn new(count: usize, size: usize) -> Self {
        Self {
            bufs: (0..count).map(|_| PageBuf::zeroed(size)).collect(),
            controls: vec![[0; 16]; count],
            got: vec![Received::default(); count],
        }
    }

    /// The payload of slot `i` from the last call.
    pub(crate) fn payload(&self, i: usize) -> &[u8] {
        &self.bufs[i][..self.got[i].len]
    }

    /// Receives into the batch, blocking until at least one datagram arrives (or the socket's
    /// receive timeout passes); returns how many slots were filled.
    pub(crate) fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = self.bufs.len();
        let mut iovs: Vec<libc::iovec> = self
            .bufs
            .iter_mut()
            .map(|b| libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() })
            .collect();
        // SAFETY: mmsghdr is plain data; zeroed is valid.
        let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
        for i in 0..n {
            msgs[i].msg_hdr.msg_iov = &mut iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = self.controls[i].as_mut_ptr().cast();
            msgs[i].msg_hdr.msg_controllen = size_of::<[u64; 16]>();
        }
        // SAFETY: every pointer in msgs refers to buffers owned by self or locals alive for the call.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let filled = r as usize;
        #[allow(clippy::needless_range_loop)] // msgs and self.got are indexed together
        for i in 0..filled {
            let len = msgs[i].msg_len as usize;
            let mut got = Received { len, segment: len, stamp_ns: None };
            let hdr = &msgs[i].msg_hdr;
            // SAFETY: walking the control buffer the kernel filled, bounded by msg_controllen.
            unsafe {
                let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
                while !cmsg.is_null() {
                    let c = &*cmsg;
                    if c.cmsg_level == libc::SOL_UDP && c.cmsg_type == UDP_GRO {
                        let seg =
                            std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                        if seg > 0 {
                            got.segment = seg as usize;
                        }
                    } else if c.cmsg_level == libc::SOL_SOCKET
                        && c.cmsg_type == libc::SCM_TIMESTAMPNS
                    {
                        let ts = std::ptr::read_unaligned(
                            libc::CMSG_DATA(cmsg).cast::<libc::timespec>(),
                        );
                        got.stamp_ns = Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
                    }
                    cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
                }
            }
            self.got[i] = got;
        }
        Ok(filled)
    }
}

/// A nameless file holding `data`, for `sendfile`.
///
/// An unlinked file (`O_TMPFILE`) in the temporary directory comes first: on a disk filesystem
/// the page cache hands `sendfile` pages in batches, while shmem (memfd, tmpfs) looks each page
/// up alone, which made the zero-copy sender about a fifth slower on loopback. A memfd is the
/// fallback where the temporary directory refuses `O_TMPFILE`.
pub(crate) fn payload_file(data: &[u8]) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(std::env::temp_dir())
        .or_else(|_| memfd())?;
    io::Write::write_all(&mut &file, data)?;
    Ok(file)
}

fn memfd() -> io::Result<File> {
    // SAFETY: the name is a NUL-terminated literal.
    let fd = cvt(unsafe { libc::memfd_create(c"wirespeed-payload".as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: fd was just created and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Sends up to `count` bytes of `file` from `offset` to socket `out` without copying them
/// through user space.
pub(crate) fn sendfile(out: RawFd, file: &File, offset: u64, count: usize) -> io::Result<usize> {
    let mut off = offset as libc::off_t;
    // SAFETY: both descriptors are open; off is a valid in/out pointer.
    let r = unsafe { libc::sendfile(out, file.as_raw_fd(), &mut off, count) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Fills `buf` with random bytes so compression on the path cannot inflate the result.
pub(crate) fn fill_random(buf: &mut [u8]) {
    // A failure here leaves zeros; the measurement is still valid on uncompressed paths.
    let _ = getrandom::fill(buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn socket_options_read_back_as_set() {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let fd = socket.as_raw_fd();
        set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).unwrap();
        assert_eq!(get_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap(), 1);
        // Linux always has reno; asking for it must take, and read back by name.
        set_congestion(fd, "reno").unwrap();
        assert_eq!(congestion(fd).unwrap(), "reno");
        assert!(set_congestion(fd, "no-such-algorithm").is_err());
    }

    /// A connected pair on loopback: (the accepted end, the connecting end).
    fn tcp_pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (listener.accept().unwrap().0, client)
    }

    #[test]
    #[allow(clippy::print_stderr)] // says when the kernel behaviour worked around has gone
    fn the_receive_low_water_mark_leaves_the_window_open() {
        // The mark asked for at once clamps the window to it: the kernel behaviour that held
        // every path to 128 KiB per round trip. If this stops holding, the workaround below is
        // no longer needed, but nothing breaks.
        let (plain, _c1) = tcp_pair();
        let (clamped, _c2) = tcp_pair();
        let (ours, _c3) = tcp_pair();
        let clamp = |s: &std::net::TcpStream| {
            get_int(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP).unwrap()
        };
        let open = clamp(&plain);
        set_int(clamped.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, 128 << 10).unwrap();
        let fd = ours.as_raw_fd();
        let mark = raise_rcvlowat(fd, 128 << 10, 0);
        assert!(mark > 0 && mark <= 128 << 10, "mark {mark}");
        assert_eq!(get_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT).unwrap(), mark as i32);
        assert_eq!(clamp(&ours), open, "our mark narrowed the window (kernel clamps to it)");
        if clamp(&clamped) == open {
            eprintln!("NOTE: this kernel no longer clamps the window to SO_RCVLOWAT");
        }
        // Asking again for no more than is set changes nothing.
        assert_eq!(raise_rcvlowat(fd, mark, mark), mark);
    }

    #[test]
    fn gso_send_and_batched_receive_on_loopback() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        enable_rx_timestamps(rx.as_raw_fd());
        let payload = vec![7u8; 300];
        match send_gso(tx.as_raw_fd(), &payload, 100) {
            Ok(n) => assert_eq!(n, 300),
            Err(_) => {
                send_many(tx.as_raw_fd(), &[&payload[..100], &payload[100..200], &payload[200..]])
                    .unwrap();
            }
        }
        let mut batch = RecvBatch::new(4, 2048);
        let mut total = 0;
        while total < 300 {
            let n = batch.recv(rx.as_raw_fd()).unwrap();
            for i in 0..n {
                assert_eq!(batch.got[i].segment, 100);
                assert!(batch.got[i].stamp_ns.is_some());
                total += batch.got[i].len;
            }
        }
        assert_eq!(total, 300);
    }

    #[test]
    fn thread_cpu_advances() {
        let (u0, s0) = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, s1) = thread_cpu_ns();
        assert!(u1 + s1 >= u0 + s0);
    }

    #[test]
    fn payload_file_is_nameless_and_sends_its_data() {
        let f = payload_file(b"hello").unwrap();
        assert_eq!(f.metadata().unwrap().len(), 5);
        // Nameless: no directory entry links to it.
        assert_eq!(f.metadata().unwrap().nlink(), 0);
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(sendfile(b.as_raw_fd(), &f, 1, 4).unwrap(), 4);
        let mut got = [0u8; 4];
        io::Read::read_exact(&mut a, &mut got).unwrap();
        assert_eq!(&got, b"ello");
    }
}

/// Waits until `fd` is readable or `wait` has passed; true when readable.
pub(crate) fn wait_readable(fd: RawFd, wait: std::time::Duration) -> io::Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // Round up, so a wait of 300 µs does not become a busy poll of 0 ms.
    let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, for the length given.
    match unsafe { libc::poll(&mut p, 1, ms) } {
        r if r < 0 => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// One datagram and what came with it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Datagram {
    /// Bytes received.
    pub len: usize,
    /// Who sent it.
    pub from: Option<std::net::IpAddr>,
    /// Its TTL or hop limit, when the socket was asked to report it (`IP_RECVTTL`,
    /// `IPV6_RECVHOPLIMIT`).
    pub ttl: Option<u8>,
    /// When the kernel received it (wall clock, ns since the epoch), with `SO_TIMESTAMPNS`.
    pub received_ns: Option<i64>,
}

/// Receives one datagram without blocking, with its sender and TTL.
pub(crate) fn recv_datagram(fd: RawFd, buf: &mut [u8]) -> io::Result<Datagram> {
    // SAFETY: zeroed sockaddr_storage and a control buffer are valid for recvmsg to fill;
    // every pointer given stays alive for the call, and the lengths are the buffers'.
    unsafe {
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut control = [0u64; 16];
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of_val(&control) as _;
        let n = libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ttl = None;
        let mut received_ns = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let hops = (c.cmsg_level == libc::IPPROTO_IP && c.cmsg_type == libc::IP_TTL)
                || (c.cmsg_level == libc::IPPROTO_IPV6 && c.cmsg_type == libc::IPV6_HOPLIMIT);
            if hops {
                let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                ttl = u8::try_from(v).ok();
            } else if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                let t: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                received_ns = Some(t.tv_sec * 1_000_000_000 + t.tv_nsec);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let from = match i32::from(addr.ss_family) {
            libc::AF_INET => {
                let a: libc::sockaddr_in =
                    std::ptr::read_unaligned((&addr as *const libc::sockaddr_storage).cast());
                Some(std::net::IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()))
            }
            libc::AF_INET6 => {
                let a: libc::sockaddr_in6 =
                    std::ptr::read_unaligned((&addr as *const libc::sockaddr_storage).cast());
                Some(std::net::IpAddr::from(a.sin6_addr.s6_addr))
            }
            _ => None,
        };
        Ok(Datagram { len: n as usize, from, ttl, received_ns })
    }
}

/// Reads from a stream socket without blocking: how many bytes, and when the kernel received
/// the last segment read (wall clock, ns since the epoch) when the socket has
/// `SO_TIMESTAMPNS` on (TCP reports the stamp of the last segment a read took).
pub(crate) fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    recv_datagram(fd, buf).map(|d| (d.len, d.received_ns))
}

/// A new epoll instance.
pub(crate) fn epoll() -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: epoll_create1 returns a new descriptor or -1.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// What [`epoll_ctl`] does with a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EpollOp {
    /// Starts watching it (`EPOLL_CTL_ADD`).
    Add,
    /// Changes what is watched on it (`EPOLL_CTL_MOD`).
    Modify,
    /// Stops watching it (`EPOLL_CTL_DEL`; the key and events are ignored).
    Delete,
}

/// Watches `fd` in `epoll` for `events` (`EPOLLIN`, `EPOLLOUT`, …), each event carrying `key`
/// back from [`epoll_wait`]; or changes or ends that, as `op` says.
pub(crate) fn epoll_ctl(
    epoll: RawFd,
    op: EpollOp,
    fd: RawFd,
    key: u64,
    events: libc::c_int,
) -> io::Result<()> {
    let op = match op {
        EpollOp::Add => libc::EPOLL_CTL_ADD,
        EpollOp::Modify => libc::EPOLL_CTL_MOD,
        EpollOp::Delete => libc::EPOLL_CTL_DEL,
    };
    let mut ev = libc::epoll_event { events: events as u32, u64: key };
    // SAFETY: the caller's descriptors; `ev` is a valid event for the call (DEL ignores it).
    cvt(unsafe { libc::epoll_ctl(epoll, op, fd, &mut ev) }).map(drop)
}

/// Waits on `epoll` for at most `timeout` with nanosecond resolution (`epoll_pwait2`, Linux
/// 5.11), or in whole milliseconds rounded up where the kernel lacks it. Returns how many
/// events were written to `ready`; an interrupted wait returns 0.
pub(crate) fn epoll_wait(
    epoll: RawFd,
    ready: &mut [libc::epoll_event],
    timeout: std::time::Duration,
) -> io::Result<usize> {
    let len = ready.len().min(i32::MAX as usize) as libc::c_int;
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `ready` is writable for `len` events; `ts` outlives the call; no signal mask.
    let n = unsafe { libc::epoll_pwait2(epoll, ready.as_mut_ptr(), len, &ts, std::ptr::null()) };
    let n = if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: as above.
        unsafe { libc::epoll_wait(epoll, ready.as_mut_ptr(), len, ms) }
    } else {
        n
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(e) };
    }
    Ok(n as usize)
}
