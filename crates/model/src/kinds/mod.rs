//! One module per test kind: its spec, interval and report types. This list, [`crate::spec`]'s
//! [`TestSpec`](crate::spec::TestSpec) and [`crate::report`]'s
//! [`ReportBody`](crate::report::ReportBody) are where a new kind is registered.

pub mod bandwidth;
pub mod cps;
pub mod dns;
pub mod http;
pub mod latency;
pub mod ping;
pub mod trace;
