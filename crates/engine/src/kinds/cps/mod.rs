//! The connections-per-second test: `-P` connectors each open a TCP connection, time the
//! handshake, close it (FIN, or RST with `--rst`) and start over. Against a wirespeed server
//! the FIN close is the server's: it closes first and keeps the TIME_WAIT.
//!
//! - [`client`]: the connectors, against a wirespeed server or any TCP listener.
//! - `closing`: connections waiting for the server to close them first.
//! - `server`: admits the test and counts the connections the listener accepted for it.

pub mod client;
mod closing;
pub(crate) mod server;
