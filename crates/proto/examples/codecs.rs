//! Our hand-written hot-path codecs against the maintained libraries that could replace them,
//! timed side by side in alternating rounds (ours, theirs, ours, …) and printed as the median
//! nanoseconds per operation and the ratio theirs/ours. `scripts/bench/codecs.sh` runs it;
//! docs/architecture.md cites the figures for keeping our code on these paths.
//!
//! - DNS query: our template (encoded once; each send copies it and writes the ID) against
//!   `domain`'s `MessageBuilder` building the same query (name parsed once, outside the loop).
//! - DNS answer: our in-place check (header, QR, question echoed, RCODE with EDNS's extended
//!   bits) against `domain`'s `Message` doing the same (first question, `opt_rcode`).
//! - Chunked body: our `ChunkedScanner` (its size lines read by httparse) counting a 64 KiB
//!   body against a bare loop over `httparse::parse_chunk_size` on the same bytes, whole in
//!   memory: the price of the scanner's state (it works across reads, checks the CRLF after
//!   each chunk's data and caps lines), which the bare loop does not pay.
#![allow(clippy::print_stdout)] // an example prints its result

use std::hint::black_box;
use std::str::FromStr;
use std::time::Instant;

use domain::base::iana::Rtype;
use domain::base::{Message, MessageBuilder, Name, Question};
use wirespeed_proto::dns::qtype::A;
use wirespeed_proto::dns::responder::respond;
use wirespeed_proto::dns::wire::{self, Edns, Header, Query};
use wirespeed_proto::dns::zone::Zone;
use wirespeed_proto::http1::ChunkedScanner;

/// Nanoseconds per call of `f`, over `n` calls.
fn per_call(n: u32, mut f: impl FnMut(u32)) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        f(i);
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `ours` and `theirs` alternately `rounds` times and prints their medians.
fn compare(
    what: &str,
    rounds: usize,
    n: u32,
    mut ours: impl FnMut(u32),
    mut theirs: impl FnMut(u32),
) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(per_call(n, &mut ours));
        b.push(per_call(n, &mut theirs));
    }
    let (a, b) = (median(a), median(b));
    println!("{what:<14} ours {a:>8.1} ns  library {b:>8.1} ns  library/ours {:>5.2}", b / a);
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(7);
    let n: u32 = std::env::var("N").ok().and_then(|r| r.parse().ok()).unwrap_or(200_000);
    let edns = Some(Edns { udp_size: 1232, dnssec_ok: false });

    // A query, as the load generator sends one per datagram.
    let template = Query::encode("www.example.test", A, true, edns).expect("a query");
    let mut out = vec![0u8; 512];
    let name = Name::<Vec<u8>>::from_str("www.example.test").expect("a name");
    compare(
        "dns query",
        rounds,
        n,
        |i| {
            let len = template.bytes.len();
            out[..len].copy_from_slice(&template.bytes);
            wire::set_id(&mut out[..len], i as u16);
            black_box(&out[..len]);
        },
        |i| {
            let mut msg = MessageBuilder::new_vec();
            msg.header_mut().set_id(i as u16);
            msg.header_mut().set_rd(true);
            let mut q = msg.question();
            q.push((&name, Rtype::A)).expect("room for the question");
            let mut extra = q.additional();
            extra
                .opt(|opt| {
                    opt.set_udp_payload_size(1232);
                    Ok(())
                })
                .expect("room for the OPT");
            black_box(extra.finish());
        },
    );

    // Its answer, as the fixture gives it.
    let zone = Zone::generated(10);
    let mut answer = Vec::new();
    assert!(respond(&template.bytes, &zone, true, &mut answer));
    let question = template.question().to_vec();
    let asked = Question::new_in(name.clone(), Rtype::A);
    compare(
        "dns answer",
        rounds,
        n,
        |_| {
            let msg = black_box(&answer[..]);
            let ok = Header::read_answer(msg).is_ok_and(|h| {
                wire::question_matches(msg, &h, &question)
                    && wire::full_rcode(msg, &h).is_ok_and(|r| r == 0)
            });
            assert!(ok);
        },
        |_| {
            let msg = Message::from_octets(black_box(&answer[..])).expect("a message");
            let ok = msg.header().qr()
                && msg.header_counts().qdcount() == 1
                && msg.first_question().is_some_and(|q| q == asked)
                && msg.opt_rcode().to_int() == 0;
            assert!(ok);
        },
    );

    // A 64 KiB chunked body in 4 KiB chunks and its end.
    let mut body = Vec::new();
    for _ in 0..16 {
        body.extend_from_slice(b"1000\r\n");
        body.extend_from_slice(&[b'x'; 4096]);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    compare(
        "chunked 64KiB",
        rounds,
        n / 10,
        |_| {
            let mut s = ChunkedScanner::default();
            assert_eq!(s.feed(black_box(&body)).ok(), Some(body.len()));
            assert!(s.done() && s.body_bytes == 65_536);
        },
        |_| {
            let buf = black_box(&body[..]);
            let (mut at, mut bytes) = (0usize, 0u64);
            loop {
                let Ok(httparse::Status::Complete((used, size))) =
                    httparse::parse_chunk_size(&buf[at..])
                else {
                    panic!("a chunk size line")
                };
                at += used;
                if size == 0 {
                    at += 2; // the empty trailer line
                    break;
                }
                at += size as usize + 2;
                bytes += size;
            }
            assert!(at == buf.len() && bytes == 65_536);
        },
    );
}
