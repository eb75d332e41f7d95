//! Result lines in the order their requests began. Records arrive as requests end, but vegeta
//! numbers results in the order requests began and `vegeta plot` refuses a timestamp that goes
//! back as the number goes up, so records wait here until no request still in flight can have
//! begun before them: every request ends within its timeout of being due (a queued one within
//! two), so one that ended at E leaves out nothing that began before E minus that window.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use wirespeed_model::kinds::http::RequestResult;

/// Most records held back at once; past it the oldest go out, possibly out of order.
pub(super) const MAX_HELD: usize = 1 << 22;

/// Records held back until they can be numbered in the order they began.
#[derive(Debug)]
pub(super) struct Reorder {
    window_ns: i64,
    held: BinaryHeap<Reverse<Held>>,
    arrivals: u64,
    next_seq: u64,
    last_start_ns: i64,
    latest_end_ns: i64,
    /// Records that began before one already written (a request slower than the window).
    pub out_of_order: u64,
}

#[derive(Debug)]
struct Held {
    start_ns: i64,
    arrival: u64,
    record: RequestResult,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.start_ns, self.arrival) == (other.start_ns, other.arrival)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.start_ns, self.arrival).cmp(&(other.start_ns, other.arrival))
    }
}

impl Reorder {
    /// Holding records for `window_ns`: the longest a request can take from due to ended.
    pub(super) fn new(window_ns: u64) -> Self {
        Self {
            window_ns: window_ns.min(i64::MAX as u64) as i64,
            held: BinaryHeap::new(),
            arrivals: 0,
            next_seq: 0,
            last_start_ns: i64::MIN,
            latest_end_ns: i64::MIN,
            out_of_order: 0,
        }
    }

    /// Takes one record; returns those now certain to be next, numbered.
    pub(super) fn push(&mut self, record: RequestResult) -> Vec<RequestResult> {
        let end =
            record.start_unix_ns.saturating_add(record.latency_ns.min(i64::MAX as u64) as i64);
        self.latest_end_ns = self.latest_end_ns.max(end);
        self.held.push(Reverse(Held {
            start_ns: record.start_unix_ns,
            arrival: self.arrivals,
            record,
        }));
        self.arrivals += 1;
        let horizon = self.latest_end_ns.saturating_sub(self.window_ns);
        let mut out = Vec::new();
        while let Some(Reverse(first)) = self.held.peek() {
            if first.start_ns >= horizon && self.held.len() <= MAX_HELD {
                break;
            }
            out.push(self.pop());
        }
        out
    }

    /// Every record still held, in the order they began: the run is over.
    pub(super) fn finish(&mut self) -> Vec<RequestResult> {
        std::iter::from_fn(|| (!self.held.is_empty()).then(|| self.pop())).collect()
    }

    fn pop(&mut self) -> RequestResult {
        let Reverse(first) = self.held.pop().expect("a held record");
        let mut record = first.record;
        if record.start_unix_ns < self.last_start_ns {
            self.out_of_order += 1;
        }
        self.last_start_ns = self.last_start_ns.max(record.start_unix_ns);
        record.seq = self.next_seq;
        self.next_seq += 1;
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(start_ns: i64, latency_ns: u64) -> RequestResult {
        RequestResult {
            seq: 99,
            start_unix_ns: start_ns,
            latency_ns,
            code: 200,
            bytes_out: 0,
            bytes_in: 0,
            error: None,
            request: 0,
        }
    }

    #[test]
    fn records_go_out_numbered_in_the_order_they_began() {
        let mut r = Reorder::new(100);
        // A slow request (began at 0) ends after a quick one that began at 10.
        assert!(r.push(record(10, 5)).is_empty(), "nothing is certain yet");
        assert!(r.push(record(0, 50)).is_empty());
        // One ending at 200 shows nothing before 100 is still in flight.
        let out = r.push(record(150, 50));
        let starts: Vec<(u64, i64)> = out.iter().map(|r| (r.seq, r.start_unix_ns)).collect();
        assert_eq!(starts, [(0, 0), (1, 10)]);
        let rest = r.finish();
        assert_eq!(rest.iter().map(|r| (r.seq, r.start_unix_ns)).collect::<Vec<_>>(), [(2, 150)]);
        assert_eq!(r.out_of_order, 0);
    }

    #[test]
    fn a_request_slower_than_the_window_is_written_and_counted() {
        let mut r = Reorder::new(10);
        assert_eq!(r.push(record(100, 5)).len(), 0);
        assert_eq!(r.push(record(300, 1)).len(), 1, "100 is certain by 291");
        let late = r.push(record(50, 400));
        assert_eq!(late.iter().map(|r| r.start_unix_ns).collect::<Vec<_>>(), [50, 300]);
        assert_eq!(r.out_of_order, 1);
    }
}
