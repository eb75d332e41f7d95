//! Ports a test can bind its servers to.

use std::net::{TcpListener, UdpSocket};

/// A port free right now on 127.0.0.1 for both TCP and UDP, and for TCP on ::1 where this
/// machine has IPv6: the servers the tests start bind one, the other, or all of these.
pub fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = tcp.local_addr().expect("its address").port();
        let v6_free = match TcpListener::bind(("::1", port)) {
            Ok(_) => true,
            // No IPv6 loopback here: nothing can hold the port there either.
            Err(e) => e.kind() == std::io::ErrorKind::AddrNotAvailable,
        };
        if v6_free && UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}
