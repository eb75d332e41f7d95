//! The engine's integration tests, built as one test binary (one link, where one binary per
//! file linked the same dependencies once per file). Each module runs real servers and clients
//! in-process on loopback, and against real peers (iperf3, nginx, Caddy, DNS servers) started
//! from `wirespeed-testkit`.

mod common;

mod bad_input;
mod bandwidth;
mod bandwidth_quic;
mod cps;
mod diagnosis;
mod dns_bad_input;
mod dns_fixture;
mod dns_secure_fixture;
mod dns_servers;
mod http3;
mod http3_caddy;
mod http_fixture;
mod http_load;
mod http_models;
mod http_protocols;
mod iperf3_clients;
mod iperf3_servers;
mod latency;
mod layers;
mod no_leaks;
mod ping;
mod rpm;
mod trace;
