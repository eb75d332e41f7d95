//! Fuzzes the iperf3 decoders our server and client run on a peer's bytes (see
//! `wirespeed_proto::exercise_iperf3_decoders`). Run with `cargo +nightly fuzz run iperf3`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirespeed_proto::exercise_iperf3_decoders(data));
