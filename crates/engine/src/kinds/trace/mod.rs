//! The trace test: probes with growing TTLs, and the routers' ICMP "time exceeded" answers
//! that name each hop.
//!
//! - [`client`]: rounds of probes, hop statistics, the report.
//! - `probes`: sending ICMP, UDP or TCP probes with a TTL, and matching what comes back.

pub mod client;
mod probes;
