//! What a running test reports as it goes. The engine emits [`Event`]s; the live view, the
//! NDJSON stream renderer and the collector all read the same stream.

use serde::{Deserialize, Serialize};

use crate::kinds::bandwidth::BandwidthInterval;
use crate::kinds::cps::CpsInterval;
use crate::kinds::dns::DnsInterval;
use crate::kinds::http::HttpInterval;
use crate::kinds::latency::LatencyInterval;
use crate::kinds::ping::PingProbe;
use crate::kinds::trace::TraceRound;
use crate::report::{Meta, Report};
use crate::spec::TestSpec;

/// One thing that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // events are few (one per interval); boxing buys nothing
pub enum Event {
    /// The server accepted the test and data is about to flow.
    Start {
        /// The test as run (after any server-imposed caps).
        spec: TestSpec,
        /// Facts about the run.
        meta: Meta,
    },
    /// A bandwidth interval is complete (both ends' figures merged).
    Interval(BandwidthInterval),
    /// A latency interval is complete.
    LatencyInterval(LatencyInterval),
    /// A connections-per-second interval is complete.
    CpsInterval(CpsInterval),
    /// A ping probe ended (answered, lost or failed).
    PingProbe(PingProbe),
    /// A trace round ended; the hops as they stand.
    TraceRound(TraceRound),
    /// An HTTP load interval is complete.
    HttpInterval(HttpInterval),
    /// A DNS load interval is complete.
    DnsInterval(DnsInterval),
    /// Something the user should know that does not stop the test.
    Notice(String),
    /// The test finished; the full report.
    End(Box<Report>),
}
