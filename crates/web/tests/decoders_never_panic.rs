//! The `web` fuzz target's body (`exercise_decoders`) over seeded random and mutated inputs,
//! so every CI run exercises the web server's decoders without a nightly toolchain.

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
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
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
        let mut input = seeds[(rng.next() % 4) as usize].to_vec();
        for _ in 0..1 + rng.next() % 8 {
            let at = (rng.next() as usize) % (input.len() + 1);
            match rng.next() % 3 {
                0 if at < input.len() => input[at] = rng.next() as u8,
                1 => input.insert(at, rng.next() as u8),
                _ if at < input.len() => {
                    input.remove(at);
                }
                _ => {}
            }
        }
        wirespeed_web::exercise_decoders(&input);
        let random: Vec<u8> = (0..rng.next() % 200).map(|_| rng.next() as u8).collect();
        wirespeed_web::exercise_decoders(&random);
    }
}
