//! `http://` and `https://` URLs as the HTTP tools need them: scheme, host, port, the path
//! sent on the request line, the `Host` header's value and the credentials of the user info.
//! Parsing and redirect resolution are the `url` crate's (the WHATWG URL standard: IPv6
//! literals, percent-encoding, IDNA, dot segments); this module only picks out what a request
//! needs and says why a URL is refused.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use url::{Host, Url};

/// One parsed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// True for `https://`.
    pub secure: bool,
    /// Host name or address (without brackets), as connected to and checked in TLS.
    pub host: String,
    /// Port (80 or 443 unless the URL says otherwise).
    pub port: u16,
    /// Path and query, from `/`, percent-encoded as they go on the request line.
    pub path: String,
    /// The `Host` header's value: the host, and the port when it is not the scheme's default.
    pub authority: String,
    /// The `Authorization` header's value (`Basic …`) when the URL carries a user name, as
    /// curl sends it; an `Authorization` header given with the request wins.
    pub basic_auth: Option<String>,
    parsed: Url,
}

impl HttpUrl {
    /// Parses an absolute `http[s]://[user[:password]@]host[:port][/path][?query]` URL; a
    /// fragment is dropped, as it never goes on the wire.
    pub fn parse(url: &str) -> Result<Self, String> {
        let parsed = Url::parse(url.trim()).map_err(|e| format!("'{url}': {e}"))?;
        Self::from_url(parsed).map_err(|why| format!("'{url}': {why}"))
    }

    fn from_url(parsed: Url) -> Result<Self, String> {
        let secure = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(format!("the scheme is {other}; it must be http or https")),
        };
        let host = match parsed.host() {
            Some(Host::Domain(d)) => d.to_string(),
            Some(Host::Ipv4(a)) => a.to_string(),
            Some(Host::Ipv6(a)) => a.to_string(),
            None => return Err("no host".into()),
        };
        let port = parsed.port_or_known_default().ok_or("no port")?;
        let authority = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err("no host".into()),
        };
        let path = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_string(),
        };
        let basic_auth = (!parsed.username().is_empty()).then(|| {
            let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
            let mut pair = decode(parsed.username());
            pair.push(b':');
            pair.extend(decode(parsed.password().unwrap_or_default()));
            format!("Basic {}", STANDARD.encode(&pair))
        });
        Ok(Self { secure, host, port, path, authority, basic_auth, parsed })
    }

    /// `scheme://authority`: two URLs with the same origin can share connections.
    pub fn origin(&self) -> String {
        format!("{}://{}", if self.secure { "https" } else { "http" }, self.authority)
    }

    /// Resolves a redirect's `Location` against this URL (RFC 3986 §5: an absolute URL, an
    /// absolute path, or a relative reference, dot segments removed).
    pub fn join(&self, location: &str) -> Result<Self, String> {
        let joined = self.parsed.join(location.trim()).map_err(|e| format!("'{location}': {e}"))?;
        Self::from_url(joined).map_err(|why| format!("'{location}': {why}"))
    }

    /// `url` as it may be shown and saved: a password in it replaced by `***`. Text that is
    /// not a URL is returned as it is.
    pub fn redacted(url: &str) -> String {
        match Url::parse(url.trim()) {
            Ok(mut u) if u.password().is_some() => {
                let _ = u.set_password(Some("***"));
                u.to_string()
            }
            _ => url.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_scheme_host_port_and_path() {
        let t = HttpUrl::parse("http://127.0.0.1:8080/a/b?c=1").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("127.0.0.1", 8080, "/a/b?c=1"));
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert!(!t.secure && t.basic_auth.is_none());
        let t = HttpUrl::parse("http://[::1]").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("::1", 80, "/"));
        assert_eq!(t.authority, "[::1]");
        let t = HttpUrl::parse("http://[::1]:8080/x").unwrap();
        assert_eq!((t.host.as_str(), t.authority.as_str()), ("::1", "[::1]:8080"));
        let t = HttpUrl::parse("HTTP://Example.COM?x#frag").unwrap();
        assert_eq!((t.host.as_str(), t.path.as_str()), ("example.com", "/?x"));
        let t = HttpUrl::parse("https://localhost/").unwrap();
        assert_eq!((t.secure, t.port), (true, 443));
        assert_eq!(t.origin(), "https://localhost");
        // The scheme's own port is not repeated in Host.
        assert_eq!(HttpUrl::parse("http://h:80/").unwrap().authority, "h");
        for bad in ["ftp://x/", "http://", "http://x:99999/", "http://[::1/", "x", "/relative"] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_are_percent_encoded_and_dot_segments_removed() {
        let t = HttpUrl::parse("http://h/a b/ü/../c?q=x y").unwrap();
        assert_eq!(t.path, "/a%20b/c?q=x%20y");
        // Already-encoded text is left as it is.
        assert_eq!(HttpUrl::parse("http://h/%41%20").unwrap().path, "/%41%20");
        // Names outside ASCII go on the wire in their IDNA (punycode) form.
        assert_eq!(HttpUrl::parse("http://bücher.test/").unwrap().host, "xn--bcher-kva.test");
    }

    #[test]
    fn user_info_becomes_basic_credentials_and_is_redacted_when_shown() {
        let t = HttpUrl::parse("http://alice:open%20sesame@h/").unwrap();
        // base64("alice:open sesame")
        assert_eq!(t.basic_auth.as_deref(), Some("Basic YWxpY2U6b3BlbiBzZXNhbWU="));
        assert_eq!((t.authority.as_str(), t.host.as_str()), ("h", "h"));
        assert_eq!(
            HttpUrl::parse("http://u@h/").unwrap().basic_auth.as_deref(),
            Some("Basic dTo=")
        );
        assert_eq!(HttpUrl::redacted("http://alice:pw@h:81/x"), "http://alice:***@h:81/x");
        assert_eq!(HttpUrl::redacted("http://h/x"), "http://h/x");
    }

    #[test]
    fn redirects_resolve_against_the_url() {
        let base = HttpUrl::parse("http://h:81/a/b?q").unwrap();
        assert_eq!(base.join("/x").unwrap().path, "/x");
        assert_eq!(base.join("c?d").unwrap().path, "/a/c?d");
        assert_eq!(base.join("../up").unwrap().path, "/up");
        assert_eq!(base.join("?only").unwrap().path, "/a/b?only");
        assert_eq!(base.join("//other:82/p").unwrap().authority, "other:82");
        let other = base.join("https://o/p").unwrap();
        assert_eq!((other.secure, other.host.as_str(), other.path.as_str()), (true, "o", "/p"));
        assert_eq!(base.join("/x").unwrap().authority, "h:81");
        assert!(base.join("ftp://x/").is_err());
    }
}
