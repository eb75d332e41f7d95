//! One module per subcommand; each returns the process exit code.

mod bandwidth;
mod latency;
mod quick;
mod server;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::flags::Command;

/// Runs a subcommand to completion.
pub fn run(command: Command) -> Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        match command {
            Command::Server(args) => server::run(args).await,
            Command::Bandwidth(args) => bandwidth::run(*args).await,
            Command::Latency(args) => latency::run(*args).await,
            Command::Pps(args) => bandwidth::run_pps(*args).await,
            Command::Quick(args) => quick::run(args).await,
        }
    })
}

/// A token cancelled by the first Ctrl-C or SIGTERM.
pub fn interrupt_token() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match term.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        t.cancel();
    });
    token
}
