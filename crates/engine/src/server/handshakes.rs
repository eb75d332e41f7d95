//! The server's connections that have not yet said what they are. Their number is capped, in
//! all and per client address, and a new connection is never turned away for it: the one that
//! has been silent longest (of the same address, when that address is at its cap) is shed
//! instead. A client that connects and speaks at once is therefore always heard, however many
//! idle connections others hold open; before, 512 of them made the server drop every newcomer.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Connections mid-handshake at once, from all addresses.
pub(crate) const MAX_PENDING: usize = 512;
/// Connections mid-handshake at once from one address: well above the streams of the largest
/// test (iperf3's `-P 128` opens 128 data connections at once, each speaking at once).
pub(crate) const MAX_PENDING_PER_ADDRESS: usize = 256;

/// The table of pending connections, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Handshakes {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    /// By arrival order: the address and what sheds the connection.
    pending: BTreeMap<u64, (IpAddr, CancellationToken)>,
    per_address: HashMap<IpAddr, usize>,
}

/// A connection's place in the table; dropping it (the handshake ended) frees the place.
#[derive(Debug)]
pub(crate) struct Pending {
    handshakes: Arc<Handshakes>,
    arrival: u64,
    /// Cancelled when the connection is shed to make room.
    pub shed: CancellationToken,
}

impl Handshakes {
    /// Admits connection number `arrival` from `peer`; returns its place and the address of
    /// the connection shed to make room, if one was.
    pub(crate) fn admit(self: &Arc<Self>, arrival: u64, peer: IpAddr) -> (Pending, Option<IpAddr>) {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let shed = if t.per_address.get(&peer).copied().unwrap_or(0) >= MAX_PENDING_PER_ADDRESS {
            t.oldest(|ip| ip == peer)
        } else if t.pending.len() >= MAX_PENDING {
            t.oldest(|_| true)
        } else {
            None
        };
        let shed_from = shed.and_then(|k| t.remove(k)).map(|(ip, token)| {
            token.cancel();
            ip
        });
        let token = CancellationToken::new();
        t.pending.insert(arrival, (peer, token.clone()));
        *t.per_address.entry(peer).or_default() += 1;
        (Pending { handshakes: self.clone(), arrival, shed: token }, shed_from)
    }

    /// How many connections are pending now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).pending.len()
    }

    /// True when no connection is pending.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Table {
    fn oldest(&self, of: impl Fn(IpAddr) -> bool) -> Option<u64> {
        self.pending.iter().find(|(_, (ip, _))| of(*ip)).map(|(k, _)| *k)
    }

    fn remove(&mut self, arrival: u64) -> Option<(IpAddr, CancellationToken)> {
        let (ip, token) = self.pending.remove(&arrival)?;
        if let Some(n) = self.per_address.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&ip);
            }
        }
        Some((ip, token))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut t = self.handshakes.table.lock().unwrap_or_else(|p| p.into_inner());
        t.remove(self.arrival);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_full_table_sheds_its_oldest_and_admits_the_newcomer() {
        let h = Arc::new(Handshakes::default());
        let mut held = Vec::new();
        for k in 0..MAX_PENDING as u64 {
            let (p, shed) = h.admit(k, ip((k % 4) as u8 + 1));
            assert_eq!(shed, None);
            held.push(p);
        }
        let (_new, shed) = h.admit(MAX_PENDING as u64, ip(9));
        assert_eq!(shed, Some(ip(1)));
        assert!(held[0].shed.is_cancelled() && !held[1].shed.is_cancelled());
        assert_eq!(h.len(), MAX_PENDING);
    }

    #[test]
    fn one_address_at_its_cap_sheds_its_own_not_others() {
        let h = Arc::new(Handshakes::default());
        let (other, _) = h.admit(0, ip(2));
        let mut mine = Vec::new();
        for k in 1..=MAX_PENDING_PER_ADDRESS as u64 {
            mine.push(h.admit(k, ip(1)).0);
        }
        let (_, shed) = h.admit(10_000, ip(1));
        assert_eq!(shed, Some(ip(1)));
        assert!(mine[0].shed.is_cancelled() && !other.shed.is_cancelled());
    }

    #[test]
    fn a_finished_handshake_frees_its_place() {
        let h = Arc::new(Handshakes::default());
        let (p, _) = h.admit(0, ip(1));
        assert_eq!(h.len(), 1);
        drop(p);
        assert!(h.is_empty());
    }
}
