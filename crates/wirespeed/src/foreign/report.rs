//! What another tool's client printed, as a wirespeed report of the workload's kind: the spec
//! is the one our own command line for the same workload resolves to (the options are our
//! flags, and each client's entry in `clients.toml` makes its flags mean the same), the
//! figures are the ones read from its output, each put at its name in the report's summary
//! as `--format json` prints it (`received_bps`, `rtt.p50_ns`), and its CPU is the kernel's
//! account of the child. What it did not print stays absent (or 0 where the summary has no
//! absence), and the notes say whose figures these are.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wirespeed_model::flow::Flow;
use wirespeed_model::histogram::LatencyStats;
use wirespeed_model::kinds::bandwidth::{
    BandwidthReport, BandwidthSpec, BandwidthSummary, CpuUsage, Figures, FlowSummary,
};
use wirespeed_model::kinds::dns::{DnsReport, DnsSpec, DnsSummary, RcodeCount};
use wirespeed_model::kinds::http::{HttpReport, HttpSpec, HttpSummary};
use wirespeed_model::kinds::latency::{LatencyReport, LatencySpec, LatencySummary};
use wirespeed_model::report::LoadCpu;
use wirespeed_model::{Report, ReportBody, TestSpec};

/// The figures read from a client's output, by their names in the report's summary.
pub(crate) type Read = BTreeMap<String, f64>;

/// A run of another client: what it was, what it printed, and what it used.
pub(crate) struct Made<'a> {
    /// The client's name and its command line as typed.
    pub client: &'a str,
    pub command: String,
    /// What a reader should know of how the client measures.
    pub note: &'a str,
    pub spec: TestSpec,
    pub figures: Read,
    pub began: std::time::SystemTime,
    /// Its user and system CPU, and its wall time.
    pub cpu: LoadCpu,
}

/// The report of a client's run.
pub(crate) fn of(made: Made<'_>) -> Result<Report> {
    let mut meta = wirespeed_engine::run_meta(env!("CARGO_PKG_VERSION"), made.began, None);
    meta.notes.push(format!("load made by {}'s client ({})", made.client, made.command));
    meta.notes.push(made.note.to_string());
    meta.load_cpu = Some(made.cpu);
    let body = match &made.spec {
        TestSpec::Bandwidth(spec) => ReportBody::Bandwidth(bandwidth(spec.clone(), &made)?),
        TestSpec::Latency(spec) => ReportBody::Latency(latency(spec.clone(), &made)?),
        TestSpec::Http(spec) => ReportBody::Http(http((**spec).clone(), &made)?),
        TestSpec::Dns(spec) => ReportBody::Dns(dns((**spec).clone(), &made)?),
        other => bail!("{}'s client: no report of a {} test yet", made.client, other.kind()),
    };
    Ok(Report { body, meta })
}

/// The figure without which a report of the kind says nothing.
fn require(made: &Made<'_>, figure: &str) -> Result<()> {
    if !made.figures.contains_key(figure) {
        bail!("{} printed no {figure}: nothing was measured", made.client);
    }
    Ok(())
}

fn bandwidth(spec: BandwidthSpec, made: &Made<'_>) -> Result<BandwidthReport> {
    // A packet-rate run is judged by its datagrams; any other by the bytes received.
    require(made, if spec.per_packet { "sent_packets" } else { "received_bps" })?;
    let flow = if spec.direction.client_sends() { Flow::Upload } else { Flow::Download };
    let blank = BandwidthSummary {
        primary: FlowSummary {
            flow,
            sender: flow.sender(),
            duration_ns: spec.duration_ns.saturating_sub(spec.omit_ns),
            total: Figures::default(),
            rtt_range_ns: None,
            cwnd_max_bytes: None,
            streams: Vec::new(),
        },
        reverse: None,
        client_cpu: CpuUsage::from_nanos(made.cpu.user_ns, made.cpu.system_ns, made.cpu.wall_ns),
        // Present when the client says what the server used.
        server_cpu: made
            .figures
            .keys()
            .any(|k| k.starts_with("server_cpu."))
            .then(CpuUsage::default),
        latency: None,
        udp_latency: None,
    };
    let mut summary = filled(blank, &made.figures)?;
    with_packet_rates(&mut summary.primary);
    Ok(BandwidthReport { spec, intervals: Vec::new(), summary })
}

/// The datagram figures a client's counts give where it printed no rate: those received are
/// those sent less those lost, and each rate is its count over the measured time.
fn with_packet_rates(flow: &mut FlowSummary) {
    let t = &mut flow.total;
    if t.received_packets.is_none() {
        if let (Some(sent), Some(lost)) = (t.sent_packets, t.lost_packets) {
            t.received_packets = Some(sent.saturating_sub(lost));
        }
    }
    let seconds = flow.duration_ns as f64 / 1e9;
    if seconds > 0.0 {
        let rate = |n: Option<u64>| n.map(|n| n as f64 / seconds);
        t.sent_pps = t.sent_pps.or(rate(t.sent_packets));
        t.received_pps = t.received_pps.or(rate(t.received_packets));
    }
}

fn latency(spec: LatencySpec, made: &Made<'_>) -> Result<LatencyReport> {
    require(made, "rtt.p50_ns")?;
    let blank = LatencySummary {
        duration_ns: spec.duration_ns,
        sent: 0,
        received: 0,
        lost: None,
        messages_per_second: 0.0,
        rtt: LatencyStats::default(),
        histogram: Vec::new(),
    };
    let mut summary = filled(blank, &made.figures)?;
    // What the client did not print but its other figures give.
    if summary.received == 0 {
        summary.received = summary.rtt.count;
    }
    if summary.sent == 0 {
        summary.sent = summary.received;
    }
    if summary.messages_per_second == 0.0 && summary.duration_ns > 0 {
        summary.messages_per_second = summary.received as f64 / (summary.duration_ns as f64 / 1e9);
    }
    Ok(LatencyReport { spec, intervals: Vec::new(), summary })
}

/// A figure an HTTP client prints that the summary holds in another form: responses with a
/// status other than 2xx or 3xx (wrk's "Non-2xx or 3xx responses"). It gives `succeeded`
/// and is not kept itself.
const UNSUCCESSFUL: &str = "unsuccessful";

fn http(spec: HttpSpec, made: &Made<'_>) -> Result<HttpReport> {
    require(made, "responses")?;
    let mut read = made.figures.clone();
    let unsuccessful = read.remove(UNSUCCESSFUL).unwrap_or(0.0) as u64;
    let blank = HttpSummary {
        duration_ns: spec.duration_ns,
        responses: 0,
        succeeded: 0,
        success_ratio: 0.0,
        status: BTreeMap::new(),
        errors: BTreeMap::new(),
        requests_per_second: 0.0,
        bytes_in: 0,
        bytes_out: 0,
        connections_opened: 0,
        latency: LatencyStats::default(),
        histogram: Vec::new(),
        target_rate: spec.rates.first().copied(),
        sent: 0,
        sent_per_second: 0.0,
        late: 0,
        breakdown: Default::default(),
        early_data: 0,
        early_data_accepted: 0,
    };
    let mut s = filled(blank, &read)?;
    // What the client did not print but its other figures give.
    if !read.contains_key("succeeded") {
        s.succeeded = s.responses.saturating_sub(unsuccessful);
    }
    let errors: u64 = s.errors.values().sum();
    let asked = s.responses + errors;
    if asked > 0 {
        s.success_ratio = s.succeeded as f64 / asked as f64;
    }
    if s.sent == 0 {
        s.sent = asked;
    }
    if s.latency.count == 0 && read.keys().any(|k| k.starts_with("latency.")) {
        s.latency.count = s.responses;
    }
    let seconds = s.duration_ns as f64 / 1e9;
    if seconds > 0.0 {
        if s.requests_per_second == 0.0 {
            s.requests_per_second = s.responses as f64 / seconds;
        }
        if s.sent_per_second == 0.0 {
            s.sent_per_second = s.sent as f64 / seconds;
        }
    }
    Ok(HttpReport { spec, intervals: Vec::new(), summary: s, steps: Vec::new() })
}

/// Answers by response code, as a client prints them (`rcode.NXDOMAIN`): the summary holds
/// them as a list in code order.
const RCODE: &str = "rcode.";

/// The response codes a client's count may name, with their numbers.
const RCODES: [(&str, u16); 10] = [
    ("NOERROR", 0),
    ("FORMERR", 1),
    ("SERVFAIL", 2),
    ("NXDOMAIN", 3),
    ("NOTIMP", 4),
    ("REFUSED", 5),
    ("YXDOMAIN", 6),
    ("YXRRSET", 7),
    ("NXRRSET", 8),
    ("NOTAUTH", 9),
];

fn dns(spec: DnsSpec, made: &Made<'_>) -> Result<DnsReport> {
    require(made, "completed")?;
    let mut read = made.figures.clone();
    let mut rcodes = Vec::new();
    for (name, code) in RCODES {
        if let Some(count) = read.remove(&format!("{RCODE}{name}")) {
            rcodes.push(RcodeCount { code, name: name.to_string(), count: count as u64 });
        }
    }
    if let Some(unknown) = read.keys().find(|k| k.starts_with(RCODE)) {
        bail!("{unknown}: not a response code wirespeed knows");
    }
    let blank = DnsSummary {
        duration_ns: spec.duration_ns.unwrap_or(0),
        end_reason: if spec.duration_ns.is_some() { "time limit" } else { "end of file" }.into(),
        ..DnsSummary::default()
    };
    let mut s = filled(blank, &read)?;
    s.rcodes = rcodes;
    // What the client did not print but its other figures give.
    if s.latency.count == 0 && read.keys().any(|k| k.starts_with("latency.")) {
        s.latency.count = s.completed;
    }
    if s.queries_per_second == 0.0 && s.duration_ns > 0 {
        s.queries_per_second = s.completed as f64 / (s.duration_ns as f64 / 1e9);
    }
    Ok(DnsReport { spec, intervals: Vec::new(), summary: s })
}

/// `blank` with each figure of `read` at its dotted name: counts as whole numbers, the rest as
/// they are. A name the summary has no field for is refused, as is a value its field cannot
/// hold.
fn filled<T: Serialize + DeserializeOwned>(blank: T, read: &Read) -> Result<T> {
    let mut value = serde_json::to_value(blank)?;
    for (name, figure) in read {
        // A count field (an integer in the blank) takes the nearest whole number: 13.85 µs
        // read and scaled to ns is 13850.000000000002. Elsewhere a whole number is a count
        // too (an absent field's type is not known), and any other stays a fraction.
        let pointer = format!("/{}", name.replace('.', "/"));
        let count = value.pointer(&pointer).is_some_and(|v| v.is_u64());
        let near = (figure - figure.round()).abs() <= 1e-9 * figure.abs().max(1.0);
        let number = if (count || near) && *figure >= 0.0 && *figure < 9.0e15 {
            serde_json::Number::from(figure.round() as u64)
        } else {
            serde_json::Number::from_f64(*figure)
                .with_context(|| format!("figure {name}: {figure} is not a number"))?
        };
        let mut at = &mut value;
        let mut parts = name.split('.').peekable();
        while let Some(part) = parts.next() {
            let fields = at.as_object_mut().with_context(|| format!("no figure {name:?}"))?;
            if parts.peek().is_none() {
                fields.insert(part.to_string(), serde_json::Value::Number(number.clone()));
                break;
            }
            at = fields.get_mut(part).with_context(|| format!("no figure {name:?}"))?;
        }
    }
    let summary: T = serde_json::from_value(value)
        .with_context(|| "the figures read do not fit the report".to_string())?;
    // A name the summary has no field for was dropped on the way in: refused, not lost.
    let back = serde_json::to_value(&summary)?;
    for name in read.keys() {
        let pointer = format!("/{}", name.replace('.', "/"));
        if back.pointer(&pointer).is_none() {
            bail!("no figure {name:?} in the report's summary");
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    use wirespeed_model::rules::Protocol;

    /// A spec of `kind`, as a client's report would have.
    fn spec_of(kind: &str) -> TestSpec {
        match kind {
            "bandwidth" => TestSpec::Bandwidth(BandwidthSpec::new("h", Protocol::Tcp)),
            "pps" => {
                let mut spec = BandwidthSpec::new("h", Protocol::Udp);
                spec.per_packet = true;
                TestSpec::Bandwidth(spec)
            }
            "latency" => TestSpec::Latency(LatencySpec::new("h", Protocol::Tcp)),
            "http" => TestSpec::Http(Box::new(HttpSpec::new("http://h/"))),
            "dns" => TestSpec::Dns(Box::new(DnsSpec::new("h", 53))),
            other => panic!("a client makes {other}, which has no report yet"),
        }
    }

    #[test]
    fn every_figure_a_client_reads_is_in_its_kinds_summary() {
        for (name, client) in super::super::defs::all() {
            for (kind, def) in &client.kind {
                let made = Made {
                    client: name,
                    command: String::new(),
                    note: "",
                    spec: spec_of(kind),
                    figures: def.figures.keys().map(|k| (k.clone(), 1.0)).collect(),
                    began: std::time::SystemTime::now(),
                    cpu: LoadCpu::default(),
                };
                of(made).unwrap_or_else(|e| panic!("{name} {kind}: {e:#}"));
            }
        }
    }

    #[test]
    fn datagrams_received_and_each_rate_come_from_the_counts_where_not_printed() {
        let mut spec = BandwidthSpec::new("h", Protocol::Udp);
        spec.per_packet = true;
        let made = Made {
            client: "iperf3",
            command: String::new(),
            note: "",
            spec: TestSpec::Bandwidth(spec),
            figures: [
                ("sent_packets".to_string(), 1000.0),
                ("lost_packets".to_string(), 100.0),
                ("duration_ns".to_string(), 2e9),
            ]
            .into(),
            began: std::time::SystemTime::now(),
            cpu: LoadCpu::default(),
        };
        let ReportBody::Bandwidth(r) = of(made).unwrap().body else { panic!("not bandwidth") };
        let t = &r.summary.primary.total;
        assert_eq!(
            (t.received_packets, t.sent_pps, t.received_pps),
            (Some(900), Some(500.0), Some(450.0))
        );
    }

    /// A run of `spec` whose client printed `figures`.
    fn made(spec: TestSpec, figures: &[(&str, f64)]) -> Made<'static> {
        Made {
            client: "c",
            command: String::new(),
            note: "",
            spec,
            figures: figures.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            began: std::time::SystemTime::now(),
            cpu: LoadCpu::default(),
        }
    }

    #[test]
    fn an_http_clients_counts_give_what_it_did_not_print() {
        let spec = TestSpec::Http(Box::new(HttpSpec::new("http://h/")));
        let printed = [
            ("responses", 1000.0),
            ("unsuccessful", 10.0),
            ("errors.timeout", 0.0),
            ("errors.connect", 5.0),
            ("duration_ns", 2e9),
            ("latency.p50_ns", 400e3),
        ];
        let ReportBody::Http(r) = of(made(spec, &printed)).unwrap().body else { panic!() };
        let s = &r.summary;
        assert_eq!((s.responses, s.succeeded, s.sent), (1000, 990, 1005));
        assert_eq!(s.success_ratio, 990.0 / 1005.0);
        assert_eq!((s.requests_per_second, s.latency.count), (500.0, 1000));
        // Printed nothing it answered: nothing was measured.
        let spec = TestSpec::Http(Box::new(HttpSpec::new("http://h/")));
        assert!(of(made(spec, &[("duration_ns", 1e9)])).is_err());
    }

    #[test]
    fn a_dns_clients_answers_by_code_become_the_summarys_list() {
        let spec = || TestSpec::Dns(Box::new(DnsSpec::new("h", 53)));
        let printed = [("completed", 100.0), ("rcode.NXDOMAIN", 4.0), ("rcode.NOERROR", 96.0)];
        let ReportBody::Dns(r) = of(made(spec(), &printed)).unwrap().body else { panic!() };
        let codes: Vec<(u16, &str, u64)> =
            r.summary.rcodes.iter().map(|c| (c.code, c.name.as_str(), c.count)).collect();
        assert_eq!(codes, [(0, "NOERROR", 96), (3, "NXDOMAIN", 4)]);
        let e = of(made(spec(), &[("completed", 1.0), ("rcode.WHATEVER", 1.0)])).unwrap_err();
        assert!(e.to_string().contains("rcode.WHATEVER: not a response code"), "{e}");
    }

    #[test]
    fn counts_become_integers_rates_stay_fractional_and_unknown_names_are_refused() {
        let read: Read =
            [("sent_bytes".to_string(), 1250.0), ("received_bps".to_string(), 10.5)].into();
        let f: Figures = filled(Figures::default(), &read).unwrap();
        assert_eq!((f.sent_bytes, f.received_bps), (1250, 10.5));
        // A count takes the nearest whole number; a negative one cannot be held.
        let near: Read = [("sent_bytes".to_string(), 13.85 * 1e3)].into();
        assert_eq!(filled(Figures::default(), &near).unwrap().sent_bytes, 13850);
        let bad: Read = [("sent_bytes".to_string(), -2.5)].into();
        assert!(filled(Figures::default(), &bad).is_err());
        let unknown: Read = [("nope".to_string(), 1.0)].into();
        let e = filled(Figures::default(), &unknown).unwrap_err();
        assert!(e.to_string().contains("no figure \"nope\""), "{e}");
        let nested: Read = [("rtt.p50_ns".to_string(), 5.0)].into();
        let s: LatencyStats =
            filled(LatencyStats::default(), &[("p50_ns".into(), 5.0)].into()).unwrap();
        assert_eq!(s.p50_ns, 5);
        assert!(filled(LatencyStats::default(), &nested).is_err());
    }
}
