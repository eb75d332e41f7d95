//! What can go wrong for a client, one variant per cause a user can act on. The binary maps
//! each to a documented exit code. Each message already includes the underlying I/O error (the
//! `cause` fields), so none is exposed again as `source()`: an error chain prints it once.

use std::io;
use std::net::SocketAddr;

use wirespeed_proto::control::RefuseCode;

/// A test that could not run or could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The host name did not resolve.
    #[error("cannot resolve '{host}': {cause}")]
    Resolve {
        /// The name.
        host: String,
        /// The resolver's error.
        cause: io::Error,
    },
    /// The name resolved, but not to an address of the family asked for.
    #[error("'{host}' has no {family} address")]
    NoAddress {
        /// The name.
        host: String,
        /// "IPv4" or "IPv6".
        family: &'static str,
    },
    /// The server could not be reached.
    #[error("cannot connect to {addr}: {cause}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// Why (refused, unreachable, timed out).
        cause: io::Error,
    },
    /// No route to the target (a test with no server to connect to, such as trace).
    #[error("cannot reach {target}: {cause}")]
    Unreachable {
        /// The target.
        target: String,
        /// Why (network or host unreachable).
        cause: io::Error,
    },
    /// The server said no.
    #[error("the server refused the test: {message}")]
    Refused {
        /// Category.
        code: RefuseCode,
        /// The server's explanation.
        message: String,
    },
    /// The server wants a token and none was given.
    #[error("the server requires a token: pass --token (or set WIRESPEED_TOKEN)")]
    TokenRequired,
    /// The peer does not speak wirespeed's protocol, or broke its rules.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server stopped answering or closed the connection mid-test.
    #[error("lost the server mid-test: {0}")]
    ServerGone(String),
    /// The server ended the test early.
    #[error("the server aborted the test: {0}")]
    Aborted(String),
    /// A data stream failed.
    #[error("a data stream failed: {0}")]
    Stream(String),
    /// The test failed mid-run (`cause`) after measuring something: `report` holds what was
    /// measured up to the failure, marked as aborted, for the caller to show and keep.
    #[error("{cause}")]
    Partial {
        /// What was measured before the failure.
        report: Box<wirespeed_model::report::Report>,
        /// Why the test could not finish.
        cause: Box<ClientError>,
    },
    /// A local resource problem (sockets, threads).
    #[error("{context}: {cause}")]
    Local {
        /// What was being done.
        context: String,
        /// The error.
        cause: io::Error,
    },
}

impl ClientError {
    /// `cause`, with `report` (what was measured before it) marked as aborted by it: a note
    /// says why and how much of the planned test the figures cover.
    pub(crate) fn partial(mut report: wirespeed_model::report::Report, cause: ClientError) -> Self {
        report
            .meta
            .notes
            .push(format!("aborted: {cause}; the figures cover the test up to that point"));
        ClientError::Partial { report: Box::new(report), cause: Box::new(cause) }
    }

    /// The cause itself, for a partial result.
    pub fn cause(&self) -> &ClientError {
        match self {
            ClientError::Partial { cause, .. } => cause.cause(),
            other => other,
        }
    }

    /// A mapper from a local I/O error to [`ClientError::Local`] with `context`.
    pub(crate) fn local(context: &str) -> impl Fn(io::Error) -> ClientError + '_ {
        move |cause| ClientError::Local { context: context.to_string(), cause }
    }

    /// A mapper from a blocking task that panicked or was cancelled to
    /// [`ClientError::Local`] with `context`.
    pub(crate) fn joined(context: &str) -> impl Fn(tokio::task::JoinError) -> ClientError + '_ {
        move |e| ClientError::Local { context: context.to_string(), cause: io::Error::other(e) }
    }
}
