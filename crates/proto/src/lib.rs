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

/// Feeds `data` to every decoder a peer's bytes can reach (preamble, data hello, UDP hello,
/// control frames both ways with the order check, UDP receiver accounting). For the fuzz
/// target and the seeded test that runs its inputs in CI; none of it may panic.
#[doc(hidden)]
pub fn exercise_decoders(data: &[u8]) {
    use control::{ClientMessage, ServerMessage, ServerState};
    let _ = codec::Preamble::decode(data);
    let _ = codec::DataHello::decode(data);
    let _ = datagram::UdpHello::decode(data);
    let _ = codec::decode_frame::<ServerMessage>(data);
    let mut state = ServerState::default();
    let mut rest = data;
    while let Ok((msg, used)) = codec::decode_frame::<ClientMessage>(rest) {
        let _ = state.on_client(&msg);
        rest = &rest[used..];
    }
    let mut stats = datagram::ReceiverStats::default();
    for chunk in data.chunks(16) {
        if let Some((seq, sent)) = datagram::read_header(chunk) {
            stats.record(seq, chunk.len(), sent, sent.wrapping_add(seq as i64));
        }
    }
}
