//! UDP data: the 16-byte header every datagram carries, the hello that binds a UDP stream to a
//! session, the echo that probes the round trip beside a test (`bandwidth --latency`), and
//! [`ReceiverStats`], the receiver's loss, reordering, duplicate and jitter accounting.
//!
//! Header (big-endian): `seq: u64` (first datagram is 1) then `sent_ns: i64`, the sender's
//! monotonic clock. Only differences of `sent_ns` are used, so the two ends' clocks need not agree.

use wirespeed_model::flow::Flow;
use wirespeed_model::kinds::bandwidth::Totals;

use crate::codec::{byte_flow, flow_byte, DecodeError, SESSION_ID_LEN};

/// Bytes of header at the start of every data datagram.
pub const HEADER_LEN: usize = 16;
/// First bytes of a UDP stream hello (client → server).
pub const HELLO_MAGIC: [u8; 4] = *b"WSPU";
/// First bytes of the answer to a hello (server → client).
pub const HELLO_ACK_MAGIC: [u8; 4] = *b"WSPA";
/// Length of a hello or its answer.
pub const HELLO_LEN: usize = 4 + SESSION_ID_LEN + 3;

/// First bytes of an echo probe (client → server).
pub const ECHO_MAGIC: [u8; 4] = *b"WSPE";
/// First bytes of the answer to an echo probe (server → client).
pub const ECHO_ACK_MAGIC: [u8; 4] = *b"WSPR";
/// Length of an echo probe or its answer (never [`HELLO_LEN`], so the two cannot be confused).
pub const ECHO_LEN: usize = 4 + SESSION_ID_LEN + 4;

/// A round-trip probe sent to the server's UDP port during a test, and its answer. The server
/// answers only a probe naming a session in progress, from that session's client address, and
/// with a datagram of the same size: it is no reflector for anyone else's traffic, and
/// amplifies nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpEcho {
    /// True for the server's answer.
    pub ack: bool,
    /// The session id from `Accepted`.
    pub session: [u8; SESSION_ID_LEN],
    /// The probe's number, echoed back.
    pub seq: u32,
}

impl UdpEcho {
    /// Encodes the probe (or its answer).
    pub fn encode(&self) -> [u8; ECHO_LEN] {
        let mut out = [0u8; ECHO_LEN];
        put_head(&mut out, if self.ack { ECHO_ACK_MAGIC } else { ECHO_MAGIC }, &self.session);
        out[4 + SESSION_ID_LEN..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    /// Decodes a probe or its answer.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let (ack, session) = head(buf, ECHO_LEN, [ECHO_MAGIC, ECHO_ACK_MAGIC], "UDP echo")?;
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&buf[4 + SESSION_ID_LEN..]);
        Ok(Self { ack, session, seq: u32::from_be_bytes(seq) })
    }
}

/// Writes the header for datagram `seq` sent at `sent_ns` into the start of `buf`.
///
/// `buf` must be at least [`HEADER_LEN`] long; the spec's minimum UDP length guarantees it.
pub fn write_header(buf: &mut [u8], seq: u64, sent_ns: i64) {
    buf[..8].copy_from_slice(&seq.to_be_bytes());
    buf[8..16].copy_from_slice(&sent_ns.to_be_bytes());
}

/// Reads `(seq, sent_ns)` from a datagram; `None` if it is too short to hold a header.
pub fn read_header(buf: &[u8]) -> Option<(u64, i64)> {
    let seq = u64::from_be_bytes(buf.get(..8)?.try_into().ok()?);
    let sent = i64::from_be_bytes(buf.get(8..16)?.try_into().ok()?);
    Some((seq, sent))
}

/// How a test's datagrams lay out their header: ours, or iperf3's for interoperating with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// `seq: u64`, `sent_ns: i64` ([`write_header`]).
    #[default]
    Wirespeed,
    /// iperf3's seconds, microseconds and a 32-bit (or, with `--udp-counters-64bit`, 64-bit)
    /// sequence number.
    Iperf3 {
        /// True for 64-bit sequence numbers.
        seq64: bool,
    },
}

impl Wire {
    /// Writes the header of datagram `seq`, sent at `sent_ns`, into the start of `buf`.
    pub fn write(self, buf: &mut [u8], seq: u64, sent_ns: i64) {
        match self {
            Self::Wirespeed => write_header(buf, seq, sent_ns),
            Self::Iperf3 { seq64 } => {
                crate::iperf3::wire::write_udp_header(buf, seq, sent_ns, seq64)
            }
        }
    }

    /// Reads `(seq, sent_ns)`; `None` when the datagram is too short for a header.
    pub fn read(self, buf: &[u8]) -> Option<(u64, i64)> {
        match self {
            Self::Wirespeed => read_header(buf),
            Self::Iperf3 { seq64 } => crate::iperf3::wire::read_udp_header(buf, seq64),
        }
    }
}

/// The datagram that binds a UDP socket to one stream of a session, and its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHello {
    /// True for the server's answer.
    pub ack: bool,
    /// The session id from `Accepted`.
    pub session: [u8; SESSION_ID_LEN],
    /// The stream's flow.
    pub flow: Flow,
    /// Stream number within the flow, from 1.
    pub stream: u16,
}

impl UdpHello {
    /// Encodes the hello (or its answer).
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut out = [0u8; HELLO_LEN];
        put_head(&mut out, if self.ack { HELLO_ACK_MAGIC } else { HELLO_MAGIC }, &self.session);
        out[4 + SESSION_ID_LEN] = flow_byte(self.flow);
        out[5 + SESSION_ID_LEN..].copy_from_slice(&self.stream.to_be_bytes());
        out
    }

    /// Decodes a hello or its answer; datagrams are whole, so short input is invalid.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let (ack, session) = head(buf, HELLO_LEN, [HELLO_MAGIC, HELLO_ACK_MAGIC], "UDP hello")?;
        let flow = byte_flow(buf[4 + SESSION_ID_LEN])?;
        let stream = u16::from_be_bytes([buf[5 + SESSION_ID_LEN], buf[6 + SESSION_ID_LEN]]);
        if stream == 0 {
            return Err(DecodeError::Invalid("stream number 0".into()));
        }
        Ok(Self { ack, session, flow, stream })
    }
}

/// How many sequence numbers behind the highest one the receiver remembers individually.
const WINDOW: u64 = 4096;

/// The receiving end of one UDP stream: counts distinct datagrams and bytes, gaps (loss),
/// late arrivals (out of order), repeats (duplicates), and RFC 3550 interarrival jitter.
///
/// A datagram more than `WINDOW` (4096) sequence numbers late cannot be told from a duplicate; it
/// is counted as out of order and as no longer lost, as iperf3 does.
#[derive(Debug, Clone)]
pub struct ReceiverStats {
    totals: Totals,
    max_seq: u64,
    /// Bit `i` set = `max_seq - i` has been received. Bit 0 is `max_seq` itself.
    seen: Box<[u64; (WINDOW / 64) as usize]>,
    prev_transit_ns: Option<i64>,
    /// The send stamp of the last datagram jitter was taken from.
    prev_sent_ns: Option<i64>,
    jitter_ns: f64,
}

impl Default for ReceiverStats {
    fn default() -> Self {
        Self {
            totals: Totals::default(),
            max_seq: 0,
            seen: Box::new([0; (WINDOW / 64) as usize]),
            prev_transit_ns: None,
            prev_sent_ns: None,
            jitter_ns: 0.0,
        }
    }
}

impl ReceiverStats {
    /// Accounts one datagram of `len` bytes with sequence `seq`, sent at `sent_ns` on the
    /// sender's clock and received at `arrival_ns` on ours.
    pub fn record(&mut self, seq: u64, len: usize, sent_ns: i64, arrival_ns: i64) {
        if seq == 0 {
            return; // not a data sequence number (the first is 1)
        }
        if seq > self.max_seq {
            let advance = seq - self.max_seq;
            self.totals.lost += advance - 1;
            self.shift(advance);
            self.max_seq = seq;
            self.set_bit(0);
        } else {
            let back = self.max_seq - seq;
            if back < WINDOW {
                if self.bit(back) {
                    self.totals.duplicates += 1;
                    return;
                }
                self.set_bit(back);
            }
            self.totals.out_of_order += 1;
            self.totals.lost = self.totals.lost.saturating_sub(1);
        }
        self.totals.packets += 1;
        self.totals.bytes += len as u64;
        // RFC 3550 §6.4.1 / A.8: J += (|D| − J) / 16, with D the change in transit time. A
        // sender's batch (one GSO send or `sendmmsg`) carries one send stamp, and datagrams
        // coalesced on receive share an arrival: within a batch the differences say only how
        // it was cut (0.14 ns of "jitter"), so jitter is taken once a batch, from its first
        // datagram to arrive.
        if self.prev_sent_ns == Some(sent_ns) {
            return;
        }
        self.prev_sent_ns = Some(sent_ns);
        let transit = arrival_ns.wrapping_sub(sent_ns);
        if let Some(prev) = self.prev_transit_ns {
            let d = transit.wrapping_sub(prev).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.prev_transit_ns = Some(transit);
        self.totals.jitter_ns = self.jitter_ns;
    }

    /// The running totals.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    fn shift(&mut self, by: u64) {
        if by >= WINDOW {
            self.seen.fill(0);
            return;
        }
        let words = (by / 64) as usize;
        let bits = (by % 64) as u32;
        let n = self.seen.len();
        for i in (0..n).rev() {
            let src = i as isize - words as isize;
            let hi = if src >= 0 { self.seen[src as usize] << bits } else { 0 };
            let lo =
                if bits > 0 && src >= 1 { self.seen[src as usize - 1] >> (64 - bits) } else { 0 };
            self.seen[i] = hi | lo;
        }
    }

    fn bit(&self, back: u64) -> bool {
        self.seen[(back / 64) as usize] & (1 << (back % 64)) != 0
    }

    fn set_bit(&mut self, back: u64) {
        self.seen[(back / 64) as usize] |= 1 << (back % 64);
    }
}

/// Writes the head the hello and the echo share: their magic, then the session.
fn put_head(out: &mut [u8], magic: [u8; 4], session: &[u8; SESSION_ID_LEN]) {
    out[..4].copy_from_slice(&magic);
    out[4..4 + SESSION_ID_LEN].copy_from_slice(session);
}

/// Reads that head from a datagram that must be `len` bytes whole: whether it is the answer
/// (`magics[1]`) rather than the question (`magics[0]`), and the session it names.
fn head(
    buf: &[u8],
    len: usize,
    magics: [[u8; 4]; 2],
    what: &str,
) -> Result<(bool, [u8; SESSION_ID_LEN]), DecodeError> {
    if buf.len() != len {
        return Err(DecodeError::Invalid(format!("{what} of {} bytes", buf.len())));
    }
    let ack = match &buf[..4] {
        m if m == magics[0] => false,
        m if m == magics[1] => true,
        _ => return Err(DecodeError::Invalid(format!("not a {what}"))),
    };
    let mut session = [0u8; SESSION_ID_LEN];
    session.copy_from_slice(&buf[4..4 + SESSION_ID_LEN]);
    Ok((ack, session))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(seqs: &[u64]) -> Totals {
        let mut r = ReceiverStats::default();
        for &s in seqs {
            r.record(s, 100, 0, 0);
        }
        r.totals()
    }

    #[test]
    fn header_round_trip() {
        let mut buf = [0u8; 32];
        write_header(&mut buf, 42, -7);
        assert_eq!(read_header(&buf), Some((42, -7)));
        assert_eq!(read_header(&buf[..15]), None);
    }

    #[test]
    fn hello_round_trip() {
        let h = UdpHello { ack: false, session: [1; 16], flow: Flow::Upload, stream: 2 };
        assert_eq!(UdpHello::decode(&h.encode()).unwrap(), h);
        let a = UdpHello { ack: true, ..h };
        assert_eq!(UdpHello::decode(&a.encode()).unwrap(), a);
        assert!(UdpHello::decode(&[0u8; HELLO_LEN]).is_err());
        assert!(UdpHello::decode(b"WSPU").is_err());
    }

    #[test]
    fn echo_round_trip() {
        let e = UdpEcho { ack: false, session: [7; 16], seq: 0xDEAD_BEEF };
        assert_eq!(UdpEcho::decode(&e.encode()).unwrap(), e);
        let a = UdpEcho { ack: true, ..e };
        assert_eq!(UdpEcho::decode(&a.encode()).unwrap(), a);
        assert_ne!(ECHO_LEN, HELLO_LEN);
        assert!(UdpEcho::decode(&[0u8; ECHO_LEN]).is_err());
        assert!(UdpEcho::decode(
            &UdpHello { ack: false, session: [7; 16], flow: Flow::Upload, stream: 1 }.encode()
        )
        .is_err());
    }

    #[test]
    fn in_order_stream_has_no_loss() {
        let t = feed(&[1, 2, 3, 4]);
        assert_eq!((t.packets, t.bytes, t.lost, t.out_of_order, t.duplicates), (4, 400, 0, 0, 0));
    }

    #[test]
    fn gap_then_late_arrival_is_reordering_not_loss() {
        let t = feed(&[1, 2, 5, 3]);
        assert_eq!((t.packets, t.lost, t.out_of_order), (4, 1, 1));
    }

    #[test]
    fn duplicates_are_counted_once_and_not_as_data() {
        let t = feed(&[1, 2, 2, 3, 1]);
        assert_eq!((t.packets, t.duplicates, t.lost, t.out_of_order), (3, 2, 0, 0));
    }

    #[test]
    fn window_shift_across_words() {
        let mut seqs: Vec<u64> = (1..=200).collect();
        seqs.push(70); // duplicate far back, across a word boundary
        seqs.push(400);
        seqs.push(300); // late, inside the window
        seqs.push(300); // duplicate of the late one
        let t = feed(&seqs);
        assert_eq!(t.duplicates, 2);
        assert_eq!(t.packets, 202);
        assert_eq!(t.lost, 198);
        assert_eq!(t.out_of_order, 1);
    }

    #[test]
    fn very_late_datagram_counts_as_reordered() {
        let t = feed(&[1, 10_000, 2]);
        assert_eq!((t.packets, t.lost, t.out_of_order), (3, 9_997, 1));
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut r = ReceiverStats::default();
        // transit times 0, 16, 16: D = 16 then 0 → J = 1, then 15/16.
        r.record(1, 10, 0, 0);
        r.record(2, 10, 100, 116);
        assert!((r.totals().jitter_ns - 1.0).abs() < 1e-9);
        r.record(3, 10, 200, 216);
        assert!((r.totals().jitter_ns - 15.0 / 16.0).abs() < 1e-9);
        // A negative transit (clock offset) is fine: only differences count.
        r.record(4, 10, 1_000, -5_000);
        assert!(r.totals().jitter_ns > 300.0);
    }

    /// An unpaced `pps` run reported 0.14 ns of jitter: the datagrams of one GSO batch share
    /// a send stamp and, coalesced, an arrival, so most differences were 0.
    #[test]
    fn jitter_is_taken_once_a_batch() {
        let mut r = ReceiverStats::default();
        // Two batches of 64, sent 1 µs apart, the second arriving 400 ns later than the first
        // would have: one transit change of 400 ns, whatever the batches' inner spacing.
        for i in 0..64 {
            r.record(1 + i, 10, 0, 5_000 + i as i64);
        }
        for i in 0..64 {
            r.record(65 + i, 10, 1_000, 6_400 + i as i64);
        }
        assert_eq!(r.totals().packets, 128);
        assert!((r.totals().jitter_ns - 400.0 / 16.0).abs() < 1e-9, "{}", r.totals().jitter_ns);
    }
}
