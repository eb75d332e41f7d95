//! The ping test: one probe at a time, a line per probe, ping's summary with percentiles.
//!
//! - [`client`]: the probe loops (datagram probes in flight together, connection probes one
//!   after another) and the report.
//! - [`icmp`]: the ICMP socket (ping socket or raw), shared with `trace`.
//! - [`probes`]: the TCP connect and HTTP first-byte probes.

pub mod client;
pub mod probes;
