//! Fuzzes the DNS decoders (answers as the generator reads them, the fixture's responder,
//! datafiles and zone files; see `wirespeed_proto::exercise_dns_decoders`). Run with
//! `cargo +nightly fuzz run dns`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wirespeed_proto::exercise_dns_decoders(data));
