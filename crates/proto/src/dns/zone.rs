//! The zone the DNS fixture serves: a master file (RFC 1035 §5) read by NLnet Labs' `domain`
//! scanner — `$ORIGIN`, `$TTL`, `$INCLUDE`, escapes, parentheses, and every record type that
//! crate knows (RFC 3597's `\#` form for the others) — or the records [`Zone::generated`]
//! makes. On top of the scanner, the rules an authoritative server applies when it loads a
//! zone, each refusal naming the record: exactly one SOA, at the apex; owners inside the zone;
//! a CNAME alone at its name; class IN. Wildcard owners (`*`, RFC 4592) answer for names that
//! do not exist. Names are kept in lower-case wire format, ready for answers.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use bytes::Bytes;
use domain::base::iana::Class;
use domain::base::rdata::ComposeRecordData;
use domain::base::{Name, ToName};
use domain::zonefile::inplace::{Entry, ScannedRecord, Zonefile};

use super::qtype::{CNAME, SOA};

/// One record's type, TTL and RDATA (wire format, names uncompressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Type number.
    pub rtype: u16,
    /// Time to live, seconds.
    pub ttl: u32,
    /// RDATA.
    pub data: Vec<u8>,
}

/// A loaded zone.
#[derive(Debug, Clone, Default)]
pub struct Zone {
    /// The apex, lower-case wire format.
    pub origin: Vec<u8>,
    /// Records by owner (lower-case wire format).
    pub records: HashMap<Vec<u8>, Vec<Record>>,
    /// Every name that exists: owners and the names between them and the apex (empty
    /// non-terminals answer NODATA, not NXDOMAIN).
    pub names: HashSet<Vec<u8>>,
    /// The SOA record's RDATA and TTL, for negative answers.
    pub soa: Option<Record>,
}

/// A zone file that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if *line > 0 { format!("line {line}, ") } else { String::new() })]
pub struct ZoneError {
    /// The line the scanner stopped at, from 1; 0 when a loading rule refused a record (the
    /// message shows the record) or the zone as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl Zone {
    /// The zone wirespeed serves when none is given: `example.test` (a name reserved for
    /// testing, RFC 6761) with an SOA, NS, `www` (A, AAAA, TXT), `mail`, an MX, `hostN` for
    /// N in 1..=`hosts` (A), and `big` with a TXT record of about 2 KB, too large for a plain
    /// UDP answer, so a test can see truncation.
    pub fn generated(hosts: u32) -> Self {
        let text = Self::generated_text(hosts);
        Self::parse(&text, None).unwrap_or_else(|e| unreachable!("the generated zone parses: {e}"))
    }

    /// The zone file [`Zone::generated`] reads, for other DNS servers to serve the same zone.
    pub fn generated_text(hosts: u32) -> String {
        let mut text = String::from(
            "$ORIGIN example.test.\n$TTL 3600\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 3600\n@ NS ns1\nns1 A 127.0.0.1\n@ A 192.0.2.1\nwww A 192.0.2.10\nwww AAAA 2001:db8::10\nwww TXT \"v=wirespeed fixture\"\nmail A 192.0.2.20\n@ MX 10 mail\n",
        );
        let chunk = "x".repeat(250);
        text.push_str("big TXT");
        for _ in 0..8 {
            text.push_str(&format!(" \"{chunk}\""));
        }
        text.push('\n');
        for i in 1..=hosts {
            text.push_str(&format!(
                "host{i} A 10.{}.{}.{}\n",
                (i >> 16) & 255,
                (i >> 8) & 255,
                i & 255
            ));
        }
        text
    }

    /// Reads a zone file; `origin` is the apex when the file has no `$ORIGIN` before its first
    /// relative name. A `$INCLUDE` is an error here: [`Zone::parse_with_includes`] reads them.
    pub fn parse(text: &str, origin: Option<&str>) -> Result<Self, ZoneError> {
        Self::parse_with_includes(text, origin, &mut |_, path| {
            Err(format!("$INCLUDE {path}: only a zone read from a file can include others"))
        })
    }

    /// Reads a zone file whose `$INCLUDE`s `include` resolves: given the file that includes
    /// (as `include` named it before; `None` for the first) and the path as written, it
    /// returns the included file's name and text, or why not. An included file starts with
    /// the origin the `$INCLUDE` names, else the includer's; the includer's own origin is
    /// unchanged after it (RFC 1035 §5.1). Includes nest at most [`MAX_INCLUDE_DEPTH`] deep,
    /// so a loop ends.
    pub fn parse_with_includes(
        text: &str,
        origin: Option<&str>,
        include: &mut Includes<'_>,
    ) -> Result<Self, ZoneError> {
        let origin = origin
            .map(|o| {
                Name::<Bytes>::from_str(o.trim_end_matches('.'))
                    .map_err(|e| ZoneError { line: 0, message: format!("origin '{o}': {e}") })
            })
            .transpose()?;
        let mut loader = Loader { zone: Zone::default(), include, depth: 0 };
        loader.read(None, text, origin)?;
        loader.finish()
    }
}

/// What resolves `$INCLUDE`s: (the including file's name, or `None` for the first file; the
/// path as written) → (the included file's name, its text).
pub type Includes<'a> = dyn FnMut(Option<&str>, &str) -> Result<(String, String), String> + 'a;

/// How deep `$INCLUDE`s may nest.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// A zone being loaded: the scanner's records pass the loading rules one by one.
struct Loader<'a, 'b> {
    zone: Zone,
    include: &'a mut Includes<'b>,
    depth: usize,
}

impl Loader<'_, '_> {
    /// Loads the records of one file, `name` as [`Includes`] named it.
    fn read(
        &mut self,
        name: Option<&str>,
        text: &str,
        origin: Option<Name<Bytes>>,
    ) -> Result<(), ZoneError> {
        unclosed(text)?;
        // The scanner is not ours to fix: should it panic on some other input, the zone is
        // refused with a message rather than the process brought down.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.scan(name, text, origin)))
            .unwrap_or_else(|_| {
                Err(ZoneError {
                    line: 0,
                    message: "the zone-file scanner (domain) failed on this file".into(),
                })
            })
    }

    fn scan(
        &mut self,
        name: Option<&str>,
        text: &str,
        origin: Option<Name<Bytes>>,
    ) -> Result<(), ZoneError> {
        let mut file = Zonefile::with_capacity(text.len() + 1);
        file.extend_from_slice(text.as_bytes());
        // The scanner needs the last record's line to end; a file's last line often does not.
        if !text.ends_with('\n') {
            file.extend_from_slice(b"\n");
        }
        file.set_default_class(Class::IN);
        if let Some(origin) = origin {
            file.set_origin(origin);
        }
        while let Some(entry) = file.next_entry().map_err(scan_error)? {
            match entry {
                Entry::Record(record) => {
                    let origin = file.origin().ok();
                    self.add(&record, origin.as_ref())?;
                }
                Entry::Include { path, origin } => {
                    let path = path.to_string();
                    let within = |e: ZoneError| ZoneError {
                        line: 0,
                        message: format!("in $INCLUDE {path}: {e}"),
                    };
                    if self.depth == MAX_INCLUDE_DEPTH {
                        return Err(within(ZoneError {
                            line: 0,
                            message: format!(
                                "includes nest deeper than {MAX_INCLUDE_DEPTH} (a loop?)"
                            ),
                        }));
                    }
                    let (included, text) = (self.include)(name, &path)
                        .map_err(|message| within(ZoneError { line: 0, message }))?;
                    self.depth += 1;
                    let origin = origin.or_else(|| file.origin().ok());
                    let done = self.read(Some(&included), &text, origin);
                    self.depth -= 1;
                    done.map_err(within)?;
                }
            }
        }
        Ok(())
    }

    /// Applies the loading rules to one record and keeps it; a refusal shows the record.
    fn add(&mut self, r: &ScannedRecord, origin: Option<&Name<Bytes>>) -> Result<(), ZoneError> {
        let fail = |message: &str| ZoneError { line: 0, message: format!("'{r}': {message}") };
        if r.class() != Class::IN {
            return Err(fail("only class IN is served"));
        }
        let mut owner = r.owner().to_vec().into_octets();
        owner.make_ascii_lowercase();
        let num = r.rtype().to_int();
        let zone = &mut self.zone;
        if zone.origin.is_empty() {
            zone.origin = match (num, origin) {
                (SOA, _) => owner.clone(),
                (_, Some(o)) => {
                    let mut o = o.to_vec().into_octets();
                    o.make_ascii_lowercase();
                    o
                }
                (_, None) => return Err(fail("no $ORIGIN and no SOA first: where is the apex?")),
            };
        }
        if !ends_with_name(&owner, &zone.origin) {
            return Err(fail("the owner is outside the zone"));
        }
        let mut data = Vec::new();
        r.data().compose_rdata(&mut data).map_err(|_| fail("the record cannot be encoded"))?;
        if data.len() > usize::from(u16::MAX) {
            return Err(fail("the record is too large"));
        }
        let record = Record { rtype: num, ttl: r.ttl().as_secs(), data };
        if num == SOA {
            if owner != zone.origin {
                return Err(fail("an SOA record belongs at the zone's apex only"));
            }
            if zone.soa.is_some() {
                return Err(fail("a second SOA record: a zone has exactly one"));
            }
            zone.soa = Some(record.clone());
        }
        let here = zone.records.entry(owner).or_default();
        // RFC 1034 §3.6.2 (and RFC 2181 §10.1): a CNAME stands alone at its name.
        if (num == CNAME && !here.is_empty()) || here.iter().any(|r| r.rtype == CNAME) {
            return Err(fail(
                "a CNAME and other data at one name (a CNAME must be the only record there)",
            ));
        }
        here.push(record);
        Ok(())
    }

    fn finish(self) -> Result<Zone, ZoneError> {
        let mut zone = self.zone;
        if zone.records.is_empty() {
            return Err(ZoneError { line: 0, message: "the zone holds no record".into() });
        }
        if zone.soa.is_none() {
            return Err(ZoneError {
                line: 0,
                message: "no SOA record at the zone's apex: its negative answers need one".into(),
            });
        }
        let owners: Vec<Vec<u8>> = zone.records.keys().cloned().collect();
        for owner in owners {
            let mut at = 0;
            while owner.len() - at >= zone.origin.len() {
                zone.names.insert(owner[at..].to_vec());
                if owner[at] == 0 {
                    break;
                }
                at += usize::from(owner[at]) + 1;
            }
        }
        Ok(zone)
    }
}

/// Refuses a file that ends inside parentheses or a quoted string, naming where that began.
/// `domain` 0.12's scanner panics (an index past its buffer) on a TXT record whose `(` is never
/// closed, so this is checked before it reads: quotes, `\` escapes and `;` comments as RFC 1035
/// §5.1 has them.
fn unclosed(text: &str) -> Result<(), ZoneError> {
    let (mut open, mut quote) = (Vec::new(), None);
    for (i, line) in text.lines().enumerate() {
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' if quote.is_some() => quote = None,
                _ if quote.is_some() => {}
                '"' => quote = Some(i + 1),
                ';' => break,
                '(' => open.push(i + 1),
                ')' => {
                    open.pop();
                }
                _ => {}
            }
        }
    }
    let fail = |line: usize, what: &str| ZoneError {
        line,
        message: format!("{what} that the file never closes"),
    };
    match (quote, open.last()) {
        (Some(line), _) => Err(fail(line, "a '\"'")),
        (None, Some(&line)) => Err(fail(line, "a '('")),
        (None, None) => Ok(()),
    }
}

/// The scanner's error as ours. It says where as `line:column: what` (its fields are private)
/// and points just past the token it refused; column 1 means that token ended the line above.
/// A few of its terse words are spelt out.
fn scan_error(e: domain::zonefile::inplace::Error) -> ZoneError {
    let text = e.to_string();
    let mut parts = text.splitn(3, ':');
    let (Some(line), Some(column), Some(what)) = (
        parts.next().and_then(|l| l.parse::<usize>().ok()),
        parts.next().and_then(|c| c.parse::<usize>().ok()),
        parts.next(),
    ) else {
        return ZoneError { line: 0, message: text };
    };
    let what = what.trim();
    let what = match what {
        "expected rtype" => "expected a record type (or a TTL or class before it)".to_string(),
        "missing origin" => "a relative name and no $ORIGIN".to_string(),
        "missing last owner" => "no owner name on the first record".to_string(),
        "unbalanced parens" => "unbalanced parentheses".to_string(),
        "short buffer" => "the file ends inside a record (an unclosed '(' or '\"'?)".to_string(),
        "unexpected end of entry" => "the record ends before all its fields".to_string(),
        w if w.starts_with("different class") => format!("{w} (the fixture serves class IN)"),
        other => other.to_string(),
    };
    match (line, column) {
        (l, 1) if l > 1 => ZoneError { line: l - 1, message: format!("at its end: {what}") },
        (line, column) => ZoneError { line, message: format!("before column {column}: {what}") },
    }
}

impl Zone {
    /// The records of the wildcard that answers for `name`, a name that does not exist in the
    /// zone: `*` under `name`'s closest encloser (the longest existing ancestor), if the zone
    /// has one there (RFC 4592 §3.3.1).
    pub fn wildcard_for(&self, name: &[u8]) -> Option<&[Record]> {
        let mut at = 0;
        while at < name.len() && name[at] != 0 {
            at += usize::from(name[at]) + 1;
            let parent = &name[at..];
            if self.names.contains(parent) {
                let mut star = Vec::with_capacity(parent.len() + 2);
                star.extend_from_slice(&[1, b'*']);
                star.extend_from_slice(parent);
                return self.records.get(&star).map(Vec::as_slice);
            }
            if parent.len() <= self.origin.len() {
                return None;
            }
        }
        None
    }
}

/// True when wire name `name` is `zone` or below it.
pub fn ends_with_name(name: &[u8], zone: &[u8]) -> bool {
    let mut at = 0;
    while at < name.len() {
        if name[at..].eq_ignore_ascii_case(zone) {
            return true;
        }
        if name[at] == 0 {
            return false;
        }
        at += usize::from(name[at]) + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::qtype::{AAAA, MX, NS};
    use super::super::wire::encode_name;
    use super::*;

    fn wire(name: &str) -> Vec<u8> {
        let mut v = Vec::new();
        encode_name(name, &mut v).unwrap();
        v
    }

    #[test]
    fn a_zone_file_with_the_common_forms() {
        let text = "$ORIGIN Example.Test.\n$TTL 300\n@ IN SOA ns1 hostmaster.example.test. (\n  1 7200 ; serial and refresh\n  3600 1209600 3600 )\n  NS ns1\nns1 60 IN A 127.0.0.1\nwww A 192.0.2.10\n    AAAA 2001:db8::10\na.b.c TXT \"hello world\" \"two\"\n@ MX 10 mail\n";
        let z = Zone::parse(text.trim_end(), None).unwrap();
        assert_eq!(z.origin, wire("example.test"));
        assert!(z.soa.is_some());
        let apex = &z.records[&wire("example.test")];
        assert_eq!(apex.iter().map(|r| r.rtype).collect::<Vec<_>>(), vec![SOA, NS, MX]);
        // The MX's exchange is relative to the origin, written uncompressed.
        assert_eq!(apex[2].data, [&[0, 10][..], &wire("mail.Example.Test")].concat());
        assert_eq!(z.records[&wire("ns1.example.test")][0].ttl, 60);
        let www = &z.records[&wire("www.example.test")];
        assert_eq!(www[1].rtype, AAAA);
        assert_eq!(www[0].ttl, 300);
        let txt = &z.records[&wire("a.b.c.example.test")][0];
        assert_eq!(txt.data, b"\x0bhello world\x03two");
        // b.c and c exist as empty non-terminals.
        assert!(
            z.names.contains(&wire("b.c.example.test"))
                && z.names.contains(&wire("c.example.test"))
        );
        assert!(!z.names.contains(&wire("nx.example.test")));
    }

    #[test]
    fn the_generated_zone_has_hosts_and_a_big_record() {
        let z = Zone::generated(1000);
        assert!(z.records.contains_key(&wire("host1000.example.test")));
        let big = &z.records[&wire("big.example.test")][0];
        assert!(big.data.len() > 2000);
    }

    #[test]
    fn scanner_errors_name_the_line() {
        let cases = [
            ("$ORIGIN t.\nwww A 300.1.1.1\n\n; c\n", 2, "IPv4"),
            ("$ORIGIN t.\n\n; note\nwww BOGUS x\n", 4, "record type"),
            ("www A 1.2.3.4\n", 1, "no $ORIGIN"),
            ("$ORIGIN t.\n@ SOA a b (1 2\n", 2, "'(' that the file never closes"),
            // domain's scanner panics on this one (a TXT string, then a '(' never closed).
            ("$ORIGIN t.\nx TXT \"a\" (\n\n", 2, "'(' that the file never closes"),
            ("$ORIGIN t.\nx TXT \"a;b\\\" (\n", 2, "'\"' that the file never closes"),
            ("$ORIGIN t.\nx TXT \"(\" ; (\n", 0, "no SOA"),
            ("$ORIGIN t.\nw MX 10\nx A 192.0.2.1\n", 2, "before all its fields"),
            ("$ORIGIN t.\nw A 192.0.2.1\n  A 192.0.2.x\n", 3, "IPv4"),
            ("$ORIGIN t.\nw CH A 192.0.2.1\n", 2, "class IN"),
            ("$ORIGIN t.\n$NOPE x\n", 2, "$NOPE"),
        ];
        for (text, line, msg) in cases {
            let e = Zone::parse(text, None).unwrap_err();
            assert!(e.line == line && e.to_string().contains(msg), "{text:?}: {e}");
        }
    }

    const SOA_LINE: &str = "$ORIGIN t.\n@ SOA ns h 1 2 3 4 5\n";

    #[test]
    fn what_an_authoritative_server_refuses_is_refused_with_the_record() {
        let cases = [
            ("$ORIGIN t.\nwww A 192.0.2.1\n".to_string(), "", "no SOA"),
            (format!("{SOA_LINE}@ SOA ns h 2 2 3 4 5\n"), "'t. 3600 IN SOA", "second SOA"),
            (format!("{SOA_LINE}sub SOA ns h 2 2 3 4 5\n"), "'sub.t.", "apex only"),
            (format!("{SOA_LINE}w CNAME x\nw A 192.0.2.1\n"), "'w.t.", "CNAME and other data"),
            (format!("{SOA_LINE}w A 192.0.2.1\nw CNAME x\n"), "CNAME x.t.", "CNAME and other"),
            (format!("{SOA_LINE}x.other. A 192.0.2.1\n"), "'x.other.", "outside"),
        ];
        for (text, record, msg) in cases {
            let e = Zone::parse(&text, None).unwrap_err();
            let shown = e.to_string();
            assert!(e.line == 0 && shown.contains(record) && shown.contains(msg), "{text:?}: {e}");
        }
        // A TXT escape out of range is the scanner's to refuse, with its line.
        let e = Zone::parse(&format!("{SOA_LINE}w TXT \"a\\300b\"\n"), None).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }

    #[test]
    fn txt_escapes_are_decoded() {
        let text = format!("{SOA_LINE}w TXT \"a\\032b\\\"c\\\\\" x\\255y \"\\065\"\n");
        let z = Zone::parse(&text, None).unwrap();
        let txt = &z.records[&wire("w.t")][0];
        assert_eq!(txt.data, b"\x06a b\"c\\\x03x\xffy\x01A");
    }

    #[test]
    fn types_beyond_the_common_ones_load_in_wire_format() {
        let text = format!(
            "{SOA_LINE}_sip._tcp SRV 10 20 5060 sip\nc CAA 0 issue \"ca.example\"\nu TYPE65280 \\# 2 abcd\n"
        );
        let z = Zone::parse(&text, None).unwrap();
        let srv = &z.records[&wire("_sip._tcp.t")][0];
        assert_eq!((srv.rtype, &srv.data[..6]), (33, &[0, 10, 0, 20, 0x13, 0xc4][..]));
        assert_eq!(&srv.data[6..], wire("sip.t"));
        assert_eq!(z.records[&wire("c.t")][0].rtype, 257);
        assert_eq!(z.records[&wire("u.t")][0].data, [0xab, 0xcd]);
    }

    #[test]
    fn includes_are_read_with_their_origin_and_nest_only_so_deep() {
        let main = "$ORIGIN t.\n@ SOA ns h 1 2 3 4 5\n$INCLUDE hosts.zone\n$INCLUDE sub.zone sub.t.\nafter A 192.0.2.9\n";
        let mut asked = Vec::new();
        let z = Zone::parse_with_includes(main, None, &mut |from, path| {
            asked.push(format!("{from:?} {path}"));
            let text = match path {
                "hosts.zone" => "h1 A 192.0.2.1\n$ORIGIN elsewhere.t.\nh2 A 192.0.2.2\n",
                _ => "www A 192.0.2.3\n",
            };
            Ok((format!("dir/{path}"), text.to_string()))
        })
        .unwrap();
        assert_eq!(asked, ["None hosts.zone", "None sub.zone"]);
        for name in ["h1.t", "h2.elsewhere.t", "www.sub.t", "after.t"] {
            assert!(z.records.contains_key(&wire(name)), "{name}");
        }
        // A file that includes itself stops at the depth limit, saying so.
        let mut depth = 0;
        let e = Zone::parse_with_includes(main, None, &mut |from, _| {
            // Each include is asked for by the file the one before returned.
            assert_eq!(from.map(str::to_string), (depth > 0).then(|| format!("f{depth}")));
            depth += 1;
            Ok((format!("f{depth}"), "$INCLUDE again\n".into()))
        })
        .unwrap_err();
        assert!(e.to_string().contains("deeper than 16"), "{e}");
        // Without a file to read them from, an include is refused by name.
        let e = Zone::parse(main, None).unwrap_err();
        assert!(e.to_string().contains("$INCLUDE hosts.zone"), "{e}");
    }

    #[test]
    fn a_wildcard_answers_for_names_that_do_not_exist() {
        let text = format!("{SOA_LINE}*.w A 192.0.2.7\nx.w A 192.0.2.8\n");
        let z = Zone::parse(&text, None).unwrap();
        assert_eq!(z.wildcard_for(&wire("any.w.t")).unwrap()[0].data, [192, 0, 2, 7]);
        assert_eq!(z.wildcard_for(&wire("a.b.w.t")).unwrap()[0].data, [192, 0, 2, 7]);
        // Below an existing name other than w, the wildcard does not reach (x.w exists).
        assert!(z.wildcard_for(&wire("y.x.w.t")).is_none());
        assert!(z.wildcard_for(&wire("nx.t")).is_none());
    }
}
