//! What the specs of several kinds share: the transport choice, the stream limit, and the
//! run rules every sampled test checks the same way (with the error that names the broken rule).

use serde::{Deserialize, Serialize};

/// Transport of a test's data streams (bandwidth and latency).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// A byte stream per data connection.
    #[default]
    Tcp,
    /// Datagrams carrying a sequence number and a send timestamp.
    Udp,
    /// A QUIC connection per data stream, its data on one unidirectional QUIC stream.
    Quic,
}

impl Protocol {
    /// The name reports print.
    pub fn label(self) -> &'static str {
        match self {
            Self::Tcp => "TCP",
            Self::Udp => "UDP",
            Self::Quic => "QUIC",
        }
    }
}

/// Largest number of parallel streams per direction, as in iperf3.
pub const MAX_PARALLEL: u16 = 128;

/// A spec that breaks a rule, with the rule spelled out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// The rules every sampled test shares: a count above 0 or a time above 0 (`time_flag` names
/// the time's flag), an interval of 0.1 s to 60 s, and a timeout (named `timeout`) above 0 and
/// at most 60 s.
pub(crate) fn check_run(
    count: Option<u64>,
    duration_ns: u64,
    time_flag: &str,
    interval_ns: u64,
    timeout_ns: u64,
    timeout: &str,
) -> Result<(), SpecError> {
    if count == Some(0) || (count.is_none() && duration_ns == 0) {
        return Err(SpecError(format!(
            "the test needs a count (-n) or a time ({time_flag}) above 0"
        )));
    }
    if !(100_000_000..=60_000_000_000).contains(&interval_ns) {
        return Err(SpecError("the interval (-i) must be between 0.1 s and 60 s".into()));
    }
    if timeout_ns == 0 || timeout_ns > crate::histogram::MAX_RTT_NS {
        return Err(SpecError(format!("{timeout} must be above 0 and at most 60 s")));
    }
    Ok(())
}
