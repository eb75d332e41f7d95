//! What a test is asked to do. The command line and scenario files both resolve into a
//! [`TestSpec`]: the one description of a run everywhere, in the report and in the store.

use serde::{Deserialize, Serialize};

use crate::kind::{Kind, KindSpec};
use crate::kinds::bandwidth::BandwidthSpec;
use crate::member::{Member, ShareError, ShareRun};

/// One variant per test kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Responsiveness under working conditions (RPM) against an HTTP/2 server.
    Rpm(Box<crate::kinds::rpm::RpmSpec>),
}

impl TestSpec {
    /// The part of this run that `member` does (the rule: [`crate::member`]). Refused when a
    /// member would be left with nothing to do (fewer connections than members) or for a kind
    /// that measures a path rather than making load. Each kind shares its own (`ShareRun`).
    pub fn share(&self, member: &Member) -> Result<TestSpec, ShareError> {
        if member.members == 1 {
            return Ok(self.clone());
        }
        Ok(match self {
            TestSpec::Bandwidth(s) => TestSpec::Bandwidth(s.share(member)?),
            TestSpec::Latency(s) => TestSpec::Latency(s.share(member)?),
            TestSpec::Cps(s) => TestSpec::Cps(s.share(member)?),
            TestSpec::Ping(s) => TestSpec::Ping(s.share(member)?),
            TestSpec::Trace(s) => TestSpec::Trace(s.share(member)?),
            TestSpec::Http(s) => TestSpec::Http(Box::new(s.share(member)?)),
            TestSpec::Dns(s) => TestSpec::Dns(Box::new(s.share(member)?)),
            TestSpec::Rpm(s) => TestSpec::Rpm(Box::new(s.share(member)?)),
        })
    }
}

impl TestSpec {
    /// The spec as the kind-independent questions see it.
    pub fn as_kind(&self) -> &dyn KindSpec {
        match self {
            TestSpec::Bandwidth(s) => s,
            TestSpec::Latency(s) => s,
            TestSpec::Cps(s) => s,
            TestSpec::Ping(s) => s,
            TestSpec::Trace(s) => s,
            TestSpec::Http(s) => s.as_ref(),
            TestSpec::Dns(s) => s.as_ref(),
            TestSpec::Rpm(s) => s.as_ref(),
        }
    }

    /// The test kind.
    pub fn kind(&self) -> Kind {
        self.as_kind().kind()
    }

    /// What is measured, as the user named it.
    pub fn target(&self) -> &str {
        self.as_kind().target()
    }

    /// How long a test that ends by time is planned to run, warm-up included.
    pub fn planned_ns(&self) -> Option<u64> {
        self.as_kind().planned_ns().filter(|&ns| ns > 0)
    }
}
