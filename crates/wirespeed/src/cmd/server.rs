//! `wirespeed server`: bind, serve until Ctrl-C/SIGTERM, stop tests cleanly.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use wirespeed_engine::kinds::dns::fixture::{self as dns_fixture, read_zone_file, DnsListeners};
use wirespeed_engine::kinds::dns::fixture_secure::{self, SecureListeners};
use wirespeed_engine::kinds::http::{fixture, fixture_h3 as h3_fixture};
use wirespeed_engine::server::{self, Listeners};
use wirespeed_model::units::parse_bytes;
use wirespeed_proto::dns::zone::Zone;

use crate::exit;
use crate::flags::ServerArgs;
use crate::resolve;

pub(super) async fn run(args: ServerArgs) -> Result<u8> {
    let config = resolve::server(&args, env!("CARGO_PKG_VERSION"))?;
    let listeners = if args.bind.is_empty() {
        Listeners::bind_default(args.port)
    } else {
        let addrs: Vec<SocketAddr> =
            args.bind.iter().map(|ip| SocketAddr::new(*ip, args.port)).collect();
        Listeners::bind(&addrs)
    }
    .with_context(|| format!("cannot listen on port {}", args.port))?;
    // Everything is bound before the first "listening" line, so whoever waits for it (a
    // script, a test) finds every port open.
    let http = match args.http {
        Some(port) => {
            let body_bytes = parse_bytes(&args.http_body)
                .ok()
                .filter(|b| *b <= fixture::MAX_BODY)
                .with_context(|| format!("--http-body {}: a size up to 16G", args.http_body))?;
            let addrs: Vec<SocketAddr> =
                args.bind.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
            let http = Listeners::bind_tcp(&addrs, port)
                .with_context(|| format!("cannot listen for HTTP on port {port}"))?;
            // The same port number over UDP (the one bound, when port 0 asked for any).
            let port = http.first().and_then(|l| l.local_addr().ok()).map_or(port, |a| a.port());
            let (tls, h3) = match args.h3 {
                true => h3_endpoints(&args, port).map(|(tls, h3)| (Some(tls), h3))?,
                false => (None, Vec::new()),
            };
            Some((http, fixture::FixtureConfig { body_bytes, h3, tls, ..Default::default() }))
        }
        None => None,
    };
    let dns = match args.dns {
        Some(port) => Some(dns_fixture(&args, port)?),
        None => None,
    };
    let dns_secure = match (args.dns_secure, &args.web_options.tls_cert, &args.web_options.tls_key)
    {
        (Some(port), Some(cert), Some(key)) => {
            let ip = args.bind.first().copied().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into());
            Some(
                SecureListeners::bind(SocketAddr::new(ip, port), cert, key)
                    .with_context(|| format!("cannot serve DoQ and DoH on port {port}"))?,
            )
        }
        _ => None,
    };
    let web = match args.web {
        Some(port) => {
            let config = super::web::config(&args.web_options, config.metrics.clone())?;
            Some((super::web::listen(&args.bind, port)?, config))
        }
        None => None,
    };
    let metrics_listener = super::metrics::listen(args.metrics)?;
    for addr in listeners.local_addrs() {
        tracing::info!("listening on {addr} (TCP and UDP)");
    }
    if config.token.is_some() {
        tracing::info!("clients must present the token");
    }
    let shutdown = super::interrupt_token();
    let fixture = http.map(|(http_listeners, http_config)| {
        for a in http_listeners.iter().filter_map(|l| l.local_addr().ok()) {
            tracing::info!("HTTP fixture listening on {a}");
        }
        for a in http_config.h3.iter().filter_map(|e| e.local_addr().ok()) {
            tracing::info!("HTTP fixture serving HTTP/3 on {a} (UDP)");
        }
        tokio::spawn(fixture::run(http_listeners, http_config, shutdown.clone()))
    });
    let dns = dns.map(|(dns_listeners, zone)| {
        for a in dns_listeners.local_addrs() {
            tracing::info!("DNS fixture listening on {a} (UDP and TCP)");
        }
        if let Some(Ok((doq, doh))) = dns_secure.as_ref().map(SecureListeners::local_addrs) {
            tracing::info!(
                "DNS fixture listening on {doq} (DoQ) and https://{doh}/dns-query (DoH)"
            );
        }
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let secure = dns_secure
                .map(|s| tokio::spawn(fixture_secure::run(s, zone.clone(), shutdown.clone())));
            let plain = dns_fixture::run(dns_listeners, zone, shutdown).await;
            if let Some(s) = secure {
                let _ = s.await;
            }
            plain
        })
    });
    let web = web.map(|(web_listeners, web_config)| {
        super::web::spawn(web_listeners, web_config, shutdown.clone())
    });
    let metrics = super::metrics::spawn(metrics_listener, config.metrics.clone(), shutdown.clone());
    server::run(listeners, config, shutdown).await.context("server failed")?;
    if let Some(m) = metrics {
        m.await.context("metrics endpoint")?;
    }
    if let Some(w) = web {
        w.await.context("web speed test")?;
    }
    if let Some(d) = dns {
        d.await.context("DNS fixture")?.context("DNS fixture failed")?;
    }
    if let Some(f) = fixture {
        f.await.context("HTTP fixture")?.context("HTTP fixture failed")?;
    }
    tracing::info!("stopped");
    Ok(exit::OK)
}

/// The HTTP fixture's TLS settings (for https:// on TCP too) and its QUIC endpoints on
/// `port`: one per --bind address, or one for every address (IPv6 and IPv4 on one socket,
/// or IPv4 alone where there is no IPv6).
fn h3_endpoints(
    args: &ServerArgs,
    port: u16,
) -> Result<(h3_fixture::Tls, Vec<h3_fixture::Endpoint>)> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    let files = match (&args.web_options.tls_cert, &args.web_options.tls_key) {
        (Some(cert), Some(key)) => Some((cert.as_path(), key.as_path())),
        _ => None,
    };
    let (crypto, made) = h3_fixture::identity(files).context("the HTTP fixture's certificate")?;
    if let Some(pin) = made {
        let hex: String = pin.iter().map(|b| format!("{b:02x}")).collect();
        tracing::info!("HTTP fixture certificate made at start, SHA-256 {hex}");
    }
    let open = |addr: SocketAddr| {
        h3_fixture::endpoint(addr, crypto.clone())
            .with_context(|| format!("cannot serve HTTP/3 on UDP port {port}"))
    };
    let endpoints = if args.bind.is_empty() {
        let any6 = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port);
        vec![open(any6).or_else(|_| open(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port)))?]
    } else {
        args.bind.iter().map(|ip| open(SocketAddr::new(*ip, port))).collect::<Result<_>>()?
    };
    Ok((crypto, endpoints))
}

/// The DNS fixture's sockets and zone: the `--zone` file, or the generated one.
fn dns_fixture(args: &ServerArgs, port: u16) -> Result<(DnsListeners, std::sync::Arc<Zone>)> {
    let zone = match &args.zone {
        Some(path) => read_zone_file(path, args.zone_origin.as_deref())
            .map_err(|m| anyhow::anyhow!("--zone: {m}"))?,
        None => Zone::generated(args.dns_hosts),
    };
    if !(1..=64).contains(&args.dns_threads) {
        anyhow::bail!("--dns-threads must be 1..=64");
    }
    let listeners = if args.bind.is_empty() {
        let v4 = SocketAddr::from(([0, 0, 0, 0], port));
        DnsListeners::bind(
            &[v4, SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port))],
            args.dns_threads,
        )
        .or_else(|_| DnsListeners::bind(&[v4], args.dns_threads))
    } else {
        let addrs: Vec<SocketAddr> =
            args.bind.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
        DnsListeners::bind(&addrs, args.dns_threads)
    }
    .with_context(|| format!("cannot listen for DNS on port {port}"))?;
    Ok((listeners, std::sync::Arc::new(zone)))
}
