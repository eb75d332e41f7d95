//! Debian's nginx, started for one test: one worker, listening on loopback (IPv4 and IPv6)
//! on a free port, serving its default-sized page, in its own temporary directory. It is a
//! real peer for the tests of external `cps` and of `ping --tcp`/`--http` (`/private/` asks
//! for Basic credentials, for URLs that carry them); the test is
//! skipped (with a printed reason) where nginx is not installed.

use crate::ports::free_port;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::peer::Peer;
use std::time::{Duration, Instant};

/// A running nginx, stopped when dropped.
pub struct Nginx {
    /// Its IPv4 loopback address.
    pub addr: SocketAddr,
    /// Its unix socket (plain HTTP/1.1).
    pub unix: PathBuf,
    /// Its TLS port on 127.0.0.1 (HTTP/1.1 and h2 by ALPN), when started with a certificate.
    pub tls_port: Option<u16>,
    peer: Peer,
    dir: PathBuf,
}

/// A certificate and key (PEM files) for nginx's TLS listener, and optionally the CA whose
/// client certificates it requires.
pub struct TlsFiles {
    /// The server's certificate.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// The CA whose client certificates nginx requires, if any.
    pub client_ca: Option<PathBuf>,
}

impl TlsFiles {
    /// A self-signed certificate for localhost and 127.0.0.1, written to `dir`.
    pub fn self_signed(dir: &std::path::Path) -> Self {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let cert = rcgen::generate_simple_self_signed(names).unwrap();
        let files = Self { cert: dir.join("cert.pem"), key: dir.join("key.pem"), client_ca: None };
        std::fs::write(&files.cert, cert.cert.pem()).unwrap();
        std::fs::write(&files.key, cert.key_pair.serialize_pem()).unwrap();
        files
    }
}

impl Nginx {
    /// Writes `content` to `path` under the document root (what it serves at `/path`).
    pub fn put(&self, path: &str, content: &str) {
        let file = self.dir.join("html").join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }

    /// Starts nginx, or returns `None` (after saying why) when it is not installed.
    pub fn start() -> Option<Self> {
        Self::start_with(None)
    }

    /// Starts nginx, with a TLS listener when `tls` is given.
    pub fn start_with(tls: Option<&TlsFiles>) -> Option<Self> {
        let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists());
        let Some(binary) = binary else {
            crate::skip::not_installed("nginx", "nginx");
            return None;
        };
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("wirespeed-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(dir.join("html")).unwrap();
        std::fs::write(dir.join("html/index.html"), "x".repeat(615)).unwrap();
        // /private/ asks for HTTP Basic credentials: alice, "open sesame".
        std::fs::create_dir_all(dir.join("html/private")).unwrap();
        std::fs::write(dir.join("html/private/index.html"), "secret").unwrap();
        std::fs::write(dir.join("htpasswd"), "alice:{PLAIN}open sesame\n").unwrap();
        let d = dir.display();
        let tls_port = tls.map(|_| free_port());
        let private = format!(
            "    location /private/ {{ auth_basic t; auth_basic_user_file {d}/htpasswd; }}\n"
        );
        let tls_server = match (tls, tls_port) {
            (Some(f), Some(p)) => format!(
                "server {{\n    listen 127.0.0.1:{p} ssl http2;\n    ssl_certificate {};\n    ssl_certificate_key {};\n{}    root {d}/html;\n{private}  }}\n",
                f.cert.display(),
                f.key.display(),
                f.client_ca.as_ref().map_or(String::new(), |ca| format!(
                    "    ssl_client_certificate {};\n    ssl_verify_client on;\n",
                    ca.display()
                ))
            ),
            _ => String::new(),
        };
        let conf = format!(
            "worker_processes 1;\nuser root;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             server {{\n    listen 127.0.0.1:{port} backlog=4096;\n    listen [::1]:{port} backlog=4096;\n\
             listen unix:{d}/nginx.sock;\n    root {d}/html;\n\
             location = /moved {{ return 301 /index.html; }}\n\
             location = /away {{ return 302 http://127.0.0.2:{port}/; }}\n{private}  }}\n{tls_server}}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let peer = Peer::spawn(
            Command::new(binary)
                .arg("-p")
                .arg(&dir)
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .args(["-g", "daemon off;"])
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
            "nginx",
        )
        .owning(dir.clone());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(10);
        // Every listener, not just the first: nginx listens on those it could bind and retries
        // a busy port (a moment's ephemeral use of it elsewhere) for a few seconds.
        let tls_addr = tls_port.map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
        for a in std::iter::once(addr).chain(tls_addr) {
            while TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_err() {
                assert!(Instant::now() < deadline, "nginx did not start listening on {a}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // And its unix socket: it accepted no connection yet once in a suite run, with the
        // TCP listener already answering.
        let unix = dir.join("nginx.sock");
        while std::os::unix::net::UnixStream::connect(&unix).is_err() {
            assert!(Instant::now() < deadline, "nginx did not start listening on {unix:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self { addr, unix, tls_port, peer, dir })
    }

    /// What nginx has logged, for a failing assertion's message.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Pauses (SIGSTOP) or resumes (SIGCONT) every nginx process: a server that stalls.
    pub fn signal_all(&self, signal: &str) {
        let master = self.peer.id();
        let children = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children"))
            .unwrap_or_default();
        let mut pids: Vec<String> = children.split_whitespace().map(String::from).collect();
        pids.push(master.to_string());
        let ok = Command::new("kill").arg(format!("-{signal}")).args(&pids).status().unwrap();
        assert!(ok.success(), "kill -{signal} {pids:?}");
    }
}
