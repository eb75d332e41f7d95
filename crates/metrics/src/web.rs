//! The browser speed test's series: requests by route and status, refusals by the visitor
//! budget that ran out, bytes each way, and results saved or not.

use prometheus::core::Collector;
use prometheus::{IntCounter, IntCounterVec};

/// The per-visitor budgets a request can be refused by, each a `reason` label from the start.
pub const BUDGETS: [&str; 4] = ["requests", "bytes", "streams", "shared_bytes"];

/// Why a result was not saved, each a `reason` label from the start.
pub const UNSAVED: [&str; 2] = ["invalid", "store_error"];

/// The web server's series.
#[derive(Debug, Clone)]
pub struct WebMetrics {
    requests: IntCounterVec,
    refusals: IntCounterVec,
    bytes: IntCounterVec,
    saved: IntCounter,
    unsaved: IntCounterVec,
}

impl WebMetrics {
    pub(crate) fn new() -> Self {
        let m = Self {
            requests: crate::counter_vec(
                "wirespeed_web_requests_total",
                "Requests answered, by route and status code.",
                &["route", "code"],
            ),
            refusals: crate::counter_vec(
                "wirespeed_web_budget_refusals_total",
                "Requests refused (429) because a visitor's budget ran out, by budget.",
                &["reason"],
            ),
            bytes: crate::counter_vec(
                "wirespeed_web_bytes_total",
                "Test payload bytes: uploads received and downloads sent.",
                &["direction"],
            ),
            saved: IntCounter::new(
                "wirespeed_web_results_saved_total",
                "Speed test results written to the store.",
            )
            .expect("a valid series"),
            unsaved: crate::counter_vec(
                "wirespeed_web_results_unsaved_total",
                "Speed test results not saved, by reason (invalid, store_error).",
                &["reason"],
            ),
        };
        for reason in BUDGETS {
            m.refusals.with_label_values(&[reason]);
        }
        for reason in UNSAVED {
            m.unsaved.with_label_values(&[reason]);
        }
        for direction in ["received", "sent"] {
            m.bytes.with_label_values(&[direction]);
        }
        m
    }

    pub(crate) fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.requests.clone()),
            Box::new(self.refusals.clone()),
            Box::new(self.bytes.clone()),
            Box::new(self.saved.clone()),
            Box::new(self.unsaved.clone()),
        ]
    }

    /// A request to `route` was answered with `code`.
    pub fn request(&self, route: &str, code: u16) {
        let mut buf = [0u8; 3];
        let code = code_label(code, &mut buf);
        self.requests.with_label_values(&[route, code]).inc();
    }

    /// A request was refused by the budget `reason` (one of [`BUDGETS`]).
    pub fn refused(&self, reason: &'static str) {
        self.refusals.with_label_values(&[reason]).inc();
    }

    /// The counters of upload bytes received and download bytes sent.
    pub fn transfer(&self) -> (IntCounter, IntCounter) {
        (self.bytes.with_label_values(&["received"]), self.bytes.with_label_values(&["sent"]))
    }

    /// A result was saved.
    pub fn saved(&self) {
        self.saved.inc();
    }

    /// A result was not saved, for `reason` (one of [`UNSAVED`]).
    pub fn unsaved(&self, reason: &'static str) {
        self.unsaved.with_label_values(&[reason]).inc();
    }
}

/// A status code's three digits, without allocating.
fn code_label(code: u16, buf: &mut [u8; 3]) -> &str {
    let code = code.min(999);
    buf[0] = b'0' + (code / 100) as u8;
    buf[1] = b'0' + (code / 10 % 10) as u8;
    buf[2] = b'0' + (code % 10) as u8;
    std::str::from_utf8(buf).unwrap_or("000")
}
