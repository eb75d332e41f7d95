//! Who the client is: the socket's peer, or — only when that peer is a proxy the operator
//! trusts (`--trusted-proxy`) — the address the proxy forwarded. LibreSpeed's backends believe
//! `X-Forwarded-For` from anyone, so any visitor can pick the address it is recorded under.
//! Also the labels LibreSpeed gives private and local addresses instead of an ISP.

use std::net::IpAddr;

use hyper::HeaderMap;
use ipnet::IpNet;

/// The address a request is accounted to. Forwarded headers count only from `trusted` peers;
/// `X-Forwarded-For` is read from the right, past every trusted hop, so a client cannot place
/// its own choice in front of the proxy's.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = peer.to_canonical();
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().parse::<IpAddr>().map(|ip| ip.to_canonical()))
        .collect::<Result<_, _>>()
        // A list with garbage in it cannot be walked safely: the proxy's peer is all we know.
        .unwrap_or_default();
    if let Some(ip) = forwarded.iter().rev().find(|ip| !is_trusted(ip)) {
        return *ip;
    }
    let real =
        headers.get("x-real-ip").and_then(|v| v.to_str().ok()?.trim().parse::<IpAddr>().ok());
    match (forwarded.first(), real) {
        // Every hop was trusted: the first one is as far back as the chain goes.
        (Some(first), _) => *first,
        (None, Some(real)) => real.to_canonical(),
        (None, None) => peer,
    }
}

/// LibreSpeed's label for an address that no GeoIP database can place (its `getIP` strings,
/// plus carrier-grade NAT).
pub fn local_label(ip: IpAddr) -> Option<&'static str> {
    let ip = ip.to_canonical();
    let labels: &[(&str, &str)] = match ip {
        IpAddr::V4(_) => &[
            ("127.0.0.0/8", "localhost IPv4 access"),
            ("10.0.0.0/8", "private IPv4 access"),
            ("172.16.0.0/12", "private IPv4 access"),
            ("192.168.0.0/16", "private IPv4 access"),
            ("169.254.0.0/16", "link-local IPv4 access"),
            ("100.64.0.0/10", "CGNAT IPv4 access"),
        ],
        IpAddr::V6(_) => &[
            ("::1/128", "localhost IPv6 access"),
            ("fe80::/10", "link-local IPv6 access"),
            ("fc00::/7", "ULA IPv6 access"),
        ],
    };
    let within = |net: &str| net.parse::<IpNet>().is_ok_and(|n| n.contains(&ip));
    labels.iter().find(|(net, _)| within(net)).map(|(_, label)| *label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let spoof = headers(&[("x-forwarded-for", "1.2.3.4"), ("x-real-ip", "5.6.7.8")]);
        assert_eq!(client_ip(ip("203.0.113.9"), &spoof, &trusted), ip("203.0.113.9"));
        assert_eq!(client_ip(ip("10.1.1.1"), &spoof, &trusted), ip("1.2.3.4"));
        // The client's own claim sits left of what the proxy appended.
        let chain = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7, 10.2.2.2")]);
        assert_eq!(client_ip(ip("10.1.1.1"), &chain, &trusted), ip("198.51.100.7"));
        let garbage = headers(&[("x-forwarded-for", "198.51.100.7, <script>")]);
        assert_eq!(client_ip(ip("10.1.1.1"), &garbage, &trusted), ip("10.1.1.1"));
        let real = headers(&[("x-real-ip", "2001:db8::5")]);
        assert_eq!(client_ip(ip("10.1.1.1"), &real, &trusted), ip("2001:db8::5"));
        assert_eq!(client_ip(ip("::ffff:192.0.2.1"), &HeaderMap::new(), &[]), ip("192.0.2.1"));
    }

    #[test]
    fn local_addresses_get_librespeeds_labels() {
        assert_eq!(local_label(ip("127.0.0.1")), Some("localhost IPv4 access"));
        assert_eq!(local_label(ip("::1")), Some("localhost IPv6 access"));
        assert_eq!(local_label(ip("172.20.1.1")), Some("private IPv4 access"));
        assert_eq!(local_label(ip("fd00::1")), Some("ULA IPv6 access"));
        assert_eq!(local_label(ip("fe80::1")), Some("link-local IPv6 access"));
        assert_eq!(local_label(ip("100.127.0.1")), Some("CGNAT IPv4 access"));
        assert_eq!(local_label(ip("::ffff:10.0.0.1")), Some("private IPv4 access"));
        assert_eq!(local_label(ip("8.8.8.8")), None);
        assert_eq!(local_label(ip("2001:db8::1")), None);
    }
}
