//! Helpers the binary's end-to-end tests share: a real `wirespeed server` process on a free
//! loopback port, and clients run as processes.

pub(crate) mod goresponsiveness;
pub(crate) mod hosts;
pub(crate) mod mmdb;
pub(crate) mod web;

use std::process::{Child, Command, Stdio};

pub(crate) use wirespeed_testkit::ports::free_port;
pub(crate) use wirespeed_testkit::ready::spawn_until;
pub(crate) use wirespeed_testkit::skip::{debian, pypi_tool};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

/// A running server process and its port; killed when dropped.
pub(crate) struct Server(pub Child, pub u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

/// The kind of the newest run saved in `store`.
pub(crate) fn newest_kind(store: &wirespeed_store::Store) -> String {
    let newest =
        store.list(&wirespeed_store::RunFilter { limit: Some(1), ..Default::default() }).unwrap();
    store.get(newest[0].id).unwrap().unwrap().kind().to_string()
}
