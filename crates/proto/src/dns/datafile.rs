//! dnsperf's datafile: one query a line, `NAME TYPE` (`www.example.test A`), blank lines and
//! comments (lines starting with `;`, as dnsperf, or `#`; and a `;` field ending a line)
//! skipped. A name alone asks for its A record, so that a list of names (dnspyre's query
//! files, a zone's hosts) is a datafile too. Every line is checked
//! here, before a query is sent, so a bad one is reported with its line number instead of
//! failing mid-run.

use super::{qtype, wire};

/// One query of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryLine {
    /// The name, as written.
    pub name: String,
    /// The record type's number.
    pub qtype: u16,
    /// Where it is in the file, from 1.
    pub line: usize,
}

/// A line that is not a query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DatafileError {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// Longest line accepted (dnsperf's buffer is 64 KiB).
pub const MAX_LINE: usize = 65_536;

/// Reads every query of a datafile. A file without any query is an error too.
pub fn parse(text: &str) -> Result<Vec<QueryLine>, DatafileError> {
    let mut queries = Vec::new();
    let mut scratch = Vec::with_capacity(wire::MAX_NAME_LEN);
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let fail = |message: String| Err(DatafileError { line, message });
        if raw.len() > MAX_LINE {
            return fail(format!("longer than {MAX_LINE} bytes"));
        }
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        // A `;` that starts a field starts a comment, at the end of a line too.
        let mut fields = l.split_ascii_whitespace().take_while(|f| !f.starts_with(';'));
        // Neither empty nor a comment, the line has a name.
        let Some(name) = fields.next() else { continue };
        let ty = fields.next().unwrap_or("A");
        if let Some(extra) = fields.next() {
            return fail(format!("unexpected '{}' after the type", shorten(extra)));
        }
        let Some(qtype) = qtype::parse(ty) else {
            return fail(format!(
                "'{}' is not a record type (A, AAAA, TXT, …, or TYPEnnn)",
                shorten(ty)
            ));
        };
        scratch.clear();
        if let Err(why) = wire::encode_name(name, &mut scratch) {
            return fail(shorten(&why).to_string());
        }
        queries.push(QueryLine { name: name.to_string(), qtype, line });
    }
    if queries.is_empty() {
        return Err(DatafileError { line: 0, message: "the file holds no query".into() });
    }
    Ok(queries)
}

/// At most 80 characters of `s`, so an error message stays one line.
fn shorten(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_comments_and_blank_lines() {
        let text = "; dnsperf comment\n\nwww.example.test A\n# another\n  example.test   SOA  \nx.test TYPE65\n";
        let q = parse(text).unwrap();
        assert_eq!(q.len(), 3);
        assert_eq!(q[0], QueryLine { name: "www.example.test".into(), qtype: 1, line: 3 });
        assert_eq!((q[1].qtype, q[1].line), (6, 5));
        assert_eq!(q[2].qtype, 65);
    }

    #[test]
    fn a_comment_may_end_a_line() {
        let q = parse(
            "www.example.test A ; the web server
mail.test MX	;mail
",
        )
        .unwrap();
        assert_eq!((q.len(), q[0].qtype, q[1].qtype), (2, 1, 15));
    }

    #[test]
    fn a_name_alone_asks_for_its_a_record() {
        let q = parse(
            "www.example.test
mail.test ; no type
x.test AAAA
",
        )
        .unwrap();
        let asked: Vec<(&str, u16)> = q.iter().map(|q| (q.name.as_str(), q.qtype)).collect();
        assert_eq!(asked, [("www.example.test", 1), ("mail.test", 1), ("x.test", 28)]);
    }

    #[test]
    fn a_bad_line_is_named_by_number() {
        let cases = [
            ("a.test A\nb..test\n", 2, "empty label"),
            ("a.test A\nb.test A extra\n", 2, "unexpected 'extra'"),
            ("a.test BOGUS\n", 1, "not a record type"),
            ("a..test A\n", 1, "empty label"),
            ("; only comments\n", 0, "no query"),
        ];
        for (text, line, msg) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.to_string().contains(msg), "{e}");
        }
    }
}
