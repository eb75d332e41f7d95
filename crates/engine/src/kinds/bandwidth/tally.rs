//! The server's bytes of a bandwidth test, added to `wirespeed_test_bytes_total` as the test
//! runs: at each interval boundary and once more at its end, only what is new each time, so a
//! long test shows in Prometheus as it goes and not as one step when it ends.

use wirespeed_metrics::{IntCounter, ServerMetrics, ServerTest};
use wirespeed_model::kinds::bandwidth::Flow;
use wirespeed_proto::control::StreamTotals;

/// What one test has added so far.
#[derive(Debug)]
pub(crate) struct Tally {
    received: IntCounter,
    sent: IntCounter,
    counted: (u64, u64),
}

impl Tally {
    /// A tally for a test of `kind` (a bandwidth test, or an iperf3 client's).
    pub(crate) fn new(metrics: &ServerMetrics, kind: ServerTest) -> Self {
        let (received, sent) = metrics.transfer(kind);
        Self { received, sent, counted: (0, 0) }
    }

    /// The server's stream ends' totals now: what they received (uploads) and sent
    /// (downloads) beyond what was counted before is added.
    pub(crate) fn catch_up(&mut self, streams: &[StreamTotals]) {
        let (mut received, mut sent) = (0u64, 0u64);
        for s in streams {
            match s.flow {
                Flow::Upload => received += s.totals.bytes,
                Flow::Download => sent += s.totals.bytes,
            }
        }
        self.received.inc_by(received.saturating_sub(self.counted.0));
        self.sent.inc_by(sent.saturating_sub(self.counted.1));
        self.counted = (received.max(self.counted.0), sent.max(self.counted.1));
    }
}
