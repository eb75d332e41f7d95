//! Bad input and hostile or broken peers: each gets a precise error, and the server keeps
//! serving everyone else.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirespeed_engine::server::ServerConfig;
use wirespeed_engine::ClientError;
use wirespeed_model::rules::Protocol;
use wirespeed_proto::codec::{ConnKind, Preamble, MAX_FRAME_LEN};
use wirespeed_proto::control::RefuseCode;

use crate::common::{run, spec, start_test, TestServer};

async fn still_serves(server: &TestServer) {
    let r = run(server.opts(spec(Protocol::Tcp, 0.3))).await.expect("server still serves");
    assert!(r.summary.primary.total.received_bytes > 0);
}

/// Reads until the server closes; returns what it sent. Fails if it never closes.
async fn read_until_closed(mut s: TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), s.read_to_end(&mut out))
        .await
        .expect("server closes")
        .ok();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_oversized_and_silent_control_connections() {
    let config = ServerConfig { idle_timeout: Duration::from_millis(300), ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", config).await;

    // Not our protocol at all (an HTTP request).
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert!(read_until_closed(s).await.is_empty());

    // A length prefix beyond the cap: refused before anything is allocated.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&Preamble::encode(ConnKind::Control)).await.unwrap();
    s.write_all(&(MAX_FRAME_LEN + 1).to_be_bytes()).await.unwrap();
    let answer = String::from_utf8_lossy(&read_until_closed(s).await).into_owned();
    assert!(answer.contains("exceeds"), "got {answer:?}");

    // Valid JSON of the wrong shape.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&Preamble::encode(ConnKind::Control)).await.unwrap();
    let body = br#"{"type":"hello","version":7}"#;
    s.write_all(&(body.len() as u32).to_be_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let answer = String::from_utf8_lossy(&read_until_closed(s).await).into_owned();
    assert!(answer.contains("malformed"), "got {answer:?}");

    // Messages out of order.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&Preamble::encode(ConnKind::Control)).await.unwrap();
    let body = br#"{"type":"stop"}"#;
    s.write_all(&(body.len() as u32).to_be_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let answer = String::from_utf8_lossy(&read_until_closed(s).await).into_owned();
    assert!(answer.contains("unexpected stop"), "got {answer:?}");

    // A truncated frame, then silence: dropped after the idle timeout.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&Preamble::encode(ConnKind::Control)).await.unwrap();
    s.write_all(&[0, 0, 0, 50, b'{']).await.unwrap();
    read_until_closed(s).await;

    // Connects and says nothing at all.
    let s = TcpStream::connect(server.addr).await.unwrap();
    assert!(read_until_closed(s).await.is_empty());

    // A data connection naming a session that does not exist.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&Preamble::encode(ConnKind::Data)).await.unwrap();
    s.write_all(&[0u8; 16]).await.unwrap();
    s.write_all(&[b'U', 0, 1]).await.unwrap();
    assert!(read_until_closed(s).await.is_empty());

    still_serves(&server).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_is_required_checked_and_never_sent() {
    let config = ServerConfig { token: Some("s3cret".into()), ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", config).await;
    let missing = run(server.opts(spec(Protocol::Tcp, 0.3))).await.unwrap_err();
    assert!(matches!(missing, ClientError::TokenRequired), "{missing}");
    let mut wrong = server.opts(spec(Protocol::Tcp, 0.3));
    wrong.endpoint.token = Some("guess".into());
    let err = run(wrong).await.unwrap_err();
    assert!(matches!(err, ClientError::Refused { code: RefuseCode::Auth, .. }), "{err}");
    let mut right = server.opts(spec(Protocol::Tcp, 0.3));
    right.endpoint.token = Some("s3cret".into());
    run(right).await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_list_and_limits_refuse_with_reasons() {
    let config =
        ServerConfig { allow: vec!["192.0.2.0/24".parse().unwrap()], ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", config).await;
    let err = run(server.opts(spec(Protocol::Tcp, 0.3))).await.unwrap_err();
    assert!(matches!(err, ClientError::Refused { code: RefuseCode::NotAllowed, .. }), "{err}");
    server.shutdown().await;

    let config = ServerConfig {
        max_duration: Duration::from_secs(1),
        max_bitrate_bps: 40_000_000,
        ..Default::default()
    };
    let server = TestServer::start("127.0.0.1:0", config).await;
    let err = run(server.opts(spec(Protocol::Tcp, 5.0))).await.unwrap_err();
    assert!(matches!(err, ClientError::Refused { code: RefuseCode::Limit, .. }), "{err}");
    let mut fast = spec(Protocol::Tcp, 0.5);
    fast.parallel = 2;
    let r = run(server.opts(fast)).await.unwrap();
    assert_eq!(r.spec.bitrate_bps, 20_000_000, "each of two streams gets half the cap");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_clients_than_max_tests_are_told_busy() {
    let config = ServerConfig { max_tests: 1, ..Default::default() };
    let server = TestServer::start("127.0.0.1:0", config).await;
    let first = start_test(server.opts(spec(Protocol::Tcp, 1.5))).await;
    let err = run(server.opts(spec(Protocol::Tcp, 0.3))).await.unwrap_err();
    assert!(matches!(err, ClientError::Refused { code: RefuseCode::Busy, .. }), "{err}");
    first.await.unwrap().unwrap();
    still_serves(&server).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_port_and_unresolvable_name() {
    // Bind then drop: nothing listens on this port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = TestServer::loopback().await;
    let mut opts = server.opts(spec(Protocol::Tcp, 0.3));
    opts.endpoint.port = port;
    assert!(matches!(run(opts.clone()).await.unwrap_err(), ClientError::Connect { .. }));
    // A 64-character label is invalid, so the resolver fails without sending any query.
    opts.endpoint.host = format!("{}.invalid", "x".repeat(64));
    assert!(matches!(run(opts).await.unwrap_err(), ClientError::Resolve { .. }));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_shutdown_mid_test_tells_the_client() {
    let server = TestServer::loopback().await;
    let test = start_test(server.opts(spec(Protocol::Tcp, 10.0))).await;
    server.shutdown().await;
    let err = tokio::time::timeout(Duration::from_secs(10), test)
        .await
        .expect("client ends")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err.cause(), ClientError::Aborted(why) if why.contains("shutting down")),
        "{err}"
    );
    // What was measured before the server stopped is kept, marked aborted.
    let ClientError::Partial { report, .. } = err else { panic!("no partial report: {err}") };
    assert!(report.meta.notes.iter().any(|n| n.starts_with("aborted: the server aborted")));
}

/// A bare iperf3 cookie (37 bytes, then silence) used to take a `--max-tests` slot before the
/// token could be checked: two of them locked a client holding the token out of a
/// `--token s3cret --max-tests 2` server until the idle timeout, renewable for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_iperf3_cookies_take_no_test_slot() {
    for token in [Some("s3cret"), None] {
        let config = ServerConfig {
            token: token.map(String::from),
            max_tests: 2,
            idle_timeout: Duration::from_secs(30),
            ..Default::default()
        };
        let server = TestServer::start("127.0.0.1:0", config).await;
        let mut squatters = Vec::new();
        for k in 0..4u8 {
            let mut s = TcpStream::connect(server.addr).await.unwrap();
            let mut cookie = [b'a' + k; 37];
            cookie[36] = 0;
            s.write_all(&cookie).await.unwrap();
            squatters.push(s);
        }
        // Every cookie taken in: a slot, if one were taken, is taken by now.
        wirespeed_testkit::ready::until_read_everything(server.addr.port(), squatters.len()).await;
        let mut opts = server.opts(spec(Protocol::Tcp, 0.3));
        opts.endpoint.token = token.map(String::from);
        let r = run(opts).await;
        assert!(r.is_ok(), "token {token:?}: {:?}", r.err());
        drop(squatters);
        server.shutdown().await;
    }
}

/// 600 connections that never say what they are used to fill the server's 512 handshake
/// places, and every new client was dropped unread ("lost the server mid-test", exit 5).
/// The longest silent are shed instead, so a client that speaks at once is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_lock_clients_out() {
    let server = TestServer::loopback().await;
    let mut idle = Vec::new();
    for _ in 0..600 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // Every one accepted (the server then holds or sheds them), none left in the backlog.
    wirespeed_testkit::ready::until_read_everything(server.addr.port(), 0).await;
    let r = run(server.opts(spec(Protocol::Tcp, 0.3))).await;
    assert!(r.is_ok(), "{:?}", r.err());
    // The shed ones were closed by the server; at most its 512 places are still held.
    let mut closed = 0;
    for s in &mut idle {
        let mut b = [0u8; 1];
        if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_millis(1), s.read(&mut b)).await {
            closed += 1;
        }
    }
    assert!(closed >= 600 - 512, "{closed} of 600 idle connections closed");
    drop(idle);
    server.shutdown().await;
}

/// Reads one control frame from `s`.
async fn read_frame(s: &mut TcpStream) -> wirespeed_proto::control::ServerMessage {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// A control connection of our own that says hello and starts a bandwidth test of `spec`,
/// and the server's answer to the start.
async fn start_raw(
    server: &TestServer,
    spec: wirespeed_model::kinds::bandwidth::BandwidthSpec,
) -> (TcpStream, wirespeed_proto::control::ServerMessage) {
    use wirespeed_proto::codec::encode_frame;
    use wirespeed_proto::control::{ClientMessage, ServerMessage};
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&Preamble::encode(ConnKind::Control)).await.unwrap();
    let mut out = Vec::new();
    encode_frame(&ClientMessage::Hello { version: "test".into() }, &mut out).unwrap();
    s.write_all(&out).await.unwrap();
    assert!(matches!(read_frame(&mut s).await, ServerMessage::Challenge { .. }));
    let start =
        ClientMessage::Start { spec: wirespeed_model::spec::TestSpec::Bandwidth(spec), auth: None };
    out.clear();
    encode_frame(&start, &mut out).unwrap();
    s.write_all(&out).await.unwrap();
    let accepted = read_frame(&mut s).await;
    (s, accepted)
}

/// Sends `echo` from `from` to the server's UDP port; the answer, if one came back.
async fn echoed(
    server: &TestServer,
    from: &str,
    echo: wirespeed_proto::datagram::UdpEcho,
) -> Option<wirespeed_proto::datagram::UdpEcho> {
    use wirespeed_proto::datagram::UdpEcho;
    let socket = tokio::net::UdpSocket::bind(from).await.unwrap();
    socket.send_to(&echo.encode(), server.addr).await.unwrap();
    let mut buf = [0u8; 64];
    let got = tokio::time::timeout(Duration::from_secs(2), socket.recv(&mut buf)).await;
    got.ok().map(|n| UdpEcho::decode(&buf[..n.unwrap()]).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_echoes_are_answered_only_for_a_session_from_its_own_client() {
    use wirespeed_proto::codec::{from_hex, SESSION_ID_LEN};
    use wirespeed_proto::control::ServerMessage;
    use wirespeed_proto::datagram::UdpEcho;
    let server = TestServer::start("127.0.0.1:0", ServerConfig::default()).await;
    // A control connection that starts a test and leaves it waiting for its streams: a
    // session in progress.
    let (s, accepted) = start_raw(&server, spec(Protocol::Tcp, 1.0)).await;
    let ServerMessage::Accepted { session, .. } = accepted else { panic!("not accepted") };
    let session = from_hex::<SESSION_ID_LEN>(&session).unwrap();
    let probe = UdpEcho { ack: false, session, seq: 7 };

    // Its client gets its probe back, the same size; anyone else gets nothing.
    assert_eq!(echoed(&server, "127.0.0.1:0", probe).await, Some(UdpEcho { ack: true, ..probe }));
    assert_eq!(echoed(&server, "127.0.0.2:0", probe).await, None, "another address");
    let unknown = UdpEcho { session: [9; SESSION_ID_LEN], ..probe };
    assert_eq!(echoed(&server, "127.0.0.1:0", unknown).await, None, "no such session");
    let answer = UdpEcho { ack: true, ..probe };
    assert_eq!(echoed(&server, "127.0.0.1:0", answer).await, None, "an answer is not echoed");

    // Once the session is over, its probes go unanswered too.
    drop(s);
    let t0 = std::time::Instant::now();
    while echoed(&server, "127.0.0.1:0", probe).await.is_some() {
        assert!(t0.elapsed() < Duration::from_secs(10), "the session outlived its client");
    }
    still_serves(&server).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quic_stream_that_sends_garbage_instead_of_quic_is_aborted_with_the_reason() {
    use wirespeed_model::kinds::bandwidth::Flow;
    use wirespeed_proto::codec::{from_hex, SESSION_ID_LEN};
    use wirespeed_proto::control::ServerMessage;
    use wirespeed_proto::datagram::UdpHello;
    let server = TestServer::start("127.0.0.1:0", ServerConfig::default()).await;
    let (mut s, accepted) = start_raw(&server, spec(Protocol::Quic, 2.0)).await;
    let ServerMessage::Accepted { session, quic_pin, .. } = accepted else {
        panic!("not accepted")
    };
    // The certificate the client is to trust, by its SHA-256.
    assert!(quic_pin.is_some_and(|p| from_hex::<32>(&p).is_some()), "no QUIC certificate pin");
    let session = from_hex::<SESSION_ID_LEN>(&session).unwrap();

    // The stream's hello is answered as any UDP stream's; then the socket speaks no QUIC.
    let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    udp.connect(server.addr).await.unwrap();
    let hello = UdpHello { ack: false, session, flow: Flow::Upload, stream: 1 };
    udp.send(&hello.encode()).await.unwrap();
    let mut buf = [0u8; 128];
    let n =
        tokio::time::timeout(Duration::from_secs(5), udp.recv(&mut buf)).await.unwrap().unwrap();
    assert!(UdpHello::decode(&buf[..n]).unwrap().ack);
    assert!(matches!(read_frame(&mut s).await, ServerMessage::Begin));
    for i in 0..50u8 {
        let _ = udp.send(&[i; 1200]).await;
        let _ = udp.send(&[0xc0 | (i & 0x3f); 1200]).await;
    }
    let reason = loop {
        match tokio::time::timeout(Duration::from_secs(20), read_frame(&mut s)).await {
            Ok(ServerMessage::Tick { .. }) => continue,
            Ok(ServerMessage::Abort { reason }) => break reason,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => panic!("the server neither aborted nor ran the test"),
        }
    };
    assert!(reason.contains("QUIC connection did not arrive"), "{reason}");
    still_serves(&server).await;
    let r = run(server.opts(spec(Protocol::Quic, 0.3))).await.expect("a real QUIC test still runs");
    assert!(r.summary.primary.total.received_bytes > 0);
    server.shutdown().await;
}
