//! The rule that keeps figures out of a template's prose: a digit may stand only inside a
//! placeholder, code (a span or a fenced block), a link's target, an HTML comment, an ISO date
//! (`2026-12-04`), or a word that begins with a letter (`iperf3`, `p99`, `h2`, `draft-09`).
//! Anything else is a figure typed by hand; a count that belongs to the method, not to the
//! results ("three repeats"), is written in words.

use super::PublishError;

/// Checks `body` (which begins at template line `first`); the error lists every typed figure.
pub fn check(body: &str, first: usize) -> Result<(), PublishError> {
    let mut typed = Vec::new();
    for (n, line) in strip(body).lines().enumerate() {
        for word in typed_figures(line) {
            typed.push(format!("line {}: '{word}'", first + n));
        }
    }
    if typed.is_empty() {
        return Ok(());
    }
    Err(PublishError::Prose(format!(
        "figures typed into the prose, not drawn from data (use a placeholder, or words for a count of the method): {}",
        typed.join("; ")
    )))
}

/// `text` with its fenced blocks, placeholders, code spans, link targets and comments blanked
/// out, line breaks kept (a code span or a comment may run over lines).
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let blank = |s: &str| -> String { s.chars().filter(|&c| c == '\n').collect() };
    loop {
        let fence = rest.find("```").filter(|&at| at == 0 || rest[..at].ends_with('\n'));
        let next = ["{{", "`", "](", "<!--"]
            .iter()
            .filter_map(|m| rest.find(m).map(|at| (at, *m)))
            .chain(fence.map(|at| (at, "```")))
            .min_by_key(|(at, m)| (*at, usize::MAX - m.len()));
        let Some((at, marker)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        out.push(' ');
        let after = &rest[at + marker.len()..];
        let close = match marker {
            "{{" => "}}",
            "`" => "`",
            "```" => "\n```",
            "](" => ")",
            _ => "-->",
        };
        let end = after.find(close).map_or(after.len(), |e| e + close.len());
        out.push_str(&blank(&after[..end]));
        rest = &after[end..];
    }
}

/// The words of `text` with a digit that no allowed form explains.
fn typed_figures(text: &str) -> Vec<String> {
    let is_word = |c: char| c.is_alphanumeric() || "_+-.,:/%".contains(c);
    text.split(|c: char| !is_word(c))
        .map(|w| w.trim_matches(|c: char| ".,:/-".contains(c)))
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .filter(|w| !w.starts_with(char::is_alphabetic) && !is_date(w))
        .map(str::to_owned)
        .collect()
}

/// `YYYY-MM-DD`.
fn is_date(w: &str) -> bool {
    let b = w.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_code_links_dates_and_names_may_hold_digits() {
        let ok =
            "Ran {{ ours[up/direct].median | rate:2 }} with `iperf3 -t 3` on 2026-12-04, p50 and\n\
                  h2 over [draft-09](https://example.org/rfc9000), three repeats <!-- note 42 -->\n\
                  ```\nwirespeed bench -t 10\n```\n<!-- a comment\nover 2 lines -->\n";
        check(ok, 1).unwrap();
    }

    #[test]
    fn a_figure_typed_anywhere_else_is_named_with_its_line() {
        let bad = "Every transport is 2.9–5.3× faster.\n\nIt ran for 10 s (3 runs), +13 %.\n| x | 25.3 |\n";
        let err = check(bad, 7).unwrap_err().to_string();
        for part in ["line 7: '2.9'", "'5.3'", "line 9: '10'", "'3'", "'+13'", "line 10: '25.3'"] {
            assert!(err.contains(part), "{part} in {err}");
        }
        assert!(check("A `code span` then 1.5 ms\n", 1).is_err());
        assert!(check("An unclosed {{ placeholder then 7\n", 1).is_ok());
        let spans = "a `code span\nover 2 lines` and\n```\nfenced 3\n```\nthen 4 here\n";
        assert!(check(spans, 1).unwrap_err().to_string().ends_with("line 6: '4'"), "lines kept");
    }
}
