//! Per-client budgets, so a public speed-test server cannot be turned into a free bandwidth
//! source (LibreSpeed issue #566: terabytes a day from a few ranges; the per-IP limit planned in
//! #257 never shipped). Each client — an IPv4 address, or an IPv6 /64, since one host has a
//! whole /64 to pick from — has a request bucket, a byte bucket (download and upload together)
//! and a cap on transfers at once. Time is passed in, so the buckets are tested without sleeping.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The budgets; 0 turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitConfig {
    /// Requests per minute per client (bursts up to a minute's worth).
    pub requests_per_minute: u32,
    /// Bytes per hour per client, both directions (bursts up to an hour's worth).
    pub bytes_per_hour: u64,
    /// Downloads and uploads in progress at once per client.
    pub streams: u32,
}

impl Default for LimitConfig {
    fn default() -> Self {
        Self { requests_per_minute: 600, bytes_per_hour: 100 << 30, streams: 16 }
    }
}

/// Why a request was refused, and when trying again can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The message sent back.
    pub why: String,
    /// Seconds until the budget allows it (the `Retry-After` header).
    pub retry_after_s: u64,
    /// The budget that ran out, as `wirespeed_web_budget_refusals_total` names it (one of
    /// `wirespeed_metrics::BUDGETS`).
    pub budget: &'static str,
}

/// A token bucket refilled continuously.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(capacity: f64, now: Instant) -> Self {
        Self { tokens: capacity, at: now }
    }

    /// Takes `n` if there are that many (after refilling at `per_sec` up to `capacity`);
    /// otherwise says how long until there would be.
    fn take(&mut self, n: f64, capacity: f64, per_sec: f64, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_sec).min(capacity);
        self.at = now;
        if n <= self.tokens {
            self.tokens -= n;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(((n.min(capacity) - self.tokens) / per_sec).max(1.0)))
        }
    }
}

#[derive(Debug)]
struct Client {
    requests: Bucket,
    bytes: Bucket,
    streams: u32,
    seen: Instant,
}

/// Every client's budgets.
#[derive(Debug)]
pub struct Limits {
    config: LimitConfig,
    clients: Mutex<HashMap<IpAddr, Client>>,
}

/// Most clients remembered; beyond it, idle ones (whose buckets would be full again) go.
const MAX_CLIENTS: usize = 100_000;

/// A transfer in progress; dropping it frees the client's slot.
#[derive(Debug)]
pub struct StreamSlot {
    limits: Arc<Limits>,
    key: IpAddr,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut clients = self.limits.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get_mut(&self.key) {
            c.streams = c.streams.saturating_sub(1);
        }
    }
}

/// The key a client is counted under: the address, or its /64.
pub fn key_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[8..].fill(0);
            IpAddr::from(o)
        }
        v4 => v4,
    }
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n => format!("{n} B"),
    }
}

impl Limits {
    /// Budgets as configured.
    pub fn new(config: LimitConfig) -> Arc<Self> {
        Arc::new(Self { config, clients: Mutex::new(HashMap::new()) })
    }

    fn with_client<T>(&self, ip: IpAddr, now: Instant, f: impl FnOnce(&mut Client) -> T) -> T {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.len() >= MAX_CLIENTS {
            let idle = Duration::from_secs(3600);
            clients.retain(|_, c| c.streams > 0 || now.saturating_duration_since(c.seen) < idle);
        }
        let client = clients.entry(key_of(ip)).or_insert_with(|| Client {
            requests: Bucket::full(f64::from(self.config.requests_per_minute), now),
            bytes: Bucket::full(self.config.bytes_per_hour as f64, now),
            streams: 0,
            seen: now,
        });
        client.seen = now;
        f(client)
    }

    /// Counts one request from `ip`.
    pub fn request(&self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let per_minute = self.config.requests_per_minute;
        if per_minute == 0 {
            return Ok(());
        }
        let cap = f64::from(per_minute);
        self.with_client(ip, now, |c| c.requests.take(1.0, cap, cap / 60.0, now)).map_err(|wait| {
            Refusal {
                why: format!("too many requests from {ip}: the limit is {per_minute} a minute"),
                retry_after_s: wait.as_secs(),
                budget: "requests",
            }
        })
    }

    /// Charges `bytes` of transfer to `ip`.
    pub fn charge(&self, ip: IpAddr, bytes: u64, now: Instant) -> Result<(), Refusal> {
        let per_hour = self.config.bytes_per_hour;
        if per_hour == 0 || bytes == 0 {
            return Ok(());
        }
        let cap = per_hour as f64;
        self.with_client(ip, now, |c| c.bytes.take(bytes as f64, cap, cap / 3600.0, now)).map_err(
            |wait| Refusal {
                why: format!(
                    "transfer budget used up for {ip}: the limit is {} an hour",
                    human_bytes(per_hour)
                ),
                retry_after_s: wait.as_secs(),
                budget: "bytes",
            },
        )
    }

    /// The configured budgets.
    pub fn config(&self) -> LimitConfig {
        self.config
    }

    /// The refusal for a transfer the budget shared by every server on the database cannot
    /// pay for, `wait_s` seconds before it could.
    pub fn shared_refusal(&self, ip: IpAddr, wait_s: f64) -> Refusal {
        Refusal {
            why: format!(
                "transfer budget used up for {ip}: the limit is {} an hour, shared by every server of this speed test",
                human_bytes(self.config.bytes_per_hour)
            ),
            retry_after_s: wait_s.ceil() as u64,
            budget: "shared_bytes",
        }
    }

    /// Starts a transfer for `ip`, charging `bytes` up front (a download's known size).
    pub fn stream(
        self: &Arc<Self>,
        ip: IpAddr,
        bytes: u64,
        now: Instant,
    ) -> Result<StreamSlot, Refusal> {
        let most = self.config.streams;
        let busy = self.with_client(ip, now, |c| {
            if most > 0 && c.streams >= most {
                return true;
            }
            c.streams += 1;
            false
        });
        if busy {
            return Err(Refusal {
                why: format!("too many transfers at once from {ip}: the limit is {most}"),
                retry_after_s: 1,
                budget: "streams",
            });
        }
        let slot = StreamSlot { limits: self.clone(), key: key_of(ip) };
        self.charge(ip, bytes, now)?;
        Ok(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn requests_refill_over_time_and_clients_are_apart() {
        let l = Limits::new(LimitConfig { requests_per_minute: 60, bytes_per_hour: 0, streams: 0 });
        let t0 = Instant::now();
        for _ in 0..60 {
            l.request(ip("192.0.2.1"), t0).unwrap();
        }
        let refused = l.request(ip("192.0.2.1"), t0).unwrap_err();
        assert!(refused.why.contains("limit is 60 a minute"), "{}", refused.why);
        assert_eq!(refused.retry_after_s, 1);
        l.request(ip("192.0.2.2"), t0).unwrap();
        l.request(ip("192.0.2.1"), t0 + Duration::from_millis(1100)).unwrap();
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        let l = Limits::new(LimitConfig { requests_per_minute: 1, bytes_per_hour: 0, streams: 0 });
        let t0 = Instant::now();
        l.request(ip("2001:db8:0:1::1"), t0).unwrap();
        assert!(l.request(ip("2001:db8:0:1::ffff"), t0).is_err());
        l.request(ip("2001:db8:0:2::1"), t0).unwrap();
    }

    #[test]
    fn bytes_and_streams_are_budgeted() {
        let l = Limits::new(LimitConfig {
            requests_per_minute: 0,
            bytes_per_hour: 3600 << 20,
            streams: 2,
        });
        let t0 = Instant::now();
        let a = l.stream(ip("192.0.2.1"), 1 << 30, t0).unwrap();
        let _b = l.stream(ip("192.0.2.1"), 1 << 30, t0).unwrap();
        let busy = l.stream(ip("192.0.2.1"), 0, t0).unwrap_err();
        assert!(busy.why.contains("transfers at once"), "{}", busy.why);
        drop(a);
        let over = l.stream(ip("192.0.2.1"), 2 << 30, t0).unwrap_err();
        assert!(over.why.contains("3.5 GiB an hour"), "{}", over.why);
        l.charge(ip("192.0.2.1"), (3600 - 2048) << 20, t0).unwrap();
        // 1 MiB a second comes back.
        assert!(l.charge(ip("192.0.2.1"), 2 << 20, t0 + Duration::from_secs(1)).is_err());
        l.charge(ip("192.0.2.1"), 2 << 20, t0 + Duration::from_secs(3)).unwrap();
    }
}
