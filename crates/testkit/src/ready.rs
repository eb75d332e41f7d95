//! Readiness waits: a process's line that says it is ready, and what the kernel says about a
//! server's sockets (`/proc/net/tcp` and `tcp6`), which needs no hook in the server under test.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `command` and waits until a line of its standard error contains `ready`; the rest of
/// its output is read away in the background. A process that exits first fails the test.
pub fn spawn_until(command: &mut Command, ready: &str) -> Child {
    let mut child = command.stderr(Stdio::piped()).spawn().expect("the process starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("exited before printing {ready:?}"))
            .expect("its standard error reads");
        if line.contains(ready) {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    child
}

/// Reads `child`'s standard error (piped) until a line contains `needle`: the event that proves
/// the state a test waits for. One byte at a time, so nothing after that line leaves the pipe
/// and `wait_with_output` still gets the rest. Returns the lines read; a process that closes
/// its standard error first fails the test with them.
pub fn until_stderr_line(child: &mut Child, needle: &str) -> String {
    use std::io::Read;
    let stderr = child.stderr.as_mut().expect("standard error piped");
    let mut read = Vec::new();
    let mut line_start = 0;
    let mut byte = [0u8];
    loop {
        match stderr.read(&mut byte) {
            Ok(0) => panic!(
                "closed its standard error before a line with {needle:?}:\n{}",
                String::from_utf8_lossy(&read)
            ),
            Ok(_) => read.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("reading its standard error: {e}"),
        }
        if byte[0] == b'\n' {
            if String::from_utf8_lossy(&read[line_start..]).contains(needle) {
                return String::from_utf8_lossy(&read).into_owned();
            }
            line_start = read.len();
        }
    }
}

/// Whether `program` is on PATH.
pub fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// (state, receive queue) of every TCP socket whose local port is `port`. For a listening
/// socket the receive queue is its accept queue.
fn sockets_on(port: u16) -> Vec<(u8, u64)> {
    let mut out = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(queues)) = (f.get(1), f.get(3), f.get(4)) else {
                continue;
            };
            let local_port =
                local.rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            let rx = queues.split_once(':').and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok());
            if let (Some(p), Ok(st), Some(rx)) = (local_port, u8::from_str_radix(state, 16), rx) {
                if p == port {
                    out.push((st, rx));
                }
            }
        }
    }
    out
}

const ESTABLISHED: u8 = 0x01;
const LISTEN: u8 = 0x0a;

/// Waits until the server listening on `port` has accepted every connection made to it (its
/// accept queue is empty), has taken at least `connections` of them, and has read every byte
/// they sent on the ones it holds open. Bounded: a server that never does fails the test here.
pub async fn until_read_everything(port: u16, connections: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let socks = sockets_on(port);
        // Accepted: every socket of the port but the listener, in whatever state the server
        // has left it (closed by the server, it waits in FIN_WAIT2 for the test's end).
        let accepted = socks.iter().filter(|(st, _)| *st != LISTEN).count();
        let settled =
            socks.iter().all(|(st, rx)| (*st != LISTEN && *st != ESTABLISHED) || *rx == 0);
        if settled && accepted >= connections {
            return;
        }
        assert!(Instant::now() < deadline, "port {port}: not everything read: {socks:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
