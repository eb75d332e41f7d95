//! The responsiveness test's plain data (draft-ietf-ippm-responsiveness, "RPM": round trips
//! per minute under working conditions): what it is asked ([`RpmSpec`]), one line per interval
//! of a leg ([`RpmInterval`]), each leg's result ([`RpmLeg`]) and the run's ([`RpmSummary`]):
//! idle latency, loaded latency and RPM per direction, throughput, and a grade. The arithmetic
//! (trimmed means, stability, the RPM formula, the grade) lives here, with no I/O, so the
//! engine and the tests share it.

use serde::{Deserialize, Serialize};

use crate::histogram::{HistogramBucket, LatencyStats};
use crate::kind::{Kind, KindReport, KindSpec};
use crate::member::ShareRun;
use crate::metrics::{metric, non_empty, secs, Better, Metric, RunSeries, Series, Unit};
use crate::rules::SpecError;

/// Most load-generating connections a leg may open per direction.
pub const MAX_RPM_CONNECTIONS: u32 = 64;

/// Which legs run, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RpmMode {
    /// Download under load, then upload under load (Cloudflare's `mach`, `networkQuality -s`).
    Sequential,
    /// Download and upload load at once, one responsiveness (`networkQuality`'s default).
    Parallel,
    /// Download only.
    Download,
    /// Upload only.
    Upload,
}

impl RpmMode {
    /// The legs this mode runs, in order.
    pub fn legs(self) -> &'static [RpmDirection] {
        match self {
            Self::Sequential => &[RpmDirection::Download, RpmDirection::Upload],
            Self::Parallel => &[RpmDirection::Both],
            Self::Download => &[RpmDirection::Download],
            Self::Upload => &[RpmDirection::Upload],
        }
    }

    /// The name, as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Parallel => "parallel",
            Self::Download => "download",
            Self::Upload => "upload",
        }
    }
}

/// The load a leg puts on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RpmDirection {
    /// Downloads of the large object.
    Download,
    /// Uploads to the upload URL.
    Upload,
    /// Both at once.
    Both,
}

impl RpmDirection {
    /// The name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Download => "download",
            Self::Upload => "upload",
            Self::Both => "both",
        }
    }
}

/// What a responsiveness test is asked to do. The defaults are the draft's: 1 s intervals, a
/// moving average over 4 of them, 5 % stability, a 95 % trimmed mean, 100 probes a second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpmSpec {
    /// The configuration URL (or the server) as the user named it, without a password.
    pub target: String,
    /// Which legs run.
    pub mode: RpmMode,
    /// Most load-generating connections per direction.
    pub max_connections: u32,
    /// Interval length, nanoseconds.
    pub interval_ns: u64,
    /// Longest a leg may run before it reports what it has, nanoseconds.
    pub leg_time_ns: u64,
    /// Intervals in the moving average (the draft's MAD).
    pub moving_average: u32,
    /// Largest standard deviation of the last moving averages, as a fraction of the current
    /// one, that counts as stable (the draft's SDT).
    pub stability: f64,
    /// Fraction of samples kept by the trimmed mean (the largest are dropped).
    pub trim: f64,
    /// Most probes sent a second (the draft's MPS), self and foreign together.
    pub probes_per_second: u32,
    /// Probes on new connections, one at a time, before any load: the idle latency.
    pub idle_probes: u32,
}

impl RpmSpec {
    /// A spec with the draft's defaults, both directions in turn, 20 s a leg at most.
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            mode: RpmMode::Sequential,
            max_connections: 16,
            interval_ns: 1_000_000_000,
            leg_time_ns: 20_000_000_000,
            moving_average: 4,
            stability: 0.05,
            trim: 0.95,
            probes_per_second: 100,
            idle_probes: 10,
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.max_connections == 0 || self.max_connections > MAX_RPM_CONNECTIONS {
            return fail(format!(
                "the connections per direction (--max-connections) must be 1..={MAX_RPM_CONNECTIONS}"
            ));
        }
        if self.interval_ns < 100_000_000 || self.interval_ns > 10_000_000_000 {
            return fail("the interval must be between 100 ms and 10 s".into());
        }
        if self.moving_average < 2 || self.moving_average > 20 {
            return fail("the moving average (--moving-average) must be 2..=20 intervals".into());
        }
        let least = self.interval_ns * u64::from(self.moving_average + 1);
        if self.leg_time_ns < least || self.leg_time_ns > 600_000_000_000 {
            return fail(format!(
                "a leg's time limit (--time) must be at least {} s (the moving average and one \
                 interval more) and at most 600 s",
                least as f64 / 1e9
            ));
        }
        if !(self.stability > 0.0 && self.stability < 1.0) {
            return fail(
                "the stability tolerance (--stability) must be above 0 and below 1".into(),
            );
        }
        if !(self.trim > 0.0 && self.trim <= 1.0) {
            return fail("the trimmed mean's share (--trim) must be above 0 and at most 1".into());
        }
        if self.probes_per_second == 0 || self.probes_per_second > 1000 {
            return fail("the probes a second (--probe-rate) must be 1..=1000".into());
        }
        if self.idle_probes == 0 || self.idle_probes > 1000 {
            return fail("the idle probes (--idle-probes) must be 1..=1000".into());
        }
        if self.target.len() > 4096 {
            return fail("the URL is too long".into());
        }
        Ok(())
    }
}

/// One interval of a leg, as the algorithm saw it at the interval's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpmInterval {
    /// The leg.
    pub leg: RpmDirection,
    /// Interval number within the leg, from 0.
    pub index: u32,
    /// When it ended, nanoseconds since the test began.
    pub end_ns: u64,
    /// Load-generating connections open at its end.
    pub connections: u32,
    /// Bytes the load moved in this interval, downloads.
    pub download_bytes: u64,
    /// Bytes the load moved in this interval, uploads.
    pub upload_bytes: u64,
    /// The moving average of goodput over the last intervals, bits per second.
    pub goodput_bps: f64,
    /// Probes on load-generating connections that ended in this interval.
    pub self_probes: u32,
    /// Probes on new connections that ended in this interval.
    pub foreign_probes: u32,
    /// Median self-probe time of this interval, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_p50_ns: Option<u64>,
    /// Responsiveness over the moving-average window ending here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Whether goodput had stabilized.
    pub goodput_stable: bool,
    /// Whether responsiveness had stabilized.
    pub rpm_stable: bool,
}

/// Trimmed means of a leg's probes over its last window, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbeTimes {
    /// TCP handshake of a new connection.
    pub tcp_ns: f64,
    /// TLS handshake of a new connection, per TLS round trip (0 over plain HTTP).
    pub tls_ns: f64,
    /// An HTTP request on a new connection, request to the whole answer.
    pub http_ns: f64,
    /// An HTTP request on a load-generating connection.
    pub self_ns: f64,
}

/// How much a leg's RPM can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Goodput and responsiveness both stabilized (the draft's working conditions).
    High,
    /// The time limit came first, but the last values varied by less than twice the tolerance.
    Medium,
    /// The time limit came first and the last values still varied widely.
    Low,
}

/// One leg's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpmLeg {
    /// The load.
    pub direction: RpmDirection,
    /// How long the leg ran, nanoseconds.
    pub duration_ns: u64,
    /// Whether goodput and responsiveness both stabilized before the time limit.
    pub working_conditions: bool,
    /// Responsiveness, round trips per minute: at stability, else the last interval's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Standard deviation of the last moving-average window's RPM values over their mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_spread: Option<f64>,
    /// How much the RPM can be trusted.
    pub confidence: Confidence,
    /// Throughput: the 90th percentile of the moving averages, bits per second (both
    /// directions summed in a parallel leg).
    pub goodput_bps: f64,
    /// Download throughput (90th percentile of its moving averages), bits per second.
    pub download_bps: f64,
    /// Upload throughput, bits per second.
    pub upload_bps: f64,
    /// The trimmed means the RPM was computed from.
    pub times: ProbeTimes,
    /// Loaded latency: every self probe of the leg.
    pub loaded: LatencyStats,
    /// Every foreign probe's whole time (connect, TLS, request) under load.
    pub foreign: LatencyStats,
    /// Load-generating connections opened.
    pub connections: u32,
    /// Load-generating connections or probes that failed, and the last reason.
    pub failures: u32,
    /// The last failure's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
    /// The self probes' histogram.
    pub histogram: Vec<HistogramBucket>,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpmSummary {
    /// The download URL of the load (from the configuration).
    pub large_url: String,
    /// The probes' URL.
    pub small_url: String,
    /// The upload URL.
    pub upload_url: String,
    /// The HTTP version the load spoke ("HTTP/2").
    pub protocol: String,
    /// Idle latency: TCP handshakes of probes on new connections before any load.
    pub idle: LatencyStats,
    /// Idle responsiveness, from the idle probes alone (the same formula, unloaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_rpm: Option<f64>,
    /// Each leg in the order run.
    pub legs: Vec<RpmLeg>,
    /// The run's responsiveness: the lowest of its legs'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Whether every leg reached working conditions.
    pub working_conditions: bool,
    /// Latency added by load: the largest of the legs' loaded latency at working conditions
    /// (the trimmed mean of the last window's self probes) less the idle median, nanoseconds.
    pub added_latency_ns: u64,
    /// A bufferbloat grade from the added latency (A+ under 5 ms, A 30, B 60, C 200, D 400,
    /// else F).
    pub grade: String,
    /// The RPM as Apple's networkQuality words it (Low under 300, Medium under 1000, High).
    pub rating: String,
}

/// A responsiveness run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpmReport {
    /// What was asked.
    pub spec: RpmSpec,
    /// Every interval of every leg.
    pub intervals: Vec<RpmInterval>,
    /// Totals.
    pub summary: RpmSummary,
}

impl RpmReport {
    /// The leg of `direction`, if it ran.
    pub fn leg(&self, direction: RpmDirection) -> Option<&RpmLeg> {
        self.summary.legs.iter().find(|l| l.direction == direction)
    }
}

/// The mean of the smallest `keep` share of `samples` (the draft trims the slowest).
pub fn trimmed_mean(samples: &[f64], keep: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = ((sorted.len() as f64 * keep).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[..n].iter().sum::<f64>() / n as f64)
}

/// Responsiveness from trimmed means (ns): the mean of the foreign RPM (new connections: the
/// average of their TCP, TLS and HTTP times, TLS left out over plain HTTP) and the loaded RPM
/// (requests on the loaded connections), as draft-ietf-ippm-responsiveness-09 §5.3 and
/// Cloudflare's client compute it.
pub fn responsiveness(times: &ProbeTimes) -> Option<f64> {
    let parts: Vec<f64> =
        [times.tcp_ns, times.tls_ns, times.http_ns].into_iter().filter(|&t| t > 0.0).collect();
    if parts.is_empty() || times.self_ns <= 0.0 {
        return None;
    }
    let foreign_ms = parts.iter().sum::<f64>() / parts.len() as f64 / 1e6;
    let loaded_ms = times.self_ns / 1e6;
    let rpm = (60_000.0 / foreign_ms + 60_000.0 / loaded_ms) / 2.0;
    rpm.is_finite().then_some(rpm)
}

/// Whether the last `window` values are stable: their population standard deviation is below
/// `tolerance` of the newest. Needs `window` values.
pub fn stable(values: &[f64], window: usize, tolerance: f64) -> bool {
    spread(values, window).is_some_and(|(sd, _)| {
        let newest = values[values.len() - 1];
        newest > 0.0 && sd < tolerance * newest
    })
}

/// Standard deviation and mean of the last `window` values, when there are that many.
pub fn spread(values: &[f64], window: usize) -> Option<(f64, f64)> {
    if window == 0 || values.len() < window {
        return None;
    }
    let last = &values[values.len() - window..];
    let mean = last.iter().sum::<f64>() / window as f64;
    let var = last.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / window as f64;
    Some((var.sqrt(), mean))
}

/// The `q` quantile (0..=1) of `values`, nearest rank.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The bufferbloat grade of `added_ns` of latency under load (Waveform's scale).
pub fn grade(added_ns: u64) -> &'static str {
    match added_ns / 1_000_000 {
        0..5 => "A+",
        5..30 => "A",
        30..60 => "B",
        60..200 => "C",
        200..400 => "D",
        _ => "F",
    }
}

/// Apple networkQuality's word for an RPM.
pub fn rating(rpm: Option<f64>) -> &'static str {
    match rpm {
        None => "unknown",
        Some(r) if r < 300.0 => "Low",
        Some(r) if r < 1000.0 => "Medium",
        Some(_) => "High",
    }
}

/// The confidence of a leg from whether it reached working conditions and its last spread.
pub fn confidence(working_conditions: bool, spread: Option<f64>, tolerance: f64) -> Confidence {
    match spread {
        _ if working_conditions => Confidence::High,
        Some(s) if s < 2.0 * tolerance => Confidence::Medium,
        _ => Confidence::Low,
    }
}

impl KindSpec for RpmSpec {
    fn kind(&self) -> Kind {
        Kind::Rpm
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn planned_ns(&self) -> Option<u64> {
        Some(self.leg_time_ns * self.mode.legs().len() as u64)
    }
}

/// Responsiveness is one client's view of a path under its own load: it does not run as a
/// member.
impl ShareRun for RpmSpec {}

/// Nor does it merge: no member ever ran one.
impl crate::merge_parts::MergeRuns for RpmReport {
    type Spec = RpmSpec;
}

impl KindReport for RpmReport {
    fn spec(&self) -> &dyn KindSpec {
        &self.spec
    }

    fn metrics(&self) -> Vec<Metric> {
        let leg_rpm = |d| self.leg(d).and_then(|l| l.rpm).unwrap_or(f64::NAN);
        let samples: Vec<f64> = self.intervals.iter().filter_map(|i| i.rpm).collect();
        let loaded: Vec<f64> =
            self.intervals.iter().filter_map(|i| i.loaded_p50_ns.map(|v| v as f64)).collect();
        let worst_loaded = self.summary.legs.iter().map(|l| l.times.self_ns).fold(0.0, f64::max);
        let mut m = vec![
            metric("rpm", "Responsiveness", Unit::Rpm, Better::Higher)
                .of(self.summary.rpm.unwrap_or(f64::NAN), samples),
            metric("loaded_latency_ns", "Loaded latency", Unit::Nanos, Better::Lower)
                .of(worst_loaded, loaded),
            metric("idle_latency_p50_ns", "Idle latency p50", Unit::Nanos, Better::Lower)
                .of(self.summary.idle.p50_ns as f64, Vec::new()),
        ];
        for (d, key, label) in [
            (RpmDirection::Download, "download_rpm", "Download RPM"),
            (RpmDirection::Upload, "upload_rpm", "Upload RPM"),
        ] {
            if self.leg(d).is_some() {
                m.push(metric(key, label, Unit::Rpm, Better::Higher).of(leg_rpm(d), Vec::new()));
            }
        }
        let down: f64 = self.summary.legs.iter().map(|l| l.download_bps).fold(0.0, f64::max);
        let up: f64 = self.summary.legs.iter().map(|l| l.upload_bps).fold(0.0, f64::max);
        if down > 0.0 {
            m.push(
                metric("download_bps", "Download", Unit::BitsPerSecond, Better::Higher)
                    .of(down, Vec::new()),
            );
        }
        if up > 0.0 {
            m.push(
                metric("upload_bps", "Upload", Unit::BitsPerSecond, Better::Higher)
                    .of(up, Vec::new()),
            );
        }
        m
    }

    fn series(&self) -> RunSeries {
        let mut rate = Vec::new();
        let mut latency = Vec::new();
        for leg in &self.summary.legs {
            let of_leg = || self.intervals.iter().filter(move |i| i.leg == leg.direction);
            rate.push(Series {
                label: format!("goodput, {} leg", leg.direction.name()),
                unit: Unit::BitsPerSecond,
                points: of_leg().map(|i| (secs(i.end_ns), i.goodput_bps)).collect(),
            });
            latency.push(Series {
                label: format!("loaded p50, {} leg", leg.direction.name()),
                unit: Unit::Nanos,
                points: of_leg()
                    .filter_map(|i| Some((secs(i.end_ns), i.loaded_p50_ns? as f64)))
                    .collect(),
            });
        }
        RunSeries { rate, latency, per_probe: false }
    }

    fn histogram(&self) -> Option<&[HistogramBucket]> {
        let worst = self.summary.legs.iter().max_by_key(|l| l.loaded.p50_ns)?;
        non_empty(&worst.histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_mean_drops_the_slowest() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        // 95 % of 20 is 19: the 20 goes.
        assert_eq!(trimmed_mean(&v, 0.95), Some(10.0));
        assert_eq!(trimmed_mean(&[7.0], 0.95), Some(7.0));
        assert_eq!(trimmed_mean(&[], 0.95), None);
    }

    #[test]
    fn responsiveness_is_the_mean_of_foreign_and_loaded_rpm() {
        // Foreign 60 ms (1000 RPM), loaded 20 ms (3000 RPM): 2000.
        let t = ProbeTimes { tcp_ns: 60e6, tls_ns: 60e6, http_ns: 60e6, self_ns: 20e6 };
        assert!((responsiveness(&t).unwrap() - 2000.0).abs() < 1e-9);
        // Plain HTTP: no TLS part, the other two are averaged.
        let t = ProbeTimes { tcp_ns: 30e6, tls_ns: 0.0, http_ns: 30e6, self_ns: 30e6 };
        assert!((responsiveness(&t).unwrap() - 2000.0).abs() < 1e-9);
        assert_eq!(responsiveness(&ProbeTimes::default()), None);
    }

    #[test]
    fn stability_needs_a_full_window_within_the_tolerance() {
        assert!(!stable(&[100.0, 100.0, 100.0], 4, 0.05));
        assert!(stable(&[1.0, 100.0, 101.0, 99.0, 100.0], 4, 0.05));
        assert!(!stable(&[100.0, 150.0, 100.0, 150.0], 4, 0.05));
        assert!(!stable(&[0.0, 0.0, 0.0, 0.0], 4, 0.05));
    }

    #[test]
    fn grades_and_ratings_follow_their_scales() {
        assert_eq!(grade(4_999_999), "A+");
        assert_eq!(grade(5_000_000), "A");
        assert_eq!(grade(59_000_000), "B");
        assert_eq!(grade(250_000_000), "D");
        assert_eq!(grade(2_000_000_000), "F");
        assert_eq!(rating(Some(120.0)), "Low");
        assert_eq!(rating(Some(999.0)), "Medium");
        assert_eq!(rating(Some(4000.0)), "High");
        assert_eq!(rating(None), "unknown");
    }

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = RpmSpec::new("http://h/");
        assert!(base.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut RpmSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.max_connections = 0),
            Box::new(|s| s.max_connections = MAX_RPM_CONNECTIONS + 1),
            Box::new(|s| s.interval_ns = 1),
            Box::new(|s| s.leg_time_ns = 4_000_000_000),
            Box::new(|s| s.moving_average = 1),
            Box::new(|s| s.stability = 0.0),
            Box::new(|s| s.trim = 1.5),
            Box::new(|s| s.probes_per_second = 0),
            Box::new(|s| s.idle_probes = 0),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }
}
