//! vegeta's targets files, so `wirespeed http` can replay the same request mixes: the `http`
//! format (a `METHOD URL` line, `Key: Value` header lines, an optional `@file` body line, a
//! blank line between targets, `#` comments) and the `json` format (one object per line with
//! `method`, `url`, optional base64 `body` and `header` map). Sans I/O: a body file is
//! returned as a path for the caller to read. Every error names its line.

use serde::Deserialize;

/// Most targets one file may hold.
pub const MAX_TARGETS: usize = 100_000;
/// Longest line accepted.
pub const MAX_LINE: usize = 64 * 1024;

/// A request body as a targets file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetBody {
    /// No body.
    None,
    /// Read from this file (the `@path` line).
    File(String),
    /// These bytes (the JSON format's base64 `body`).
    Bytes(Vec<u8>),
}

/// One request of a targets file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Method, upper case (vegeta accepts any upper-case word).
    pub method: String,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    /// Headers in file order, names as written (vegeta keeps their case).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: TargetBody,
}

/// A targets file that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TargetsError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, TargetsError> {
    Err(TargetsError { line, message: message.into() })
}

/// Checks that `url` is an absolute http(s) URL with a host, as the request will read it.
fn check_url(url: &str) -> Result<(), String> {
    crate::http_url::HttpUrl::parse(url).map(|_| ())
}

/// A `METHOD URL` line, if `line` is one.
fn request_line(line: &str) -> Option<(&str, &str)> {
    let (method, url) = line.split_once(' ')?;
    (!method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase()))
        .then_some((method, url.trim()))
}

/// Parses vegeta's `http` targets format.
pub fn parse_http(text: &str) -> Result<Vec<Target>, TargetsError> {
    let mut targets: Vec<Target> = Vec::new();
    // True while header lines may still follow the current target.
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.len() > MAX_LINE {
            return err(n, format!("a line of {} bytes (at most {MAX_LINE})", raw.len()));
        }
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            open = false;
            continue;
        }
        if let Some((method, url)) = request_line(line) {
            check_url(url).or_else(|m| err(n, m))?;
            if targets.len() == MAX_TARGETS {
                return err(n, format!("more than {MAX_TARGETS} targets"));
            }
            targets.push(Target {
                method: method.to_string(),
                url: url.to_string(),
                headers: Vec::new(),
                body: TargetBody::None,
            });
            open = true;
            continue;
        }
        let Some(current) = targets.last_mut().filter(|_| open) else {
            return err(n, format!("expected a target like 'GET http://host/path', got '{line}'"));
        };
        if let Some(path) = line.strip_prefix('@') {
            if path.is_empty() {
                return err(n, "'@' needs a file name");
            }
            current.body = TargetBody::File(path.to_string());
            // A body ends its target, as in vegeta.
            open = false;
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return err(n, format!("expected a header 'Key: Value' or '@file', got '{line}'"));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return err(n, "a header needs a name and a value");
        }
        current.headers.push((key.to_string(), value.to_string()));
    }
    if targets.is_empty() {
        return err(text.lines().count().max(1), "no targets");
    }
    Ok(targets)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    method: String,
    url: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    header: std::collections::BTreeMap<String, Vec<String>>,
}

/// Parses vegeta's `json` targets format: one object per line.
pub fn parse_json(text: &str) -> Result<Vec<Target>, TargetsError> {
    let mut targets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.len() > MAX_LINE {
            return err(n, format!("a line of {} bytes (at most {MAX_LINE})", line.len()));
        }
        let t: JsonTarget = serde_json::from_str(line).or_else(|e| err(n, e.to_string()))?;
        if t.method.is_empty() || !t.method.bytes().all(|b| b.is_ascii_uppercase()) {
            return err(n, format!("method '{}' is not an upper-case word", t.method));
        }
        check_url(&t.url).or_else(|m| err(n, m))?;
        let body = match t.body {
            None => TargetBody::None,
            Some(b) => TargetBody::Bytes(decode_base64(&b).or_else(|m| err(n, m))?),
        };
        let headers = t
            .header
            .into_iter()
            .flat_map(|(k, vs)| vs.into_iter().map(move |v| (k.clone(), v)))
            .collect();
        if targets.len() == MAX_TARGETS {
            return err(n, format!("more than {MAX_TARGETS} targets"));
        }
        targets.push(Target { method: t.method, url: t.url, headers, body });
    }
    if targets.is_empty() {
        return err(1, "no targets");
    }
    Ok(targets)
}

/// Standard base64 (with or without padding), as vegeta's JSON bodies are.
fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits = text.trim_end_matches('=').as_bytes();
    if digits.len() % 4 == 1 {
        return Err("the body is not valid base64 (bad length)".into());
    }
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c).ok_or("the body is not valid base64")? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http_format_as_vegeta_reads_it() {
        let text = "# a comment\n\nGET http://goku:9090/path/to/dragon?item=ball\nX-Account-ID: 8675309\n\n\
                    DELETE http://goku:9090/path/to/remove\nConfirmation-Token: 90215\n# skipped\nAuthorization: Token DEADBEEF\n\
                    POST http://goku:9090/things\n@/path/to/newthing.json\n";
        let t = parse_http(text).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(
            (t[0].method.as_str(), t[0].url.as_str()),
            ("GET", "http://goku:9090/path/to/dragon?item=ball")
        );
        assert_eq!(t[0].headers, vec![("X-Account-ID".to_string(), "8675309".to_string())]);
        assert_eq!(t[1].headers.len(), 2);
        assert_eq!(t[2].body, TargetBody::File("/path/to/newthing.json".into()));
    }

    #[test]
    fn http_format_errors_name_the_line() {
        let cases = [
            ("GET ftp://x/\n", 1, "must be http or https"),
            ("GET http://:80/\n", 1, "empty host"),
            ("GET http://x/\nno colon here\n", 2, "expected a header"),
            ("GET http://x/\n@/b\nX-After: 1\n", 3, "expected a target"),
            ("get http://x/\n", 1, "expected a target"),
            ("GET http://x/\nKey:\n", 2, "name and a value"),
            ("\n# only a comment\n", 2, "no targets"),
        ];
        for (text, line, what) in cases {
            let e = parse_http(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(what), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_json_format_with_base64_bodies() {
        let text = r#"{"method":"POST","url":"https://h/x","body":"aGVsbG8=","header":{"A":["1","2"]}}
{"method":"GET","url":"http://h:8080/"}"#;
        let t = parse_json(text).unwrap();
        assert_eq!(t[0].body, TargetBody::Bytes(b"hello".to_vec()));
        assert_eq!(t[0].headers.len(), 2);
        assert_eq!(t[1].body, TargetBody::None);
        let e = parse_json("{\"method\":\"GET\",\"url\":\"http://h/\"}\n{\"method\":\"GET\"}")
            .unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_json(r#"{"method":"GET","url":"http://h/","body":"!!"}"#).unwrap_err();
        assert!(e.message.contains("base64"), "{e}");
        assert_eq!(decode_base64("Zm9vYmFy").unwrap(), b"foobar");
        assert_eq!(decode_base64("Zm9vYg").unwrap(), b"foob");
    }
}
