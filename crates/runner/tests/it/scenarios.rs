//! Scenario files: every valid fixture parses and expands into runs; every invalid one is
//! refused with the message its first line names (`# error: …`) and, where the problem has one,
//! the line it is on. Plus the expansions and orders, counted exactly.

use std::path::Path;

use wirespeed_runner::scenario::Order;
use wirespeed_runner::{load, parse};

/// The test subcommands a workload may name, as the binary passes them.
const WORKLOAD_KINDS: &[&str] = &["bandwidth", "latency", "cps", "pps", "ping", "http", "dns"];

fn files(dir: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios").join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn valid_scenarios_parse_and_expand() {
    let valid = files("valid");
    assert!(!valid.is_empty());
    for (name, text) in valid {
        let loaded = parse(&name, &text, WORKLOAD_KINDS).unwrap_or_else(|e| panic!("{e}"));
        assert!(!loaded.plan.runs.is_empty(), "{name}: no runs");
        assert!(load::describe(&loaded).contains("run      "), "{name}");
    }
}

#[test]
fn invalid_scenarios_are_refused_saying_why() {
    let invalid = files("invalid");
    assert!(!invalid.is_empty());
    for (name, text) in invalid {
        let want =
            text.lines().next().and_then(|l| l.strip_prefix("# error: ")).unwrap_or_else(|| {
                panic!("{name}: the first line must be `# error: <expected message>`")
            });
        let err = parse(&name, &text, WORKLOAD_KINDS).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(&name), "{name}: {shown}");
        assert!(shown.contains(want), "{name}: {shown:?} does not say {want:?}");
    }
}

#[test]
fn errors_name_their_line() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/invalid/unknown_key.toml"),
    )
    .unwrap();
    assert_eq!(parse("f.toml", &text, WORKLOAD_KINDS).unwrap_err().line, Some(5));
    let text = "[scenario]\nname = \"x\"\n[[system]]\nname = \"s\"\nentry = \"{nope}\"\n";
    let err = parse("f.toml", text, WORKLOAD_KINDS).unwrap_err();
    assert_eq!(err.line, Some(4), "{err}");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/invalid/missing_axis.toml"),
    )
    .unwrap();
    assert_eq!(parse("f.toml", &text, WORKLOAD_KINDS).unwrap_err().line, Some(5));
}

#[test]
fn axes_and_sweeps_expand_in_interleaved_order() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/valid/transports.toml"),
    )
    .unwrap();
    let loaded = parse("t.toml", &text, WORKLOAD_KINDS).unwrap();
    let plan = &loaded.plan;
    // direct + 3 transports × 2 modes; tcp-bw over parallel 1 and 4, and rtt.
    let systems: Vec<&str> = plan.systems.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(systems.len(), 7);
    assert_eq!(systems[..3], ["direct", "tunnel-tcp-plain", "tunnel-tcp-relay"]);
    let relay = &plan.systems[2];
    assert_eq!(relay.vars["server_proto"], "relay+");
    let workloads: Vec<&str> = plan.workloads.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(workloads, ["tcp-bw[parallel=1]", "tcp-bw[parallel=4]", "rtt"]);
    assert_eq!(plan.workloads[1].options["parallel"], toml::Value::Integer(4));
    assert_eq!(plan.runs.len(), 7 * 3 * 2);
    // Interleaved: every system once before the next system's second turn, A B A B.
    let first: Vec<String> = plan.runs[..8].iter().map(|r| plan.run_id(r)).collect();
    assert_eq!(first[0], "direct/tcp-bw[parallel=1]/r1");
    assert_eq!(first[1], "tunnel-tcp-plain/tcp-bw[parallel=1]/r1");
    assert_eq!(first[7], "direct/tcp-bw[parallel=4]/r1");
    assert!(plan.runs[..21].iter().all(|r| r.repeat == 1));

    let mut s = loaded.scenario.clone();
    s.run.order = Order::Sequential;
    let seq = wirespeed_runner::matrix::expand(&s).unwrap();
    assert_eq!((seq.runs[0].repeat, seq.runs[1].repeat), (1, 2), "repeats back to back");
    s.run.order = Order::Shuffle;
    let a = wirespeed_runner::matrix::expand(&s).unwrap();
    let b = wirespeed_runner::matrix::expand(&s).unwrap();
    assert_eq!(a.runs, b.runs, "the same seed, the same order");
    assert_ne!(a.runs, plan.runs);
    let mut sorted = a.runs.clone();
    sorted.sort_by_key(|r| (r.repeat, r.workload, r.system));
    assert_eq!(sorted, plan.runs, "a permutation of the interleaved runs");
}

#[test]
fn the_json_schema_is_generated_from_the_types() {
    let schema = wirespeed_runner::scenario::json_schema();
    let props = &schema["properties"];
    for key in
        ["scenario", "run", "sample", "fixture", "system", "matrix", "workload", "check", "report"]
    {
        assert!(props.get(key).is_some(), "{key} missing from {schema}");
    }
    assert_eq!(schema["additionalProperties"], false, "unknown keys refused");
}

#[test]
fn the_listing_names_each_matrix_cells_own_programs() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/valid/matrix_programs.toml"),
    )
    .unwrap();
    let listing = load::describe(&parse("matrix_programs.toml", &text, WORKLOAD_KINDS).unwrap());
    assert!(listing.contains("system   a-server  (needs sh)\n"), "{listing}");
    assert!(listing.contains("system   b-server  (needs sh, no-such-program-here)\n"), "{listing}");
}

#[test]
fn the_dry_run_listing_names_every_cell() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/valid/tunnel_files.toml"),
    )
    .unwrap();
    let listing = load::describe(&parse("t.toml", &text, WORKLOAD_KINDS).unwrap());
    assert!(
        listing.starts_with("tunnel-files: 2 systems × 4 workloads × 3 repeats = 24 runs"),
        "{listing}"
    );
    assert!(listing.contains("system   rathole  (needs rathole)"), "{listing}");
    assert!(
        listing.contains("workload http-latency[rate=4000] (http duration=2s rate=4000)"),
        "{listing}"
    );
    assert_eq!(listing.lines().filter(|l| l.starts_with("run ")).count(), 24);
}

#[test]
fn smoke_keeps_every_system_and_the_ends_of_each_sweep_for_one_short_repeat() {
    let text = files("valid").into_iter().find(|(n, _)| n == "dns_clients.toml").unwrap().1;
    let mut loaded = parse("dns_clients.toml", &text, WORKLOAD_KINDS).unwrap();
    let systems = loaded.plan.systems.len();
    assert_eq!(loaded.plan.workloads.len(), 3, "clients 1, 8, 64");
    loaded.smoke(|kind| (kind == "dns").then(|| ("time-limit", toml::Value::from("1s"))));
    assert_eq!(loaded.scenario.run.repeat, 1);
    assert_eq!(loaded.scenario.run.retries, 1);
    let names: Vec<&str> = loaded.plan.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["qps[clients=1]", "qps[clients=8]", "qps[clients=64]"]);
    assert_eq!(loaded.plan.workloads[2].swept, [("clients".to_string(), "64".to_string())]);
    assert_eq!(loaded.plan.workloads[0].options["time-limit"].as_str(), Some("1s"));
    assert_eq!(loaded.plan.systems.len(), systems);
    assert_eq!(loaded.plan.runs.len(), systems * 3);
    // A longer sweep keeps its first, middle and last values.
    let text = text.replace("clients = [1, 8, 64]", "clients = [1, 2, 4, 8, 16, 32, 64]");
    let mut loaded = parse("dns_clients.toml", &text, WORKLOAD_KINDS).unwrap();
    loaded.smoke(|_| None);
    let names: Vec<&str> = loaded.plan.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["qps[clients=1]", "qps[clients=8]", "qps[clients=64]"]);
}

#[test]
fn link_sweeps_are_axes_and_each_direction_gets_its_conditions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/valid/hosts_netns.toml");
    let loaded =
        parse("hosts_netns.toml", &std::fs::read_to_string(path).unwrap(), WORKLOAD_KINDS).unwrap();
    // Two systems × (two losses × two rates) × two repeats.
    assert_eq!(loaded.plan.runs.len(), 16);
    let names: Vec<&str> = loaded.plan.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "down[loss=0%,server-client.rate=10Mbit]",
            "down[loss=0%,server-client.rate=100Mbit]",
            "down[loss=1%,server-client.rate=10Mbit]",
            "down[loss=1%,server-client.rate=100Mbit]",
        ]
    );
    let cell = &loaded.plan.workloads[3];
    let spec = wirespeed_runner::paths::lab_spec(&loaded.scenario, &cell.path).unwrap();
    assert_eq!(spec.hosts, ["client", "server"]);
    let link = &spec.links[0];
    assert_eq!((link.a.as_str(), link.b.as_str()), ("client", "server"));
    // Client to server: the network's delay and loss; server to client: the link's rate and
    // queue on top.
    assert_eq!(link.a_to_b.to_string(), "delay 10ms, loss 1%");
    assert_eq!(link.b_to_a.to_string(), "delay 10ms, loss 1%, rate 100Mbit/s, queue 64KiB");
}

#[test]
fn a_client_axis_puts_wirespeeds_own_client_beside_others() {
    let text = |client: &str| {
        format!(
            r#"
[scenario]
name = "clients"
[matrix.client]
values = [
  "wirespeed",
  {{ name = "iperf3", program = "iperf3-3.21" }},
]
[[system]]
name = "{{client}}"
matrix = ["client"]
client = {client}
entry = "127.0.0.1:5201"
[[workload]]
name = "bw"
kind = "bandwidth"
"#
        )
    };
    let loaded =
        parse("c.toml", &text(r#"{ name = "{client}", program = "{program}" }"#), WORKLOAD_KINDS);
    // The plain value has no `program`: its cell's client cannot be rendered.
    let e = loaded.unwrap_err().to_string();
    assert!(e.contains("{program} in its client is not one of its axes' variables"), "{e}");
    let loaded = parse("c.toml", &text(r#""{client}""#), WORKLOAD_KINDS).unwrap();
    let clients: Vec<(&str, Option<&str>)> = loaded
        .plan
        .systems
        .iter()
        .map(|c| (c.name.as_str(), c.client.as_ref().map(|c| c.name())))
        .collect();
    assert_eq!(clients, [("wirespeed", None), ("iperf3", Some("iperf3"))]);
}
