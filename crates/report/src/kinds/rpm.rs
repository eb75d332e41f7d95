//! How responsiveness runs read in every format: one line per interval of each leg (load,
//! goodput, loaded latency, RPM, stability), then idle latency, each leg's RPM, throughput and
//! loaded latency, the grade and whether working conditions were reached, as networkQuality
//! and Cloudflare's client show them.

use std::io::{self, Write};

use wirespeed_model::kinds::rpm::{RpmInterval, RpmLeg, RpmReport, RpmSpec};
use wirespeed_model::Meta;

use super::{KindView, LiveSample, QuickLine};
use crate::csv::{opt, record};
use crate::text::Style;
use crate::units::{nanos, rate};

/// "Responsiveness (RPM), download then upload, up to 16 connections a direction, 20 s a leg".
pub(crate) fn describe(spec: &RpmSpec) -> String {
    let legs = match spec.mode {
        wirespeed_model::kinds::rpm::RpmMode::Sequential => "download then upload",
        wirespeed_model::kinds::rpm::RpmMode::Parallel => "download and upload at once",
        wirespeed_model::kinds::rpm::RpmMode::Download => "download",
        wirespeed_model::kinds::rpm::RpmMode::Upload => "upload",
    };
    format!(
        "Responsiveness (RPM) over HTTP/2, {legs}, up to {} connections a direction, {} s a leg at most",
        spec.max_connections,
        spec.leg_time_ns as f64 / 1e9
    )
}

fn rpm_text(rpm: Option<f64>) -> String {
    rpm.map_or("-".into(), |r| format!("{r:.0}"))
}

/// The interval table's header.
pub(crate) fn header() -> String {
    format!(
        "{:<9}{:>10}{:>6}{:>14}{:>12}{:>9}  stable",
        "Leg", "end", "conns", "goodput", "loaded p50", "RPM"
    )
}

/// One interval line.
pub(crate) fn row(iv: &RpmInterval) -> String {
    let stable = match (iv.goodput_stable, iv.rpm_stable) {
        (true, true) => "goodput, RPM",
        (true, false) => "goodput",
        _ => "-",
    };
    format!(
        "{:<9}{:>10}{:>6}{:>14}{:>12}{:>9}  {stable}",
        iv.leg.name(),
        format!("{:.2} s", iv.end_ns as f64 / 1e9),
        iv.connections,
        rate(iv.goodput_bps),
        iv.loaded_p50_ns.map_or("-".into(), |v| nanos(v as f64)),
        rpm_text(iv.rpm),
    )
}

fn leg_line(leg: &RpmLeg) -> String {
    let throughput = match leg.direction {
        wirespeed_model::kinds::rpm::RpmDirection::Both => {
            format!("down {}, up {}", rate(leg.download_bps), rate(leg.upload_bps))
        }
        _ => rate(leg.goodput_bps),
    };
    let spread = leg.rpm_spread.map_or(String::new(), |s| format!(" ±{:.1} %", s * 100.0));
    format!(
        "{:<9} {} RPM{spread} ({:?} confidence{}), {throughput}, loaded latency {} (whole leg p50 {}, p90 {})",
        leg.direction.name(),
        rpm_text(leg.rpm),
        leg.confidence,
        if leg.working_conditions { "" } else { ", working conditions not reached" },
        nanos(leg.times.self_ns),
        nanos(leg.loaded.p50_ns as f64),
        nanos(leg.loaded.p90_ns as f64),
    )
}

/// The summary block.
pub(crate) fn summary(r: &RpmReport, out: &mut dyn Write) -> io::Result<()> {
    let s = &r.summary;
    writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -")?;
    writeln!(
        out,
        "idle latency p50 {} (TCP handshake, {} probes), idle RPM {}",
        nanos(s.idle.p50_ns as f64),
        s.idle.count,
        rpm_text(s.idle_rpm)
    )?;
    for leg in &s.legs {
        writeln!(out, "{}", leg_line(leg))?;
    }
    writeln!(
        out,
        "Responsiveness: {} ({} RPM); bufferbloat grade {} (+{} under load)",
        s.rating,
        rpm_text(s.rpm),
        s.grade,
        nanos(s.added_latency_ns as f64)
    )?;
    if !s.working_conditions {
        writeln!(out, "working conditions were not reached: the figures are the last interval's")?;
    }
    Ok(())
}

/// CSV columns.
pub(crate) fn csv_columns() -> String {
    "row,leg,index,end_s,connections,download_bytes,upload_bytes,goodput_bps,self_probes,\
     foreign_probes,loaded_p50_ns,rpm,goodput_stable,rpm_stable"
        .into()
}

/// One CSV row per interval.
pub(crate) fn csv_interval(iv: &RpmInterval) -> String {
    record([
        "interval".to_string(),
        iv.leg.name().into(),
        iv.index.to_string(),
        format!("{:.3}", iv.end_ns as f64 / 1e9),
        iv.connections.to_string(),
        iv.download_bytes.to_string(),
        iv.upload_bytes.to_string(),
        format!("{:.0}", iv.goodput_bps),
        iv.self_probes.to_string(),
        iv.foreign_probes.to_string(),
        opt(iv.loaded_p50_ns),
        opt(iv.rpm.map(|r| format!("{r:.1}"))),
        iv.goodput_stable.to_string(),
        iv.rpm_stable.to_string(),
    ])
}

/// One CSV summary row per leg: the interval columns filled with the leg's figures.
pub(crate) fn csv_summary(r: &RpmReport) -> Vec<String> {
    r.summary
        .legs
        .iter()
        .map(|leg| {
            record([
                "summary".to_string(),
                leg.direction.name().into(),
                String::new(),
                format!("{:.3}", leg.duration_ns as f64 / 1e9),
                leg.connections.to_string(),
                String::new(),
                String::new(),
                format!("{:.0}", leg.goodput_bps),
                leg.loaded.count.to_string(),
                leg.foreign.count.to_string(),
                leg.loaded.p50_ns.to_string(),
                opt(leg.rpm.map(|r| format!("{r:.1}"))),
                leg.working_conditions.to_string(),
                leg.working_conditions.to_string(),
            ])
        })
        .collect()
}

/// How a responsiveness run is shown.
pub(crate) struct RpmView(pub(crate) RpmSpec);

impl KindView for RpmView {
    type Report = RpmReport;

    fn describe(&self) -> String {
        describe(&self.0)
    }

    fn text_start(&mut self, _: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&header()))
    }

    fn text_step(&mut self, iv: &RpmInterval, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", row(iv))
    }

    fn text_end(&mut self, r: &RpmReport, _: &Style, out: &mut dyn Write) -> io::Result<()> {
        summary(r, out)
    }

    fn csv_columns(&self) -> String {
        csv_columns()
    }

    fn csv_rows(&self, iv: &RpmInterval) -> Vec<String> {
        vec![csv_interval(iv)]
    }

    fn csv_summary(&self, r: &RpmReport) -> Vec<String> {
        csv_summary(r)
    }

    fn live(&self, iv: &RpmInterval) -> Option<LiveSample> {
        Some(LiveSample {
            end_ns: iv.end_ns,
            value: iv.rpm.unwrap_or(0.0),
            current: format!("{} RPM", rpm_text(iv.rpm)),
            details: vec![
                format!("{} leg", iv.leg.name()),
                format!("goodput {}", rate(iv.goodput_bps)),
                format!("loaded p50 {}", iv.loaded_p50_ns.map_or("-".into(), |v| nanos(v as f64))),
                format!("{} connections", iv.connections),
            ],
        })
    }

    fn quick(&self, name: &str, r: &RpmReport) -> Vec<QuickLine> {
        let s = &r.summary;
        let legs: Vec<String> = s
            .legs
            .iter()
            .map(|l| format!("{} {} RPM", l.direction.name(), rpm_text(l.rpm)))
            .collect();
        vec![(
            name.to_string(),
            format!("{} RPM", rpm_text(s.rpm)),
            format!("grade {}", s.grade),
            format!(
                "idle {}, loaded +{}; {}{}",
                nanos(s.idle.p50_ns as f64),
                nanos(s.added_latency_ns as f64),
                legs.join(", "),
                if s.working_conditions { "" } else { "; working conditions not reached" }
            ),
        )]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use wirespeed_model::histogram::RttHistogram;
    use wirespeed_model::kinds::rpm::{
        Confidence, ProbeTimes, RpmDirection, RpmInterval, RpmLeg, RpmReport, RpmSpec, RpmSummary,
    };
    use wirespeed_model::{Meta, Report, ReportBody};

    use crate::Format;

    pub(crate) fn report() -> Report {
        let spec = RpmSpec::new("http://127.0.0.1:8080/.well-known/nq");
        let mut loaded = RttHistogram::default();
        let mut idle = RttHistogram::default();
        for i in 0..100u64 {
            loaded.record(40_000_000 + i * 100_000);
            idle.record(20_000_000 + i * 1000);
        }
        let mut intervals = Vec::new();
        let mut legs = Vec::new();
        for (n, leg) in [RpmDirection::Download, RpmDirection::Upload].into_iter().enumerate() {
            for i in 0..5u32 {
                intervals.push(RpmInterval {
                    leg,
                    index: i,
                    end_ns: (n as u64 * 5 + u64::from(i) + 1) * 1_000_000_000,
                    connections: i + 1,
                    download_bytes: if n == 0 { 12_500_000 } else { 0 },
                    upload_bytes: if n == 1 { 6_250_000 } else { 0 },
                    goodput_bps: if n == 0 { 100e6 } else { 50e6 },
                    self_probes: 20,
                    foreign_probes: 20,
                    loaded_p50_ns: Some(45_000_000),
                    rpm: (i > 0).then_some(1000.0 + f64::from(i)),
                    goodput_stable: i >= 3,
                    rpm_stable: i == 4 && n == 0,
                });
            }
            legs.push(RpmLeg {
                direction: leg,
                duration_ns: 5_000_000_000,
                working_conditions: n == 0,
                rpm: Some(1004.0 - n as f64 * 300.0),
                rpm_spread: Some(0.01 + n as f64 * 0.1),
                confidence: if n == 0 { Confidence::High } else { Confidence::Low },
                goodput_bps: if n == 0 { 100e6 } else { 50e6 },
                download_bps: if n == 0 { 100e6 } else { 0.0 },
                upload_bps: if n == 1 { 50e6 } else { 0.0 },
                times: ProbeTimes { tcp_ns: 20e6, tls_ns: 0.0, http_ns: 21e6, self_ns: 45e6 },
                loaded: loaded.stats(),
                foreign: idle.stats(),
                connections: 5,
                failures: 0,
                last_failure: None,
                histogram: loaded.buckets(),
            });
        }
        let summary = RpmSummary {
            large_url: "http://127.0.0.1:8080/nq/large".into(),
            small_url: "http://127.0.0.1:8080/nq/small".into(),
            upload_url: "http://127.0.0.1:8080/nq/upload".into(),
            protocol: "HTTP/2".into(),
            idle: idle.stats(),
            idle_rpm: Some(2900.0),
            legs,
            rpm: Some(704.0),
            working_conditions: false,
            added_latency_ns: 25_000_000,
            grade: "A".into(),
            rating: "Medium".into(),
        };
        Report {
            body: ReportBody::Rpm(RpmReport { spec, intervals, summary }),
            meta: Meta {
                version: "0.1.0".into(),
                remote_addr: Some("127.0.0.1:8080".into()),
                ..Default::default()
            },
        }
    }

    fn render(format: Format) -> String {
        crate::fixtures::render(&report(), format)
    }

    #[test]
    fn text() {
        insta::assert_snapshot!(render(Format::Text));
    }

    #[test]
    fn csv_rows_are_even() {
        let csv = render(Format::Csv);
        crate::fixtures::assert_even_rows(&csv);
        insta::assert_snapshot!(csv);
    }
}
