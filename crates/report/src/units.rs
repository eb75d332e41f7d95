//! Formatting numbers for people: rates with decimal prefixes (bit/s), sizes with binary ones
//! (bytes), durations in the unit that keeps three significant digits.

use wirespeed_model::metrics::Unit;

/// A rate such as `941 Mbit/s` or `19.8 Gbit/s`.
pub fn rate(bps: f64) -> String {
    scaled(bps, 1000.0, &["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"])
}

/// Datagrams per second such as `5.62 Mpkt/s`.
pub fn packet_rate(pps: f64) -> String {
    scaled(pps, 1000.0, &["pkt/s", "kpkt/s", "Mpkt/s", "Gpkt/s"])
}

/// A size such as `1.10 GiB`.
pub fn bytes(n: u64) -> String {
    scaled(n as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"])
}

/// A duration in nanoseconds such as `631 µs` or `1.20 ms`.
pub fn nanos(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{} ns", sig3(ns))
    } else if ns < 1_000_000.0 {
        format!("{} µs", sig3(ns / 1e3))
    } else if ns < 1_000_000_000.0 {
        format!("{} ms", sig3(ns / 1e6))
    } else {
        format!("{} s", sig3(ns / 1e9))
    }
}

/// A count per second such as `62.4k q/s`, naming what is counted.
pub fn per_second(v: f64, events: &str) -> String {
    let (v, prefix) = si(v);
    format!("{}{prefix} {events}", sig3(v))
}

/// `v` scaled to below 1000 with its decimal prefix (`""`, `k`, `M`, `G`).
pub fn si(mut v: f64) -> (f64, &'static str) {
    let mut i = 0;
    let prefixes = ["", "k", "M", "G", "T"];
    while v.abs() >= 1000.0 && i + 1 < prefixes.len() {
        v /= 1000.0;
        i += 1;
    }
    (v, prefixes[i])
}

/// Any figure in its unit.
pub fn figure(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        Unit::BitsPerSecond => rate(v),
        Unit::PerSecond(events) => per_second(v, events.name()),
        Unit::Nanos => nanos(v),
        Unit::Ratio => percent(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Rpm => format!("{v:.0} RPM"),
    }
}

/// A ratio as a percentage such as `0.42%`.
pub fn percent(ratio: f64) -> String {
    let p = ratio * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p < 0.01 {
        format!("{p:.4}%")
    } else {
        format!("{p:.2}%")
    }
}

fn scaled(mut v: f64, base: f64, units: &[&str]) -> String {
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    format!("{} {}", sig3(v), units[i])
}

/// Three significant digits, no exponent: 1.23, 12.3, 123, 1234.
fn sig3(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(rate(941e6), "941 Mbit/s");
        assert_eq!(rate(19.8e9), "19.8 Gbit/s");
        assert_eq!(rate(0.0), "0 bit/s");
        assert_eq!(bytes(1_181_116_006), "1.10 GiB");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(nanos(631_000.0), "631 µs");
        assert_eq!(nanos(1_200_000.0), "1.20 ms");
        assert_eq!(nanos(12.0), "12.0 ns");
        assert_eq!(percent(0.0042), "0.42%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(per_second(62_400.0, "q/s"), "62.4k q/s");
        assert_eq!(figure(1.5e9, Unit::BitsPerSecond), "1.50 Gbit/s");
        assert_eq!(figure(f64::NAN, Unit::Count), "-");
    }
}
