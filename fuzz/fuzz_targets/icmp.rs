//! Fuzzes the ICMP decoders `ping` and `trace` run on anything an ICMP socket receives (see
//! `wirespeed_proto::exercise_icmp_decoders`). Run with `cargo +nightly fuzz run icmp`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirespeed_proto::exercise_icmp_decoders(data));
