//! What a server's peer has received of a connection's data, as against what was handed to
//! the kernel: a [`Tapped`] stream samples `tcpi_bytes_acked` after each write and hands the
//! growth to whichever sink is attached to its [`DeliveryTap`] (the web speed test's meter of
//! the download in progress). Counting bytes as a response body yields them overstates a slow
//! client by the send buffer and the chunk in hand (+48 % at 8 Mbit/s over six streams); the
//! peer's acknowledgements leave only what sits unread in its own receive buffer.

use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::net::sys;

/// How often an attached tap is sampled besides after writes.
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Where acknowledged bytes go: `(bytes, when)`.
pub type Sink = Arc<dyn Fn(u64, Instant) + Send + Sync>;

/// One connection's acknowledged-bytes counter, shared by the stream and its requests.
pub struct DeliveryTap {
    fd: RawFd,
    state: Mutex<TapState>,
}

struct TapState {
    /// Acknowledged bytes at the last sample.
    acked: u64,
    /// Counts attachments, so a sampling task knows when its own has ended.
    generation: u64,
    sink: Option<Sink>,
    /// Set when the stream is dropped: its descriptor may then belong to another socket.
    closed: bool,
}

impl std::fmt::Debug for DeliveryTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryTap").field("fd", &self.fd).finish_non_exhaustive()
    }
}

impl DeliveryTap {
    fn new(fd: RawFd) -> Self {
        let acked = sys::bytes_acked(fd).unwrap_or(0);
        Self { fd, state: Mutex::new(TapState { acked, generation: 0, sink: None, closed: false }) }
    }

    /// From now on, acknowledged bytes go to `sink` (those before go to the previous sink),
    /// sampled after every write and every [`SAMPLE_EVERY`] besides: a slow reader's socket
    /// stays unwritable for a second at a time, and a sample is when its bytes are counted.
    /// Needs a tokio runtime.
    pub fn attach(self: &Arc<Self>, sink: Sink) {
        let generation = {
            let mut s = self.lock();
            self.sample_locked(&mut s);
            s.sink = Some(sink);
            s.generation += 1;
            s.generation
        };
        let tap = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SAMPLE_EVERY);
            loop {
                every.tick().await;
                let Some(tap) = tap.upgrade() else { return };
                let mut s = tap.lock();
                if s.closed || s.generation != generation {
                    return;
                }
                tap.sample_locked(&mut s);
            }
        });
    }

    /// From now on, acknowledged bytes go nowhere.
    pub fn detach(&self) {
        let mut s = self.lock();
        self.sample_locked(&mut s);
        s.sink = None;
        s.generation += 1;
    }

    fn sample(&self) {
        let mut s = self.lock();
        self.sample_locked(&mut s);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TapState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sample_locked(&self, s: &mut TapState) {
        if s.closed {
            return;
        }
        let Some(acked) = sys::bytes_acked(self.fd) else { return };
        let grown = acked.saturating_sub(s.acked);
        s.acked = acked;
        if grown > 0 {
            if let Some(sink) = &s.sink {
                sink(grown, Instant::now());
            }
        }
    }
}

/// A TCP stream whose writes sample its [`DeliveryTap`], when it has one: a server that does
/// not count deliveries (the HTTP fixture) pays nothing per write.
#[derive(Debug)]
pub struct Tapped<S> {
    inner: S,
    tap: Option<Arc<DeliveryTap>>,
}

impl<S: std::os::fd::AsRawFd> Tapped<S> {
    /// Wraps `inner`, with a tap when `counted`; requests on it find the tap in their
    /// extensions (see `serve`).
    pub fn new(inner: S, counted: bool) -> Self {
        let tap = counted.then(|| Arc::new(DeliveryTap::new(inner.as_raw_fd())));
        Self { inner, tap }
    }

    /// The connection's tap, if it counts deliveries.
    pub fn tap(&self) -> Option<Arc<DeliveryTap>> {
        self.tap.clone()
    }

    fn sample(&self) {
        if let Some(tap) = &self.tap {
            tap.sample();
        }
    }
}

impl<S> Drop for Tapped<S> {
    fn drop(&mut self) {
        let Some(tap) = &self.tap else { return };
        // Last sample while the descriptor is still this connection's.
        let mut s = tap.lock();
        tap.sample_locked(&mut s);
        s.closed = true;
        s.sink = None;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tapped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin + std::os::fd::AsRawFd> AsyncWrite for Tapped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(_))) {
            self.sample();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(_))) {
            self.sample();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.sample();
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
