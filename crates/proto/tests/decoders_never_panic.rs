//! The fuzz target's body (`exercise_decoders`) run over seeded random and mutated
//! inputs, so every CI run exercises the decoders without a nightly toolchain.

use wirespeed_model::kinds::bandwidth::BandwidthSpec;
use wirespeed_model::rules::Protocol;
use wirespeed_model::TestSpec;
use wirespeed_proto::codec::encode_frame;
use wirespeed_proto::control::ClientMessage;

fn exercise(data: &[u8]) {
    wirespeed_proto::exercise_decoders(data);
}

/// xorshift64*: a fixed seed makes every run check the same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn random_and_mutated_inputs() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut valid = Vec::new();
    encode_frame(&ClientMessage::Hello { version: "1".into() }, &mut valid).unwrap();
    encode_frame(
        &ClientMessage::Start {
            spec: TestSpec::Bandwidth(BandwidthSpec::new("h", Protocol::Udp)),
            auth: Some("00".into()),
        },
        &mut valid,
    )
    .unwrap();
    encode_frame(&ClientMessage::Stop, &mut valid).unwrap();
    exercise(&valid);
    // An iperf3 cookie and parameter document, so mutations reach the iperf3 decoders too.
    let mut iperf3 = b"abcdefghijklmnopqrstuvwxyz2345672345\0".to_vec();
    iperf3.extend(wirespeed_proto::iperf3::wire::encode_json(&serde_json::json!({
        "udp": true, "omit": 0, "time": 3, "num": 0, "blockcount": 0, "parallel": 2,
        "reverse": true, "len": 1200, "bandwidth": 10_000_000, "udp_counters_64bit": 1,
    })));
    exercise(&iperf3);
    let iperf3_params = iperf3.split_off(37);
    exercise(&iperf3_params);
    // A DNS query with EDNS, so mutations reach the responder's lookups and the OPT walk.
    let dns = wirespeed_proto::dns::wire::Query::encode(
        "host1.example.test",
        1,
        true,
        Some(wirespeed_proto::dns::wire::Edns { udp_size: 1232, dnssec_ok: true }),
    )
    .unwrap()
    .bytes;
    exercise(&dns);
    // A zone file and URLs, so mutations reach the zone scanner (domain) and the URL parser.
    let zone = b"$ORIGIN t.\n$TTL 60\n@ SOA ns h (1 2 3 4 5)\n*.w A 192.0.2.1\nx TXT \"a\\032b\" c\n$INCLUDE f\nhttp://u:p@[::1]:8080/a%20b/../c?d#e".to_vec();
    exercise(&zone);
    for _ in 0..20_000 {
        let len = (rng.next() % 300) as usize;
        let random: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        exercise(&random);
        let seed = match rng.next() % 4 {
            0 => &valid,
            1 => &iperf3_params,
            2 => &zone,
            _ => &dns,
        };
        let mut mutated = seed.clone();
        for _ in 0..1 + rng.next() % 4 {
            let at = (rng.next() as usize) % mutated.len();
            mutated[at] = rng.next() as u8;
        }
        let cut = (rng.next() as usize) % (mutated.len() + 1);
        exercise(&mutated[..cut]);
    }
}

/// Every input the fuzz campaigns kept for a target (`fuzz/corpus/TARGET`, minimised by
/// scripts/fuzz.sh) and every past finding (`fuzz/regressions/TARGET`), through its decoders.
fn kept_inputs(target: &str, exercise: fn(&[u8])) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            exercise(&std::fs::read(&path).unwrap());
            files += 1;
        }
    }
    assert!(files > 0, "fuzz/corpus/{target} is empty: scripts/fuzz.sh fills it");
}

#[test]
fn every_kept_fuzz_input_decodes() {
    kept_inputs("control", wirespeed_proto::exercise_decoders);
    kept_inputs("iperf3", wirespeed_proto::exercise_iperf3_decoders);
    kept_inputs("icmp", wirespeed_proto::exercise_icmp_decoders);
    kept_inputs("http", wirespeed_proto::exercise_http_decoders);
    kept_inputs("dns", wirespeed_proto::exercise_dns_decoders);
}
