//! A `wirespeed web` process on a free loopback port, and a raw HTTP/1.1 client that can speak
//! from any 127.0.0.0/8 address — one machine, many visitors — and send bodies as it likes
//! (lying lengths, chunked, oversized).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command};

use super::{free_port, spawn_until, BIN};

/// A running web server, its port and its database; killed when dropped.
pub(crate) struct Web {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Web {
    /// The results database.
    pub(crate) fn db(&self) -> std::path::PathBuf {
        self.dir.path().join("r.db")
    }

    /// Saved web results, newest first.
    pub(crate) fn saved(&self) -> Vec<wirespeed_model::web::WebResult> {
        let store = wirespeed_store::Store::open(&self.db()).unwrap();
        store.list_web(&wirespeed_store::WebFilter::default()).unwrap()
    }

    /// Sends `request` (a whole HTTP/1.1 request, `Connection: close` added by the caller or
    /// not) from `from` and reads the answer until the server closes.
    pub(crate) fn send(&self, from: [u8; 4], request: &[u8]) -> Reply {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.bind(&SocketAddr::from((Ipv4Addr::from(from), 0)).into()).unwrap();
        socket.connect(&SocketAddr::from(([127, 0, 0, 1], self.port)).into()).unwrap();
        let mut s: TcpStream = socket.into();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        // The server may answer (and close) before a refused body is all sent.
        let _ = s.write_all(request);
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        Reply::parse(&raw)
    }

    /// GET `path` from `from`.
    pub(crate) fn get(&self, from: [u8; 4], path: &str) -> Reply {
        self.send(
            from,
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                self.port
            )
            .as_bytes(),
        )
    }

    /// GET `path` from `from` with extra header lines.
    pub(crate) fn get_with(&self, from: [u8; 4], path: &str, headers: &str) -> Reply {
        self.send(
            from,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n")
                .as_bytes(),
        )
    }

    /// POST `body` to `path` from `from` with extra header lines.
    pub(crate) fn post(&self, from: [u8; 4], path: &str, headers: &str, body: &[u8]) -> Reply {
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n{headers}\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        self.send(from, &req)
    }

    /// POST a LibreSpeed result form (`dl=…&ul=…`, urlencoded) to its telemetry URL from `from`.
    pub(crate) fn telemetry_form(&self, from: [u8; 4], form: &[u8]) -> Reply {
        let form_type = "Content-Type: application/x-www-form-urlencoded\r\n";
        self.post(from, "/results/telemetry.php", form_type, form)
    }
}

/// A response read whole.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    fn parse(raw: &[u8]) -> Self {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| {
            panic!("no response head in {:?}", String::from_utf8_lossy(&raw[..raw.len().min(200)]))
        });
        let head = String::from_utf8_lossy(&raw[..end]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Self { status, head, body: raw[end + 4..].to_vec() }
    }

    /// The value of header `name` (any case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
}

/// Starts `wirespeed web` on loopback with a fresh database and waits until it listens.
pub(crate) fn web(extra: &[&str]) -> Web {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    web_on(db.to_str().unwrap(), dir, extra)
}

/// Starts `wirespeed web` on loopback saving to `db` (a file or a PostgreSQL URL).
pub(crate) fn web_on(db: &str, dir: tempfile::TempDir, extra: &[&str]) -> Web {
    let port = free_port();
    let child = spawn_until(
        Command::new(BIN)
            .args(["web", "-B", "127.0.0.1", "-p", &port.to_string(), "--db", db])
            .args(extra),
        "web speed test on",
    );
    Web { child, port, dir }
}
