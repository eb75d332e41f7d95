//! Helpers the binary's end-to-end tests share: a real `wirespeed server` process on a free
//! loopback port, and clients run as processes.
#![allow(dead_code)] // each test file uses its own subset

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

/// A running server process and its port; killed when dropped.
pub(crate) struct Server(pub Child, pub u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free for both TCP and UDP on loopback right now (the server binds both).
pub(crate) fn free_port() -> u16 {
    loop {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Starts `command` and waits until a line of its standard error contains `ready`; the rest of
/// its output is read away in the background.
pub(crate) fn spawn_until(command: &mut Command, ready: &str) -> Child {
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line =
            lines.next().unwrap_or_else(|| panic!("exited before printing {ready:?}")).unwrap();
        if line.contains(ready) {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    child
}

/// Starts `wirespeed server` on loopback and waits for its "listening" line.
pub(crate) fn server(extra: &[&str]) -> Server {
    let port = free_port();
    let child = spawn_until(
        Command::new(BIN).args(["server", "-B", "127.0.0.1", "-p", &port.to_string()]).args(extra),
        "listening on",
    );
    Server(child, port)
}

/// A stock `iperf3 -s` on a free loopback port; killed and reaped when dropped.
pub(crate) struct StockIperf3(pub Child, pub u16);

impl StockIperf3 {
    /// Starts it; `scripts/test.sh` installs iperf3, so a missing one fails the test.
    pub(crate) fn start() -> Self {
        let port = free_port();
        let child = Command::new("iperf3")
            .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 is installed (scripts/test.sh installs it)");
        StockIperf3(child, port)
    }

    /// Runs `wirespeed bw TARGET --iperf3 ARGS…` against it, retrying while the server is not
    /// listening yet (exit 3, unreachable).
    pub(crate) fn bw(&self, args: &[&str]) -> std::process::Output {
        let target = format!("127.0.0.1:{}", self.1);
        let run = || client(&[&["bw", &target, "--iperf3"][..], args].concat());
        let mut out = run();
        for _ in 0..50 {
            if out.status.code() != Some(3) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            out = run();
        }
        out
    }
}

impl Drop for StockIperf3 {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the binary with `args`, colour off, and waits for it.
pub(crate) fn client(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).env("NO_COLOR", "1").output().unwrap()
}

/// A tool from PyPI that `check` (a command) proves is there, or [`missing`].
pub(crate) fn pypi_tool(check: &[&str], package: &str) -> Option<()> {
    if Command::new(check[0]).args(&check[1..]).output().is_ok_and(|o| o.status.success()) {
        return Some(());
    }
    missing(&format!("{package} is not installed; `pip install {package}` (scripts/test.sh does)"))
}

/// A program a Debian package installs (a path, or a name on PATH), or [`missing`].
pub(crate) fn debian(program: &str, package: &str) -> Option<()> {
    let found = if program.contains('/') {
        std::path::Path::new(program).exists()
    } else {
        Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if found {
        return Some(());
    }
    missing(&format!("{program} is missing; `apt-get install {package}` (scripts/test.sh does)"))
}

/// A peer that is not here, `why`: `None`, a skip with a note; or under CI (where
/// `scripts/test.sh` installs every peer) a failure saying why.
pub(crate) fn missing(why: &str) -> Option<()> {
    assert!(!wirespeed_store::testing::required(), "cannot run here: {why}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("SKIPPED: {why}");
    }
    None
}

/// The kind of the newest run saved in `store`.
pub(crate) fn newest_kind(store: &wirespeed_store::Store) -> String {
    let newest =
        store.list(&wirespeed_store::RunFilter { limit: Some(1), ..Default::default() }).unwrap();
    store.get(newest[0].id).unwrap().unwrap().kind().to_string()
}
pub(crate) mod goresponsiveness;
pub(crate) mod mmdb;
pub(crate) mod web;
