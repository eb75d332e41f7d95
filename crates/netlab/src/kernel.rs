//! What the running kernel and system can do for a lab, found by trying it in a scratch
//! namespace rather than assumed: tbf (rate), netem (delay, jitter, loss, duplication,
//! reordering, corruption in the kernel), nftables (random drops), and TUN devices (the
//! user-space delay line). Many kernels lack netem — this project's own machines do, and load
//! no modules — so the lab chooses, per link, what is there ([`crate::shaping`]).

use std::sync::OnceLock;

use serde::Serialize;

use crate::command::{available, run};
use crate::namespace::{Namespace, PREFIX};

/// What this machine can do for a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Abilities {
    /// The tbf qdisc: rate limits.
    pub tbf: bool,
    /// The netem qdisc: every condition in the kernel.
    pub netem: bool,
    /// nftables with random numbers on an ingress hook: losses.
    pub nft: bool,
    /// `/dev/net/tun`: the user-space delay line.
    pub tun: bool,
}

/// Turns netem off even where the kernel has it (`WIRESPEED_LAB_NETEM=off`), so the delay
/// line can be tried and compared on such a kernel too.
pub const NETEM_ENV: &str = "WIRESPEED_LAB_NETEM";

impl Abilities {
    /// This machine's, probed once per process (a scratch namespace with a veth pair; it is
    /// removed before this returns).
    pub fn of_this_machine() -> Abilities {
        static PROBED: OnceLock<Abilities> = OnceLock::new();
        let mut found = *PROBED.get_or_init(probe);
        if std::env::var(NETEM_ENV).is_ok_and(|v| v == "off") {
            found.netem = false;
        }
        found
    }

    /// What is missing, said plainly, for a note beside results (`netem: not in this
    /// kernel; delays from the user-space delay line`).
    pub fn summary(&self) -> String {
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        format!(
            "tbf {}, netem {}, nftables {}, tun {}",
            yes_no(self.tbf),
            yes_no(self.netem),
            yes_no(self.nft),
            yes_no(self.tun)
        )
    }
}

fn probe() -> Abilities {
    let none = Abilities { tbf: false, netem: false, nft: false, tun: false };
    let name = format!("{PREFIX}{}-probe", std::process::id());
    let Ok(ns) = Namespace::create(&name) else { return none };
    let n = ns.name();
    let veth = run("ip", &["-n", n, "link", "add", "p0", "type", "veth", "peer", "name", "p1"]);
    if veth.is_err() {
        return none;
    }
    let qdisc = |args: &[&str]| {
        let mut all = vec!["-n", n, "qdisc", "replace", "dev", "p0", "root"];
        all.extend_from_slice(args);
        run("tc", &all).is_ok()
    };
    let tbf = qdisc(&["tbf", "rate", "1mbit", "burst", "16k", "limit", "64k"]);
    let netem = qdisc(&["netem", "delay", "1ms"]);
    let nft = available("nft") && nft_works(n);
    let tun = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun").is_ok();
    Abilities { tbf, netem, nft, tun }
}

/// True when nftables can drop at random on an interface's ingress inside namespace `ns`.
fn nft_works(ns: &str) -> bool {
    let rules = "table netdev probe {\n chain c {\n  type filter hook ingress device \"p1\" priority 0;\n  numgen random mod 100 < 1 drop\n }\n}\n";
    crate::command::run_with_input("ip", &["netns", "exec", ns, "nft", "-f", "-"], Some(rules))
        .is_ok()
}
