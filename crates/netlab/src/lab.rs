//! Building a lab: a namespace per host with its own address (`10.77.0.N/32` on its loopback,
//! so a host has one address whichever link a packet takes), a point-to-point link for each
//! pair asked for — a veth pair, or a TUN pair fed by the delay line — with a route over it to
//! the peer's address, and each direction's conditions applied ([`crate::shaping`]). A step
//! that fails removes everything made before it, so there is never half a lab; dropping a
//! [`Lab`] stops its delay lines, kills what still runs in its namespaces and removes them.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

use wirespeed_model::path::{Conditions, LinkRecord};

use crate::command::{run, run_with_input};
use crate::delay_line::{tun, DelayLine};
use crate::kernel::Abilities;
use crate::namespace::{self, Namespace, PREFIX};
use crate::shaping::{self, Backend};
use crate::{privilege, LabError};

/// Most hosts in a lab: one address each in `10.77.0.0/24`.
pub const MAX_HOSTS: usize = 250;

/// A lab to build.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabSpec {
    /// Its hosts' names.
    pub hosts: Vec<String>,
    /// The links between them: only linked pairs reach each other.
    pub links: Vec<LinkSpec>,
}

/// A link between two hosts and what each direction does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkSpec {
    /// One end.
    pub a: String,
    /// The other end.
    pub b: String,
    /// Conditions from `a` to `b`.
    pub a_to_b: Conditions,
    /// Conditions from `b` to `a`.
    pub b_to_a: Conditions,
}

/// A host of a built lab.
#[derive(Debug)]
pub struct LabHost {
    /// Its name in the spec.
    pub name: String,
    /// Its address, the same on every link.
    pub address: Ipv4Addr,
    /// Its namespace.
    pub namespace: Namespace,
}

/// A built link.
#[derive(Debug)]
struct BuiltLink {
    spec: LinkSpec,
    backend: Backend,
    /// The device at each end: in `a` towards `b`, in `b` towards `a`.
    devices: [String; 2],
    line: Option<DelayLine>,
}

/// A lab that exists; removed when dropped.
#[derive(Debug)]
pub struct Lab {
    // Field order is drop order: links (delay lines, TUN descriptors) before namespaces.
    links: Vec<BuiltLink>,
    hosts: Vec<LabHost>,
    abilities: Abilities,
}

/// Labs made by this process so far, for unique names.
static LABS: AtomicU32 = AtomicU32::new(0);

/// `name` cut to letters, digits and `-`, at most `max` bytes.
fn tidy(name: &str, max: usize) -> String {
    let t: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .take(max)
        .collect();
    if t.is_empty() {
        "h".into()
    } else {
        t
    }
}

impl LabSpec {
    /// Refuses what cannot be built: no hosts, too many, a name twice, a link to an unknown
    /// host or to itself, a pair linked twice, conditions netem would refuse.
    pub fn check(&self) -> Result<(), LabError> {
        if self.hosts.is_empty() || self.hosts.len() > MAX_HOSTS {
            return Err(LabError::Spec(format!("a lab has 1 to {MAX_HOSTS} hosts")));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            if self.hosts[..i].contains(h) {
                return Err(LabError::Spec(format!("host {h:?} is named twice")));
            }
        }
        let mut pairs = Vec::new();
        for l in &self.links {
            for end in [&l.a, &l.b] {
                if !self.hosts.contains(end) {
                    return Err(LabError::Spec(format!("a link names {end:?}, which is no host")));
                }
            }
            if l.a == l.b {
                return Err(LabError::Spec(format!("a link joins {:?} to itself", l.a)));
            }
            let pair = if l.a < l.b { (&l.a, &l.b) } else { (&l.b, &l.a) };
            if pairs.contains(&pair) {
                return Err(LabError::Spec(format!("{} and {} are linked twice", l.a, l.b)));
            }
            pairs.push(pair);
            for c in [&l.a_to_b, &l.b_to_a] {
                c.check().map_err(|e| LabError::Spec(e.to_string()))?;
            }
        }
        Ok(())
    }
}

impl Lab {
    /// Builds `spec` with what this machine has; all of it or nothing.
    pub fn build(spec: &LabSpec) -> Result<Lab, LabError> {
        Self::build_with(spec, Abilities::of_this_machine())
    }

    /// Refuses, before anything is made, what [`Lab::build`] would: a wrong spec, a process
    /// without the privileges, a condition this machine cannot carry out.
    pub fn check_buildable(spec: &LabSpec) -> Result<(), LabError> {
        spec.check()?;
        privilege::check()?;
        Self::backends(spec, &Abilities::of_this_machine()).map(drop)
    }

    /// What carries each link of `spec`.
    fn backends(spec: &LabSpec, abilities: &Abilities) -> Result<Vec<Backend>, LabError> {
        spec.links
            .iter()
            .map(|l| {
                shaping::choose(&l.a_to_b, &l.b_to_a, abilities)
                    .map_err(|e| LabError::Unsupported(format!("{} to {}: {e}", l.a, l.b)))
            })
            .collect()
    }

    /// Builds `spec` using only `abilities` (a test can refuse netem to try the delay line).
    pub fn build_with(spec: &LabSpec, abilities: Abilities) -> Result<Lab, LabError> {
        spec.check()?;
        privilege::check()?;
        let stale = namespace::remove_stale();
        if !stale.is_empty() {
            tracing::info!("removed namespaces left by stopped runs: {}", stale.join(", "));
        }
        // Choose every link's backend before anything is made.
        let backends = Self::backends(spec, &abilities)?;
        let seq = LABS.fetch_add(1, Ordering::Relaxed);
        let mut lab = Lab { links: Vec::new(), hosts: Vec::new(), abilities };
        for (i, name) in spec.hosts.iter().enumerate() {
            let ns_name = format!("{PREFIX}{}-{seq}-{}", std::process::id(), tidy(name, 32));
            let namespace = Namespace::create(&ns_name)?;
            let address = Ipv4Addr::new(10, 77, 0, (i + 1) as u8);
            run("ip", &["-n", &ns_name, "addr", "add", &format!("{address}/32"), "dev", "lo"])?;
            lab.hosts.push(LabHost { name: name.clone(), address, namespace });
        }
        for (link, backend) in spec.links.iter().zip(backends) {
            let built = lab.link(link, backend, seq)?;
            lab.links.push(built);
        }
        lab.apply_losses()?;
        Ok(lab)
    }

    fn index(&self, name: &str) -> usize {
        self.hosts.iter().position(|h| h.name == name).unwrap_or_default()
    }

    /// Routes `from`'s packets for `to` through `via` (a host `from` has a link to, and that
    /// has one to `to`), and has `via` forward them: a router in the middle, whose queues fill
    /// as a bottleneck router's do. A sending host's own rate limiter never fills for TCP:
    /// the kernel keeps each socket's packets in it to about a millisecond (TCP small queues),
    /// so a deep queue on the sender's egress is not bufferbloat; on a router it is.
    pub fn route_via(&self, from: &str, to: &str, via: &str) -> Result<(), LabError> {
        let unknown = |n: &str| LabError::Spec(format!("no host {n} in the lab"));
        let host = |n: &str| self.hosts.iter().position(|h| h.name == n).ok_or_else(|| unknown(n));
        let (f, t, v) = (host(from)?, host(to)?, host(via)?);
        let linked = |x: usize, y: usize| {
            self.links.iter().any(|l| {
                let (a, b) = (self.index(&l.spec.a), self.index(&l.spec.b));
                (a, b) == (x, y) || (a, b) == (y, x)
            })
        };
        if !linked(f, v) || !linked(v, t) {
            return Err(LabError::Spec(format!(
                "{from} reaches {to} through {via} only if {via} has a link to each"
            )));
        }
        let ns = self.hosts[v].namespace.name();
        run("ip", &["netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])?;
        let (dev, gateway) = (self.device(v), self.hosts[v].address.to_string());
        let dest = format!("{}/32", self.hosts[t].address);
        let src = self.hosts[f].address.to_string();
        let ns = self.hosts[f].namespace.name();
        run(
            "ip",
            &["-n", ns, "route", "add", &dest, "via", &gateway, "dev", &dev, "onlink", "src", &src],
        )?;
        Ok(())
    }

    /// The device in host `at` towards host `peer`: `to-PEER`, made unique with the peer's
    /// number when names collide after cutting.
    fn device(&self, peer: usize) -> String {
        let wanted = format!("to-{}", tidy(&self.hosts[peer].name, 12));
        let clash = self
            .hosts
            .iter()
            .enumerate()
            .any(|(k, h)| k != peer && format!("to-{}", tidy(&h.name, 12)) == wanted);
        if clash {
            format!("to-h{}", peer + 1)
        } else {
            wanted
        }
    }

    fn link(&self, spec: &LinkSpec, backend: Backend, seq: u32) -> Result<BuiltLink, LabError> {
        let (ia, ib) = (self.index(&spec.a), self.index(&spec.b));
        let (a, b) = (&self.hosts[ia], &self.hosts[ib]);
        let devices = [self.device(ib), self.device(ia)];
        let (na, nb) = (a.namespace.name(), b.namespace.name());
        let mut line = None;
        if backend.tun() {
            let fa = a.namespace.within(|| tun::create(&devices[0]))??;
            let fb = b.namespace.within(|| tun::create(&devices[1]))??;
            let seed = u64::from(seq) << 32 | (ia as u64) << 16 | ib as u64;
            let name = format!("line{}-{}", ia + 1, ib + 1);
            line = Some(
                DelayLine::start(&name, fa, fb, spec.a_to_b, spec.b_to_a, seed)
                    .map_err(|e| LabError::Tun(format!("delay line: {e}")))?,
            );
        } else {
            run(
                "ip",
                &[
                    "link",
                    "add",
                    &devices[0],
                    "netns",
                    na,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    &devices[1],
                    "netns",
                    nb,
                ],
            )?;
        }
        let built = BuiltLink { spec: spec.clone(), backend, devices, line };
        for (host, dev, peer, c) in
            [(a, &built.devices[0], b, &spec.a_to_b), (b, &built.devices[1], a, &spec.b_to_a)]
        {
            let ns = host.namespace.name();
            if (c.rate_bps.is_some() || c.loss > 0.0) && !backend.tun() {
                // One packet per buffer: a rate then counts packets as the wire does, and a
                // loss drops one packet, not a batch of UDP or TCP segments sent as one.
                run("ip", &["-n", ns, "link", "set", dev, "gso_max_segs", "1"])?;
            }
            // No IPv6 link-local address: a device that has one sends router and listener
            // solicitations of its own, which would count as traffic of the run.
            run("ip", &["-n", ns, "link", "set", dev, "addrgenmode", "none"])?;
            run("ip", &["-n", ns, "link", "set", dev, "up"])?;
            let peer_addr = format!("{}/32", peer.address);
            let own = host.address.to_string();
            run("ip", &["-n", ns, "route", "add", &peer_addr, "dev", dev, "src", &own])?;
            for words in shaping::egress(dev, c, backend) {
                let mut args = vec!["-n", ns];
                args.extend(words.iter().map(String::as_str));
                run("tc", &args)?;
            }
        }
        Ok(built)
    }

    /// Each host's nftables table of ingress losses (kernels without netem).
    fn apply_losses(&self) -> Result<(), LabError> {
        let mut per_host: BTreeMap<usize, Vec<(&str, f64)>> = BTreeMap::new();
        for l in self.links.iter().filter(|l| l.backend != Backend::Netem) {
            let (ia, ib) = (self.index(&l.spec.a), self.index(&l.spec.b));
            // A direction's loss is the receiver's: b drops what arrives from a.
            for (receiver, dev, share) in
                [(ib, &l.devices[1], l.spec.a_to_b.loss), (ia, &l.devices[0], l.spec.b_to_a.loss)]
            {
                if share > 0.0 {
                    per_host.entry(receiver).or_default().push((dev.as_str(), share));
                }
            }
        }
        for (host, drops) in per_host {
            if let Some(rules) = shaping::ingress_losses(&drops) {
                let ns = self.hosts[host].namespace.name();
                run_with_input("ip", &["netns", "exec", ns, "nft", "-f", "-"], Some(&rules))?;
            }
        }
        Ok(())
    }

    /// Its hosts.
    pub fn hosts(&self) -> &[LabHost] {
        &self.hosts
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&LabHost> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// What this lab was built with.
    pub fn abilities(&self) -> Abilities {
        self.abilities
    }

    /// Every direction of every link: its conditions, what carried them and what it did so
    /// far (drops counted by nftables and the queues, the delay line's counts).
    pub fn record(&self) -> Vec<LinkRecord> {
        let mut out = Vec::new();
        for l in &self.links {
            let (ia, ib) = (self.index(&l.spec.a), self.index(&l.spec.b));
            let counts = l.line.as_ref().map(DelayLine::counts);
            for (k, (from, to, c)) in
                [(ia, ib, &l.spec.a_to_b), (ib, ia, &l.spec.b_to_a)].into_iter().enumerate()
            {
                let (sender_dev, receiver_dev) = (&l.devices[k], &l.devices[1 - k]);
                let lost = (l.backend != Backend::Netem && c.loss > 0.0)
                    .then(|| nft_counter(self.hosts[to].namespace.name(), receiver_dev))
                    .flatten();
                let queue_drops = (!c.is_clear())
                    .then(|| qdisc_drops(self.hosts[from].namespace.name(), sender_dev))
                    .flatten();
                out.push(LinkRecord {
                    from: self.hosts[from].name.clone(),
                    to: self.hosts[to].name.clone(),
                    conditions: *c,
                    carried_by: l.backend.describe().to_string(),
                    lost,
                    queue_drops,
                    line: counts.map(|c| c[k]),
                });
            }
        }
        out
    }
}

/// The packets nftables dropped arriving on `dev` in namespace `ns`.
fn nft_counter(ns: &str, dev: &str) -> Option<u64> {
    let name = shaping::loss_counter(dev);
    let out = run(
        "ip",
        &["netns", "exec", ns, "nft", "-j", "list", "counter", "netdev", "wirespeed", &name],
    )
    .ok()?;
    let json: serde_json::Value = serde_json::from_str(&out).ok()?;
    json["nftables"].as_array()?.iter().find_map(|o| o["counter"]["packets"].as_u64())
}

/// The packets the qdiscs of `dev` in namespace `ns` dropped, all of them added.
fn qdisc_drops(ns: &str, dev: &str) -> Option<u64> {
    let out = run("tc", &["-n", ns, "-s", "-j", "qdisc", "show", "dev", dev]).ok()?;
    let json: serde_json::Value = serde_json::from_str(&out).ok()?;
    Some(json.as_array()?.iter().filter_map(|q| q["drops"].as_u64()).sum())
}
