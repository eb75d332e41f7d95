//! Fuzzes every decoder a peer's bytes reach: the preamble, data hello, control frames in both
//! directions, the UDP hello, and the UDP receiver accounting. None may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::codec::{decode_frame, DataHello, Preamble};
use wirespeed_proto::control::{ClientMessage, ServerMessage, ServerState};
use wirespeed_proto::datagram::{read_header, ReceiverStats, UdpHello};

fuzz_target!(|data: &[u8]| {
    let _ = Preamble::decode(data);
    let _ = DataHello::decode(data);
    let _ = UdpHello::decode(data);
    let _ = decode_frame::<ServerMessage>(data);
    let mut state = ServerState::default();
    let mut rest = data;
    while let Ok((msg, used)) = decode_frame::<ClientMessage>(rest) {
        let _ = state.on_client(&msg);
        rest = &rest[used..];
    }
    let mut stats = ReceiverStats::default();
    for chunk in data.chunks(16) {
        if let Some((seq, sent)) = read_header(chunk) {
            stats.record(seq, chunk.len(), sent, sent.wrapping_add(seq as i64));
        }
    }
});
