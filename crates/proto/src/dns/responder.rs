//! The DNS fixture's answers, as an authoritative server gives them: the records of the name
//! and type asked for (or its CNAME, or a wildcard's), NODATA and NXDOMAIN with the zone's SOA,
//! REFUSED outside the zone and for zone transfers, FORMERR for queries it cannot read or with
//! two OPT records, NOTIMP for other opcodes, BADVERS for an EDNS version other than 0, the DO
//! bit echoed (RFC 3225), and TC=1 with an empty answer when a UDP answer would exceed 512 bytes or the
//! client's EDNS size. Answers are written into a reused buffer; nothing a client sends can
//! make it panic.

use super::qtype::{ANY as TYPE_ANY, CNAME as TYPE_CNAME, SOA as TYPE_SOA};
use super::wire::{
    self, Header, CLASS_IN, FLAG_AA, FLAG_QR, FLAG_RD, FLAG_TC, HEADER_LEN, TYPE_OPT,
};
use super::zone::Zone;

/// The UDP size the fixture announces in its own OPT record.
pub const FIXTURE_UDP_SIZE: u16 = 1232;
/// The largest answer over UDP without EDNS (RFC 1035 §4.2.1).
pub const PLAIN_UDP_LIMIT: usize = 512;

/// The DO ("DNSSEC OK") bit of an OPT record's flags.
const EDNS_DO: u16 = 0x8000;
/// Zone transfers (RFC 5936, RFC 1995): not something a fixture offers.
const TYPE_IXFR: u16 = 251;
const TYPE_AXFR: u16 = 252;

const FORMERR: u16 = 1;
const NXDOMAIN: u16 = 3;
const NOTIMP: u16 = 4;
const REFUSED: u16 = 5;

/// Writes the answer to `query` into `out`; false when the message deserves no answer at all
/// (shorter than a header, or itself an answer). `udp` applies the size limit that TC marks.
pub fn respond(query: &[u8], zone: &Zone, udp: bool, out: &mut Vec<u8>) -> bool {
    out.clear();
    let Ok(h) = Header::read(query) else { return false };
    if h.flags & FLAG_QR != 0 {
        return false;
    }
    if let Some(asked) = admit(query, &h, out) {
        answer(query, &asked, zone, udp, out);
    }
    true
}

/// A question the zone is asked: where it ends in the query, and what its OPT said.
struct Asked {
    id: u16,
    /// The reply's flags so far: QR, and the query's opcode and RD.
    base: u16,
    question_end: usize,
    /// The OPT record's (size, extended rcode, version, flags), if any.
    opt: Option<(u16, u8, u8, u16)>,
    dnssec_ok: bool,
}

/// Checks the query's form (one plain question, opcode QUERY, at most one OPT, EDNS version
/// 0); writes the error answer to a query that fails, or returns the question to answer.
fn admit(query: &[u8], h: &Header, out: &mut Vec<u8>) -> Option<Asked> {
    // The reply keeps the ID, the opcode and RD; everything else is ours to set.
    let base = FLAG_QR | (h.flags & (0x7800 | FLAG_RD));
    let question_end = match wire::question_end(query, h) {
        Ok(end) if h.qdcount == 1 && plain_name(query) => end,
        _ => {
            header(out, h.id, base | FORMERR, 0);
            return None;
        }
    };
    let question = &query[HEADER_LEN..question_end];
    if h.opcode() != 0 {
        header(out, h.id, base | NOTIMP, 1);
        out.extend_from_slice(question);
        return None;
    }
    // RFC 6891 §6.1.1: more than one OPT record is a format error.
    if h.arcount > 1 && wire::count_opt(query, h).map_or(true, |n| n > 1) {
        header(out, h.id, base | FORMERR, 1);
        out.extend_from_slice(question);
        return None;
    }
    let opt = wire::find_opt(query, h).ok().flatten();
    // RFC 3225: the DO bit is copied into the answer's OPT.
    let dnssec_ok = opt.is_some_and(|(.., flags)| flags & EDNS_DO != 0);
    if opt.is_some_and(|(_, _, version, _)| version != 0) {
        // BADVERS (16): extended RCODE 1 over header RCODE 0.
        header(out, h.id, base, 1);
        out.extend_from_slice(question);
        push_opt(out, 1, dnssec_ok);
        return None;
    }
    Some(Asked { id: h.id, base, question_end, opt, dnssec_ok })
}

/// Answers an admitted question from `zone`: REFUSED outside it and for transfers; else its
/// records (a wildcard's, or a CNAME), or NODATA/NXDOMAIN with the SOA; truncated (TC) when
/// a UDP answer would pass the asker's size.
fn answer(query: &[u8], q: &Asked, zone: &Zone, udp: bool, out: &mut Vec<u8>) {
    let (base, has_opt) = (q.base, q.opt.is_some());
    let limit = match q.opt {
        Some((size, ..)) => usize::from(size).max(PLAIN_UDP_LIMIT),
        None => PLAIN_UDP_LIMIT,
    };
    let opt_len = if has_opt { 11 } else { 0 };
    let question = &query[HEADER_LEN..q.question_end];
    let name_len = question.len() - 4;
    let mut lower = [0u8; wire::MAX_NAME_LEN + 1];
    let name = &mut lower[..name_len];
    name.copy_from_slice(&question[..name_len]);
    name.make_ascii_lowercase();
    let name = &*name;
    let qtype = u16::from_be_bytes([question[name_len], question[name_len + 1]]);
    let qclass = u16::from_be_bytes([question[name_len + 2], question[name_len + 3]]);
    let outside = !super::zone::ends_with_name(name, &zone.origin)
        || (qclass != CLASS_IN && qclass != TYPE_ANY);
    // Transfers are refused, as a server that allows none does; NODATA would claim the zone
    // has no such thing.
    if outside || qtype == TYPE_AXFR || qtype == TYPE_IXFR {
        header(out, q.id, base | REFUSED, 1);
        out.extend_from_slice(question);
        finish_opt(out, has_opt, q.dnssec_ok);
        return;
    }
    header(out, q.id, base | FLAG_AA, 1);
    out.extend_from_slice(question);
    let exists = zone.names.contains(name);
    // RFC 4592: a name that does not exist takes the records of the wildcard (`*`) below its
    // closest encloser, if there is one, under its own name.
    let wildcard = if exists { None } else { zone.wildcard_for(name) };
    let records = match wildcard {
        Some(w) => w,
        None => zone.records.get(name).map(Vec::as_slice).unwrap_or_default(),
    };
    let put = |out: &mut Vec<u8>, rtype: u16| -> u16 {
        let mut n = 0;
        for r in records
            .iter()
            .filter(|r| r.rtype == rtype || (rtype == TYPE_ANY && r.rtype != TYPE_OPT))
        {
            record(out, 0xc000 | HEADER_LEN as u16, r.rtype, r.ttl, &r.data);
            n += 1;
        }
        n
    };
    let mut answers = put(out, qtype);
    if answers == 0 && qtype != TYPE_CNAME {
        answers = put(out, TYPE_CNAME);
    }
    let mut authority = 0u16;
    let mut rcode = 0;
    if answers == 0 {
        if !exists && wildcard.is_none() {
            rcode = NXDOMAIN;
        }
        if let Some(soa) = &zone.soa {
            // The apex is the end of the question's name: point there.
            let apex_at = HEADER_LEN + name_len - zone.origin.len();
            record(out, 0xc000 | apex_at as u16, TYPE_SOA, soa.ttl, &soa.data);
            authority = 1;
        }
    }
    if udp && out.len() + opt_len > limit {
        out.truncate(q.question_end);
        set_word(out, 2, base | FLAG_AA | FLAG_TC | rcode);
    } else {
        set_word(out, 2, base | FLAG_AA | rcode);
        set_word(out, 6, answers);
        set_word(out, 8, authority);
    }
    finish_opt(out, has_opt, q.dnssec_ok);
}

/// True when the question's name is plain labels (a query has no reason to compress it).
fn plain_name(query: &[u8]) -> bool {
    let mut at = HEADER_LEN;
    while let Some(&len) = query.get(at) {
        if len == 0 {
            return true;
        }
        if len & 0xc0 != 0 {
            return false;
        }
        at += usize::from(len) + 1;
    }
    false
}

fn header(out: &mut Vec<u8>, id: u16, flags: u16, qdcount: u16) {
    for v in [id, flags, qdcount, 0, 0, 0] {
        out.extend_from_slice(&v.to_be_bytes());
    }
}

fn set_word(out: &mut [u8], at: usize, v: u16) {
    out[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn record(out: &mut Vec<u8>, pointer: u16, rtype: u16, ttl: u32, data: &[u8]) {
    out.extend_from_slice(&pointer.to_be_bytes());
    out.extend_from_slice(&rtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    out.extend_from_slice(&(data.len() as u16).to_be_bytes());
    out.extend_from_slice(data);
}

/// Appends the fixture's OPT record (when the query had one) and counts it.
fn finish_opt(out: &mut Vec<u8>, wanted: bool, dnssec_ok: bool) {
    if wanted {
        push_opt(out, 0, dnssec_ok);
    }
}

fn push_opt(out: &mut Vec<u8>, ext_rcode: u8, dnssec_ok: bool) {
    out.push(0);
    out.extend_from_slice(&TYPE_OPT.to_be_bytes());
    out.extend_from_slice(&FIXTURE_UDP_SIZE.to_be_bytes());
    let flags: u16 = if dnssec_ok { EDNS_DO } else { 0 };
    out.extend_from_slice(&[ext_rcode, 0]);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    let ar = u16::from_be_bytes([out[10], out[11]]) + 1;
    set_word(out, 10, ar);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::wire::{full_rcode, question_matches, Edns, Query};

    fn ask(
        zone: &Zone,
        name: &str,
        qtype: u16,
        edns: Option<Edns>,
        udp: bool,
    ) -> (Header, Vec<u8>, Query) {
        let mut q = Query::encode(name, qtype, true, edns).unwrap();
        wire::set_id(&mut q.bytes, 0xbeef);
        let mut out = Vec::new();
        assert!(respond(&q.bytes, zone, udp, &mut out));
        let h = Header::read_answer(&out).unwrap();
        assert_eq!(h.id, 0xbeef);
        assert!(question_matches(&out, &h, q.question()), "{name}");
        (h, out, q)
    }

    #[test]
    fn answers_nodata_nxdomain_and_refused() {
        let z = Zone::generated(10);
        let (h, out, _) = ask(&z, "WWW.example.test", 1, None, true);
        assert_eq!((h.rcode(), h.ancount, h.flags & FLAG_AA != 0), (0, 1, true));
        assert_eq!(&out[out.len() - 4..], &[192, 0, 2, 10]);
        let (h, ..) = ask(&z, "host7.example.test", 1, None, true);
        assert_eq!((h.rcode(), h.ancount), (0, 1));
        let (h, ..) = ask(&z, "www.example.test", 15, None, true);
        assert_eq!((h.rcode(), h.ancount, h.nscount), (0, 0, 1), "NODATA with the SOA");
        let (h, ..) = ask(&z, "nx1.example.test", 1, None, true);
        assert_eq!((h.rcode(), h.nscount), (3, 1));
        let (h, ..) = ask(&z, "example.org", 1, None, true);
        assert_eq!(h.rcode(), 5);
    }

    #[test]
    fn large_answers_are_truncated_over_udp_only() {
        let z = Zone::generated(1);
        let (h, out, q) = ask(&z, "big.example.test", 16, None, true);
        assert!(h.truncated() && h.ancount == 0);
        assert_eq!(out.len(), q.question_end);
        // EDNS 1232 is still too small for 2 KB; 4096 is not.
        let (h, ..) =
            ask(&z, "big.example.test", 16, Some(Edns { udp_size: 1232, dnssec_ok: false }), true);
        assert!(h.truncated() && h.arcount == 1);
        let (h, out, _) =
            ask(&z, "big.example.test", 16, Some(Edns { udp_size: 4096, dnssec_ok: false }), true);
        assert!(!h.truncated() && h.ancount == 1 && out.len() > 2000);
        let (h, ..) = ask(&z, "big.example.test", 16, None, false);
        assert!(!h.truncated() && h.ancount == 1, "TCP has no 512-byte limit");
    }

    #[test]
    fn bad_queries_get_formerr_notimp_badvers_or_nothing() {
        let z = Zone::generated(1);
        let mut out = Vec::new();
        assert!(!respond(b"short", &z, true, &mut out));
        let q = Query::encode("www.example.test", 1, true, None).unwrap();
        let mut answer = q.bytes.clone();
        answer[2] |= 0x80;
        assert!(!respond(&answer, &z, true, &mut out), "answers are not answered");
        let mut cut = q.bytes.clone();
        cut.truncate(20);
        assert!(respond(&cut, &z, true, &mut out));
        assert_eq!(Header::read(&out).unwrap().rcode(), FORMERR);
        let mut notify = q.bytes.clone();
        notify[2] |= 4 << 3;
        assert!(respond(&notify, &z, true, &mut out));
        assert_eq!(Header::read(&out).unwrap().rcode(), NOTIMP);
        let mut v1 = Query::encode(
            "www.example.test",
            1,
            true,
            Some(Edns { udp_size: 1232, dnssec_ok: false }),
        )
        .unwrap();
        let at = v1.question_end + 6;
        v1.bytes[at] = 1; // EDNS version 1
        assert!(respond(&v1.bytes, &z, true, &mut out));
        let h = Header::read_answer(&out).unwrap();
        assert_eq!(full_rcode(&out, &h).unwrap(), 16);
    }

    #[test]
    fn edns_the_do_bit_and_two_opt_records() {
        let z = Zone::generated(1);
        let edns = Some(Edns { udp_size: 1232, dnssec_ok: true });
        let (h, out, _) = ask(&z, "www.example.test", 1, edns, true);
        let flags_at = out.len() - 4;
        assert_eq!((h.rcode(), h.arcount), (0, 1));
        assert_eq!(u16::from_be_bytes([out[flags_at], out[flags_at + 1]]) & EDNS_DO, EDNS_DO);
        let (_, out, _) =
            ask(&z, "www.example.test", 1, Some(Edns { udp_size: 1232, dnssec_ok: false }), true);
        let flags_at = out.len() - 4;
        assert_eq!(u16::from_be_bytes([out[flags_at], out[flags_at + 1]]) & EDNS_DO, 0);
        // A second OPT record: FORMERR (RFC 6891 6.1.1).
        let q = Query::encode("www.example.test", 1, true, edns).unwrap();
        let mut two = q.bytes.clone();
        two.extend_from_slice(&q.bytes[q.question_end..]);
        set_word(&mut two, 10, 2);
        let mut out = Vec::new();
        assert!(respond(&two, &z, true, &mut out));
        assert_eq!(Header::read(&out).unwrap().rcode(), FORMERR);
    }

    #[test]
    fn zone_transfers_are_refused() {
        let z = Zone::generated(1);
        for qtype in [TYPE_AXFR, TYPE_IXFR] {
            let (h, ..) = ask(&z, "example.test", qtype, None, false);
            assert_eq!((h.rcode(), h.ancount), (REFUSED, 0), "{qtype}");
        }
    }

    #[test]
    fn wildcards_answer_under_the_asked_name() {
        let text = "$ORIGIN t.\n@ SOA ns h 1 2 3 4 5\n*.w A 192.0.2.7\n";
        let z = Zone::parse(text, None).unwrap();
        let (h, out, _) = ask(&z, "anything.w.t", 1, None, true);
        assert_eq!((h.rcode(), h.ancount), (0, 1));
        assert_eq!(&out[out.len() - 4..], &[192, 0, 2, 7]);
        let (h, ..) = ask(&z, "anything.w.t", 28, None, true);
        assert_eq!((h.rcode(), h.ancount, h.nscount), (0, 0, 1), "NODATA from the wildcard");
        let (h, ..) = ask(&z, "anything.t", 1, None, true);
        assert_eq!(h.rcode(), NXDOMAIN);
    }
}
