//! Exit codes, defined once and documented in README.md:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | any other error |
//! | 2 | bad command line (clap's own code) |
//! | 3 | the server could not be reached (name does not resolve, connection refused or timed out; a ping nobody answered; a trace that never reached its target) |
//! | 4 | the server refused the test (token, allow list, busy, limits) |
//! | 5 | the test failed while running (server gone or aborted, a data stream failed); what was measured until then is still reported and saved, marked aborted |
//! | 6 | the peer broke the protocol (not a wirespeed server, malformed messages) |
//! | 7 | the test ran but its results could not be saved |
//! | 8 | the system did not permit something the test needs (ICMP sockets, raw sockets for trace; network namespaces for a study's netns hosts, or an emulated condition this kernel cannot carry out) |
//! | 9 | a saved run asked for does not exist (or nothing has been saved yet) |
//! | 10 | the results database cannot be used: corrupt, another program's, or from a newer wirespeed (it is left untouched); a PostgreSQL one that cannot be reached or refuses the login |
//! | 11 | a scenario's checks failed (`wirespeed bench`; every run finished) |
//! | 12 | a member of a run (`--members`) did not start: it came late or twice, the barrier timed out or the run was aborted, or its clock is off by more than `--max-clock-error`; and `merge` refused a partial or mismatched run |
//! | 13 | `rpm`: a leg never reached working conditions (goodput or responsiveness still varied at its time limit); the report, saved, says so and gives the last interval's figures |
//! | 14 | `publish --check`: a page is not what its template and data render, or is missing |
//! | 130 | a test interrupted by the user (results so far are still reported); `server` and `web` exit 0 when stopped |

use wirespeed_engine::ClientError;
use wirespeed_store::StoreError;

/// Success.
pub(crate) const OK: u8 = 0;
/// Any error not listed below.
pub(crate) const OTHER: u8 = 1;
/// A command line that could not be parsed (clap's own code for its errors).
pub(crate) const USAGE: u8 = 2;
/// The server could not be reached.
pub(crate) const UNREACHABLE: u8 = 3;
/// The server refused the test.
pub(crate) const REFUSED: u8 = 4;
/// The test failed mid-run.
pub(crate) const FAILED: u8 = 5;
/// The peer broke the protocol.
pub(crate) const PROTOCOL: u8 = 6;
/// The results could not be saved.
pub(crate) const NOT_SAVED: u8 = 7;
/// The system refused a permission the test needs.
pub(crate) const NOT_PERMITTED: u8 = 8;
/// A saved run asked for does not exist.
pub(crate) const NOT_FOUND: u8 = 9;
/// The results database is corrupt, foreign or too new, or PostgreSQL cannot be reached.
pub(crate) const DB_UNUSABLE: u8 = 10;
/// A scenario's checks failed.
pub(crate) const CHECKS_FAILED: u8 = 11;
/// A member of a run did not start (late, twice, barrier timed out, clock too far off), or
/// `merge` refused a partial or mismatched run.
pub(crate) const MEMBER_REFUSED: u8 = 12;
/// A responsiveness test whose load or responsiveness never stabilized.
pub(crate) const UNSTABLE: u8 = 13;
/// A published page differs from what its template and data render.
pub(crate) const PAGE_DIFFERS: u8 = 14;
/// Interrupted by the user.
pub(crate) const INTERRUPTED: u8 = 130;

/// A command-line value refused after clap took it (a port inside `HOST:PORT`): exits like
/// clap's own refusals.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Usage(pub String);

/// The exit code for a client error.
pub(crate) fn of_client(e: &ClientError) -> u8 {
    match e.cause() {
        ClientError::Resolve { .. }
        | ClientError::NoAddress { .. }
        | ClientError::Connect { .. }
        | ClientError::Unreachable { .. } => UNREACHABLE,
        ClientError::Refused { .. } | ClientError::TokenRequired => REFUSED,
        ClientError::ServerGone(_) | ClientError::Aborted(_) | ClientError::Stream(_) => FAILED,
        ClientError::Protocol(_) => PROTOCOL,
        ClientError::Local { cause, .. }
            if cause.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            NOT_PERMITTED
        }
        ClientError::Local { .. } | ClientError::Partial { .. } => OTHER,
    }
}

/// The exit code for any error that reached `main`.
pub(crate) fn code_of(err: &anyhow::Error) -> u8 {
    err.chain()
        .find_map(|e| {
            if let Some(c) = e.downcast_ref::<ClientError>() {
                return Some(of_client(c));
            }
            if e.downcast_ref::<crate::saved::NoSuchRun>().is_some() {
                return Some(NOT_FOUND);
            }
            if e.downcast_ref::<Usage>().is_some() {
                return Some(USAGE);
            }
            if let Some(lab) = e.downcast_ref::<wirespeed_netlab::LabError>() {
                use wirespeed_netlab::LabError;
                if matches!(lab, LabError::NotPermitted(_) | LabError::Unsupported(_)) {
                    return Some(NOT_PERMITTED);
                }
            }
            if e.downcast_ref::<wirespeed_runner::member::Interrupted>().is_some() {
                return Some(INTERRUPTED);
            }
            if e.downcast_ref::<wirespeed_runner::member::NotStarted>().is_some()
                || e.downcast_ref::<wirespeed_model::merge::MergeError>().is_some()
            {
                return Some(MEMBER_REFUSED);
            }
            match e.downcast_ref::<StoreError>()? {
                StoreError::NotADatabase { .. }
                | StoreError::Foreign { .. }
                | StoreError::TooNew { .. }
                | StoreError::Corrupt { .. }
                | StoreError::Postgres { connect: true, .. } => Some(DB_UNUSABLE),
                _ => None,
            }
        })
        .unwrap_or(OTHER)
}
