//! `--metrics ADDR` on `server` and `web`: binds the endpoint with the rest of the server's
//! ports, then serves it beside them until shutdown.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::net::metrics_serve;
use wirespeed_engine::server::Listeners;
use wirespeed_metrics::Metrics;

/// The endpoint's listener, bound now so a bad address fails before anything is served.
pub(super) fn listen(addr: Option<SocketAddr>) -> Result<Option<TcpListener>> {
    let Some(addr) = addr else { return Ok(None) };
    let mut bound = Listeners::bind_tcp(&[addr], addr.port())
        .with_context(|| format!("cannot serve --metrics on {addr}"))?;
    Ok(bound.pop())
}

/// Serves `metrics` on `listener` (if any) until `shutdown`.
pub(super) fn spawn(
    listener: Option<TcpListener>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    let listener = listener?;
    if let Ok(a) = listener.local_addr() {
        tracing::info!("Prometheus metrics on http://{a}/metrics");
    }
    Some(tokio::spawn(metrics_serve::run(vec![listener], metrics, shutdown)))
}
