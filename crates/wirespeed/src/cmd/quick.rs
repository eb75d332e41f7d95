//! `wirespeed quick`: the main job. Starts a server in-process on loopback, runs every test
//! kind against it, prints one table, saves every run.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::bandwidth::client::{self, ClientOptions};
use wirespeed_engine::kinds::cps::client::{self as cps_client, CpsOptions};
use wirespeed_engine::kinds::dns::client::{self as dns_client, DnsOptions};
use wirespeed_engine::kinds::dns::fixture::{self as dns_fixture, DnsListeners};
use wirespeed_engine::kinds::dns::queries::{builtin_lines, QuerySet};
use wirespeed_engine::kinds::http::client::{self as http_client, HttpOptions};
use wirespeed_engine::kinds::http::fixture::{self, FixtureConfig};
use wirespeed_engine::kinds::latency::client::{self as latency_client, LatencyOptions};
use wirespeed_engine::kinds::ping::client::{self as ping_client, PingOptions};
use wirespeed_engine::kinds::trace::client::{self as trace_client, TraceOptions};
use wirespeed_engine::net::handshake::Endpoint;
use wirespeed_engine::net::icmp::IcmpSocketKind;
use wirespeed_engine::server::{self, Listeners, ServerConfig};
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction};
use wirespeed_model::kinds::cps::CpsSpec;
use wirespeed_model::kinds::dns::DnsSpec;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::kinds::ping::{PingMode, PingSpec};
use wirespeed_model::kinds::trace::{TraceProtocol, TraceSpec};
use wirespeed_model::rules::Protocol;
use wirespeed_model::units::parse_duration;
use wirespeed_proto::dns::zone::Zone;
use wirespeed_report::digest::RunLabel;
use wirespeed_report::quick::QuickRow;
use wirespeed_report::Format;
use wirespeed_web::limits::LimitConfig;
use wirespeed_web::{State, WebConfig};

use crate::exit;
use crate::flags::QuickArgs;
use crate::output;

/// One test `quick` runs.
enum Planned {
    /// Protocol, direction and bitrate of a bandwidth test.
    Bandwidth(Protocol, Direction, u64),
    /// A latency test over this protocol.
    Latency(Protocol),
    /// The packets-per-second test: unlimited UDP with 64-byte datagrams.
    Packets,
    /// New TCP connections per second with this many connectors.
    Connections(u16),
    /// UDP ping (echoed by the server), one probe every 10 ms.
    Ping,
    /// ICMP trace to 127.0.0.1 (one hop), skipped without raw sockets.
    Trace,
    /// HTTP/1.1 load against the in-process HTTP fixture, 10 keep-alive connections.
    Http,
    /// DNS queries over UDP against the in-process DNS fixture, dnsperf's defaults.
    Dns,
    /// The web speed test's LibreSpeed download (`garbage`) or upload
    /// (`empty`, 1 MiB POSTs) endpoint, loaded as librespeed-cli does, over this many connections
    /// (downloads of 25 MiB rather than its 100, so a short run on a slow machine completes some).
    Web { upload: bool, connections: u16 },
}

/// The tests `quick` runs, with their names.
fn plan() -> Vec<(&'static str, Planned)> {
    use Planned::*;
    vec![
        ("TCP upload", Bandwidth(Protocol::Tcp, Direction::Upload, 0)),
        ("TCP download", Bandwidth(Protocol::Tcp, Direction::Download, 0)),
        ("TCP bidir", Bandwidth(Protocol::Tcp, Direction::Bidir, 0)),
        // Paced, so the figure shows loss and jitter at a rate loopback can carry.
        ("UDP upload 1 Gbit/s", Bandwidth(Protocol::Udp, Direction::Upload, 1_000_000_000)),
        // `wirespeed pps`: 64-byte datagrams as fast as they go.
        ("UDP 64 B packets", Packets),
        ("TCP latency", Latency(Protocol::Tcp)),
        ("UDP latency", Latency(Protocol::Udp)),
        ("TCP connections/s", Connections(2)),
        ("UDP ping", Ping),
        ("ICMP trace", Trace),
        ("HTTP/1.1 requests", Http),
        ("DNS queries (UDP)", Dns),
        ("Web download (LibreSpeed)", Web { upload: false, connections: 3 }),
        ("Web upload (LibreSpeed)", Web { upload: true, connections: 3 }),
    ]
}

pub async fn run(args: QuickArgs) -> Result<u8> {
    let time = parse_duration(&args.time).with_context(|| format!("--time {}", args.time))?;
    let listeners = Listeners::bind(&[SocketAddr::from(([127, 0, 0, 1], 0))])
        .context("binding the in-process server")?;
    let port = listeners.local_addrs()[0].port();
    let stop = CancellationToken::new();
    let server = tokio::spawn(server::run(listeners, ServerConfig::default(), stop.clone()));
    let http_listeners = Listeners::bind_tcp(&[SocketAddr::from(([127, 0, 0, 1], 0))], 0)
        .context("binding the in-process HTTP fixture")?;
    let http_port = http_listeners[0].local_addr().context("the HTTP fixture's port")?.port();
    let http_fixture =
        tokio::spawn(fixture::run(http_listeners, FixtureConfig::default(), stop.clone()));
    let dns_listeners = DnsListeners::bind(&[SocketAddr::from(([127, 0, 0, 1], 0))], 1)
        .context("binding the in-process DNS fixture")?;
    let dns_port = dns_listeners.local_addrs()[0].port();
    let dns_fixture = tokio::spawn(dns_fixture::run(
        dns_listeners,
        Arc::new(Zone::generated(1000)),
        stop.clone(),
    ));
    let web_listeners = Listeners::bind_tcp(&[SocketAddr::from(([127, 0, 0, 1], 0))], 0)
        .context("binding the in-process web speed test")?;
    let web_port = web_listeners[0].local_addr().context("the web speed test's port")?.port();
    // Nothing saved and no budgets: quick is the operator's own test.
    let web_config = WebConfig {
        limits: LimitConfig { requests_per_minute: 0, bytes_per_hour: 0, streams: 0 },
        ..WebConfig::default()
    };
    let web = tokio::spawn(wirespeed_web::run(web_listeners, State::new(web_config), stop.clone()));
    let cancel = super::interrupt_token();
    let mut rows = Vec::new();
    let endpoint = Endpoint {
        host: "127.0.0.1".into(),
        port,
        family: None,
        bind: None,
        token: None,
        connect_timeout: Duration::from_secs(5),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let duration_ns = time.as_nanos() as u64;
    let interval_ns = duration_ns.clamp(100_000_000, 1_000_000_000);
    for (name, planned) in plan() {
        if cancel.is_cancelled() {
            break;
        }
        let (tx, _rx) = unbounded_channel();
        let outcome = match planned {
            planned @ (Planned::Bandwidth(..) | Planned::Packets) => {
                let (protocol, direction, bitrate, length) = match planned {
                    Planned::Bandwidth(p, d, b) => (p, d, b, None),
                    _ => (Protocol::Udp, Direction::Upload, 0, Some(64)),
                };
                let mut spec = BandwidthSpec::new("127.0.0.1", protocol);
                spec.direction = direction;
                spec.bitrate_bps = bitrate;
                if let Some(l) = length {
                    spec.length = l;
                }
                spec.duration_ns = duration_ns;
                spec.interval_ns = interval_ns;
                let opts = ClientOptions { spec, endpoint: endpoint.clone() };
                client::run(opts, tx, cancel.clone()).await
            }
            Planned::Latency(protocol) => {
                let mut spec = LatencySpec::new("127.0.0.1", protocol);
                spec.duration_ns = duration_ns;
                spec.interval_ns = interval_ns;
                let opts = LatencyOptions { spec, endpoint: endpoint.clone() };
                latency_client::run(opts, tx, cancel.clone()).await
            }
            Planned::Connections(parallel) => {
                let mut spec = CpsSpec::new("127.0.0.1");
                spec.parallel = parallel;
                spec.duration_ns = duration_ns;
                spec.interval_ns = interval_ns;
                let opts = CpsOptions { spec, endpoint: endpoint.clone() };
                cps_client::run(opts, tx, cancel.clone()).await
            }
            Planned::Ping => {
                let mut spec = PingSpec::new("127.0.0.1", PingMode::Udp { port });
                spec.interval_ns = 10_000_000;
                spec.count = Some((duration_ns / spec.interval_ns).clamp(1, 1000));
                let icmp_socket = IcmpSocketKind::Auto;
                let opts = PingOptions { spec, endpoint: endpoint.clone(), icmp_socket };
                ping_client::run(opts, tx, cancel.clone()).await
            }
            Planned::Http => {
                let mut spec = HttpSpec::new(format!("http://127.0.0.1:{http_port}/"));
                spec.duration_ns = duration_ns;
                spec.interval_ns = interval_ns;
                match HttpOptions::single(spec, Vec::new(), env!("CARGO_PKG_VERSION")) {
                    Ok(opts) => http_client::run(opts, tx, cancel.clone()).await,
                    Err(m) => Err(ClientError::Protocol(m)),
                }
            }
            Planned::Dns => {
                let mut spec = DnsSpec::new("127.0.0.1", dns_port);
                spec.duration_ns = Some(duration_ns);
                spec.interval_ns = interval_ns;
                spec.timeout_ns = 1_000_000_000;
                let lines = builtin_lines(1000);
                spec.queries = lines.len();
                match QuerySet::from_lines(&lines, None) {
                    Ok(queries) => {
                        let opts = DnsOptions {
                            spec,
                            queries: Arc::new(queries),
                            family: None,
                            tls: Default::default(),
                            connect_timeout: Duration::from_secs(5),
                            version: env!("CARGO_PKG_VERSION").into(),
                        };
                        dns_client::run(opts, tx, cancel.clone()).await
                    }
                    Err(m) => Err(ClientError::Protocol(m)),
                }
            }
            Planned::Web { upload, connections } => {
                let (path, method, body) = if upload {
                    ("backend/empty.php", "POST", vec![0x5a; 1 << 20])
                } else {
                    ("backend/garbage.php?ckSize=25", "GET", Vec::new())
                };
                let mut spec = HttpSpec::new(format!("http://127.0.0.1:{web_port}/{path}"));
                spec.method = method.into();
                spec.body_bytes = body.len() as u64;
                spec.connections = connections;
                spec.threads = 1;
                spec.duration_ns = duration_ns;
                spec.interval_ns = interval_ns;
                match HttpOptions::single(spec, body, env!("CARGO_PKG_VERSION")) {
                    Ok(opts) => http_client::run(opts, tx, cancel.clone()).await,
                    Err(m) => Err(ClientError::Protocol(m)),
                }
            }
            Planned::Trace => {
                let mut spec = TraceSpec::new("127.0.0.1", TraceProtocol::Icmp);
                spec.max_hops = 5;
                let opts = TraceOptions { spec, endpoint: endpoint.clone() };
                trace_client::run(opts, tx, cancel.clone()).await
            }
        };
        // A privilege this user lacks (raw sockets) skips that test; it is not a failure.
        let skipped = matches!(
            &outcome,
            Err(ClientError::Local { cause, .. }) if cause.kind() == std::io::ErrorKind::PermissionDenied
        );
        let outcome = outcome.map_err(|e| e.to_string());
        rows.push(QuickRow { name: name.to_string(), outcome, skipped });
    }
    stop.cancel();
    let _ = server.await;
    let _ = http_fixture.await;
    let _ = dns_fixture.await;
    let _ = web.await;
    let reports: Vec<_> = rows.iter().filter_map(|r| r.outcome.as_ref().ok()).collect();
    let format = output::format_of(args.output.format);
    let mut out = std::io::stdout().lock();
    let labelled = || reports.iter().map(|r| (*r, RunLabel::default())).collect::<Vec<_>>();
    match format {
        Format::Text => wirespeed_report::quick::render(&rows, &mut out)?,
        // One document for all the runs, not one per run.
        Format::Markdown => {
            out.write_all(wirespeed_report::markdown::document(&labelled()).as_bytes())?
        }
        Format::Html => {
            out.write_all(wirespeed_report::html::runs_document(&labelled()).as_bytes())?
        }
        other => {
            for r in &reports {
                wirespeed_report::render_report(r, other, false, &mut out)?;
            }
        }
    }
    drop(out);
    if let Some(path) = &args.output.chart {
        // Every run's charts, one above the other, each titled with its row's name.
        let charts: Vec<_> = rows
            .iter()
            .filter_map(|r| Some((&r.name, r.outcome.as_ref().ok()?)))
            .flat_map(|(name, report)| {
                wirespeed_report::charts::run_charts(report).into_iter().map(move |mut c| {
                    c.title = format!("{name}: {}", c.title);
                    c
                })
            })
            .collect();
        if let Err(e) = crate::saved::write_chart(path, &charts) {
            eprintln!("wirespeed: warning: no chart written: {e:#}");
        }
    }
    let failed = rows.iter().any(|r| r.outcome.is_err() && !r.skipped);
    if let Err(e) = output::save(&args.output, &reports) {
        eprintln!("wirespeed: warning: results not saved: {e:#}");
        return Ok(exit::NOT_SAVED);
    }
    Ok(if cancel.is_cancelled() {
        exit::INTERRUPTED
    } else if failed {
        exit::FAILED
    } else {
        exit::OK
    })
}
