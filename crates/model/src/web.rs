//! Browser speed-test results: one row per visitor's test, as the web server records it (from
//! its own page or from any LibreSpeed client's telemetry) and the results page lists it.
//!
//! The visitor's full address is never kept: only its network (`/24` for IPv4, `/56` for IPv6),
//! which is what the results page shows and what "one row per IP" replaces by.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Where a result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebSource {
    /// wirespeed's own page.
    Page,
    /// A LibreSpeed client's telemetry POST (the JS frontend, librespeed-cli).
    Telemetry,
}

impl WebSource {
    /// The name stored and shown.
    pub fn code(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Telemetry => "telemetry",
        }
    }

    /// The source named `code`.
    pub fn from_code(code: &str) -> Option<Self> {
        match code {
            "page" => Some(Self::Page),
            "telemetry" => Some(Self::Telemetry),
            _ => None,
        }
    }
}

/// One speed test from a browser or a LibreSpeed client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WebResult {
    /// Random, unguessable id (32 hex digits).
    pub id: String,
    /// When it was recorded, ms since the epoch.
    pub created_ms: i64,
    /// The visitor's network, e.g. `203.0.113.0/24` or `2001:db8:0:100::/56`.
    pub network: String,
    /// ISP (from the GeoIP database), or a label such as `private IPv4 access`.
    pub isp: String,
    /// Country name, when the GeoIP database knows it.
    pub country: String,
    /// Region or city, when the GeoIP database knows it.
    pub region: String,
    /// Download, bit/s: what the server sent, when it measured the test; else the client's claim.
    pub download_bps: Option<f64>,
    /// Upload, bit/s: what the server received, when it measured the test; else the claim.
    pub upload_bps: Option<f64>,
    /// Round-trip time the client measured, ms.
    pub ping_ms: Option<f64>,
    /// Jitter the client measured, ms.
    pub jitter_ms: Option<f64>,
    /// True when `download_bps` is the server's own measurement.
    pub download_by_server: bool,
    /// True when `upload_bps` is the server's own measurement.
    pub upload_by_server: bool,
    /// The download figure the client reported, bit/s.
    pub claimed_download_bps: Option<f64>,
    /// The upload figure the client reported, bit/s.
    pub claimed_upload_bps: Option<f64>,
    /// The client's User-Agent.
    pub user_agent: String,
    /// The client's Accept-Language.
    pub lang: String,
    /// Which client sent it.
    pub source: WebSource,
}

/// The network a result is kept under: the address with its host part zeroed (`/24` for
/// IPv4, `/56` for IPv6; an IPv4-mapped IPv6 address counts as IPv4).
pub fn network_of(ip: IpAddr) -> String {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[7..].fill(0);
            format!("{}/56", std::net::Ipv6Addr::from(o))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_hide_the_host() {
        assert_eq!(network_of("203.0.113.77".parse().unwrap()), "203.0.113.0/24");
        assert_eq!(network_of("2001:db8:1:2345:6789::1".parse().unwrap()), "2001:db8:1:2300::/56");
        assert_eq!(network_of("::ffff:192.0.2.9".parse().unwrap()), "192.0.2.0/24");
        assert_eq!(network_of("::1".parse().unwrap()), "::/56");
        assert_eq!(WebSource::from_code(WebSource::Page.code()), Some(WebSource::Page));
    }
}
