//! Renderers: the only place numbers become text (and charts). Each output format implements [`Renderer`],
//! which consumes the same [`Event`] stream a live run produces; a saved [`Report`] is rendered
//! by replaying its events ([`Event::replay`]), so `show` prints exactly what the run printed.
//! Nothing here touches the network or the clock.

use std::io::{self, Write};

use wirespeed_model::{Event, Report};

pub mod bench;
pub mod charts;
pub mod comparison;
pub mod csv;
pub mod diagnosis;
pub mod digest;
pub mod history;
pub mod html;
pub mod json;
mod kinds;
pub mod live;
pub mod markdown;
pub mod openmetrics;
mod percentiles;
pub mod plot;
pub mod publish;
pub mod quick;
pub mod table;
pub mod text;
pub mod units;
pub mod vegeta;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human tables.
    Text,
    /// One JSON document at the end.
    Json,
    /// One JSON object per event, as they happen (NDJSON).
    JsonStream,
    /// Comma-separated rows: one per interval and flow, then the summary.
    Csv,
    /// One document in iperf3's `-J` schema at the end.
    Iperf3Json,
    /// A Markdown document at the end: facts, key figures, intervals, options.
    Markdown,
    /// A self-contained HTML page at the end: the Markdown's tables plus interactive charts.
    Html,
}

/// Turns events into bytes.
pub trait Renderer {
    /// Handles one event, writing whatever this format prints for it.
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()>;
}

/// A renderer for `format`. `color` applies to text only.
pub fn renderer(format: Format, color: bool) -> Box<dyn Renderer + Send> {
    match format {
        Format::Text => Box::new(text::Text::new(color)),
        Format::Json => Box::new(json::Json),
        Format::JsonStream => Box::new(json::JsonStream),
        Format::Csv => Box::new(csv::Csv::default()),
        Format::Iperf3Json => Box::new(kinds::bandwidth::iperf3_json::Iperf3Json),
        Format::Markdown => Box::new(markdown::Markdown),
        Format::Html => Box::new(html::Html),
    }
}

/// Renders a whole report in `format`.
pub fn render_report(
    report: &Report,
    format: Format,
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut r = renderer(format, color);
    for ev in Event::replay(report) {
        r.on_event(&ev, out)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Fixed reports for the renderers' snapshot tests.
    use wirespeed_model::kinds::bandwidth::Figures;
    use wirespeed_model::kinds::bandwidth::*;
    use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction, End, Flow};
    use wirespeed_model::report::*;
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::stats::GaugeStats;

    fn figures(udp: bool, bytes: u64, span_s: f64) -> Figures {
        let mut f = Figures {
            sent_bytes: bytes,
            received_bytes: bytes - if udp { 2800 } else { 0 },
            sent_bps: bytes as f64 * 8.0 / span_s,
            received_bps: (bytes - if udp { 2800 } else { 0 }) as f64 * 8.0 / span_s,
            ..Default::default()
        };
        if udp {
            f.sent_packets = Some(bytes / 1400);
            f.received_packets = Some(bytes / 1400 - 2);
            f.sent_pps = Some((bytes / 1400) as f64 / span_s);
            f.received_pps = Some((bytes / 1400 - 2) as f64 / span_s);
            f.lost_packets = Some(2);
            f.loss_ratio = Some(2.0 / (bytes / 1400) as f64);
            f.out_of_order_packets = Some(0);
            f.duplicate_packets = Some(0);
            f.jitter_ns = Some(12_345.0);
        } else {
            f.retransmits = Some(3);
            f.cwnd_bytes = Some(1_572_864);
            f.rtt_ns = Some(45_000);
            f.rttvar_ns = Some(5_000);
        }
        f
    }

    /// A two-interval report of `protocol` in `direction`.
    pub(crate) fn report(protocol: Protocol, direction: Direction) -> Report {
        let udp = protocol == Protocol::Udp;
        let mut spec = BandwidthSpec::new("127.0.0.1", protocol);
        spec.duration_ns = 2_000_000_000;
        spec.direction = direction;
        let flows = Flow::of(direction);
        let intervals = (0..2u32)
            .map(|i| BandwidthInterval {
                index: i,
                start_ns: u64::from(i) * 1_000_000_000,
                end_ns: u64::from(i + 1) * 1_000_000_000,
                omitted: false,
                measured_at: None,
                flows: flows
                    .iter()
                    .map(|&flow| {
                        let f = figures(udp, 1_400_000_000, 1.0);
                        FlowFigures {
                            flow,
                            total: f.clone(),
                            streams: vec![StreamFigures { id: 1, figures: f }],
                        }
                    })
                    .collect(),
                probe_rtt: None,
                probe_udp_rtt: None,
            })
            .collect();
        let summaries: Vec<FlowSummary> = flows
            .iter()
            .map(|&flow| {
                let f = figures(udp, 2_800_000_000, 2.0);
                FlowSummary {
                    flow,
                    sender: flow.sender(),
                    duration_ns: 2_000_000_000,
                    total: f.clone(),
                    rtt_range_ns: (!udp).then_some(GaugeStats {
                        min: 40_000,
                        max: 50_000,
                        mean: 45_000,
                    }),
                    cwnd_max_bytes: (!udp).then_some(1_572_864),
                    streams: vec![StreamFigures { id: 1, figures: f }],
                }
            })
            .collect();
        let mut s = summaries.into_iter();
        Report {
            body: ReportBody::Bandwidth(BandwidthReport {
                spec,
                intervals,
                summary: BandwidthSummary {
                    primary: s.next().unwrap(),
                    reverse: s.next(),
                    client_cpu: CpuUsage::from_nanos(100_000_000, 900_000_000, 2_000_000_000),
                    server_cpu: Some(CpuUsage::from_nanos(50_000_000, 950_000_000, 2_000_000_000)),
                    latency: None,
                    udp_latency: None,
                },
            }),
            meta: Meta {
                version: "0.1.0".into(),
                host: "testhost".into(),
                start_time: "2026-12-02T10:00:00Z".into(),
                start_unix_ms: 1_796_205_600_000,
                local_addr: Some("127.0.0.1:40000".into()),
                remote_addr: Some("127.0.0.1:5201".into()),
                server_version: Some("0.1.0".into()),
                notes: vec![],
                ..Meta::default()
            },
        }
    }

    /// `report` rendered in `format`, without colour.
    /// A report of `body` from version 0.1.0 against `remote`, as the renderer tests use.
    pub(crate) fn report_against(body: ReportBody, remote: &str) -> Report {
        let meta = Meta {
            version: "0.1.0".into(),
            remote_addr: Some(remote.into()),
            ..Default::default()
        };
        Report { body, meta }
    }

    pub(crate) fn render(report: &Report, format: crate::Format) -> String {
        let mut out = Vec::new();
        crate::render_report(report, format, false, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Asserts that every CSV row has as many cells as the header (no quoted commas here).
    /// Every record as wide as the header, read back by the `csv` crate's reader (which
    /// refuses ragged records and honours quotes).
    pub(crate) fn assert_even_rows(csv: &str) -> Vec<::csv::StringRecord> {
        let mut reader = ::csv::ReaderBuilder::new().from_reader(csv.as_bytes());
        let records: Result<Vec<_>, _> = reader.records().collect();
        records.unwrap_or_else(|e| panic!("{e}: {csv}"))
    }

    #[allow(dead_code)]
    pub(crate) fn sender_of(flow: Flow) -> End {
        flow.sender()
    }
}

#[cfg(test)]
mod schema_tests {
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::Report;

    use crate::kinds::{cps, dns, http, latency, ping, rpm, trace};

    /// One report of every kind (bandwidth both ways and over both transports), as the
    /// renderers' tests build them.
    fn every_kind() -> Vec<Report> {
        vec![
            crate::fixtures::report(Protocol::Tcp, Direction::Bidir),
            crate::fixtures::report(Protocol::Udp, Direction::Upload),
            latency::tests::report(),
            cps::tests::report(),
            ping::tests::report(),
            trace::tests::report(),
            http::tests::report(),
            dns::tests::report(),
            rpm::tests::report(),
        ]
    }

    #[test]
    fn every_kinds_json_report_validates_against_the_published_schema() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/report.schema.json")).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let reports = every_kind();
        let kinds: std::collections::BTreeSet<_> =
            reports.iter().map(|r| r.kind().name()).collect();
        assert_eq!(kinds.len(), wirespeed_model::kind::Kind::ALL.len(), "a kind has no report");
        for report in reports {
            let mut json = Vec::new();
            crate::render_report(&report, crate::Format::Json, false, &mut json).unwrap();
            let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{}: {e}", e.instance_path))
                .collect();
            assert!(errors.is_empty(), "{} report: {errors:#?}", report.kind());
        }
        // A report that breaks the schema is caught: the check can fail.
        let mut broken = serde_json::to_value(latency::tests::report()).unwrap();
        broken["summary"]["sent"] = serde_json::json!("many");
        assert!(!validator.is_valid(&broken));
    }
}
