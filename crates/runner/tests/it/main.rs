//! The runner's integration tests, built as one test binary: scenario files read and refused
//! (the files are in `tests/scenarios/`), and cells executed with real processes.

mod execute;
mod scenarios;
