//! Plain data shared by every part of wirespeed: what a test is asked to do ([`spec`]),
//! the units its numbers carry ([`units`]), what workers report while it runs ([`event`]),
//! mergeable statistics ([`stats`], and [`latency`]'s round-trip histogram, which [`cps`] reuses
//! for connect times) and the finished [`report::Report`] that renderers and the store consume. This crate does no I/O and has no async code.
//!
//! Data flows one way: flags → [`spec::TestSpec`] → engine → [`event::Event`]s → collector →
//! [`report::Report`] → renderers and store.

pub mod compare;
pub mod cps;
pub mod dns;
pub mod event;
pub mod http;
pub mod latency;
pub mod metrics;
pub mod ping;
pub mod report;
pub mod spec;
pub mod stats;
pub mod trace;
pub mod units;
pub mod web;

pub use event::Event;
pub use report::{Meta, Report, ReportBody};
pub use spec::{BandwidthSpec, Direction, Protocol, TestSpec};
