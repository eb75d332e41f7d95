//! The latency test: request/response round trips over TCP, UDP or QUIC.
//!
//! - [`client`]: opens the streams, sends messages (closed or open model), records round trips.
//! - `server`: echoes every message back (reached through the shared handshake).
//! - `quic_stream`: both ends of a stream over QUIC.

pub mod client;
mod quic_stream;
pub(crate) mod server;
