//! The test server's series: tests by kind and how they ended or why they were refused, their
//! durations, the bytes their data streams moved, connections on the test port, and what
//! clients got wrong in the handshake or the control protocol.

use std::time::Instant;

use prometheus::core::Collector;
use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
};

wirespeed_model::named! {
    /// The `kind` label of a test on the server, each with its series from the start: the
    /// kinds with a server half (the engine's dispatch names which, one arm per kind), a test
    /// an iperf3 client started, and a client refused before it named a test it could run.
    pub enum ServerTest {
        /// A bandwidth test's server half.
        Bandwidth = "bandwidth",
        /// A latency test's.
        Latency = "latency",
        /// A connections/s test's.
        Cps = "cps",
        /// An iperf3 client's test.
        Iperf3 = "iperf3",
        /// Refused before it named a test this server runs.
        Unknown = "unknown",
    }
}

/// Why connections on the test port were dropped before a test began, each a `reason` label
/// of `wirespeed_protocol_errors_total` from the start.
pub const PROTOCOL_ERRORS: [&str; 9] = [
    "silent",
    "closed",
    "too_long",
    "invalid",
    "unknown_session",
    "wrong_host",
    "shed",
    "io",
    "control",
];

/// How a test that was admitted, or asked to be, ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestOutcome {
    /// Ran to its end and its results were sent.
    Completed,
    /// Ended early: the client went away or aborted, a limit cut it off, the server stopped.
    Aborted,
    /// Never ran.
    Refused(RefusalReason),
}

wirespeed_model::named! {
    /// Why a test was refused (the control protocol's refusal codes, and iperf3's): the
    /// `reason` label.
    pub enum RefusalReason {
        /// `--max-tests` were running.
        Busy = "busy",
        /// The spec broke a rule or a server limit (duration, bitrate).
        Limit = "limit",
        /// The token was missing or wrong.
        Auth = "auth",
        /// The client's address is not in `--allow`.
        NotAllowed = "not_allowed",
        /// The client speaks another protocol version.
        Version = "version",
    }
}

/// The test server's series.
#[derive(Debug, Clone)]
pub struct ServerMetrics {
    tests: IntCounterVec,
    refused: IntCounterVec,
    active: IntGaugeVec,
    duration: HistogramVec,
    bytes: IntCounterVec,
    accepted: IntCounter,
    open: IntGauge,
    protocol_errors: IntCounterVec,
}

impl ServerMetrics {
    pub(crate) fn new() -> Self {
        let m = Self {
            tests: crate::counter_vec(
                "wirespeed_tests_total",
                "Tests admitted and ended, by kind and outcome (completed, aborted).",
                &["kind", "outcome"],
            ),
            refused: crate::counter_vec(
                "wirespeed_tests_refused_total",
                "Tests refused before they ran, by kind and reason.",
                &["kind", "reason"],
            ),
            active: IntGaugeVec::new(
                Opts::new(
                    "wirespeed_tests_active",
                    "Tests between their start request and their end, by kind.",
                ),
                &["kind"],
            )
            .expect("a valid series"),
            duration: HistogramVec::new(
                HistogramOpts::new(
                    "wirespeed_test_duration_seconds",
                    "Wall time of admitted tests, start request to end, by kind.",
                )
                .buckets(vec![
                    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0,
                ]),
                &["kind"],
            )
            .expect("a valid series"),
            bytes: crate::counter_vec(
                "wirespeed_test_bytes_total",
                "Payload bytes the server's data streams received and sent, by kind, added at each interval.",
                &["kind", "direction"],
            ),
            accepted: IntCounter::new(
                "wirespeed_connections_accepted_total",
                "TCP connections accepted on the test port.",
            )
            .expect("a valid series"),
            open: IntGauge::new(
                "wirespeed_connections_open",
                "TCP connections on the test port not yet closed (control, data and handshaking).",
            )
            .expect("a valid series"),
            protocol_errors: crate::counter_vec(
                "wirespeed_protocol_errors_total",
                "Connections dropped for what the client sent or failed to send, by reason.",
                &["reason"],
            ),
        };
        for kind in ServerTest::ALL.iter().map(|k| k.name()) {
            for outcome in ["completed", "aborted"] {
                m.tests.with_label_values(&[kind, outcome]);
            }
            for reason in RefusalReason::ALL {
                m.refused.with_label_values(&[kind, reason.name()]);
            }
            m.active.with_label_values(&[kind]);
            m.duration.with_label_values(&[kind]);
            for direction in ["received", "sent"] {
                m.bytes.with_label_values(&[kind, direction]);
            }
        }
        for reason in PROTOCOL_ERRORS {
            m.protocol_errors.with_label_values(&[reason]);
        }
        m
    }

    pub(crate) fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.tests.clone()),
            Box::new(self.refused.clone()),
            Box::new(self.active.clone()),
            Box::new(self.duration.clone()),
            Box::new(self.bytes.clone()),
            Box::new(self.accepted.clone()),
            Box::new(self.open.clone()),
            Box::new(self.protocol_errors.clone()),
        ]
    }

    /// A test of `kind` has asked to start: it counts as active until its record ends (or is
    /// dropped, which counts it as aborted).
    pub fn begin(&self, kind: ServerTest) -> TestRecord {
        self.active.with_label_values(&[kind.name()]).inc();
        TestRecord { metrics: self.clone(), kind, began: Instant::now(), ended: false }
    }

    /// The counters of `kind`'s bytes (received, sent), to add to as a test moves data.
    pub fn transfer(&self, kind: ServerTest) -> (IntCounter, IntCounter) {
        (
            self.bytes.with_label_values(&[kind.name(), "received"]),
            self.bytes.with_label_values(&[kind.name(), "sent"]),
        )
    }

    /// A TCP connection was accepted on the test port: open until the guard drops.
    pub fn connection(&self) -> ConnectionRecord {
        self.accepted.inc();
        self.open.inc();
        ConnectionRecord(self.open.clone())
    }

    /// A connection was dropped for `reason` (one of [`PROTOCOL_ERRORS`]).
    pub fn protocol_error(&self, reason: &'static str) {
        self.protocol_errors.with_label_values(&[reason]).inc();
    }
}

/// One test from its start request to its end.
#[derive(Debug)]
pub struct TestRecord {
    metrics: ServerMetrics,
    kind: ServerTest,
    began: Instant,
    ended: bool,
}

impl TestRecord {
    /// The test ended this way.
    pub fn end(mut self, outcome: TestOutcome) {
        self.finish(outcome);
    }

    /// The test's kind turned out to be another (an iperf3 client's parameters name its test
    /// only after it connected).
    pub fn set_kind(&mut self, kind: ServerTest) {
        self.metrics.active.with_label_values(&[self.kind.name()]).dec();
        self.metrics.active.with_label_values(&[kind.name()]).inc();
        self.kind = kind;
    }

    fn finish(&mut self, outcome: TestOutcome) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let m = &self.metrics;
        let kind = self.kind.name();
        m.active.with_label_values(&[kind]).dec();
        match outcome {
            TestOutcome::Refused(reason) => {
                m.refused.with_label_values(&[kind, reason.name()]).inc();
            }
            TestOutcome::Completed | TestOutcome::Aborted => {
                let label = if outcome == TestOutcome::Completed { "completed" } else { "aborted" };
                m.tests.with_label_values(&[kind, label]).inc();
                m.duration.with_label_values(&[kind]).observe(self.began.elapsed().as_secs_f64());
            }
        }
    }
}

impl Drop for TestRecord {
    fn drop(&mut self) {
        // A conversation that ended without saying how (a panic, a cancelled task) was cut off.
        self.finish(TestOutcome::Aborted);
    }
}

/// A connection on the test port, counted open while this lives.
#[derive(Debug)]
pub struct ConnectionRecord(IntGauge);

impl Drop for ConnectionRecord {
    fn drop(&mut self) {
        self.0.dec();
    }
}
