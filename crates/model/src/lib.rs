//! Plain data shared by every part of wirespeed: what a test is asked to do ([`spec`]), each
//! test kind's own types ([`kinds`]), the units numbers carry ([`units`]), what a running test
//! reports ([`event`]), the round-trip histogram several kinds share ([`histogram`]) and the
//! finished [`report::Report`] that renderers and the store consume. This crate does no I/O and
//! has no async code.
//!
//! Data flows one way: flags → [`spec::TestSpec`] → engine → [`event::Event`]s → collector →
//! [`report::Report`] → renderers and store.

pub mod compare;
pub mod diagnosis;
pub mod event;
pub mod flow;
pub mod glob;
pub mod histogram;
pub mod kind;
pub mod kinds;
pub mod member;
pub mod merge;
pub(crate) mod merge_parts;
pub mod metrics;
pub mod path;
pub mod provenance;
pub mod report;
pub mod rules;
pub mod spec;
pub mod stats;
pub mod units;
pub mod web;

pub use event::Event;
pub use report::{Meta, Report, ReportBody};
pub use spec::TestSpec;
