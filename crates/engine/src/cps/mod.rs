//! The connections-per-second test: `-P` connectors each open a TCP connection, time the
//! handshake, close it (FIN, or RST with `--rst`) and start over.
//!
//! - [`client`]: the connectors, against a wirespeed server or any TCP listener.
//! - `server`: admits the test and counts the connections the listener accepted for it.

pub mod client;
pub(crate) mod server;
