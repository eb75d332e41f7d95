//! What a bandwidth test is asked to do ([`BandwidthSpec`]), in the words of
//! [`crate::flow`]: which way data moves, a flow of streams and the two ends. The spec is also
//! what the client sends the server, so it is checked on both sides.

use serde::{Deserialize, Serialize};

pub use crate::flow::{Direction, End, Flow};
use crate::rules::{Protocol, SpecError, MAX_PARALLEL};

/// Everything that defines a bandwidth test. Defaults follow iperf3 where iperf3 has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BandwidthSpec {
    /// The host (and port) as the user wrote it; informational on the server side.
    pub target: String,
    /// TCP, UDP or QUIC data streams.
    pub protocol: Protocol,
    /// Number of parallel streams per direction (1..=128).
    pub parallel: u16,
    /// How long to send after the omitted warm-up, in nanoseconds; ignored when `bytes` is set.
    pub duration_ns: u64,
    /// Stop after this many bytes in each direction (all streams together) instead of after a time.
    pub bytes: Option<u64>,
    /// Which way data moves.
    pub direction: Direction,
    /// Target rate per stream in bits per second; 0 means as fast as possible.
    pub bitrate_bps: u64,
    /// Bytes per write (TCP, QUIC) or per datagram (UDP payload, header included).
    pub length: u32,
    /// Warm-up at the start whose figures are left out of the summary, in nanoseconds.
    pub omit_ns: u64,
    /// Length of one reporting interval in nanoseconds.
    pub interval_ns: u64,
    /// Socket send and receive buffer size (`SO_SNDBUF`/`SO_RCVBUF`), if set.
    pub window: Option<u32>,
    /// Congestion-control algorithm for the data streams, if set: the kernel's for TCP, one
    /// of [`QUIC_CONGESTION`] for QUIC.
    pub congestion: Option<String>,
    /// TCP maximum segment size for the data streams, if set.
    pub mss: Option<u32>,
    /// Disable Nagle's algorithm on TCP data streams.
    pub no_delay: bool,
    /// DSCP code point (0..=63) marked on data packets, if set.
    pub dscp: Option<u8>,
    /// Send TCP data with `sendfile` from an in-memory file instead of `write`.
    pub zerocopy: bool,
    /// QUIC: streams per connection, each carrying its share of the connection's data.
    #[serde(default = "one_stream", skip_serializing_if = "is_one_stream")]
    pub quic_streams: u16,
    /// UDP: every datagram its own packet in the kernel: no GSO on send, no GRO on receive
    /// (`wirespeed pps`, whose figure is packets the kernel handled one by one; a GSO batch of
    /// 64 datagrams is one packet to the kernel until it reaches a real link).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_packet: bool,
}

fn one_stream() -> u16 {
    1
}

/// One stream is the default, and left out of what is written (a TCP or UDP spec has it too).
fn is_one_stream(n: &u16) -> bool {
    *n == 1
}

/// Most QUIC streams one connection of a bandwidth test carries.
pub const MAX_QUIC_STREAMS: u16 = 64;

/// Smallest UDP payload: the datagram header (sequence + timestamp).
pub const MIN_UDP_LENGTH: u32 = 16;
/// Largest UDP payload over IPv4.
pub const MAX_UDP_LENGTH: u32 = 65_507;
/// Largest TCP write size accepted.
pub const MAX_TCP_LENGTH: u32 = 16 * 1024 * 1024;
/// Default TCP write size (as iperf3).
pub const DEFAULT_TCP_LENGTH: u32 = 128 * 1024;
/// Default UDP payload: fits a 1500-byte MTU over both IPv4 and IPv6.
pub const DEFAULT_UDP_LENGTH: u32 = 1400;
/// The congestion controllers a QUIC test may name.
pub const QUIC_CONGESTION: [&str; 3] = ["newreno", "cubic", "bbr"];
/// Default UDP rate per stream when none is given (as iperf3: 1 Mbit/s).
pub const DEFAULT_UDP_BITRATE: u64 = 1_000_000;

impl BandwidthSpec {
    /// A spec with iperf3's defaults for `protocol`: 10 s, one stream, upload.
    pub fn new(target: impl Into<String>, protocol: Protocol) -> Self {
        let (length, bitrate_bps) = match protocol {
            Protocol::Tcp | Protocol::Quic => (DEFAULT_TCP_LENGTH, 0),
            Protocol::Udp => (DEFAULT_UDP_LENGTH, DEFAULT_UDP_BITRATE),
        };
        Self {
            target: target.into(),
            protocol,
            parallel: 1,
            duration_ns: 10_000_000_000,
            bytes: None,
            direction: Direction::Upload,
            bitrate_bps,
            length,
            omit_ns: 0,
            interval_ns: 1_000_000_000,
            window: None,
            congestion: None,
            mss: None,
            no_delay: false,
            dscp: None,
            zerocopy: false,
            quic_streams: 1,
            per_packet: false,
        }
    }

    /// Checks every field's range. The server runs this on what a client sent, so it must
    /// reject anything a hostile client could use to make it misbehave.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |msg: String| Err(SpecError(msg));
        if self.parallel == 0 || self.parallel > MAX_PARALLEL {
            return fail(format!(
                "parallel streams must be 1..={MAX_PARALLEL}, got {}",
                self.parallel
            ));
        }
        if self.bytes.is_none() && self.duration_ns == 0 {
            return fail("the test needs a time (-t) above 0 or a byte count (-n)".into());
        }
        if self.bytes == Some(0) {
            return fail("the byte count (-n) must be above 0".into());
        }
        if self.interval_ns < 100_000_000 || self.interval_ns > 60_000_000_000 {
            return fail("the interval (-i) must be between 0.1 s and 60 s".into());
        }
        match self.protocol {
            Protocol::Udp if !(MIN_UDP_LENGTH..=MAX_UDP_LENGTH).contains(&self.length) => {
                return fail(format!(
                    "UDP length must be {MIN_UDP_LENGTH}..={MAX_UDP_LENGTH} bytes, got {}",
                    self.length
                ));
            }
            Protocol::Tcp | Protocol::Quic if self.length == 0 || self.length > MAX_TCP_LENGTH => {
                return fail(format!(
                    "{} length must be 1..={MAX_TCP_LENGTH} bytes, got {}",
                    self.protocol.label(),
                    self.length
                ));
            }
            _ => {}
        }
        if let Some(dscp) = self.dscp {
            if dscp > 63 {
                return fail(format!("DSCP must be 0..=63, got {dscp}"));
            }
        }
        if let Some(window) = self.window {
            if !(1024..=512 * 1024 * 1024).contains(&window) {
                return fail("the window (-w) must be between 1 KiB and 512 MiB".into());
            }
        }
        if let Some(mss) = self.mss {
            if !(88..=65_535).contains(&mss) {
                return fail(format!("MSS must be 88..=65535, got {mss}"));
            }
        }
        if let Some(cc) = &self.congestion {
            if cc.is_empty()
                || cc.len() > 15
                || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return fail(format!("'{cc}' is not a congestion-control algorithm name"));
            }
        }
        if self.zerocopy && self.protocol != Protocol::Tcp {
            return fail("--zerocopy applies to TCP only".into());
        }
        if !(1..=MAX_QUIC_STREAMS).contains(&self.quic_streams) {
            return fail(format!(
                "QUIC streams per connection must be 1..={MAX_QUIC_STREAMS}, got {}",
                self.quic_streams
            ));
        }
        if self.quic_streams > 1 && self.protocol != Protocol::Quic {
            return fail("--quic-streams applies to QUIC only".into());
        }
        if self.protocol == Protocol::Quic {
            if self.mss.is_some() || self.no_delay {
                return fail("--mss and --no-delay apply to TCP only".into());
            }
            if let Some(cc) = &self.congestion {
                if !QUIC_CONGESTION.contains(&cc.as_str()) {
                    return fail(format!(
                        "QUIC has no congestion controller '{cc}' (one of {})",
                        QUIC_CONGESTION.join(", ")
                    ));
                }
            }
        }
        if self.target.len() > 1024 {
            return fail("the target name is too long".into());
        }
        Ok(())
    }

    /// Total wall time a time-based test runs, warm-up included.
    pub fn total_ns(&self) -> u64 {
        self.omit_ns.saturating_add(self.duration_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_iperf3() {
        let tcp = BandwidthSpec::new("h", Protocol::Tcp);
        assert_eq!((tcp.length, tcp.bitrate_bps, tcp.parallel), (131_072, 0, 1));
        let udp = BandwidthSpec::new("h", Protocol::Udp);
        assert_eq!((udp.length, udp.bitrate_bps), (1400, 1_000_000));
        assert!(tcp.validate().is_ok() && udp.validate().is_ok());
        let mut quic = BandwidthSpec::new("h", Protocol::Quic);
        quic.congestion = Some("bbr".into());
        assert_eq!((quic.length, quic.bitrate_bps), (131_072, 0));
        assert!(quic.validate().is_ok());
    }

    #[test]
    fn validation_rejects_each_bad_field() {
        let base = BandwidthSpec::new("h", Protocol::Udp);
        type Mutation = Box<dyn Fn(&mut BandwidthSpec)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|s| s.parallel = 0),
            Box::new(|s| s.parallel = 129),
            Box::new(|s| s.length = 8),
            Box::new(|s| s.length = 70_000),
            Box::new(|s| s.duration_ns = 0),
            Box::new(|s| s.bytes = Some(0)),
            Box::new(|s| s.interval_ns = 1),
            Box::new(|s| s.dscp = Some(64)),
            Box::new(|s| s.window = Some(10)),
            Box::new(|s| s.congestion = Some("../etc".into())),
            Box::new(|s| s.zerocopy = true),
            Box::new(|s| {
                s.protocol = Protocol::Quic;
                s.congestion = Some("vegas".into());
            }),
            Box::new(|s| {
                s.protocol = Protocol::Quic;
                s.no_delay = true;
            }),
            Box::new(|s| s.quic_streams = 2),
            Box::new(|s| {
                s.protocol = Protocol::Quic;
                s.quic_streams = 65;
            }),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut spec = base.clone();
            mutate(&mut spec);
            assert!(spec.validate().is_err(), "case {i} should be rejected");
        }
    }

    #[test]
    fn unknown_fields_are_rejected_on_the_wire() {
        let mut json = serde_json::to_value(BandwidthSpec::new("h", Protocol::Tcp)).unwrap();
        json["evil"] = serde_json::Value::Bool(true);
        assert!(serde_json::from_value::<BandwidthSpec>(json).is_err());
    }

    #[test]
    fn flows_follow_direction() {
        assert_eq!(Flow::of(Direction::Bidir), &[Flow::Upload, Flow::Download]);
        assert_eq!(Flow::Download.sender(), End::Server);
        assert!(Direction::Bidir.client_sends() && Direction::Bidir.server_sends());
        assert!(!Direction::Download.client_sends());
    }
}
