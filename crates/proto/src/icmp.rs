//! ICMP and ICMPv6, as `ping` and `trace` need them: echo requests to send, and the messages
//! that come back — echo replies, and the errors (time exceeded, destination unreachable)
//! that quote the start of the probe that caused them, so a probe of any protocol (ICMP
//! echo, UDP, TCP) can be matched to its answer. Sans I/O; every length is checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::codec::DecodeError;

/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;

/// Length of an echo request's header (type, code, checksum, identifier, sequence).
pub const ECHO_HEADER_LEN: usize = 8;

/// The Internet checksum (RFC 1071) of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request with `payload`. For IPv4 the checksum is filled in; for IPv6 it is left
/// zero because the kernel computes it (it covers a pseudo-header only the kernel knows).
pub fn echo_request(v6: bool, id: u16, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(ECHO_HEADER_LEN + payload.len());
    m.extend_from_slice(&[if v6 { 128 } else { 8 }, 0, 0, 0]);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(payload);
    if !v6 {
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
    }
    m
}

/// The start of the packet an ICMP error is about: enough to tell which probe it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quoted {
    /// The probe's IP protocol (ICMP, UDP, TCP, ICMPv6).
    pub protocol: u8,
    /// Where the probe was going.
    pub destination: IpAddr,
    /// The probe's TTL or hop limit as the reporting router saw it.
    pub ttl: u8,
    /// UDP/TCP source port, or the ICMP echo identifier.
    pub first: u16,
    /// UDP/TCP destination port, or the ICMP echo sequence number.
    pub second: u16,
}

/// An ICMP message that matters to a prober.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpMessage {
    /// An answer to an echo request.
    EchoReply {
        /// Identifier (the kernel's for ping sockets).
        id: u16,
        /// Sequence number.
        seq: u16,
        /// Payload bytes after the 8-byte header.
        payload_len: usize,
    },
    /// A router dropped the probe because its TTL ran out (what traceroute listens for).
    TimeExceeded(Quoted),
    /// The probe could not be delivered; `code` says why (port unreachable is the end of a
    /// UDP traceroute).
    Unreachable {
        /// The ICMP code.
        code: u8,
        /// The probe.
        quoted: Quoted,
    },
    /// Anything else (our own echo requests seen on a raw socket, redirects, …).
    Other,
}

/// Why an ICMP destination-unreachable message was sent, in words.
pub fn unreachable_reason(v6: bool, code: u8) -> &'static str {
    match (v6, code) {
        (false, 0) | (true, 0) => "network unreachable",
        (false, 1) | (true, 3) => "host unreachable",
        (false, 2) => "protocol unreachable",
        (false, 3) | (true, 4) => "port unreachable",
        (false, 4) => "fragmentation needed",
        (false, 9 | 10 | 13) | (true, 1) => "administratively prohibited",
        _ => "unreachable",
    }
}

fn invalid(what: &str) -> DecodeError {
    DecodeError::Invalid(what.to_string())
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, DecodeError> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]])).ok_or_else(|| invalid("short"))
}

/// Splits an IPv4 packet into (header TTL, protocol, source, destination, payload).
fn ipv4(packet: &[u8]) -> Result<(u8, u8, Ipv4Addr, Ipv4Addr, &[u8]), DecodeError> {
    let first = *packet.first().ok_or_else(|| invalid("empty IPv4 packet"))?;
    if first >> 4 != 4 {
        return Err(invalid("not an IPv4 packet"));
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 || packet.len() < ihl {
        return Err(invalid("IPv4 header length out of range"));
    }
    let addr =
        |at: usize| Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
    Ok((packet[8], packet[9], addr(12), addr(16), &packet[ihl..]))
}

/// The probe an ICMP error quotes: an IP header and at least 8 bytes of what followed it.
fn quoted(v6: bool, inner: &[u8]) -> Result<Quoted, DecodeError> {
    let (ttl, protocol, destination, rest) = if v6 {
        if inner.len() < 40 || inner[0] >> 4 != 6 {
            return Err(invalid("quoted IPv6 header too short"));
        }
        let mut dst = [0u8; 16];
        dst.copy_from_slice(&inner[24..40]);
        (inner[7], inner[6], IpAddr::V6(Ipv6Addr::from(dst)), &inner[40..])
    } else {
        let (ttl, protocol, _, dst, rest) = ipv4(inner)?;
        (ttl, protocol, IpAddr::V4(dst), rest)
    };
    if rest.len() < 8 {
        return Err(invalid("quoted probe shorter than 8 bytes"));
    }
    // For UDP and TCP the first four bytes are the ports; for an echo request the identifier
    // and sequence number are at 4..8.
    let (first, second) = match protocol {
        PROTO_ICMP | PROTO_ICMPV6 => (u16_at(rest, 4)?, u16_at(rest, 6)?),
        _ => (u16_at(rest, 0)?, u16_at(rest, 2)?),
    };
    Ok(Quoted { protocol, destination, ttl, first, second })
}

/// Parses an ICMP (`v6` false) or ICMPv6 message that starts at `msg[0]` (what a datagram
/// ping socket, or a raw ICMPv6 socket, delivers).
pub fn parse_message(v6: bool, msg: &[u8]) -> Result<IcmpMessage, DecodeError> {
    if msg.len() < ECHO_HEADER_LEN {
        return Err(DecodeError::Invalid(format!("ICMP message of {} bytes", msg.len())));
    }
    let (kind, code) = (msg[0], msg[1]);
    let body = &msg[ECHO_HEADER_LEN..];
    Ok(match (v6, kind) {
        (false, 0) | (true, 129) => IcmpMessage::EchoReply {
            id: u16_at(msg, 4)?,
            seq: u16_at(msg, 6)?,
            payload_len: body.len(),
        },
        (false, 11) | (true, 3) => IcmpMessage::TimeExceeded(quoted(v6, body)?),
        (false, 3) | (true, 1) => IcmpMessage::Unreachable { code, quoted: quoted(v6, body)? },
        _ => IcmpMessage::Other,
    })
}

/// Parses what a raw IPv4 ICMP socket delivers: the IP header, then the message. Returns the
/// sender, the packet's TTL and the message.
pub fn parse_ipv4_packet(packet: &[u8]) -> Result<(Ipv4Addr, u8, IcmpMessage), DecodeError> {
    let (ttl, protocol, src, _, rest) = ipv4(packet)?;
    if protocol != PROTO_ICMP {
        return Err(invalid("not an ICMP packet"));
    }
    Ok((src, ttl, parse_message(false, rest)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_a_request_verifies_to_zero() {
        let m = echo_request(false, 0x1234, 7, b"abcdefg");
        assert_eq!(checksum(&m), 0);
        assert_eq!(m[0], 8);
        assert_eq!(&m[4..8], &[0x12, 0x34, 0, 7]);
        // The RFC 1071 example.
        assert_eq!(checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), !0xddf2);
    }

    fn ipv4_header(protocol: u8, ttl: u8, src: [u8; 4], dst: [u8; 4], extra: usize) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, (20 + extra) as u8, 0, 0, 0, 0, ttl, protocol, 0, 0];
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        h
    }

    #[test]
    fn an_echo_reply_in_a_raw_packet() {
        let mut reply = echo_request(false, 42, 3, &[0; 56]);
        reply[0] = 0;
        let mut p = ipv4_header(PROTO_ICMP, 61, [192, 0, 2, 1], [192, 0, 2, 2], reply.len());
        p.extend_from_slice(&reply);
        let (src, ttl, m) = parse_ipv4_packet(&p).unwrap();
        assert_eq!((src, ttl), (Ipv4Addr::new(192, 0, 2, 1), 61));
        assert_eq!(m, IcmpMessage::EchoReply { id: 42, seq: 3, payload_len: 56 });
    }

    #[test]
    fn time_exceeded_quotes_a_udp_probe() {
        let probe_udp = [0x9c, 0x40, 0x82, 0x9b, 0, 8, 0, 0];
        let mut inner = ipv4_header(PROTO_UDP, 1, [10, 0, 0, 1], [198, 51, 100, 7], 8);
        inner.extend_from_slice(&probe_udp);
        let mut msg = vec![11, 0, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(&inner);
        let m = parse_message(false, &msg).unwrap();
        assert_eq!(
            m,
            IcmpMessage::TimeExceeded(Quoted {
                protocol: PROTO_UDP,
                destination: IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)),
                ttl: 1,
                first: 40000,
                second: 33435,
            })
        );
    }

    #[test]
    fn an_icmpv6_unreachable_quotes_an_echo() {
        let mut inner = vec![0x60, 0, 0, 0, 0, 16, PROTO_ICMPV6, 1];
        inner.extend_from_slice(&[0; 16]);
        inner.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        inner.extend_from_slice(&echo_request(true, 9, 5, &[1; 8]));
        let mut msg = vec![1, 4, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(&inner);
        let IcmpMessage::Unreachable { code, quoted } = parse_message(true, &msg).unwrap() else {
            panic!("not unreachable")
        };
        assert_eq!((code, quoted.first, quoted.second), (4, 9, 5));
        assert_eq!(unreachable_reason(true, code), "port unreachable");
    }

    #[test]
    fn truncated_and_foreign_bytes_are_errors_not_panics() {
        assert!(parse_message(false, &[0, 0, 0]).is_err());
        assert!(parse_message(false, &[11, 0, 0, 0, 0, 0, 0, 0, 0x45]).is_err());
        assert!(parse_ipv4_packet(&[0x4f; 10]).is_err());
        assert!(parse_ipv4_packet(&[0x60; 40]).is_err());
        assert_eq!(parse_message(true, &[135, 0, 0, 0, 0, 0, 0, 0]).unwrap(), IcmpMessage::Other);
    }
}
