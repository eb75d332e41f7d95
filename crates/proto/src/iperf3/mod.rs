//! iperf3's control protocol (3.x), sans I/O, so `wirespeed server` can answer stock iperf3
//! clients and `wirespeed bandwidth --iperf3` can drive stock iperf3 servers.
//!
//! - [`wire`]: cookie, state bytes, JSON frames, error numbers, UDP connect bytes and header.
//! - [`params`]: the client's parameter document, type- and range-checked, to and from a spec.
//! - [`results`]: the results document both sides exchange at the end.
//!
//! The conversation itself is described in `docs/protocol.md` ("iperf3 compatibility").

pub mod params;
pub mod results;
pub mod wire;

pub use params::{ParamError, Params};
pub use results::{stream_id, stream_slot, Omitted, Results, StreamResult};
pub use wire::{Cookie, State, COOKIE_LEN};
