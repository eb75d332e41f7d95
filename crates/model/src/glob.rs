//! Name patterns as people type them for systems and workloads: `*` for any run of characters,
//! `{a,b}` for one of the choices (`gost-*`, `tcp-{upload,download}`).

/// Whether `text` matches `pattern`: `*` any run of characters, `{a,b}` one of the choices,
/// anything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    if let Some(open) = pattern.find('{') {
        let Some(close) = pattern[open..].find('}').map(|c| open + c) else {
            return pattern == text;
        };
        let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
        return pattern[open + 1..close]
            .split(',')
            .any(|choice| glob(&format!("{head}{choice}{tail}"), text));
    }
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(after) = text.strip_prefix(head) else { return false };
            (0..=after.len())
                .filter(|&i| after.is_char_boundary(i))
                .any(|i| glob(rest, &after[i..]))
        }
    }
}

/// Whether `pattern` can match more than one text.
pub fn is_pattern(pattern: &str) -> bool {
    pattern.contains('*') || pattern.contains('{')
}

/// What `pattern`'s one `*` matched in `text` (`rate=*` in `rate=100` is `100`); the whole of
/// `text` when the pattern has no `*`, several, or choices.
pub fn capture<'t>(pattern: &str, text: &'t str) -> &'t str {
    let Some((head, tail)) = pattern.split_once('*') else { return text };
    if tail.contains('*') || pattern.contains('{') || !glob(pattern, text) {
        return text;
    }
    &text[head.len()..text.len() - tail.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_and_choices() {
        assert!(glob("gost-*", "gost-relay+ws"));
        assert!(glob("tcp-{upload,download}", "tcp-download"));
        assert!(!glob("tcp-{upload,download}", "tcp-latency"));
        assert!(glob("*+ws", "gost-relay+ws") && !glob("*-ws", "gost-wss"));
        assert!(glob("gost-m*s", "gost-mwss") && glob("a", "a") && !glob("a", "ab"));
    }

    #[test]
    fn a_single_star_captures_what_it_matched() {
        assert_eq!(capture("latency[rate=*]", "latency[rate=100]"), "100");
        assert_eq!(capture("gost-*", "gost-relay+ws"), "relay+ws");
        assert_eq!(capture("*-{a,b}", "x-a"), "x-a");
        assert_eq!(capture("a*b*", "aXbY"), "aXbY");
    }
}
