//! A lab on one machine: hosts as network namespaces, each pair joined by a point-to-point
//! link whose two directions carry emulated conditions — delay, jitter, loss, duplication,
//! reordering, corruption, a rate and its queue ([`wirespeed_model::path::Conditions`]).
//! [`lab::Lab`] builds it all or nothing and removes it all when dropped; [`kernel`] finds
//! what this kernel can do, [`shaping`] chooses per link what carries each condition and the
//! `tc`/`nft` commands that do it, and [`delay_line`] holds packets in user space where the
//! kernel has no netem. Everything is made with the system's own `ip`, `tc` and `nft`
//! ([`command`]), so a lab can be looked at with them while it runs.

pub mod command;
pub mod delay_line;
pub mod kernel;
pub mod lab;
pub mod namespace;
pub mod privilege;
pub mod shaping;

pub use lab::{Lab, LabSpec, LinkSpec};

/// Why a lab could not be built or used.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// This process may not make namespaces or links.
    #[error("{0}")]
    NotPermitted(String),
    /// This machine lacks what a condition needs.
    #[error("this machine cannot emulate the link: {0}")]
    Unsupported(String),
    /// A tool refused a step.
    #[error("{line}: {message}")]
    Command {
        /// The command line.
        line: String,
        /// What the tool said.
        message: String,
    },
    /// A namespace could not be entered.
    #[error("network namespace: {0}")]
    Namespace(String),
    /// A TUN device could not be made.
    #[error("TUN device {0}")]
    Tun(String),
    /// The lab's description is wrong (an unknown host, a link twice).
    #[error("{0}")]
    Spec(String),
}
