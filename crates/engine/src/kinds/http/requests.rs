//! The requests a load test sends, each built once as the bytes written again and again: the
//! URL's request, or every request of a targets file (sent round-robin). Redirects are built
//! here too, when `--follow` asks for them.

use wirespeed_proto::http_url::HttpUrl;

/// One request, ready to write.
#[derive(Debug, Clone)]
pub struct Request {
    /// Method.
    pub method: String,
    /// Where it goes.
    pub url: HttpUrl,
    /// Headers beyond Host, User-Agent, Content-Length and Connection.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Request {
    /// The request's head for the multiplexed protocols (HTTP/2 and HTTP/3), for `origin`
    /// (`scheme://authority`): the method, the URI, our User-Agent, its headers, and the
    /// URL's Basic credentials unless a header gives its own.
    pub(super) fn head(&self, origin: &str) -> hyper::http::request::Builder {
        let mut builder = hyper::Request::builder()
            .method(self.method.as_str())
            .uri(format!("{origin}{}", self.url.path))
            .header("user-agent", concat!("wirespeed/", env!("CARGO_PKG_VERSION")));
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let given = self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if let Some(credentials) = self.url.basic_auth.as_deref().filter(|_| !given) {
            builder = builder.header("authorization", credentials);
        }
        builder
    }
}

/// The requests of one test, and how to write them.
#[derive(Debug, Clone)]
pub struct RequestSet {
    /// The requests, in round-robin order.
    pub requests: Vec<Request>,
    /// Each request's bytes.
    wire: Vec<Vec<u8>>,
    keepalive: bool,
    user_agent: String,
}

impl RequestSet {
    /// Builds each request's bytes.
    pub fn new(requests: Vec<Request>, keepalive: bool, version: &str) -> Self {
        let user_agent = format!("wirespeed/{version}");
        let wire =
            requests.iter().map(|r| encode(r, &r.url, &r.method, keepalive, &user_agent)).collect();
        Self { requests, wire, keepalive, user_agent }
    }

    /// How many requests there are.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Request `i`'s bytes.
    pub fn wire(&self, i: usize) -> &[u8] {
        &self.wire[i]
    }

    /// True when request `i` is a HEAD (its answer has no body).
    pub fn is_head(&self, i: usize) -> bool {
        self.requests[i].method == "HEAD"
    }

    /// The bytes of the request that follows a `status` redirect of request `i` to `to`:
    /// 303 (and 301/302 after a POST, as browsers do) becomes a GET without a body; 307 and
    /// 308 repeat the method and body.
    pub fn redirected(&self, i: usize, status: u16, to: &HttpUrl) -> (Vec<u8>, bool) {
        let r = &self.requests[i];
        let to_get = status == 303 || (matches!(status, 301 | 302) && r.method == "POST");
        let method = if to_get { "GET" } else { r.method.as_str() };
        let mut follow = r.clone();
        if to_get {
            follow.body.clear();
        }
        (encode(&follow, to, method, self.keepalive, &self.user_agent), method == "HEAD")
    }
}

fn encode(r: &Request, url: &HttpUrl, method: &str, keepalive: bool, user_agent: &str) -> Vec<u8> {
    let mut head = format!("{method} {} HTTP/1.1\r\nHost: {}\r\n", url.path, url.authority);
    let has = |name: &str| r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if !has("user-agent") {
        head.push_str(&format!("User-Agent: {user_agent}\r\n"));
    }
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(credentials) = url.basic_auth.as_deref().filter(|_| !has("authorization")) {
        head.push_str(&format!("Authorization: {credentials}\r\n"));
    }
    if !r.body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        head.push_str(&format!("Content-Length: {}\r\n", r.body.len()));
    }
    if !keepalive {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&r.body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(method: &str, body: &[u8]) -> RequestSet {
        let url = HttpUrl::parse("http://h:81/a?b").unwrap();
        let r = Request {
            method: method.into(),
            url,
            headers: vec![("X-A".into(), "1".into())],
            body: body.to_vec(),
        };
        RequestSet::new(vec![r], true, "9")
    }

    #[test]
    fn requests_are_built_once_with_their_headers() {
        let s = set("POST", b"hi");
        let text = String::from_utf8(s.wire(0).to_vec()).unwrap();
        assert_eq!(
            text,
            "POST /a?b HTTP/1.1\r\nHost: h:81\r\nUser-Agent: wirespeed/9\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn redirects_change_the_method_as_browsers_do() {
        let to = HttpUrl::parse("http://h:81/next").unwrap();
        let s = set("POST", b"hi");
        let (see_other, _) = s.redirected(0, 303, &to);
        assert!(see_other.starts_with(b"GET /next HTTP/1.1\r\n"));
        assert!(!see_other.ends_with(b"hi"));
        let (temporary, _) = s.redirected(0, 307, &to);
        assert!(temporary.starts_with(b"POST /next HTTP/1.1\r\n"));
        assert!(temporary.ends_with(b"\r\n\r\nhi"));
    }
}
