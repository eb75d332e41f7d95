//! What a running test reports as it goes. The engine emits [`Event`]s; the live view, the
//! NDJSON stream renderer and the collector all read the same stream.

use serde::{Deserialize, Serialize};

use crate::kinds::bandwidth::BandwidthInterval;
use crate::kinds::cps::CpsInterval;
use crate::kinds::dns::DnsInterval;
use crate::kinds::http::HttpInterval;
use crate::kinds::latency::LatencyInterval;
use crate::kinds::ping::PingProbe;
use crate::kinds::rpm::RpmInterval;
use crate::kinds::trace::TraceRound;
use crate::report::{Meta, Report, ReportBody};
use crate::spec::TestSpec;

/// One thing that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// An interval of a responsiveness test's leg is complete.
    RpmInterval(RpmInterval),
    /// Something the user should know that does not stop the test.
    Notice(String),
    /// The test finished; the full report.
    End(Box<Report>),
}

impl Event {
    /// The events a finished report stands for: its start, each interval (or probe), its end.
    /// A trace keeps no rounds: its hops are in the end event.
    pub fn replay(report: &Report) -> Vec<Event> {
        let start = Event::Start { spec: report.body.spec(), meta: report.meta.clone() };
        let mut events = vec![start];
        match &report.body {
            ReportBody::Bandwidth(r) => {
                events.extend(r.intervals.iter().cloned().map(Event::Interval))
            }
            ReportBody::Latency(r) => {
                events.extend(r.intervals.iter().cloned().map(Event::LatencyInterval))
            }
            ReportBody::Cps(r) => {
                events.extend(r.intervals.iter().cloned().map(Event::CpsInterval))
            }
            ReportBody::Ping(r) => events.extend(r.probes.iter().cloned().map(Event::PingProbe)),
            ReportBody::Trace(_) => {}
            ReportBody::Http(r) => {
                events.extend(r.intervals.iter().cloned().map(Event::HttpInterval))
            }
            ReportBody::Dns(r) => {
                events.extend(r.intervals.iter().cloned().map(Event::DnsInterval))
            }
            ReportBody::Rpm(r) => {
                events.extend(r.intervals.iter().cloned().map(Event::RpmInterval))
            }
        }
        events.push(Event::End(Box::new(report.clone())));
        events
    }
}
