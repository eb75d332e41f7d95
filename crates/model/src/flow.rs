//! Which way data moves between a client and a server: a test's [`Direction`], the [`Flow`]
//! of one set of streams, and the two [`End`]s. Bandwidth tests are said in these words, and
//! the kinds whose data streams attach to a server session (latency, a UDP ping) name their
//! stream's flow with them; they belong to no one kind.

use serde::{Deserialize, Serialize};

/// Which way data moves. The client always opens every connection, whatever the direction.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client sends, server receives (iperf3's default).
    #[default]
    Upload,
    /// Server sends, client receives (`-R`).
    Download,
    /// Both at once on separate streams (`--bidir`).
    Bidir,
}

impl Direction {
    /// True when the client sends data in this test.
    pub fn client_sends(self) -> bool {
        matches!(self, Self::Upload | Self::Bidir)
    }

    /// True when the server sends data in this test.
    pub fn server_sends(self) -> bool {
        matches!(self, Self::Download | Self::Bidir)
    }
}

/// The flow of one set of streams: from client to server or back.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    PartialOrd,
    Ord,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Flow {
    /// Client to server.
    Upload,
    /// Server to client.
    Download,
}

impl Flow {
    /// The flows a test of `direction` has, upload first.
    pub fn of(direction: Direction) -> &'static [Flow] {
        match direction {
            Direction::Upload => &[Flow::Upload],
            Direction::Download => &[Flow::Download],
            Direction::Bidir => &[Flow::Upload, Flow::Download],
        }
    }

    /// Which end sends on this flow.
    pub fn sender(self) -> End {
        match self {
            Flow::Upload => End::Client,
            Flow::Download => End::Server,
        }
    }

    /// The end that receives this flow's data.
    pub fn receiver(self) -> End {
        match self.sender() {
            End::Client => End::Server,
            End::Server => End::Client,
        }
    }
}

/// One end of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The side that ran `wirespeed bandwidth`.
    Client,
    /// The side that ran `wirespeed server`.
    Server,
}
