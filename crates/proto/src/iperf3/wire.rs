//! iperf3's control-connection primitives: the 37-byte cookie, the one-byte states, the
//! length-prefixed JSON frames, its error numbers, and the UDP connect datagrams and data header.

use serde_json::Value;

use crate::codec::DecodeError;

/// Length of the cookie: 36 base32 characters and a NUL, all sent.
pub const COOKIE_LEN: usize = 37;
/// The characters an iperf3 cookie is made of.
const COOKIE_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Largest parameter document iperf3 accepts (and so do we).
pub const MAX_PARAMS_LEN: u32 = 8 * 1024;
/// Largest results document we accept. iperf3 reads results uncapped (so a stray error byte
/// can announce 4 GiB); server output embedded in results is the only large part.
pub const MAX_RESULTS_LEN: u32 = 16 * 1024 * 1024;
/// What an iperf3 client writes to open a UDP stream (`UDP_CONNECT_MSG` on the wire).
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// What an iperf3 server answers (`UDP_CONNECT_REPLY` on the wire).
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";
/// The reply of servers before 3.10 (987654321 in host order on little-endian machines).
pub const LEGACY_UDP_CONNECT_REPLY: [u8; 4] = 987_654_321u32.to_le_bytes();

/// True when `first` could start an iperf3 cookie; used to tell iperf3 connections from ours.
pub fn could_be_cookie(first: u8) -> bool {
    COOKIE_ALPHABET.contains(&first)
}

/// A control or data connection's cookie.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie(pub [u8; COOKIE_LEN]);

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cookie({})", String::from_utf8_lossy(&self.0[..COOKIE_LEN - 1]))
    }
}

impl Cookie {
    /// A cookie from 37 random bytes, made the way iperf3 makes them.
    pub fn from_random(random: [u8; COOKIE_LEN]) -> Self {
        let mut c = [0u8; COOKIE_LEN];
        for (out, r) in c.iter_mut().zip(random).take(COOKIE_LEN - 1) {
            *out = COOKIE_ALPHABET[usize::from(r) % COOKIE_ALPHABET.len()];
        }
        Self(c)
    }

    /// Decodes the first [`COOKIE_LEN`] bytes of a connection.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        for (i, &b) in buf.iter().take(COOKIE_LEN).enumerate() {
            let ok = if i == COOKIE_LEN - 1 { b == 0 } else { COOKIE_ALPHABET.contains(&b) };
            if !ok {
                return Err(DecodeError::Invalid(format!(
                    "not an iperf3 cookie (byte {i} is 0x{b:02x})"
                )));
            }
        }
        if buf.len() < COOKIE_LEN {
            return Err(DecodeError::Incomplete(COOKIE_LEN - buf.len()));
        }
        let mut c = [0u8; COOKIE_LEN];
        c.copy_from_slice(&buf[..COOKIE_LEN]);
        Ok(Self(c))
    }
}

/// The one-byte states on an iperf3 control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // the names are iperf3's; see docs/protocol.md
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        match self {
            Self::TestStart => 1,
            Self::TestRunning => 2,
            Self::TestEnd => 4,
            Self::ParamExchange => 9,
            Self::CreateStreams => 10,
            Self::ServerTerminate => 11,
            Self::ClientTerminate => 12,
            Self::ExchangeResults => 13,
            Self::DisplayResults => 14,
            Self::IperfDone => 16,
            Self::AccessDenied => 0xFF,
            Self::ServerError => 0xFE,
        }
    }

    /// The state a byte names; iperf3's unused values (3, 5–8, 15) and anything else are invalid.
    pub fn from_byte(b: u8) -> Result<Self, DecodeError> {
        Ok(match b {
            1 => Self::TestStart,
            2 => Self::TestRunning,
            4 => Self::TestEnd,
            9 => Self::ParamExchange,
            10 => Self::CreateStreams,
            11 => Self::ServerTerminate,
            12 => Self::ClientTerminate,
            13 => Self::ExchangeResults,
            14 => Self::DisplayResults,
            16 => Self::IperfDone,
            0xFF => Self::AccessDenied,
            0xFE => Self::ServerError,
            other => {
                return Err(DecodeError::Invalid(format!("unknown iperf3 state byte {other}")))
            }
        })
    }
}

/// iperf3 error numbers (`i_errno`) that a server sends after [`State::ServerError`].
pub mod errno {
    /// Test duration too long.
    pub const DURATION: i32 = 5;
    /// Too many parallel streams.
    pub const NUM_STREAMS: i32 = 6;
    /// TCP block size out of range.
    pub const BLOCK_SIZE: i32 = 7;
    /// Socket buffer size too large.
    pub const BUF_SIZE: i32 = 8;
    /// MSS out of range.
    pub const MSS: i32 = 10;
    /// Bad `--omit`.
    pub const OMIT: i32 = 12;
    /// UDP block size out of range.
    pub const UDP_BLOCK_SIZE: i32 = 20;
    /// Bad TOS value.
    pub const BAD_TOS: i32 = 21;
    /// Total rate above the server's limit.
    pub const TOTAL_RATE: i32 = 27;
    /// Could not create the test (resources).
    pub const NEW_TEST: i32 = 100;
    /// Could not accept a data connection.
    pub const ACCEPT: i32 = 104;
    /// Control connection closed unexpectedly.
    pub const CTRL_CLOSE: i32 = 109;
    /// Unknown control message.
    pub const MESSAGE: i32 = 110;
    /// Could not receive the parameters (malformed, oversized, wrong types).
    pub const RECV_PARAMS: i32 = 114;
    /// Could not receive the results.
    pub const RECV_RESULTS: i32 = 117;
    /// The server is shutting down.
    pub const SERVER_TERM: i32 = 120;
    /// Could not set the socket buffer size.
    pub const SET_BUF: i32 = 124;
    /// Protocol not supported.
    pub const PROTOCOL: i32 = 131;
    /// Authentication failed.
    pub const AUTH_TEST: i32 = 142;
    /// No data for too long.
    pub const NO_MSG: i32 = 144;
    /// The server's safety timer for the test expired.
    pub const TEST_EXPIRED: i32 = 160;
}

/// A human description of an iperf3 error number, for messages about a stock server's refusal.
pub fn errno_text(code: i32) -> &'static str {
    match code {
        errno::DURATION => "test duration too long",
        errno::NUM_STREAMS => "too many parallel streams",
        errno::BLOCK_SIZE | errno::UDP_BLOCK_SIZE => "block size out of range",
        errno::BUF_SIZE => "socket buffer size too large",
        errno::MSS => "MSS out of range",
        errno::OMIT => "bad omit value",
        errno::BAD_TOS => "bad TOS value",
        errno::TOTAL_RATE => "total bitrate above the server's limit",
        errno::RECV_PARAMS => "the server could not read the parameters",
        errno::AUTH_TEST => "authentication failed",
        errno::SERVER_TERM => "the server is shutting down",
        errno::TEST_EXPIRED => "the server's test timer expired",
        _ => "iperf3 server error",
    }
}

/// The bytes of a SERVER_ERROR answer: the state byte, then `i_errno` and `errno`.
pub fn encode_server_error(i_errno: i32, os_errno: i32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = State::ServerError.byte();
    out[1..5].copy_from_slice(&i_errno.to_be_bytes());
    out[5..9].copy_from_slice(&os_errno.to_be_bytes());
    out
}

/// Encodes a JSON frame: big-endian `u32` length, then the compact JSON, no NUL.
pub fn encode_json(value: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Decodes a JSON frame no longer than `cap` bytes from the start of `buf`; returns the JSON
/// object and the bytes used. Length 0, length over `cap`, and anything but an object are invalid.
pub fn decode_json(
    buf: &[u8],
    cap: u32,
) -> Result<(serde_json::Map<String, Value>, usize), DecodeError> {
    let Some(head) = buf.get(..4) else { return Err(DecodeError::Incomplete(4 - buf.len())) };
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if len == 0 {
        return Err(DecodeError::Invalid("empty JSON frame".into()));
    }
    if len > cap {
        return Err(DecodeError::Invalid(format!("JSON frame of {len} bytes; the limit is {cap}")));
    }
    let end = 4 + len as usize;
    if buf.len() < end {
        return Err(DecodeError::Incomplete(end - buf.len()));
    }
    match serde_json::from_slice::<Value>(&buf[4..end]) {
        Ok(Value::Object(map)) => Ok((map, end)),
        Ok(_) => Err(DecodeError::Invalid("JSON frame is not an object".into())),
        Err(e) => Err(DecodeError::Invalid(format!("JSON frame does not parse: {e}"))),
    }
}

/// Writes iperf3's UDP data header: sender time (seconds, microseconds) and sequence number,
/// 32-bit or 64-bit. `buf` must hold 12 or 16 bytes.
pub fn write_udp_header(buf: &mut [u8], seq: u64, sent_ns: i64, seq64: bool) {
    let sec = (sent_ns.div_euclid(1_000_000_000)) as u32;
    let usec = (sent_ns.rem_euclid(1_000_000_000) / 1_000) as u32;
    buf[..4].copy_from_slice(&sec.to_be_bytes());
    buf[4..8].copy_from_slice(&usec.to_be_bytes());
    if seq64 {
        buf[8..16].copy_from_slice(&seq.to_be_bytes());
    } else {
        buf[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
    }
}

/// Reads `(seq, sent_ns)` from an iperf3 datagram; `None` if it is too short.
pub fn read_udp_header(buf: &[u8], seq64: bool) -> Option<(u64, i64)> {
    let word =
        |at: usize| buf.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let sec = word(0)?;
    let usec = word(4)?;
    let seq = if seq64 {
        u64::from_be_bytes(buf.get(8..16)?.try_into().ok()?)
    } else {
        u64::from(word(8)?)
    };
    Some((seq, i64::from(sec) * 1_000_000_000 + i64::from(usec) * 1_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_round_trip_and_reject_foreign_bytes() {
        let c = Cookie::from_random([200; COOKIE_LEN]);
        assert_eq!(c.0[COOKIE_LEN - 1], 0);
        assert!(c.0[..COOKIE_LEN - 1].iter().all(|b| COOKIE_ALPHABET.contains(b)));
        assert_eq!(Cookie::decode(&c.0).unwrap(), c);
        assert_eq!(Cookie::decode(&c.0[..10]), Err(DecodeError::Incomplete(27)));
        assert!(matches!(Cookie::decode(b"WSPD"), Err(DecodeError::Invalid(_))));
        let mut no_nul = c.0;
        no_nul[COOKIE_LEN - 1] = b'a';
        assert!(matches!(Cookie::decode(&no_nul), Err(DecodeError::Invalid(_))));
        assert!(!could_be_cookie(b'W'));
        assert!(could_be_cookie(b'q'));
    }

    #[test]
    fn states_round_trip_and_unused_values_are_invalid() {
        for b in 0..=255u8 {
            if let Ok(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert!(State::from_byte(3).is_err());
        assert!(State::from_byte(15).is_err());
        assert_eq!(encode_server_error(27, 0)[..5], [0xFE, 0, 0, 0, 27]);
    }

    #[test]
    fn json_frames_are_capped_and_must_be_objects() {
        let v = serde_json::json!({"tcp": true, "parallel": 2});
        let enc = encode_json(&v);
        let (map, used) = decode_json(&enc, MAX_PARAMS_LEN).unwrap();
        assert_eq!(used, enc.len());
        assert_eq!(map["parallel"], 2);
        assert_eq!(
            decode_json(&enc[..6], MAX_PARAMS_LEN),
            Err(DecodeError::Incomplete(enc.len() - 6))
        );
        // A SERVER_ERROR byte read as a length: 0xFE000000 is far over any cap.
        assert!(matches!(
            decode_json(&[0xFE, 0, 0, 0], MAX_RESULTS_LEN),
            Err(DecodeError::Invalid(_))
        ));
        assert!(matches!(decode_json(&[0, 0, 0, 0], 10), Err(DecodeError::Invalid(_))));
        assert!(matches!(
            decode_json(&encode_json(&serde_json::json!([1])), 10),
            Err(DecodeError::Invalid(_))
        ));
        assert!(matches!(decode_json(b"\0\0\0\x02{x", 10), Err(DecodeError::Invalid(_))));
    }

    #[test]
    fn udp_headers_round_trip_in_both_widths() {
        let mut buf = [0u8; 16];
        write_udp_header(&mut buf, 7, 12_345_678_000, false);
        assert_eq!(read_udp_header(&buf, false), Some((7, 12_345_678_000)));
        write_udp_header(&mut buf, 1 << 40, 5_000, true);
        assert_eq!(read_udp_header(&buf, true), Some((1 << 40, 5_000)));
        assert_eq!(read_udp_header(&buf[..11], false), None);
        assert_eq!(LEGACY_UDP_CONNECT_REPLY, [0xB1, 0x68, 0xDE, 0x3A]);
    }
}
