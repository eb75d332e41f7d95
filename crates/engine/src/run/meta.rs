//! The facts a report carries that are not measurements: version, host name, start time
//! (RFC 3339 and Unix milliseconds) and the far end. Every kind's client starts its report's
//! meta here, with a control connection or without one.

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use wirespeed_model::report::Meta;
use wirespeed_model::units::CivilTime;

/// A report's meta for a run that started at `start_wall` against `remote` (the control
/// connection's far end, or the target of a test that has none).
pub fn run_meta(version: &str, start_wall: SystemTime, remote: Option<SocketAddr>) -> Meta {
    Meta {
        version: version.to_string(),
        host: hostname(),
        start_time: humantime_rfc3339(start_wall),
        start_unix_ms: start_wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
        local_addr: None,
        remote_addr: remote.map(|a| a.to_string()),
        server_version: None,
        notes: Vec::new(),
        member: None,
        histograms: None,
        merged: None,
        links: Vec::new(),
        diagnosis: None,
        load_cpu: None,
    }
}

/// This machine's host name, empty when the system will not say.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `t` as RFC 3339 in UTC with second precision.
pub(crate) fn humantime_rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let c = CivilTime::from_unix(secs);
    let (h, m, s) = c.hms;
    format!("{:04}-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z", c.year, c.month, c.day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(humantime_rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            humantime_rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_212_800)),
            "2026-12-02T12:00:00Z"
        );
        assert_eq!(
            humantime_rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }
}
