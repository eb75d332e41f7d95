//! A distribution's statistics as every kind that measures one shows them: two text lines
//! (names and values) and eleven CSV cells.

use std::io::{self, Write};

use wirespeed_model::histogram::LatencyStats;

use crate::units::nanos;

/// Two lines: the names of the statistics and their values .
pub(crate) fn stats_table(st: &LatencyStats, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "avg", "min", "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max", "stddev"
    )?;
    let n = |v: u64| nanos(v as f64);
    writeln!(
        out,
        "{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        nanos(st.mean_ns),
        n(st.min_ns),
        n(st.p50_ns),
        n(st.p90_ns),
        n(st.p95_ns),
        n(st.p99_ns),
        n(st.p999_ns),
        n(st.p9999_ns),
        n(st.max_ns),
        nanos(st.stddev_ns)
    )
}

/// The columns [`stats_cells`] fills.
pub(crate) const STATS_COLUMNS: &str =
    "count,min_ns,mean_ns,p50_ns,p90_ns,p95_ns,p99_ns,p999_ns,p9999_ns,max_ns,stddev_ns";

/// A statistics block as CSV cells.
pub(crate) fn stats_cells(s: &LatencyStats) -> [String; 11] {
    [
        s.count.to_string(),
        s.min_ns.to_string(),
        format!("{:.0}", s.mean_ns),
        s.p50_ns.to_string(),
        s.p90_ns.to_string(),
        s.p95_ns.to_string(),
        s.p99_ns.to_string(),
        s.p999_ns.to_string(),
        s.p9999_ns.to_string(),
        s.max_ns.to_string(),
        format!("{:.0}", s.stddev_ns),
    ]
}
