//! One folder per test kind: its client, and its server half where it has one. A kind uses
//! only the shared machinery ([`crate::net`], `crate::run`, the server kit in
//! [`crate::server`]), never another kind; the test `kinds_import_no_other_kind` checks it.
//! Kinds with a server half are registered in `server/dispatch.rs`.

pub mod bandwidth;
pub mod cps;
pub mod dns;
pub mod http;
pub mod latency;
pub mod ping;
pub mod rpm;
pub mod trace;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::{Event, Report, TestSpec};

use crate::error::ClientError;

/// One test to run as a client, whatever its kind: what the command line, `quick` and a
/// benchmark's workload all resolve to, and [`run`] runs.
#[derive(Debug)]
pub enum Client {
    /// A bandwidth (or `pps`) test against a wirespeed server.
    Bandwidth(bandwidth::client::ClientOptions),
    /// A bandwidth test against an iperf3 server, in iperf3's protocol.
    Iperf3(bandwidth::client::ClientOptions),
    /// A latency test.
    Latency(latency::client::LatencyOptions),
    /// A connections-per-second test.
    Cps(cps::client::CpsOptions),
    /// A ping.
    Ping(ping::client::PingOptions),
    /// A trace.
    Trace(trace::client::TraceOptions),
    /// HTTP load.
    Http(Box<http::client::HttpOptions>),
    /// DNS load.
    Dns(Box<dns::client::DnsOptions>),
    /// Responsiveness under working conditions.
    Rpm(Box<rpm::RpmOptions>),
}

impl Client {
    /// The spec the client will run.
    pub fn spec(&self) -> TestSpec {
        match self {
            Client::Bandwidth(o) | Client::Iperf3(o) => TestSpec::Bandwidth(o.spec.clone()),
            Client::Latency(o) => TestSpec::Latency(o.spec.clone()),
            Client::Cps(o) => TestSpec::Cps(o.spec.clone()),
            Client::Ping(o) => TestSpec::Ping(o.spec.clone()),
            Client::Trace(o) => TestSpec::Trace(o.spec.clone()),
            Client::Http(o) => TestSpec::Http(Box::new(o.spec.clone())),
            Client::Dns(o) => TestSpec::Dns(Box::new(o.spec.clone())),
            Client::Rpm(o) => TestSpec::Rpm(Box::new(o.spec.clone())),
        }
    }

    /// Makes the client one member of a run of several: `share` is its part of the run's spec
    /// ([`TestSpec::share`]), `member` its stripe and whether it keeps its histograms. Refused
    /// (with the reason) for a spec of another kind, or a kind that makes no load.
    pub fn join(&mut self, share: TestSpec, member: crate::MemberRun) -> Result<(), String> {
        match (self, share) {
            (Client::Bandwidth(o) | Client::Iperf3(o), TestSpec::Bandwidth(s)) => o.spec = s,
            (Client::Latency(o), TestSpec::Latency(s)) => {
                o.spec = s;
                o.member = member;
            }
            (Client::Cps(o), TestSpec::Cps(s)) => {
                o.spec = s;
                o.member = member;
            }
            (Client::Http(o), TestSpec::Http(s)) => {
                o.spec = *s;
                o.member = member;
            }
            (Client::Dns(o), TestSpec::Dns(s)) => {
                o.spec = *s;
                o.member = member;
            }
            (client, share) => {
                return Err(format!(
                    "a {} client cannot run a {} member's share",
                    client.spec().kind(),
                    share.kind()
                ))
            }
        }
        Ok(())
    }
}

/// Runs `client` to its end: its events go to `events` as they happen, and its report is
/// returned (and sent as the last event) with the diagnosis of the run: the client watches
/// its own threads, wake-ups, ports and the kernel's drops meanwhile, and says whether it
/// was the limit ([`wirespeed_model::diagnosis`]).
pub async fn run(
    client: Client,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let spec = client.spec();
    let kind = spec.as_kind();
    let watch = crate::run::diagnose::Watch::start(kind.planned_ns(), kind.pacing_ns().is_some());
    let (inner, mut from_kind) = tokio::sync::mpsc::unbounded_channel();
    // Everything but the end goes on as it comes; the end waits for the diagnosis.
    let forward = |event: Event| {
        if !matches!(event, Event::End(_)) {
            let _ = events.send(event);
        }
    };
    let running = run_kind(client, inner, cancel);
    tokio::pin!(running);
    let result = loop {
        tokio::select! {
            biased;
            Some(event) = from_kind.recv() => forward(event),
            result = &mut running => break result,
        }
    };
    while let Ok(event) = from_kind.try_recv() {
        forward(event);
    }
    // A test cut short by a failure still ends with what it measured, diagnosed like any.
    let (mut report, failure) = match result {
        Ok(report) => (report, None),
        Err(ClientError::Partial { report, cause }) => (*report, Some(cause)),
        Err(e) => return Err(e),
    };
    // A kind whose server reports its threads leaves them in a diagnosis of its own.
    let server_threads = report.meta.diagnosis.take().map(|d| d.server_threads).unwrap_or_default();
    report.meta.diagnosis = Some(watch.finish(&report, server_threads));
    let _ = events.send(Event::End(Box::new(report.clone())));
    match failure {
        None => Ok(report),
        Some(cause) => Err(ClientError::Partial { report: Box::new(report), cause }),
    }
}

/// Runs `client` as its kind does.
async fn run_kind(
    client: Client,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    match client {
        Client::Bandwidth(o) => bandwidth::client::run(o, events, cancel).await,
        Client::Iperf3(o) => bandwidth::iperf3_client::run(o, events, cancel).await,
        Client::Latency(o) => latency::client::run(o, events, cancel).await,
        Client::Cps(o) => cps::client::run(o, events, cancel).await,
        Client::Ping(o) => ping::client::run(o, events, cancel).await,
        Client::Trace(o) => trace::client::run(o, events, cancel).await,
        Client::Http(o) => http::client::run(*o, events, cancel).await,
        Client::Dns(o) => dns::client::run(*o, events, cancel).await,
        Client::Rpm(o) => rpm::run(*o, events, cancel).await,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Every `.rs` file under `dir`.
    fn sources(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(sources(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        out
    }

    /// The kinds a source file names through `crate::kinds::`.
    fn kinds_named(path: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.match_indices("crate::kinds::")
            .map(|(at, needle)| {
                let rest = &text[at + needle.len()..];
                rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap()
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn kinds_import_no_other_kind() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let kinds = root.join("kinds");
        let mut folders = 0;
        for entry in std::fs::read_dir(&kinds).unwrap() {
            let folder = entry.unwrap().path();
            if !folder.is_dir() {
                continue;
            }
            folders += 1;
            let me = folder.file_name().unwrap().to_string_lossy().to_string();
            for file in sources(&folder) {
                for named in kinds_named(&file) {
                    assert_eq!(named, me, "{} uses the {named} kind", file.display());
                }
                let text = std::fs::read_to_string(&file).unwrap();
                assert!(
                    !text.contains("super::super::"),
                    "{} reaches out of its kind",
                    file.display()
                );
            }
        }
        assert_eq!(folders, wirespeed_model::kind::Kind::ALL.len(), "one folder per kind");
        // The shared machinery names no kind; in the server only the dispatcher does.
        for dir in ["net", "run", "server"] {
            for file in sources(&root.join(dir)) {
                if file.ends_with("server/dispatch.rs") {
                    continue;
                }
                assert_eq!(kinds_named(&file), Vec::<String>::new(), "{}", file.display());
            }
        }
    }
}
