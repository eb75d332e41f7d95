//! The finished result of a run: what renderers print and what the store keeps.
//!
//! A [`Report`] serialises as one JSON document with `kind`, `spec`, `meta`, `intervals` and
//! `summary`; metric names carry their unit as a suffix (`_bps`, `_bytes`, `_ns`, `_ratio`).

use serde::{Deserialize, Serialize};

use crate::histogram::HistogramBucket;
use crate::kind::{Kind, KindReport};
use crate::kinds::bandwidth::BandwidthReport;
use crate::metrics::{Metric, RunSeries};
use crate::spec::TestSpec;

/// A finished run of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    /// The kind-specific part: `kind`, `spec`, `intervals`, `summary`.
    #[serde(flatten)]
    pub body: ReportBody,
    /// Who ran it, where, when, with which version.
    pub meta: Meta,
}

/// [`ReportBody`] and each kind's [`BodyVariant`], from the one list of variants.
macro_rules! report_body {
    ($(#[$meta:meta])* pub enum ReportBody { $($(#[$vmeta:meta])* $variant:ident($report:ty),)* }) => {
        $(#[$meta])*
        pub enum ReportBody { $($(#[$vmeta])* $variant($report),)* }

        $(
            impl BodyVariant for $report {
                fn of_body(body: &ReportBody) -> Option<&Self> {
                    match body {
                        ReportBody::$variant(r) => Some(r),
                        _ => None,
                    }
                }
                fn into_body(self) -> ReportBody {
                    ReportBody::$variant(self)
                }
            }
        )*
    };
}

report_body! {
    /// One variant per test kind, tagged by `kind` in JSON.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    #[allow(clippy::large_enum_variant)] // one report per run; boxing buys nothing
    pub enum ReportBody {
        /// A bandwidth test.
        Bandwidth(BandwidthReport),
        /// A latency test.
        Latency(crate::kinds::latency::LatencyReport),
        /// A connections-per-second test.
        Cps(crate::kinds::cps::CpsReport),
        /// A ping.
        Ping(crate::kinds::ping::PingReport),
        /// A trace.
        Trace(crate::kinds::trace::TraceReport),
        /// An HTTP load test.
        Http(crate::kinds::http::HttpReport),
        /// A DNS load test.
        Dns(crate::kinds::dns::DnsReport),
        /// A responsiveness (RPM) test.
        Rpm(crate::kinds::rpm::RpmReport),
    }
}

impl ReportBody {
    /// The report as the kind-independent questions see it.
    pub fn as_kind(&self) -> &dyn KindReport {
        match self {
            ReportBody::Bandwidth(r) => r,
            ReportBody::Latency(r) => r,
            ReportBody::Cps(r) => r,
            ReportBody::Ping(r) => r,
            ReportBody::Trace(r) => r,
            ReportBody::Http(r) => r,
            ReportBody::Dns(r) => r,
            ReportBody::Rpm(r) => r,
        }
    }

    /// The spec the run was asked, as a [`TestSpec`].
    pub fn spec(&self) -> TestSpec {
        match self {
            ReportBody::Bandwidth(r) => TestSpec::Bandwidth(r.spec.clone()),
            ReportBody::Latency(r) => TestSpec::Latency(r.spec.clone()),
            ReportBody::Cps(r) => TestSpec::Cps(r.spec.clone()),
            ReportBody::Ping(r) => TestSpec::Ping(r.spec.clone()),
            ReportBody::Trace(r) => TestSpec::Trace(r.spec.clone()),
            ReportBody::Http(r) => TestSpec::Http(Box::new(r.spec.clone())),
            ReportBody::Dns(r) => TestSpec::Dns(Box::new(r.spec.clone())),
            ReportBody::Rpm(r) => TestSpec::Rpm(Box::new(r.spec.clone())),
        }
    }
}

/// A kind's report type as its variant of [`ReportBody`]: generic code over one kind (merging
/// its members, say) downcasts a body once through this instead of matching every kind.
pub trait BodyVariant: Sized {
    /// The report, when `body` is of this kind.
    fn of_body(body: &ReportBody) -> Option<&Self>;
    /// The report as a body.
    fn into_body(self) -> ReportBody;
}

impl Report {
    /// The JSON Schema of a report as `--format json` writes it and the store keeps it,
    /// generated from these types (published as `docs/report.schema.json`).
    pub fn schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Report)).unwrap_or_default()
    }

    /// The test kind.
    pub fn kind(&self) -> Kind {
        self.body.as_kind().spec().kind()
    }

    /// The target the run measured.
    pub fn target(&self) -> &str {
        self.body.as_kind().spec().target()
    }

    /// The comparable figures of the run, headline first.
    pub fn metrics(&self) -> Vec<Metric> {
        self.body.as_kind().metrics()
    }

    /// The headline figure of the run (the first of [`Self::metrics`]).
    pub fn headline(&self) -> Metric {
        self.metrics().swap_remove(0)
    }

    /// The time series a chart of the run draws.
    pub fn series(&self) -> RunSeries {
        self.body.as_kind().series()
    }

    /// How the run ended when it did not finish: `interrupted` (the user stopped it) or
    /// `aborted` (the server lost, a stream failed), from the notes that say so; `None` for a
    /// run that finished.
    pub fn ending(&self) -> Option<&'static str> {
        let said = |prefix: &str| self.meta.notes.iter().any(|n| n.starts_with(prefix));
        if said("interrupted:") {
            Some("interrupted")
        } else if said("aborted:") {
            Some("aborted")
        } else {
            None
        }
    }

    /// The run's latency histogram, where its kind keeps one.
    pub fn histogram(&self) -> Option<&[HistogramBucket]> {
        self.body.as_kind().histogram()
    }

    /// The load's CPU seconds per unit of its work (per request, per GB received), where the
    /// load was a process of its own and did some work.
    pub fn load_cpu_per_unit(&self) -> Option<(f64, &'static str)> {
        let cpu = self.meta.load_cpu?;
        let work = self.body.as_kind().work()?;
        (work.count > 0.0).then(|| (cpu.seconds() / work.count, work.unit))
    }
}

/// Facts about a run that are not measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Meta {
    /// wirespeed version that produced the report.
    pub version: String,
    /// Host name of the machine that ran the client.
    pub host: String,
    /// Wall-clock start, RFC 3339 in UTC.
    pub start_time: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub start_unix_ms: u64,
    /// Client address of the control connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_addr: Option<String>,
    /// Server address of the control connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_addr: Option<String>,
    /// Version the server announced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Things a reader should know (a rate the server capped, an option the OS ignored, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The run this report is one member's part of (`--members`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<crate::provenance::MemberRecord>,
    /// The latency histograms in HdrHistogram's own encoding, for an exact merge with other
    /// members' (kept for member runs of the kinds that measure latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<crate::histogram::EncodedHistograms>,
    /// Reports merged into this one (`wirespeed merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::provenance::MergeRecord>,
    /// The emulated links the test ran over (a study on netns hosts): each direction's
    /// conditions, what carried them and what they dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<crate::path::LinkRecord>,
    /// Whether the tester was the limit: its threads' CPU, its wake-ups, the kernel's drops,
    /// its ports, and the findings in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<crate::diagnosis::Diagnosis>,
    /// The CPU the load's process used, from the kernel, where the load was a process of its
    /// own (a test run as its own command, or another tool's client): what a unit of work
    /// cost the client. Absent when the load shared its process (a study's in-process load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_cpu: Option<LoadCpu>,
}

/// A load process's CPU time over its run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadCpu {
    /// User-mode CPU, nanoseconds.
    pub user_ns: u64,
    /// Kernel-mode CPU, nanoseconds.
    pub system_ns: u64,
    /// Wall time it was watched over, nanoseconds.
    pub wall_ns: u64,
}

impl LoadCpu {
    /// User and kernel CPU, seconds.
    pub fn seconds(&self) -> f64 {
        (self.user_ns + self.system_ns) as f64 / 1e9
    }
}
