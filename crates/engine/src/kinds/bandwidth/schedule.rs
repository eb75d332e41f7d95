//! A bandwidth test's use of the interval clock, shared by our protocol's client and the
//! iperf3 client: interval ticks, the moment the warm-up ends, and the deadline of a timed test.
//! Each tick's snapshot goes to the collector; the warm-up's snapshot is kept for the summary.

use tokio::sync::mpsc::UnboundedSender;
use wirespeed_model::kinds::bandwidth::BandwidthSpec;
use wirespeed_model::kinds::bandwidth::{BandwidthInterval, BandwidthSummary};
use wirespeed_model::Event;
use wirespeed_proto::control::{ServerResults, StreamTotals};

use super::collect::{Collector, LocalEnd};
use super::workers::Side;
use crate::run::intervals::{Clock, Ending, Tick, Timers};

/// What a client's run ends with: every interval, the summary, and whether the user
/// interrupted it.
pub(crate) type Outcome = (Vec<BandwidthInterval>, BandwidthSummary, bool);

/// Sends intervals as they complete to whoever renders them.
pub(crate) fn emit_intervals(events: &UnboundedSender<Event>, intervals: Vec<BandwidthInterval>) {
    for iv in intervals {
        let _ = events.send(Event::Interval(iv));
    }
}

/// Completes the collector and sends the intervals it had not returned yet.
pub(crate) fn finish_and_emit(
    collector: Collector,
    local: &LocalEnd,
    server: &ServerResults,
    events: &UnboundedSender<Event>,
) -> (Vec<BandwidthInterval>, BandwidthSummary) {
    let live = collector.emitted();
    let (intervals, summary) = collector.finish(local, server);
    emit_intervals(events, intervals[live.min(intervals.len())..].to_vec());
    (intervals, summary)
}

/// One test's clock on the client, started when the test begins, and the totals when its
/// warm-up ended.
pub(crate) struct Schedule {
    timers: Timers,
    /// Totals when the warm-up ended, once it has.
    at_omit: Option<Vec<StreamTotals>>,
    timed: bool,
}

impl Schedule {
    /// Starts the clock at the test's start on this side. iperf3's `-O` ends the warm-up at
    /// its exact time, between ticks if need be: the byte counters can be read at any moment.
    pub(super) fn start(spec: &BandwidthSpec, side: &Side) -> Self {
        let timed = spec.bytes.is_none();
        let clock = Clock::new(
            spec.interval_ns,
            timed.then(|| spec.total_ns()),
            spec.omit_ns,
            Ending::Stop,
        );
        Self {
            timers: Timers::start(clock, side.shared.begin, true),
            at_omit: (spec.omit_ns == 0).then(|| side.zeros()),
            timed,
        }
    }

    /// True when the test ends after a time rather than a byte count.
    pub(super) fn timed(&self) -> bool {
        self.timed
    }

    /// Waits for the clock's next event (cancel-safe).
    pub(super) async fn next(&mut self) -> Tick {
        self.timers.next().await
    }

    /// Acts on an event other than the deadline: at a boundary, snapshot and feed the
    /// collector, returning the intervals now complete; when the warm-up ends on that
    /// boundary its snapshot is the warm-up's end, so the summary equals the sum of the
    /// measured intervals exactly. A warm-up ending between ticks keeps the totals then.
    pub(super) fn on(
        &mut self,
        tick: Tick,
        side: &Side,
        collector: &mut Collector,
    ) -> Vec<BandwidthInterval> {
        match tick {
            Tick::Boundary(b) => {
                let snap = side.snapshot();
                if b.ends_warm_up && self.at_omit.is_none() {
                    self.at_omit = Some(snap.clone());
                }
                collector.local_tick(b.end_ns, &snap)
            }
            Tick::WarmUpEnded => {
                self.at_omit.get_or_insert_with(|| side.snapshot());
                Vec::new()
            }
            Tick::Deadline => Vec::new(),
        }
    }

    /// The warm-up's totals, or the totals now if the test ended before its warm-up did.
    pub(super) fn take_omit(&mut self, side: &Side) -> Vec<StreamTotals> {
        self.at_omit.take().unwrap_or_else(|| side.snapshot())
    }
}
