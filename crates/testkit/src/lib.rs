//! What the workspace's tests share (a dev-dependency only, never in a build of wirespeed): the
//! real peers they start and stop (nginx, DNS servers, Caddy, PostgreSQL, network namespaces,
//! both iperf3 versions),
//! free ports, readiness waits, sample reports, the policy for a test that cannot run here ([`skip`]), and a
//! crate's module graph for the tests that keep it in layers ([`modules`]).

pub mod caddy;
pub mod dns_servers;
pub mod iperf3;
pub mod modules;
pub mod netns;
pub mod nginx;
pub mod peer;
pub mod ports;
pub mod postgres;
pub mod ready;
pub mod sample;
pub mod skip;
