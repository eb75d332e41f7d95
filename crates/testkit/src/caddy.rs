//! Caddy (built from the Go module proxy by scripts/peers.sh), started for one test from a
//! Caddyfile the test writes: an HTTP/3 server that is not ours, and with `reverse_proxy`'s
//! HTTP/3 transport an HTTP/3 client that is not ours. Its state (certificates, locks) stays in
//! its own temporary directory; its admin endpoint is off, so it listens only where told.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::peer::Peer;

/// A running Caddy, stopped when dropped.
pub struct Caddy {
    /// Held for its `Drop`, which stops the process group.
    _peer: Peer,
    dir: PathBuf,
}

impl Caddy {
    /// Starts Caddy on `sites` (the Caddyfile after its global options), waiting until
    /// 127.0.0.1:`ready_port` accepts TCP; `None` (after saying why) where it is not built.
    pub fn start(sites: &str, ready_port: u16) -> Option<Self> {
        let binary = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("caddy")).find(|c| c.is_file()));
        let Some(binary) = binary else {
            crate::skip::missing(
                "caddy is not built",
                "scripts/peers.sh builds it from the Go module proxy (scripts/test.sh runs it)",
            );
            return None;
        };
        let dir = std::env::temp_dir()
            .join(format!("wirespeed-caddy-{}-{ready_port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let caddyfile = dir.join("Caddyfile");
        let global = format!(
            "{{\n\tadmin off\n\tpersist_config off\n\tauto_https off\n\tstorage file_system {}\n}}\n",
            dir.join("data").display()
        );
        std::fs::write(&caddyfile, format!("{global}{sites}")).unwrap();
        let log = std::fs::File::create(dir.join("caddy.log")).unwrap();
        let peer = Peer::spawn(
            Command::new(binary)
                .args(["run", "--adapter", "caddyfile", "--config"])
                .arg(&caddyfile)
                .env("XDG_DATA_HOME", dir.join("xdg-data"))
                .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
                .env("HOME", &dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
            "caddy",
        )
        .owning(dir.clone());
        let caddy = Self { _peer: peer, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", ready_port)).is_err() {
            assert!(Instant::now() < deadline, "caddy did not start: {}", caddy.log());
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(caddy)
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("caddy.log")).unwrap_or_default()
    }
}
