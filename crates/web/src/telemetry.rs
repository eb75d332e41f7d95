//! A LibreSpeed client's result POST (`results/telemetry.php`): multipart form data from the JS
//! frontend and librespeed-cli, or urlencoded. LibreSpeed stores every field as text of any
//! length; here the figures must be numbers in range, and the free-text fields are capped and
//! kept out of the store altogether (who the client is comes from the server's own GeoIP).

use bytes::Bytes;

/// Largest telemetry body read.
pub const MAX_BODY: usize = 64 * 1024;
/// Largest single field.
const MAX_FIELD: usize = 16 * 1024;
/// Largest figure accepted: Mbit/s and ms alike (10 Tbit/s; 10 000 s).
const MAX_FIGURE: f64 = 1e7;

/// The figures a client reports, as LibreSpeed sends them (Mbit/s and ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claims {
    /// Download, Mbit/s.
    pub dl_mbps: Option<f64>,
    /// Upload, Mbit/s.
    pub ul_mbps: Option<f64>,
    /// Ping, ms.
    pub ping_ms: Option<f64>,
    /// Jitter, ms.
    pub jitter_ms: Option<f64>,
    /// Median round trip during the download, ms (wirespeed's page only: LibreSpeed's
    /// telemetry has no such field).
    pub latency_down_ms: Option<f64>,
    /// Median round trip during the upload, ms (wirespeed's page only).
    pub latency_up_ms: Option<f64>,
}

/// A figure field: empty and `Fail` mean "not measured"; anything else must be a number.
fn figure(name: &str, value: &str) -> Result<Option<f64>, String> {
    let v = value.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("fail") {
        return Ok(None);
    }
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && (0.0..=MAX_FIGURE).contains(x))
        .map(Some)
        .ok_or_else(|| {
            format!("{name}: expected a number from 0 to {MAX_FIGURE}, got {:?}", clip(v))
        })
}

/// At most 40 characters of `s`, for error messages.
fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

impl Claims {
    /// A result is a speed test's: one with ping and jitter alone was saved as a result with
    /// no speeds and, one result a network being the default, replaced that network's real one.
    pub fn has_a_speed(&self) -> Result<(), &'static str> {
        if self.dl_mbps.is_none() && self.ul_mbps.is_none() {
            return Err("a result needs a download or an upload figure (dl, ul): one without \
                        either is not a speed test's, and is not saved");
        }
        Ok(())
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        if value.len() > MAX_FIELD {
            return Err(format!("{name}: longer than {MAX_FIELD} bytes"));
        }
        let slot = match name {
            "dl" => &mut self.dl_mbps,
            "ul" => &mut self.ul_mbps,
            "ping" => &mut self.ping_ms,
            "jitter" => &mut self.jitter_ms,
            // ispinfo, log, extra and anything else: read (and capped), not kept.
            _ => return Ok(()),
        };
        *slot = figure(name, value)?;
        Ok(())
    }
}

/// Parses a telemetry body of `content_type`.
pub async fn parse(content_type: Option<&str>, body: Bytes) -> Result<Claims, String> {
    let mut claims = Claims::default();
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    if ct.starts_with("multipart/form-data") {
        let boundary = multer::parse_boundary(content_type.unwrap_or(""))
            .map_err(|e| format!("multipart body: {e}"))?;
        let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
        let constraints = multer::Constraints::new().size_limit(
            multer::SizeLimit::new().whole_stream(MAX_BODY as u64).per_field(MAX_FIELD as u64 + 1),
        );
        let mut form = multer::Multipart::with_constraints(stream, boundary, constraints);
        while let Some(field) =
            form.next_field().await.map_err(|e| format!("multipart body: {e}"))?
        {
            let name = field.name().unwrap_or("").to_string();
            let value = field.text().await.map_err(|e| format!("field {name}: {e}"))?;
            claims.set(&name, &value)?;
        }
    } else if ct.is_empty() || ct.starts_with("application/x-www-form-urlencoded") {
        for (name, value) in form_urlencoded::parse(&body) {
            claims.set(&name, &value)?;
        }
    } else {
        return Err(format!(
            "Content-Type {}: expected multipart/form-data or application/x-www-form-urlencoded",
            clip(&ct)
        ));
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn urlencoded_and_multipart_give_the_same_claims() {
        let want = Claims {
            dl_mbps: Some(93.5),
            ul_mbps: None,
            ping_ms: Some(4.0),
            jitter_ms: Some(0.5),
            ..Claims::default()
        };
        let url = block_on(parse(
            Some("application/x-www-form-urlencoded"),
            Bytes::from("ispinfo=%7B%7D&dl=93.50&ul=Fail&ping=4.00&jitter=0.50&log=&extra="),
        ));
        assert_eq!(url.unwrap(), want);
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"dl\"\r\n\r\n93.50\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"ul\"\r\n\r\n\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"ping\"\r\n\r\n4\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"jitter\"\r\n\r\n0.5\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"ispinfo\"\r\n\r\n{\"processedString\":\"x\"}\r\n\
                    --XyZ--\r\n";
        let multi = block_on(parse(Some("multipart/form-data; boundary=XyZ"), Bytes::from(body)));
        assert_eq!(multi.unwrap(), want);
    }

    #[test]
    fn figures_must_be_numbers_in_range() {
        for (body, field) in [
            ("dl=<script>alert(1)</script>", "dl: expected a number"),
            ("ul=-5", "ul: expected a number"),
            ("ping=NaN", "ping: expected a number"),
            ("jitter=1e308", "jitter: expected a number"),
        ] {
            let err = block_on(parse(None, Bytes::from(body))).unwrap_err();
            assert!(err.starts_with(field), "{body}: {err}");
        }
        let long = format!("log={}", "a".repeat(MAX_FIELD + 1));
        assert!(block_on(parse(None, Bytes::from(long))).unwrap_err().contains("longer than"));
        let err = block_on(parse(Some("application/json"), Bytes::from("{}"))).unwrap_err();
        assert!(err.starts_with("Content-Type application/json"), "{err}");
        let err =
            block_on(parse(Some("multipart/form-data; boundary=Q"), Bytes::from("--Q\r\ngarbage")));
        assert!(err.unwrap_err().starts_with("multipart body"));
    }
}
