//! What every test kind answers, whatever the kind: its name ([`Kind`], a closed list), its
//! spec's questions ([`KindSpec`]) and its finished report's ([`KindReport`]). Generic code
//! (the report's key figures, the charts, the live panel's title) asks these traits and never
//! matches on the kind. The kind modules ([`crate::kinds`]) implement them; this module depends
//! on none of them, so the kinds, the registry and the generic code form a DAG.

use crate::histogram::HistogramBucket;
use crate::metrics::{Metric, RunSeries};

/// A closed enum whose every variant has a name, with the list of all of them. The list is
/// built from the same words as the enum, so it cannot miss a variant: what the registries of
/// kinds use instead of string lists.
#[macro_export]
macro_rules! named {
    ($(#[$doc:meta])* $vis:vis enum $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vdoc])* $variant,)* }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The name, as JSON and the command line spell it.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// The variant whose [`Self::name`] is `text`.
            pub fn from_name(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name() == text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

crate::named! {
    /// Every test kind, as a report's `kind` names it (`pps` runs are bandwidth reports).
    pub enum Kind {
        /// TCP or UDP throughput ([`crate::kinds::bandwidth`]).
        Bandwidth = "bandwidth",
        /// Request/response round trips ([`crate::kinds::latency`]).
        Latency = "latency",
        /// New TCP connections per second ([`crate::kinds::cps`]).
        Cps = "cps",
        /// Reachability and round trips, one probe at a time ([`crate::kinds::ping`]).
        Ping = "ping",
        /// The path to a host, hop by hop ([`crate::kinds::trace`]).
        Trace = "trace",
        /// HTTP load ([`crate::kinds::http`]).
        Http = "http",
        /// DNS load ([`crate::kinds::dns`]).
        Dns = "dns",
        /// Responsiveness under working conditions ([`crate::kinds::rpm`]).
        Rpm = "rpm",
    }
}

/// What any kind's spec answers.
pub trait KindSpec {
    /// The kind.
    fn kind(&self) -> Kind;
    /// What is measured, as the user named it (host, URL or server).
    fn target(&self) -> &str;
    /// How long the test is planned to run, warm-up included, when it ends by time: what a
    /// progress bar fills against. `None` when it ends by count or at an interruption.
    fn planned_ns(&self) -> Option<u64>;
    /// The reporting interval asked, nanoseconds, for a kind that reports in intervals.
    fn interval_ns(&self) -> Option<u64> {
        None
    }
    /// Nanoseconds between two sends of one sending thread, when the test is paced: what the
    /// diagnosis holds the timer's wake-ups against.
    fn pacing_ns(&self) -> Option<u64> {
        None
    }
    /// True when the client polls its sockets without sleeping by design (a busy core is then
    /// the method, not a limit).
    fn busy_polls(&self) -> bool {
        false
    }
}

/// What any kind's finished report answers.
pub trait KindReport {
    /// The spec the run was asked.
    fn spec(&self) -> &dyn KindSpec;
    /// The comparable figures of the run, headline first: the history's headline column,
    /// `compare`'s ratios, the key-figure tables and the charts all take them from here.
    fn metrics(&self) -> Vec<Metric>;
    /// The time series a chart draws (warm-up included, so a chart shows it).
    fn series(&self) -> RunSeries;
    /// The run's latency histogram, where the kind keeps one.
    fn histogram(&self) -> Option<&[HistogramBucket]> {
        None
    }
    /// Connects that failed for want of a local port (`EADDRNOTAVAIL`), for the kinds that
    /// open connections as their load.
    fn ports_exhausted(&self) -> u64 {
        0
    }
    /// The work the load did, counted in the unit a client's CPU is judged per (requests
    /// answered, round trips, gigabytes received), where the kind has one.
    fn work(&self) -> Option<Work> {
        None
    }
}

/// A run's work: how many of what.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    /// How many.
    pub count: f64,
    /// Of what, singular (`request`, `GB`).
    pub unit: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_name_that_reads_back() {
        for &kind in Kind::ALL {
            assert_eq!(Kind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(Kind::from_name("pps"), None);
    }
}
