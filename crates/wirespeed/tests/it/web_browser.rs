//! The speed-test page in real headless Chromium (Debian's, driven by playwright-core from npm;
//! scripts/test.sh installs both): a full test over IPv4 and over IPv6, plausible figures on
//! the page, the result saved with what the server measured, and the results page listing it
//! with its charts drawn — and showing a stored `<img onerror>` as text, not markup; the
//! latency under load the page measured, shown, saved and graded; and the page on a
//! phone-sized screen in dark mode.

use std::path::Path;
use std::process::Command;

use crate::common::web::web;

/// Runs the page at `url` through `tests/browser/speedtest.mjs`; returns what it printed.
fn run_page(url: &str, shots: &Path) -> serde_json::Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "playwright-core is not installed: run scripts/test.sh (npm ci in {})",
        dir.display()
    );
    let out = Command::new("node")
        .arg("speedtest.mjs")
        .args([url, "3", shots.to_str().unwrap()])
        .current_dir(&dir)
        .output()
        .expect("node is not installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_full_test_in_chromium_is_saved_and_listed() {
    let w = web(&["-B", "::1", "--same-ip-multi-results"]);
    // A stored field with markup in it, for the results page to show as text.
    let evil = r#"<img src=x onerror="window.__pwned=1"><b>bold</b>"#;
    let t = w.post(
        [127, 0, 0, 1],
        "/results/telemetry.php",
        &format!("User-Agent: {evil}\r\n"),
        b"dl=1&ul=1&ping=1&jitter=1",
    );
    assert_eq!(t.status, 200);

    for (host, family, label) in
        [("127.0.0.1", "IPv4", "localhost IPv4 access"), ("[::1]", "IPv6", "localhost IPv6 access")]
    {
        let shots = tempfile::tempdir().unwrap();
        let url = format!("http://{host}:{}/", w.port);
        let page = run_page(&url, shots.path());
        assert_eq!(page["errors"], serde_json::json!([]), "{family}: {page}");
        assert_eq!(page["state"], "done", "{family}: {}", page["status"]);
        let client = page["client"].as_str().unwrap();
        assert!(client.contains(label) && client.contains(family), "{client}");
        // Plausible figures: loopback moves more than 10 Mbit/s and answers within a second.
        for k in ["dl", "ul"] {
            assert!(page[k].as_f64().unwrap() > 10.0, "{family} {k}: {page}");
        }
        let ping = page["ping"].as_f64().unwrap();
        assert!(ping > 0.0 && ping < 1000.0, "{family} ping {ping}");
        // Jitter (the mean change between successive pings) is at most their spread: under a
        // second on loopback, and never negative.
        let jitter = page["jitter"].as_f64().unwrap();
        assert!((0.0..1000.0).contains(&jitter), "{family} jitter {jitter}");
        // Round trips under each load, each measured and shown, graded against the ping.
        let (lat_down, lat_up) = (page["latDown"].as_f64(), page["latUp"].as_f64());
        for lat in [lat_down, lat_up] {
            assert!(lat.is_some_and(|ms| ms > 0.0 && ms < 1000.0), "{family}: {page}");
        }
        let grade = page["grade"].as_str().unwrap();
        assert!(["A+", "A", "B", "C", "D", "F"].contains(&grade), "{family}: grade {grade}");

        // Saved, from what the server measured, and shown as the page showed it.
        let id = page["id"].as_str().unwrap();
        let saved = w.saved();
        let r = saved.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("{id} not saved"));
        assert!(r.download_by_server && r.upload_by_server, "{r:?}");
        assert_eq!(r.source, wirespeed_model::web::WebSource::Page);
        assert!(r.user_agent.contains("Chrome"), "{}", r.user_agent);
        let shown_dl = page["dl"].as_f64().unwrap();
        let saved_dl = r.download_bps.unwrap() / 1e6;
        assert!((shown_dl - saved_dl).abs() <= saved_dl * 0.01 + 0.01, "{shown_dl} vs {saved_dl}");
        assert_eq!(r.network, if family == "IPv4" { "127.0.0.0/24" } else { "::/56" });
        // The ping, jitter and latencies saved are those shown (the page rounds to 0.1 ms), with
        // the latencies' grade.
        let shown = |saved: Option<f64>, shown: Option<f64>| {
            (saved.unwrap() - shown.unwrap()).abs() <= 0.051
        };
        assert!(shown(r.ping_ms, Some(ping)), "{r:?} vs ping {ping}");
        assert!(shown(r.jitter_ms, Some(jitter)), "{r:?} vs jitter {jitter}");
        assert!(shown(r.latency_down_ms, lat_down), "{r:?} vs {lat_down:?}");
        assert!(shown(r.latency_up_ms, lat_up), "{r:?} vs {lat_up:?}");
        assert_eq!(r.latency_grade.as_deref(), Some(grade));
        assert_eq!(
            r.latency_grade.as_deref(),
            wirespeed_model::web::latency_grade(r.ping_ms, r.latency_down_ms, r.latency_up_ms)
        );

        // The results page lists it, marked, with both charts drawn.
        assert_eq!(page["resultsState"], "ready");
        assert_eq!(page["marked"], serde_json::json!([id]));
        // Speeds by ISP and by region, latency by ISP (this result's group has it).
        assert_eq!(page["inkedCharts"], 3);
        let marked = &page["markedCells"][0];
        assert!(marked.as_array().unwrap().iter().any(|c| c == grade), "{marked}");
        assert_eq!(page["injected"], 0, "markup in a stored field became elements");
        assert_eq!(page["pwned"], false);
        let rows = page["rows"].as_array().unwrap();
        assert!(
            rows.iter().any(|row| row.as_array().unwrap().iter().any(|c| c == evil)),
            "{rows:?}"
        );
        assert!(shots.path().join("results.png").exists());
        // Usable on a phone, and dark when the phone is.
        let phone = &page["phone"];
        assert!(phone["overflow"].as_f64().unwrap() <= 0.0, "wider than a phone: {phone}");
        assert!(phone["background"].as_f64().unwrap() < 60.0, "not dark: {phone}");
        assert!(phone["text"].as_f64().unwrap() > 180.0, "text not light: {phone}");
    }
}
