//! ethr's printed figures as a wirespeed report of the same kind, so that a study puts ethr's
//! client and server beside wirespeed's row by row. Each report says in its notes what ethr
//! measured and what it did not: its client counts what it wrote (or, reversed, read), never
//! what arrived at the other end, so a TCP stream's received bytes are its written bytes (TCP
//! delivers them, short of what was still in flight at the end) and a UDP test has no receiver's
//! figures at all; its latency rows are batches of round trips, so the run's percentiles are the
//! medians of the batches' (its histogram is not printed); its connections/s test times no
//! connect.

use std::time::{Duration, SystemTime};

use wirespeed_model::histogram::{LatencyStats, RttHistogram};
use wirespeed_model::kinds::bandwidth::{
    BandwidthInterval, BandwidthReport, BandwidthSpec, BandwidthSummary, CpuUsage, Direction, End,
    Figures, Flow, FlowFigures, FlowSummary,
};
use wirespeed_model::kinds::cps::{CpsInterval, CpsReport, CpsSpec, CpsSummary};
use wirespeed_model::kinds::latency::{
    LatencyInterval, LatencyReport, LatencySpec, LatencySummary,
};
use wirespeed_model::kinds::ping::{
    PingMode, PingProbe, PingReport, PingSpec, PingSummary, ProbeOutcome,
};
use wirespeed_model::rules::Protocol;
use wirespeed_model::{Report, ReportBody};

use super::output::{Batch, Printed, Probe, Second};
use super::{Ask, Test};

const SECOND_NS: u64 = 1_000_000_000;

/// The report of one ethr run: what it was asked, what it printed, when it began, and the CPU
/// its client used (user and system, ns).
pub(crate) fn of(ask: &Ask, printed: &Printed, began: SystemTime, cpu: (u64, u64)) -> Report {
    let mut meta = wirespeed_engine::run_meta(env!("CARGO_PKG_VERSION"), began, None);
    meta.notes.push(format!("load made by ethr's client ({})", ask.command()));
    let body = match &ask.test {
        Test::Bandwidth { reverse, length, bitrate_bps } => {
            let (report, note) = bandwidth(ask, printed, *reverse, *length, *bitrate_bps, cpu);
            meta.notes.push(note);
            ReportBody::Bandwidth(report)
        }
        Test::Packets => {
            meta.notes.push(
                "ethr's client counts the one-byte datagrams it sent; what arrived is counted on \
                 its server only: the packet rate here is the rate sent, and nothing is received"
                    .into(),
            );
            ReportBody::Bandwidth(packets(ask, printed, cpu))
        }
        Test::Connections => {
            meta.notes.push(
                "ethr's connections/s test times no connect: connect percentiles are absent".into(),
            );
            ReportBody::Cps(connections(ask, printed))
        }
        Test::Latency { length } => {
            meta.notes.push(format!(
                "ethr prints one row per batch of {} round trips: each percentile here is the \
                 median of the batches' (min and max over all), with no histogram",
                super::BATCH
            ));
            ReportBody::Latency(latency(ask, printed, *length))
        }
        Test::Ping { port } => ReportBody::Ping(ping(ask, printed, *port)),
    };
    Report { body, meta }
}

/// The per-second lines the summary counts: after `omit`.
fn measured<'a>(ask: &Ask, printed: &'a Printed) -> impl Iterator<Item = &'a Second> + Clone {
    let omit = ask.omit.as_secs();
    printed.seconds.iter().filter(move |s| u64::from(s.index) >= omit)
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / f64::from(n)
    }
}

fn interval_span(s: &Second) -> (u64, u64) {
    let start = u64::from(s.index) * SECOND_NS;
    (start, start + SECOND_NS)
}

fn cpu_usage(cpu: (u64, u64), wall_ns: u64) -> CpuUsage {
    CpuUsage::from_nanos(cpu.0, cpu.1, wall_ns.max(1))
}

/// One interval per printed second of a bandwidth or packets/s run, as ethr's client counted it.
fn client_intervals(
    ask: &Ask,
    printed: &Printed,
    flow: Flow,
    figures: impl Fn(&Second) -> Figures,
) -> Vec<BandwidthInterval> {
    printed
        .seconds
        .iter()
        .map(|s| {
            let (start_ns, end_ns) = interval_span(s);
            BandwidthInterval {
                index: s.index,
                start_ns,
                end_ns,
                omitted: u64::from(s.index) < ask.omit.as_secs(),
                measured_at: Some(End::Client),
                flows: vec![FlowFigures { flow, total: figures(s), streams: Vec::new() }],
                probe_rtt: None,
                probe_udp_rtt: None,
            }
        })
        .collect()
}

/// The summary of a run whose measured seconds (after `omit`) came to `total`.
fn client_summary(
    ask: &Ask,
    flow: Flow,
    seconds: u64,
    total: Figures,
    cpu: (u64, u64),
) -> BandwidthSummary {
    BandwidthSummary {
        primary: FlowSummary {
            flow,
            sender: flow.sender(),
            duration_ns: seconds * SECOND_NS,
            total,
            rtt_range_ns: None,
            cwnd_max_bytes: None,
            streams: Vec::new(),
        },
        reverse: None,
        client_cpu: cpu_usage(cpu, ask.duration.as_nanos() as u64),
        server_cpu: None,
        latency: None,
        udp_latency: None,
    }
}

/// A bandwidth spec of what ethr was asked.
fn client_spec(ask: &Ask, protocol: Protocol) -> BandwidthSpec {
    let mut spec = BandwidthSpec::new(ask.target.clone(), protocol);
    spec.parallel = ask.parallel;
    spec.duration_ns = ask.duration.as_nanos() as u64;
    spec.omit_ns = ask.omit.as_nanos() as u64;
    spec
}

fn bandwidth(
    ask: &Ask,
    printed: &Printed,
    reverse: bool,
    length: u32,
    bitrate_bps: u64,
    cpu: (u64, u64),
) -> (BandwidthReport, String) {
    let flow = if reverse { Flow::Download } else { Flow::Upload };
    // The client's count, on whichever side of the stream it is.
    let figures = |bps: f64, seconds: f64| {
        let bytes = (bps * seconds / 8.0).round() as u64;
        Figures {
            sent_bytes: bytes,
            received_bytes: bytes,
            sent_bps: bps,
            received_bps: bps,
            ..Default::default()
        }
    };
    let intervals =
        client_intervals(ask, printed, flow, |s| figures(s.bits_per_second.unwrap_or(0.0), 1.0));
    let seconds = measured(ask, printed).count() as u64;
    let bps = mean(measured(ask, printed).filter_map(|s| s.bits_per_second));
    let mut spec = client_spec(ask, Protocol::Tcp);
    spec.direction = if reverse { Direction::Download } else { Direction::Upload };
    spec.length = length;
    spec.bitrate_bps = bitrate_bps;
    let summary = client_summary(ask, flow, seconds, figures(bps, seconds as f64), cpu);
    let note = format!(
        "ethr's client counts the bytes it {}: TCP delivers what was written, so sent and \
         received are both that count (short of what was in flight at the end); its rates are \
         the means of its per-second lines",
        if reverse { "read" } else { "wrote" }
    );
    (BandwidthReport { spec, intervals, summary }, note)
}

fn packets(ask: &Ask, printed: &Printed, cpu: (u64, u64)) -> BandwidthReport {
    let figures = |bps: f64, pps: f64, seconds: f64| Figures {
        sent_bytes: (bps * seconds / 8.0).round() as u64,
        sent_bps: bps,
        sent_packets: Some((pps * seconds).round() as u64),
        sent_pps: Some(pps),
        ..Default::default()
    };
    let intervals = client_intervals(ask, printed, Flow::Upload, |s| {
        figures(s.bits_per_second.unwrap_or(0.0), s.packets_per_second.unwrap_or(0.0), 1.0)
    });
    let seconds = measured(ask, printed).count() as u64;
    let bps = mean(measured(ask, printed).filter_map(|s| s.bits_per_second));
    let pps = mean(measured(ask, printed).filter_map(|s| s.packets_per_second));
    let mut spec = client_spec(ask, Protocol::Udp);
    // ethr's packets/s test always sends one byte, unpaced.
    spec.length = 1;
    spec.bitrate_bps = 0;
    spec.per_packet = true;
    let summary =
        client_summary(ask, Flow::Upload, seconds, figures(bps, pps, seconds as f64), cpu);
    BandwidthReport { spec, intervals, summary }
}

fn connections(ask: &Ask, printed: &Printed) -> CpsReport {
    let intervals = printed
        .seconds
        .iter()
        .map(|s| {
            let (start_ns, end_ns) = interval_span(s);
            let rate = s.connections_per_second.unwrap_or(0.0);
            CpsInterval {
                index: s.index,
                start_ns,
                end_ns,
                omitted: u64::from(s.index) < ask.omit.as_secs(),
                connections_per_second: rate,
                attempts: rate.round() as u64,
                connected: rate.round() as u64,
                failures: Default::default(),
                connect: LatencyStats::default(),
            }
        })
        .collect();
    let seconds = measured(ask, printed).count() as u64;
    let connected: u64 = measured(ask, printed)
        .filter_map(|s| s.connections_per_second)
        .map(|r| r.round() as u64)
        .sum();
    let mut spec = CpsSpec::new(ask.target.clone());
    spec.parallel = ask.parallel;
    spec.threads = ask.parallel;
    spec.duration_ns = ask.duration.as_nanos() as u64;
    spec.warmup_ns = ask.omit.as_nanos() as u64;
    // ethr closes each connection with SO_LINGER 0: a reset, as `--rst` does.
    spec.rst = true;
    let summary = CpsSummary {
        duration_ns: seconds * SECOND_NS,
        attempts: connected,
        connected,
        failures: Default::default(),
        connections_per_second: if seconds == 0 { 0.0 } else { connected as f64 / seconds as f64 },
        server_accepted: None,
        connect: LatencyStats::default(),
        histogram: Vec::new(),
    };
    CpsReport { spec, intervals, summary }
}

/// The median of the batches' values of one column.
fn median_of(batches: &[&Batch], column: fn(&Batch) -> Duration) -> u64 {
    let mut v: Vec<u64> = batches.iter().map(|b| column(b).as_nanos() as u64).collect();
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

fn batch_stats(batches: &[&Batch]) -> LatencyStats {
    let count = batches.len() as u64 * super::BATCH;
    LatencyStats {
        count,
        min_ns: batches.iter().map(|b| b.min.as_nanos() as u64).min().unwrap_or(0),
        mean_ns: mean(batches.iter().map(|b| b.avg.as_nanos() as f64)),
        p50_ns: median_of(batches, |b| b.p50),
        p90_ns: median_of(batches, |b| b.p90),
        p95_ns: median_of(batches, |b| b.p95),
        p99_ns: median_of(batches, |b| b.p99),
        p999_ns: median_of(batches, |b| b.p999),
        p9999_ns: median_of(batches, |b| b.p9999),
        max_ns: batches.iter().map(|b| b.max.as_nanos() as u64).max().unwrap_or(0),
        stddev_ns: 0.0,
    }
}

fn latency(ask: &Ask, printed: &Printed, length: u32) -> LatencyReport {
    // ethr runs a batch, then waits for the next second: a row per second.
    let all: Vec<&Batch> = printed.batches.iter().collect();
    let omit = ask.omit.as_secs() as usize;
    let intervals = all
        .iter()
        .enumerate()
        .map(|(i, b)| LatencyInterval {
            index: i as u32,
            start_ns: i as u64 * SECOND_NS,
            end_ns: (i as u64 + 1) * SECOND_NS,
            omitted: i < omit,
            messages_per_second: super::BATCH as f64,
            lost: None,
            rtt: batch_stats(&[b]),
        })
        .collect();
    let kept: Vec<&Batch> = all.iter().skip(omit).copied().collect();
    let seconds = kept.len() as u64;
    let rtt = batch_stats(&kept);
    let mut spec = LatencySpec::new(ask.target.clone(), Protocol::Tcp);
    spec.length = length;
    spec.parallel = 1;
    spec.duration_ns = ask.duration.as_nanos() as u64;
    spec.warmup_ns = ask.omit.as_nanos() as u64;
    let summary = LatencySummary {
        duration_ns: seconds * SECOND_NS,
        sent: rtt.count,
        received: rtt.count,
        lost: None,
        messages_per_second: if seconds == 0 { 0.0 } else { rtt.count as f64 / seconds as f64 },
        rtt,
        histogram: Vec::new(),
    };
    LatencyReport { spec, intervals, summary }
}

fn ping(ask: &Ask, printed: &Printed, port: Option<u16>) -> PingReport {
    let mode = match port {
        Some(port) => PingMode::Tcp { port },
        None => PingMode::Icmp,
    };
    let gap_ns = ask.gap.as_nanos() as u64;
    let mut all = RttHistogram::default();
    let probes: Vec<PingProbe> = printed
        .probes
        .iter()
        .enumerate()
        .map(|(i, p)| PingProbe {
            seq: i as u64 + 1,
            // ethr sends one probe a gap after the last began (a gap after the warm-up's).
            sent_ns: (i as u64 + 1) * gap_ns,
            outcome: match p {
                Probe::Reply(d) => {
                    let ns = d.as_nanos() as u64;
                    all.record(ns);
                    ProbeOutcome::Reply { rtt_ns: ns, bytes: None, ttl: None, status: None }
                }
                // ethr says "Timed out" of a probe nothing answered.
                Probe::Failed(why) if why.contains("Timed out") => ProbeOutcome::Lost,
                Probe::Failed(why) => ProbeOutcome::Error { reason: why.clone() },
            },
        })
        .collect();
    let sent = probes.len() as u64;
    let received = all.len();
    let errors =
        probes.iter().filter(|p| matches!(p.outcome, ProbeOutcome::Error { .. })).count() as u64;
    let mut spec = PingSpec::new(ask.target.clone(), mode);
    spec.interval_ns = gap_ns;
    spec.deadline_ns = Some(ask.duration.as_nanos() as u64);
    let summary = PingSummary {
        address: ask.target.clone(),
        duration_ns: ask.duration.as_nanos() as u64,
        sent,
        received,
        errors,
        loss_ratio: if sent == 0 { 0.0 } else { (sent - received) as f64 / sent as f64 },
        rtt: all.stats(),
        histogram: all.buckets(),
    };
    PingReport { spec, probes, summary }
}

#[cfg(test)]
mod tests {
    use super::super::{ask_of, output};
    use super::*;

    fn ask(words: &str) -> Ask {
        ask_of(&words.split(' ').map(String::from).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn bandwidth_leaves_out_the_omitted_seconds_and_says_whose_count_it_is() {
        let a = ask("wirespeed peer --omit 1000ms -- ethr -c h -port 1 -t b -ncs -d 3000ms");
        let printed = output::parse(
            "[  SUM]     TCP      000-001 sec    1.00G\n[  SUM]     TCP      001-002 sec    3.00G\n[  SUM]     TCP      002-003 sec    5.00G\n",
        );
        let r = of(&a, &printed, SystemTime::UNIX_EPOCH, (0, 0));
        let ReportBody::Bandwidth(b) = &r.body else { panic!("not bandwidth") };
        assert_eq!(b.summary.primary.total.sent_bps, 4e9);
        assert_eq!(b.summary.primary.duration_ns, 2 * SECOND_NS);
        assert!(b.intervals[0].omitted && !b.intervals[1].omitted);
        assert!(r.meta.notes.iter().any(|n| n.contains("bytes it wrote")), "{:?}", r.meta.notes);
    }

    #[test]
    fn packets_are_the_rate_sent_and_nothing_received() {
        let a = ask("wirespeed peer -- ethr -c h -port 1 -t p -p udp -d 1000ms");
        let printed = output::parse("  UDP      000-001 sec   50.77M     6.35M\n");
        let r = of(&a, &printed, SystemTime::UNIX_EPOCH, (0, 0));
        let ReportBody::Bandwidth(b) = &r.body else { panic!("not bandwidth") };
        let total = &b.summary.primary.total;
        assert_eq!(
            (total.sent_pps, total.received_pps, total.received_packets),
            (Some(6.35e6), None, None)
        );
        // The headline is the rate sent: the only one ethr's client knows.
        assert_eq!(r.headline().value, 6.35e6);
    }

    #[test]
    fn latency_percentiles_are_the_medians_of_the_batches() {
        let a = ask("wirespeed peer -- ethr -c h -port 1 -t l -d 3000ms");
        let printed = output::parse(
            "10us 5us 10us 20us 30us 40us 50us 60us 70us\n20us 6us 30us 21us 31us 41us 51us 61us 90us\n30us 4us 20us 22us 32us 42us 52us 62us 80us\n",
        );
        let r = of(&a, &printed, SystemTime::UNIX_EPOCH, (0, 0));
        let ReportBody::Latency(l) = &r.body else { panic!("not latency") };
        let rtt = &l.summary.rtt;
        assert_eq!(
            (rtt.p50_ns, rtt.p99_ns, rtt.min_ns, rtt.max_ns),
            (20_000, 41_000, 4_000, 90_000)
        );
        assert_eq!((rtt.count, rtt.mean_ns), (3 * super::super::BATCH, 20_000.0));
        assert!(l.summary.histogram.is_empty());
    }
}
