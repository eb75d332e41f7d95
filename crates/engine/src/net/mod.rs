//! Sockets and wire plumbing every kind shares: system calls (`sys`, `mmsg`, and the host's
//! [`clock`]), the control
//! connection's framing (`framed`) and the client's side of its handshake ([`handshake`]),
//! data streams' openers (`streams`), TLS ([`tls`]), QUIC endpoints ([`quic`]), ICMP
//! sockets ([`icmp`]), and serving HTTP ([`http_serve`], with what each connection's peer has
//! acknowledged: [`delivered`]).

pub(crate) mod buffer;
pub mod clock;
pub mod delivered;
pub(crate) mod framed;
pub mod handshake;
pub mod http_serve;
pub mod icmp;
pub mod metrics_serve;
pub(crate) mod mmsg;
pub mod probe;
pub mod quic;
pub(crate) mod sock_diag;
pub(crate) mod streams;
pub(crate) mod sys;
pub mod tls;

pub use sys::congestion_available;
