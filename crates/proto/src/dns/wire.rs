//! DNS messages as a load generator sees them (RFC 1035 §4.1; EDNS from RFC 6891). A query
//! is encoded once into a [`Query`] template whose ID is patched on every send; an answer is
//! read in place: [`Header`] in a few byte loads, [`question_matches`] against the template,
//! and [`full_rcode`], which walks to the OPT record only when the header says there is an
//! additional section. Nothing here allocates per answer, and no input can make it panic.

/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 12;
/// Longest name on the wire, length bytes included.
pub const MAX_NAME_LEN: usize = 255;
/// Longest label.
pub const MAX_LABEL_LEN: usize = 63;
/// QR: the message is a response.
pub const FLAG_QR: u16 = 0x8000;
/// AA: an authoritative answer.
pub const FLAG_AA: u16 = 0x0400;
/// TC: the answer was truncated to fit a UDP datagram.
pub const FLAG_TC: u16 = 0x0200;
/// RD: recursion desired (dnsperf sets it on every query).
pub const FLAG_RD: u16 = 0x0100;
/// The OPT pseudo-record's type.
pub const TYPE_OPT: u16 = 41;
/// The Internet class.
pub const CLASS_IN: u16 = 1;
/// The DO bit in the OPT record's flags: DNSSEC records wanted.
pub const EDNS_DO: u16 = 0x8000;

/// The EDNS0 OPT record a query carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// Largest UDP answer the client accepts.
    pub udp_size: u16,
    /// Set DO: ask for DNSSEC records.
    pub dnssec_ok: bool,
}

/// A query encoded once, with ID 0; `Query::with_id` writes the ID in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The whole message.
    pub bytes: Vec<u8>,
    /// Where the question ends (header, name, type and class), so an answer's question can be
    /// compared with it.
    pub question_end: usize,
}

impl Query {
    /// Encodes a one-question query for `name` (presentation format, `\DDD` and `\X` escapes,
    /// an optional trailing dot) of `qtype`, class IN.
    pub fn encode(name: &str, qtype: u16, rd: bool, edns: Option<Edns>) -> Result<Self, String> {
        let mut bytes = Vec::with_capacity(HEADER_LEN + name.len() + 2 + 4 + 11);
        let flags = if rd { FLAG_RD } else { 0 };
        let arcount = u16::from(edns.is_some());
        for v in [0, flags, 1, 0, 0, arcount] {
            bytes.extend_from_slice(&v.to_be_bytes());
        }
        encode_name(name, &mut bytes)?;
        bytes.extend_from_slice(&qtype.to_be_bytes());
        bytes.extend_from_slice(&CLASS_IN.to_be_bytes());
        let question_end = bytes.len();
        if let Some(e) = edns {
            bytes.push(0); // the root name
            bytes.extend_from_slice(&TYPE_OPT.to_be_bytes());
            bytes.extend_from_slice(&e.udp_size.to_be_bytes());
            bytes.extend_from_slice(&[0, 0]); // extended RCODE, version 0
            bytes.extend_from_slice(&(if e.dnssec_ok { EDNS_DO } else { 0 }).to_be_bytes());
            bytes.extend_from_slice(&[0, 0]); // no options
        }
        Ok(Self { bytes, question_end })
    }

    /// The question section: what a matching answer must repeat.
    pub fn question(&self) -> &[u8] {
        &self.bytes[HEADER_LEN..self.question_end]
    }
}

/// Writes `id` into a message's first two bytes (a message shorter than that is left alone).
pub fn set_id(msg: &mut [u8], id: u16) {
    if let Some(head) = msg.get_mut(..2) {
        head.copy_from_slice(&id.to_be_bytes());
    }
}

/// Appends `text` (presentation format) as a wire-format name.
pub fn encode_name(text: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let start = out.len();
    let bytes = text.as_bytes();
    if bytes == b"." {
        out.push(0);
        return Ok(());
    }
    if bytes.is_empty() {
        return Err("the name is empty".into());
    }
    let mut label: Vec<u8> = Vec::with_capacity(MAX_LABEL_LEN);
    let mut i = 0;
    let finish = |label: &mut Vec<u8>, out: &mut Vec<u8>| -> Result<(), String> {
        if label.is_empty() {
            return Err(format!("'{text}' has an empty label"));
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(format!("'{text}' has a label longer than {MAX_LABEL_LEN} bytes"));
        }
        out.push(label.len() as u8);
        out.append(label);
        Ok(())
    };
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                finish(&mut label, out)?;
                i += 1;
                if i == bytes.len() {
                    break; // a trailing dot: the name is already absolute
                }
            }
            b'\\' => {
                let rest = &bytes[i + 1..];
                match rest {
                    [a, b, c, ..]
                        if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() =>
                    {
                        let v = u32::from(a - b'0') * 100
                            + u32::from(b - b'0') * 10
                            + u32::from(c - b'0');
                        let v =
                            u8::try_from(v).map_err(|_| format!("'{text}': \\{v} is above 255"))?;
                        label.push(v);
                        i += 4;
                    }
                    [x, ..] => {
                        label.push(*x);
                        i += 2;
                    }
                    [] => return Err(format!("'{text}' ends with a lone backslash")),
                }
            }
            b => {
                label.push(b);
                i += 1;
            }
        }
    }
    if !label.is_empty() {
        finish(&mut label, out)?;
    }
    out.push(0);
    if out.len() - start > MAX_NAME_LEN {
        out.truncate(start);
        return Err(format!("'{text}' is longer than {MAX_NAME_LEN} bytes on the wire"));
    }
    Ok(())
}

/// Why an answer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// Fewer than 12 bytes.
    #[error("shorter than a DNS header")]
    Short,
    /// QR is not set: a query, not an answer.
    #[error("not a response (QR=0)")]
    NotResponse,
    /// A name or record runs past the end, or a compression pointer loops.
    #[error("a name or record runs past the end of the message")]
    Malformed,
}

/// The fixed header of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Message ID.
    pub id: u16,
    /// Flags and the 4-bit RCODE.
    pub flags: u16,
    /// Questions.
    pub qdcount: u16,
    /// Answer records.
    pub ancount: u16,
    /// Authority records.
    pub nscount: u16,
    /// Additional records.
    pub arcount: u16,
}

impl Header {
    /// Reads the header of any message.
    pub fn read(msg: &[u8]) -> Result<Self, AnswerError> {
        let h = msg.get(..HEADER_LEN).ok_or(AnswerError::Short)?;
        let word = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        Ok(Self {
            id: word(0),
            flags: word(2),
            qdcount: word(4),
            ancount: word(6),
            nscount: word(8),
            arcount: word(10),
        })
    }

    /// Reads the header of a message that must be an answer (QR=1).
    pub fn read_answer(msg: &[u8]) -> Result<Self, AnswerError> {
        let h = Self::read(msg)?;
        if h.flags & FLAG_QR == 0 {
            return Err(AnswerError::NotResponse);
        }
        Ok(h)
    }

    /// TC: truncated.
    pub fn truncated(&self) -> bool {
        self.flags & FLAG_TC != 0
    }

    /// The 4-bit RCODE in the header.
    pub fn rcode(&self) -> u16 {
        self.flags & 0x000f
    }

    /// The opcode (0: QUERY).
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0x0f) as u8
    }
}

/// True when `msg` (an answer) carries exactly the question `question` (a template's
/// [`Query::question`]), names compared without regard to ASCII case (servers may echo
/// 0x20-mixed case back as they received it, or in their own case).
pub fn question_matches(msg: &[u8], h: &Header, question: &[u8]) -> bool {
    if h.qdcount != 1 {
        return false;
    }
    match msg.get(HEADER_LEN..HEADER_LEN + question.len()) {
        Some(got) => got.eq_ignore_ascii_case(question),
        None => false,
    }
}

/// Returns the offset just past the name that starts at `at`, following no pointers (a
/// pointer ends a name in two bytes).
pub fn skip_name(msg: &[u8], mut at: usize) -> Result<usize, AnswerError> {
    let mut read = 0usize;
    loop {
        let len = *msg.get(at).ok_or(AnswerError::Malformed)?;
        match len {
            0 => return Ok(at + 1),
            l if l & 0xc0 == 0xc0 => {
                msg.get(at + 1).ok_or(AnswerError::Malformed)?;
                return Ok(at + 2);
            }
            l if l & 0xc0 != 0 => return Err(AnswerError::Malformed),
            l => {
                read += usize::from(l) + 1;
                if read > MAX_NAME_LEN {
                    return Err(AnswerError::Malformed);
                }
                at += usize::from(l) + 1;
            }
        }
    }
}

/// Returns the offset just past the resource record at `at`, with its type, and where its
/// class and TTL fields start.
fn skip_record(msg: &[u8], at: usize) -> Result<(usize, u16, usize), AnswerError> {
    let fixed = skip_name(msg, at)?;
    let f = msg.get(fixed..fixed + 10).ok_or(AnswerError::Malformed)?;
    let rtype = u16::from_be_bytes([f[0], f[1]]);
    let rdlen = usize::from(u16::from_be_bytes([f[8], f[9]]));
    let end = fixed + 10 + rdlen;
    if end > msg.len() {
        return Err(AnswerError::Malformed);
    }
    Ok((end, rtype, fixed + 2))
}

/// The offset just past the question section.
pub fn question_end(msg: &[u8], h: &Header) -> Result<usize, AnswerError> {
    let mut at = HEADER_LEN;
    for _ in 0..h.qdcount {
        at = skip_name(msg, at)? + 4;
        if at > msg.len() {
            return Err(AnswerError::Malformed);
        }
    }
    Ok(at)
}

/// The OPT record of a message, if it has one: (UDP size, extended RCODE byte, version,
/// flags).
pub fn find_opt(msg: &[u8], h: &Header) -> Result<Option<(u16, u8, u8, u16)>, AnswerError> {
    if h.arcount == 0 {
        return Ok(None);
    }
    let mut at = question_end(msg, h)?;
    for _ in 0..u32::from(h.ancount) + u32::from(h.nscount) {
        at = skip_record(msg, at)?.0;
    }
    for _ in 0..h.arcount {
        let (end, rtype, class_at) = skip_record(msg, at)?;
        if rtype == TYPE_OPT {
            let f = &msg[class_at..class_at + 6];
            let size = u16::from_be_bytes([f[0], f[1]]);
            return Ok(Some((size, f[2], f[3], u16::from_be_bytes([f[4], f[5]]))));
        }
        at = end;
    }
    Ok(None)
}

/// How many OPT records the additional section holds (RFC 6891 §6.1.1 allows one).
pub fn count_opt(msg: &[u8], h: &Header) -> Result<usize, AnswerError> {
    if h.arcount < 2 {
        return Ok(usize::from(find_opt(msg, h)?.is_some()));
    }
    let mut at = question_end(msg, h)?;
    for _ in 0..u32::from(h.ancount) + u32::from(h.nscount) {
        at = skip_record(msg, at)?.0;
    }
    let mut n = 0;
    for _ in 0..h.arcount {
        let (end, rtype, _) = skip_record(msg, at)?;
        n += usize::from(rtype == TYPE_OPT);
        at = end;
    }
    Ok(n)
}

/// The full 12-bit RCODE: the header's four bits, and the OPT record's eight above them
/// (BADVERS is 16). A message without an additional section costs nothing beyond the header.
pub fn full_rcode(msg: &[u8], h: &Header) -> Result<u16, AnswerError> {
    match find_opt(msg, h)? {
        Some((_, ext, _, _)) => Ok(u16::from(ext) << 4 | h.rcode()),
        None => Ok(h.rcode()),
    }
}

/// A response code's name: dnsperf's names for the header's codes, RFC 6891 and RFC 8945's
/// above 15.
pub fn rcode_name(rcode: u16) -> String {
    const NAMES: [&str; 16] = [
        "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
        "NXRRSET", "NOTAUTH", "NOTZONE", "rcode11", "rcode12", "rcode13", "rcode14", "rcode15",
    ];
    match rcode {
        0..=15 => NAMES[usize::from(rcode)].to_string(),
        16 => "BADVERS".into(),
        17 => "BADKEY".into(),
        18 => "BADTIME".into(),
        19 => "BADMODE".into(),
        20 => "BADNAME".into(),
        21 => "BADALG".into(),
        22 => "BADTRUNC".into(),
        23 => "BADCOOKIE".into(),
        n => format!("rcode{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_matches_the_reference_bytes() {
        // www.example.test A, ID 0x1234, RD, EDNS 1232: the 45 bytes of docs' example.
        let q = Query::encode(
            "www.example.test",
            1,
            true,
            Some(Edns { udp_size: 1232, dnssec_ok: false }),
        )
        .unwrap();
        let mut bytes = q.bytes.clone();
        set_id(&mut bytes, 0x1234);
        let want: Vec<u8> = [
            0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 3, b'w', b'w',
            b'w', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 4, b't', b'e', b's', b't', 0, 0x00,
            0x01, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        .to_vec();
        assert_eq!(bytes, want);
        assert_eq!(q.question_end, 34);
        let plain = Query::encode("www.example.test.", 1, true, None).unwrap();
        assert_eq!(plain.bytes.len(), 34);
        assert_eq!(plain.question(), &want[12..34]);
    }

    #[test]
    fn names_with_escapes_and_limits() {
        let mut out = Vec::new();
        encode_name("a\\.b.c\\065", &mut out).unwrap();
        assert_eq!(out, b"\x03a.b\x02cA\x00");
        out.clear();
        encode_name(".", &mut out).unwrap();
        assert_eq!(out, b"\x00");
        for bad in ["", "a..b", "..", "a\\", "a\\300", &"x".repeat(64), &"abcdefg.".repeat(40)] {
            let mut out = Vec::new();
            assert!(encode_name(bad, &mut out).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn answers_are_read_in_place() {
        let q = Query::encode(
            "Www.Example.Test",
            16,
            true,
            Some(Edns { udp_size: 4096, dnssec_ok: true }),
        )
        .unwrap();
        // An answer: QR, the question in other case, one OPT with extended RCODE 1 (BADVERS).
        let mut a = q.bytes.clone();
        a[2] |= 0x80;
        a[3] = 0x00;
        a[12..q.question_end].make_ascii_lowercase();
        a[q.question_end + 5] = 1;
        let h = Header::read_answer(&a).unwrap();
        assert!(question_matches(&a, &h, q.question()));
        assert_eq!(full_rcode(&a, &h).unwrap(), 16);
        assert_eq!(rcode_name(16), "BADVERS");
        assert_eq!(find_opt(&a, &h).unwrap(), Some((4096, 1, 0, EDNS_DO)));
        // Another question does not match; a query is no answer; short messages fail.
        let other = Query::encode("www.example.test", 1, true, None).unwrap();
        assert!(!question_matches(&a, &h, other.question()));
        assert_eq!(Header::read_answer(&q.bytes), Err(AnswerError::NotResponse));
        assert_eq!(Header::read(&a[..11]), Err(AnswerError::Short));
        // An OPT count whose record is cut off.
        let cut = &a[..a.len() - 3];
        assert_eq!(full_rcode(cut, &Header::read(cut).unwrap()), Err(AnswerError::Malformed));
    }
}
