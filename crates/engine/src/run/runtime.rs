//! The tokio runtime that drives a client's multiplexed connections (HTTP/2, HTTP/3, and the
//! DNS stream clients), and why one thread gets a current-thread runtime.

use std::io;

/// A runtime of `threads` threads (`name` for its workers). One thread (the default) is a
/// current-thread runtime: a task woken there waits its turn behind those already ready, so a
/// connection's driver runs after every request that became ready with it and sends them
/// together. tokio's multi-threaded scheduler runs a woken task next (its LIFO slot): each
/// HTTP/3 request then went out in a datagram of its own, ~1 sendmsg a request against oha's
/// 0.3, at 40 % more CPU a request.
pub(crate) fn for_connections(threads: u16, name: &str) -> io::Result<tokio::runtime::Runtime> {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(threads))
            .thread_name(name)
            .enable_all()
            .build()
    }
}
