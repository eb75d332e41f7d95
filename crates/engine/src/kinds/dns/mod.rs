//! DNS: the load generator `wirespeed dns` runs (dnsperf's model and options, with an open
//! loop, TCP, DoT, DoQ, DoH and honest accounting) and the fixture `wirespeed server --dns PORT` serves.
//!
//! - [`client`]: runs a load test: its workers, intervals and report.
//! - `udp`: a UDP worker thread (connected sockets, `sendmmsg`/`recvmmsg`, epoll).
//! - `stream`: a TCP or DoT client (pipelined frames), also the `--tc-retry` path.
//! - `per_query`: the loop of transports with an exchange per query: DoQ and DoH.
//! - `doq`: DNS over QUIC, a QUIC stream per query.
//! - `doh`: DNS over HTTPS, an HTTP/2 request per query; `doh3`: the same over HTTP/3.
//! - `tracker`: IDs in flight, matching answers, timeouts and counts, sans I/O.
//! - `shared`: what workers publish to the sampler, and pacing.
//! - [`queries`]: the queries, encoded once, and each worker's walk through them.
//! - [`fixture`]: the server.
//! - [`fixture_secure`]: the server's DoQ and DoH, given a certificate.

pub mod client;
mod doh;
mod doh3;
mod doq;
pub mod fixture;
pub mod fixture_secure;
mod per_query;
pub mod queries;
mod shared;
mod stream;
mod tracker;
mod udp;
