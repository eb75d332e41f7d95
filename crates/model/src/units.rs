//! Units carried in types, and the parsers for the quantities people type on a command line.
//!
//! Bit rates use decimal prefixes (`10M` = 10 000 000 bit/s) and byte sizes use binary ones
//! (`128K` = 131 072 bytes), the same convention iperf3 follows for `-b` versus `-n`/`-l`.
//! Formatting for people lives in the renderers, not here.

use std::fmt;
use std::time::Duration;

/// Why a quantity typed by a person could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text was empty.
    #[error("empty value")]
    Empty,
    /// The number part did not parse.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// The suffix is not one this quantity understands.
    #[error("unknown unit '{suffix}' in '{text}' (expected one of {expected})")]
    UnknownUnit {
        /// The whole input.
        text: String,
        /// The suffix that was not understood.
        suffix: String,
        /// The suffixes that are understood.
        expected: &'static str,
    },
    /// The value does not fit the quantity (negative, too large, not finite).
    #[error("'{0}' is out of range")]
    OutOfRange(String),
}

fn split_number(text: &str) -> Result<(f64, &str), ParseError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(text.len(), |(i, _)| i);
    let (num, suffix) = text.split_at(end);
    let value: f64 = num.parse().map_err(|_| ParseError::NotANumber(text.to_string()))?;
    if !value.is_finite() || value < 0.0 {
        return Err(ParseError::OutOfRange(text.to_string()));
    }
    Ok((value, suffix.trim()))
}

/// Parses a bit rate such as `0`, `500k`, `10M`, `1.5g` or `2Gbit` into bits per second.
pub fn parse_bitrate(text: &str) -> Result<u64, ParseError> {
    let (value, suffix) = split_number(text)?;
    let lower = suffix.to_ascii_lowercase();
    let stem = lower.trim_end_matches("bps").trim_end_matches("bit/s").trim_end_matches("bit");
    let factor = match stem {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(ParseError::UnknownUnit {
                text: text.to_string(),
                suffix: suffix.to_string(),
                expected: "k, M, G, T (decimal, bits per second)",
            })
        }
    };
    to_u64(value * factor, text)
}

/// Parses a byte size such as `1400`, `128K`, `4M`, `1G` or `2MiB` (binary prefixes).
pub fn parse_bytes(text: &str) -> Result<u64, ParseError> {
    let (value, suffix) = split_number(text)?;
    let lower = suffix.to_ascii_lowercase();
    let stem = lower.trim_end_matches("ib").trim_end_matches('b');
    let factor = match stem {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(ParseError::UnknownUnit {
                text: text.to_string(),
                suffix: suffix.to_string(),
                expected: "K, M, G, T (binary, bytes)",
            })
        }
    };
    to_u64(value * factor, text)
}

/// Parses a duration such as `10`, `2.5s`, `500ms`, `1m` or `1h` (plain numbers are seconds).
pub fn parse_duration(text: &str) -> Result<Duration, ParseError> {
    let (value, suffix) = split_number(text)?;
    let seconds = match suffix.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(ParseError::UnknownUnit {
                text: text.to_string(),
                suffix: suffix.to_string(),
                expected: "us, ms, s, m, h",
            })
        }
    };
    if seconds > 1e9 {
        return Err(ParseError::OutOfRange(text.to_string()));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn to_u64(value: f64, text: &str) -> Result<u64, ParseError> {
    if value > u64::MAX as f64 {
        return Err(ParseError::OutOfRange(text.to_string()));
    }
    Ok(value.round() as u64)
}

/// A moment in UTC broken into calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    /// Year (proleptic Gregorian).
    pub year: i64,
    /// Month, 1..=12.
    pub month: u32,
    /// Day of the month, 1..=31.
    pub day: u32,
    /// Hour, minute, second.
    pub hms: (u32, u32, u32),
    /// Day of the week, 0 = Sunday.
    pub weekday: u32,
}

impl CivilTime {
    /// The calendar fields of `secs` seconds since the Unix epoch, in UTC.
    pub fn from_unix(secs: i64) -> Self {
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        let hms = ((rem / 3600) as u32, (rem % 3600 / 60) as u32, (rem % 60) as u32);
        // 1970-01-01 was a Thursday.
        let weekday = (days + 4).rem_euclid(7) as u32;
        Self { year, month, day, hms, weekday }
    }
}

/// Bits per second over `bytes` moved in `nanos` nanoseconds; 0 when no time passed.
pub fn bits_per_second(bytes: u64, nanos: u64) -> f64 {
    if nanos == 0 {
        return 0.0;
    }
    bytes as f64 * 8.0 * 1e9 / nanos as f64
}

/// A count of bytes, kept as a type so it is never mixed up with bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitrates_are_decimal() {
        assert_eq!(parse_bitrate("0").unwrap(), 0);
        assert_eq!(parse_bitrate("10M").unwrap(), 10_000_000);
        assert_eq!(parse_bitrate("1.5g").unwrap(), 1_500_000_000);
        assert_eq!(parse_bitrate("2Gbit").unwrap(), 2_000_000_000);
        assert_eq!(parse_bitrate("250kbps").unwrap(), 250_000);
        assert!(matches!(parse_bitrate("10X"), Err(ParseError::UnknownUnit { .. })));
        assert!(matches!(parse_bitrate("-1"), Err(ParseError::NotANumber(_))));
        assert!(matches!(parse_bitrate(""), Err(ParseError::Empty)));
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(parse_bytes("1400").unwrap(), 1400);
        assert_eq!(parse_bytes("128K").unwrap(), 131_072);
        assert_eq!(parse_bytes("2MiB").unwrap(), 2 * 1024 * 1024);
        assert_eq!(parse_bytes("1G").unwrap(), 1 << 30);
        assert!(parse_bytes("3 parsecs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("1y").is_err());
    }

    #[test]
    fn rate_from_bytes_and_time() {
        assert_eq!(bits_per_second(125_000_000, 1_000_000_000), 1e9);
        assert_eq!(bits_per_second(5, 0), 0.0);
    }
}
