//! Fuzzes every decoder a peer's bytes reach (see `wirespeed_proto::exercise_decoders`).
//! Run with `cargo +nightly fuzz run control` from this directory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirespeed_proto::exercise_decoders(data));
