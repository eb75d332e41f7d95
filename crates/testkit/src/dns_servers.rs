//! Debian's unbound, nsd and knot, started for one test: one worker each, authoritative for
//! a test zone, listening on 127.0.0.1 (UDP and TCP) on a free port, in its own temporary
//! directory, with rate limiting off. They are the real peers `wirespeed dns` is checked
//! against; a test is skipped (with a printed reason) where the server is not installed.
//! Also the zone and the query file the checks are written for.

use crate::ports::free_port;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::peer::Peer;

/// Hosts in the test zone (host1 … hostN).
pub const HOSTS: u32 = 100;

/// The test zone: SOA, NS, www (A, AAAA), hostN (A), `mid` with a TXT record of about 800
/// bytes (too large for a UDP answer without EDNS, 512 bytes, not for EDNS 1232) and `big`
/// with one of about 2 KB (too large for 1232 as well, the most these servers send).
pub fn zone_text() -> String {
    let mut z = String::from(
        "$ORIGIN example.test.\n$TTL 3600\n@ IN SOA ns1.example.test. hostmaster.example.test. ( 1 7200 3600 1209600 3600 )\n@ IN NS ns1.example.test.\nns1 IN A 127.0.0.1\nwww IN A 192.0.2.10\nwww IN AAAA 2001:db8::10\n",
    );
    z.push_str("big IN TXT");
    for _ in 0..8 {
        z.push_str(&format!(" \"{}\"", "x".repeat(250)));
    }
    z.push_str("\nmid IN TXT");
    for _ in 0..3 {
        z.push_str(&format!(" \"{}\"", "y".repeat(250)));
    }
    z.push('\n');
    for i in 1..=HOSTS {
        z.push_str(&format!("host{i} IN A 10.0.{}.{}\n", i / 256, i % 256));
    }
    z
}

/// The query file: each host, www (A and AAAA), one name that does not exist (NXDOMAIN),
/// one type a name lacks (NODATA: NOERROR, no answer) and the two large TXT records.
pub fn query_lines() -> String {
    let mut q = String::from(
        "; the checks count on this list\nwww.example.test A\nwww.example.test AAAA\n",
    );
    for i in 1..=HOSTS {
        q.push_str(&format!("host{i}.example.test A\n"));
    }
    q.push_str(
        "nx1.example.test A\nwww.example.test MX\nmid.example.test TXT\nbig.example.test TXT\n",
    );
    q
}

/// Queries in [`query_lines`]: (total, NXDOMAIN).
pub const QUERIES: (u64, u64) = (HOSTS as u64 + 6, 1);

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// NLnet Labs' Unbound (a resolver serving a local zone; DNS over TLS with a certificate).
    Unbound,
    /// NLnet Labs' NSD (authoritative).
    Nsd,
    /// CZ.NIC's Knot DNS (authoritative).
    Knot,
    /// CoreDNS (built from the Go module proxy by scripts/peers.sh): with a certificate it also
    /// serves DNS over QUIC.
    CoreDns,
}

/// A running DNS server, stopped when dropped.
pub struct DnsServer {
    /// Where it answers over UDP and TCP.
    pub addr: SocketAddr,
    /// Its DNS-over-TLS port (unbound), or DNS-over-QUIC port (CoreDNS), when started with a
    /// certificate.
    pub tls_port: Option<u16>,
    /// Its DNS-over-HTTPS port (CoreDNS, with a certificate).
    pub https_port: Option<u16>,
    /// Which server it is.
    pub kind: Kind,
    /// Held for its `Drop`, which stops the process group.
    _peer: Peer,
    dir: PathBuf,
}

impl DnsServer {
    /// Starts `kind`, or returns `None` (after saying why) when it is not installed.
    pub fn start(kind: Kind) -> Option<Self> {
        Self::start_with(kind, None)
    }

    /// Starts `kind`; unbound also serves DNS over TLS with `tls` (certificate and key PEM).
    pub fn start_with(
        kind: Kind,
        tls: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Option<Self> {
        let coredns = || {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p).map(|d| d.join("coredns")).find(|c| c.is_file())
            })
        };
        let (binary, package) = match kind {
            Kind::Unbound => (PathBuf::from("/usr/sbin/unbound"), "unbound"),
            Kind::Nsd => (PathBuf::from("/usr/sbin/nsd"), "nsd"),
            Kind::Knot => (PathBuf::from("/usr/sbin/knotd"), "knot"),
            Kind::CoreDns => match coredns() {
                Some(c) => (c, ""),
                None => {
                    crate::skip::missing(
                        "coredns is not built",
                        "scripts/peers.sh builds it from the Go module proxy (scripts/test.sh runs it)",
                    );
                    return None;
                }
            },
        };
        if !binary.exists() {
            crate::skip::not_installed(&binary.display().to_string(), package);
            return None;
        }
        let binary = binary.as_path();
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("wirespeed-{kind:?}-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone = dir.join("example.test.zone");
        std::fs::write(&zone, zone_text()).unwrap();
        let d = dir.display();
        let z = zone.display();
        let tls_port = tls.map(|_| free_port());
        let https_port = tls.filter(|_| kind == Kind::CoreDns).map(|_| free_port());
        let mut cmd = match kind {
            Kind::Unbound => {
                let dot = match (tls, tls_port) {
                    (Some((cert, key)), Some(p)) => format!(
                        "  interface: 127.0.0.1@{port}\n  interface: 127.0.0.1@{p}\n  tls-port: {p}\n  tls-service-pem: \"{}\"\n  tls-service-key: \"{}\"\n",
                        cert.display(),
                        key.display()
                    ),
                    _ => "  interface: 127.0.0.1\n".into(),
                };
                // `test.` is one of unbound's built-in RFC 6761 static zones, which would
                // answer NXDOMAIN for everything below it.
                let conf = format!(
                    "server:\n{dot}  port: {port}\n  do-ip6: no\n  num-threads: 1\n  do-daemonize: no\n  username: \"\"\n  chroot: \"\"\n  directory: \"{d}\"\n  pidfile: \"{d}/unbound.pid\"\n  use-syslog: no\n  logfile: \"{d}/unbound.log\"\n  verbosity: 0\n  access-control: 127.0.0.0/8 allow\n  module-config: \"iterator\"\n  local-zone: \"test.\" nodefault\n  ratelimit: 0\n  ip-ratelimit: 0\nauth-zone:\n  name: \"example.test\"\n  zonefile: \"{z}\"\n  for-downstream: yes\n  for-upstream: no\n  fallback-enabled: no\nremote-control:\n  control-enable: no\n"
                );
                std::fs::write(dir.join("unbound.conf"), conf).unwrap();
                let mut c = Command::new(binary);
                c.arg("-d").arg("-c").arg(dir.join("unbound.conf"));
                c
            }
            Kind::Nsd => {
                // Debian builds NSD with response rate limiting on (200/s): off, or a load
                // test measures the limiter.
                let conf = format!(
                    "server:\n  ip-address: 127.0.0.1@{port}\n  do-ip4: yes\n  do-ip6: no\n  server-count: 1\n  username: \"\"\n  chroot: \"\"\n  zonesdir: \"{d}\"\n  database: \"\"\n  zonelistfile: \"{d}/zone.list\"\n  xfrdfile: \"{d}/xfrd.state\"\n  xfrdir: \"{d}\"\n  pidfile: \"{d}/nsd.pid\"\n  logfile: \"{d}/nsd.log\"\n  verbosity: 1\n  hide-version: yes\n  rrl-ratelimit: 0\n  rrl-whitelist-ratelimit: 0\nremote-control:\n  control-enable: no\nzone:\n  name: \"example.test\"\n  zonefile: \"{z}\"\n"
                );
                std::fs::write(dir.join("nsd.conf"), conf).unwrap();
                let mut c = Command::new(binary);
                c.arg("-d").arg("-c").arg(dir.join("nsd.conf"));
                c
            }
            Kind::Knot => {
                std::fs::create_dir_all(dir.join("db")).unwrap();
                let conf = format!(
                    "server:\n    rundir: \"{d}\"\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\nlog:\n  - target: stderr\n    any: error\ndatabase:\n    storage: \"{d}/db\"\ntemplate:\n  - id: default\n    storage: \"{d}\"\n    file: \"%s.zone\"\n    zonefile-sync: -1\n    journal-content: none\nzone:\n  - domain: example.test\n"
                );
                std::fs::write(dir.join("knot.conf"), conf).unwrap();
                let mut c = Command::new(binary);
                c.arg("-c").arg(dir.join("knot.conf"));
                c
            }
            Kind::CoreDns => {
                let mut conf = format!(
                    "example.test:{port} {{\n  bind 127.0.0.1\n  file {z} example.test\n}}\n"
                );
                if let (Some((cert, key)), Some(p), Some(h)) = (tls, tls_port, https_port) {
                    let (cert, key) = (cert.display(), key.display());
                    // DoQ; DoH on TCP and, on the same port number over UDP, DoH on HTTP/3.
                    for scheme_port in [
                        format!("quic://example.test:{p}"),
                        format!("https://example.test:{h}"),
                        format!("https3://example.test:{h}"),
                    ] {
                        conf.push_str(&format!(
                            "{scheme_port} {{\n  bind 127.0.0.1\n  tls {cert} {key}\n  file {z} example.test\n}}\n"
                        ));
                    }
                }
                std::fs::write(dir.join("Corefile"), conf).unwrap();
                let mut c = Command::new(binary);
                c.arg("-conf").arg(dir.join("Corefile")).arg("-quiet");
                c
            }
        };
        // A new process group, so NSD's children stop with it.
        let peer =
            Peer::spawn(cmd.stdout(Stdio::null()).stderr(Stdio::inherit()), "the DNS server")
                .owning(dir.clone());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let server = Self { addr, tls_port, https_port, kind, _peer: peer, dir };
        server.wait_ready();
        Some(server)
    }

    /// Waits until the server answers a query for the zone's apex SOA.
    fn wait_ready(&self) {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let query =
            wirespeed_proto::dns::wire::Query::encode("example.test", 6, false, None).unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut buf = [0u8; 512];
        loop {
            let _ = socket.send_to(&query.bytes, self.addr);
            if let Ok((n, _)) = socket.recv_from(&mut buf) {
                if let Ok(h) = wirespeed_proto::dns::wire::Header::read_answer(&buf[..n]) {
                    if h.rcode() == 0 && h.ancount == 1 {
                        return;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "{:?} did not start answering on {}",
                self.kind,
                self.addr
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The query file, written in the server's directory.
    pub fn datafile(&self) -> PathBuf {
        let path = self.dir.join("queries.txt");
        std::fs::write(&path, query_lines()).unwrap();
        path
    }
}
