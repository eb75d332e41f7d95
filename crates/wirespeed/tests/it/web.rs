//! `wirespeed web` end to end, over real sockets from several loopback addresses: every
//! LibreSpeed endpoint and spelling, what gets saved and how, and bad input — oversized and
//! lying uploads, malformed telemetry, markup in every stored field, spoofed forwarding headers,
//! floods — refused cleanly with the server still serving others.

use crate::common;
use crate::common::web::{web, Web};

const ME: [u8; 4] = [127, 0, 0, 1];

fn telemetry(w: &Web, from: [u8; 4], extra_headers: &str) -> common::web::Reply {
    w.post(
        from,
        "/results/telemetry.php",
        &format!("Content-Type: application/x-www-form-urlencoded\r\n{extra_headers}"),
        b"ispinfo=%7B%22processedString%22%3A%22forged%22%7D&dl=93.50&ul=12.25&ping=3.10&jitter=0.40&log=&extra=",
    )
}

#[test]
fn every_librespeed_endpoint_answers_in_every_spelling() {
    let w = web(&["--max-chunks", "3"]);
    for prefix in ["", "/backend"] {
        for suffix in ["", ".php"] {
            let at = |name: &str| format!("{prefix}/{name}{suffix}");

            let g = w.get(ME, &format!("{}?r=0.1&ckSize=2", at("garbage")));
            assert_eq!(g.status, 200, "{}", g.head);
            assert_eq!(g.body.len(), 2 << 20);
            assert!(g.header("cache-control").unwrap().contains("no-store"));
            assert_eq!(g.header("content-type"), Some("application/octet-stream"));
            assert_eq!(g.header("content-encoding"), None, "never compressed");
            // Incompressible: every byte value about equally common.
            let mut counts = [0u32; 256];
            for b in &g.body {
                counts[*b as usize] += 1;
            }
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(*lo > 7000 && *hi < 9500, "byte counts {lo}..{hi}");
            // Capped at --max-chunks; garbage values give LibreSpeed's 4, capped too.
            assert_eq!(w.get(ME, &format!("{}?ckSize=5000", at("garbage"))).body.len(), 3 << 20);
            assert_eq!(w.get(ME, &format!("{}?ckSize=x", at("garbage"))).body.len(), 3 << 20);

            let ping = w.get(ME, &at("empty"));
            assert_eq!((ping.status, ping.body.len()), (200, 0));
            let up = w.post(ME, &at("empty"), "", &vec![7u8; 1 << 20]);
            assert_eq!((up.status, up.body.len()), (200, 0), "{}", up.head);
            let chunked = b"POST /empty HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n\
                            4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n";
            let up = w.send(ME, chunked);
            assert_eq!((up.status, up.body.len()), (200, 0), "{}", up.head);

            let ip = w.get(ME, &at("getIP")).json();
            assert_eq!(ip["processedString"], "127.0.0.1");
            assert_eq!(ip["rawIspInfo"], "");
            let ip = w.get(ME, &format!("{}?isp=true&distance=km", at("getIP"))).json();
            assert_eq!(ip["processedString"], "127.0.0.1 - localhost IPv4 access");
            assert_eq!(ip["rawIspInfo"]["ip"], "127.0.0.1");

            let t = w.post(
                ME,
                &format!("{prefix}/results/telemetry{suffix}"),
                "Content-Type: multipart/form-data; boundary=B\r\n",
                b"--B\r\nContent-Disposition: form-data; name=\"dl\"\r\n\r\n50.5\r\n--B--\r\n",
            );
            assert_eq!(t.status, 200, "{}", t.text());
            let id = t.text().strip_prefix("id ").unwrap().to_string();
            assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
            let j = w.get(ME, &format!("{prefix}/results/json{suffix}?id={id}")).json();
            assert_eq!(j["download"], "50.50");
        }
    }
    assert_eq!(w.get(ME, "/results/json.php?id=nope").json(), serde_json::json!({}));

    // What LibreSpeed's worker (speedtest_worker.js) sends besides: uploads with
    // `Content-Encoding: identity` and no Content-Type, the empty POST that primes CORS in
    // multi-server mode, and telemetry with a cache-busting query.
    let up = w.post(
        ME,
        "/backend/empty.php?cors=true&r=0.42",
        "Content-Encoding: identity\r\n",
        &[9u8; 4096],
    );
    assert_eq!((up.status, up.body.len()), (200, 0));
    assert_eq!(up.header("access-control-allow-origin"), Some("*"));
    let prime = w.post(ME, "/backend/empty.php", "", b"");
    assert_eq!((prime.status, prime.body.len()), (200, 0));
    let t = w.post(
        ME,
        "/results/telemetry.php?cors=true&r=0.7",
        "Content-Type: application/x-www-form-urlencoded\r\n",
        b"dl=1&ul=2&ping=3&jitter=4&log=&extra=",
    );
    assert!(t.text().starts_with("id "), "{}", t.text());

    let list = w.get(ME, "/.well-known/librespeed").json();
    assert_eq!(list[0]["server"], format!("//127.0.0.1:{}/", w.port));
    assert_eq!(list[0]["dlURL"], "backend/garbage.php");

    let pre = w.send(
        ME,
        b"OPTIONS /backend/empty.php?cors=true HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(pre.status, 200);
    assert_eq!(pre.header("access-control-allow-origin"), Some("*"));
    assert!(pre.header("access-control-allow-headers").unwrap().contains("Content-Encoding"));
    assert_eq!(
        w.get(ME, "/empty.php").header("access-control-allow-origin"),
        None,
        "only when asked"
    );

    let page = w.get(ME, "/");
    assert_eq!(page.status, 200);
    assert!(page.header("content-security-policy").unwrap().contains("script-src 'self'"));
    assert!(page.text().contains("speedtest.js"));
    assert_eq!(w.get(ME, "/results").header("location"), Some("results/"));
    assert!(w.get(ME, "/results/").text().contains("results.js"));
    assert_eq!(w.get(ME, "/chart.js").status, 200);
    assert_eq!(w.get(ME, "/etc/passwd").status, 404);
    // speedtest-x's own endpoints get an answer saying what this server is, not a silent 404.
    for path in ["/backend/report.php", "/backend/results-api.php"] {
        let r = w.post(ME, path, "", b"key=1&ip=127.0.0.1&dspeed=9");
        assert_eq!(r.status, 501, "{path}");
        assert!(
            r.text().contains("not speedtest-x") && r.text().contains("telemetry"),
            "{}",
            r.text()
        );
    }
}

#[test]
fn bad_input_is_refused_and_nothing_is_stored_that_should_not_be() {
    let w = web(&["--max-upload", "1M"]);
    // A declared length over the cap: refused before the body is read, connection closed.
    let big = w.post(ME, "/empty.php", "", &vec![0u8; 2 << 20]);
    assert_eq!(big.status, 413);
    assert_eq!(big.header("connection"), Some("close"));
    assert!(big.text().contains("larger than 1048576 bytes"), "{}", big.text());
    // A chunked body that grows past the cap is cut off when it does.
    let mut chunked =
        b"POST /empty HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..20 {
        chunked.extend_from_slice(b"20000\r\n");
        chunked.extend_from_slice(&[1u8; 0x20000]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(w.send(ME, &chunked).status, 413);
    // Garbage framing.
    let broken =
        w.send(ME, b"POST /empty HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    assert!(broken.status == 400 || broken.status == 413, "{}", broken.head);

    // Malformed telemetry: said precisely, nothing saved. A result with ping and jitter
    // alone is no speed test's (it was saved, and replaced its network's real result).
    for (body, says) in [
        ("dl=<script>alert(1)</script>", "dl: expected a number"),
        ("ping=-1", "ping: expected a number"),
        ("jitter=1e999", "jitter: expected a number"),
        ("ping=12&jitter=1", "a result needs a download or an upload figure"),
        ("dl=&ul=Fail&ping=12&jitter=1", "a result needs a download or an upload figure"),
    ] {
        let r = w.post(
            ME,
            "/results/telemetry.php",
            "Content-Type: application/x-www-form-urlencoded\r\n",
            body.as_bytes(),
        );
        assert_eq!(r.status, 400, "{body}");
        assert!(r.text().starts_with(says), "{body}: {}", r.text());
    }
    let r = w.post(
        ME,
        "/results/telemetry.php",
        "Content-Type: multipart/form-data; boundary=Q\r\n",
        b"--Q\r\nbroken",
    );
    assert_eq!(r.status, 400);
    let r = w.post(ME, "/results/telemetry.php", "", &vec![b'a'; 70 * 1024]);
    assert_eq!(r.status, 413);
    let r = w.post(
        ME,
        "/api/result",
        "Content-Type: application/json\r\n",
        br#"{"t":"forged","download_bps":1}"#,
    );
    assert_eq!(r.status, 400);
    assert!(r.text().contains("unknown or expired test token"));
    let r = w.post(ME, "/api/result", "", br#"{"t":"x","admin":true}"#);
    assert_eq!(r.status, 400, "unknown fields refused");
    let token = w.get(ME, "/api/start").json()["token"].as_str().unwrap().to_string();
    let r = w.post(
        ME,
        "/api/result",
        "",
        format!(r#"{{"t":"{token}","ping_ms":10,"latency_up_ms":-3}}"#).as_bytes(),
    );
    assert_eq!(r.status, 400);
    assert!(r.text().starts_with("latency_up_ms: expected a number"), "{}", r.text());
    assert!(w.saved().is_empty(), "nothing saved from bad input");
    // The grade is the server's, from the latencies (300 ms down over a 10 ms ping: D).
    let r = w.post(
        ME,
        "/api/result",
        "",
        format!(r#"{{"t":"{token}","download_bps":9e7,"ping_ms":10,"latency_down_ms":300,"latency_up_ms":20.5,"latency_grade":"A+"}}"#)
            .as_bytes(),
    );
    assert_eq!(r.status, 400, "a grade is not the client's to give: {}", r.text());
    let r = w.post(
        ME,
        "/api/result",
        "",
        format!(r#"{{"t":"{token}","ping_ms":10,"latency_down_ms":300,"latency_up_ms":20.5}}"#)
            .as_bytes(),
    );
    assert_eq!(r.status, 400, "no speed, claimed or measured: {}", r.text());
    assert!(r.text().contains("needs a download or an upload figure"), "{}", r.text());
    let r = w.post(
        ME,
        "/api/result",
        "",
        format!(r#"{{"t":"{token}","download_bps":9e7,"ping_ms":10,"latency_down_ms":300,"latency_up_ms":20.5}}"#)
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["latency_grade"], "D");
    let saved = w.saved();
    assert_eq!((saved[0].latency_down_ms, saved[0].latency_up_ms), (Some(300.0), Some(20.5)));
    assert_eq!(saved[0].latency_grade.as_deref(), Some("D"));
    assert!(w
        .get(ME, "/api/results.csv")
        .text()
        .lines()
        .nth(1)
        .unwrap()
        .ends_with(",300.000,20.500,D"));

    // Markup in every field a client controls is stored as text, and served as data: JSON
    // strings, CSV cells, and pages whose policy runs no script but this server's own.
    let evil = "<script>alert(1)</script>";
    let ok = telemetry(&w, ME, &format!("User-Agent: {evil}\r\nAccept-Language: {evil}\r\n"));
    assert_eq!(ok.status, 200);
    let saved = w.saved();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].user_agent, evil);
    assert_eq!(saved[0].lang, evil);
    assert_eq!(saved[0].isp, "localhost IPv4 access", "never the client's own ispinfo");
    assert_eq!(saved[0].download_bps, Some(93.5e6));
    assert!(!saved[0].download_by_server, "no download was measured");
    assert_eq!(saved[0].latency_grade, None, "LibreSpeed's clients measure no loaded latency");
    let api = w.get(ME, "/api/results");
    assert!(api.header("content-type").unwrap().starts_with("application/json"));
    assert_eq!(api.json()["results"][0]["user_agent"], evil);
    let csv = w.get(ME, "/api/results.csv").text();
    assert!(csv.lines().nth(1).unwrap().contains(evil));

    // A forwarded address from a peer nobody trusts is ignored.
    telemetry(&w, [127, 0, 9, 9], "X-Forwarded-For: 203.0.113.5\r\nX-Real-IP: 203.0.113.6\r\n");
    assert_eq!(w.saved()[0].network, "127.0.9.0/24");
    assert!(w.get([127, 0, 9, 9], "/getIP.php").text().contains("127.0.9.9"));

    // And after all that the server still serves.
    assert_eq!(w.get([127, 0, 0, 5], "/empty.php").status, 200);
}

#[test]
fn forwarded_addresses_are_believed_from_trusted_proxies_only() {
    let w = web(&["--trusted-proxy", "127.0.0.1/32"]);
    let ip = w.get_with(ME, "/getIP.php", "X-Forwarded-For: 6.6.6.6, 198.51.100.7\r\n").json();
    assert_eq!(ip["processedString"], "198.51.100.7");
    let ip = w.get_with([127, 0, 0, 2], "/getIP.php", "X-Forwarded-For: 198.51.100.7\r\n").json();
    assert_eq!(ip["processedString"], "127.0.0.2");
    telemetry(&w, ME, "X-Forwarded-For: 198.51.100.7\r\n");
    assert_eq!(w.saved()[0].network, "198.51.100.0/24");
}

#[test]
fn floods_are_limited_per_visitor_and_others_are_still_served() {
    let w = web(&["--requests-per-ip", "20", "--streams-per-ip", "1", "--bytes-per-ip", "5M"]);
    let flood: Vec<u16> = (0..30).map(|_| w.get([127, 0, 0, 2], "/empty.php").status).collect();
    assert_eq!(flood.iter().filter(|s| **s == 200).count(), 20, "{flood:?}");
    let refused = w.get([127, 0, 0, 2], "/getIP.php");
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());
    assert!(refused.text().contains("limit is 20 a minute"), "{}", refused.text());
    assert_eq!(w.get([127, 0, 0, 3], "/getIP.php").status, 200, "another visitor");

    // One transfer at once: a download held open (more than socket buffers hold) blocks a
    // second one from the same visitor.
    let streams = web(&["--streams-per-ip", "1"]);
    let held = std::net::TcpStream::connect(("127.0.0.1", streams.port)).unwrap();
    use std::io::Write;
    (&held).write_all(b"GET /garbage?ckSize=64 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    // Readiness: the held download's status line has come, so the server holds its slot. (A
    // second request sent before it would take the slot first and leave the held one refused.)
    let mut head = [0u8; 12];
    std::io::Read::read_exact(&mut &held, &mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the held download is served");
    let second = streams.get(ME, "/garbage?ckSize=1");
    assert_eq!(second.status, 429, "{}", second.text());
    assert!(second.text().contains("transfers at once"));
    assert_eq!(streams.get([127, 0, 0, 2], "/garbage?ckSize=1").status, 200, "another visitor");
    drop(held);

    // 3 MiB an hour: 2 and then 2 more is too much, 1 more is not.
    let bytes = web(&["--bytes-per-ip", "3M"]);
    assert_eq!(bytes.get(ME, "/garbage?ckSize=2").status, 200);
    let over = bytes.get(ME, "/garbage?ckSize=2");
    assert_eq!(over.status, 429);
    assert!(over.text().contains("transfer budget used up"), "{}", over.text());
    assert_eq!(bytes.get(ME, "/garbage?ckSize=1").status, 200);
    let upload = bytes.post(ME, "/empty.php", "", &vec![0u8; 2 << 20]);
    assert_eq!(upload.status, 429, "uploads spend the same budget");
}

#[test]
fn speedtest_x_settings_keep_one_row_per_network_and_at_most_n() {
    let w = web(&["--max-results", "2"]);
    for _ in 0..3 {
        assert_eq!(telemetry(&w, [127, 0, 1, 1], "").status, 200);
    }
    assert_eq!(w.saved().len(), 1, "one row per network");
    telemetry(&w, [127, 0, 2, 1], "");
    telemetry(&w, [127, 0, 3, 1], "");
    let nets: Vec<String> = w.saved().into_iter().map(|r| r.network).collect();
    assert_eq!(nets, ["127.0.3.0/24", "127.0.2.0/24"], "the oldest dropped");

    let multi = web(&["--same-ip-multi-results"]);
    for _ in 0..3 {
        telemetry(&multi, [127, 0, 1, 1], "");
    }
    assert_eq!(multi.saved().len(), 3);
    let filtered = multi.get(ME, "/api/results?isp=localhost&limit=2").json();
    assert_eq!(filtered["results"].as_array().unwrap().len(), 2);
    assert_eq!(filtered["by_isp"][0]["count"], 2);
    assert_eq!(multi.get(ME, "/api/results?since=soon").status, 400);
}

#[test]
fn deleting_a_result_needs_the_admin_password() {
    let hash = std::process::Command::new(common::BIN)
        .args(["web", "--hash-password"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"correct horse\n")?;
            c.wait_with_output()
        })
        .unwrap();
    let hash = String::from_utf8(hash.stdout).unwrap().trim().to_string();
    assert!(hash.starts_with("$argon2id$"), "{hash}");

    let w = web(&["--admin-password-hash", &hash]);
    let id = telemetry(&w, ME, "").text().strip_prefix("id ").unwrap().to_string();
    let delete = |auth: &str| {
        w.send(
            ME,
            format!(
                "DELETE /api/results/{id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\r\n"
            )
            .as_bytes(),
        )
    };
    assert_eq!(delete("").status, 401);
    assert_eq!(delete("Authorization: Bearer wrong\r\n").status, 401);
    assert_eq!(w.saved().len(), 1);
    assert_eq!(delete("Authorization: Bearer correct horse\r\n").status, 204);
    assert!(w.saved().is_empty());
    assert_eq!(delete("Authorization: Bearer correct horse\r\n").status, 404);

    let open = web(&[]);
    let id = telemetry(&open, ME, "").text().strip_prefix("id ").unwrap().to_string();
    let r = open.send(
        ME,
        format!("DELETE /api/results/{id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(r.status, 403);
    assert!(r.text().contains("--admin-password-hash"));

    let bad = common::client(&["web", "--admin-password-hash", "hunter2", "--no-save"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not an Argon2 PHC hash"));
}

#[test]
fn the_container_entrypoint_maps_speedtest_x_settings_onto_flags() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contrib/docker-entrypoint.sh");
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let child = common::spawn_until(
        std::process::Command::new("sh")
            .args([script, "-B", "127.0.0.1"])
            .env("WIRESPEED_BIN", common::BIN)
            .env("WIRESPEED_DB", dir.path().join("r.db"))
            .env("WEBPORT", port.to_string())
            .env("MAX_LOG_COUNT", "2")
            .env("SAME_IP_MULTI_LOGS", "true"),
        "web speed test on",
    );
    let w = Web { child, port, dir };
    for _ in 0..3 {
        assert_eq!(telemetry(&w, ME, "").status, 200);
    }
    assert_eq!(
        w.saved().len(),
        2,
        "several per network (SAME_IP_MULTI_LOGS), at most MAX_LOG_COUNT"
    );

    for (var, value, says) in [
        ("SAME_IP_MULTI_LOGS", "maybe", "SAME_IP_MULTI_LOGS must be true or false"),
        ("MAX_LOG_COUNT", "lots", "MAX_LOG_COUNT must be a whole number"),
        ("WEBPORT", "http", "WEBPORT must be a port number"),
    ] {
        let out = std::process::Command::new("sh")
            .arg(script)
            .env("WIRESPEED_BIN", common::BIN)
            .env(var, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{var}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{var}");
    }
}

#[test]
fn aborted_transfers_and_silent_clients_leave_no_socket_or_slot_behind() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let w = web(&["--streams-per-ip", "2"]);
    let fds = || std::fs::read_dir(format!("/proc/{}/fd", w.child.id())).unwrap().count();
    assert_eq!(telemetry(&w, ME, "").status, 200); // the store is open from here on
    let base = fds();
    // Downloads dropped after 64 KiB, uploads cut off mid-body. Only 2 downloads at once are
    // allowed, so each waits until the server has let go of the ones dropped before it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for _ in 0..20 {
        loop {
            let mut s = TcpStream::connect(("127.0.0.1", w.port)).unwrap();
            s.write_all(b"GET /garbage?ckSize=100 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut got = vec![0u8; 65536];
            s.read_exact(&mut got[..12]).unwrap();
            if got.starts_with(b"HTTP/1.1 200") {
                s.read_exact(&mut got[12..]).unwrap();
                break;
            }
            assert!(got.starts_with(b"HTTP/1.1 429"), "{:?}", String::from_utf8_lossy(&got[..12]));
            assert!(std::time::Instant::now() < deadline, "download slots were never released");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    // An upload, too, may find both of its IP's slots still held by the last two (the server
    // answers 429 and closes, and the body's write fails): it goes again until one is taken.
    for _ in 0..20 {
        loop {
            let mut s = TcpStream::connect(("127.0.0.1", w.port)).unwrap();
            s.write_all(b"POST /empty HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n")
                .unwrap();
            if s.write_all(&[0u8; 1 << 20]).is_ok() {
                break;
            }
            let mut said = [0u8; 12];
            if s.read_exact(&mut said).is_ok() {
                assert!(said.starts_with(b"HTTP/1.1 429"), "{:?}", String::from_utf8_lossy(&said));
            }
            assert!(std::time::Instant::now() < deadline, "upload slots were never released");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    // Clients that say nothing, or half a request head, and keep the connection open.
    let silent: Vec<TcpStream> = (0..10)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", w.port)).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /empty HTTP/1.1\r\nHost: x\r\n").unwrap();
            }
            s
        })
        .collect();
    // Meanwhile others are served, and the aborted transfers' slots come back.
    assert_eq!(w.get([127, 0, 0, 7], "/getIP.php").status, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while w.get(ME, "/garbage?ckSize=1").status != 200 {
        assert!(std::time::Instant::now() < deadline, "download slots were never released");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Every socket goes; the silent ones when their 10 s for a request head are up.
    while fds() > base {
        assert!(std::time::Instant::now() < deadline, "{} descriptors left of {base}", fds());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for mut s in silent {
        let mut b = [0u8; 1];
        assert_eq!(s.read(&mut b).unwrap_or(0), 0, "closed by the server");
    }
}

/// Two servers behind one name on one PostgreSQL database: a result saved through one is listed,
/// shown and deleted through the other, and a visitor's transfer budget is one budget across
/// both (the second server refuses what the first already spent, and says why).
#[test]
fn two_servers_on_one_postgres_share_results_and_the_transfer_budget() {
    let Some(pg) = wirespeed_testkit::postgres::TestPostgres::start() else { return };
    let url = pg.url();
    let extra = ["--bytes-per-ip", "3M"];
    let a = common::web::web_on(&url, tempfile::tempdir().unwrap(), &extra);
    let b = common::web::web_on(&url, tempfile::tempdir().unwrap(), &extra);

    assert_eq!(telemetry(&a, [127, 0, 7, 1], "").status, 200);
    let listed = b.get(ME, "/api/results").json();
    let results = listed["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{listed}");
    assert_eq!(results[0]["network"], "127.0.7.0/24");
    let id = results[0]["id"].as_str().unwrap().to_string();
    assert_eq!(a.get(ME, &format!("/api/results/{id}")).status, 200);

    // 3 MiB an hour for the visitor, wherever it lands: 2 through a, then 2 through b is too
    // much, 1 through b is not.
    assert_eq!(a.get([127, 0, 8, 1], "/garbage?ckSize=2").status, 200);
    let over = b.get([127, 0, 8, 1], "/garbage?ckSize=2");
    assert_eq!(over.status, 429, "{}", over.text());
    assert!(over.text().contains("shared by every server"), "{}", over.text());
    assert!(over.header("retry-after").is_some());
    assert_eq!(b.get([127, 0, 8, 2], "/garbage?ckSize=2").status, 200, "another visitor");
    assert_eq!(b.get([127, 0, 8, 1], "/garbage?ckSize=1").status, 200);
    // Uploads through both put the visitor in debt (each server alone would still allow more);
    // then neither takes another.
    assert_eq!(a.post([127, 0, 8, 3], "/empty.php", "", &vec![0u8; 2 << 20]).status, 200);
    assert_eq!(b.post([127, 0, 8, 3], "/empty.php", "", &vec![0u8; 2 << 20]).status, 200);
    let refused = a.post([127, 0, 8, 3], "/empty.php", "", &[0u8; 16]);
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(refused.text().contains("shared by every server"), "{}", refused.text());
}
