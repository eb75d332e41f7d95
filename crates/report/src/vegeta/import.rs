//! vegeta's result lines (`vegeta encode --to json`) read back as an HTTP report, so a study can
//! put vegeta's own load beside wirespeed's and compare them figure by figure: every response's
//! latency in the same histogram, responses per second interval by interval (by when each
//! response ended), status codes, errors by vegeta's words, bytes. vegeta measures latency from
//! when a worker sent the request, not from when it was due; the report says so in its notes.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::http::{HttpInterval, HttpReport, HttpSpec, HttpSummary};
use wirespeed_model::{Meta, Report, ReportBody};
use wirespeed_proto::vegeta::{LineError, ResultLine};

/// What vegeta was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Attack {
    /// The target URL.
    pub url: String,
    /// Requests per second; 0 for as many as the workers manage.
    pub rate: f64,
    /// How long it attacked.
    pub duration: Duration,
    /// Most workers (vegeta's connections in flight).
    pub max_workers: u16,
    /// Per-request timeout.
    pub timeout: Duration,
    /// The command line, for the notes.
    pub command: String,
}

/// Why vegeta's output is not a report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// A line is not a result.
    #[error(transparent)]
    Line(#[from] LineError),
    /// There was no result at all.
    #[error("vegeta wrote no results")]
    Empty,
}

/// A request: when it began (ns since the first began), its latency, and the rest.
struct Request {
    start_ns: u64,
    line: ResultLine,
}

impl Request {
    fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.line.latency)
    }
}

/// Reads the lines; a line that is not a result is an error naming it.
fn requests(text: &str) -> Result<(SystemTime, Vec<Request>), ImportError> {
    let mut parsed = Vec::new();
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        parsed.push(ResultLine::parse(l, i + 1)?);
    }
    let first = parsed.iter().map(|(at, _)| *at).min().ok_or(ImportError::Empty)?;
    let since = |at: SystemTime| at.duration_since(first).unwrap_or_default().as_nanos() as u64;
    Ok((
        first,
        parsed.into_iter().map(|(at, line)| Request { start_ns: since(at), line }).collect(),
    ))
}

/// The report of `attack`, from its result lines; `meta_at` gives the run's metadata for a run
/// that began when the first request did.
pub fn report(
    text: &str,
    attack: &Attack,
    meta_at: impl FnOnce(SystemTime) -> Meta,
) -> Result<Report, ImportError> {
    let (began, requests) = requests(text)?;
    let interval_ns = 1_000_000_000u64;
    let span_ns = requests.iter().map(Request::end_ns).max().unwrap_or(0).max(1);
    let count = span_ns.div_ceil(interval_ns) as usize;
    let mut intervals: Vec<(RttHistogram, u64, u64, u64)> = vec![Default::default(); count];
    let (mut all, mut status, mut errors) =
        (RttHistogram::default(), BTreeMap::new(), BTreeMap::new());
    let (mut bytes_in, mut bytes_out, mut succeeded) = (0u64, 0u64, 0u64);
    for r in &requests {
        let ended = ((r.end_ns().saturating_sub(1)) / interval_ns) as usize;
        let sent = (r.start_ns / interval_ns) as usize;
        intervals[sent.min(count - 1)].3 += 1;
        let slot = &mut intervals[ended.min(count - 1)];
        bytes_in += r.line.bytes_in;
        bytes_out += r.line.bytes_out;
        if r.line.code == 0 {
            slot.2 += 1;
            let cause: String = r.line.error.chars().take(120).collect();
            *errors.entry(cause).or_insert(0u64) += 1;
            continue;
        }
        slot.0.record(r.line.latency);
        slot.1 += 1;
        all.record(r.line.latency);
        *status.entry(r.line.code.to_string()).or_insert(0u64) += 1;
        if (200..400).contains(&r.line.code) {
            succeeded += 1;
        }
    }
    // Rates are over the attack's length, as wirespeed's are over the test's; over the span
    // from the first request sent to the last answered when that is longer.
    let measured_ns = span_ns.max(attack.duration.as_nanos() as u64);
    let secs = measured_ns as f64 / 1e9;
    let responses = all.len();
    let attempts = responses + errors.values().sum::<u64>();
    let summary = HttpSummary {
        duration_ns: measured_ns,
        responses,
        succeeded,
        success_ratio: if attempts == 0 { 0.0 } else { succeeded as f64 / attempts as f64 },
        status,
        errors,
        requests_per_second: responses as f64 / secs,
        bytes_in,
        bytes_out,
        connections_opened: 0,
        latency: all.stats(),
        histogram: all.buckets(),
        target_rate: (attack.rate > 0.0).then_some(attack.rate),
        sent: requests.len() as u64,
        sent_per_second: requests.len() as f64 / secs,
        late: 0,
        breakdown: Default::default(),
        early_data: 0,
        early_data_accepted: 0,
    };
    let intervals = intervals
        .into_iter()
        .enumerate()
        .map(|(i, (h, responses, errors, sent))| {
            let start_ns = i as u64 * interval_ns;
            let end_ns = (start_ns + interval_ns).min(span_ns);
            let length = (end_ns - start_ns).max(1) as f64 / 1e9;
            HttpInterval {
                index: i as u32,
                start_ns,
                end_ns,
                omitted: false,
                requests_per_second: responses as f64 / length,
                responses,
                errors,
                sent,
                late: 0,
                latency: h.stats(),
            }
        })
        .collect();
    let mut spec = HttpSpec::new(attack.url.clone());
    spec.connections = attack.max_workers.max(1);
    spec.duration_ns = attack.duration.as_nanos() as u64;
    spec.timeout_ns = attack.timeout.as_nanos() as u64;
    spec.interval_ns = interval_ns;
    spec.rates = if attack.rate > 0.0 { vec![attack.rate] } else { Vec::new() };
    let mut meta = meta_at(began);
    meta.notes.push(format!(
        "load made by vegeta ({}): latency counts from when a worker sent each request, not \
         from when it was due",
        attack.command
    ));
    let body = HttpReport { spec, intervals, summary, steps: Vec::new() };
    Ok(Report { body: ReportBody::Http(body), meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(_began: SystemTime) -> Meta {
        Meta::default()
    }

    fn attack(rate: f64) -> Attack {
        Attack {
            url: "http://127.0.0.1:8080/".into(),
            rate,
            duration: Duration::from_secs(2),
            max_workers: 4,
            timeout: Duration::from_secs(30),
            command: "vegeta attack -rate 2/s -duration 2s".into(),
        }
    }

    const LINES: &str = r#"{"attack":"","seq":0,"code":200,"timestamp":"2026-12-04T00:00:00.000000000Z","latency":2000000,"bytes_out":0,"bytes_in":615,"error":"","body":null,"method":"GET","url":"http://127.0.0.1:8080/","headers":null}
{"attack":"","seq":1,"code":404,"timestamp":"2026-12-04T00:00:00.5Z","latency":1000000,"bytes_out":0,"bytes_in":10,"error":"404 Not Found","body":null,"method":"GET","url":"http://127.0.0.1:8080/","headers":null}
{"attack":"","seq":2,"code":0,"timestamp":"2026-12-04T00:00:01.000000000Z","latency":30000,"bytes_out":0,"bytes_in":0,"error":"dial tcp: connection refused","body":null,"method":"GET","url":"http://127.0.0.1:8080/","headers":null}
{"attack":"","seq":3,"code":200,"timestamp":"2026-12-04T00:00:01.5Z","latency":4000000,"bytes_out":0,"bytes_in":615,"error":"","body":null,"method":"GET","url":"http://127.0.0.1:8080/","headers":null}
"#;

    #[test]
    fn results_become_an_http_report() {
        let r = report(LINES, &attack(2.0), meta).unwrap();
        let ReportBody::Http(h) = &r.body else { panic!("not http") };
        let s = &h.summary;
        assert_eq!((s.sent, s.responses, s.succeeded), (4, 3, 2));
        assert_eq!(s.status.get("404"), Some(&1));
        assert_eq!(s.errors.get("dial tcp: connection refused"), Some(&1));
        assert_eq!(s.bytes_in, 1240);
        assert_eq!(s.latency.count, 3);
        assert!((3_996_000..=4_004_000).contains(&s.latency.max_ns), "{:?}", s.latency);
        assert_eq!(s.duration_ns, 2_000_000_000, "the attack's length: longer than its span");
        assert_eq!(s.requests_per_second, 1.5);
        assert_eq!(s.target_rate, Some(2.0));
        assert_eq!(h.intervals.len(), 2);
        assert_eq!((h.intervals[0].responses, h.intervals[0].sent), (2, 2));
        assert_eq!((h.intervals[1].responses, h.intervals[1].errors), (1, 1));
        assert!(r.meta.notes[0].contains("not from when it was due"));
        // At a fixed rate the headline is latency, as for wirespeed's own open model.
        assert_eq!(r.headline().key, "latency_p50_ns");
        let closed = report(LINES, &attack(0.0), meta).unwrap();
        assert_eq!(closed.headline().key, "requests_per_second");
    }

    #[test]
    fn garbage_is_an_error_naming_its_line() {
        let e = report("{\"code\":200}\nnot json\n", &attack(0.0), meta).unwrap_err();
        assert!(e.to_string().starts_with("vegeta result line 1"), "{e}");
        assert_eq!(report("", &attack(0.0), meta), Err(ImportError::Empty));
    }
}
