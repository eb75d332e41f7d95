//! A server that has served good and bad clients holds no more sockets or threads than before.
//! Its own test binary, so no other test's sockets are counted.

mod common;

use std::time::Duration;

use common::{run, spec, TestServer};
use tokio::io::AsyncWriteExt;
use wirespeed_model::spec::{Direction, Protocol};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_and_failed_tests_release_sockets_and_threads() {
    let server = TestServer::loopback().await;
    still(&server).await; // warm up the runtime's own threads and descriptors
    let (fds, tasks) = (open_fds(), threads());
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        let mut s = spec(protocol, 0.3);
        s.direction = Direction::Bidir;
        s.parallel = 3;
        s.bitrate_bps = if protocol == Protocol::Udp { 10_000_000 } else { 0 };
        run(server.opts(s)).await.unwrap();
    }
    for _ in 0..5 {
        let mut c = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        c.write_all(b"garbage that is not a preamble").await.unwrap();
    }
    // A client that vanishes mid-test.
    let abandoned = tokio::spawn(run(server.opts(spec(Protocol::Tcp, 5.0))));
    tokio::time::sleep(Duration::from_millis(300)).await;
    abandoned.abort();
    let _ = abandoned.await;
    // Give the server a moment to notice the closed connections, then look.
    let mut settled = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if open_fds() <= fds && threads() <= tasks {
            settled = true;
            break;
        }
    }
    assert!(settled, "fds {fds} -> {}, threads {tasks} -> {}", open_fds(), threads());
    still(&server).await;
    server.shutdown().await;
}

async fn still(server: &TestServer) {
    run(server.opts(spec(Protocol::Tcp, 0.2))).await.unwrap();
}
