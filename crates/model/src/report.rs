//! The finished result of a run: what renderers print and what the store keeps.
//!
//! A [`Report`] serialises as one JSON document with `kind`, `spec`, `meta`, `intervals` and
//! `summary`; metric names carry their unit as a suffix (`_bps`, `_bytes`, `_ns`, `_ratio`).

use serde::{Deserialize, Serialize};

use crate::kinds::bandwidth::BandwidthReport;

/// A finished run of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The kind-specific part: `kind`, `spec`, `intervals`, `summary`.
    #[serde(flatten)]
    pub body: ReportBody,
    /// Who ran it, where, when, with which version.
    pub meta: Meta,
}

/// One variant per test kind, tagged by `kind` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // one report per run; boxing buys nothing
pub enum ReportBody {
    /// A bandwidth test.
    Bandwidth(BandwidthReport),
    /// A latency test.
    Latency(crate::kinds::latency::LatencyReport),
    /// A connections-per-second test.
    Cps(crate::kinds::cps::CpsReport),
    /// A ping.
    Ping(crate::kinds::ping::PingReport),
    /// A trace.
    Trace(crate::kinds::trace::TraceReport),
    /// An HTTP load test.
    Http(crate::kinds::http::HttpReport),
    /// A DNS load test.
    Dns(crate::kinds::dns::DnsReport),
}

/// Every name [`Report::kind`] gives, as `history --kind` takes them (pps runs are bandwidth
/// reports).
pub const REPORT_KINDS: [&str; 7] = ["bandwidth", "latency", "cps", "ping", "trace", "http", "dns"];

impl Report {
    /// The test kind's name, as in JSON's `kind` (one of [`REPORT_KINDS`]).
    pub fn kind(&self) -> &'static str {
        match self.body {
            ReportBody::Bandwidth(_) => "bandwidth",
            ReportBody::Latency(_) => "latency",
            ReportBody::Cps(_) => "cps",
            ReportBody::Ping(_) => "ping",
            ReportBody::Trace(_) => "trace",
            ReportBody::Http(_) => "http",
            ReportBody::Dns(_) => "dns",
        }
    }

    /// The target the run measured.
    pub fn target(&self) -> &str {
        match &self.body {
            ReportBody::Bandwidth(b) => &b.spec.target,
            ReportBody::Latency(l) => &l.spec.target,
            ReportBody::Cps(c) => &c.spec.target,
            ReportBody::Ping(p) => &p.spec.target,
            ReportBody::Trace(t) => &t.spec.target,
            ReportBody::Http(h) => &h.spec.url,
            ReportBody::Dns(d) => &d.spec.server,
        }
    }
}

/// Facts about a run that are not measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// wirespeed version that produced the report.
    pub version: String,
    /// Host name of the machine that ran the client.
    pub host: String,
    /// Wall-clock start, RFC 3339 in UTC.
    pub start_time: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub start_unix_ms: u64,
    /// Client address of the control connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_addr: Option<String>,
    /// Server address of the control connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_addr: Option<String>,
    /// Version the server announced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Things a reader should know (a rate the server capped, an option the OS ignored, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
