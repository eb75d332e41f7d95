//! HTTP: the built-in fixture that `wirespeed server --http PORT` serves (a fast, predictable
//! target for HTTP load tests, `quick`, and a baseline next to nginx).
//!
//! - [`fixture`]: the server.

pub mod fixture;
