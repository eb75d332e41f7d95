//! wirespeed's engine: sockets, data threads, pacing, and the client and server halves of each
//! test kind. It takes validated specs and options, emits [`wirespeed_model::Event`]s while a
//! test runs, and returns a [`wirespeed_model::Report`]. It never formats text for people.
//!
//! - [`server`]: the multi-client `wirespeed server` and its listeners.
//! - [`bandwidth`]: the bandwidth test.
//! - [`latency`]: the latency (request/response round trip) test.
//! - [`cps`]: the connections-per-second test.
//! - [`ping`]: ICMP, TCP, UDP and HTTP ping.
//! - [`trace`]: traceroute and mtr.
//! - [`http`]: HTTP load and the HTTP fixture `wirespeed server --http` serves.
//! - [`dns`]: DNS load and the DNS fixture `wirespeed server --dns` serves.
//! - [`handshake`]: the client side of the control handshake every test kind shares.
//! - `handshakes`: the server's cap on connections that have not said what they are.
//! - [`sys`], [`pacer`], [`counters`], [`framed`], [`buffer`]: the shared machinery.

#[cfg(not(target_os = "linux"))]
compile_error!("wirespeed's data path uses Linux system calls (GSO/GRO, recvmmsg, TCP_INFO); other systems are not supported yet");

pub mod bandwidth;
mod blocking;
mod budget;
pub mod buffer;
pub mod counters;
pub mod cps;
pub mod dns;
pub mod error;
pub mod framed;
pub mod handshake;
mod handshakes;
pub mod http;
mod intervals;
pub mod latency;
pub mod mmsg;
pub mod pacer;
pub mod ping;
pub mod server;
mod session;
pub mod sys;
pub mod trace;

pub use error::ClientError;
