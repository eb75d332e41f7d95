//! The scenario runner behind `wirespeed bench`: a study written as one TOML file — fixtures,
//! systems under test, matrix axes, workloads, checks — read and checked ([`load`]), its
//! templates ([`template`]) and checks ([`check`]) parsed, and expanded into the runs it asks
//! for ([`matrix`]); a system's processes started and stopped as process groups ([`process`],
//! command lines split by [`words`]), probed until ready ([`ready`]) and sampled ([`sample`]).
//! [`execute`] runs the cells, given how a workload runs (a wirespeed test, in-process);
//! [`version`] asks each system's program which version it is. [`member`] makes one client
//! process a member of a run made by several: its share, the common start (a time or the
//! shared database's barrier) and what its report records for `wirespeed merge`.

pub mod check;
pub mod cpus;
pub mod execute;
pub mod load;
pub mod matrix;
pub mod member;
pub mod paths;
pub mod process;
pub mod quick;
pub mod ready;
pub mod role;
pub mod sample;
pub mod scenario;
pub mod template;
pub mod version;
pub mod words;
pub mod yaml;

pub use load::{parse, parse_placed, Loaded, ScenarioError};
pub use scenario::Scenario;
