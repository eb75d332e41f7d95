//! Runs a probe loop (ping, trace) on the blocking thread pool with a stop flag that the
//! user's interrupt raises, so the loop can end between probes and still report.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::error::ClientError;

/// Runs `work` on a blocking thread; its flag turns true when `cancel` fires.
pub(crate) async fn run_stoppable<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
) -> Result<T, ClientError> {
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, cancel) = (stop.clone(), cancel.clone());
        tokio::spawn(async move {
            cancel.cancelled().await;
            stop.store(true, Relaxed);
        })
    };
    let done = tokio::task::spawn_blocking(move || work(&stop)).await;
    watcher.abort();
    done.map_err(ClientError::joined("probe thread"))
}
