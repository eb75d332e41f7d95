//! What wirespeed's long-running servers (`server`, `web`, and `server --web`) count for
//! Prometheus, kept in one registry and rendered in Prometheus' text exposition format by the
//! `prometheus` crate. The servers record into [`ServerMetrics`] and [`WebMetrics`] as they
//! work; the binary serves [`Metrics::render`] at `/metrics` when `--metrics` asks for it.
//! Recording is a few atomic additions, so it is always on, whether anyone scrapes or not.
//!
//! What every series means, and how it is counted: docs/metrics.md, "Prometheus".

mod server;
mod web;

use std::sync::Arc;

use prometheus::{Encoder, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder};

pub use server::{
    ConnectionRecord, RefusalReason, ServerMetrics, ServerTest, TestOutcome, TestRecord,
    PROTOCOL_ERRORS,
};
pub use web::{WebMetrics, BUDGETS, UNSAVED};

/// A counter the servers add to (a test's bytes, say), cheap to clone.
pub use prometheus::IntCounter;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every series a wirespeed process exposes.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// The test server's (`server`'s control port) series.
    pub server: ServerMetrics,
    /// The browser speed test's series.
    pub web: WebMetrics,
    /// Tasks alive on the async runtime, set by whoever renders (the runtime is theirs).
    pub runtime_tasks: IntGauge,
}

impl Metrics {
    /// A registry with every series registered at zero, and the process collector (CPU,
    /// resident memory, open file descriptors, threads) where the system has one.
    pub fn new(version: &str) -> Arc<Self> {
        let registry = Registry::new();
        let info = IntGaugeVec::new(
            Opts::new("wirespeed_build_info", "Always 1; the version serving these series."),
            &["version"],
        )
        .expect("a valid series");
        info.with_label_values(&[version]).set(1);
        let runtime_tasks = IntGauge::new(
            "wirespeed_runtime_alive_tasks",
            "Tasks alive on the server's async runtime at the scrape.",
        )
        .expect("a valid series");
        let server = ServerMetrics::new();
        let web = WebMetrics::new();
        let mut all: Vec<Box<dyn prometheus::core::Collector>> =
            vec![Box::new(info), Box::new(runtime_tasks.clone())];
        all.extend(server.collectors());
        all.extend(web.collectors());
        for c in all {
            registry.register(c).expect("series are registered once, with distinct names");
        }
        #[cfg(target_os = "linux")]
        {
            let process = prometheus::process_collector::ProcessCollector::for_self();
            // Registration fails only on a name clash, which the process series cannot have.
            let _ = registry.register(Box::new(process));
        }
        Arc::new(Self { registry, server, web, runtime_tasks })
    }

    /// Every series now, in Prometheus' text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = Vec::with_capacity(16 * 1024);
        // Encoding into a Vec fails only on a metric family the registry itself made invalid.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A counter family with `labels`; the names are ours and valid, so making it cannot fail.
fn counter_vec(name: &str, help: &str, labels: &[&str]) -> prometheus::IntCounterVec {
    prometheus::IntCounterVec::new(Opts::new(name, help), labels).expect("a valid series")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_exposed_before_anything_happens() {
        let m = Metrics::new("9.9.9");
        let text = m.render();
        assert!(text.contains("wirespeed_build_info{version=\"9.9.9\"} 1"), "{text}");
        assert!(text.contains("wirespeed_tests_total{kind=\"bandwidth\",outcome=\"completed\"} 0"));
        assert!(text.contains("wirespeed_web_results_saved_total 0"), "{text}");
    }

    #[test]
    fn a_finished_test_is_counted_once_with_its_duration() {
        let m = Metrics::new("0");
        let record = m.server.begin(ServerTest::Latency);
        assert!(m.render().contains("wirespeed_tests_active{kind=\"latency\"} 1"));
        record.end(TestOutcome::Completed);
        let text = m.render();
        assert!(text.contains("wirespeed_tests_active{kind=\"latency\"} 0"), "{text}");
        assert!(text.contains("wirespeed_tests_total{kind=\"latency\",outcome=\"completed\"} 1"));
        assert!(text.contains("wirespeed_test_duration_seconds_count{kind=\"latency\"} 1"));
    }

    #[test]
    fn a_refused_test_counts_as_refused_not_as_run() {
        let m = Metrics::new("0");
        m.server.begin(ServerTest::Cps).end(TestOutcome::Refused(RefusalReason::Busy));
        let text = m.render();
        assert!(text.contains("wirespeed_tests_refused_total{kind=\"cps\",reason=\"busy\"} 1"));
        assert!(text.contains("wirespeed_test_duration_seconds_count{kind=\"cps\"} 0"), "{text}");
        assert!(text.contains("wirespeed_tests_total{kind=\"cps\",outcome=\"aborted\"} 0"));
    }

    #[test]
    fn a_record_dropped_unfinished_is_an_aborted_test() {
        let m = Metrics::new("0");
        drop(m.server.begin(ServerTest::Bandwidth));
        let text = m.render();
        assert!(text.contains("wirespeed_tests_total{kind=\"bandwidth\",outcome=\"aborted\"} 1"));
        assert!(text.contains("wirespeed_tests_active{kind=\"bandwidth\"} 0"));
    }
}
