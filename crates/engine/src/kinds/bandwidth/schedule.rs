//! The client's clock for a bandwidth test, shared by our protocol's client and the iperf3
//! client: interval ticks, the moment the warm-up ends, and the deadline of a timed test.
//! Each tick's snapshot goes to the collector; the warm-up's snapshot is kept for the summary.

use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio::time::{Instant, Interval, Sleep};
use wirespeed_model::kinds::bandwidth::BandwidthSpec;
use wirespeed_model::kinds::bandwidth::{BandwidthInterval, BandwidthSummary};
use wirespeed_model::Event;
use wirespeed_proto::control::{ServerResults, StreamTotals};

use super::collect::{Collector, LocalEnd};
use super::workers::Side;

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

/// Timers of one test on the client, started when the test begins.
pub(crate) struct Schedule {
    /// Fires at the end of every interval.
    pub ticks: Interval,
    /// Fires when the warm-up ends (only awaited when it does not end on a tick).
    pub omit_at: Pin<Box<Sleep>>,
    /// Fires when a timed test's time is up (never, in effect, for a byte-count test).
    pub deadline: Pin<Box<Sleep>>,
    /// Totals when the warm-up ended, once it has.
    pub at_omit: Option<Vec<StreamTotals>>,
    spec: BandwidthSpec,
    tick_count: u64,
}

impl Schedule {
    /// Starts the clock now.
    pub(super) fn start(spec: &BandwidthSpec, side: &Side) -> Self {
        let begin = Instant::now();
        let interval = Duration::from_nanos(spec.interval_ns);
        let run_ns = if spec.bytes.is_none() { spec.total_ns() } else { u64::MAX / 4 };
        Self {
            ticks: tokio::time::interval_at(begin + interval, interval),
            omit_at: Box::pin(tokio::time::sleep_until(begin + Duration::from_nanos(spec.omit_ns))),
            deadline: Box::pin(tokio::time::sleep_until(begin + Duration::from_nanos(run_ns))),
            at_omit: (spec.omit_ns == 0).then(|| side.zeros()),
            spec: spec.clone(),
            tick_count: 0,
        }
    }

    /// True when the test ends after a time rather than a byte count.
    pub(super) fn timed(&self) -> bool {
        self.spec.bytes.is_none()
    }

    /// When the warm-up ends on an interval boundary, that tick's snapshot is the warm-up's
    /// end, so the summary equals the sum of the measured intervals exactly.
    fn omit_on_tick(&self) -> bool {
        self.spec.omit_ns.is_multiple_of(self.spec.interval_ns)
    }

    /// True while the warm-up's end must still come from [`Self::omit_at`].
    pub(super) fn awaiting_omit(&self) -> bool {
        self.at_omit.is_none() && !self.omit_on_tick()
    }

    /// The warm-up ended between ticks: keep the totals now.
    pub(super) fn omit_reached(&mut self, side: &Side) {
        self.at_omit = Some(side.snapshot());
    }

    /// An interval ended: snapshot, feed the collector, return the intervals now complete.
    /// A timed test takes no tick at its deadline; the tail is the collector's last interval.
    pub(super) fn on_tick(
        &mut self,
        side: &Side,
        collector: &mut Collector,
    ) -> Vec<BandwidthInterval> {
        let now = side.shared.now_ns();
        self.tick_count += 1;
        if self.timed() && now + 1_000_000 >= self.spec.total_ns() {
            return Vec::new();
        }
        let snap = side.snapshot();
        if self.omit_on_tick()
            && self.at_omit.is_none()
            && self.tick_count * self.spec.interval_ns == self.spec.omit_ns
        {
            self.at_omit = Some(snap.clone());
        }
        collector.local_tick(now, &snap)
    }

    /// The warm-up's totals, or the totals now if the test ended before its warm-up did.
    pub(super) fn take_omit(&mut self, side: &Side) -> Vec<StreamTotals> {
        self.at_omit.take().unwrap_or_else(|| side.snapshot())
    }
}
