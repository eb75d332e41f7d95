//! `wirespeed web` and `server --web`: the browser speed test, from flags to a running server.

use std::io::BufRead;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::server::Listeners;
use wirespeed_metrics::Metrics;
use wirespeed_model::units::parse_bytes;
use wirespeed_store::{Store, WebPolicy};
use wirespeed_web::geoip::GeoIp;
use wirespeed_web::limits::LimitConfig;
use wirespeed_web::{State, WebConfig};

use crate::exit;
use crate::flags::{WebArgs, WebOptions};
use crate::saved;

/// The server's configuration from its flags (opening the GeoIP files and the store).
pub(super) fn config(o: &WebOptions, metrics: Arc<Metrics>) -> Result<WebConfig> {
    let size = |flag: &str, v: &str| {
        parse_bytes(v).with_context(|| format!("{flag} {v}: a size such as 64M or 100G"))
    };
    if !(1..=wirespeed_web::MAX_CHUNKS).contains(&o.max_chunks) {
        anyhow::bail!("--max-chunks must be 1..={}", wirespeed_web::MAX_CHUNKS);
    }
    let max_upload = size("--max-upload", &o.max_upload)?;
    if max_upload == 0 {
        anyhow::bail!("--max-upload must be above 0");
    }
    if let Some(h) = &o.admin_password_hash {
        wirespeed_web::api::check_hash(h)
            .map_err(|e| anyhow::anyhow!("--admin-password-hash: {e}"))?;
    }
    let store = if o.no_save {
        None
    } else {
        Some(Arc::new(Mutex::new(Store::open_at(&saved::db_location(&o.db)?)?)))
    };
    Ok(WebConfig {
        max_chunks: o.max_chunks,
        max_upload,
        limits: LimitConfig {
            requests_per_minute: o.requests_per_ip,
            bytes_per_hour: size("--bytes-per-ip", &o.bytes_per_ip)?,
            streams: o.streams_per_ip,
        },
        trusted_proxies: o.trusted_proxy.clone(),
        geoip: GeoIp::open(&o.geoip)?,
        policy: WebPolicy { max_results: o.max_results, same_ip_multi: o.same_ip_multi_results },
        admin_hash: o.admin_password_hash.clone(),
        store,
        name: o.name.clone(),
        tls: match (&o.tls_cert, &o.tls_key) {
            (Some(cert), Some(key)) => Some(wirespeed_engine::net::tls::server_config(cert, key)?),
            _ => None,
        },
        metrics,
    })
}

/// Binds the web port: `bind` addresses, or every address.
pub(super) fn listen(bind: &[std::net::IpAddr], port: u16) -> Result<Vec<TcpListener>> {
    let addrs: Vec<SocketAddr> = bind.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
    Listeners::bind_tcp(&addrs, port)
        .with_context(|| format!("cannot listen for the web speed test on port {port}"))
}

/// Starts serving; the task ends after `shutdown`.
pub(super) fn spawn(
    listeners: Vec<TcpListener>,
    config: WebConfig,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let scheme = if config.tls.is_some() { "https" } else { "http" };
    for a in listeners.iter().filter_map(|l| l.local_addr().ok()) {
        tracing::info!(
            "web speed test on {scheme}://{a}/ (results at /results, responsiveness at /.well-known/nq)"
        );
    }
    if config.store.is_none() {
        tracing::info!("results are not saved (--no-save)");
    }
    tokio::spawn(wirespeed_web::run(listeners, State::new(config), shutdown))
}

/// `wirespeed web`.
pub(super) async fn run(args: WebArgs) -> Result<u8> {
    if args.hash_password {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).context("reading the password")?;
        let password = line.trim_end_matches(['\n', '\r']);
        if password.is_empty() {
            anyhow::bail!("no password on standard input");
        }
        println!("{}", wirespeed_web::api::hash_password(password).map_err(anyhow::Error::msg)?);
        return Ok(exit::OK);
    }
    let metrics = Metrics::new(env!("CARGO_PKG_VERSION"));
    let config = config(&args.web, metrics.clone())?;
    let listeners = listen(&args.bind, args.port)?;
    let metrics_listener = super::metrics::listen(args.metrics)?;
    let shutdown = super::interrupt_token();
    let served = super::metrics::spawn(metrics_listener, metrics, shutdown.clone());
    spawn(listeners, config, shutdown).await.context("web server")?;
    if let Some(m) = served {
        m.await.context("metrics endpoint")?;
    }
    tracing::info!("stopped");
    Ok(exit::OK)
}
