//! The scenario runner behind `wirespeed bench`: a study written as one TOML file — fixtures,
//! systems under test, matrix axes, workloads, checks — read and checked ([`load`]), its
//! templates ([`template`]) and checks ([`check`]) parsed, and expanded into the runs it asks
//! for ([`matrix`]). Starting processes, probing readiness, sampling and reporting come next
//! (issue 9); this crate has no I/O yet.

pub mod check;
pub mod load;
pub mod matrix;
pub mod scenario;
pub mod template;

pub use load::{parse, Loaded, ScenarioError};
pub use scenario::Scenario;
