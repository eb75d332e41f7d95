//! The bandwidth test: TCP, UDP or QUIC throughput in one or both directions.
//!
//! - [`client`]: the client half, from resolving the target to the finished report.
//! - `server`: the server half of one test (reached through [`crate::server`]).
//! - `iperf3_server`: the server half for a stock iperf3 client, on the same port.
//! - [`iperf3_client`]: the client half against a stock `iperf3 -s`.
//! - `workers`: the data threads of both halves.
//! - `quic_ends`: what a data thread runs for a QUIC stream end.
//! - [`collect`]: pairs both ends' counters into intervals and the summary.
//! - `schedule`: the client's interval ticks, warm-up end and deadline.
//! - `probing`: `--latency`, the round trips probed beside the test.

pub mod client;
pub mod collect;
mod counters;
pub mod iperf3_client;
mod iperf3_results;
pub(crate) mod iperf3_server;
mod probing;
mod quic_ends;
mod schedule;
pub(crate) mod server;
mod shared;
mod tally;
pub(crate) mod workers;

pub use server::apply_limits;
