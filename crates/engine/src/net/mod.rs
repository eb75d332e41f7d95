//! Sockets and wire plumbing every kind shares: system calls (`sys`, `mmsg`), the control
//! connection's framing (`framed`) and the client's side of its handshake ([`handshake`]),
//! data streams' openers (`streams`), TLS ([`tls`]), QUIC endpoints ([`quic`]) and ICMP
//! sockets ([`icmp`]).

pub(crate) mod buffer;
pub(crate) mod framed;
pub mod handshake;
pub mod icmp;
pub(crate) mod mmsg;
pub mod probe;
pub mod quic;
pub(crate) mod streams;
pub(crate) mod sys;
pub mod tls;

pub use sys::congestion_available;
