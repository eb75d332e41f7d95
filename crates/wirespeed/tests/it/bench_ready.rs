//! `wirespeed bench`'s readiness probes against real listeners: `wirespeed server` (TCP), its
//! HTTP and DNS fixtures, socat echoing UDP, and a log line — each started as a system
//! process would be, in its own process group. A process that never becomes ready times out and
//! leaves no process behind; one that exits first says so with its log.

use std::collections::BTreeMap;
use std::time::Duration;

use wirespeed_runner::process::{group_alive, spawn, Started};
use wirespeed_runner::ready::{wait, NotReady, Probe};
use wirespeed_runner::scenario::{OneOrMore, Ready};
use wirespeed_runner::words::split;

use crate::common;

fn start(dir: &std::path::Path, role: &str, cmd: &str) -> Started {
    spawn(role, &split(cmd).unwrap(), &BTreeMap::new(), dir, None).unwrap()
}

fn probe(ready: Ready) -> (Probe, Duration) {
    Probe::from_ready(&ready).unwrap()
}

#[test]
fn probes_see_real_listeners_become_ready() {
    let dir = tempfile::tempdir().unwrap();
    let (port, http, dns, udp) =
        (common::free_port(), common::free_port(), common::free_port(), common::free_port());
    let server = start(
        dir.path(),
        "server",
        &format!("{} server -B 127.0.0.1 -p {port} --http {http} --dns {dns}", common::BIN),
    );
    let echo = start(
        dir.path(),
        "echo",
        &format!("socat UDP4-RECVFROM:{udp},fork,bind=127.0.0.1 EXEC:cat"),
    );
    let logger = start(
        dir.path(),
        "logger",
        "sh -c 'sleep 0.3; echo warming up; echo Control channel established; sleep 30'",
    );
    let mut procs = [server, echo, logger];
    for (i, ready) in [
        (0, Ready { tcp: Some(OneOrMore::One(port.to_string())), ..Ready::default() }),
        (0, Ready { http: Some(format!("http://127.0.0.1:{http}/?size=1")), ..Ready::default() }),
        (0, Ready { dns: Some(format!("127.0.0.1:{dns}")), ..Ready::default() }),
        (1, Ready { udp: Some(udp.to_string()), ..Ready::default() }),
        (2, Ready { log: Some("Control channel established".into()), ..Ready::default() }),
    ] {
        let (probe, timeout) = probe(ready);
        wait(&mut procs[i], &probe, timeout).unwrap_or_else(|e| panic!("{probe:?}: {e}"));
    }
    // A DNS probe is not fooled by a UDP echo (no answer bit), nor a UDP probe by a closed port.
    let (dns_on_echo, _) = probe(Ready { dns: Some(udp.to_string()), ..Ready::default() });
    assert!(!dns_on_echo.ok(""));
    let closed = common::free_port();
    assert!(!probe(Ready { udp: Some(closed.to_string()), ..Ready::default() }).0.ok(""));
    assert!(!probe(Ready { tcp: Some(OneOrMore::One(closed.to_string())), ..Ready::default() })
        .0
        .ok(""));

    let pids = procs.each_ref().map(|p| p.pid);
    drop(procs);
    for pid in pids {
        assert!(!group_alive(pid), "process group {pid} outlived its system");
    }
}

#[test]
fn a_process_that_never_becomes_ready_times_out_and_is_cleaned_up() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let mut p = start(dir.path(), "server", "sh -c 'echo listening soon; sleep 60 & wait'");
    let (probe, _) = probe(Ready {
        tcp: Some(OneOrMore::One(port.to_string())),
        timeout: Some("500ms".into()),
        ..Ready::default()
    });
    let err = wait(&mut p, &probe, Duration::from_millis(500)).unwrap_err();
    assert!(matches!(err, NotReady::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("listening soon"), "the log's end: {err}");
    let pid = p.pid;
    drop(p);
    assert!(!group_alive(pid), "the sleeping child outlived the timeout");

    let mut early = start(dir.path(), "client", "sh -c 'echo bad config >&2; exit 3'");
    let err = wait(&mut early, &probe, Duration::from_secs(5)).unwrap_err();
    assert!(matches!(&err, NotReady::Exited { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exit status: 3") && text.contains("bad config"), "{text}");
}
