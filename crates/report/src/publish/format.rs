//! How a value drawn from data is written on a page: the named formats a placeholder ends
//! with (`| rate:2`, `| pct:1`), each a fixed rule, so the same value always reads the same.

use super::expr::Value;
use super::PublishError;

/// How many digits a number keeps: `2` decimals, or `3s` significant digits (345 Mbit/s,
/// 46.3 Gbit/s, 2.38 Gbit/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digits {
    /// Digits after the point.
    Decimals(usize),
    /// Digits in all, after the point as many as are left (none dropped before it).
    Significant(usize),
}

impl Digits {
    /// The decimals to write `n` with.
    fn decimals(self, n: f64) -> usize {
        match self {
            Digits::Decimals(d) => d,
            Digits::Significant(s) if n == 0.0 || !n.is_finite() => s.saturating_sub(1),
            Digits::Significant(s) => {
                // The magnitude after rounding to `s` digits: 99.96 at three is 100.
                let magnitude = n.abs().log10().floor() as i64;
                let rounded = {
                    let scale = 10f64.powi((s as i64 - 1 - magnitude) as i32);
                    (n.abs() * scale).round() / scale
                };
                let magnitude = rounded.log10().floor() as i64;
                (s as i64 - 1 - magnitude).max(0) as usize
            }
        }
    }
}

/// A named format and its digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The cell as the file has it (the default: text such as a version stays text).
    Raw,
    /// A plain number with `n` decimals.
    Num(Digits),
    /// A whole number with thousands separated by commas.
    Int,
    /// A rate in bit/s with the prefix that keeps it between 1 and 1000 (kbit/s to Tbit/s).
    Rate(Digits),
    /// A percentage: `67.1 %`.
    Pct(Digits),
    /// A signed percentage: `+13 %`, `−36 %` (a minus sign, not a hyphen).
    SignedPct(Digits),
    /// A factor: `5.3×`.
    Times(Digits),
    /// Nanoseconds as microseconds: `67.6 µs`.
    Micros(Digits),
    /// Nanoseconds as milliseconds: `1.2 ms`.
    Millis(Digits),
    /// Bytes as MiB: `22.6 MiB`.
    Mib(Digits),
}

impl Format {
    /// `name`, `name:decimals` or `name:Ns` (N significant digits).
    pub fn parse(spec: &str) -> Result<Format, PublishError> {
        let (name, digits) = match spec.split_once(':') {
            Some((n, d)) => (n, Some(d)),
            None => (spec, None),
        };
        let bad = || PublishError::Template(format!("'{spec}': digits are 0 to 9, or 1s to 9s"));
        let d = match digits {
            None => Digits::Decimals(0),
            Some(d) => match d.strip_suffix('s') {
                Some(n) => Digits::Significant(
                    n.parse().ok().filter(|n| (1..=9).contains(n)).ok_or_else(bad)?,
                ),
                None => Digits::Decimals(d.parse().ok().filter(|&d| d <= 9).ok_or_else(bad)?),
            },
        };
        Ok(match name {
            "raw" => Format::Raw,
            "num" => Format::Num(d),
            "int" => Format::Int,
            "rate" => Format::Rate(d),
            "pct" => Format::Pct(d),
            "spct" => Format::SignedPct(d),
            "x" => Format::Times(d),
            "us" => Format::Micros(d),
            "ms" => Format::Millis(d),
            "mib" => Format::Mib(d),
            _ => {
                return Err(PublishError::Template(format!(
                    "unknown format '{name}' (raw, num, int, rate, pct, spct, x, us, ms, mib)"
                )))
            }
        })
    }

    /// `value` written in this format; a range as `low–high unit`, the unit once.
    pub fn write(self, value: &Value) -> Result<String, PublishError> {
        match value {
            Value::Text(t) if self == Format::Raw => Ok(t.clone()),
            Value::Text(t) => Err(PublishError::Template(format!(
                "'{t}' is not a number; only the raw format writes text"
            ))),
            Value::Number(n) if self == Format::Raw => Ok(n.to_string()),
            Value::Number(n) => Ok(self.number(*n)),
            Value::Range(lo, hi) => {
                let (lo, hi) = (self.number(*lo), self.number(*hi));
                let (lo_value, lo_unit) = split_unit(&lo);
                let (hi_value, hi_unit) = split_unit(&hi);
                Ok(if lo == hi {
                    // Both ends read the same: one figure, not `0.1–0.1 ms`.
                    hi.clone()
                } else if lo_unit == hi_unit {
                    format!("{lo_value}–{hi_value}{hi_unit}")
                } else {
                    format!("{lo}–{hi}")
                })
            }
            Value::Missing(why) => Err(PublishError::Missing(why.clone())),
            Value::List(v) => Err(PublishError::Template(format!(
                "{} values where one is written: take min, max, median or range of them",
                v.len()
            ))),
        }
    }

    fn number(self, n: f64) -> String {
        match self {
            Format::Raw => n.to_string(),
            Format::Num(d) => fixed(n, d),
            Format::Int => thousands(n),
            Format::Rate(d) => {
                let prefixes = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
                // The largest prefix that keeps the value at 1 or more; one up where rounding
                // makes it 1000 (999.96 Mbit/s reads 1.00 Gbit/s, 583 Mbit/s stays Mbit/s).
                let mut i = prefixes.iter().position(|(s, _)| n.abs() / s >= 1.0).unwrap_or(4);
                let rounded = |i: usize| fixed(n.abs() / prefixes[i].0, d).replace('−', "-");
                if i > 0 && rounded(i).parse::<f64>().unwrap_or(0.0) >= 1000.0 {
                    i -= 1;
                }
                let (scale, prefix) = prefixes[i];
                format!("{} {prefix}bit/s", fixed(n / scale, d))
            }
            Format::Pct(d) => format!("{} %", fixed(n, d)),
            Format::SignedPct(d) => {
                let text = fixed(n.abs(), d);
                let zero = text.chars().all(|c| c == '0' || c == '.');
                let sign = if zero {
                    ""
                } else if n < 0.0 {
                    "−"
                } else {
                    "+"
                };
                format!("{sign}{text} %")
            }
            Format::Times(d) => format!("{}×", fixed(n, d)),
            Format::Micros(d) => format!("{} µs", fixed(n / 1e3, d)),
            Format::Millis(d) => format!("{} ms", fixed(n / 1e6, d)),
            Format::Mib(d) => format!("{} MiB", fixed(n / (1u64 << 20) as f64, d)),
        }
    }
}

/// `n` with `digits`, a minus sign for negatives, and never `-0`.
fn fixed(n: f64, digits: Digits) -> String {
    let d = digits.decimals(n);
    let text = format!("{n:.d$}");
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        Some(rest) => format!("−{rest}"),
        None => text,
    }
}

/// `n` rounded, thousands separated by commas.
fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n.round() < 0.0 {
        out.insert(0, '−');
    }
    out
}

/// `12.3 Gbit/s` as (`12.3`, ` Gbit/s`); `5.3×` as (`5.3`, `×`).
fn split_unit(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit() || c == '.' || c == ',' || (i == 0 && (c == '−' || c == '+')))
        })
        .map_or(text.len(), |(i, _)| i);
    text.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(spec: &str, v: f64) -> String {
        Format::parse(spec).unwrap().write(&Value::Number(v)).unwrap()
    }

    #[test]
    fn each_format_writes_its_rule() {
        assert_eq!(write("rate:2", 25_261_565_740.48), "25.26 Gbit/s");
        assert_eq!(write("rate:2", 999_996_000.0), "1.00 Gbit/s");
        assert_eq!(write("rate:0", 345_000_000.0), "345 Mbit/s");
        assert_eq!(write("rate:0", 583_000_000.0), "583 Mbit/s");
        assert_eq!(write("rate:0", 999.6), "1 kbit/s");
        assert_eq!(write("pct:1", 67.100_965), "67.1 %");
        assert_eq!(write("spct:0", -36.2), "−36 %");
        assert_eq!(write("spct:0", 13.4), "+13 %");
        assert_eq!(write("spct:0", -0.2), "0 %");
        assert_eq!(write("x:1", 5.26), "5.3×");
        assert_eq!(write("us:1", 67_600.0), "67.6 µs");
        assert_eq!(write("ms:2", 1_234_567.0), "1.23 ms");
        assert_eq!(write("mib:1", 23.7 * 1_048_576.0), "23.7 MiB");
        assert_eq!(write("int", 54_871.0), "54,871");
        assert_eq!(write("int", 999.0), "999");
        assert_eq!(write("num:3", -0.0001), "0.000");
        assert_eq!(write("num:1", -2.25), "−2.2");
        assert_eq!(write("rate:3s", 46_328_353_422.8), "46.3 Gbit/s");
        assert_eq!(write("rate:3s", 344_635_056.1), "345 Mbit/s");
        assert_eq!(write("rate:3s", 2_380_208_461.5), "2.38 Gbit/s");
        assert_eq!(write("us:3s", 49_535.0), "49.5 µs");
        assert_eq!(write("us:3s", 168_447.0), "168 µs");
        assert_eq!(write("us:3s", 99_960.0), "100 µs");
        assert_eq!(write("num:2s", 1_234.0), "1234");
    }

    #[test]
    fn a_range_names_its_unit_once() {
        let f = |spec: &str, v: Value| Format::parse(spec).unwrap().write(&v).unwrap();
        assert_eq!(f("rate:1", Value::Range(4.0e9, 8.46e9)), "4.0–8.5 Gbit/s");
        assert_eq!(f("rate:2", Value::Range(345e6, 2.38e9)), "345.00 Mbit/s–2.38 Gbit/s");
        assert_eq!(f("x:1", Value::Range(2.94, 5.3)), "2.9–5.3×");
        assert_eq!(f("ms:1", Value::Range(94e3, 112e3)), "0.1 ms");
        assert_eq!(f("spct:0", Value::Range(-13.0, -9.0)), "−13–−9 %");
    }

    #[test]
    fn bad_formats_and_text_are_refused() {
        assert!(Format::parse("rate:x").is_err() && Format::parse("gbps").is_err());
        assert!(Format::parse("rate:0s").is_err() && Format::parse("rate:10").is_err());
        assert!(Format::parse("pct:1").unwrap().write(&Value::Text("Debian".into())).is_err());
        assert!(Format::Raw.write(&Value::List(vec![1.0, 2.0])).is_err());
    }
}
