//! What a test is asked to do. The command line and scenario files both resolve into a
//! [`TestSpec`]: the one description of a run everywhere, in the report and in the store.

use serde::{Deserialize, Serialize};

use crate::kinds::bandwidth::BandwidthSpec;

/// One variant per test kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TestSpec {
    /// TCP or UDP throughput between a client and a wirespeed server.
    Bandwidth(BandwidthSpec),
    /// Request/response round trips against a wirespeed server.
    Latency(crate::kinds::latency::LatencySpec),
    /// New TCP connections per second against a wirespeed server or any TCP listener.
    Cps(crate::kinds::cps::CpsSpec),
    /// Reachability and round trips, one probe at a time (ICMP, TCP, UDP or HTTP).
    Ping(crate::kinds::ping::PingSpec),
    /// The path to a host, hop by hop (traceroute, and mtr's continuous mode).
    Trace(crate::kinds::trace::TraceSpec),
    /// HTTP load: requests per second and latency against any HTTP server.
    Http(Box<crate::kinds::http::HttpSpec>),
    /// DNS load: queries per second, loss and latency against any DNS server.
    Dns(Box<crate::kinds::dns::DnsSpec>),
}
