//! The latency test: request/response round trips over TCP or UDP.
//!
//! - [`client`]: opens the streams, sends messages (closed or open model), records round trips.
//! - `server`: echoes every message back (reached through the shared handshake).

pub mod client;
pub(crate) mod server;
