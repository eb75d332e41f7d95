//! ISP and place of an address, from MaxMind-format `.mmdb` files given with `--geoip`: ipinfo's
//! free country+ASN database (what LibreSpeed ships), MaxMind's GeoLite2/GeoIP2 ASN, ISP,
//! Country and City databases, or DB-IP's. Several files are merged, the first to know a field
//! winning. Nothing is looked up over the network.

use std::net::IpAddr;
use std::path::Path;

use maxminddb::Reader;
use serde::Serialize;
use serde_json::Value;

/// What the databases know of one address; empty strings where none knew.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Place {
    /// ISP or organisation name.
    pub isp: String,
    /// Autonomous system, `AS64496`.
    pub asn: String,
    /// Country name (English).
    pub country: String,
    /// ISO 3166 country code.
    pub country_code: String,
    /// First subdivision (state, province).
    pub region: String,
    /// City.
    pub city: String,
}

/// Open GeoIP databases.
#[derive(Default)]
pub struct GeoIp {
    readers: Vec<(String, Reader<Vec<u8>>)>,
}

impl std::fmt::Debug for GeoIp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.readers.iter().map(|(name, _)| name)).finish()
    }
}

/// Why a database could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("--geoip {path}: {why} (a MaxMind-format .mmdb file is expected)")]
pub struct GeoIpError {
    path: String,
    why: String,
}

impl GeoIp {
    /// Opens every file; the first that is missing or not an `.mmdb` file is an error.
    pub fn open(paths: &[impl AsRef<Path>]) -> Result<Self, GeoIpError> {
        let readers = paths
            .iter()
            .map(|p| {
                let path = p.as_ref().display().to_string();
                Reader::open_readfile(p.as_ref())
                    .map(|r| (path.clone(), r))
                    .map_err(|e| GeoIpError { path, why: e.to_string() })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { readers })
    }

    /// True when no database was given.
    pub fn is_empty(&self) -> bool {
        self.readers.is_empty()
    }

    /// What the databases say of `ip`.
    pub fn lookup(&self, ip: IpAddr) -> Place {
        let mut place = Place::default();
        for (name, reader) in &self.readers {
            match reader.lookup::<Value>(ip) {
                Ok(Some(record)) => merge(&mut place, &record),
                Ok(None) => {}
                // A damaged record is that database's problem, not the visitor's.
                Err(e) => tracing::debug!("GeoIP {name}: {ip}: {e}"),
            }
        }
        place
    }
}

/// The text at `path` (object keys, or array indexes as digits) in `v`.
fn text_at(v: &Value, path: &[&str]) -> Option<String> {
    let mut at = v;
    for key in path {
        at = match key.parse::<usize>() {
            Ok(i) => at.get(i)?,
            Err(_) => at.get(key)?,
        };
    }
    match at {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Fills the fields of `place` still empty from one database record, whatever its layout.
fn merge(place: &mut Place, r: &Value) {
    let first = |paths: &[&[&str]]| paths.iter().find_map(|p| text_at(r, p));
    let fill = |field: &mut String, found: Option<String>| {
        if field.is_empty() {
            if let Some(f) = found {
                *field = f;
            }
        }
    };
    fill(
        &mut place.isp,
        first(&[&["isp"], &["organization"], &["as_name"], &["autonomous_system_organization"]]),
    );
    let asn = first(&[&["asn"], &["autonomous_system_number"]]).map(|a| {
        if a.starts_with("AS") {
            a
        } else {
            format!("AS{a}")
        }
    });
    fill(&mut place.asn, asn);
    fill(&mut place.country, first(&[&["country_name"], &["country", "names", "en"]]));
    // ipinfo's `country` is the code itself; MaxMind's is an object holding it.
    let code = first(&[&["country", "iso_code"]]).or_else(|| {
        r.get("country").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
    });
    fill(&mut place.country_code, code);
    fill(&mut place.region, first(&[&["subdivisions", "0", "names", "en"], &["region"]]));
    fill(&mut place.city, first(&[&["city", "names", "en"], &["city"]]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_layout_fills_the_same_fields() {
        let mut ipinfo = Place::default();
        merge(
            &mut ipinfo,
            &json!({"as_name": "Example Net", "asn": "AS64496", "country": "NL", "country_name": "Netherlands"}),
        );
        assert_eq!(ipinfo.isp, "Example Net");
        assert_eq!(ipinfo.asn, "AS64496");
        assert_eq!(ipinfo.country, "Netherlands");
        assert_eq!(ipinfo.country_code, "NL");

        let mut maxmind = Place::default();
        merge(
            &mut maxmind,
            &json!({"autonomous_system_number": 64497, "autonomous_system_organization": "Other Net"}),
        );
        merge(
            &mut maxmind,
            &json!({"country": {"iso_code": "DE", "names": {"en": "Germany", "de": "Deutschland"}},
                    "subdivisions": [{"names": {"en": "Bavaria"}}], "city": {"names": {"en": "Munich"}}}),
        );
        assert_eq!(
            maxmind,
            Place {
                isp: "Other Net".into(),
                asn: "AS64497".into(),
                country: "Germany".into(),
                country_code: "DE".into(),
                region: "Bavaria".into(),
                city: "Munich".into(),
            }
        );
    }

    #[test]
    fn a_file_that_is_not_a_database_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.mmdb");
        std::fs::write(&path, b"not a database").unwrap();
        let err = GeoIp::open(&[&path]).unwrap_err().to_string();
        assert!(err.starts_with(&format!("--geoip {}", path.display())), "{err}");
        assert!(GeoIp::open(&[dir.path().join("missing.mmdb")]).is_err());
    }
}
