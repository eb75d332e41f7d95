//! The ping test: one probe at a time, a line per probe, ping's summary with percentiles.
//!
//! - [`client`]: the probe loops (datagram probes in flight together, connection probes one
//!   after another) and the report.
//! - [`probes`]: the TCP connect and HTTP first-byte probes. ICMP sockets (ping socket or
//!   raw) are shared with `trace`: [`crate::net::icmp`].

pub mod client;
pub mod probes;
