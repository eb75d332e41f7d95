//! Readiness probes: a system's process is ready for load when a TCP connection succeeds (to
//! each of several ports, for a tunnel that opens one per service), a UDP
//! datagram is answered, an HTTP GET is answered, a DNS query is answered, or its log shows a
//! line — never after a fixed sleep. A process that exits first, or never becomes ready in
//! time, is an error that carries the end of its log.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::process::Started;
use crate::scenario::Ready;

/// Default time a process has to become ready.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time between attempts.
const POLL: Duration = Duration::from_millis(25);

/// A probe with its addresses filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// A TCP connect to each of these.
    Tcp(Vec<SocketAddr>),
    /// Any answer to a UDP datagram.
    Udp(SocketAddr),
    /// Any HTTP answer to a GET (http:// only).
    Http(String),
    /// An answer to a DNS query for the root's NS records.
    Dns(SocketAddr),
    /// The process's log containing each of these texts.
    Log(Vec<String>),
}

/// A probe that cannot be made as written: the scenario's mistake, found before anything waits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// An address that is neither a port nor `IP:PORT`.
    #[error("{0:?}: expected PORT or IP:PORT")]
    Address(String),
    /// An HTTP probe's URL that cannot be probed.
    #[error("ready http {url:?}: {why}")]
    Http {
        /// The URL.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// None, or more than one, of the probes.
    #[error("ready needs exactly one of tcp, udp, http, dns or log")]
    NotOne,
    /// A timeout that is not a duration.
    #[error("ready timeout {0:?}")]
    Timeout(String),
}

/// `PORT` or `HOST:PORT` (loopback when the host is left out).
fn address(text: &str) -> Result<SocketAddr, ProbeError> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse().map_err(|_| ProbeError::Address(text.to_string()))
}

impl Probe {
    /// The probe `ready` (its templates already filled in) describes, and its timeout.
    pub fn from_ready(ready: &Ready) -> Result<(Self, Duration), ProbeError> {
        let probe = match (&ready.tcp, &ready.udp, &ready.http, &ready.dns, &ready.log) {
            (Some(t), None, None, None, None) => {
                Self::Tcp(t.items().into_iter().map(address).collect::<Result<_, _>>()?)
            }
            (None, Some(u), None, None, None) => Self::Udp(address(u)?),
            (None, None, Some(h), None, None) => {
                http_target(h)?;
                Self::Http(h.clone())
            }
            (None, None, None, Some(d), None) => Self::Dns(address(d)?),
            (None, None, None, None, Some(l)) => {
                Self::Log(l.items().into_iter().map(str::to_string).collect())
            }
            _ => return Err(ProbeError::NotOne),
        };
        let timeout = match &ready.timeout {
            Some(t) => wirespeed_model::units::parse_duration(t)
                .map_err(|_| ProbeError::Timeout(t.clone()))?,
            None => DEFAULT_TIMEOUT,
        };
        Ok((probe, timeout))
    }

    /// One attempt.
    pub fn ok(&self, log: &str) -> bool {
        match self {
            Self::Tcp(each) => each
                .iter()
                .all(|a| TcpStream::connect_timeout(a, Duration::from_millis(250)).is_ok()),
            Self::Udp(a) => udp_answered(*a, b"wirespeed ready?"),
            Self::Http(url) => http_answered(url),
            Self::Dns(a) => dns_answered(*a),
            Self::Log(texts) => texts.iter().all(|t| log.contains(t.as_str())),
        }
    }
}

fn udp_answered(addr: SocketAddr, payload: &[u8]) -> bool {
    udp_exchange(addr, payload).is_some()
}

fn udp_exchange(addr: SocketAddr, payload: &[u8]) -> Option<Vec<u8>> {
    let local: SocketAddr = if addr.is_ipv6() { "[::1]:0" } else { "127.0.0.1:0" }.parse().ok()?;
    let s = UdpSocket::bind(local).ok()?;
    s.connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(200))).ok()?;
    s.send(payload).ok()?;
    let mut buf = [0u8; 1500];
    let n = s.recv(&mut buf).ok()?;
    Some(buf[..n].to_vec())
}

/// A DNS answer (QR set) with our id to `. NS`.
fn dns_answered(addr: SocketAddr) -> bool {
    let id: u16 = (std::process::id() as u16) ^ 0x5a5a;
    let mut q = Vec::with_capacity(17);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(&[0, 0, 2, 0, 1]);
    udp_exchange(addr, &q)
        .is_some_and(|a| a.len() >= 12 && a[..2] == id.to_be_bytes() && a[2] & 0x80 != 0)
}

/// Where a GET of `url` goes: the address (an IP literal or `localhost`, since probes stay on
/// this host), the request path and the `Host` value. The `url` crate reads the URL.
fn http_target(url: &str) -> Result<(SocketAddr, String, String), ProbeError> {
    let fail = |why: String| ProbeError::Http { url: url.to_string(), why };
    let parsed = url::Url::parse(url).map_err(|e| fail(e.to_string()))?;
    if parsed.scheme() != "http" {
        return Err(fail("only http:// is probed".into()));
    }
    let ip = match parsed.host() {
        Some(url::Host::Ipv4(a)) => IpAddr::V4(a),
        Some(url::Host::Ipv6(a)) => IpAddr::V6(a),
        Some(url::Host::Domain("localhost")) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        _ => return Err(fail("the host must be an address or localhost".into())),
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    let path = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_string(),
    };
    let host = match parsed.port() {
        Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or_default()),
        None => parsed.host_str().unwrap_or_default().to_string(),
    };
    Ok((SocketAddr::new(ip, port), path, host))
}

/// Any HTTP status line in answer to a GET of `url` (http:// only).
fn http_answered(url: &str) -> bool {
    let Ok((addr, path, host)) = http_target(url) else { return false };
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(250)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && head[9].is_ascii_digit()
}

/// Why a process did not become ready.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NotReady {
    /// It exited first.
    #[error("{role} exited ({status}) before it was ready; its log ends:\n{tail}")]
    Exited {
        /// Its role.
        role: String,
        /// How it exited.
        status: String,
        /// The end of its log.
        tail: String,
    },
    /// Time ran out.
    #[error("{role} was not ready ({probe}) within {secs:.1} s; its log ends:\n{tail}")]
    Timeout {
        /// Its role.
        role: String,
        /// The probe, described.
        probe: String,
        /// The timeout, seconds.
        secs: f64,
        /// The end of its log.
        tail: String,
    },
}

/// Waits until `probe` succeeds for `p`; returns how long it took.
pub fn wait(p: &mut Started, probe: &Probe, timeout: Duration) -> Result<Duration, NotReady> {
    let start = Instant::now();
    loop {
        if let Some(status) = p.exited() {
            return Err(NotReady::Exited {
                role: p.role.clone(),
                status: status.to_string(),
                tail: p.log_tail(10),
            });
        }
        let log = if matches!(probe, Probe::Log(_)) {
            std::fs::read_to_string(&p.log).unwrap_or_default()
        } else {
            String::new()
        };
        if probe.ok(&log) {
            return Ok(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return Err(NotReady::Timeout {
                role: p.role.clone(),
                probe: format!("{probe:?}"),
                secs: timeout.as_secs_f64(),
                tail: p.log_tail(10),
            });
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::LogText;

    #[test]
    fn a_tcp_probe_of_several_ports_waits_for_each() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let later = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ports = [open.local_addr().unwrap().port(), later.local_addr().unwrap().port()];
        drop(later);
        let ready: Ready =
            toml::from_str(&format!(r#"tcp = ["{}", "{}"]"#, ports[0], ports[1])).unwrap();
        let (probe, _) = Probe::from_ready(&ready).unwrap();
        assert!(!probe.ok(""), "one port of two is closed");
        let _reopened = std::net::TcpListener::bind(("127.0.0.1", ports[1])).unwrap();
        assert!(probe.ok(""), "both are open");
    }

    #[test]
    fn a_log_probe_of_several_texts_waits_for_each() {
        let ready: Ready =
            toml::from_str(r#"log = ["[tcp] start proxy success", "[udp] start proxy success"]"#)
                .unwrap();
        assert!(matches!(&ready.log, Some(LogText::More(texts)) if texts.len() == 2));
        let (probe, _) = Probe::from_ready(&ready).unwrap();
        let tcp_only = "x [tcp] start proxy success\n";
        assert!(!probe.ok(tcp_only), "one of two is not ready");
        assert!(probe.ok(&format!("{tcp_only}y [udp] start proxy success\n")));
        let one: Ready = toml::from_str(r#"log = "listening""#).unwrap();
        assert!(Probe::from_ready(&one).unwrap().0.ok("now listening\n"));
    }

    #[test]
    fn http_probe_targets_are_read_by_the_url_crate() {
        let (addr, path, host) = http_target("http://127.0.0.1:8080/a%20b?c").unwrap();
        assert_eq!((addr, path.as_str(), host.as_str()), (addr, "/a%20b?c", "127.0.0.1:8080"));
        assert_eq!(addr, "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        let (addr, path, host) = http_target("http://[::1]").unwrap();
        assert_eq!((addr.port(), path.as_str(), host.as_str()), (80, "/", "[::1]"));
        assert!(addr.ip().is_loopback());
        assert_eq!(http_target("http://localhost:81").unwrap().0.port(), 81);
        for bad in ["https://127.0.0.1/", "http://example.com/", "127.0.0.1:80", "http://"] {
            assert!(http_target(bad).is_err(), "{bad}");
        }
        // A URL that can never answer is refused at once, not after the readiness timeout.
        let ready = Ready { http: Some("https://127.0.0.1/".into()), ..Ready::default() };
        let e = Probe::from_ready(&ready).unwrap_err();
        assert!(e.to_string().contains("only http://"), "{e}");
    }
}
