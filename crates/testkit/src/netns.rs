//! Network namespaces a test makes and removes itself: hosts that only exist on this machine,
//! so a test can have real routers between it and its target (for `trace`) or its own
//! sysctls (for ping socket permissions) without touching the host's network. A test that
//! cannot make namespaces (not root, or a kernel that refuses) fails under CI and is skipped
//! elsewhere ([`skip`](crate::skip)).

use std::process::{Command, Output};

/// A named network namespace with its loopback up, deleted when dropped.
pub struct Netns {
    /// Its name for `ip netns`.
    pub name: String,
}

fn ip(args: &[&str]) -> Output {
    Command::new("ip").args(args).output().expect("ip runs")
}

impl Netns {
    /// Makes a namespace, or returns `None` after printing why it could not.
    pub fn new(tag: &str) -> Option<Self> {
        let name = format!("ws-{tag}-{}", std::process::id());
        let out = ip(&["netns", "add", &name]);
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            let what = format!("cannot make a network namespace: {}", why.trim());
            crate::skip::missing(&what, "run as root (CAP_SYS_ADMIN and CAP_NET_ADMIN)");
            return None;
        }
        let ns = Self { name };
        ns.run("ip link set lo up");
        Some(ns)
    }

    /// A command that runs inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Runs a shell command inside the namespace and insists that it works.
    pub fn run(&self, script: &str) {
        let out = self.command("sh").args(["-c", script]).output().expect("sh runs");
        assert!(
            out.status.success(),
            "in {}: {script}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Whatever still runs inside goes first: a process left there keeps the namespace,
        // and its end of every veth pair, alive after `netns del`. (An sshd session whose
        // client's connection ended after the link did, Ansible's ControlPersist one, was
        // left so, and its veth's name made a later test's fail.)
        let pids = ip(&["netns", "pids", &self.name]);
        for pid in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<libc::pid_t>() {
                // SAFETY: kill(2) touches no memory; a pid gone since is refused, no harm.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A chain of namespaces joined by veth pairs: `hosts[0]` — `hosts[1]` — … — `hosts[n-1]`,
/// link k on 10.77.k.0/24 and fd77:k::/64 (host k is .1/::1, host k+1 is .2/::2), every
/// middle host forwarding, and routes so the first host reaches the last through all of
/// them. The last host's address on the last link is the far end.
pub struct Chain {
    /// The hosts, first to last.
    pub hosts: Vec<Netns>,
}

impl Chain {
    /// Makes a chain of `n` hosts (at least 2), or `None` when namespaces are refused.
    pub fn new(tag: &str, n: usize) -> Option<Self> {
        assert!(n >= 2);
        let mut hosts = Vec::new();
        for i in 0..n {
            hosts.push(Netns::new(&format!("{tag}{i}"))?);
        }
        for k in 0..n - 1 {
            let (a, b) = (&hosts[k], &hosts[k + 1]);
            let (va, vb) = (format!("wsa{k}"), format!("wsb{k}"));
            let out = ip(&[
                "link", "add", &va, "netns", &a.name, "type", "veth", "peer", "name", &vb, "netns",
                &b.name,
            ]);
            if !out.status.success() {
                let why = String::from_utf8_lossy(&out.stderr);
                let what = format!("cannot make a veth pair: {}", why.trim());
                crate::skip::missing(&what, "run as root, on a kernel with veth");
                return None;
            }
            a.run(&format!("ip addr add 10.77.{k}.1/24 dev {va} && ip -6 addr add fd77:{k}::1/64 dev {va} nodad && ip link set {va} up"));
            b.run(&format!("ip addr add 10.77.{k}.2/24 dev {vb} && ip -6 addr add fd77:{k}::2/64 dev {vb} nodad && ip link set {vb} up"));
        }
        for (i, h) in hosts.iter().enumerate() {
            h.run("sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1");
            // Routers must answer every probe: no per-destination ICMP rate limit, and room in
            // the host-wide one (1000/s with a burst of 50, whose credit the kernel randomises
            // since 6.x, so it dropped an ICMPv6 answer now and then within a test).
            h.run("sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0");
            // (Older kernels keep it host-wide, not per namespace: then it stays as it is.)
            h.run("sysctl -qw net.ipv4.icmp_msgs_per_sec=1000000 net.ipv4.icmp_msgs_burst=1000000 || true");
            // Default routes: towards the far end from the first hosts, back from the others.
            if i + 1 < n {
                h.run(&format!("ip route add 10.77.0.0/16 via 10.77.{i}.2 metric 100 && ip -6 route add fd77::/16 via fd77:{i}::2 metric 100"));
            }
            if i > 0 {
                let back = i - 1;
                for k in 0..back {
                    h.run(&format!("ip route add 10.77.{k}.0/24 via 10.77.{back}.1 && ip -6 route add fd77:{k}::/64 via fd77:{back}::1"));
                }
            }
        }
        Some(Self { hosts })
    }

    /// The far end's IPv4 address.
    pub fn far_v4(&self) -> String {
        format!("10.77.{}.2", self.hosts.len() - 2)
    }

    /// The far end's IPv6 address.
    pub fn far_v6(&self) -> String {
        canonical_v6(&format!("fd77:{}::2", self.hosts.len() - 2))
    }

    /// The address by which host `i` (1..n) answers probes from the first host: its address
    /// on the link towards the first host.
    pub fn hop_v4(&self, i: usize) -> String {
        format!("10.77.{}.2", i - 1)
    }

    /// The IPv6 twin of [`Self::hop_v4`].
    pub fn hop_v6(&self, i: usize) -> String {
        canonical_v6(&format!("fd77:{}::2", i - 1))
    }
}

/// An IPv6 address as Rust (and the reports) write it: `fd77:0::2` is `fd77::2`.
fn canonical_v6(text: &str) -> String {
    text.parse::<std::net::Ipv6Addr>().expect("an IPv6 address").to_string()
}
