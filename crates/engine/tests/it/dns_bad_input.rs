//! `wirespeed dns` against servers that misbehave — nothing listening, answers of garbage,
//! cut-off answers, wrong IDs, wrong questions, duplicates, a TCP server that hangs up — each
//! counted by what went wrong, the run ending by itself, never a panic.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use wirespeed_model::kinds::dns::{DnsReport, DnsSpec, DnsTransport};
use wirespeed_proto::dns::datafile;
use wirespeed_proto::dns::wire::{self, Header};

use crate::common::{self, dns_options, run_dns};

/// A UDP server on a free port that answers each query with what `answer` makes of it
/// (nothing, when it returns an empty list), until dropped.
struct Misbehaving {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Misbehaving {
    fn start(answer: fn(&[u8]) -> Vec<Vec<u8>>) -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let port = socket.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !s.load(Relaxed) {
                if let Ok((n, from)) = socket.recv_from(&mut buf) {
                    for reply in answer(&buf[..n]) {
                        let _ = socket.send_to(&reply, from);
                    }
                }
            }
        });
        Self { port, stop, thread: Some(thread) }
    }
}

impl Drop for Misbehaving {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The query turned into a proper answer (QR, RCODE 0, no records).
fn echo_answer(q: &[u8]) -> Vec<u8> {
    let mut a = q.to_vec();
    a[2] |= 0x80;
    a
}

async fn run_against(port: u16, passes: u64) -> DnsReport {
    let lines = datafile::parse("a.example.test A\nb.example.test AAAA\n").unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.passes = Some(passes);
    spec.timeout_ns = 300_000_000;
    run_dns(dns_options(spec, &lines)).await
}

#[tokio::test]
async fn nothing_listening_ends_with_every_query_lost_or_refused() {
    let port = wirespeed_testkit::ports::free_port();
    let r = run_against(port, 10).await;
    let s = &r.summary;
    assert_eq!(s.completed, 0);
    assert_eq!(s.sent + s.send_errors, 20, "{s:?}");
    assert_eq!(s.lost, s.sent, "{s:?}");
}

#[tokio::test]
async fn garbage_and_cut_off_answers_are_malformed() {
    let server =
        Misbehaving::start(|q| vec![b"\xff\xfe garbage".to_vec(), echo_answer(q)[..8].to_vec()]);
    let r = run_against(server.port, 5).await;
    let s = &r.summary;
    assert_eq!((s.completed, s.lost), (0, 10), "{s:?}");
    assert_eq!(s.stray.malformed, 20, "{s:?}");
}

#[tokio::test]
async fn wrong_ids_wrong_questions_and_duplicates_are_told_apart() {
    let server = Misbehaving::start(|q| {
        let right = echo_answer(q);
        let mut wrong_id = right.clone();
        let id = u16::from_be_bytes([q[0], q[1]]);
        wire::set_id(&mut wrong_id, id ^ 0x5a5a);
        let mut wrong_question = right.clone();
        wrong_question[13] ^= 0x01; // a letter of the name changed
                                    // The wrong question first (mismatched: the query waits on), then the answer, then
                                    // the answer again (duplicate) and one for an ID nobody asked for (unexpected).
        vec![wrong_question, right.clone(), right, wrong_id]
    });
    let r = run_against(server.port, 5).await;
    let s = &r.summary;
    assert_eq!((s.completed, s.lost), (10, 0), "{s:?}");
    assert_eq!(s.stray.mismatched, 10, "{s:?}");
    // The run ends with its last answer, so what the server sends after that is not seen.
    assert!(s.stray.duplicate >= 9, "{s:?}");
    assert!(s.stray.unexpected >= 8, "{s:?}");
}

#[tokio::test]
async fn late_answers_count_as_lost_and_late() {
    let server = Misbehaving::start(|q| {
        std::thread::sleep(Duration::from_millis(400)); // past the 300 ms timeout
        vec![echo_answer(q)]
    });
    // One query at a time: each answer arrives while the next query is in flight.
    let lines = datafile::parse("a.example.test A\n").unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", server.port);
    spec.passes = Some(3);
    spec.max_outstanding = 1;
    spec.timeout_ns = 300_000_000;
    let r = run_dns(dns_options(spec, &lines)).await;
    let s = &r.summary;
    assert_eq!((s.completed, s.lost), (0, 3), "{s:?}");
    // The last answer comes after the run has ended; the first surely does not.
    assert!(s.stray.late >= 1, "{s:?}");
}

#[tokio::test]
async fn extended_rcodes_are_read_from_the_opt_record() {
    let server = Misbehaving::start(|q| {
        let mut a = echo_answer(q);
        let h = Header::read(q).unwrap();
        if h.arcount == 1 {
            let end = a.len();
            a[end - 6] = 1; // extended RCODE 1 over header 0: BADVERS
        }
        vec![a]
    });
    let lines = datafile::parse("a.example.test A\n").unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", server.port);
    spec.passes = Some(3);
    spec.edns_size = Some(1232);
    let r = run_dns(dns_options(spec, &lines)).await;
    assert_eq!(common::rcode(&r, "BADVERS"), 3, "{:?}", r.summary);
}

#[tokio::test]
async fn a_tcp_server_that_hangs_up_loses_what_was_in_flight_and_is_reconnected() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Reads a frame, answers nothing, hangs up: five times.
    std::thread::spawn(move || {
        for _ in 0..5 {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 512];
                let _ = std::io::Read::read(&mut s, &mut buf);
            }
        }
    });
    let lines = datafile::parse("a.example.test A\n").unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.transport = DnsTransport::Tcp;
    spec.passes = Some(3);
    spec.max_outstanding = 1;
    let r = run_dns(dns_options(spec, &lines)).await;
    let s = &r.summary;
    assert_eq!((s.completed, s.lost), (0, 3), "{s:?}");
    let c = s.connections.as_ref().unwrap();
    assert_eq!((c.attempts, c.successful), (3, 3), "{c:?}");
}

#[tokio::test]
async fn a_refused_tcp_port_gives_a_bounded_run_up() {
    let port = wirespeed_testkit::ports::free_port();
    let lines = datafile::parse("a.example.test A\n").unwrap();
    let mut spec = DnsSpec::new("127.0.0.1", port);
    spec.transport = DnsTransport::Tcp;
    spec.passes = Some(4);
    let r = run_dns(dns_options(spec, &lines)).await;
    let s = &r.summary;
    assert_eq!((s.sent, s.unsent), (0, 4), "{s:?}");
    let c = s.connections.as_ref().unwrap();
    assert_eq!((c.attempts, c.successful), (3, 0), "{c:?}");
}
