//! Saved results end to end: real runs against a real server process, then `history`, `show`,
//! `export`, `compare`, `rm` and `retention` on the database they were saved in, charts that
//! must parse, and databases that must be refused without being touched.

use std::path::Path;

use crate::common::{self, client, server};

fn ok(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Three real runs saved in `db`: bandwidth with 1 stream (tag "one"), with 2 (tag "two"),
/// and a latency run. Returns the CSV the first run printed.
fn three_runs(db: &str) -> String {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let first = ok(&client(&[
        "bw", &target, "-t", "1", "-i", "0.2", "-f", "csv", "--db", db, "--tag", "one",
    ]));
    ok(&client(&["bw", &target, "-t", "1", "-i", "0.2", "-P", "2", "--db", db, "--tag", "two"]));
    ok(&client(&["lat", &target, "-t", "1", "-i", "0.2", "--db", db]));
    first
}

fn svg_parses(path: &Path) -> roxmltree::Document<'static> {
    let text: &'static str = Box::leak(std::fs::read_to_string(path).unwrap().into_boxed_str());
    let doc =
        roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc
}

fn png_size(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let info = decoder.read_info().unwrap();
    (info.info().width, info.info().height)
}

#[test]
fn history_show_export_compare_rm_and_retention_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("r.db");
    saved_runs_end_to_end(db_path.to_str().unwrap(), dir.path());
}

/// The same commands, word for word, on a shared PostgreSQL database.
#[test]
fn history_show_export_compare_rm_and_retention_on_postgres() {
    let Some(pg) = wirespeed_testkit::postgres::TestPostgres::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    saved_runs_end_to_end(&pg.url(), dir.path());
}

/// Three real runs saved in `db`, then every command on saved results, charts written to `dir`.
fn saved_runs_end_to_end(db: &str, dir: &Path) {
    let first_csv = three_runs(db);

    // history: newest first, filters, formats.
    let text = ok(&client(&["history", "--db", db]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with("ID") && lines[1].contains("latency") && lines[3].contains("one"),
        "{text}"
    );
    assert!(lines[3].contains("bit/s"), "the headline is shown: {text}");
    let one_kind = ok(&client(&["history", "--db", db, "--kind", "latency"]));
    assert_eq!(one_kind.lines().count(), 2, "{one_kind}");
    let tagged = ok(&client(&["history", "--db", db, "--tag", "TWO", "-f", "json"]));
    let tagged: serde_json::Value = serde_json::from_str(&tagged).unwrap();
    assert_eq!(tagged.as_array().unwrap().len(), 1);
    assert_eq!(tagged[0]["tag"], "two");
    assert_eq!(tagged[0]["headline_unit"], "bit/s");
    assert!(tagged[0]["headline"].as_f64().unwrap() > 0.0);
    assert_eq!(
        ok(&client(&["history", "--db", db, "--since", "1h", "-n", "2"])).lines().count(),
        3
    );
    assert_eq!(
        ok(&client(&["history", "--db", db, "--until", "2020-01-01"])),
        "no saved runs match\n"
    );
    assert!(ok(&client(&["history", "--db", db, "-f", "csv"]))
        .starts_with("ID,Started (UTC),Kind,Target,Result,Unit,Tag\n"));
    assert!(ok(&client(&["history", "--db", db, "-f", "md"])).starts_with("| ID |"));

    // show: exactly what the run printed, and the saved report as JSON.
    assert_eq!(ok(&client(&["show", "1", "--db", db, "-f", "csv"])), first_csv);
    let shown: serde_json::Value =
        serde_json::from_str(&ok(&client(&["show", "last", "--db", db, "-f", "json"]))).unwrap();
    assert_eq!(shown["kind"], "latency");
    assert!(
        ok(&client(&["show", "last~1", "--db", db])).contains("sender"),
        "text of the 2-stream run"
    );
    let md = ok(&client(&["show", "1", "--db", db, "-f", "md"]));
    assert!(md.contains("## Run #1: bandwidth") && md.contains("- **Tag:** one"), "{md}");
    // The diagnosis is kept with the run: both ends' threads, the server's from its results.
    assert!(md.contains("### Tester") && md.contains("| server | ws-rx-u1 |"), "{md}");
    let first: serde_json::Value =
        serde_json::from_str(&ok(&client(&["show", "1", "--db", db, "-f", "json"]))).unwrap();
    let diagnosis = &first["meta"]["diagnosis"];
    assert!(diagnosis["client_threads"].as_array().is_some_and(|t| !t.is_empty()), "{diagnosis}");
    assert_eq!(diagnosis["server_threads"][0]["name"], "ws-rx-u1", "{diagnosis}");
    assert!(diagnosis["findings"].is_array(), "{diagnosis}");

    // export: every format.
    let json: serde_json::Value =
        serde_json::from_str(&ok(&client(&["export", "1", "3", "--db", db]))).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    assert_eq!(
        (json[0]["id"].as_i64(), json[1]["report"]["kind"].as_str()),
        (Some(1), Some("latency"))
    );
    let csv = ok(&client(&["export", "1", "2", "3", "--db", db, "-f", "csv"]));
    assert!(csv.starts_with("id,kind,target,started_at,tag,figure,unit,value,"), "{csv}");
    assert!(csv.contains(",throughput_bps,bit/s,") && csv.contains(",rtt_p99_ns,ns,"), "{csv}");
    let html = dir.join("runs.html");
    ok(&client(&["export", "1", "3", "--db", db, "-f", "html", "-o", html.to_str().unwrap()]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<canvas") && page.contains("Chart.js v4"));

    // compare: the spec difference is named, verdicts are given, charts parse.
    let cmp = ok(&client(&["compare", "1", "2", "--db", db]));
    assert!(cmp.contains("parallel: 1 → 2"), "{cmp}");
    assert!(cmp.contains("#2 two is ") && cmp.contains(" times #1 one in Throughput: "), "{cmp}");
    let cj: serde_json::Value =
        serde_json::from_str(&ok(&client(&["compare", "1", "2", "--db", db, "-f", "json"])))
            .unwrap();
    let runs = cj["figures"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs[1]["ratio_low"].as_f64().unwrap() <= runs[1]["ratio"].as_f64().unwrap());
    assert!(runs[1]["ratio"].as_f64().unwrap() <= runs[1]["ratio_high"].as_f64().unwrap());
    let svg = dir.join("cmp.svg");
    ok(&client(&["compare", "1", "2", "--db", db, "--chart", svg.to_str().unwrap()]));
    let doc = svg_parses(&svg);
    assert!(doc
        .descendants()
        .any(|n| n.text().is_some_and(|t| t.contains("Throughput (median of intervals)"))));
    let mixed = client(&["compare", "1", "3", "--db", db]);
    assert_eq!(mixed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&mixed.stderr)
        .contains("cannot compare a bandwidth run with a latency run"));

    // charts from show and from a test run.
    let png = dir.join("lat.png");
    ok(&client(&["show", "3", "--db", db, "--chart", png.to_str().unwrap()]));
    let (w, h) = png_size(&png);
    assert!(w > 0 && h > w, "four stacked charts: {w}x{h}");
    let lat_svg = dir.join("lat.svg");
    ok(&client(&["show", "3", "--db", db, "--chart", lat_svg.to_str().unwrap()]));
    let lat_doc = svg_parses(&lat_svg);
    for title in ["Latency percentiles per interval", "Latency histogram", "Latency CDF"] {
        assert!(
            lat_doc.descendants().any(|n| n.text().is_some_and(|t| t.contains(title))),
            "{title}"
        );
    }
    let bad_chart = client(&["show", "3", "--db", db, "--chart", "x.gif"]);
    assert_eq!(bad_chart.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad_chart.stderr).contains("must end in .svg or .png"));

    // rm and unknown runs.
    let gone = client(&["rm", "2", "99", "--db", db]);
    assert_eq!(gone.status.code(), Some(9));
    assert!(String::from_utf8_lossy(&gone.stdout).contains("removed 1 run; 2 left"));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("no saved run 99"));
    for args in
        [&["show", "2"][..], &["export", "1", "2"], &["compare", "1", "2"], &["show", "last~5"]]
    {
        let out = client(&[args, &["--db", db]].concat());
        assert_eq!(
            out.status.code(),
            Some(9),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bogus = client(&["show", "latest", "--db", db]);
    assert_eq!(bogus.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bogus.stderr).contains("use an id, `last` or `last~N`"));

    // retention: set, applied at once and after each save, shown, turned off.
    let set = ok(&client(&["retention", "--keep", "1", "--db", db]));
    assert!(
        set.contains("removed 1 run") && set.contains("keep the newest 1 runs (1 saved now"),
        "{set}"
    );
    assert_eq!(ok(&client(&["history", "--db", db])).lines().count(), 2);
    assert!(ok(&client(&["retention", "--off", "--db", db])).contains("keep all runs"));
    let pruned = ok(&client(&["rm", "--keep", "0", "--db", db]));
    assert!(pruned.contains("removed 1 run; 0 left"), "{pruned}");
}

#[test]
fn a_test_run_draws_its_chart_and_refuses_a_bad_chart_name_before_running() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("bw.png");
    ok(&client(&[
        "bw",
        &target,
        "-t",
        "0.6",
        "-i",
        "0.2",
        "--no-save",
        "--chart",
        png.to_str().unwrap(),
    ]));
    assert_eq!(png_size(&png).0, 960);
    let bad = client(&["bw", &target, "-t", "30", "--no-save", "--chart", "bw.jpeg"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must end in .svg or .png"));
}

/// Every file in `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn corrupt_foreign_and_newer_databases_are_refused_and_left_untouched() {
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    type Make = fn(&Path);
    let cases: [(&str, Make); 3] = [
        ("corrupt", |p| std::fs::write(p, b"not a database at all\n".repeat(100)).unwrap()),
        ("foreign", |p| {
            rusqlite::Connection::open(p)
                .unwrap()
                .execute_batch("CREATE TABLE recipes (name TEXT)")
                .unwrap()
        }),
        ("newer", |p| {
            drop(wirespeed_store::Store::open(p).unwrap());
            let c = rusqlite::Connection::open(p).unwrap();
            c.pragma_update(None, "user_version", 999).unwrap();
            c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        }),
    ];
    for (name, make) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        make(&path);
        let before = snapshot(dir.path());
        let db = path.to_str().unwrap();
        for args in
            [&["history"][..], &["show", "1"], &["compare", "1", "2"], &["rm", "1"], &["retention"]]
        {
            let out = client(&[args, &["--db", db]].concat());
            assert_eq!(
                out.status.code(),
                Some(10),
                "{name} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("left as it is"), "{name}: {err}");
        }
        // A test still runs and reports; only the save fails (exit 7).
        let run = client(&["bw", &target, "-t", "0.3", "--db", db]);
        assert_eq!(run.status.code(), Some(7), "{name}");
        assert!(String::from_utf8_lossy(&run.stdout).contains("receiver"));
        assert!(String::from_utf8_lossy(&run.stderr).contains("results not saved"));
        assert_eq!(snapshot(dir.path()), before, "{name}: the file was changed");
    }
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().join("none.db");
    let out = client(&["show", "1", "--db", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(9));
    assert!(!missing.exists(), "reading does not create a database");
    assert_eq!(
        ok(&client(&["history", "--db", missing.to_str().unwrap()])),
        "no saved runs match\n"
    );
}

/// iperf3 servers share no interval figures, so an upload's intervals are the client's alone
/// (`measured_at: client`): compare and export used to read their empty receiver side and
/// judged a 40 Mbit/s run against a 20 Mbit/s one "1.00 ± 0.00, within noise" at 0 bit/s.
#[test]
fn compare_and_export_read_iperf3_runs_from_the_end_that_measured() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("r.db");
    let db = db_path.to_str().unwrap();
    let stock = common::StockIperf3::start();
    for rate in ["40M", "20M"] {
        ok(&stock.bw(&["-t", "2", "-i", "0.5", "-b", rate, "--db", db]));
    }
    // Downloads are measured by this end as receiver: they were right, and must stay so.
    ok(&stock.bw(&["-t", "2", "-i", "0.5", "-b", "20M", "-R", "--db", db]));
    drop(stock);

    let cj: serde_json::Value =
        serde_json::from_str(&ok(&client(&["compare", "1", "2", "3", "--db", db, "-f", "json"])))
            .unwrap();
    let throughput = &cj["figures"][0];
    assert_eq!(throughput["key"], "throughput_bps");
    let runs = throughput["runs"].as_array().unwrap();
    let median = |k: usize| runs[k]["median"].as_f64().unwrap();
    for k in 0..3 {
        let want = if k == 0 { 40e6 } else { 20e6 };
        assert!((median(k) / want - 1.0).abs() < 0.1, "run {k}: median {}", median(k));
    }
    for k in [1, 2] {
        assert_eq!(runs[k]["verdict"], "worse", "{throughput}");
        assert!((runs[k]["ratio"].as_f64().unwrap() - 0.5).abs() < 0.05, "{throughput}");
    }

    let csv = ok(&client(&["export", "1", "2", "--db", db, "-f", "csv"]));
    for line in csv.lines().filter(|l| l.contains(",throughput_bps,")) {
        let cells: Vec<&str> = line.split(',').collect();
        let interval_median: f64 = cells[8].parse().unwrap();
        assert!(interval_median > 1e7, "{line}");
    }
}

/// `retention --keep 0` (or a zero `--max-age`) used to be taken as a standing policy that
/// deleted every run right after it was saved, with exit 0.
#[test]
fn a_retention_that_would_keep_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("r.db");
    let db = db_path.to_str().unwrap();
    for args in [["--keep", "0"], ["--max-age", "0d"], ["--max-age", "0s"]] {
        let out = client(&[&["retention", "--db", db][..], &args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("as soon as it is saved"));
    }
    let s = server(&[]);
    ok(&client(&["lat", &format!("127.0.0.1:{}", s.1), "-n", "50", "--db", db]));
    let history = ok(&client(&["history", "--db", db]));
    assert_eq!(history.lines().count(), 2, "the run was kept: {history}");
    assert!(ok(&client(&["retention", "--db", db])).starts_with("retention: keep all runs"));
}

/// `WIRESPEED_DB` selects PostgreSQL as `--db` does; a wrong password and a server that is not
/// there are refused with exit 10 and a message that names the database but not the password.
#[test]
fn wirespeed_db_selects_postgres_and_login_failures_exit_10() {
    let Some(pg) = wirespeed_testkit::postgres::TestPostgres::start() else { return };
    let s = server(&[]);
    let target = format!("127.0.0.1:{}", s.1);
    let run = |db: &str, args: &[&str]| {
        std::process::Command::new(common::BIN)
            .args(args)
            .env("WIRESPEED_DB", db)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    ok(&run(&pg.url(), &["lat", &target, "-t", "0.5", "-i", "0.25", "--tag", "env"]));
    let listed = ok(&run(&pg.url(), &["history", "-f", "json"]));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["tag"], "env");
    assert_eq!(listed[0]["kind"], "latency");

    let wrong = pg.url().replace(wirespeed_testkit::postgres::PASSWORD, "guess");
    for args in [&["history"][..], &["lat", &target, "-t", "0.3", "-i", "0.1"]] {
        let out = run(&wrong, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(10), "{args:?}: {err}");
        assert!(err.contains("refused the login") && !err.contains("guess"), "{err}");
        assert!(err.contains(&format!("127.0.0.1:{}", pg.port)), "{err}");
    }
    let nobody = format!("postgres://ws:pw@127.0.0.1:{}/db", common::free_port());
    let out = run(&nobody, &["history"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    let bad = run("postgres://ws@h/db?sslmode=sometimes", &["history"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
}
