//! One module per test kind: its spec, interval and report types, and what it answers through
//! [`KindSpec`](crate::kind::KindSpec) and [`KindReport`](crate::kind::KindReport).
//!
//! A new kind registers here (its `mod`), in [`Kind`](crate::kind::Kind), in
//! [`TestSpec`](crate::spec::TestSpec), in [`ReportBody`](crate::report::ReportBody) and in
//! [`Event::replay`](crate::event::Event::replay); each has one exhaustive `match` of one-line
//! arms, so a kind left out fails to compile.

pub mod bandwidth;
pub mod cps;
pub mod dns;
pub mod http;
pub mod latency;
pub mod ping;
pub mod rpm;
pub mod trace;
