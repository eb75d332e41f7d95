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
    /// Median round trip the client measured while it downloaded, ms (wirespeed's own page;
    /// LibreSpeed clients do not measure it).
    #[serde(default)]
    pub latency_down_ms: Option<f64>,
    /// Median round trip the client measured while it uploaded, ms.
    #[serde(default)]
    pub latency_up_ms: Option<f64>,
    /// The bufferbloat grade of the latency the load added, as `wirespeed rpm` grades it
    /// ([`latency_grade`]).
    #[serde(default)]
    pub latency_grade: Option<String>,
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

/// The grade of the latency a load added to `idle_ms`: the larger of the download's and the
/// upload's, on the scale `wirespeed rpm` uses ([`crate::kinds::rpm::grade`], Waveform's). A
/// loaded round trip shorter than the idle one adds nothing. `None` without an idle figure or
/// any loaded one.
pub fn latency_grade(
    idle_ms: Option<f64>,
    down_ms: Option<f64>,
    up_ms: Option<f64>,
) -> Option<&'static str> {
    let idle = idle_ms?;
    let worst = down_ms.into_iter().chain(up_ms).reduce(f64::max)?;
    let added_ns = ((worst - idle).max(0.0) * 1e6).min(u64::MAX as f64) as u64;
    Some(crate::kinds::rpm::grade(added_ns))
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

    #[test]
    fn the_worse_direction_grades_the_added_latency() {
        assert_eq!(latency_grade(Some(10.0), Some(12.0), Some(14.9)), Some("A+"));
        assert_eq!(latency_grade(Some(10.0), Some(12.0), Some(75.0)), Some("C"));
        assert_eq!(latency_grade(Some(10.0), Some(1100.0), None), Some("F"));
        assert_eq!(latency_grade(Some(10.0), Some(5.0), Some(9.0)), Some("A+"), "nothing added");
        assert_eq!(latency_grade(None, Some(50.0), Some(50.0)), None, "no idle figure");
        assert_eq!(latency_grade(Some(10.0), None, None), None, "no loaded figure");
    }
}
