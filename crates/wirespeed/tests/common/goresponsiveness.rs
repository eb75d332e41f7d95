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
