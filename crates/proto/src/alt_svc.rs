//! The Alt-Svc header (RFC 7838 §3): the alternative services an HTTP answer offers for its
//! origin, such as `h3=":443"; ma=86400, h3-29=":443"`. `http --alt-svc` reads it to find
//! a server's HTTP/3.

/// One alternative service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    /// Its ALPN protocol ID, percent-decoded (`h3`).
    pub protocol: String,
    /// Its host, when it names one (else the origin's).
    pub host: Option<String>,
    /// Its port.
    pub port: u16,
    /// How long it may be used, seconds (`ma`; RFC 7838's default is a day).
    pub max_age: u64,
}

/// What an Alt-Svc header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AltSvc {
    /// `clear`: forget every alternative.
    Clear,
    /// The alternatives, in the server's order of preference.
    Offer(Vec<Alternative>),
}

/// RFC 7838's default freshness: 24 hours.
const DEFAULT_MAX_AGE: u64 = 86_400;

/// Parses one Alt-Svc header value; why not, for a malformed one.
pub fn parse(value: &str) -> Result<AltSvc, String> {
    let value = value.trim();
    if value == "clear" {
        return Ok(AltSvc::Clear);
    }
    let mut offers = Vec::new();
    for item in split_outside_quotes(value, ',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        offers.push(alternative(item)?);
    }
    if offers.is_empty() {
        return Err("no alternative in it".into());
    }
    Ok(AltSvc::Offer(offers))
}

impl AltSvc {
    /// The first alternative offering `protocol`.
    pub fn first(&self, protocol: &str) -> Option<&Alternative> {
        match self {
            AltSvc::Clear => None,
            AltSvc::Offer(all) => all.iter().find(|a| a.protocol == protocol),
        }
    }
}

/// `protocol="[host]:port" *( ; parameter )`.
fn alternative(item: &str) -> Result<Alternative, String> {
    let mut parts = split_outside_quotes(item, ';').into_iter();
    let head = parts.next().unwrap_or_default().trim();
    let (protocol, authority) =
        head.split_once('=').ok_or_else(|| format!("'{head}' is not protocol=\"host:port\""))?;
    let protocol = percent_decode(protocol.trim())?;
    if protocol.is_empty() {
        return Err(format!("'{head}' has no protocol"));
    }
    let authority = unquote(authority.trim())
        .ok_or_else(|| format!("'{head}': the authority must be a quoted \"host:port\""))?;
    let (host, port) =
        authority.rsplit_once(':').ok_or_else(|| format!("'{authority}' has no :port"))?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("'{authority}': the port must be 1 to 65535"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut max_age = DEFAULT_MAX_AGE;
    for p in parts {
        let Some((k, v)) = p.trim().split_once('=') else { continue };
        if k.trim().eq_ignore_ascii_case("ma") {
            let v = unquote(v.trim()).unwrap_or(v.trim().to_string());
            max_age = v.parse().map_err(|_| format!("ma={v}: not a number of seconds"))?;
        }
    }
    Ok(Alternative { protocol, host: (!host.is_empty()).then(|| host.to_string()), port, max_age })
}

/// `s` cut at each `sep` that is not inside a quoted string.
fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut quoted, mut escaped, mut start) = (false, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A quoted string's content, its escapes undone; `None` when `s` is not one.
fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// A protocol ID with its %XX escapes decoded (RFC 7838 §3: `h2%3D` is `h2=`).
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex =
                s.get(i + 1..i + 3).ok_or_else(|| format!("'{s}': a % without two digits"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("'{s}': bad %{hex}"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}' is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h3(host: Option<&str>, port: u16, max_age: u64) -> Alternative {
        Alternative { protocol: "h3".into(), host: host.map(str::to_string), port, max_age }
    }

    #[test]
    fn what_servers_send_is_read() {
        // Caddy's, Cloudflare's and Google's forms.
        assert_eq!(
            parse(r#"h3=":443"; ma=2592000"#).unwrap().first("h3"),
            Some(&h3(None, 443, 2_592_000))
        );
        let google = parse(r#"h3-29=":443"; ma=2592000,h3=":8443"; ma=60, quic=":443""#).unwrap();
        assert_eq!(google.first("h3"), Some(&h3(None, 8443, 60)));
        let elsewhere = parse(r#"h3="alt.example.test:4433""#).unwrap();
        assert_eq!(elsewhere.first("h3"), Some(&h3(Some("alt.example.test"), 4433, 86_400)));
        let v6 = parse(r#"h3="[::1]:4433"; persist=1"#).unwrap();
        assert_eq!(v6.first("h3"), Some(&h3(Some("::1"), 4433, 86_400)));
        assert_eq!(parse("clear").unwrap(), AltSvc::Clear);
        assert_eq!(parse("clear").unwrap().first("h3"), None);
        assert_eq!(parse(r#"h2=":443""#).unwrap().first("h3"), None);
        // A comma or semicolon inside quotes is the authority's, not a separator.
        let odd = parse(r#"h%33=":443"; foo="a,b;c", h2=":1""#).unwrap();
        assert_eq!(odd.first("h3").map(|a| a.port), Some(443));
    }

    #[test]
    fn malformed_values_say_why() {
        for (bad, says) in [
            ("", "no alternative"),
            ("h3", "is not protocol="),
            ("h3=:443", "quoted"),
            (r#"h3="example""#, "no :port"),
            (r#"h3=":0""#, "1 to 65535"),
            (r#"h3=":99999""#, "1 to 65535"),
            (r#"h3=":443"; ma=soon"#, "not a number"),
            (r#"%zz=":443""#, "bad %zz"),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
