//! The conditions of an emulated network path: what one direction of a link between two hosts
//! does to the packets it carries — delay, jitter, loss, duplication, reordering, corruption,
//! a rate limit and its queue — as a scenario's `[[link]]` or `[network]` writes them and as a
//! result records them. Read and checked here (no I/O): a value netem would refuse (a negative
//! delay, a loss over 100 %, reordering without a delay) is refused with the key it is in. The
//! lab that makes them real is `wirespeed-netlab`.
//!
//! The meanings are netem's, whichever way the lab carries them out: `delay` is one way (a
//! link of 20 ms each way has a round trip of 40 ms); `jitter` spreads each packet's delay
//! uniformly over `delay ± jitter` (so packets may overtake each other, as under netem);
//! `reorder` sends that share of packets at once, ahead of the delayed ones; `duplicate`
//! delivers that share twice; `corrupt` flips one random bit of that share; `rate` is the
//! link's capacity in bits of IP packets per second (headers of the layers below IP are not
//! counted, so a TCP stream with 1448-byte segments carries 1448/1500 of it as payload);
//! `queue` is how many bytes wait for the rate limiter before it drops.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::{parse_bitrate, parse_bytes, parse_duration, Bytes};

/// The keys a link's conditions are written with, in the order they are shown.
pub const KEYS: [&str; 8] =
    ["delay", "jitter", "loss", "duplicate", "reorder", "corrupt", "rate", "queue"];

/// Fastest rate a link may be given: well past what a machine's emulation (a veth pair, a
/// user-space delay line) can carry, so a larger one would limit nothing.
const MAX_RATE_BPS: u64 = 400_000_000_000;

/// Longest delay (or jitter) a link may have: beyond it a test would only wait.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// What one direction of a link does to its packets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conditions {
    /// One-way delay added to every packet, nanoseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ns: u64,
    /// Each packet's delay is drawn uniformly from `delay ± jitter`, nanoseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter_ns: u64,
    /// Share of packets dropped, 0 to 1.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub loss: f64,
    /// Share of packets delivered twice, 0 to 1.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub duplicate: f64,
    /// Share of packets sent at once, ahead of the delayed ones, 0 to 1.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub reorder: f64,
    /// Share of packets with one random bit flipped, 0 to 1.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub corrupt: f64,
    /// Capacity in bits of IP packets per second; none is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// Bytes that may wait for the rate limiter; beyond them packets are dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
}

/// What one direction of an emulated link was asked to do and did during a run, kept with
/// the run's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkRecord {
    /// Sending host.
    pub from: String,
    /// Receiving host.
    pub to: String,
    /// The conditions asked for.
    pub conditions: Conditions,
    /// What carried them (`netem`, `tbf and nftables`, …).
    pub carried_by: String,
    /// Packets the loss filter dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Packets the rate limiter's queue (or netem) dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_drops: Option<u64>,
    /// What the user-space delay line did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<LineCounts>,
}

/// What a user-space delay line did to the packets of one direction.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LineCounts {
    /// Packets taken in.
    pub received: u64,
    /// Packets handed on (copies included).
    pub delivered: u64,
    /// Packets taken twice.
    pub duplicated: u64,
    /// Packets sent ahead of the delayed ones.
    pub reordered: u64,
    /// Packets with a bit flipped.
    pub corrupted: u64,
    /// Packets dropped because the line held as many as it may.
    pub overflowed: u64,
    /// Packets the receiving device refused.
    pub write_errors: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_nothing(v: &f64) -> bool {
    *v == 0.0
}

/// Why a link's condition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} = {value:?}: {why}")]
pub struct ConditionError {
    /// The key.
    pub key: String,
    /// The value as written.
    pub value: String,
    /// What is wrong with it.
    pub why: String,
}

impl Conditions {
    /// Conditions with only a delay.
    pub fn delay(delay: Duration) -> Self {
        Self { delay_ns: duration_ns(delay), ..Self::default() }
    }

    /// True when the link does nothing to its packets.
    pub fn is_clear(&self) -> bool {
        *self == Self::default()
    }

    /// True when some packets are held back, sent twice, reordered or corrupted: what a rate
    /// limiter and a packet filter cannot do.
    pub fn holds_packets(&self) -> bool {
        self.delay_ns > 0
            || self.jitter_ns > 0
            || self.duplicate > 0.0
            || self.reorder > 0.0
            || self.corrupt > 0.0
    }

    /// Sets `key` from its written `value` (`delay = "20ms"`, `loss = "1%"`, `rate =
    /// "100Mbit"`, `queue = "64KiB"`); a share is a percentage, with or without `%`, as netem
    /// writes it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConditionError> {
        let refuse =
            |why: String| ConditionError { key: key.to_string(), value: value.to_string(), why };
        let text = value.trim();
        match key {
            "delay" | "jitter" => {
                let d = parse_duration(text).map_err(|e| refuse(e.to_string()))?;
                if d > MAX_DELAY {
                    return Err(refuse(format!("longer than {}s", MAX_DELAY.as_secs())));
                }
                let ns = duration_ns(d);
                if key == "delay" {
                    self.delay_ns = ns
                } else {
                    self.jitter_ns = ns
                }
            }
            "loss" | "duplicate" | "reorder" | "corrupt" => {
                let share = parse_percent(text).map_err(refuse)?;
                match key {
                    "loss" => self.loss = share,
                    "duplicate" => self.duplicate = share,
                    "reorder" => self.reorder = share,
                    _ => self.corrupt = share,
                }
            }
            "rate" => {
                let bps = parse_bitrate(text).map_err(|e| refuse(e.to_string()))?;
                if bps < 8_000 {
                    return Err(refuse(
                        "a rate under 8 kbit/s cannot carry a packet a second".into(),
                    ));
                }
                if bps > MAX_RATE_BPS {
                    return Err(refuse(format!(
                        "faster than {} Gbit/s, which no emulated link here carries (it would \
                         limit nothing): leave the rate out for a link without one",
                        MAX_RATE_BPS / 1_000_000_000
                    )));
                }
                self.rate_bps = Some(bps);
            }
            "queue" => {
                let bytes = parse_bytes(text).map_err(|e| refuse(e.to_string()))?;
                if bytes < 1_600 {
                    return Err(refuse(
                        "a queue must hold at least one packet (1600 bytes)".into(),
                    ));
                }
                self.queue_bytes = Some(bytes);
            }
            _ => return Err(refuse(format!("not a link condition; one of: {}", KEYS.join(", ")))),
        }
        Ok(())
    }

    /// Checks what only the whole set can tell: reordering needs a delay to jump ahead of (as
    /// netem insists), and a queue belongs to a rate limit.
    pub fn check(&self) -> Result<(), ConditionError> {
        // A packet's delay is drawn from `delay ± jitter`: a jitter beyond the delay would
        // need negative delays (netem clips them to 0, which is no longer the spread asked).
        if self.jitter_ns > self.delay_ns {
            return Err(ConditionError {
                key: "jitter".into(),
                value: duration_text(self.jitter_ns),
                why: if self.delay_ns == 0 {
                    "jitter spreads a delay: give a delay too".into()
                } else {
                    format!(
                        "larger than the delay ({}): delays would be negative",
                        duration_text(self.delay_ns)
                    )
                },
            });
        }
        if self.reorder > 0.0 && self.delay_ns == 0 {
            return Err(ConditionError {
                key: "reorder".into(),
                value: percent(self.reorder),
                why: "reordering needs a delay for packets to jump ahead of".into(),
            });
        }
        if self.queue_bytes.is_some() && self.rate_bps.is_none() {
            return Err(ConditionError {
                key: "queue".into(),
                value: self.queue_bytes.map(|b| Bytes(b).to_string()).unwrap_or_default(),
                why: "a queue is the rate limit's: give a rate too".into(),
            });
        }
        Ok(())
    }
}

/// Nanoseconds in `d`, saturating.
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A share written as a percentage (`1%`, `0.5 %`, `1`) as a fraction of one.
fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.strip_suffix('%').unwrap_or(text).trim();
    let value: f64 = number.parse().map_err(|_| "expected a percentage such as 1%".to_string())?;
    if !value.is_finite() || !(0.0..=100.0).contains(&value) {
        return Err("a share must be between 0% and 100%".into());
    }
    Ok(value / 100.0)
}

/// A fraction as a percentage, as few digits as it needs.
fn percent(share: f64) -> String {
    let p = share * 100.0;
    let text = format!("{p:.4}");
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `value` in the largest of `units` (each `(size, name)`, largest first) it reaches, with as
/// few decimals as it needs (`20ms`, `1.5Gbit/s`, `64KiB`); the last unit when it reaches none.
fn shortest(value: u64, units: &[(u64, &str)]) -> String {
    let (size, unit) =
        units.iter().find(|(size, _)| value >= *size).copied().unwrap_or(units[units.len() - 1]);
    let text = format!("{:.3}", value as f64 / size as f64);
    format!("{}{unit}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// A duration in nanoseconds as the shortest plain text (`20ms`, `200us`, `1.5s`).
fn duration_text(ns: u64) -> String {
    shortest(ns, &[(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")])
}

/// A rate as the shortest plain text (`100Mbit/s`, `1.5Gbit/s`).
fn rate_text(bps: u64) -> String {
    shortest(bps, &[(1_000_000_000, "Gbit/s"), (1_000_000, "Mbit/s"), (1_000, "kbit/s")])
}

/// A size as the shortest plain text in binary units (`64KiB`, `1.5MiB`, `1600B`).
fn size_text(bytes: u64) -> String {
    shortest(bytes, &[(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B")])
}

impl fmt::Display for Conditions {
    /// `delay 20ms ±2ms, loss 1%, rate 100Mbit/s, queue 64KiB`, or `clear`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.delay_ns > 0 || self.jitter_ns > 0 {
            let mut d = format!("delay {}", duration_text(self.delay_ns));
            if self.jitter_ns > 0 {
                d.push_str(&format!(" ±{}", duration_text(self.jitter_ns)));
            }
            parts.push(d);
        }
        for (name, share) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
        ] {
            if share > 0.0 {
                parts.push(format!("{name} {}", percent(share)));
            }
        }
        if let Some(rate) = self.rate_bps {
            parts.push(format!("rate {}", rate_text(rate)));
        }
        if let Some(queue) = self.queue_bytes {
            parts.push(format!("queue {}", size_text(queue)));
        }
        if parts.is_empty() {
            return f.write_str("clear");
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(&str, &str)]) -> Result<Conditions, ConditionError> {
        let mut c = Conditions::default();
        for (k, v) in pairs {
            c.set(k, v)?;
        }
        c.check()?;
        Ok(c)
    }

    #[test]
    fn written_values_become_conditions_and_read_back() {
        let c = of(&[
            ("delay", "20ms"),
            ("jitter", "2ms"),
            ("loss", "1%"),
            ("duplicate", "0.5 %"),
            ("reorder", "25"),
            ("rate", "100Mbit"),
            ("queue", "64KiB"),
        ])
        .unwrap();
        assert_eq!(c.delay_ns, 20_000_000);
        assert_eq!(c.jitter_ns, 2_000_000);
        assert!((c.loss - 0.01).abs() < 1e-12);
        assert!((c.duplicate - 0.005).abs() < 1e-12);
        assert!((c.reorder - 0.25).abs() < 1e-12);
        assert_eq!(c.rate_bps, Some(100_000_000));
        assert_eq!(c.queue_bytes, Some(65_536));
        assert!(c.holds_packets());
        let shown = c.to_string();
        assert!(
            shown.starts_with("delay 20ms ±2ms, loss 1%, duplicate 0.5%, reorder 25%"),
            "{shown}"
        );
        assert_eq!(Conditions::default().to_string(), "clear");
        assert_eq!(of(&[("delay", "200us")]).unwrap().to_string(), "delay 200us");
    }

    #[test]
    fn what_netem_would_refuse_is_refused_with_its_key() {
        for (pairs, key) in [
            (vec![("delay", "-5ms")], "delay"),
            (vec![("loss", "101%")], "loss"),
            (vec![("loss", "-1%")], "loss"),
            (vec![("loss", "lots")], "loss"),
            (vec![("delay", "2h")], "delay"),
            (vec![("rate", "0")], "rate"),
            (vec![("queue", "10")], "queue"),
            (vec![("reorder", "10%")], "reorder"),
            (vec![("rate", "1M"), ("queue", "1M"), ("bandwidth", "1M")], "bandwidth"),
            (vec![("queue", "1M")], "queue"),
            (vec![("jitter", "2ms")], "jitter"),
            (vec![("delay", "5ms"), ("jitter", "6ms")], "jitter"),
            (vec![("rate", "100Tbit")], "rate"),
        ] {
            let e = of(&pairs).unwrap_err();
            assert_eq!(e.key, key, "{pairs:?}: {e}");
        }
        // A rate alone holds nothing back: a rate limiter does it.
        assert!(!of(&[("rate", "10M"), ("loss", "1%")]).unwrap().holds_packets());
    }
}
