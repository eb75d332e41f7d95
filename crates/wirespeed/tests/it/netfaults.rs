//! Faults on an emulated path, each kind's accounting checked against what the path did: a
//! link whose bits flip (the user-space delay line corrupts 1 % of packets), and a link that
//! goes down for two seconds mid-test (nftables in both hosts drops every packet arriving,
//! counting the UDP ones). The checksums turn a corrupt datagram into a lost one and TCP sends
//! it again; datagrams lost while the link is down are exactly the ones counted lost, and the
//! connections and requests it swallowed time out, each counted once; every run ends by its
//! time limit with exit 0, and the server is left with no test open.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use wirespeed_model::path::Conditions;
use wirespeed_netlab::Lab;

use hosts::*;

use crate::common::hosts;

/// The server's metrics address, inside the server host.
const METRICS: &str = "127.0.0.1:9100";

/// The server's HTTP fixture.
const HTTP_PORT: u16 = 8080;

/// The nftables table that takes the link down in a host.
const DOWN: &str = "ws_link_down";

/// Turns IPv6 off in both hosts: their kernels' own IPv6 chatter (router solicitations,
/// listener reports) would cross the link beside the test's packets.
fn ipv4_only(lab: &Lab) {
    for host in ["client", "server"] {
        let off = "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6";
        let out = lab.host(host).unwrap().namespace.command("sh").args(["-c", off]).output();
        assert!(out.unwrap().status.success(), "IPv6 stays on in {host}");
    }
}

/// Runs `nft` with `script` on its standard input inside `host`.
fn nft(lab: &Lab, host: &str, args: &[&str], script: &str) -> String {
    let mut child = lab
        .host(host)
        .unwrap()
        .namespace
        .command("nft")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "nft {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Takes the link down: from now on both hosts drop every packet that arrives over it (the
/// senders see nothing wrong, as on a cut cable), counting the UDP datagrams apart.
fn link_down(lab: &Lab) {
    let table = format!(
        "table inet {DOWN} {{\n counter udp_dropped {{ }}\n chain input {{\n \
         type filter hook input priority -300;\n iifname \"lo\" accept\n \
         meta l4proto udp counter name \"udp_dropped\" drop\n drop\n }}\n}}\n"
    );
    for host in ["client", "server"] {
        nft(lab, host, &["-f", "-"], &table);
    }
}

/// Brings the link back up; the UDP datagrams each host dropped while it was down (client,
/// server). The drops stop before the count is read: the counter outlives its rule.
fn link_up(lab: &Lab) -> (u64, u64) {
    let mut dropped = [0; 2];
    for (i, host) in ["client", "server"].into_iter().enumerate() {
        nft(lab, host, &["flush", "chain", "inet", DOWN, "input"], "");
        let listed: Value = serde_json::from_str(&nft(
            lab,
            host,
            &["-j", "list", "counter", "inet", DOWN, "udp_dropped"],
            "",
        ))
        .unwrap();
        dropped[i] = listed["nftables"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|item| item["counter"]["packets"].as_u64())
            .expect("the UDP counter");
        nft(lab, host, &["delete", "table", "inet", DOWN], "");
    }
    (dropped[0], dropped[1])
}

/// Runs `wirespeed KIND SERVER ARGS` from the client host while the link goes down for two
/// seconds, from the test's first measured interval on; its report, and the UDP datagrams
/// dropped meanwhile (client, server).
fn through_an_outage(lab: &Lab, kind: &str, args: &[&str]) -> (Value, (u64, u64)) {
    let server = lab.host("server").unwrap().address.to_string();
    let target = match kind {
        "http" => format!("http://{server}:{HTTP_PORT}/"),
        _ => server,
    };
    let mut child = lab
        .host("client")
        .unwrap()
        .namespace
        .command("timeout")
        .args(["-s", "KILL", "60", BIN, kind, &target])
        .args(args)
        .args(["-f", "json-stream", "--no-save"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut events = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).expect("a JSON event per line"));
    // Each kind names its interval event (`interval`, `latency_interval`, `http_interval`, …).
    let measured = |e: &Value| {
        e["event"].as_str().is_some_and(|name| name.ends_with("interval"))
            && e["data"]["omitted"] != true
    };
    let measuring = events.by_ref().any(|e| measured(&e));
    link_down(lab);
    std::thread::sleep(Duration::from_secs(2)); // the outage itself
    let dropped = link_up(lab);
    let end = events.last();
    let out = child.wait_with_output().unwrap();
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(measuring, "{kind} {args:?} ended before its first measured interval: {why}");
    assert_eq!(out.status.code(), Some(0), "{kind} {args:?} outlives the outage: {why}");
    let end = end.expect("an end event");
    assert_eq!(end["event"], "end", "the last event is the report");
    (end["data"].clone(), dropped)
}

/// The value of the metric `name` (summed over its labels) the server serves.
fn server_metric(lab: &Lab, name: &str) -> f64 {
    let text = lab
        .host("server")
        .unwrap()
        .namespace
        .within(|| {
            let mut s = TcpStream::connect(METRICS).unwrap();
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: m\r\n\r\n").unwrap();
            let mut text = String::new();
            s.read_to_string(&mut text).unwrap();
            text
        })
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Waits (at most ten seconds) for the server to close every test; false if it did not.
fn server_idle(lab: &Lab) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if server_metric(lab, "wirespeed_tests_active") == 0.0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn a_corrupting_link_loses_udp_datagrams_and_tcp_sends_them_again() {
    let corrupt = conditions(&[("corrupt", "1%")]);
    let Some(lab) = lab(corrupt, Conditions::default()) else { return };
    ipv4_only(&lab);
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    let corrupted = |lab: &Lab| lab.record()[0].line.expect("the delay line corrupts").corrupted;

    let before = corrupted(&lab);
    let udp = wirespeed(&lab, "bandwidth", &["-u", "-l", "200", "-b", "20M", "-t", "3"]);
    let s = &udp["summary"];
    let (sent, received, lost) =
        (count(&s["sent_packets"]), count(&s["received_packets"]), count(&s["lost_packets"]));
    let flipped = corrupted(&lab) - before;
    assert_eq!(sent, received + lost, "{s}");
    // A flipped bit fails the IP or UDP checksum, and the kernel drops the datagram: each lost
    // datagram is a corrupt one. The line also corrupted a few control packets (TCP sent them
    // again).
    assert!(
        lost > 0 && lost <= flipped && flipped <= lost + lost / 20 + 5,
        "{lost} lost, {flipped} corrupted"
    );
    assert_eq!(count(&s["duplicate_packets"]), 0, "nothing corrupt counts as received twice");
    note(format!("1% corrupted, UDP: {lost} of {sent} lost, the line corrupted {flipped}"));

    let before = corrupted(&lab);
    let tcp = wirespeed(&lab, "bandwidth", &["-b", "50M", "-t", "3"]);
    let s = &tcp["summary"];
    let flipped = corrupted(&lab) - before;
    assert_eq!(count(&s["sent_bytes"]), count(&s["received_bytes"]), "TCP repairs: {s}");
    assert!(count(&s["retransmits"]) > 0 && flipped > 0, "{s}");
    note(format!(
        "1% corrupted, TCP: {} retransmits, the line corrupted {flipped}",
        s["retransmits"]
    ));
}

#[test]
fn a_link_down_for_two_seconds_loses_exactly_what_it_dropped_and_every_test_ends() {
    let Some(lab) = lab(Conditions::default(), Conditions::default()) else { return };
    ipv4_only(&lab);
    let http = HTTP_PORT.to_string();
    let _server =
        start_server(&lab, BIN, &["server", "-p", "5201", "--metrics", METRICS, "--http", &http]);
    let timed = ["-t", "6", "-i", "0.5"];

    // UDP upload: every datagram the server's host dropped is one the test counts lost.
    let (report, (_, at_server)) = through_an_outage(
        &lab,
        "bandwidth",
        &[&["-u", "-b", "20M", "-l", "500"][..], &timed].concat(),
    );
    let s = &report["summary"];
    let (sent, received, lost) =
        (count(&s["sent_packets"]), count(&s["received_packets"]), count(&s["lost_packets"]));
    assert_eq!(sent, received + lost, "{s}");
    assert!(at_server > 0, "the outage dropped datagrams");
    assert_eq!(lost, at_server, "lost datagrams are the ones the link dropped");
    let gaps: u64 = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| count(&iv["flows"][0]["lost_packets"]))
        .sum();
    assert_eq!(gaps, lost, "the intervals' losses add up to the summary's");
    assert!(server_idle(&lab), "the server closed the test");
    note(format!("2 s outage, UDP upload: {lost} of {sent} lost, the link dropped {at_server}"));

    // UDP latency: a message dropped either way is one lost message.
    let (report, (at_client, at_server)) =
        through_an_outage(&lab, "latency", &[&["-u", "--timeout", "0.5"][..], &timed].concat());
    let s = &report["summary"];
    let (sent, received, lost) = (count(&s["sent"]), count(&s["received"]), count(&s["lost"]));
    assert!(lost > 0, "{s}");
    assert_eq!(lost, at_client + at_server, "lost messages are the link's drops both ways");
    // The one message in flight when the test stopped is neither.
    assert!(received + lost <= sent && sent <= received + lost + 1, "{s}");
    assert!(server_idle(&lab), "the server closed the test");
    note(format!("2 s outage, UDP latency: {lost} of {sent} lost"));

    // TCP both ways: the connections survive, every byte sent arrives.
    let (report, _) =
        through_an_outage(&lab, "bandwidth", &[&["-b", "50M", "--bidir"][..], &timed].concat());
    for s in [&report["summary"], &report["summary"]["reverse"]] {
        assert_eq!(count(&s["sent_bytes"]), count(&s["received_bytes"]), "{s}");
    }
    assert!(server_idle(&lab), "the server closed the test");

    let (report, _) = through_an_outage(&lab, "latency", &timed);
    let s = &report["summary"];
    let (sent, received) = (count(&s["sent"]), count(&s["received"]));
    assert!(received > 0 && received <= sent && sent <= received + 1, "{s}");
    // The message that waited out the outage shows in the tail.
    assert!(count(&s["rtt"]["max_ns"]) >= 1_000_000_000, "{s}");
    assert!(server_idle(&lab), "the server closed the test");

    // cps: the attempts the outage swallowed time out (1 s each); every attempt is counted
    // once, connected or failed, in the intervals as in the summary.
    let (report, _) = through_an_outage(&lab, "cps", &timed);
    let s = &report["summary"];
    // Counts by cause, added up.
    let all = |by_cause: &Value| -> u64 { by_cause.as_object().unwrap().values().map(count).sum() };
    assert!(count(&s["failures"]["timeout"]) > 0, "{s}");
    assert_eq!(count(&s["attempts"]), count(&s["connected"]) + all(&s["failures"]), "{s}");
    let intervals = report["intervals"].as_array().unwrap();
    let measured = intervals.iter().filter(|iv| iv["omitted"] != true);
    let summed: u64 = measured.map(|iv| count(&iv["attempts"])).sum();
    assert_eq!(summed, count(&s["attempts"]), "the intervals add up to the summary");
    assert!(server_idle(&lab), "the server closed the test");
    note(format!(
        "2 s outage, cps: {} of {} attempts timed out",
        count(&s["failures"]["timeout"]),
        count(&s["attempts"])
    ));

    // HTTP at 100 requests/s, 0.5 s allowed each: the requests that fell due in the outage
    // time out (most while connecting: the connection each was sent on is stuck, so it opens
    // another), and every request that fell due is counted once.
    let (report, _) =
        through_an_outage(&lab, "http", &["-r", "100", "-d", "6", "-i", "0.5", "--timeout", "0.5"]);
    let s = &report["summary"];
    let errors = all(&s["errors"]);
    let timed_out = ["timeout", "connect timeout"]
        .iter()
        .map(|c| s["errors"][c].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(timed_out > 0 && count(&s["succeeded"]) > 0, "{s}");
    assert_eq!(count(&s["responses"]) + errors, 600, "{s}");
    note(format!("2 s outage, HTTP at 100/s: {timed_out} of 600 timed out"));
}

#[test]
fn duplicated_and_reordered_packets_are_each_counted_once() {
    let messy = conditions(&[("delay", "1ms"), ("duplicate", "5%"), ("reorder", "5%")]);
    let Some(lab) = lab(messy, messy) else { return };
    ipv4_only(&lab);
    let _server = start_server(&lab, BIN, &["server", "-p", "5201", "--dns", "53"]);
    let duplicated = |lab: &Lab| -> u64 {
        lab.record().iter().map(|r| r.line.expect("the delay line duplicates").duplicated).sum()
    };

    // DNS over UDP: every query ends once (answered, lost or cut off at the end); a second
    // copy of a query or of an answer is a duplicate answer, and nothing else crosses.
    let target = lab.host("server").unwrap().address.to_string();
    let before = duplicated(&lab);
    let dns = client_json(
        &lab,
        BIN,
        &["dns", "-s", &target, "-p", "53", "-Q", "3000", "-l", "2", "-f", "json", "--no-save"],
    );
    let copies = duplicated(&lab) - before;
    let s = &dns["summary"];
    let (sent, completed, lost, cut) =
        (count(&s["sent"]), count(&s["completed"]), count(&s["lost"]), count(&s["interrupted"]));
    assert_eq!(sent, completed + lost + cut, "{s}");
    assert_eq!(lost, 0, "nothing was lost: {s}");
    // Each copy is one duplicate answer, but for a copy still on its way when the run ended
    // (of one of the last queries or answers).
    let duplicates = count(&s["stray"]["duplicate"]);
    assert!(duplicates <= copies && copies - duplicates <= 3, "{copies} copies: {s}");
    note(format!(
        "5% duplicated each way, DNS: {copies} copies, {} duplicate answers",
        s["stray"]["duplicate"]
    ));

    // UDP round trips: a copy of a message or its echo is not a second round trip.
    let lat = wirespeed(&lab, "latency", &["-u", "-t", "2"]);
    let s = &lat["summary"];
    let (sent, received, lost) = (count(&s["sent"]), count(&s["received"]), count(&s["lost"]));
    assert_eq!(lost, 0, "{s}");
    assert!(received <= sent && sent <= received + 1, "{s}");
}
