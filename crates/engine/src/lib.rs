//! wirespeed's engine: sockets, data threads, pacing, and the client and server halves of each
//! test kind. It takes validated specs and options, emits [`wirespeed_model::Event`]s while a
//! test runs, and returns a [`wirespeed_model::Report`]. It never formats text for people.
//!
//! - [`kinds`]: one folder per test kind (bandwidth, latency, cps, ping, trace, http, dns,
//!   rpm), each its client and, where it has one, its server half. rpm's server half is
//!   `wirespeed web`'s responsiveness endpoints (`wirespeed_web::responsiveness`): plain HTTP
//!   on the web server's listener, limits and per-visitor budgets, which the browser test's
//!   loaded latency uses too.
//! - [`server`]: the multi-client `wirespeed server`: listeners, first-byte routing, admission
//!   and limits, and the control conversation every kind with a server half shares.
//! - [`net`]: sockets, the control connection's framing and handshake, data streams, TLS, ICMP.
//! - `run`: what drives a running test: the interval clock, the pacer, worker threads.

#[cfg(not(target_os = "linux"))]
compile_error!("wirespeed's data path uses Linux system calls (GSO/GRO, recvmmsg, TCP_INFO); other systems are not supported yet");

pub mod error;
pub mod kinds;
pub mod net;
pub(crate) mod run;
pub mod server;

pub use error::ClientError;
pub use net::sys::process_cpu_ns;
/// A report's meta: version, host, start time and far end (for reports made outside the
/// engine, such as another load generator's results read back).
pub use run::member::MemberRun;
pub use run::meta::{hostname, run_meta};
