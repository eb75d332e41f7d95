//! What a running test reports as it goes. The engine emits [`Event`]s; the live view, the
//! NDJSON stream renderer and the collector all read the same stream.

use serde::{Deserialize, Serialize};

use crate::kinds::bandwidth::{BandwidthInterval, BandwidthReport};
use crate::kinds::cps::{CpsInterval, CpsReport};
use crate::kinds::dns::{DnsInterval, DnsReport};
use crate::kinds::http::{HttpInterval, HttpReport};
use crate::kinds::latency::{LatencyInterval, LatencyReport};
use crate::kinds::ping::{PingProbe, PingReport};
use crate::kinds::rpm::{RpmInterval, RpmReport};
use crate::kinds::trace::{TraceReport, TraceRound};
use crate::report::{BodyVariant, Meta, Report, ReportBody};
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
        events.extend(match &report.body {
            ReportBody::Bandwidth(r) => replayed(r),
            ReportBody::Latency(r) => replayed(r),
            ReportBody::Cps(r) => replayed(r),
            ReportBody::Ping(r) => replayed(r),
            ReportBody::Trace(r) => replayed(r),
            ReportBody::Http(r) => replayed(r),
            ReportBody::Dns(r) => replayed(r),
            ReportBody::Rpm(r) => replayed(r),
        });
        events.push(Event::End(Box::new(report.clone())));
        events
    }
}

/// The events of a report's steps, in order.
fn replayed<R: Steps>(report: &R) -> Vec<Event> {
    report.steps().iter().cloned().map(R::step_event).collect()
}

/// A kind's report with its running events: what one step of its run is (an interval, a
/// probe, a round), the event that carries one, and the steps a finished report holds. Code
/// over one kind (its view, a replay) downcasts an event once through it instead of matching
/// every kind's event.
pub trait Steps: BodyVariant {
    /// One step of the run.
    type Step: Clone;
    /// The step `event` carries, when it is one of this kind's.
    fn step_of(event: &Event) -> Option<&Self::Step>;
    /// The event that carries `step`.
    fn step_event(step: Self::Step) -> Event;
    /// The steps a finished report holds, in order.
    fn steps(&self) -> &[Self::Step];
}

/// [`Steps`] for the kinds whose reports keep their steps, from one list.
macro_rules! steps {
    ($($report:ty => $variant:ident($step:ty) in $field:ident,)*) => {$(
        impl Steps for $report {
            type Step = $step;
            fn step_of(event: &Event) -> Option<&$step> {
                match event {
                    Event::$variant(step) => Some(step),
                    _ => None,
                }
            }
            fn step_event(step: $step) -> Event {
                Event::$variant(step)
            }
            fn steps(&self) -> &[$step] {
                &self.$field
            }
        }
    )*};
}

steps! {
    BandwidthReport => Interval(BandwidthInterval) in intervals,
    LatencyReport => LatencyInterval(LatencyInterval) in intervals,
    CpsReport => CpsInterval(CpsInterval) in intervals,
    PingReport => PingProbe(PingProbe) in probes,
    HttpReport => HttpInterval(HttpInterval) in intervals,
    DnsReport => DnsInterval(DnsInterval) in intervals,
    RpmReport => RpmInterval(RpmInterval) in intervals,
}

/// A trace's steps are its rounds, which its report does not keep: its hops are the summary.
impl Steps for TraceReport {
    type Step = TraceRound;
    fn step_of(event: &Event) -> Option<&TraceRound> {
        match event {
            Event::TraceRound(round) => Some(round),
            _ => None,
        }
    }
    fn step_event(round: TraceRound) -> Event {
        Event::TraceRound(round)
    }
    fn steps(&self) -> &[TraceRound] {
        &[]
    }
}
