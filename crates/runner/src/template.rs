//! Command and config-file templates: `{NAME}` is replaced, where NAME is a letter or `_`
//! followed by letters, digits, `_`, `.` and `-` (`{port.entry}`, `{fixture.sink.addr}`,
//! `{transport}`). Anything else in braces is left as written, so config formats that use
//! braces themselves (TOML inline tables, JSON) need no escaping. `{env.NAME}` is the
//! environment's, replaced in the scenario's text before it is read (`with_env`).

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

/// `text` (a scenario file) with every `{env.NAME}` replaced by the environment variable NAME
/// (`lookup`), or by DEFAULT where it is unset and the placeholder is `{env.NAME:-DEFAULT}`,
/// before the file is parsed, so a value may go anywhere, an axis value or a client's program
/// included (`OLD=/tmp/before/wirespeed wirespeed bench builds.toml`). The error is the byte
/// offset of the first it cannot replace, and why: unset with no default, or a value that would
/// change the file's syntax (a quote, backslash or control character). Comment lines are left
/// as written.
pub fn with_env(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, (usize, String)> {
    const OPEN: &str = "{env.";
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = text[at..].find(OPEN) {
        let start = at + found;
        let rest = &text[start + OPEN.len()..];
        let name_len =
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let name = &rest[..name_len];
        let after = &rest[name_len..];
        // `}` ends it; `:-DEFAULT}` gives it a default (on the same line).
        let default = match after.strip_prefix(":-") {
            _ if after.starts_with('}') => Some(None),
            Some(d) => {
                d.find(['}', '\n']).filter(|&e| d.as_bytes()[e] == b'}').map(|e| Some(&d[..e]))
            }
            None => None,
        };
        // Not an env placeholder after all (`{env.}`, `{env.A-B}`): left as written.
        let Some(default) = default.filter(|_| !name.is_empty()) else {
            out.push_str(&text[at..start + OPEN.len()]);
            at = start + OPEN.len();
            continue;
        };
        let shown = match default {
            Some(d) => format!("{{env.{name}:-{d}}}"),
            None => format!("{{env.{name}}}"),
        };
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..start].trim_start().starts_with('#') {
            // A comment may name one without needing it.
            out.push_str(&text[at..start + shown.len()]);
            at = start + shown.len();
            continue;
        }
        let value = match (lookup(name), default) {
            (Some(v), _) => v,
            (None, Some(d)) => d.to_string(),
            (None, None) => {
                return Err((start, format!("{shown}: {name} is not set in the environment")))
            }
        };
        if value.chars().any(|c| matches!(c, '"' | '\'' | '\\') || c.is_control()) {
            return Err((
                start,
                format!(
                    "{shown}: the value {value:?} holds a quote, backslash or control character"
                ),
            ));
        }
        out.push_str(&text[at..start]);
        out.push_str(&value);
        at = start + shown.len();
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_are_replaced_before_the_file_is_read() {
        let env = |n: &str| match n {
            "OLD" => Some("/tmp/old/wirespeed".to_string()),
            "BAD" => Some("a\"b".to_string()),
            _ => None,
        };
        let text = "bin = \"{env.OLD}\"\ncmd = \"{bin} {port.main}\"";
        assert_eq!(
            with_env(text, env).unwrap(),
            "bin = \"/tmp/old/wirespeed\"\ncmd = \"{bin} {port.main}\""
        );
        let (at, why) = with_env("x = 1\ny = \"{env.NEW}\"", env).unwrap_err();
        assert_eq!(at, 11);
        assert_eq!(why, "{env.NEW}: NEW is not set in the environment");
        let (_, why) = with_env("y = \"{env.BAD}\"", env).unwrap_err();
        assert!(why.contains("holds a quote"), "{why}");
        // A default where it is unset, none where it is set; other braces are left alone.
        assert_eq!(
            with_env("{env.NEW:-wirespeed} {env.OLD:-x}", env).unwrap(),
            "wirespeed /tmp/old/wirespeed"
        );
        assert_eq!(
            with_env("{env.} {env.A-B} {env.C:-d", env).unwrap(),
            "{env.} {env.A-B} {env.C:-d"
        );
        assert_eq!(with_env("  # set {env.NEW}\nx = 1", env).unwrap(), "  # set {env.NEW}\nx = 1");
    }

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
