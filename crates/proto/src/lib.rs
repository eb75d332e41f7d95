//! wirespeed's wire formats, sans I/O: no sockets, no clocks, no async. Callers feed bytes in
//! and get messages (or a precise error) out, so every decoder can be unit-tested and fuzzed.
//!
//! - [`codec`]: the connection preamble and length-prefixed JSON frames.
//! - [`control`]: control messages and the order they may come in.
//! - [`auth`]: the token challenge/response.
//! - [`datagram`]: the UDP data header, the UDP stream hello, and receiver-side loss/jitter accounting.
//!
//! The protocol itself is described in `docs/protocol.md`.

pub mod auth;
pub mod codec;
pub mod control;
pub mod datagram;

/// Version of the control protocol; a server refuses a client whose major version differs.
pub const PROTOCOL_VERSION: u8 = 1;
