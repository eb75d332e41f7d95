//! One record per request, for `--format vegeta`: the load threads hand each finished request
//! to a bounded queue that a writer drains. A writer that falls behind loses records (counted
//! and reported) rather than slowing the load down or growing memory without bound.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wirespeed_model::kinds::http::RequestResult;

/// Records a writer may lag behind by before they are lost.
pub const QUEUE: usize = 1 << 16;

/// Where the load threads put their records.
#[derive(Debug, Clone)]
pub struct ResultSink(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    tx: SyncSender<RequestResult>,
    seq: AtomicU64,
    lost: AtomicU64,
    base: Instant,
    base_unix_ns: i64,
}

impl ResultSink {
    /// A sink, and the receiving end for the writer.
    pub fn new() -> (Self, Receiver<RequestResult>) {
        let (tx, rx) = sync_channel(QUEUE);
        let base_unix_ns =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        let inner = Inner {
            tx,
            seq: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            base: Instant::now(),
            base_unix_ns,
        };
        (Self(Arc::new(inner)), rx)
    }

    /// Records lost because the writer fell behind.
    pub fn lost(&self) -> u64 {
        self.0.lost.load(Relaxed)
    }

    /// Hands over one request's record: it started at `started` and took `took`.
    pub(super) fn emit(
        &self,
        request: usize,
        started: Instant,
        took: Duration,
        code: u16,
        bytes: (u64, u64),
        error: Option<&'static str>,
    ) {
        let i = &self.0;
        let offset = started.saturating_duration_since(i.base).as_nanos() as i64
            - i.base.saturating_duration_since(started).as_nanos() as i64;
        let record = RequestResult {
            seq: i.seq.fetch_add(1, Relaxed),
            start_unix_ns: i.base_unix_ns + offset,
            latency_ns: took.as_nanos() as u64,
            code,
            bytes_out: bytes.0,
            bytes_in: bytes.1,
            error,
            request,
        };
        if let Err(TrySendError::Full(_)) = i.tx.try_send(record) {
            i.lost.fetch_add(1, Relaxed);
        }
    }
}
