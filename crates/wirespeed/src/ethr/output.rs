//! What ethr's client prints, read back: its per-second lines (bits/s, packets/s or
//! connections/s, with `-ncs` one sum per second), its latency rows (one per batch of round
//! trips: average, minimum, seven percentiles, maximum) and its ping lines (one per probe).
//! Its standard output is read rather than its `-o` log: the log is written by a goroutine that
//! may not flush its last lines before the program ends, and it swaps the latency columns (the
//! maximum goes where the 50th percentile belongs).

use std::time::Duration;

use anyhow::{bail, Result};

/// One per-second line: its second (`003-004 sec` is 3) and its figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Second {
    /// The second it covers, from 0.
    pub index: u32,
    /// Bits per second (bandwidth and packets/s tests).
    pub bits_per_second: Option<f64>,
    /// Datagrams per second (UDP).
    pub packets_per_second: Option<f64>,
    /// Connections per second (connections/s test).
    pub connections_per_second: Option<f64>,
}

/// One latency row: a batch of round trips' statistics, in ethr's column order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Batch {
    pub avg: Duration,
    pub min: Duration,
    pub p50: Duration,
    pub p90: Duration,
    pub p95: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub p9999: Duration,
    pub max: Duration,
}

/// One ping probe after the warm-up: its time, or why it failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Probe {
    Reply(Duration),
    Failed(String),
}

/// Everything one run printed that is a figure.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Printed {
    pub seconds: Vec<Second>,
    pub batches: Vec<Batch>,
    pub probes: Vec<Probe>,
    /// Its last line that is not a figure: what to show when it printed none.
    pub last_words: String,
}

/// Reads ethr's standard output.
pub(crate) fn parse(text: &str) -> Printed {
    let mut out = Printed::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('-') {
            continue;
        }
        if let Some(s) = second(line) {
            out.seconds.push(s);
        } else if let Some(b) = batch(line) {
            out.batches.push(b);
        } else if let Some(p) = probe(line) {
            out.probes.extend(p);
        } else {
            out.last_words = line.to_string();
        }
    }
    out
}

/// `[  SUM]     TCP      003-004 sec   15.49G`, `[  SUM]  UDP  000-001 sec  50.77M  6.35M`
/// (bandwidth, with `-ncs`), `  UDP      000-001 sec   50.77M    6.35M` (packets/s) or
/// `  TCP      000-001 sec    53.63K` (connections/s).
fn second(line: &str) -> Option<Second> {
    let rest = match line.strip_prefix('[') {
        Some(r) => r.split_once(']')?.1,
        None => line,
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [protocol, span, "sec", figures @ ..] = words.as_slice() else { return None };
    if !matches!(*protocol, "TCP" | "UDP") {
        return None;
    }
    let index = span.split_once('-')?.0.parse().ok()?;
    let numbers: Vec<f64> = figures.iter().map(|f| number(f)).collect::<Option<_>>()?;
    let bandwidth = line.starts_with('[');
    let s = match (numbers.as_slice(), *protocol) {
        // A bandwidth line on TCP, or a connections/s line.
        ([n], "TCP") if bandwidth => {
            Second { index, bits_per_second: Some(*n), ..Second::none(index) }
        }
        ([n], "TCP") => Second { index, connections_per_second: Some(*n), ..Second::none(index) },
        ([bits, packets], "UDP") => Second {
            index,
            bits_per_second: Some(*bits),
            packets_per_second: Some(*packets),
            connections_per_second: None,
        },
        _ => return None,
    };
    Some(s)
}

impl Second {
    fn none(index: u32) -> Self {
        Second {
            index,
            bits_per_second: None,
            packets_per_second: None,
            connections_per_second: None,
        }
    }
}

/// A row of nine durations (`120.508us 82.948us … 544.289us`).
fn batch(line: &str) -> Option<Batch> {
    let d: Vec<Duration> = line.split_whitespace().map(duration).collect::<Option<_>>()?;
    let [avg, min, p50, p90, p95, p99, p999, p9999, max] = d.as_slice().try_into().ok()?;
    Some(Batch { avg, min, p50, p90, p95, p99, p999, p9999, max })
}

/// `[icmp] Ping to 10.0.0.2: 577.924us`, `[tcp] Connection from [a]:p to [b]:80: 1.004ms`, or
/// the same with a failure's words in place of the time; a warm-up probe (`[warmup]`) is
/// `Some(None)`, a line that is not a probe `None`.
fn probe(line: &str) -> Option<Option<Probe>> {
    let rest = line.strip_prefix("[icmp] ").or_else(|| line.strip_prefix("[tcp] "))?;
    if rest.starts_with("[warmup]") {
        return Some(None);
    }
    if !(rest.starts_with("Ping to ") || rest.starts_with("Connection ")) {
        return None;
    }
    let (_, said) = rest.rsplit_once(": ")?;
    Some(Some(match duration(said) {
        Some(d) => Probe::Reply(d),
        None => Probe::Failed(rest.to_string()),
    }))
}

/// ethr's numbers: `15.49G`, `6.35M`, `53.63K`, `812` (powers of 1000).
fn number(text: &str) -> Option<f64> {
    let (digits, scale) = match text.chars().last()? {
        'K' => (&text[..text.len() - 1], 1e3),
        'M' => (&text[..text.len() - 1], 1e6),
        'G' => (&text[..text.len() - 1], 1e9),
        'T' => (&text[..text.len() - 1], 1e12),
        _ => (text, 1.0),
    };
    let v: f64 = digits.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * scale)
}

/// ethr's durations: `812ns`, `82.948us`, `1.004ms`, `1.500s`.
fn duration(text: &str) -> Option<Duration> {
    let (digits, ns) = if let Some(d) = text.strip_suffix("ns") {
        (d, 1.0)
    } else if let Some(d) = text.strip_suffix("us") {
        (d, 1e3)
    } else if let Some(d) = text.strip_suffix("ms") {
        (d, 1e6)
    } else if let Some(d) = text.strip_suffix('s') {
        (d, 1e9)
    } else {
        return None;
    };
    let v: f64 = digits.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| Duration::from_nanos((v * ns).round() as u64))
}

/// The figures of a run, or why there are none: ethr says what went wrong on its standard
/// output and still exits 0.
pub(crate) fn require(printed: &Printed, what: &str) -> Result<()> {
    let any =
        !printed.seconds.is_empty() || !printed.batches.is_empty() || !printed.probes.is_empty();
    if !any {
        let said = if printed.last_words.is_empty() { "nothing" } else { &printed.last_words };
        bail!("ethr printed no {what}: {said}");
    }
    // Against a port with no `ethr -s` behind it, ethr prints a zero every second and exits 0.
    let counted = |s: &Second| {
        [s.bits_per_second, s.packets_per_second, s.connections_per_second]
            .iter()
            .any(|v| v.is_some_and(|v| v > 0.0))
    };
    if !printed.seconds.is_empty() && !printed.seconds.iter().any(counted) {
        bail!("ethr counted nothing in any second: is an `ethr -s` listening there?");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as ethr 1.0 prints them (its clientui.go formats), with -ncs.
    const BANDWIDTH: &str = "Using destination: 10.77.0.2, ip: 10.77.0.2, port: 8888
[  SUM]     TCP      000-001 sec   15.49G
[  SUM]     TCP      001-002 sec   18.59G
Ethr done, duration: 2s.
";
    const PPS: &str = "- - - - - - - - - - - - - - - - - - - - - - -
Protocol    Interval      Bits/s    Pkts/s
  UDP      000-001 sec   50.77M     6.35M
  UDP      001-002 sec   52.93M     6.62M
";
    const CPS: &str = "Protocol    Interval      Conn/s
  TCP      000-001 sec    53.63K
  TCP      001-002 sec       812
";
    const LATENCY: &str = "Running latency test: 1000, 1
-----------------------------------------------------------------------------------------
      Avg       Min       50%       90%       95%       99%     99.9%    99.99%       Max
120.508us  82.948us 112.010us 149.992us 175.457us 243.291us 427.164us 427.164us 544.289us
167.457us  82.565us 105.179us 399.238us 615.316us 728.474us 778.789us 778.789us 795.993us
";
    const PING: &str = "[tcp] [warmup] Connection from [10.0.0.1]:6337 to [10.0.0.2]:80: 1.004ms
[tcp] Connection from [10.0.0.1]:61945 to [10.0.0.2]:80: 792.947us
[tcp] Connection to [10.0.0.2]:80: Timed out (dial tcp: i/o timeout)
[icmp] Ping to 10.0.0.2: 610.218us
";

    #[test]
    fn per_second_lines_are_read_by_test() {
        let b = parse(BANDWIDTH);
        assert_eq!(b.seconds.len(), 2);
        assert_eq!(b.seconds[1].index, 1);
        assert_eq!(b.seconds[1].bits_per_second, Some(18.59e9));
        assert_eq!(b.last_words, "Ethr done, duration: 2s.");
        let p = parse(PPS);
        assert_eq!(p.seconds[0].packets_per_second, Some(6.35e6));
        assert_eq!(p.seconds[0].bits_per_second, Some(50.77e6));
        let c = parse(CPS);
        assert_eq!(c.seconds[0].connections_per_second, Some(53_630.0));
        assert_eq!(c.seconds[1].connections_per_second, Some(812.0));
        assert_eq!(c.seconds[1].bits_per_second, None);
    }

    #[test]
    fn latency_rows_keep_their_columns() {
        let l = parse(LATENCY);
        assert_eq!(l.batches.len(), 2);
        assert_eq!(l.batches[0].p50, Duration::from_nanos(112_010));
        assert_eq!(l.batches[0].max, Duration::from_nanos(544_289));
        assert_eq!(l.batches[1].p99, Duration::from_nanos(728_474));
        assert!(l.seconds.is_empty());
    }

    #[test]
    fn probes_leave_out_the_warm_up_and_keep_failures() {
        let p = parse(PING);
        assert_eq!(
            p.probes,
            vec![
                Probe::Reply(Duration::from_nanos(792_947)),
                Probe::Failed(
                    "Connection to [10.0.0.2]:80: Timed out (dial tcp: i/o timeout)".into()
                ),
                Probe::Reply(Duration::from_nanos(610_218)),
            ]
        );
    }

    #[test]
    fn a_run_that_printed_no_figure_says_what_it_printed() {
        let p = parse("Using destination: 127.0.0.1, ip: 127.0.0.1, port: 9\nError dialing the latency connection: connection refused\n");
        let e = require(&p, "round trips").unwrap_err().to_string();
        assert!(e.contains("connection refused"), "{e}");
        let zeros = parse("Protocol    Interval      Conn/s\n  TCP      000-001 sec         0\n");
        let e = require(&zeros, "per-second lines").unwrap_err().to_string();
        assert!(e.contains("counted nothing"), "{e}");
    }
}
