//! Splitting a command line into words as a POSIX shell would for simple commands — spaces
//! separate, single quotes keep everything, double quotes keep everything but `\"` and `\\`,
//! a backslash outside quotes escapes the next character — without running a shell, so a
//! scenario's commands cannot expand globs, variables or `$(…)` by accident.

/// A line that is not words: a quote left open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unclosed {quote} in {line:?}")]
pub struct Unclosed {
    /// The quote: `'` or `"`.
    pub quote: char,
    /// The line.
    pub line: String,
}

/// The words of `line`; an unclosed quote is an error.
pub fn split(line: &str) -> Result<Vec<String>, Unclosed> {
    let unclosed = |quote| Unclosed { quote, line: line.to_string() };
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unclosed('\'')),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unclosed('"')),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unclosed('"')),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(split("  gost -L tcp://:1 ").unwrap(), ["gost", "-L", "tcp://:1"]);
        assert_eq!(
            split(r#"sh -c 'echo $HOME; ls' "a \"b\"" c\ d ''"#).unwrap(),
            ["sh", "-c", "echo $HOME; ls", "a \"b\"", "c d", ""]
        );
        assert_eq!(split("echo 'oops").unwrap_err().to_string(), r#"unclosed ' in "echo 'oops""#);
        assert_eq!(split("echo \"oops").unwrap_err().quote, '"');
        assert!(split("").unwrap().is_empty());
    }
}
