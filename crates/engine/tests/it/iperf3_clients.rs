//! Stock iperf3 clients against an in-process wirespeed server, each test once with Debian's
//! 3.12 and once with upstream's 3.21+ (`wirespeed_testkit::iperf3`; scripts/test.sh installs
//! both): every client option the server supports, several clients at once, and malformed
//! iperf3 control input from a raw client. Each test asserts the client exited 0 with valid JSON
//! and that both ends agree on what moved.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_engine::server::ServerConfig;

use crate::common::{tcp_in_flight_per_stream, TestServer};

/// Runs `iperf3 -c` against `addr` with `args` and `-J`; returns its exit success and JSON.
async fn stock_client(iperf3: &str, addr: SocketAddr, args: &str) -> (bool, Value, String) {
    let mut cmd = Command::new(iperf3);
    cmd.args(["-c", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-J"]);
    cmd.args(args.split_whitespace());
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || cmd.output()),
    )
    .await
    .expect("iperf3 finishes within 60 s")
    .unwrap()
    .expect("iperf3 is installed (scripts/test.sh installs it)");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("iperf3 {args}: invalid JSON ({e}): {}", String::from_utf8_lossy(&out.stdout))
    });
    (out.status.success(), json, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs a stock client that must succeed, and returns its JSON.
async fn ok_run(iperf3: &str, addr: SocketAddr, args: &str) -> Value {
    let (ok, json, stderr) = stock_client(iperf3, addr, args).await;
    assert!(ok && json.get("error").is_none(), "{iperf3} {args} failed: {json} {stderr}");
    json
}

fn num(v: &Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} missing in {}", v["end"]))
}

/// Sender and receiver byte counts of a TCP direction agree, up to what was in flight.
fn assert_tcp_agrees(json: &Value, sent: &str, received: &str) {
    let (s, r) = (num(json, sent) as u64, num(json, received) as u64);
    let streams = json["start"]["test_start"]["num_streams"].as_u64().unwrap_or(1);
    // In flight at the end: the socket buffers, plus whatever the sender wrote after the
    // receiver had stopped counting (a sender stops only when TEST_END reaches it).
    let path = |p: &str| p.rsplit_once('.').map_or(p.to_string(), |(head, _)| head.to_string());
    let late_s = (num(json, &format!("{}.seconds", path(sent)))
        - num(json, &format!("{}.seconds", path(received))))
    .max(0.0);
    let late_bytes = (num(json, &format!("{}.bits_per_second", path(sent))) / 8.0 * late_s) as u64;
    let slack = streams * tcp_in_flight_per_stream() + late_bytes;
    // A threaded iperf3 (3.16+) may leave a stream's last block out of what it says it sent,
    // so the receiver can be ahead of it by that much.
    let version = json["start"]["version"].as_str().unwrap_or_default();
    let block = json["start"]["test_start"]["blksize"].as_u64().unwrap_or(0);
    let unsaid = wirespeed_testkit::iperf3::unsaid(version, block);
    // With a warm-up each end starts counting at its own moment (the server's clock starts
    // when it sends TEST_START, the client's when it reads it), so either may be ahead by what
    // moves in that gap: allowed up to 5 % of the bytes on top of what was in flight.
    let warm_up = json["start"]["test_start"]["omit"].as_u64().unwrap_or(0) > 0;
    let agree = |s: u64, r: u64, slack: u64, unsaid: u64| {
        if warm_up {
            s.abs_diff(r) <= slack + unsaid + s / 20
        } else {
            r <= s + unsaid && s.saturating_sub(r) <= slack
        }
    };
    assert!(r > 0, "nothing received: {}", json["end"]);
    assert!(agree(s, r, slack, streams * unsaid), "sent {s} vs received {r}: {}", json["end"]);
    // Per stream too: the server must number streams as the client does. Each stream may also
    // have written after the receiver stopped counting (regression: on a loaded machine one
    // stream's late bytes exceeded its in-flight share and failed this check).
    for st in json["end"]["streams"].as_array().unwrap() {
        let (s, r) = (num(st, "sender.bytes") as u64, num(st, "receiver.bytes") as u64);
        assert!(agree(s, r, tcp_in_flight_per_stream() + late_bytes, unsaid), "stream {st}");
    }
}

/// iperf3 3.12 with -J exits 0 even when the server refused it; the JSON's `error` is what
/// tells.
fn refusal(json: &Value) -> &str {
    json["error"].as_str().unwrap_or_else(|| panic!("expected a refusal: {json}"))
}

/// A UDP summary is self-consistent: lost ≤ packets, the percentage matches, bytes moved.
fn assert_udp_consistent(sum: &Value) {
    let packets = sum["packets"].as_u64().expect("packets");
    let lost = sum["lost_packets"].as_u64().expect("lost_packets");
    assert!(packets > 0 && lost <= packets, "{sum}");
    let pct = sum["lost_percent"].as_f64().unwrap();
    assert!((pct - 100.0 * lost as f64 / packets as f64).abs() < 1e-6, "{sum}");
    assert!(sum["bytes"].as_u64().unwrap() > 0, "{sum}");
}

async fn tcp_upload_reverse_and_bidir(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    let json = ok_run(iperf3, server.addr, "-t 1").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    assert_eq!(json["start"]["test_start"]["protocol"], "TCP");

    let json = ok_run(iperf3, server.addr, "-t 1 -R").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    assert_eq!(json["start"]["test_start"]["reverse"], 1);

    let json = ok_run(iperf3, server.addr, "-t 1 --bidir -P 2").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    assert_tcp_agrees(
        &json,
        "end.sum_sent_bidir_reverse.bytes",
        "end.sum_received_bidir_reverse.bytes",
    );
    assert_eq!(json["end"]["streams"].as_array().unwrap().len(), 4);
    server.shutdown().await;
}

async fn tcp_parallel_byte_and_block_counts_and_warm_up(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    let json = ok_run(iperf3, server.addr, "-t 1 -P 8").await;
    assert_eq!(json["end"]["streams"].as_array().unwrap().len(), 8);
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");

    let json = ok_run(iperf3, server.addr, "-n 40M").await;
    assert!(num(&json, "end.sum_sent.bytes") as u64 >= 40 << 20);
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");

    let json = ok_run(iperf3, server.addr, "-k 300 -l 64K -R").await;
    // Our server sends at most the 300 blocks; iperf3's receiving client ends the test after
    // 300 reads, which may be fewer bytes.
    assert!(num(&json, "end.sum_sent.bytes") as u64 <= 300 * 65_536);
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");

    let json = ok_run(iperf3, server.addr, "-t 1 -O 1").await;
    assert_eq!(json["start"]["test_start"]["omit"], 1);
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    server.shutdown().await;
}

async fn tcp_socket_options_zero_copy_and_pacing(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    let json = ok_run(iperf3, server.addr, "-t 1 -l 32K -w 1M -C cubic -N -M 1300").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    assert_eq!(json["start"]["test_start"]["blksize"], 32_768);

    // Our server sends with sendfile when the client asks for -Z in reverse.
    let json = ok_run(iperf3, server.addr, "-t 1 -Z -R").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");

    // -b paces our sender in reverse: the client receives about the asked rate, never far more.
    let json = ok_run(iperf3, server.addr, "-t 2 -b 200M -R").await;
    let rate = num(&json, "end.sum_received.bits_per_second");
    assert!(rate > 100e6 && rate < 300e6, "paced reverse rate {rate}");
    server.shutdown().await;
}

async fn many_streams(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    let json = ok_run(iperf3, server.addr, "-t 1 -P 128").await;
    assert_eq!(json["end"]["streams"].as_array().unwrap().len(), 128);
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    server.shutdown().await;
}

async fn udp_every_direction_and_counter_width(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    for args in [
        "-u -b 50M -t 1",
        "-u -b 50M -t 1 -R",
        "-u -b 20M -t 1 --bidir",
        "-u -b 30M -t 1 -P 2 --udp-counters-64bit",
        "-u -b 30M -t 1 -R --udp-counters-64bit -l 1200",
        "-u -b 100M -n 4M",
        "-u -b 20M -t 2 -O 1",
        "-u -b 20M -t 2 -O 1 -R",
    ] {
        let json = ok_run(iperf3, server.addr, args).await;
        assert_udp_consistent(&json["end"]["sum"]);
        // Both ends count the same datagrams (a warm-up must be left out the same way). What
        // the sender wrote after the receiver stopped counting is neither received nor lost:
        // allow 2 % for that.
        let end = &json["end"];
        let (sent, received) = (&end["sum_sent"]["packets"], &end["sum_received"]["packets"]);
        if let (Some(s), Some(r)) = (sent.as_u64(), received.as_u64()) {
            assert!(s.abs_diff(r) <= 2 + s / 50, "{args}: sent {s} vs received {r} datagrams");
        }
        if args.contains("--bidir") {
            assert_udp_consistent(&json["end"]["sum_bidir_reverse"]);
        }
        // The receiving end's packet count never exceeds what the sender sent.
        for s in json["end"]["streams"].as_array().unwrap() {
            let u = &s["udp"];
            assert!(u["packets"].as_u64().unwrap() > 0, "{args}: {u}");
        }
    }
    server.shutdown().await;
}

async fn server_output_and_two_clients_at_once(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    let json = ok_run(iperf3, server.addr, "-t 1 --get-server-output").await;
    let text = json["server_output_text"].as_str().expect("server output");
    assert!(text.contains("wirespeed") && text.contains("receiver"), "{text}");

    // iperf3's own server refuses the second client; ours runs both.
    let (a, b, c) = tokio::join!(
        stock_client(iperf3, server.addr, "-t 2"),
        stock_client(iperf3, server.addr, "-t 2 -R"),
        stock_client(iperf3, server.addr, "-t 2 -u -b 10M"),
    );
    for (ok, json, err) in [a, b, c] {
        assert!(ok && json.get("error").is_none(), "{json} {err}");
    }
    server.shutdown().await;
}

async fn refusals_reach_the_client(iperf3: &'static str) {
    // Not on the allow list: ACCESS_DENIED, not a hang.
    let cfg = ServerConfig { allow: vec!["10.0.0.0/8".parse().unwrap()], ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", cfg).await;
    let (_, json, _) = stock_client(iperf3, server.addr, "-t 1").await;
    assert!(refusal(&json).contains("busy"), "{json}");
    server.shutdown().await;

    // Over the duration limit: SERVER_ERROR with iperf3's "duration too long".
    let cfg = ServerConfig { max_duration: Duration::from_secs(2), ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", cfg).await;
    let (_, json, _) = stock_client(iperf3, server.addr, "-t 5").await;
    assert!(refusal(&json).contains("duration"), "{json}");
    ok_run(iperf3, server.addr, "-t 1").await;
    server.shutdown().await;

    // Unlimited sending past the rate cap.
    let cfg = ServerConfig { max_bitrate_bps: 100_000_000, ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", cfg).await;
    let (_, json, _) = stock_client(iperf3, server.addr, "-t 1").await;
    assert!(refusal(&json).contains("bandwidth") || refusal(&json).contains("rate"), "{json}");
    // Reverse is paced by us to the cap, so it runs.
    let json = ok_run(iperf3, server.addr, "-t 1 -R").await;
    assert!(num(&json, "end.sum_received.bits_per_second") < 150e6);
    server.shutdown().await;

    // More clients than --max-tests: the extra one is denied while the first runs.
    let cfg = ServerConfig { max_tests: 1, ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", cfg).await;
    // The first runs until the second was refused: it holds the only place from the moment
    // it reports an interval.
    let mut first = Command::new(iperf3);
    first.args(["-c", "127.0.0.1", "-p", &server.addr.port().to_string(), "-t", "2"]);
    let mut first = first.arg("--forceflush").stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(first.stdout.take().unwrap()).lines();
    let running = tokio::task::spawn_blocking(move || {
        let seen = lines.by_ref().map_while(Result::ok).any(|l| l.contains(" sec "));
        (seen, lines)
    });
    let (seen, lines) = running.await.unwrap();
    assert!(seen, "the first client reported no interval");
    let (_, json, _) = stock_client(iperf3, server.addr, "-t 1").await;
    assert!(refusal(&json).contains("busy"), "{json}");
    let rest = tokio::task::spawn_blocking(move || lines.map_while(Result::ok).count());
    rest.await.unwrap();
    let status = tokio::task::spawn_blocking(move || first.wait()).await.unwrap().unwrap();
    assert!(status.success(), "the first client failed");
    server.shutdown().await;
}

/// A raw iperf3 client: sends a cookie and reads the PARAM_EXCHANGE byte.
async fn raw_client(addr: SocketAddr) -> (TcpStream, [u8; 37]) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut cookie = [b'a'; 37];
    cookie[..8].copy_from_slice(b"rawtests");
    cookie[36] = 0;
    s.write_all(&cookie).await.unwrap();
    assert_eq!(read_byte(&mut s).await, Some(9), "PARAM_EXCHANGE");
    (s, cookie)
}

async fn read_byte(s: &mut TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    match tokio::time::timeout(Duration::from_secs(15), s.read(&mut b)).await.expect("answer") {
        Ok(1) => Some(b[0]),
        _ => None,
    }
}

/// Reads a SERVER_ERROR answer and returns its iperf3 error number.
async fn read_server_error(s: &mut TcpStream) -> i32 {
    assert_eq!(read_byte(s).await, Some(0xFE), "SERVER_ERROR");
    let mut codes = [0u8; 8];
    s.read_exact(&mut codes).await.unwrap();
    i32::from_be_bytes([codes[0], codes[1], codes[2], codes[3]])
}

fn frame(json: &str) -> Vec<u8> {
    let mut out = (json.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out
}

async fn malformed_control_input_gets_an_error_answer_and_the_server_keeps_serving(
    iperf3: &'static str,
) {
    let server = TestServer::loopback().await;

    // Oversized parameter length: refused before anything is allocated.
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&(1u32 << 20).to_be_bytes()).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 114);

    // Wrong JSON types.
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&frame(r#"{"tcp":"yes","time":1,"parallel":1}"#)).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 114);
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&frame(r#"{"tcp":true,"time":1,"parallel":{"n":1}}"#)).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 114);

    // Not JSON at all, and a JSON array.
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&frame("tcp please")).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 114);
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&frame("[1,2]")).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 114);

    // Truncated frame then close, and a close right after the cookie: dropped quietly.
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&frame(r#"{"tcp":true,"time":1,"parallel":1}"#)[..10]).await.unwrap();
    drop(s);
    let (s, _) = raw_client(server.addr).await;
    drop(s);

    // An unknown state byte while streams are expected.
    let (mut s, _) = raw_client(server.addr).await;
    s.write_all(&frame(r#"{"tcp":true,"time":1,"parallel":1}"#)).await.unwrap();
    assert_eq!(read_byte(&mut s).await, Some(10), "CREATE_STREAMS");
    s.write_all(&[77]).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 110);

    // A results document announcing 4 GiB (a SERVER_ERROR byte read as a length).
    let (mut s, cookie) = raw_client(server.addr).await;
    s.write_all(&frame(r#"{"tcp":true,"time":1,"parallel":1}"#)).await.unwrap();
    assert_eq!(read_byte(&mut s).await, Some(10), "CREATE_STREAMS");
    let mut data = TcpStream::connect(server.addr).await.unwrap();
    data.write_all(&cookie).await.unwrap();
    assert_eq!(read_byte(&mut s).await, Some(1), "TEST_START");
    assert_eq!(read_byte(&mut s).await, Some(2), "TEST_RUNNING");
    data.write_all(&[7u8; 65_536]).await.unwrap();
    s.write_all(&[4]).await.unwrap(); // TEST_END
    assert_eq!(read_byte(&mut s).await, Some(13), "EXCHANGE_RESULTS");
    s.write_all(&[0xFE, 0, 0, 0]).await.unwrap();
    assert_eq!(read_server_error(&mut s).await, 117);

    // A data connection whose cookie names no test becomes a control connection and waits
    // for parameters; a garbage first byte is dropped. Neither disturbs a real client.
    let mut stray = TcpStream::connect(server.addr).await.unwrap();
    stray.write_all(b"\x01\x02garbage").await.unwrap();
    let json = ok_run(iperf3, server.addr, "-t 1").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    let json = ok_run(iperf3, server.addr, "-t 1 -u -b 10M").await;
    assert_udp_consistent(&json["end"]["sum"]);
    server.shutdown().await;
}

/// `-w 8K` used to shrink the server's receive buffer below the window it had advertised: the
/// kernel dropped what it had invited and the stream crawled at 1 Mbit/s through retransmits,
/// where a stock iperf3 server carries the asked 20 Mbit/s (on loopback, far more).
async fn a_small_window_does_not_collapse_the_stream(iperf3: &'static str) {
    let server = TestServer::loopback().await;
    let json = ok_run(iperf3, server.addr, "-t 1 -w 8K -b 20M").await;
    assert_tcp_agrees(&json, "end.sum_sent.bytes", "end.sum_received.bytes");
    let rate = num(&json, "end.sum_received.bits_per_second");
    assert!(rate > 10e6, "20 Mbit/s asked with an 8 KiB window, {rate} bit/s carried");
    server.shutdown().await;
}

wirespeed_testkit::each_iperf3!(
    tcp_upload_reverse_and_bidir,
    tcp_parallel_byte_and_block_counts_and_warm_up,
    tcp_socket_options_zero_copy_and_pacing,
    many_streams,
    udp_every_direction_and_counter_width,
    server_output_and_two_clients_at_once,
    refusals_reach_the_client,
    malformed_control_input_gets_an_error_answer_and_the_server_keeps_serving,
    a_small_window_does_not_collapse_the_stream,
);
