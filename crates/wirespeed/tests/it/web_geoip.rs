//! Visitors' ISP, country and region from `.mmdb` files given with `--geoip`: an ipinfo-style
//! country+ASN database and a MaxMind City-style one, written for the test (and read back with
//! libmaxminddb's `mmdblookup`, so they are real MaxMind DB files), merged field by field. The
//! visitors are documentation addresses forwarded by a trusted proxy on loopback.

use std::process::Command;

use crate::common;
use crate::common::mmdb::{self, Value};
use crate::common::web::web;

fn ipinfo_db() -> Vec<u8> {
    mmdb::write(
        "ipinfo country_asn.mmdb",
        vec![(
            "198.51.100.0".parse().unwrap(),
            24,
            Value::Map(vec![
                ("as_name", Value::Str("Example Net")),
                ("asn", Value::Str("AS64496")),
                ("country", Value::Str("NL")),
                ("country_name", Value::Str("Netherlands")),
            ]),
        )],
    )
}

fn city_db() -> Vec<u8> {
    let en = |s: &'static str| Value::Map(vec![("names", Value::Map(vec![("en", Value::Str(s))]))]);
    mmdb::write(
        "GeoLite2-City",
        vec![
            (
                "2001:db8:100::".parse().unwrap(),
                40,
                Value::Map(vec![
                    ("city", en("Munich")),
                    (
                        "country",
                        Value::Map(vec![
                            ("iso_code", Value::Str("DE")),
                            ("names", Value::Map(vec![("en", Value::Str("Germany"))])),
                        ]),
                    ),
                    ("subdivisions", Value::Array(vec![en("Bavaria")])),
                ]),
            ),
            ("198.51.100.0".parse().unwrap(), 24, Value::Map(vec![("city", en("Amsterdam"))])),
        ],
    )
}

#[test]
fn isp_and_place_come_from_the_databases() {
    let dir = tempfile::tempdir().unwrap();
    let (asn, city) = (dir.path().join("country_asn.mmdb"), dir.path().join("city.mmdb"));
    std::fs::write(&asn, ipinfo_db()).unwrap();
    std::fs::write(&city, city_db()).unwrap();
    // MaxMind's own reader agrees the files are what they say.
    let look = Command::new("mmdblookup")
        .args(["--file", asn.to_str().unwrap(), "--ip", "198.51.100.7", "as_name"])
        .output()
        .expect("mmdblookup is not installed: run scripts/test.sh (Debian's mmdb-bin)");
    assert!(String::from_utf8_lossy(&look.stdout).contains("\"Example Net\""), "{look:?}");
    let look = Command::new("mmdblookup")
        .args([
            "--file",
            city.to_str().unwrap(),
            "--ip",
            "2001:db8:100::9",
            "subdivisions",
            "0",
            "names",
            "en",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&look.stdout).contains("\"Bavaria\""), "{look:?}");

    let w = web(&[
        "--geoip",
        asn.to_str().unwrap(),
        "--geoip",
        city.to_str().unwrap(),
        "--trusted-proxy",
        "127.0.0.1/32",
        "--same-ip-multi-results",
    ]);
    let me = [127, 0, 0, 1];
    let via = |ip: &str| format!("X-Forwarded-For: {ip}\r\n");

    let ip = w.get_with(me, "/backend/getIP.php?isp=true", &via("198.51.100.7")).json();
    assert_eq!(ip["processedString"], "198.51.100.7 - Example Net, Netherlands");
    assert_eq!(ip["rawIspInfo"]["org"], "AS64496 Example Net");
    assert_eq!(ip["rawIspInfo"]["country"], "NL");
    assert_eq!(ip["rawIspInfo"]["city"], "Amsterdam", "merged from the second file");
    let ip = w.get_with(me, "/getIP?isp", &via("2001:db8:100::9")).json();
    assert_eq!(ip["processedString"], "2001:db8:100::9 - Germany");
    assert_eq!(ip["rawIspInfo"]["region"], "Bavaria");
    let unknown = w.get_with(me, "/getIP?isp", &via("203.0.113.1")).json();
    assert_eq!(unknown["processedString"], "203.0.113.1");

    for ip in ["198.51.100.7", "2001:db8:100::9"] {
        let t = w.post(me, "/results/telemetry.php", &via(ip), b"dl=10&ul=5&ping=20&jitter=2");
        assert_eq!(t.status, 200);
    }
    let saved = w.saved();
    assert_eq!(
        (saved[0].network.as_str(), saved[0].country.as_str()),
        ("2001:db8:100::/56", "Germany")
    );
    assert_eq!(saved[0].region, "Munich, Bavaria");
    assert_eq!((saved[1].isp.as_str(), saved[1].region.as_str()), ("Example Net", "Amsterdam"));

    let listed = w.get(me, "/api/results?country=nether").json();
    assert_eq!(listed["results"].as_array().unwrap().len(), 1);
    let all = w.get(me, "/api/results").json();
    let regions: Vec<&str> =
        all["by_region"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(regions, ["Amsterdam, Netherlands", "Munich, Bavaria, Germany"]);

    // A file that is not a database stops the server from starting, saying which.
    let bad = dir.path().join("bad.mmdb");
    std::fs::write(&bad, b"not a database").unwrap();
    let out = common::client(&["web", "--no-save", "--geoip", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("--geoip {}", bad.display())));
}
