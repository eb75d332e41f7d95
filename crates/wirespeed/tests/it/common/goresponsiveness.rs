//! Reading goresponsiveness (the responsiveness draft's reference client) from its text
//! output, which has no machine-readable form for the figures compared here.

/// goresponsiveness's download and upload figures from its text: (throughput Mbit/s, RPM as
/// the single-sided 5 % trimmed mean, the draft's figure and ours).
pub(crate) fn legs(text: &str) -> Vec<(f64, f64)> {
    let number = |line: &str, after: &str| -> Option<f64> {
        let rest = line.split(after).nth(1)?.trim_start();
        let n: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        // Go prints an infinite RPM as +Inf.
        if n == "+Inf" {
            return Some(f64::INFINITY);
        }
        n.parse().ok()
    };
    let mut legs = Vec::new();
    let mut mbps = None;
    for line in text.lines() {
        if line.contains("Throughput:") {
            mbps = number(line, "Throughput:");
        }
        if line.contains("RPM:") && line.contains("Trimmed Mean") && !line.contains("Final") {
            if let (Some(m), Some(rpm)) = (mbps.take(), number(line, "RPM:")) {
                legs.push((m, rpm));
            }
        }
    }
    legs
}

/// One leg of a goresponsiveness run, from its probe logs (`-logger-filename`).
#[derive(Debug)]
pub(crate) struct LoggedLeg {
    /// `SelfDown` or `SelfUp`: the probes on download or upload connections.
    pub direction: String,
    /// Self probes in the leg.
    #[allow(dead_code)] // shown through `Debug` in assertion messages
    pub self_probes: usize,
    /// The single-sided 5 % trimmed mean of the last 40 % of its self probes, ms (after the
    /// ramp, as the draft's working conditions are).
    pub self_ms: f64,
    /// The same of its foreign probes, per round trip (each logged probe is its TCP, TLS and
    /// HTTP round trips together, three), ms.
    pub foreign_ms: f64,
}

impl LoggedLeg {
    /// RPM by draft-09 §5.3 (the mean of the foreign and loaded RPMs, as wirespeed and
    /// Cloudflare's mach compute it). goresponsiveness prints 60000 ÷ the mean of the two
    /// latencies, the earlier drafts' formula, which a long self probe dominates: on a 20
    /// Mbit/s path with 300 ms self probes and 28 ms round trips the two read 1170 and 370.
    pub(crate) fn draft09_rpm(&self) -> f64 {
        (60_000.0 / self.foreign_ms + 60_000.0 / self.self_ms) / 2.0
    }
}

/// The legs in goresponsiveness's probe logs under `dir` (`log-self-*.csv`,
/// `log-foreign-*.csv`): each direction's self probes, and the foreign probes sent while they
/// were.
pub(crate) fn logged_legs(dir: &std::path::Path) -> Vec<LoggedLeg> {
    let read = |kind: &str| -> Vec<(String, f64, String)> {
        let prefix = format!("log-{kind}-");
        let file = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
            .unwrap_or_else(|| panic!("no goresponsiveness {kind} probe log in {}", dir.display()));
        let text = std::fs::read_to_string(file).unwrap();
        // Time (MM-DD-YYYY-HH-MM-SS.mmm), round trips, duration in s, RTT, cwnd, type, ...
        text.lines()
            .skip(1)
            .filter_map(|line| {
                let f: Vec<&str> = line.split(',').map(str::trim).collect();
                let seconds: f64 = f.get(2)?.parse().ok()?;
                Some((sortable_time(f[0])?, seconds * 1e3, f.get(5)?.to_string()))
            })
            .collect()
    };
    let (selfs, foreign) = (read("self"), read("foreign"));
    let mut legs = Vec::new();
    for direction in ["SelfDown", "SelfUp"] {
        let mine: Vec<&(String, f64, String)> = selfs.iter().filter(|p| p.2 == direction).collect();
        let (Some(first), Some(last)) = (mine.first(), mine.last()) else { continue };
        let during: Vec<f64> =
            foreign.iter().filter(|p| p.0 >= first.0 && p.0 <= last.0).map(|p| p.1 / 3.0).collect();
        let late: Vec<f64> = mine[mine.len() * 6 / 10..].iter().map(|p| p.1).collect();
        legs.push(LoggedLeg {
            direction: direction.into(),
            self_probes: mine.len(),
            self_ms: trimmed_mean(&late),
            foreign_ms: trimmed_mean(&during),
        });
    }
    legs
}

/// `MM-DD-YYYY-HH-MM-SS.mmm` as `YYYY-MM-DD-HH-MM-SS.mmm`, which sorts as time does.
fn sortable_time(t: &str) -> Option<String> {
    let (month, rest) = t.split_once('-')?;
    let (day, rest) = rest.split_once('-')?;
    let (year, clock) = rest.split_once('-')?;
    Some(format!("{year}-{month}-{day}-{clock}"))
}

/// The mean of the fastest 95 % of `values` (the draft's single-sided trim); NaN when empty.
fn trimmed_mean(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.truncate(v.len() - v.len() / 20);
    v.iter().sum::<f64>() / v.len() as f64
}
