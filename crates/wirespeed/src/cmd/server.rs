//! `wirespeed server`: bind, serve until Ctrl-C/SIGTERM, stop tests cleanly.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use wirespeed_engine::server::{self, Listeners};

use crate::exit;
use crate::flags::ServerArgs;
use crate::resolve;

pub async fn run(args: ServerArgs) -> Result<u8> {
    let config = resolve::server(&args, env!("CARGO_PKG_VERSION"))?;
    let listeners = if args.bind.is_empty() {
        Listeners::bind_default(args.port)
    } else {
        let addrs: Vec<SocketAddr> =
            args.bind.iter().map(|ip| SocketAddr::new(*ip, args.port)).collect();
        Listeners::bind(&addrs)
    }
    .with_context(|| format!("cannot listen on port {}", args.port))?;
    for addr in listeners.local_addrs() {
        tracing::info!("listening on {addr} (TCP and UDP)");
    }
    if config.token.is_some() {
        tracing::info!("clients must present the token");
    }
    let shutdown = super::interrupt_token();
    server::run(listeners, config, shutdown).await.context("server failed")?;
    tracing::info!("stopped");
    Ok(exit::OK)
}
