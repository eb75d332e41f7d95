//! HTTP: the load generator and the built-in fixture that `wirespeed server --http PORT`
//! serves (a fast, predictable target for load tests, `quick`, and a baseline next to nginx).
//!
//! - [`client`]: runs a load test: its steps, intervals and report.
//! - `shard`, `conn`: HTTP/1.1 load threads (closed and open models, TLS, unix sockets).
//! - `h2`: HTTP/2 load (prior knowledge, or ALPN over TLS), on hyper.
//! - `counts`: what the threads count; [`requests`]: the requests they send; [`results`]: one
//!   record per request (`--format vegeta`); `step`: a step's workers while they run (TLS
//!   settings are shared: [`crate::net::tls`]).
//! - [`fixture`]: the server (served by [`crate::net::http_serve`], as the web speed test and
//!   the DNS fixture's DoH are).

pub mod client;
mod conn;
mod counts;
mod delay;
pub mod fixture;
mod h2;
pub mod requests;
pub mod results;
mod shard;
mod step;
