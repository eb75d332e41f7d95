//! `wirespeed trace` along real multi-hop paths: a chain of network namespaces joined by
//! veth links, with forwarding routers in the middle, made and removed by each test. The
//! binary runs inside the first namespace; nothing leaves this machine. Skipped, with the
//! reason printed, where the kernel refuses namespaces.

use wirespeed_testkit::netns;

use netns::Chain;

const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

/// Runs the binary in the chain's first host and returns its exit code and JSON report.
fn trace(chain: &Chain, args: &[&str]) -> (i32, serde_json::Value) {
    let out = chain.hosts[0]
        .command(BIN)
        .arg("trace")
        .args(args)
        .args(["-f", "json", "--no-save"])
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (code, v)
}

/// One unmeasured trace each way, so every link's neighbour cache (ARP, NDP) is filled: a
/// brand-new link drops or delays the first packets queued behind address resolution.
fn warm(chain: &Chain) {
    for far in [chain.far_v4(), chain.far_v6()] {
        let _ = trace(chain, &[&far, "-q", "1", "-W", "2"]);
    }
}

#[test]
fn every_probe_protocol_finds_every_hop_on_both_families() {
    let Some(chain) = Chain::new("tr", 4) else { return };
    warm(&chain);
    for proto in ["icmp", "udp", "tcp"] {
        for v6 in [false, true] {
            let far = if v6 { chain.far_v6() } else { chain.far_v4() };
            let (code, v) = trace(&chain, &[&far, "--proto", proto, "-q", "2", "-W", "2"]);
            let what = format!("{proto} to {far}");
            assert_eq!(code, 0, "{what}: {v}");
            assert_eq!(v["summary"]["reached"], true, "{what}");
            let hops = v["summary"]["hops"].as_array().unwrap();
            assert_eq!(hops.len(), 3, "{what}: {hops:?}");
            for (i, hop) in hops.iter().enumerate() {
                let expected = if v6 { chain.hop_v6(i + 1) } else { chain.hop_v4(i + 1) };
                assert_eq!(hop["ttl"], i + 1);
                assert_eq!(hop["addresses"][0], expected.as_str(), "{what} hop {}", i + 1);
                assert_eq!(
                    (hop["sent"].as_u64(), hop["received"].as_u64()),
                    (Some(2), Some(2)),
                    "{what}"
                );
                assert_eq!(hop["reached"], i == 2, "{what}");
                assert!(hop["rtt"]["min_ns"].as_u64().unwrap() > 0);
            }
        }
    }
}

#[test]
fn mtr_mode_counts_rounds_and_a_short_ttl_limit_is_not_reached() {
    let Some(chain) = Chain::new("mtr", 3) else { return };
    warm(&chain);
    let far = chain.far_v4();
    let (code, v) = trace(&chain, &[&far, "--mtr", "-c", "4", "-i", "0.05"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["summary"]["rounds"], 4);
    for hop in v["summary"]["hops"].as_array().unwrap() {
        assert_eq!((hop["sent"].as_u64(), hop["received"].as_u64()), (Some(4), Some(4)));
        assert_eq!(hop["loss_ratio"], 0.0);
    }
    // Only the first router is within reach: the table shows it, and the exit code is 3.
    let (code, v) = trace(&chain, &[&far, "--max-hops", "1", "-q", "1", "-W", "0.5"]);
    assert_eq!(code, 3);
    assert_eq!(v["summary"]["reached"], false);
    assert_eq!(v["summary"]["hops"][0]["addresses"][0], chain.hop_v4(1).as_str());
}

#[test]
fn a_silent_router_shows_as_loss_not_as_a_failure() {
    let Some(chain) = Chain::new("drop", 4) else { return };
    warm(&chain);
    // The middle router drops the ICMP errors it would send (a common firewall rule).
    chain.hosts[2].run("sysctl -qw net.ipv4.icmp_ratelimit=100000 net.ipv4.icmp_msgs_per_sec=0 net.ipv4.icmp_msgs_burst=0");
    let far = chain.far_v4();
    let (code, v) = trace(&chain, &[&far, "-q", "2", "-W", "0.3"]);
    assert_eq!(code, 0, "{v}");
    let hops = v["summary"]["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 3);
    assert_eq!(hops[1]["received"], 0, "{hops:?}");
    assert_eq!(hops[1]["loss_ratio"], 1.0);
    assert!(hops[1]["addresses"].as_array().unwrap().is_empty());
    assert_eq!(hops[2]["reached"], true);
}

#[test]
fn without_raw_sockets_trace_says_what_it_needs() {
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "trace",
            "127.0.0.1",
            "--no-save",
        ])
        .output()
        .unwrap();
    if out.status.code() == Some(127) || String::from_utf8_lossy(&out.stderr).contains("setpriv:") {
        let why = String::from_utf8_lossy(&out.stderr);
        let what = format!("setpriv cannot drop privileges here: {}", why.trim());
        wirespeed_testkit::skip::missing(&what, "run as root with util-linux's setpriv");
        return;
    }
    assert_eq!(out.status.code(), Some(8), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CAP_NET_RAW"));
}

#[test]
fn an_unreachable_network_gives_exit_3_for_trace_ping_and_cps() {
    // A namespace with only its loopback: nothing beyond it has a route.
    let Some(ns) = netns::Netns::new("nort") else { return };
    let run = |args: &[&str]| ns.command(BIN).args(args).arg("--no-save").output().unwrap();
    let out = run(&["trace", "192.0.2.1", "-q", "1"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach 192.0.2.1"));
    let out = run(&["ping", "192.0.2.1", "-c", "2", "-i", "0.05"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("unreachable"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(&["cps", "-x", "192.0.2.1:80", "-n", "3"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unreachable 3"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
