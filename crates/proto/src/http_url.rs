//! `http://` and `https://` URLs as the HTTP tools need them: scheme, host, port, the path
//! sent on the request line and the `Host` header's value. Every rejection says why.

/// One parsed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// True for `https://`.
    pub secure: bool,
    /// Host name or address (without brackets).
    pub host: String,
    /// Port (80 or 443 unless the URL says otherwise).
    pub port: u16,
    /// Path and query, from `/`.
    pub path: String,
    /// The `Host` header's value (`host[:port]` as written).
    pub authority: String,
}

impl HttpUrl {
    /// Parses `http[s]://host[:port][/path]`.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (secure, rest) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
            _ => return Err(format!("'{url}': the URL must start with http:// or https://")),
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        // A fragment never goes on the wire.
        let path = path.split('#').next().unwrap_or("/").to_string();
        if authority.contains('@') {
            return Err(format!("'{url}': user names and passwords are not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| format!("'{url}': missing ']'"))?;
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => p.parse().map_err(|_| format!("'{url}': bad port '{p}'"))?,
            None if secure => 443,
            None => 80,
        };
        if host.is_empty() {
            return Err(format!("'{url}': no host"));
        }
        if path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(format!("'{url}': the path has spaces or control characters"));
        }
        Ok(Self { secure, host, port, path, authority: authority.to_string() })
    }

    /// `scheme://authority`: two URLs with the same origin can share connections.
    pub fn origin(&self) -> String {
        format!("{}://{}", if self.secure { "https" } else { "http" }, self.authority)
    }

    /// Resolves a redirect's `Location` against this URL: an absolute URL, an absolute path,
    /// or a path relative to this one's directory.
    pub fn join(&self, location: &str) -> Result<Self, String> {
        if location.contains("://") {
            return Self::parse(location);
        }
        let path = if location.starts_with('/') {
            location.to_string()
        } else {
            let dir = match self.path.split('?').next().unwrap_or("/").rfind('/') {
                Some(i) => &self.path[..=i],
                None => "/",
            };
            format!("{dir}{location}")
        };
        Self::parse(&format!("{}{path}", self.origin()))
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
        assert!(!t.secure);
        let t = HttpUrl::parse("http://[::1]").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("::1", 80, "/"));
        let t = HttpUrl::parse("HTTP://example.com?x#frag").unwrap();
        assert_eq!(t.path, "/?x");
        let t = HttpUrl::parse("https://localhost/").unwrap();
        assert_eq!((t.secure, t.port), (true, 443));
        assert_eq!(t.origin(), "https://localhost");
        for bad in ["ftp://x/", "http://", "http://x:99999/", "http://u@x/", "http://x/a b", "x"] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn redirects_resolve_against_the_url() {
        let base = HttpUrl::parse("http://h:81/a/b?q").unwrap();
        assert_eq!(base.join("/x").unwrap().path, "/x");
        assert_eq!(base.join("c?d").unwrap().path, "/a/c?d");
        let other = base.join("https://o/p").unwrap();
        assert_eq!((other.secure, other.host.as_str(), other.path.as_str()), (true, "o", "/p"));
        assert_eq!(base.join("/x").unwrap().authority, "h:81");
    }
}
