//! Hosts for the emulated-path tests (`netpath`, `netfaults`): labs of network namespaces
//! joined by links with conditions, `wirespeed server` (or a peer) in one host and clients in
//! another, each a real process.

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use wirespeed_model::path::Conditions;
use wirespeed_netlab::kernel::Abilities;
use wirespeed_netlab::{Lab, LabSpec, LinkSpec};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_wirespeed");

pub(crate) fn conditions(pairs: &[(&str, &str)]) -> Conditions {
    let mut c = Conditions::default();
    for (k, v) in pairs {
        c.set(k, v).unwrap();
    }
    c.check().unwrap();
    c
}

/// A client and a server host joined by a link with `forward` (client to server) and `back`.
pub(crate) fn lab(forward: Conditions, back: Conditions) -> Option<Lab> {
    Some(Lab::build(&lab_spec(forward, back)?).unwrap())
}

/// The spec of [`lab`], or `None` (skipped, or failed under CI) where no lab can be built.
pub(crate) fn lab_spec(forward: Conditions, back: Conditions) -> Option<LabSpec> {
    if let Err(e) = wirespeed_netlab::privilege::check() {
        wirespeed_testkit::skip::missing(&e.to_string(), "run as root");
        return None;
    }
    let can = Abilities::of_this_machine();
    if !(can.tbf && can.nft && can.tun) {
        wirespeed_testkit::skip::missing(
            &format!("the lab lacks a part: {}", can.summary()),
            "install nftables",
        );
        return None;
    }
    let spec = LabSpec {
        hosts: vec!["client".into(), "server".into()],
        links: vec![LinkSpec {
            a: "client".into(),
            b: "server".into(),
            a_to_b: forward,
            b_to_a: back,
        }],
    };
    Some(spec)
}

/// A client and a server host with a router between them: the client's link to the router
/// carries `to_router` and `to_client`, the router's link to the server `to_server` (and
/// nothing back). Conditions on the router's side are a bottleneck router's, whose queue
/// fills (one on the sending host's own egress would not, see `Lab::route_via`).
pub(crate) fn routed_lab(
    to_router: Conditions,
    to_client: Conditions,
    to_server: Conditions,
) -> Option<Lab> {
    let mut lab_spec = lab_spec(to_router, to_client)?;
    lab_spec.hosts.push("router".into());
    lab_spec.links[0].b = "router".into();
    lab_spec.links.push(LinkSpec {
        a: "router".into(),
        b: "server".into(),
        a_to_b: to_server,
        b_to_a: Conditions::default(),
    });
    let lab = Lab::build(&lab_spec).unwrap();
    lab.route_via("client", "server", "router").unwrap();
    lab.route_via("server", "client", "router").unwrap();
    Some(lab)
}

/// A process in a lab host; killed and reaped when dropped.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn server_addr(lab: &Lab) -> SocketAddr {
    SocketAddr::from((lab.host("server").unwrap().address, 5201))
}

/// Starts `program args` in the server host and waits until its port 5201 takes a TCP
/// connection from the client host.
pub(crate) fn start_server(lab: &Lab, program: &str, args: &[&str]) -> Running {
    let child = lab
        .host("server")
        .unwrap()
        .namespace
        .command(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    let addr = server_addr(lab);
    let up = lab
        .host("client")
        .unwrap()
        .namespace
        .within(|| {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(10) {
                if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        })
        .unwrap();
    assert!(up, "{program} never listened on {addr}");
    running
}

/// Runs `program args` in the client host; its standard output, as JSON.
pub(crate) fn client_json(lab: &Lab, program: &str, args: &[&str]) -> Value {
    let out = lab.host("client").unwrap().namespace.command(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// wirespeed's report of `kind args` from the client host to the server host.
pub(crate) fn wirespeed(lab: &Lab, kind: &str, args: &[&str]) -> Value {
    let target = lab.host("server").unwrap().address.to_string();
    let mut all = vec![kind, target.as_str()];
    all.extend_from_slice(args);
    all.extend(["-f", "json", "--no-save"]);
    client_json(lab, BIN, &all)
}

/// Writes a figure down in the test's output, for docs/network-emulation.md.
#[allow(clippy::print_stderr)] // the figures beside the checks, for the record
pub(crate) fn note(line: String) {
    eprintln!("FIGURE {line}");
}

/// Stock iperf3 (server in the server host, client in the client host) with `args`: its JSON.
pub(crate) fn stock_iperf3(lab: &Lab, args: &[&str]) -> Value {
    let _iperf3 = start_server(lab, "iperf3", &["-s", "-p", "5201"]);
    let target = lab.host("server").unwrap().address.to_string();
    let mut all = vec!["-c", target.as_str()];
    all.extend_from_slice(args);
    all.push("-J");
    client_json(lab, "iperf3", &all)
}
