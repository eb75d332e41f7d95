//! Fuzzes the HTTP decoders (response heads, chunked bodies, targets files; see
//! `wirespeed_proto::exercise_http_decoders`). Run with `cargo +nightly fuzz run http`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirespeed_proto::exercise_http_decoders(data));
