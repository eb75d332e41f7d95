//! Control messages and the order they may arrive in.
//!
//! ```text
//! C→S  preamble(C) Hello
//! S→C  Challenge{nonce, auth_required}
//! C→S  Start{spec, auth}
//! S→C  Accepted{session, spec, quic_pin} | Refused{code, message}
//! C→S  data connections / UDP hellos, one per stream
//! S→C  Begin                          (every stream is attached; time starts)
//! S→C  Tick{index, streams}           (once per interval: the server's running totals)
//! C→S  Stop                           (time is up, or the client is done)
//! S→C  Results{…}                     (the server's final totals)
//! ```
//! Either side may send `Abort{reason}` at any point after `Hello`. [`ServerState`] and
//! [`ClientState`] enforce this order, so a peer that skips a step gets a precise error
//! instead of confusing the other side.

use serde::{Deserialize, Serialize};
use wirespeed_model::diagnosis::ThreadCpu;
use wirespeed_model::flow::Flow;
use wirespeed_model::kinds::bandwidth::Totals;
use wirespeed_model::spec::TestSpec;

/// Messages a client sends on the control connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// First message: who is asking.
    Hello {
        /// Client software version.
        version: String,
    },
    /// The test to run, and the answer to the challenge if the server wants one.
    Start {
        /// The test, tagged with its `kind`.
        spec: TestSpec,
        /// Hex HMAC-SHA256 of the server's nonce under the shared token (see [`crate::auth`]).
        #[serde(default)]
        auth: Option<String>,
    },
    /// The test is over from the client's side: the server stops sending and reports.
    Stop,
    /// The client gives up (interrupted or failed); the server tears the test down.
    Abort {
        /// Why.
        reason: String,
    },
}

/// Why a server refused a test. Each code maps to a distinct client exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefuseCode {
    /// The token was missing or wrong.
    Auth,
    /// The client address is not in the `--allow` list.
    NotAllowed,
    /// `--max-tests` tests are already running.
    Busy,
    /// The spec breaks a server limit (duration, bitrate) or a validity rule.
    Limit,
    /// The client speaks an incompatible protocol.
    Version,
}

/// Messages a server sends on the control connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMessage {
    /// Answer to `Hello`: the server's version and a fresh nonce.
    Challenge {
        /// Server software version.
        version: String,
        /// 32 random bytes, hex; the token proof is computed over these.
        nonce: String,
        /// True when a token is required.
        auth_required: bool,
    },
    /// The test is accepted; connect the data streams.
    Accepted {
        /// Session id (16 bytes, hex) that each data stream presents.
        session: String,
        /// The spec as the server will run it (a bitrate may have been capped).
        spec: TestSpec,
        /// Why the spec changed, if it did.
        #[serde(default)]
        notes: Vec<String>,
        /// For QUIC data streams: the SHA-256 (hex) of the certificate the server's QUIC
        /// ends present. The client trusts that one certificate, learnt here over the
        /// (token-authenticated) control connection, and no other.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quic_pin: Option<String>,
    },
    /// The test is refused.
    Refused {
        /// Category.
        code: RefuseCode,
        /// A sentence a person can act on.
        message: String,
    },
    /// Every stream is attached; both sides start their clocks now.
    Begin,
    /// The server's running totals at the end of interval `index`.
    Tick {
        /// Interval number, from 0.
        index: u32,
        /// Totals of each of the server's stream ends.
        streams: Vec<StreamTotals>,
    },
    /// The server's final figures, after `Stop`.
    Results(Box<ServerResults>),
    /// The server ends the test early (shutting down, a limit was hit, a stream failed).
    Abort {
        /// Why.
        reason: String,
    },
}

/// One stream end's running totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamTotals {
    /// The stream's flow.
    pub flow: Flow,
    /// Stream number within the flow, from 1.
    pub id: u16,
    /// The counters.
    pub totals: Totals,
}

/// What the server measured over the whole test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResults {
    /// Totals of each stream end when the warm-up ended (all zero without `--omit`).
    pub at_omit: Vec<StreamTotals>,
    /// Totals of each stream end at the end.
    pub at_end: Vec<StreamTotals>,
    /// Per flow, nanoseconds from the end of the warm-up to the server's last byte on it.
    pub active_ns: Vec<(Flow, u64)>,
    /// CPU time the server's data threads used in user mode, nanoseconds.
    pub cpu_user_ns: u64,
    /// CPU time the server's data threads used in kernel mode, nanoseconds.
    pub cpu_system_ns: u64,
    /// Wall time from `Begin` to the end, nanoseconds.
    pub wall_ns: u64,
    /// Connections a cps test opened that the server accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<u64>,
    /// Each of the server's data threads for the test, for the client's diagnosis (older
    /// servers send none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadCpu>,
}

impl ServerResults {
    /// Results of a test with no data streams of its own to report (latency, cps): the
    /// server's CPU time over `wall_ns`.
    pub fn without_streams(cpu_user_ns: u64, cpu_system_ns: u64, wall_ns: u64) -> Self {
        Self {
            at_omit: Vec::new(),
            at_end: Vec::new(),
            active_ns: Vec::new(),
            cpu_user_ns,
            cpu_system_ns,
            wall_ns,
            accepted: None,
            threads: Vec::new(),
        }
    }
}

/// A message that is well-formed but arrived when it makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected {got} message while {state}")]
pub struct OrderError {
    /// The message type that arrived.
    pub got: &'static str,
    /// What the receiver was waiting for.
    pub state: &'static str,
}

impl ClientMessage {
    /// The message's type name, as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Hello { .. } => "hello",
            Self::Start { .. } => "start",
            Self::Stop => "stop",
            Self::Abort { .. } => "abort",
        }
    }
}

impl ServerMessage {
    /// The message's type name, as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Challenge { .. } => "challenge",
            Self::Accepted { .. } => "accepted",
            Self::Refused { .. } => "refused",
            Self::Begin => "begin",
            Self::Tick { .. } => "tick",
            Self::Results(_) => "results",
            Self::Abort { .. } => "abort",
        }
    }
}

/// Where a server is in one control conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerState {
    /// Waiting for `Hello`.
    #[default]
    AwaitHello,
    /// Challenge sent; waiting for `Start`.
    AwaitStart,
    /// Test accepted or running; waiting for `Stop`.
    Running,
    /// `Stop` received; nothing more is expected.
    Stopping,
}

impl ServerState {
    /// Checks that `msg` may arrive now and moves to the next state.
    pub fn on_client(&mut self, msg: &ClientMessage) -> Result<(), OrderError> {
        use ClientMessage as M;
        let next = match (*self, msg) {
            (_, M::Abort { .. }) => Self::Stopping,
            (Self::AwaitHello, M::Hello { .. }) => Self::AwaitStart,
            (Self::AwaitStart, M::Start { .. }) => Self::Running,
            (Self::Running, M::Stop) => Self::Stopping,
            (state, msg) => return Err(OrderError { got: msg.name(), state: state.describe() }),
        };
        *self = next;
        Ok(())
    }

    fn describe(self) -> &'static str {
        match self {
            Self::AwaitHello => "waiting for hello",
            Self::AwaitStart => "waiting for start",
            Self::Running => "the test runs",
            Self::Stopping => "the test is stopping",
        }
    }
}

/// Where a client is in one control conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientState {
    /// Hello sent; waiting for `Challenge`.
    #[default]
    AwaitChallenge,
    /// Start sent; waiting for `Accepted` or `Refused`.
    AwaitAccept,
    /// Accepted; waiting for `Begin`.
    AwaitBegin,
    /// Running; ticks arrive; waiting for `Results` after `Stop`.
    Running,
    /// Results received.
    Done,
}

impl ClientState {
    /// Checks that `msg` may arrive now and moves to the next state.
    pub fn on_server(&mut self, msg: &ServerMessage) -> Result<(), OrderError> {
        use ServerMessage as M;
        let next = match (*self, msg) {
            (_, M::Abort { .. })
            | (Self::AwaitChallenge | Self::AwaitAccept, M::Refused { .. }) => Self::Done,
            (Self::AwaitChallenge, M::Challenge { .. }) => Self::AwaitAccept,
            (Self::AwaitAccept, M::Accepted { .. }) => Self::AwaitBegin,
            (Self::AwaitBegin, M::Begin) => Self::Running,
            (Self::Running, M::Tick { .. }) => Self::Running,
            (Self::Running, M::Results(_)) => Self::Done,
            (state, msg) => return Err(OrderError { got: msg.name(), state: state.describe() }),
        };
        *self = next;
        Ok(())
    }

    fn describe(self) -> &'static str {
        match self {
            Self::AwaitChallenge => "waiting for challenge",
            Self::AwaitAccept => "waiting for the server to accept the test",
            Self::AwaitBegin => "waiting for begin",
            Self::Running => "the test runs",
            Self::Done => "the test is over",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::kinds::bandwidth::BandwidthSpec;
    use wirespeed_model::rules::Protocol;

    #[test]
    fn start_carries_the_kind_of_test() {
        let msg = ClientMessage::Start {
            spec: TestSpec::Bandwidth(BandwidthSpec::new("h", Protocol::Udp)),
            auth: None,
        };
        let v = serde_json::to_value(&msg).unwrap();
        assert_eq!(v["spec"]["kind"], "bandwidth");
        assert_eq!(serde_json::from_value::<ClientMessage>(v).unwrap(), msg);
    }

    #[test]
    fn server_accepts_the_normal_order_only() {
        let spec = TestSpec::Bandwidth(BandwidthSpec::new("h", Protocol::Tcp));
        let mut s = ServerState::default();
        assert!(s.on_client(&ClientMessage::Stop).is_err());
        s.on_client(&ClientMessage::Hello { version: "1".into() }).unwrap();
        assert!(s.on_client(&ClientMessage::Hello { version: "1".into() }).is_err());
        s.on_client(&ClientMessage::Start { spec, auth: None }).unwrap();
        s.on_client(&ClientMessage::Stop).unwrap();
        assert_eq!(s, ServerState::Stopping);
        let err = s.on_client(&ClientMessage::Stop).unwrap_err();
        assert_eq!(err.to_string(), "unexpected stop message while the test is stopping");
    }

    #[test]
    fn client_accepts_the_normal_order_only() {
        let mut c = ClientState::default();
        assert!(c.on_server(&ServerMessage::Begin).is_err());
        c.on_server(&ServerMessage::Challenge {
            version: "1".into(),
            nonce: "00".into(),
            auth_required: false,
        })
        .unwrap();
        c.on_server(&ServerMessage::Refused { code: RefuseCode::Busy, message: "busy".into() })
            .unwrap();
        assert_eq!(c, ClientState::Done);
    }

    #[test]
    fn abort_is_valid_anywhere() {
        let mut s = ServerState::AwaitStart;
        s.on_client(&ClientMessage::Abort { reason: "bye".into() }).unwrap();
        let mut c = ClientState::AwaitBegin;
        c.on_server(&ServerMessage::Abort { reason: "bye".into() }).unwrap();
        assert_eq!(c, ClientState::Done);
    }
}
