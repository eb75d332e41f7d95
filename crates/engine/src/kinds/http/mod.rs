//! HTTP: the load generator and the built-in fixture that `wirespeed server --http PORT`
//! serves (a fast, predictable target for load tests, `quick`, and a baseline next to nginx).
//!
//! - [`client`]: runs a load test: its steps, intervals and report (`alt_svc`: where
//!   `--alt-svc` finds the server's HTTP/3).
//! - `shard`, `conn`: HTTP/1.1 load threads (closed and open models, TLS, unix sockets).
//! - `h2`: HTTP/2 load (prior knowledge, or ALPN over TLS), on hyper; `h3`: HTTP/3 load, on
//!   h3 and quinn; `multiplex`: the load loops both share.
//! - `counts`: what the threads count; [`requests`]: the requests they send; [`results`]: one
//!   record per request (`--format vegeta`); `step`: a step's workers while they run (TLS
//!   settings are shared: [`crate::net::tls`]).
//! - [`fixture`]: the server, and [`fixture_h3`] its HTTP/3 side (served by [`crate::net::http_serve`], as the web speed test and
//!   the DNS fixture's DoH are).

mod alt_svc;
pub mod client;
mod conn;
mod counts;
mod delay;
#[cfg(test)]
mod finish_tests;
pub mod fixture;
mod fixture_answer;
pub mod fixture_h3;
mod h2;
mod h3;
mod multiplex;
pub mod requests;
pub mod results;
mod shard;
mod step;
