//! wirespeed's own accounting on emulated paths: hosts as network namespaces, a link with a
//! rate, a delay, a loss, duplicates or reordering between them, `wirespeed server` on one
//! and the client on the other, each a real process. Through a 100 Mbit/s rate the bandwidth
//! measures the rate (less the headers, which the test works out rather than takes on trust);
//! through 20 ms each way the round trip's median is 40 ms; a 1 % loss over 100,000 datagrams
//! reads as 1 %; duplicates and reordering show in their own counters; and a DNS run over a
//! lossy link counts exactly the queries and answers the link's filter dropped. Stock iperf3
//! runs beside the TCP case, and what it reports is printed.
//!
//! On this project's machines the kernel has no netem, so delays go through the user-space
//! delay line; the conditions, not the mechanism, are what is checked.

use wirespeed_testkit::skip;

use std::sync::Mutex;

use serde_json::Value;
use wirespeed_model::path::Conditions;
use wirespeed_netlab::kernel::Abilities;
use wirespeed_netlab::Lab;

use hosts::*;

use crate::common::goresponsiveness;
use crate::common::hosts;

/// One test at a time: two fast rate-limited streams at once would share the two cores. (A
/// test that measures several 20 Mbit/s paths at once, each in a lab of its own, keeps well
/// inside them: under a fifth of one core a path, its delay lines, server and client together.)
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn within(measured: f64, expected: f64, share: f64) -> bool {
    (measured / expected - 1.0).abs() <= share
}

#[test]
fn bandwidth_through_a_100_mbit_rate_measures_the_rate_less_the_headers() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let rate = conditions(&[("rate", "100Mbit")]);
    let Some(lab) = lab(rate, Conditions::default()) else { return };
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    // TCP: 1448 bytes of payload in each 1500-byte IP packet (20 IP, 20 TCP and 12 of
    // timestamps), after a second of slow start left out.
    let tcp = wirespeed(&lab, "bandwidth", &["-t", "5", "-O", "1"]);
    let tcp_bps = tcp["summary"]["received_bps"].as_f64().unwrap();
    let tcp_expected = 100e6 * 1448.0 / 1500.0;
    assert!(within(tcp_bps, tcp_expected, 0.02), "TCP: {tcp_bps} against {tcp_expected}");
    // UDP at half again the rate: 1400 bytes in each 1428-byte packet get through.
    let udp = wirespeed(&lab, "bandwidth", &["-u", "-b", "150M", "-l", "1400", "-t", "4"]);
    let udp_bps = udp["summary"]["received_bps"].as_f64().unwrap();
    let udp_expected = 100e6 * 1400.0 / 1428.0;
    assert!(within(udp_bps, udp_expected, 0.02), "UDP: {udp_bps} against {udp_expected}");
    drop(_server);
    // Stock iperf3 through the same link, for the record.
    let stock = stock_iperf3(&lab, &["-t", "5", "-O", "1"]);
    let stock_bps = stock["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0);
    note(format!(
        "100 Mbit/s link: TCP wirespeed {:.2} Mbit/s, iperf3 {:.2}, payload share {:.2}; UDP wirespeed {:.2}, payload share {:.2}",
        tcp_bps / 1e6,
        stock_bps / 1e6,
        tcp_expected / 1e6,
        udp_bps / 1e6,
        udp_expected / 1e6
    ));
    assert!(within(stock_bps, tcp_expected, 0.05), "iperf3 sees the same link: {stock_bps}");
}

#[test]
fn tcp_over_a_long_path_fills_the_rate_both_ways() {
    // 100 Mbit/s with 40 ms round trip wants 500 kB in flight: a receiver whose window is held
    // below that shows here (regression: SO_RCVLOWAT clamped it to 128 KiB, 26 Mbit/s).
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = conditions(&[("rate", "100Mbit"), ("delay", "20ms")]);
    let Some(lab) = lab(path, path) else { return };
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    let expected = 100e6 * 1448.0 / 1500.0;
    let mut figures = Vec::new();
    for reverse in [false, true] {
        let mut args = vec!["-t", "6", "-O", "2"];
        if reverse {
            args.push("-R");
        }
        let report = wirespeed(&lab, "bandwidth", &args);
        let bps = report["summary"]["received_bps"].as_f64().unwrap();
        assert!(
            bps >= 0.9 * expected && bps <= 1.02 * expected,
            "reverse {reverse}: {bps} bit/s against {expected}"
        );
        figures.push(bps);
    }
    drop(_server);
    let stock = stock_iperf3(&lab, &["-t", "6", "-O", "2"]);
    let stock_bps = stock["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0);
    note(format!(
        "100 Mbit/s, 20 ms each way: TCP upload {:.2} Mbit/s, download {:.2}, iperf3 upload {:.2}, payload share {:.2}",
        figures[0] / 1e6,
        figures[1] / 1e6,
        stock_bps / 1e6,
        expected / 1e6
    ));
}

#[test]
fn a_test_whose_buffers_take_seconds_to_drain_ends_with_every_byte() {
    // A 16 MB window at 20 Mbit/s: when the sender stops, its buffer still holds about seven
    // seconds of data, which arrives at the path's rate (regression: both ends gave the streams
    // a fixed five seconds and aborted the test, whichever way it ran).
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = conditions(&[("rate", "20Mbit")]);
    let Some(lab) = lab(path, path) else { return };
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    for reverse in [false, true] {
        let mut args = vec!["-t", "2", "-w", "16M"];
        if reverse {
            args.push("-R");
        }
        let report = wirespeed(&lab, "bandwidth", &args);
        let summary = &report["summary"];
        let sent = summary["sent_bytes"].as_u64().unwrap();
        let received = summary["received_bytes"].as_u64().unwrap();
        assert!(sent > 8_000_000, "reverse {reverse}: only {sent} bytes sent");
        assert_eq!(received, sent, "reverse {reverse}: every byte sent arrives");
        // The sender's rate is what left it, not what it put in its buffer (42 Mbit/s "sent"
        // on this 20 Mbit/s link, before).
        let sent_bps = summary["sent_bps"].as_f64().unwrap();
        assert!(sent_bps <= 20e6, "reverse {reverse}: {sent_bps} bit/s sent through 20 Mbit/s");
        // With a warm-up, the receiver's measured bytes are the sender's: the queued warm-up
        // bytes were counted as measured at the receiver (5.52 MiB received of 4.62 sent).
        args.extend(["-O", "1"]);
        let report = wirespeed(&lab, "bandwidth", &args);
        let summary = &report["summary"];
        let sent = summary["sent_bytes"].as_u64().unwrap();
        let received = summary["received_bytes"].as_u64().unwrap();
        assert_eq!(received, sent, "reverse {reverse} with -O: {summary}");
    }
}

#[test]
fn latency_through_20_ms_each_way_has_a_40_ms_round_trip_over_tcp_and_udp() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let delay = conditions(&[("delay", "20ms")]);
    let Some(lab) = lab(delay, delay) else { return };
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    for udp in [false, true] {
        let mut args = vec!["-t", "2"];
        if udp {
            args.push("-u");
        }
        // The median of three runs' medians. Below 40 ms is impossible (a clock error, as the
        // HTTP latencies of 1 ns were); above, the delay line's own wake-ups add to every packet
        // on a busy 2-core machine (41.39 ms was seen on a fresh CI machine, against 40 ± 1 ms
        // asked then): 5 % is three times that, and still far from what a lost or repeated
        // round trip would add (another 40 ms).
        let mut p50s: Vec<f64> = (0..3)
            .map(|_| {
                let report = wirespeed(&lab, "latency", &args);
                let received = report["summary"]["received"].as_u64().unwrap();
                assert!(received >= 30, "a round trip every 40 ms for 2 s: {received}");
                report["summary"]["rtt"]["p50_ns"].as_f64().unwrap()
            })
            .collect();
        p50s.sort_by(f64::total_cmp);
        let p50 = p50s[1];
        note(format!(
            "20 ms each way, {}: RTT p50 {:.3} ms (runs {:.3?} ms)",
            if udp { "UDP" } else { "TCP" },
            p50 / 1e6,
            p50s.iter().map(|v| v / 1e6).collect::<Vec<_>>()
        ));
        assert!(p50s[0] >= 39.9e6, "udp {udp}: p50 {} ns, below the path's 40 ms", p50s[0]);
        assert!(p50 <= 42e6, "udp {udp}: median p50 {p50} ns, more than 40 ms + 5 %");
    }
    let record = lab.record();
    assert_eq!(
        record[0].carried_by,
        if Abilities::of_this_machine().netem {
            "netem"
        } else {
            "tbf, nftables and the user-space delay line"
        }
    );
}

#[test]
fn a_1_percent_loss_over_100k_datagrams_reads_as_1_percent() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab(conditions(&[("loss", "1%")]), Conditions::default()) else { return };
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    // 64-byte datagrams at 30 Mbit/s: about 58,000 a second for 3 s.
    let report = wirespeed(&lab, "bandwidth", &["-u", "-l", "64", "-b", "30M", "-t", "3"]);
    let s = &report["summary"];
    let sent = s["sent_packets"].as_u64().unwrap();
    let lost = s["lost_packets"].as_u64().unwrap();
    let ratio = s["loss_ratio"].as_f64().unwrap();
    assert!(sent >= 100_000, "{sent} datagrams");
    assert!((ratio - 0.01).abs() <= 0.002, "1% asked, {ratio} reported ({lost} of {sent})");
    // The filter also dropped some of the control connection's packets (TCP sent them again):
    // what it dropped is at least what the test saw lost, and not many more.
    let dropped = lab.record()[0].lost.unwrap();
    assert!(dropped >= lost && dropped <= lost + lost / 20 + 5, "filter {dropped}, test {lost}");
    drop(_server);
    let stock = stock_iperf3(&lab, &["-u", "-l", "64", "-b", "30M", "-t", "3"]);
    let sum = &stock["end"]["sum"];
    note(format!(
        "1% loss: wirespeed {lost} of {sent} ({:.3}%), the filter dropped {dropped}; iperf3 {} of {} ({:.3}%)",
        ratio * 100.0,
        sum["lost_packets"],
        sum["packets"],
        sum["lost_percent"].as_f64().unwrap_or(f64::NAN)
    ));
}

#[test]
fn duplicates_and_reordering_show_in_their_own_counters() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let messy = conditions(&[("delay", "2ms"), ("duplicate", "1%"), ("reorder", "2%")]);
    let Some(lab) = lab(messy, Conditions::default()) else { return };
    let _server = start_server(&lab, BIN, &["server", "-p", "5201"]);
    let report = wirespeed(&lab, "bandwidth", &["-u", "-l", "200", "-b", "20M", "-t", "3"]);
    let s = &report["summary"];
    let sent = s["sent_packets"].as_u64().unwrap() as f64;
    let duplicates = s["duplicate_packets"].as_u64().unwrap() as f64;
    let out_of_order = s["out_of_order_packets"].as_u64().unwrap() as f64;
    assert_eq!(s["lost_packets"].as_u64(), Some(0), "nothing is lost: {s}");
    assert!((duplicates / sent - 0.01).abs() <= 0.003, "{duplicates} duplicates of {sent}");
    assert!(out_of_order / sent >= 0.01, "{out_of_order} out of order of {sent}");
    note(format!(
        "1% duplicated, 2% reordered: wirespeed {duplicates} duplicates, {out_of_order} out of order, {} lost of {sent}",
        s["lost_packets"]
    ));
    drop(_server);
    let stock = stock_iperf3(&lab, &["-u", "-l", "200", "-b", "20M", "-t", "3"]);
    let sum = &stock["end"]["sum"];
    note(format!(
        "  iperf3 on the same link: {} lost, {} out of order of {} (it has no duplicate counter)",
        sum["lost_packets"], stock["end"]["streams"][0]["udp"]["out_of_order"], sum["packets"]
    ));
    let line = lab.record()[0].line;
    if let Some(line) = line {
        // The line also duplicated a few of the control connection's packets.
        assert!(line.duplicated as f64 >= duplicates, "{line:?}");
    }
}

#[test]
fn dns_over_a_lossy_link_counts_exactly_the_queries_the_link_lost() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lossy = conditions(&[("loss", "3%")]);
    let Some(lab) = lab(lossy, lossy) else { return };
    // The hosts' kernels send IPv6 of their own over the link now and then (router
    // solicitations, multicast listener reports), which the loss filter drops like any packet:
    // with IPv6 off, only the test's packets cross.
    for host in ["client", "server"] {
        let off = "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6";
        let out = lab.host(host).unwrap().namespace.command("sh").args(["-c", off]).output();
        assert!(out.unwrap().status.success(), "IPv6 stays on in {host}");
    }
    let _server = start_server(&lab, BIN, &["server", "-p", "5201", "--dns", "53"]);
    let target = lab.host("server").unwrap().address.to_string();
    let drops = |lab: &Lab| lab.record().iter().filter_map(|d| d.lost).sum::<u64>();
    // The readiness probe's TCP connection crossed the link too, and closes across it: a FIN
    // or ACK of its that the filters drop is sent again later. Once neither end has anything
    // left to send on it (TIME_WAIT sends nothing unasked), only what the filters drop from
    // here on is the DNS run's.
    let closing = |host: &str| {
        let mut ss = lab.host(host).unwrap().namespace.command("ss");
        let out = ss.args(["-tanH", "state", "connected", "exclude", "time-wait"]).output();
        !out.unwrap().stdout.is_empty()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while closing("client") || closing("server") {
        assert!(std::time::Instant::now() < deadline, "the probe's connection never closed");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let before = drops(&lab);
    let report = client_json(
        &lab,
        BIN,
        &[
            "dns",
            "-s",
            &target,
            "-p",
            "53",
            "-l",
            "3",
            "-Q",
            "5000",
            "-t",
            "1",
            "-f",
            "json",
            "--no-save",
        ],
    );
    let s = &report["summary"];
    let lost = s["lost"].as_u64().unwrap();
    let sent = s["sent"].as_u64().unwrap();
    assert_eq!(s["interrupted"].as_u64(), Some(0));
    // A query lost on the way there and an answer lost on the way back are each one lost
    // query, and nothing else crossed the link.
    let dropped = drops(&lab) - before;
    assert!(sent > 2_000, "{sent} queries sent");
    assert!(lost > 0);
    assert_eq!(lost, dropped, "the test's lost queries are the link's drops");
    note(format!(
        "3% loss each way, DNS: {lost} of {sent} queries lost, the filters dropped {dropped}"
    ));
}

/// Sets the TCP congestion control of every host of `labs` (Reno fills a queue until it
/// overflows, as the senders that made bufferbloat famous do; CUBIC's HyStart leaves slow start
/// as soon as the delay grows, so a short test fills a deep queue only partly; this machine's
/// default, BBR, keeps it nearly empty). A namespace may only choose among the machine's
/// allowed ones, so `name` is allowed for as long as the returned guard lives, then the list is
/// put back.
fn congestion_control<'a>(
    labs: impl IntoIterator<Item = &'a Lab>,
    name: &str,
) -> AllowedCongestion {
    let key = "net.ipv4.tcp_allowed_congestion_control";
    let read = std::process::Command::new("sysctl").args(["-n", key]).output().unwrap();
    let before = String::from_utf8_lossy(&read.stdout).trim().to_string();
    if !before.split_whitespace().any(|n| n == name) {
        let allowed = format!("{key}={before} {name}");
        let set = std::process::Command::new("sysctl").args(["-w", &allowed]).output().unwrap();
        assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    }
    let guard = AllowedCongestion(before);
    for lab in labs {
        for host in ["client", "server"] {
            let set = format!("net.ipv4.tcp_congestion_control={name}");
            let out = lab
                .host(host)
                .unwrap()
                .namespace
                .command("sysctl")
                .args(["-w", &set])
                .output()
                .unwrap();
            assert!(out.status.success(), "{host}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    guard
}

/// The machine's allowed congestion controls as they were, put back when dropped.
struct AllowedCongestion(String);

impl Drop for AllowedCongestion {
    fn drop(&mut self) {
        let allowed = format!("net.ipv4.tcp_allowed_congestion_control={}", self.0);
        let _ = std::process::Command::new("sysctl").args(["-w", &allowed]).output();
    }
}

/// `wirespeed rpm` from the client host against `wirespeed web` on the server host, with
/// `args`: its JSON report. A run that did not reach working conditions (exit 13) is a
/// report too.
fn rpm(lab: &Lab, url: &str, args: &[&str]) -> Value {
    let mut all = vec!["rpm", url, "-f", "json", "--no-save"];
    all.extend_from_slice(args);
    let out = lab.host("client").unwrap().namespace.command(BIN).args(&all).output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 13)),
        "rpm {all:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The two queues of a 20 Mbit/s router: 2.5 MB (1 s) and 64 KiB (26 ms) before it drops.
const QUEUES: [(&str, &str); 2] = [("deep", "2500KB"), ("shallow", "64KiB")];

/// A routed lab for each of [`QUEUES`], the router's rate limiters 20 Mbit/s both ways.
fn deep_and_shallow() -> Option<Vec<Lab>> {
    QUEUES
        .iter()
        .map(|(_, queue)| {
            let bottleneck = conditions(&[("rate", "20Mbit"), ("queue", queue)]);
            routed_lab(Conditions::default(), bottleneck, bottleneck)
        })
        .collect()
}

/// `measure(lab, name, queue)` on each of [`deep_and_shallow`]'s labs at the same time, its
/// results in [`QUEUES`]' order: the paths are apart, so neither load is in the other's queue.
fn each_at_once<T: Send>(labs: &[Lab], measure: impl Fn(&Lab, &str, &str) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let measure = &measure;
        let each: Vec<_> = labs
            .iter()
            .zip(QUEUES)
            .map(|(lab, (name, queue))| s.spawn(move || measure(lab, name, queue)))
            .collect();
        each.into_iter().map(joined).collect()
    })
}

#[test]
fn rpm_and_bandwidth_latency_tell_a_deep_queue_from_a_shallow_one() {
    // A router with 20 Mbit/s both ways, its rate limiters holding 2.5 MB (1 s) or 64 KiB
    // (26 ms) before they drop: bufferbloat, and a path without it. The two paths are measured
    // at the same time, each in a lab of its own.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(labs) = deep_and_shallow() else { return };
    let _reno = congestion_control(&labs, "reno");
    let measure = |lab: &Lab, name: &str, queue: &str| {
        let addr = lab.host("server").unwrap().address.to_string();
        // `bandwidth --latency` first: the same queue, seen beside a download in one run.
        let server = start_server(lab, BIN, &["server", "-p", "5201"]);
        let bw = wirespeed(lab, "bandwidth", &["-R", "-P", "4", "-t", "5", "-O", "1", "--latency"]);
        drop(server);
        let p50_ms = |l: &Value, at: &str| l[at]["p50_ns"].as_f64().unwrap() / 1e6;
        let (l, u) = (&bw["summary"]["latency"], &bw["summary"]["udp_latency"]);
        let (idle_ms, loaded_ms) = (p50_ms(l, "idle"), p50_ms(l, "loaded"));
        let (udp_idle_ms, udp_loaded_ms) = (p50_ms(u, "idle"), p50_ms(u, "loaded"));
        let probed = bw["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["probe_rtt"]["count"].as_u64() > Some(0));
        assert!(probed.count() >= 4, "every interval carries its probes");
        note(format!("bandwidth --latency -R, {name} queue: idle RTT {idle_ms:.2} ms, loaded {loaded_ms:.1} ms; UDP echo idle {udp_idle_ms:.2} ms, loaded {udp_loaded_ms:.1} ms"));
        let _web = start_server(lab, BIN, &["web", "-B", &addr, "-p", "5201", "--no-save"]);
        // Four connections a direction fill either queue; the draft's sixteen on a 64 KiB
        // drop-tail queue lose enough handshakes (a SYN is sent again after 1 s) that the
        // shallow figure swings threefold from run to run.
        let report = rpm(
            lab,
            &format!("http://{addr}:5201/"),
            &["-i", "0.5", "-t", "6", "--max-connections", "4"],
        );
        let s = &report["summary"];
        let ms = |leg: &Value, key: &str| leg["times"][key].as_f64().unwrap() / 1e6;
        let legs = s["legs"].as_array().unwrap();
        let loaded: Vec<f64> = legs.iter().map(|l| ms(l, "self_ns")).collect();
        let new_connection: Vec<f64> = legs.iter().map(|l| ms(l, "tcp_ns")).collect();
        let (rpm, grade) = (s["rpm"].as_f64().unwrap(), s["grade"].as_str().unwrap().to_string());
        note(format!(
            "rpm, 20 Mbit/s router with a {name} queue ({queue}): {rpm:.0} RPM, grade {grade}, idle {:.2} ms; loaded (self probes) down {:.1} ms / up {:.1} ms; TCP handshakes under load {:.1} / {:.1} ms",
            s["idle"]["p50_ns"].as_f64().unwrap() / 1e6,
            loaded[0],
            loaded[1],
            new_connection[0],
            new_connection[1],
        ));
        ((idle_ms, loaded_ms, udp_loaded_ms), (rpm, grade, loaded, new_connection))
    };
    let (bandwidth_latency, seen): (Vec<_>, Vec<_>) =
        each_at_once(&labs, measure).into_iter().unzip();
    // The download fills the deep queue (up to 1 s) and the shallow one (26 ms at most).
    let (bw_deep, bw_shallow) = (bandwidth_latency[0], bandwidth_latency[1]);
    assert!(
        bw_deep.1 > 5.0 * bw_shallow.1,
        "loaded RTT: deep {bw_deep:?}, shallow {bw_shallow:?} ms"
    );
    assert!(bw_shallow.1 < 40.0, "shallow queue: {bw_shallow:?} ms");
    // The UDP echoes wait in the same queue.
    assert!(bw_deep.2 > 5.0 * bw_shallow.2, "UDP echo: deep {bw_deep:?}, shallow {bw_shallow:?}");
    assert!(bw_shallow.2 < 40.0, "shallow queue: {bw_shallow:?} ms");
    let (deep, shallow) = (&seen[0], &seen[1]);
    assert!(shallow.0 >= 5.0 * deep.0, "RPM: shallow {:.0}, deep {:.0}", shallow.0, deep.0);
    let grades = ["A+", "A", "B", "C", "D", "F"];
    let rank = |g: &str| grades.iter().position(|x| *x == g).unwrap();
    assert!(rank(&deep.1) > rank(&shallow.1), "grades: deep {}, shallow {}", deep.1, shallow.1);
    assert_eq!(deep.1, "F", "1 s of queue");
    for leg in 0..2 {
        // A new connection waits behind the whole queue: up to 1 s against 26 ms at most.
        assert!(
            deep.3[leg] > 5.0 * shallow.3[leg],
            "handshakes: {:?} against {:?}",
            deep.3,
            shallow.3
        );
        assert!(deep.2[leg] > 2.0 * shallow.2[leg], "loaded: {:?} against {:?}", deep.2, shallow.2);
    }
}

/// wirespeed's speed-test page in headless Chromium (tests/browser/speedtest.mjs) from the
/// client host: what the page showed, as JSON.
fn browser_page(lab: &Lab, url: &str, seconds: &str) -> Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "playwright-core is not installed: run scripts/test.sh (npm ci in {})",
        dir.display()
    );
    let shots = tempfile::tempdir().unwrap();
    let out = lab
        .host("client")
        .unwrap()
        .namespace
        .command("node")
        .args(["speedtest.mjs", url, seconds, shots.path().to_str().unwrap(), "page-only"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let page: Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(page["errors"], serde_json::json!([]), "{page}");
    assert_eq!(page["state"], "done", "{page}");
    page
}

#[test]
fn the_browser_test_tells_a_deep_queue_from_a_shallow_one() {
    // The same router as the CLI's check (20 Mbit/s, 2.5 MB or 64 KiB of queue), and the
    // speed-test page in Chromium on the client host: its latency under each load and its
    // grade. The two paths are measured at the same time, each in a lab of its own.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(labs) = deep_and_shallow() else { return };
    let _reno = congestion_control(&labs, "reno");
    let measure = |lab: &Lab, name: &str, queue: &str| {
        let addr = lab.host("server").unwrap().address.to_string();
        let _web = start_server(lab, BIN, &["web", "-B", &addr, "-p", "5201", "--no-save"]);
        let page = browser_page(lab, &format!("http://{addr}:5201/"), "4");
        let figure = |k: &str| page[k].as_f64().unwrap_or_else(|| panic!("{k}: {page}"));
        let (ping, down, up) = (figure("ping"), figure("latDown"), figure("latUp"));
        let grade = page["grade"].as_str().unwrap().to_string();
        note(format!(
            "browser test in Chromium, 20 Mbit/s router with a {name} queue ({queue}): download {:.1} / upload {:.1} Mbit/s, ping {ping:.2} ms, loaded {down:.1} ms down / {up:.1} ms up, grade {grade}",
            figure("dl"),
            figure("ul"),
        ));
        // The page measured the path, not loopback, and no more than the router carries:
        // Reno overflows the deep queue about 2 s in and the connections stall for a
        // retransmission timeout across the upload's 3 s cut; the server's figure counts that
        // stall in (it read 23.5 Mbit/s through this router before it did).
        for k in ["dl", "ul"] {
            assert!(figure(k) > 5.0 && figure(k) < 20.5, "{k}: {page}");
        }
        (down, up, grade)
    };
    let seen = each_at_once(&labs, measure);
    let (deep, shallow) = (&seen[0], &seen[1]);
    assert!(deep.0 > 5.0 * shallow.0, "download: deep {:.1} ms, shallow {:.1}", deep.0, shallow.0);
    assert!(deep.1 > 5.0 * shallow.1, "upload: deep {:.1} ms, shallow {:.1}", deep.1, shallow.1);
    assert_eq!(deep.2, "F", "1 s of queue");
    let grades = ["A+", "A", "B", "C", "D", "F"];
    let rank = |g: &str| grades.iter().position(|x| *x == g).unwrap();
    assert!(rank(&deep.2) > rank(&shallow.2), "grades: deep {}, shallow {}", deep.2, shallow.2);
}

/// A scoped thread's result; its panic fails the test with the thread's own message.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// `program` on PATH.
fn on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(program)).find(|m| m.is_file()))
}

/// Whether `ours` agrees with `theirs`, the medians of runs, when the peer's own runs spread
/// `(max − min) / median` (`spread`): within 10 %, issue 24's target for two clients of one
/// draft, widened by that spread. Two measurements agree no better than one of them agrees
/// with itself: mach's three runs spread 80–92 ms on one CI machine, and a fixed 10 % then
/// failed ours at 0.896 of a figure it could not itself repeat.
fn agrees(ours: f64, theirs: f64, spread: f64) -> bool {
    within(ours, theirs, 0.10 + spread)
}

/// `(max − min) / median` of `values`.
fn spread(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() - 1] - v[0]) / v[v.len() / 2]
}

#[test]
fn rpm_agrees_with_mach_and_goresponsiveness_on_paths_alike() {
    // 20 Mbit/s, 10 ms each way and a short queue, over HTTPS: three clients load and probe
    // `wirespeed web` at the same time, each over a path of its own (four alike).
    let Some(mach) = on_path("mach") else {
        assert!(!skip::required(), "mach is not installed (scripts/test.sh does)");
        return;
    };
    let Some(goresponsiveness) = on_path("goresponsiveness") else {
        assert!(
            !skip::required(),
            "goresponsiveness is not installed (scripts/test.sh builds it: scripts/peers.sh)"
        );
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let delay = conditions(&[("delay", "10ms")]);
    let bottleneck = conditions(&[("rate", "20Mbit"), ("queue", "32KiB")]);
    let mut to_client = bottleneck;
    to_client.delay_ns = delay.delay_ns;
    let Some(paths) =
        (0..4).map(|_| routed_lab(delay, to_client, bottleneck)).collect::<Option<Vec<Lab>>>()
    else {
        return;
    };
    let _reno = congestion_control(&paths, "reno");
    // Every path's hosts have the same addresses (each lab is namespaces of its own).
    let addr = paths[0].host("server").unwrap().address.to_string();
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec![addr.clone()]).unwrap();
    let (cert_pem, key_pem) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_pem, cert.cert.pem()).unwrap();
    std::fs::write(&key_pem, cert.key_pair.serialize_pem()).unwrap();
    let (c, k) = (cert_pem.to_str().unwrap(), key_pem.to_str().unwrap());
    let no_certs = dir.path().join("no-certs");
    std::fs::create_dir(&no_certs).unwrap();
    let web = ["web", "-B", &addr, "-p", "5201", "--no-save", "--tls-cert", c, "--tls-key", k];
    let _web: Vec<Running> = paths.iter().map(|lab| start_server(lab, BIN, &web)).collect();
    let config = format!("https://{addr}:5201/.well-known/nq");
    let preload = draft_sockets_preload(dir.path());
    // mach never reaches Cloudflare here: a local configuration, no score upload. It loads its
    // trust store for every new connection, inside its TLS timing: the system's (~150
    // certificates) costs ~10 ms a probe, which would count as network time; a store of the
    // test's one certificate costs well under a millisecond.
    // mach 0.4.0 judges its responsiveness stable without waiting for goodput to be (its
    // source says so): a leg can end on a value from its ramp, with fewer connections open.
    // The runs with the draft's socket options take `--std 0`, so that nothing is judged
    // stable and mach reports its last interval, at four connections, as the draft has a
    // client report when its time is up: what is compared is the measurement, not that rule.
    let run_mach = |lab: &Lab, draft: bool| {
        let mut command = lab.host("client").unwrap().namespace.command(mach.to_str().unwrap());
        command.env("SSL_CERT_FILE", &cert_pem).env("SSL_CERT_DIR", &no_certs);
        if draft {
            command.env("LD_PRELOAD", &preload).args(["rpm", "--std", "0"]);
        } else {
            command.arg("rpm");
        }
        let out = command
            .args(["-c", &config, "--insecure", "--disable-aim-scores"])
            .args(["--test-duration", "10000", "--max-load", "4"])
            .output()
            .unwrap();
        assert!(out.status.success(), "mach: {}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        ["download", "upload"].map(|leg| {
            (v[leg]["rpm"].as_f64().unwrap(), v[leg]["loaded_latency_ms"].as_f64().unwrap())
        })
    };
    // goresponsiveness, the draft's reference client (Go's HTTP/2, TCP_NODELAY on), at four
    // connections as the others, its legs one after the other (its -rpm.timeout is the whole
    // test's: 20 s, 10 s a leg as ours). Its probes are logged, so that its own measurements
    // can be put through draft-09's formula, which it does not use (see `LoggedLeg`).
    // It names its logs by inserting their kind and time before the first dot of the whole
    // path: each run gets a directory of its own without one (not tempfile's default ".tmp…").
    // A run's leg is None where goresponsiveness printed no finite RPM for it (it once printed
    // NaN for an upload) or logged no probes of it.
    let run_goresponsiveness = |lab: &Lab| -> [Option<(f64, f64, f64)>; 2] {
        let logs = tempfile::Builder::new().prefix("goresponsiveness-").tempdir().unwrap();
        let out = lab
            .host("client")
            .unwrap()
            .namespace
            .command(goresponsiveness.to_str().unwrap())
            .env("SSL_CERT_FILE", &cert_pem)
            .args(["-url", &config, "-rpm.mnp", "4", "-rpm.timeout", "20"])
            .arg("-logger-filename")
            .arg(logs.path().join("log.csv"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "goresponsiveness: {text}");
        let printed = goresponsiveness::legs(&text);
        assert_eq!(printed.len(), 2, "{text}");
        let logged = goresponsiveness::logged_legs(logs.path());
        ["SelfDown", "SelfUp"].map(|direction| {
            let i = usize::from(direction == "SelfUp");
            let leg = logged.iter().find(|l| l.direction == direction)?;
            let (rpm, draft09) = (printed[i].1, leg.draft09_rpm());
            (rpm.is_finite() && draft09.is_finite()).then_some((rpm, draft09, leg.self_ms))
        })
    };
    let run_ours = |lab: &Lab| {
        let report = rpm(lab, &config, &["--cacert", c, "-t", "10", "--max-connections", "4"]);
        let legs = report["summary"]["legs"].as_array().unwrap();
        [0, 1].map(|i| {
            let p50_ms = legs[i]["loaded"]["p50_ns"].as_f64().unwrap() / 1e6;
            (legs[i]["rpm"].as_f64().unwrap(), p50_ms)
        })
    };
    // Three rounds; in each, ours, mach with the draft's socket options and goresponsiveness
    // measure at the same time, each on its own path and on another path each round (so a
    // path's quirks follow no client), and in the middle round mach as it is on the fourth.
    // Side by side, every client meets the machine as it is at that moment, as runs one after
    // the other would not; the paths are apart, so no client's load is in another's queue.
    // Each leg's figure is the median of its runs. Both clients stop at four
    // load-generating connections: mach adds one every second interval where the draft
    // (and wirespeed) add one every interval, and each connection more lengthens the self
    // probes (a probe waits for its own connection's share of the queue). Legs of 10 s: mach
    // has its fourth by 5 s, so both measure their last 4 intervals on four connections.
    let (mut ours, mut mach_as_is, mut mach_draft) = (Vec::new(), Vec::new(), Vec::new());
    let mut reference: Vec<[Option<(f64, f64, f64)>; 2]> = Vec::new();
    for round in 0..3 {
        let on = |client: usize| &paths[(round + client) % 3];
        std::thread::scope(|s| {
            let o = s.spawn(|| run_ours(on(0)));
            let m = s.spawn(|| run_mach(on(1), true));
            let g = s.spawn(|| run_goresponsiveness(on(2)));
            let as_is = (round == 1).then(|| s.spawn(|| run_mach(&paths[3], false)));
            ours.push(joined(o));
            mach_draft.push(joined(m));
            reference.push(joined(g));
            mach_as_is.extend(as_is.map(joined));
        });
    }
    let median = |runs: &[[(f64, f64); 2]], leg: usize| {
        let middle = |pick: fn(&(f64, f64)) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(|r| pick(&r[leg])).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        (middle(|r| r.0), middle(|r| r.1))
    };
    for (leg, name) in ["download", "upload"].iter().enumerate() {
        let (a, la) = median(&ours, leg);
        let (b, lb) = median(&mach_as_is, leg);
        let (d, ld) = median(&mach_draft, leg);
        note(format!(
            "rpm {name}, 20 Mbit/s router, 20 ms RTT, HTTPS: wirespeed {a:.0} RPM (self probes p50 {la:.1} ms); mach as it is {b:.0} RPM ({lb:.1} ms), ratio {:.3}; mach with the draft's socket options {d:.0} RPM ({ld:.1} ms), ratio {:.3}",
            a / b,
            a / d
        ));
        let runs = |r: &[[(f64, f64); 2]]| -> Vec<String> {
            r.iter().map(|x| format!("{:.0} RPM/{:.1} ms", x[leg].0, x[leg].1)).collect()
        };
        note(format!(
            "rpm {name} runs: wirespeed {:?}; mach with the draft's socket options {:?}",
            runs(&ours),
            runs(&mach_draft)
        ));
        // mach as it is turns Nagle's algorithm on, which adds a round trip to each new
        // connection's request, and keeps a socket buffer of its upload ahead of each self
        // probe: both lower its RPM, so the two agree only within a factor of two. With
        // TCP_NODELAY and TCP_NOTSENT_LOWAT (tests/netpath/draft_sockets.c) it comes close to
        // what wirespeed measures.
        assert!(a / b > 0.5 && a / b < 2.0, "{name}: wirespeed {a:.0} RPM, mach {b:.0}");
        // Within 10 %, as issue 24 asks, widened by the peer's own spread (see `agrees`). (Ours
        // once read 12-17 % high on downloads in some runs: it judged responsiveness stable on
        // values from the ramp, before goodput was, and ended the leg with its fourth
        // connection barely open.)
        let mach_spread = spread(&mach_draft.iter().map(|r| r[leg].0).collect::<Vec<_>>());
        assert!(
            agrees(a, d, mach_spread),
            "{name}: wirespeed {a:.0} RPM, mach (draft sockets) {d:.0}, its runs spread {mach_spread:.3}"
        );
        // goresponsiveness (the reference client) measures this path too. It prints 60000 ÷
        // the mean of its foreign and self probe times (the earlier drafts' formula), 1.8x
        // (download) and 2.6x (upload) below ours and mach's: most of that is the formula. Its
        // own logged probes put through draft-09's (as ours and mach's), the median of its
        // runs, must agree with ours on the download within the bound mach is held to, or its
        // own runs' spread where that is wider. A leg it gave no figure for in one run is left
        // out of the median; two of three runs must give one. The upload is printed, not
        // judged: Go's sockets lack TCP_NOTSENT_LOWAT, so its upload's self probes wait behind
        // its own send buffer (as mach's do without the preload), and a Go program takes no
        // LD_PRELOAD.
        let gr: Vec<(f64, f64, f64)> = reference.iter().filter_map(|r| r[leg]).collect();
        let column = |pick: fn(&(f64, f64, f64)) -> f64| -> Vec<f64> {
            let mut v: Vec<f64> = gr.iter().map(pick).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (printed, draft09, self_ms) = (column(|r| r.0), column(|r| r.1), column(|r| r.2));
        note(format!(
            "rpm {name}: goresponsiveness, {} of {} runs with a figure: prints {printed:.0?} RPM; its probes by draft-09 {draft09:.0?} RPM, self probes {self_ms:.1?} ms",
            gr.len(),
            reference.len()
        ));
        if leg == 0 {
            assert!(
                gr.len() >= 2,
                "{name}: goresponsiveness gave a figure in {} of 3 runs",
                gr.len()
            );
            let g = draft09[draft09.len() / 2];
            let bound = spread(&draft09).max(mach_spread);
            note(format!(
                "rpm {name}: ratio to goresponsiveness's median by draft-09 {:.3}, to its printed median {:.3}",
                a / g,
                a / printed[printed.len() / 2]
            ));
            assert!(
                agrees(a, g, bound),
                "{name}: wirespeed {a:.0} RPM, goresponsiveness's probes by draft-09 {g:.0} (median of {draft09:.0?}; bound: the wider of its spread and mach's, {bound:.3})"
            );
        }
        // mach's loaded latency is the median of every self probe of its leg, the ramp's
        // included, where ours is the last window's at working conditions: a looser check of
        // a figure the two define differently. It swung between runs on this path (79 to 177
        // ms in CI runs of one day), so it judges ours only when its own runs agree within
        // the band; otherwise its spread is printed instead.
        let mach_runs: Vec<f64> = mach_draft.iter().map(|r| r[leg].1).collect();
        let steady = mach_runs.iter().all(|&l| within(l, ld, 0.3));
        if steady {
            assert!(within(la, ld, 0.3), "{name}: loaded {la:.1} ms, mach (draft sockets) {ld:.1}");
        } else {
            note(format!(
                "rpm {name}: mach's loaded latency disagreed with itself beyond 30 % ({mach_runs:.1?} ms): not compared"
            ));
        }
    }
}

/// `tests/netpath/draft_sockets.c` built into `dir` as a preload library.
fn draft_sockets_preload(dir: &std::path::Path) -> std::path::PathBuf {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/netpath/draft_sockets.c");
    let library = dir.join("draft_sockets.so");
    let out = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(source)
        .arg("-ldl")
        .output()
        .expect("cc (a C compiler comes with Rust's toolchain)");
    assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
    library
}
