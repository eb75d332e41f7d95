//! HTTP: the load generator and the built-in fixture that `wirespeed server --http PORT`
//! serves (a fast, predictable target for load tests, `quick`, and a baseline next to nginx).
//!
//! - [`client`]: the load generator (closed model, HTTP/1.1).
//! - [`fixture`]: the server.

pub mod client;
pub mod fixture;
