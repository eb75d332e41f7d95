//! The queries a DNS load test sends, each encoded once before the test starts (dnsperf
//! parses and encodes its text line again on every send), and the order each worker walks
//! them in.

use wirespeed_proto::dns::datafile::QueryLine;
use wirespeed_proto::dns::wire::{Edns, Query};

/// Every query of the datafile, encoded, with ID 0.
#[derive(Debug, Clone)]
pub struct QuerySet {
    queries: Vec<Query>,
}

impl QuerySet {
    /// Encodes the datafile's lines; `edns` adds the OPT record to each.
    pub fn from_lines(lines: &[QueryLine], edns: Option<Edns>) -> Result<Self, String> {
        let queries = lines
            .iter()
            .map(|l| {
                Query::encode(&l.name, l.qtype, true, edns)
                    .map_err(|e| format!("line {}: {e}", l.line))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if queries.is_empty() {
            return Err("no queries".into());
        }
        Ok(Self { queries })
    }

    /// Encodes (name, type) pairs.
    pub fn from_names(names: &[(&str, u16)], edns: Option<Edns>) -> Result<Self, String> {
        let lines: Vec<QueryLine> = names
            .iter()
            .enumerate()
            .map(|(i, (name, qtype))| QueryLine {
                name: (*name).into(),
                qtype: *qtype,
                line: i + 1,
            })
            .collect();
        Self::from_lines(&lines, edns)
    }

    /// Query `i`.
    pub fn get(&self, i: u32) -> &Query {
        &self.queries[i as usize]
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// True when there are none (never, once built).
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
}

/// The queries for the fixture's generated zone that `quick` and `wirespeed dns` without
/// `-d` send, as lines of a datafile: mostly names that exist (`hostN`), the apex's SOA and
/// MX, a NODATA (`www AAAA` exists; `www MX` does not) and a name that does not exist
/// (NXDOMAIN), as the reference query file has.
pub fn builtin_lines(hosts: u32) -> Vec<QueryLine> {
    let mut names: Vec<(String, u16)> = vec![
        ("www.example.test".into(), 1),
        ("example.test".into(), 6),
        ("example.test".into(), 15),
    ];
    names.extend((1..=hosts).map(|i| (format!("host{i}.example.test"), 1)));
    names.push(("nx1.example.test".into(), 1));
    names.push(("www.example.test".into(), 15));
    names
        .into_iter()
        .enumerate()
        .map(|(i, (name, qtype))| QueryLine { name, qtype, line: i + 1 })
        .collect()
}

/// Which queries worker `worker` of `workers` sends, and how many: every `workers`-th of the
/// file from `worker` on, round and round, so together they walk the file in order. `passes`
/// bounds the total (each query `passes` times over all workers); `None` never runs out.
#[derive(Debug, Clone)]
pub(super) struct Cursor {
    next: u64,
    step: u64,
    len: u64,
    left: Option<u64>,
}

impl Cursor {
    /// Worker `worker`'s share of `passes` runs through `len` queries.
    pub(super) fn new(worker: usize, workers: usize, len: usize, passes: Option<u64>) -> Self {
        let (w, n) = (worker as u64, workers.max(1) as u64);
        let left = passes.map(|p| {
            let total = p.saturating_mul(len as u64);
            total / n + u64::from(w < total % n)
        });
        Self { next: w, step: n, len: len.max(1) as u64, left }
    }

    /// The next query's index, or `None` when this worker's share is sent.
    pub(super) fn next(&mut self) -> Option<u32> {
        if let Some(left) = &mut self.left {
            *left = left.checked_sub(1)?;
        }
        let i = self.next % self.len;
        self.next += self.step;
        Some(i as u32)
    }

    /// True when nothing is left to send.
    pub(super) fn exhausted(&self) -> bool {
        self.left == Some(0)
    }

    /// True when the share has an end (a number of passes).
    pub(super) fn bounded(&self) -> bool {
        self.left.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_share_the_passes_exactly() {
        let mut sent = vec![0u32; 5];
        for w in 0..3 {
            let mut c = Cursor::new(w, 3, 5, Some(2));
            while let Some(i) = c.next() {
                sent[i as usize] += 1;
            }
            assert!(c.exhausted());
        }
        assert_eq!(sent, vec![2; 5]);
        let mut endless = Cursor::new(1, 2, 3, None);
        let first: Vec<u32> = (0..4).filter_map(|_| endless.next()).collect();
        assert_eq!(first, vec![1, 0, 2, 1]);
    }

    #[test]
    fn the_builtin_queries_encode() {
        let set = QuerySet::from_lines(&builtin_lines(1000), None).unwrap();
        assert_eq!(set.len(), 1005);
    }
}
