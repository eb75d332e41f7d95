//! HTML reports open in a real browser: Debian's Chromium, headless, from a file with the
//! network closed. Every chart must be drawn with ink on its canvas, no script may fail, and the
//! screenshot must not be blank. scripts/test.sh installs Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{client, server};

fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("Chromium is not installed: run scripts/test.sh, which installs Debian's chromium")
}

/// Chromium with the flags that keep it off the network and out of the user's profile.
fn headless(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        "--window-size=1200,1600",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The attribute `name` of the `<body>` tag in `dom`.
fn body_attr(dom: &str, name: &str) -> Option<u32> {
    let body = &dom[dom.find("<body")?..];
    let body = &body[..body.find('>')?];
    let at = body.find(&format!("{name}=\""))? + name.len() + 2;
    body[at..].split('"').next()?.parse().ok()
}

/// Opens `page` and checks that all its charts rendered; returns how many there were.
fn renders(page: &Path, dir: &Path) -> u32 {
    let html = std::fs::read_to_string(page).unwrap();
    let canvases = html.matches("<canvas").count() as u32;
    assert!(canvases > 0, "{}: no charts on the page", page.display());
    let url = format!("file://{}", page.display());
    let dom = headless(&dir.join("profile-dom")).arg("--dump-dom").arg(&url).output().unwrap();
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        body_attr(&dom, "data-errors"),
        Some(0),
        "script errors: {}",
        &dom[dom.find("<ul id=\"errors\"").unwrap_or(0)..]
    );
    assert_eq!(body_attr(&dom, "data-charts"), Some(canvases), "charts drawn, of {canvases}");
    assert_eq!(body_attr(&dom, "data-inked"), Some(canvases), "charts with pixels, of {canvases}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "the page logged to the console: {console:#?}");

    let shot = dir.join("shot.png");
    let _ = std::fs::remove_file(&shot);
    let out = headless(&dir.join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let coloured = buf
        .chunks(px)
        .filter(|p| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            (r - g).abs() > 60 || (g - b).abs() > 60 || (r - b).abs() > 60
        })
        .count();
    // Chart lines and bars are the only saturated colours on the page.
    assert!(coloured > 2_000, "screenshot looks blank: {coloured} coloured pixels");
    canvases
}

#[test]
fn html_reports_render_their_charts_in_headless_chromium() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    for args in [
        vec!["bw", &target, "-t", "1", "-i", "0.2"],
        vec!["bw", &target, "-t", "1", "-i", "0.2", "-P", "2"],
        vec!["lat", &target, "-t", "1", "-i", "0.2"],
    ] {
        let out = client(&[&args[..], &["--db", db]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let export = dir.path().join("runs.html");
    let out =
        client(&["export", "1", "3", "-f", "html", "--db", db, "-o", export.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    // A bandwidth run has one chart; a latency run four (rate, percentiles, histogram, CDF).
    assert_eq!(renders(&export, dir.path()), 5);

    let cmp = client(&["compare", "1", "2", "-f", "html", "--db", db]);
    assert_eq!(cmp.status.code(), Some(0));
    let cmp_page = dir.path().join("compare.html");
    std::fs::write(&cmp_page, &cmp.stdout).unwrap();
    // Bars for throughput and retransmits, and both runs' rates over time.
    assert_eq!(renders(&cmp_page, dir.path()), 3);

    let live = client(&["lat", &target, "-t", "0.6", "-i", "0.2", "-f", "html", "--no-save"]);
    assert_eq!(live.status.code(), Some(0));
    let live_page = dir.path().join("live.html");
    std::fs::write(&live_page, &live.stdout).unwrap();
    assert_eq!(renders(&live_page, dir.path()), 4);
}

#[test]
fn a_bench_summary_renders_its_charts_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        r#"
[scenario]
name = "summary"
[run]
repeat = 2
[[fixture]]
name = "sink"
kind = "bandwidth-sink"
[[system]]
name = "direct"
entry = "{fixture.sink.addr}"
[[system]]
name = "proxy"
entry = "127.0.0.1:{port.entry}"
process = [ { role = "socat", cmd = "socat TCP4-LISTEN:{port.entry},bind=127.0.0.1,reuseaddr,fork TCP4:{fixture.sink.addr}", ready = { tcp = "{port.entry}" } } ]
[[workload]]
name = "rtt"
kind = "latency"
time = "0.5s"
[report]
baseline = "direct"
"#,
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out =
        client(&["bench", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--no-save"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // The round trips per system, the proxy's memory over time, and its peak.
    assert_eq!(renders(&out_dir.join("summary.html"), dir.path()), 3);
}
