//! The `web` fuzz target's body (`exercise_decoders`) over seeded random and mutated inputs,
//! so every CI run exercises the web server's decoders without a nightly toolchain.

use wirespeed_model::compare::SplitMix;

#[test]
fn random_and_mutated_inputs() {
    // A fixed seed: every run checks the same inputs.
    let mut rng = SplitMix(0x2545_f491_4f6c_dd1d);
    let seeds: [&[u8]; 4] = [
        b"--B\r\nContent-Disposition: form-data; name=\"dl\"\r\n\r\n93.50\r\n--B\r\n\
          Content-Disposition: form-data; name=\"ispinfo\"\r\n\r\n{}\r\n--B--\r\n",
        b"ispinfo=%7B%7D&dl=93.50&ul=Fail&ping=4.00&jitter=0.50&log=&extra=",
        b"/backend/garbage.php?ckSize=100&r=0.5&cors=true&t=abc",
        b"6.6.6.6, 198.51.100.7, 10.0.0.1",
    ];
    for seed in seeds {
        wirespeed_web::exercise_decoders(seed);
    }
    for _ in 0..20_000 {
        let mut input = seeds[(rng.next_u64() % 4) as usize].to_vec();
        for _ in 0..1 + rng.next_u64() % 8 {
            let at = (rng.next_u64() as usize) % (input.len() + 1);
            match rng.next_u64() % 3 {
                0 if at < input.len() => input[at] = rng.next_u64() as u8,
                1 => input.insert(at, rng.next_u64() as u8),
                _ if at < input.len() => {
                    input.remove(at);
                }
                _ => {}
            }
        }
        wirespeed_web::exercise_decoders(&input);
        let random: Vec<u8> = (0..rng.next_u64() % 200).map(|_| rng.next_u64() as u8).collect();
        wirespeed_web::exercise_decoders(&random);
    }
}

/// Every input the `web` fuzz campaigns kept (`fuzz/corpus/web`, minimised by scripts/fuzz.sh)
/// and every past finding (`fuzz/regressions/web`), through the decoders.
#[test]
fn every_kept_fuzz_input_decodes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join("web")) else { continue };
        for entry in entries {
            wirespeed_web::exercise_decoders(&std::fs::read(entry.unwrap().path()).unwrap());
            files += 1;
        }
    }
    assert!(files > 0, "fuzz/corpus/web is empty: scripts/fuzz.sh fills it");
}
