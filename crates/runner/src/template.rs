//! Command and config-file templates: `{NAME}` is replaced, where NAME is a letter or `_`
//! followed by letters, digits, `_`, `.` and `-` (`{port.entry}`, `{fixture.sink.addr}`,
//! `{transport}`). Anything else in braces is left as written, so config formats that use
//! braces themselves (TOML inline tables, JSON) need no escaping.

/// What a placeholder names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder<'a> {
    /// `{port.NAME}`: a free loopback port allocated for the run.
    Port(&'a str),
    /// `{file.NAME}`: the path of the system's rendered config file.
    File(&'a str),
    /// `{fixture.NAME.addr|port|host|zone}`: a fixture's address, a part of it, or (DNS) the
    /// path of a file holding the zone it serves.
    Fixture(&'a str, FixturePart),
    /// `{scenario.dir}`: the directory of the scenario file, for files kept beside it.
    ScenarioDir,
    /// `{run.dir}`: the run's own directory (its processes' working directory), for the state
    /// a server keeps (pid files, databases).
    RunDir,
    /// `{host.NAME.addr}`: the address other hosts reach host NAME at.
    HostAddr(&'a str),
    /// `{NAME}`: a variable from the system's axes.
    Var(&'a str),
}

/// Which part of a fixture's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixturePart {
    /// `IP:PORT`.
    Addr,
    /// The port.
    Port,
    /// The IP.
    Host,
    /// A DNS fixture's zone, written to a file.
    Zone,
}

impl<'a> Placeholder<'a> {
    /// What `name` names; `None` for a shape no placeholder has.
    pub fn of(name: &'a str) -> Option<Self> {
        let parts: Vec<&str> = name.split('.').collect();
        Some(match parts.as_slice() {
            ["port", p] => Self::Port(p),
            ["file", f] => Self::File(f),
            ["fixture", f, "addr"] => Self::Fixture(f, FixturePart::Addr),
            ["fixture", f, "port"] => Self::Fixture(f, FixturePart::Port),
            ["fixture", f, "host"] => Self::Fixture(f, FixturePart::Host),
            ["fixture", f, "zone"] => Self::Fixture(f, FixturePart::Zone),
            ["scenario", "dir"] => Self::ScenarioDir,
            ["run", "dir"] => Self::RunDir,
            ["host", h, "addr"] => Self::HostAddr(h),
            [var] => Self::Var(var),
            _ => return None,
        })
    }
}

/// The placeholders of `text`, in order (repeats included).
pub fn placeholders(text: &str) -> Vec<&str> {
    scan(text).into_iter().map(|(_, name)| name).collect()
}

/// `(byte offset of '{', name)` for every placeholder.
fn scan(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            let start = i + 1;
            let mut j = start;
            while j < bytes.len()
                && (bytes[j].is_ascii_alphanumeric() || b"_.-".contains(&bytes[j]))
            {
                j += 1;
            }
            let first_ok = bytes.get(start).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
            if first_ok && j < bytes.len() && bytes[j] == b'}' {
                found.push((i, &text[start..j]));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    found
}

/// A placeholder that has no value where it is rendered: its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{{{0}}} has no value")]
pub struct NoValue(pub String);

/// `text` with every placeholder replaced by `lookup(name)`; the first name it does not know
/// is the error.
pub fn render(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, NoValue> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, name) in scan(text) {
        let value = lookup(name).ok_or_else(|| NoValue(name.to_string()))?;
        out.push_str(&text[at..start]);
        out.push_str(&value);
        at = start + name.len() + 2;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_replaced_and_other_braces_kept() {
        let text =
            "gost -L {proto}://127.0.0.1:{port.entry} x = { a = 1 } {} {9x} {fixture.sink-1.addr}";
        assert_eq!(placeholders(text), ["proto", "port.entry", "fixture.sink-1.addr"]);
        let out = render(text, |n| Some(format!("<{n}>"))).unwrap();
        assert_eq!(
            out,
            "gost -L <proto>://127.0.0.1:<port.entry> x = { a = 1 } {} {9x} <fixture.sink-1.addr>"
        );
        assert_eq!(render("a {b} c", |_| None).unwrap_err(), NoValue("b".into()));
        assert_eq!(NoValue("b".into()).to_string(), "{b} has no value");
        assert_eq!(render("no braces", |_| None).unwrap(), "no braces");
        assert_eq!(render("{unclosed", |_| None).unwrap(), "{unclosed");
    }

    #[test]
    fn placeholders_say_what_they_name() {
        assert_eq!(Placeholder::of("port.entry"), Some(Placeholder::Port("entry")));
        assert_eq!(Placeholder::of("file.cfg"), Some(Placeholder::File("cfg")));
        assert_eq!(
            Placeholder::of("fixture.sink.port"),
            Some(Placeholder::Fixture("sink", FixturePart::Port))
        );
        assert_eq!(Placeholder::of("mode"), Some(Placeholder::Var("mode")));
        assert_eq!(Placeholder::of("host.server.addr"), Some(Placeholder::HostAddr("server")));
        for bad in ["fixture.sink.ip", "port.a.b", "x.y"] {
            assert_eq!(Placeholder::of(bad), None, "{bad}");
        }
    }
}
