//! How one link's conditions are carried out on this machine, and the exact `tc` and `nft`
//! commands that do it (pure functions: what is run is tested without running it).
//!
//! Where the kernel has netem, a link is a veth pair and each direction's egress gets a netem
//! qdisc (with a tbf under it for a rate), as netem's own documentation composes them.
//! Without netem, each condition goes to what can do it: a rate to tbf on the sending side's
//! egress; a loss to nftables on the receiving side's ingress (a drop there is silent, as a
//! wire's loss is — a drop on the sending side would hand the sender an error); and delay,
//! jitter, duplication, reordering and corruption to the user-space delay line, for which the
//! link is a pair of TUN devices instead of a veth pair. Either way `rate` counts the bytes of
//! IP packets: on a veth the 14-byte Ethernet header is taken off with a size table, and
//! segmentation offload is turned off on a rate-limited device so that every packet queued is
//! one packet on the wire and is counted as one.

use serde::Serialize;
use wirespeed_model::path::Conditions;

use crate::kernel::Abilities;
use crate::LabError;

/// What carries a link's conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// The kernel's netem (and tbf for a rate).
    Netem,
    /// tbf for a rate and nftables for a loss; no packet is held.
    Kernel,
    /// tbf, nftables, and the user-space delay line over TUN devices.
    DelayLine,
}

impl Backend {
    /// How it is shown beside results.
    pub fn describe(self) -> &'static str {
        match self {
            Backend::Netem => "netem",
            Backend::Kernel => "tbf and nftables",
            Backend::DelayLine => "tbf, nftables and the user-space delay line",
        }
    }

    /// True when the link is a pair of TUN devices fed by the delay line.
    pub fn tun(self) -> bool {
        self == Backend::DelayLine
    }
}

/// Chooses what carries a link whose directions have `forward` and `back`.
pub fn choose(
    forward: &Conditions,
    back: &Conditions,
    can: &Abilities,
) -> Result<Backend, LabError> {
    let both = [forward, back];
    let rate = both.iter().any(|c| c.rate_bps.is_some());
    let loss = both.iter().any(|c| c.loss > 0.0);
    let holds = both.iter().any(|c| c.holds_packets());
    if rate && !can.tbf {
        return Err(LabError::Unsupported("a rate needs the kernel's tbf qdisc (sch_tbf)".into()));
    }
    if can.netem {
        return Ok(if both.iter().all(|c| c.is_clear()) {
            Backend::Kernel
        } else {
            Backend::Netem
        });
    }
    if loss && !can.nft {
        return Err(LabError::Unsupported(
            "a loss needs netem or nftables (apt-get install nftables)".into(),
        ));
    }
    if holds {
        if !can.tun {
            return Err(LabError::Unsupported(
                "delay, jitter, duplication, reordering or corruption need netem or /dev/net/tun"
                    .into(),
            ));
        }
        return Ok(Backend::DelayLine);
    }
    Ok(Backend::Kernel)
}

/// The rate limiter's burst: a millisecond at the rate, and at least two full packets.
pub fn burst_bytes(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 1000).max(2 * 1514)
}

/// The rate limiter's queue: as asked, or a tenth of a second at the rate (at least 16 KiB).
pub fn queue_bytes(c: &Conditions) -> u64 {
    c.queue_bytes.unwrap_or_else(|| (c.rate_bps.unwrap_or(0) / 8 / 10).max(16 * 1024))
}

/// A share as tc writes percentages.
fn percent(share: f64) -> String {
    format!("{:.6}%", share * 100.0)
}

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// The `tc` commands (each the words after `tc -n NS`) that give `dev`'s egress the
/// conditions `c` of its direction, under `backend`; none for a clear direction.
pub fn egress(dev: &str, c: &Conditions, backend: Backend) -> Vec<Vec<String>> {
    // A veth's packets carry a 14-byte Ethernet header the rate must not count (a size table
    // takes it off); a TUN's carry none, and need no table (tc refuses one of overhead 0).
    let stab: &[&str] = if backend.tun() { &[] } else { &["stab", "overhead", "-14"] };
    let tbf = |parent: &[&str], rate: u64| {
        let mut w = words(&["qdisc", "add", "dev", dev]);
        w.extend(words(parent));
        w.extend(words(&["tbf", "rate", &format!("{rate}bit")]));
        w.extend(words(&["burst", &burst_bytes(rate).to_string()]));
        w.extend(words(&["limit", &queue_bytes(c).to_string()]));
        w
    };
    match backend {
        Backend::Netem if !c.is_clear() => {
            let mut netem = words(&["qdisc", "add", "dev", dev, "root", "handle", "1:"]);
            netem.extend(words(stab));
            netem.extend(words(&["netem", "limit", "100000"]));
            if c.delay_ns > 0 || c.jitter_ns > 0 {
                netem.extend(words(&["delay", &format!("{}us", c.delay_ns / 1000)]));
                if c.jitter_ns > 0 {
                    netem.push(format!("{}us", c.jitter_ns / 1000));
                }
            }
            for (name, share) in [
                ("loss", c.loss),
                ("duplicate", c.duplicate),
                ("reorder", c.reorder),
                ("corrupt", c.corrupt),
            ] {
                if share > 0.0 {
                    netem.extend([name.to_string(), percent(share)]);
                }
            }
            let mut all = vec![netem];
            if let Some(rate) = c.rate_bps {
                all.push(tbf(&["parent", "1:1", "handle", "10:"], rate));
            }
            all
        }
        Backend::Netem => Vec::new(),
        Backend::Kernel | Backend::DelayLine => match c.rate_bps {
            Some(rate) => {
                let mut root = vec!["root", "handle", "1:"];
                root.extend_from_slice(stab);
                vec![tbf(&root, rate)]
            }
            None => Vec::new(),
        },
    }
}

/// The name of the nftables counter of packets dropped arriving on `dev`.
pub fn loss_counter(dev: &str) -> String {
    format!("loss_{}", dev.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
}

/// The nftables table `wirespeed` of one namespace: for each `(device, share)`, a chain on
/// the device's ingress that drops that share of arriving packets at random and counts them.
pub fn ingress_losses(drops: &[(&str, f64)]) -> Option<String> {
    if drops.is_empty() {
        return None;
    }
    let mut text = String::from("table netdev wirespeed {\n");
    for (dev, share) in drops {
        let counter = loss_counter(dev);
        // Parts per million: numgen draws a uniform 32-bit number, taken mod 1e6. Only IP
        // packets: a lost ARP request costs a second before it is asked again, which no
        // wire's loss rate means.
        let ppm = (share * 1e6).round() as u64;
        text.push_str(&format!("  counter {counter} {{ }}\n"));
        text.push_str(&format!(
            "  chain {counter} {{\n    type filter hook ingress device \"{dev}\" priority 0;\n    meta protocol {{ ip, ip6 }} numgen random mod 1000000 < {ppm} counter name \"{counter}\" drop\n  }}\n"
        ));
    }
    text.push_str("}\n");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(pairs: &[(&str, &str)]) -> Conditions {
        let mut c = Conditions::default();
        for (k, v) in pairs {
            c.set(k, v).unwrap();
        }
        c
    }

    const NO_NETEM: Abilities = Abilities { tbf: true, netem: false, nft: true, tun: true };
    const NETEM: Abilities = Abilities { tbf: true, netem: true, nft: true, tun: true };

    #[test]
    fn each_condition_goes_to_what_this_kernel_has() {
        let clear = Conditions::default();
        let rate_loss = cond(&[("rate", "100M"), ("loss", "1%")]);
        let delay = cond(&[("delay", "20ms")]);
        assert_eq!(choose(&clear, &clear, &NO_NETEM).unwrap(), Backend::Kernel);
        assert_eq!(choose(&rate_loss, &clear, &NO_NETEM).unwrap(), Backend::Kernel);
        assert_eq!(choose(&clear, &delay, &NO_NETEM).unwrap(), Backend::DelayLine);
        assert_eq!(choose(&clear, &delay, &NETEM).unwrap(), Backend::Netem);
        assert_eq!(choose(&clear, &clear, &NETEM).unwrap(), Backend::Kernel);
        let bare = Abilities { tbf: false, netem: false, nft: false, tun: false };
        for (c, says) in
            [(&rate_loss, "tbf"), (&cond(&[("loss", "1%")]), "nftables"), (&delay, "tun")]
        {
            let e = choose(c, &clear, &bare).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn the_commands_are_the_ones_a_person_would_type() {
        let c = cond(&[("rate", "100Mbit"), ("queue", "64KiB")]);
        let line = |w: &Vec<String>| w.join(" ");
        assert_eq!(
            egress("to-b", &c, Backend::Kernel).iter().map(line).collect::<Vec<_>>(),
            ["qdisc add dev to-b root handle 1: stab overhead -14 tbf rate 100000000bit burst 12500 limit 65536"]
        );
        assert_eq!(
            line(&egress("to-b", &c, Backend::DelayLine)[0]),
            "qdisc add dev to-b root handle 1: tbf rate 100000000bit burst 12500 limit 65536"
        );
        let n = cond(&[("delay", "20ms"), ("jitter", "1ms"), ("loss", "0.5%"), ("rate", "10M")]);
        assert_eq!(
            egress("to-b", &n, Backend::Netem).iter().map(line).collect::<Vec<_>>(),
            [
                "qdisc add dev to-b root handle 1: stab overhead -14 netem limit 100000 delay 20000us 1000us loss 0.500000%",
                "qdisc add dev to-b parent 1:1 handle 10: tbf rate 10000000bit burst 3028 limit 125000",
            ]
        );
        assert!(egress("to-b", &Conditions::default(), Backend::Netem).is_empty());
        assert!(egress("to-b", &n, Backend::DelayLine).len() == 1);
        let rules = ingress_losses(&[("to-a", 0.01)]).unwrap();
        assert!(rules.contains("meta protocol { ip, ip6 } numgen random mod 1000000 < 10000 counter name \"loss_to_a\" drop"), "{rules}");
        assert!(ingress_losses(&[]).is_none());
    }
}
