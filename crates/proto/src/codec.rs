//! Framing. Every TCP connection to a wirespeed server starts with a 6-byte [`Preamble`]
//! (`WSPD`, protocol version, connection kind). Control connections then carry frames of a
//! big-endian `u32` length followed by that many bytes of JSON; data connections carry a fixed
//! 19-byte [`DataHello`] and then raw payload.
//!
//! Decoders distinguish [`DecodeError::Incomplete`] (read more) from [`DecodeError::Invalid`]
//! (close the connection), cap every length before allocating, and never panic.

use serde::{de::DeserializeOwned, Serialize};
use wirespeed_model::flow::Flow;

use crate::PROTOCOL_VERSION;

/// First four bytes of every wirespeed TCP connection. Upper-case, so never the start of an
/// iperf3 cookie (whose alphabet is `a-z2-7`).
pub const MAGIC: [u8; 4] = *b"WSPD";
/// Length of the preamble.
pub const PREAMBLE_LEN: usize = 6;
/// Largest control frame accepted, in bytes of JSON (not counting the length prefix).
pub const MAX_FRAME_LEN: u32 = 64 * 1024;
/// Length of a session id in bytes.
pub const SESSION_ID_LEN: usize = 16;
/// Length of an encoded [`DataHello`].
pub const DATA_HELLO_LEN: usize = SESSION_ID_LEN + 3;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not enough bytes yet; at least this many more are needed.
    #[error("incomplete: {0} more bytes needed")]
    Incomplete(usize),
    /// The bytes can never become a valid message.
    #[error("invalid: {0}")]
    Invalid(String),
}

/// What a TCP connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnKind {
    /// Carries control frames.
    Control,
    /// Carries one data stream of a session.
    Data,
    /// A cps test's connection: the server counts it and closes first, so the TIME_WAIT that
    /// the closing side keeps falls to the server and the client's port range does not cap
    /// the rate it measures.
    Probe,
}

/// The first bytes of a wirespeed TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preamble {
    /// Protocol version of the sender.
    pub version: u8,
    /// What the connection is for.
    pub kind: ConnKind,
}

impl Preamble {
    /// Encodes the preamble for `kind` at this protocol version.
    pub fn encode(kind: ConnKind) -> [u8; PREAMBLE_LEN] {
        let k = match kind {
            ConnKind::Control => b'C',
            ConnKind::Data => b'D',
            ConnKind::Probe => b'P',
        };
        [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], PROTOCOL_VERSION, k]
    }

    /// Decodes a preamble from the start of `buf`.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let have = buf.len().min(MAGIC.len());
        if buf[..have] != MAGIC[..have] {
            return Err(DecodeError::Invalid("not a wirespeed connection (bad magic)".into()));
        }
        if buf.len() < PREAMBLE_LEN {
            return Err(DecodeError::Incomplete(PREAMBLE_LEN - buf.len()));
        }
        let version = buf[4];
        if version != PROTOCOL_VERSION {
            return Err(DecodeError::Invalid(format!(
                "protocol version {version} is not supported (this side speaks {PROTOCOL_VERSION})"
            )));
        }
        let kind = match buf[5] {
            b'C' => ConnKind::Control,
            b'D' => ConnKind::Data,
            b'P' => ConnKind::Probe,
            other => {
                return Err(DecodeError::Invalid(format!("unknown connection kind {other:#04x}")))
            }
        };
        Ok(Self { version, kind })
    }
}

/// The fixed header a data connection sends after its preamble: which session and stream it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHello {
    /// The session id the server handed out in `Accepted`.
    pub session: [u8; SESSION_ID_LEN],
    /// Which way this stream carries data.
    pub flow: Flow,
    /// Stream number within its flow, from 1.
    pub stream: u16,
}

impl DataHello {
    /// Encodes the hello.
    pub fn encode(&self) -> [u8; DATA_HELLO_LEN] {
        let mut out = [0u8; DATA_HELLO_LEN];
        out[..SESSION_ID_LEN].copy_from_slice(&self.session);
        out[SESSION_ID_LEN] = flow_byte(self.flow);
        out[SESSION_ID_LEN + 1..].copy_from_slice(&self.stream.to_be_bytes());
        out
    }

    /// Decodes a hello from the start of `buf`.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        if buf.len() < DATA_HELLO_LEN {
            return Err(DecodeError::Incomplete(DATA_HELLO_LEN - buf.len()));
        }
        let mut session = [0u8; SESSION_ID_LEN];
        session.copy_from_slice(&buf[..SESSION_ID_LEN]);
        let flow = byte_flow(buf[SESSION_ID_LEN])?;
        let stream = u16::from_be_bytes([buf[SESSION_ID_LEN + 1], buf[SESSION_ID_LEN + 2]]);
        if stream == 0 {
            return Err(DecodeError::Invalid("stream number 0".into()));
        }
        Ok(Self { session, flow, stream })
    }
}

/// The byte that stands for a flow in binary headers.
pub fn flow_byte(flow: Flow) -> u8 {
    match flow {
        Flow::Upload => b'U',
        Flow::Download => b'D',
    }
}

/// The flow a header byte stands for.
pub fn byte_flow(b: u8) -> Result<Flow, DecodeError> {
    match b {
        b'U' => Ok(Flow::Upload),
        b'D' => Ok(Flow::Download),
        other => Err(DecodeError::Invalid(format!("unknown flow {other:#04x}"))),
    }
}

/// Appends one frame holding `msg` as JSON to `out`.
pub fn encode_frame<T: Serialize>(msg: &T, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let json = serde_json::to_vec(msg).map_err(|e| DecodeError::Invalid(e.to_string()))?;
    if json.len() > MAX_FRAME_LEN as usize {
        return Err(DecodeError::Invalid(format!(
            "frame of {} bytes exceeds the {MAX_FRAME_LEN}-byte cap",
            json.len()
        )));
    }
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(&json);
    Ok(())
}

/// Decodes one frame from the start of `buf`, returning the message and the bytes it used.
///
/// The length is checked against [`MAX_FRAME_LEN`] before anything else, so a hostile length
/// prefix is rejected after four bytes, never allocated.
pub fn decode_frame<T: DeserializeOwned>(buf: &[u8]) -> Result<(T, usize), DecodeError> {
    if buf.len() < 4 {
        return Err(DecodeError::Incomplete(4 - buf.len()));
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len == 0 {
        return Err(DecodeError::Invalid("empty frame".into()));
    }
    if len > MAX_FRAME_LEN {
        return Err(DecodeError::Invalid(format!(
            "frame length {len} exceeds the {MAX_FRAME_LEN}-byte cap"
        )));
    }
    let end = 4 + len as usize;
    if buf.len() < end {
        return Err(DecodeError::Incomplete(end - buf.len()));
    }
    let msg = serde_json::from_slice(&buf[4..end])
        .map_err(|e| DecodeError::Invalid(format!("malformed message: {e}")))?;
    Ok((msg, end))
}

/// Encodes bytes as lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Decodes hex into exactly `N` bytes.
pub fn from_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let bytes = text.as_bytes();
    if bytes.len() != N * 2 {
        return None;
    }
    let nibble = |c: u8| -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    };
    let mut out = [0u8; N];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ClientMessage;

    #[test]
    fn preamble_round_trip_and_errors() {
        let p = Preamble::encode(ConnKind::Data);
        assert_eq!(Preamble::decode(&p).unwrap().kind, ConnKind::Data);
        assert_eq!(Preamble::decode(b"WSP"), Err(DecodeError::Incomplete(3)));
        assert!(matches!(Preamble::decode(b"abcdef"), Err(DecodeError::Invalid(_))));
        assert!(matches!(Preamble::decode(b"ab"), Err(DecodeError::Invalid(_))));
        assert!(matches!(Preamble::decode(b"WSPD\x09C"), Err(DecodeError::Invalid(_))));
        assert!(matches!(Preamble::decode(b"WSPD\x01Z"), Err(DecodeError::Invalid(_))));
    }

    #[test]
    fn data_hello_round_trip() {
        let h = DataHello { session: [7; 16], flow: Flow::Download, stream: 3 };
        assert_eq!(DataHello::decode(&h.encode()).unwrap(), h);
        assert_eq!(DataHello::decode(&[0; 5]), Err(DecodeError::Incomplete(14)));
        let mut bad = h.encode();
        bad[16] = b'X';
        assert!(matches!(DataHello::decode(&bad), Err(DecodeError::Invalid(_))));
    }

    #[test]
    fn frames_round_trip_and_split() {
        let mut buf = Vec::new();
        encode_frame(&ClientMessage::Stop, &mut buf).unwrap();
        for cut in 0..buf.len() {
            assert!(matches!(
                decode_frame::<ClientMessage>(&buf[..cut]),
                Err(DecodeError::Incomplete(_))
            ));
        }
        let (msg, used) = decode_frame::<ClientMessage>(&buf).unwrap();
        assert_eq!((msg, used), (ClientMessage::Stop, buf.len()));
    }

    #[test]
    fn oversized_and_garbage_frames_are_invalid() {
        let huge = (MAX_FRAME_LEN + 1).to_be_bytes();
        assert!(matches!(decode_frame::<ClientMessage>(&huge), Err(DecodeError::Invalid(_))));
        assert!(matches!(
            decode_frame::<ClientMessage>(&[0, 0, 0, 0]),
            Err(DecodeError::Invalid(_))
        ));
        let mut garbage = 3u32.to_be_bytes().to_vec();
        garbage.extend_from_slice(b"{x]");
        assert!(matches!(decode_frame::<ClientMessage>(&garbage), Err(DecodeError::Invalid(_))));
        let mut wrong_type = Vec::new();
        let body = br#"{"type":"start","spec":17,"auth":null}"#;
        wrong_type.extend_from_slice(&(body.len() as u32).to_be_bytes());
        wrong_type.extend_from_slice(body);
        assert!(matches!(decode_frame::<ClientMessage>(&wrong_type), Err(DecodeError::Invalid(_))));
    }

    #[test]
    fn hex_round_trip() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(to_hex(&bytes), "0001abff");
        assert_eq!(from_hex::<4>("0001ABff"), Some(bytes));
        assert_eq!(from_hex::<4>("0001ab"), None);
        assert_eq!(from_hex::<2>("zz00"), None);
    }
}
