//! wirespeed's wire formats, sans I/O: no sockets, no clocks, no async. Callers feed bytes in
//! and get messages (or a precise error) out, so every decoder can be unit-tested and fuzzed.
//!
//! - [`codec`]: the connection preamble and length-prefixed JSON frames.
//! - [`control`]: control messages and the order they may come in.
//! - [`auth`]: the token challenge/response.
//! - [`datagram`]: the UDP data header, the UDP stream hello, and receiver-side loss/jitter accounting.
//! - [`iperf3`]: iperf3's control protocol, for interoperating with stock iperf3.
//! - [`icmp`]: ICMP/ICMPv6 echo and the errors that quote a probe, for `ping` and `trace`.
//! - [`http_targets`]: vegeta's targets files (http and json formats), for HTTP load tests.
//! - [`vegeta`]: vegeta's result lines, written by `http --format vegeta` and read back.
//! - [`http1`]: HTTP/1.1 response heads and chunked bodies, read without copying.
//! - [`http_url`]: http:// and https:// URLs, and redirects resolved against them.
//! - [`alt_svc`]: the Alt-Svc header, where a server names its HTTP/3.
//! - [`dns`]: DNS queries and answers, dnsperf's datafile, a zone file subset and the
//!   fixture's responder.
//!
//! The protocol itself is described in `docs/protocol.md`.

pub mod alt_svc;
pub mod auth;
pub mod codec;
pub mod control;
pub mod datagram;
pub mod dns;
pub mod http1;
pub mod http_targets;
pub mod http_url;
pub mod icmp;
pub mod iperf3;
pub mod vegeta;

/// Version of the control protocol; a server refuses a client whose major version differs.
pub const PROTOCOL_VERSION: u8 = 2;

/// Feeds `data` to every decoder a peer's bytes can reach (preamble, data hello, UDP hello and echo,
/// control frames both ways with the order check, UDP receiver accounting, ICMP messages). For the fuzz
/// target and the seeded test that runs its inputs in CI; none of it may panic.
#[doc(hidden)]
pub fn exercise_decoders(data: &[u8]) {
    use control::{ClientMessage, ServerMessage, ServerState};
    let _ = codec::Preamble::decode(data);
    let _ = codec::DataHello::decode(data);
    let _ = datagram::UdpHello::decode(data);
    let _ = datagram::UdpEcho::decode(data);
    let _ = codec::decode_frame::<ServerMessage>(data);
    let mut state = ServerState::default();
    let mut rest = data;
    while let Ok((msg, used)) = codec::decode_frame::<ClientMessage>(rest) {
        let _ = state.on_client(&msg);
        rest = &rest[used..];
    }
    exercise_iperf3_decoders(data);
    exercise_icmp_decoders(data);
    exercise_http_decoders(data);
    exercise_dns_decoders(data);
    let mut stats = datagram::ReceiverStats::default();
    for chunk in data.chunks(16) {
        if let Some((seq, sent)) = datagram::read_header(chunk) {
            stats.record(seq, chunk.len(), sent, sent.wrapping_add(seq as i64));
        }
    }
}

/// Feeds `data` to every iperf3 decoder (cookie, state byte, JSON frame, parameter and results
/// documents, UDP header). For the `iperf3` fuzz target and [`exercise_decoders`].
#[doc(hidden)]
pub fn exercise_iperf3_decoders(data: &[u8]) {
    let _ = iperf3::Cookie::decode(data);
    if let Some(&b) = data.first() {
        let _ = iperf3::State::from_byte(b);
    }
    if let Ok((map, _)) = iperf3::wire::decode_json(data, iperf3::wire::MAX_RESULTS_LEN) {
        if let Ok(p) = iperf3::Params::from_json(&map) {
            let _ = p.to_spec("fuzz");
        }
        let _ = iperf3::Results::from_json(&map);
    }
    for wide in [false, true] {
        let _ = iperf3::wire::read_udp_header(data, wide);
    }
}

/// Feeds `data` to the ICMP decoders `ping` and `trace` run on whatever arrives on an ICMP
/// socket (any host, or a router on the way, can send it). For the `icmp` fuzz target and
/// [`exercise_decoders`].
#[doc(hidden)]
pub fn exercise_icmp_decoders(data: &[u8]) {
    for v6 in [false, true] {
        let _ = icmp::parse_message(v6, data);
    }
    let _ = icmp::parse_ipv4_packet(data);
}

/// Feeds `data` to the HTTP decoders: a response head, a chunked body (in pieces, as it
/// arrives from a socket), both targets-file formats, URLs, an Alt-Svc header and vegeta's
/// result lines. For the `http` fuzz target and [`exercise_decoders`].
#[doc(hidden)]
pub fn exercise_http_decoders(data: &[u8]) {
    for head_request in [false, true] {
        let _ = http1::parse_head(data, head_request);
    }
    let _ = http1::header(data, "location");
    let mut chunked = http1::ChunkedScanner::default();
    for part in data.chunks(7) {
        if chunked.feed(part).is_err() {
            break;
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = http_targets::parse_http(text);
        let _ = http_targets::parse_json(text);
        if let Ok(url) = http_url::HttpUrl::parse("http://h/a/b") {
            let _ = url.join(text);
        }
        let _ = http_url::HttpUrl::parse(text);
        let _ = alt_svc::parse(text);
        for (i, line) in text.lines().enumerate() {
            let _ = http_url::HttpUrl::parse(line);
            let _ = http_url::HttpUrl::redacted(line);
            let _ = vegeta::ResultLine::parse(line, i + 1);
        }
    }
}

/// Feeds `data` to the DNS decoders: an answer as the load generator reads it (header,
/// question check, OPT and extended RCODE), the fixture's responder (over UDP and TCP), and
/// the datafile and zone-file parsers. For the `dns` fuzz target and [`exercise_decoders`].
#[doc(hidden)]
pub fn exercise_dns_decoders(data: &[u8]) {
    use dns::wire;
    if let Ok(h) = wire::Header::read(data) {
        let _ = wire::full_rcode(data, &h);
        let _ = wire::question_matches(data, &h, b"\x03www\x07example\x04test\x00\x00\x01\x00\x01");
    }
    static ZONE: std::sync::OnceLock<dns::zone::Zone> = std::sync::OnceLock::new();
    let zone = ZONE.get_or_init(|| dns::zone::Zone::generated(3));
    let mut out = Vec::new();
    for udp in [true, false] {
        if dns::responder::respond(data, zone, udp, &mut out) {
            // What the fixture sends must itself read as an answer.
            let h = wire::Header::read_answer(&out).expect("the fixture's answer has a header");
            let _ = wire::full_rcode(&out, &h).expect("the fixture's answer parses");
        }
    }
    if let Some(msg) = dns::encrypted::doq_message(data) {
        let _ = dns::responder::respond(msg, zone, false, &mut out);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(msg) = dns::encrypted::doh_get_message(text) {
            let _ = dns::responder::respond(&msg, zone, false, &mut out);
        }
        let _ = dns::datafile::parse(text);
        let _ = dns::zone::Zone::parse(text, Some("fuzz.test"));
        // Every $INCLUDE reads the same small file, so includes and their origins are reached.
        let _ = dns::zone::Zone::parse_with_includes(text, Some("fuzz.test"), &mut |_, _| {
            Ok(("included".into(), "a 60 A 192.0.2.1\n$ORIGIN sub.fuzz.test.\nb TXT x\n".into()))
        });
    }
}
