//! One folder per test kind: its client, and its server half where it has one. A kind uses
//! only the shared machinery ([`crate::net`], [`crate::run`], the server kit in
//! [`crate::server`]), never another kind; the test `kinds_import_no_other_kind` checks it.
//! Kinds with a server half are registered in `server/dispatch.rs`.

pub mod bandwidth;
pub mod cps;
pub mod dns;
pub mod http;
pub mod latency;
pub mod ping;
pub mod trace;
