//! Fuzzes what the web speed test decodes from clients (telemetry bodies, paths, queries,
//! forwarding headers; see `wirespeed_web::exercise_decoders`). Run with
//! `cargo +nightly fuzz run web`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirespeed_web::exercise_decoders(data));
