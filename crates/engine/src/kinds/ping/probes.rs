//! The probes that run one at a time: a TCP handshake (`--tcp PORT`) and an HTTP GET timed
//! to the first byte of the answer (`--http URL`). Each opens a new connection, and closes it
//! with RST so thousands of probes leave no TIME_WAIT behind.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::{Domain, SockAddr, Socket, Type};
use wirespeed_model::kinds::ping::ProbeOutcome;
use wirespeed_proto::http_url::HttpUrl;

/// Longest status line an HTTP probe reads before calling the answer broken.
const MAX_STATUS_LINE: usize = 8192;

/// Where an HTTP probe goes: a plain `http://` URL.
pub type HttpTarget = HttpUrl;

/// A plain-HTTP target from `url`; ping's HTTP probe does not speak TLS.
pub fn http_target(url: &str) -> Result<HttpTarget, String> {
    let target = HttpUrl::parse(url)?;
    if target.secure {
        return Err(format!(
            "'{url}': ping --http times plain HTTP only; use `wirespeed http` for https://"
        ));
    }
    Ok(target)
}

/// The request every HTTP probe sends.
pub fn probe_request(target: &HttpTarget) -> Vec<u8> {
    let credentials = match &target.basic_auth {
        Some(c) => format!("Authorization: {c}\r\n"),
        None => String::new(),
    };
    format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: wirespeed/{}\r\nAccept: */*\r\n{credentials}Connection: close\r\n\r\n",
        target.path,
        target.authority,
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes()
}

/// Opens a connection to `to` and waits for the handshake until `deadline`. `Err` carries the
/// probe's outcome when it did not connect.
fn connect(
    to: SocketAddr,
    bind: Option<IpAddr>,
    deadline: Instant,
) -> Result<Socket, ProbeOutcome> {
    let error = |e: io::Error| ProbeOutcome::Error { reason: describe(&e) };
    let socket =
        Socket::new(Domain::for_address(to), Type::STREAM.nonblocking(), None).map_err(error)?;
    if let Some(ip) = bind {
        socket.bind(&SockAddr::from(SocketAddr::new(ip, 0))).map_err(error)?;
    }
    match socket.connect(&SockAddr::from(to)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
            let left = deadline.saturating_duration_since(Instant::now());
            if !wait_writable(&socket, left).map_err(error)? {
                return Err(ProbeOutcome::Lost);
            }
            if let Some(e) = socket.take_error().map_err(error)? {
                return Err(error(e));
            }
        }
        Err(e) => return Err(error(e)),
    }
    // Close with RST: a ping should not leave a socket in TIME_WAIT per probe.
    let _ = socket.set_linger(Some(Duration::ZERO));
    Ok(socket)
}

fn wait_writable(socket: &Socket, wait: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, for the length given.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r > 0)
}

/// What a failed connect means, in ping's words.
fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => "connection refused".into(),
        Some(libc::ECONNRESET) => "connection reset".into(),
        Some(libc::EHOSTUNREACH) => "host unreachable".into(),
        Some(libc::ENETUNREACH) => "network unreachable".into(),
        _ => e.to_string(),
    }
}

/// One TCP connect probe: the handshake time, or why it failed.
pub fn tcp(to: SocketAddr, bind: Option<IpAddr>, timeout: Duration) -> ProbeOutcome {
    let started = Instant::now();
    match connect(to, bind, started + timeout) {
        Ok(_socket) => ProbeOutcome::Reply {
            rtt_ns: started.elapsed().as_nanos() as u64,
            bytes: None,
            ttl: None,
            status: None,
        },
        Err(outcome) => outcome,
    }
}

/// One HTTP probe: connect, send the GET, time the first byte of the answer and read its
/// status line. A silent server is a lost probe; an answer that is not HTTP is an error.
pub fn http(
    to: SocketAddr,
    bind: Option<IpAddr>,
    request: &[u8],
    timeout: Duration,
) -> ProbeOutcome {
    let started = Instant::now();
    let deadline = started + timeout;
    let socket = match connect(to, bind, deadline) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let error = |e: io::Error| ProbeOutcome::Error { reason: describe(&e) };
    if let Err(e) = socket.set_nonblocking(false) {
        return error(e);
    }
    if let Err(e) = (&socket).write_all(request) {
        return error(e);
    }
    let mut head = Vec::with_capacity(256);
    let mut first_byte = None;
    let mut buf = [0u8; 2048];
    while !head.windows(2).any(|w| w == b"\r\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || socket.set_read_timeout(Some(left)).is_err() {
            return ProbeOutcome::Lost;
        }
        match (&socket).read(&mut buf) {
            Ok(0) if head.is_empty() => {
                return ProbeOutcome::Error {
                    reason: "the server closed the connection without answering".into(),
                }
            }
            Ok(0) => break,
            Ok(n) => {
                first_byte.get_or_insert_with(|| started.elapsed());
                head.extend_from_slice(&buf[..n]);
                if head.len() > MAX_STATUS_LINE {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return ProbeOutcome::Lost
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return error(e),
        }
    }
    match (first_byte, status_code(&head)) {
        (Some(ttfb), Some(status)) => ProbeOutcome::Reply {
            rtt_ns: ttfb.as_nanos() as u64,
            bytes: None,
            ttl: None,
            status: Some(status),
        },
        _ => ProbeOutcome::Error { reason: "the answer is not HTTP (no valid status line)".into() },
    }
}

/// The status code of an `HTTP/1.x NNN ...` status line.
fn status_code(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.splitn(3, ' ');
    let version = parts.next()?;
    let code = parts.next()?;
    if !version.starts_with("HTTP/1.") || code.len() != 3 {
        return None;
    }
    code.parse().ok().filter(|c| (100..600).contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_take_plain_http_only() {
        let t = http_target("HTTP://example.com?x").unwrap();
        let req = String::from_utf8(probe_request(&t)).unwrap();
        assert!(req.starts_with("GET /?x HTTP/1.1\r\nHost: example.com\r\n"), "{req}");
        assert!(http_target("https://x/").unwrap_err().contains("plain HTTP"));
    }

    #[test]
    fn status_lines() {
        assert_eq!(status_code(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(status_code(b"HTTP/1.0 503\r\n"), Some(503));
        assert_eq!(status_code(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_code(b"HTTP/1.1 20 OK\r\n"), None);
        assert_eq!(status_code(b"HTTP/1.1 999 x\r\n"), None);
    }
}
