//! Record type mnemonics (IANA's DNS parameters registry) and `TYPEnnn` (RFC 3597), both
//! ways, case-insensitively, as dnsperf's datafiles and zone files write them.

/// A: an IPv4 address.
pub const A: u16 = 1;
/// NS: a name server.
pub const NS: u16 = 2;
/// CNAME: an alias.
pub const CNAME: u16 = 5;
/// SOA: the start of a zone of authority.
pub const SOA: u16 = 6;
/// PTR: a pointer to another name.
pub const PTR: u16 = 12;
/// MX: a mail exchanger.
pub const MX: u16 = 15;
/// TXT: text strings.
pub const TXT: u16 = 16;
/// AAAA: an IPv6 address.
pub const AAAA: u16 = 28;
/// ANY (a query type only): every record of the name.
pub const ANY: u16 = 255;

/// Every mnemonic this table knows, with its number.
const TYPES: &[(&str, u16)] = &[
    ("A", 1),
    ("NS", 2),
    ("MD", 3),
    ("MF", 4),
    ("CNAME", 5),
    ("SOA", 6),
    ("MB", 7),
    ("MG", 8),
    ("MR", 9),
    ("NULL", 10),
    ("WKS", 11),
    ("PTR", 12),
    ("HINFO", 13),
    ("MINFO", 14),
    ("MX", 15),
    ("TXT", 16),
    ("RP", 17),
    ("AFSDB", 18),
    ("X25", 19),
    ("ISDN", 20),
    ("RT", 21),
    ("NSAP", 22),
    ("NSAP-PTR", 23),
    ("SIG", 24),
    ("KEY", 25),
    ("PX", 26),
    ("GPOS", 27),
    ("AAAA", 28),
    ("LOC", 29),
    ("NXT", 30),
    ("SRV", 33),
    ("NAPTR", 35),
    ("KX", 36),
    ("CERT", 37),
    ("A6", 38),
    ("DNAME", 39),
    ("OPT", 41),
    ("APL", 42),
    ("DS", 43),
    ("SSHFP", 44),
    ("IPSECKEY", 45),
    ("RRSIG", 46),
    ("NSEC", 47),
    ("DNSKEY", 48),
    ("DHCID", 49),
    ("NSEC3", 50),
    ("NSEC3PARAM", 51),
    ("TLSA", 52),
    ("SMIMEA", 53),
    ("HIP", 55),
    ("CDS", 59),
    ("CDNSKEY", 60),
    ("OPENPGPKEY", 61),
    ("CSYNC", 62),
    ("ZONEMD", 63),
    ("SVCB", 64),
    ("HTTPS", 65),
    ("SPF", 99),
    ("NID", 104),
    ("L32", 105),
    ("L64", 106),
    ("LP", 107),
    ("EUI48", 108),
    ("EUI64", 109),
    ("TKEY", 249),
    ("TSIG", 250),
    ("IXFR", 251),
    ("AXFR", 252),
    ("MAILB", 253),
    ("MAILA", 254),
    ("ANY", 255),
    ("URI", 256),
    ("CAA", 257),
    ("TA", 32768),
    ("DLV", 32769),
];

/// The number of a type written as a mnemonic (`AAAA`) or as `TYPE28`.
pub fn parse(text: &str) -> Option<u16> {
    if let Some(&(_, n)) = TYPES.iter().find(|(name, _)| name.eq_ignore_ascii_case(text)) {
        return Some(n);
    }
    let digits = text.get(..4).filter(|p| p.eq_ignore_ascii_case("TYPE")).map(|_| &text[4..])?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The mnemonic of type `n`, or `TYPEn` where it has none.
pub fn name(n: u16) -> String {
    match TYPES.iter().find(|(_, v)| *v == n) {
        Some((name, _)) => (*name).to_string(),
        None => format!("TYPE{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_and_generic_types_both_ways() {
        assert_eq!(parse("aaaa"), Some(28));
        assert_eq!(parse("TXT"), Some(16));
        assert_eq!(parse("TYPE65280"), Some(65280));
        assert_eq!(parse("type1"), Some(1));
        for bad in ["", "TYPE", "TYPE70000", "TYPE-1", "AAAAA", "TYPEx"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(name(28), "AAAA");
        assert_eq!(name(65280), "TYPE65280");
    }
}
