//! Response bodies: small ones held whole, and the download source, which cuts LibreSpeed's
//! `ckSize` MiB from a few random blocks made at start-up (incompressible, and no CPU spent per
//! request — LibreSpeed's PHP draws a fresh MiB from OpenSSL for every request) and counts what
//! it hands to the connection into the test's meter.

use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use wirespeed_metrics::IntCounter;

use crate::limits::{Limits, StreamSlot};
use crate::meter::Transfer;

/// One MiB: LibreSpeed's chunk.
pub const CHUNK: usize = 1 << 20;
/// Distinct random chunks; a download cycles through them.
const BLOCKS: usize = 4;

/// The random chunks downloads are made of.
pub fn random_blocks() -> Arc<[Bytes]> {
    (0..BLOCKS)
        .map(|_| {
            let mut b = vec![0u8; CHUNK];
            // A failure leaves zeros: still a valid measurement on paths that do not compress.
            let _ = getrandom::fill(&mut b);
            Bytes::from(b)
        })
        .collect()
}

/// How a download's bytes reach its test's meter.
#[derive(Debug)]
pub enum Counted {
    /// As they are handed to the connection.
    AsSent(Transfer),
    /// By someone else (the connection's delivery tap, as the client acknowledges them); the
    /// transfer is held to mark when the download ends.
    Elsewhere(Transfer),
}

/// A download in progress.
#[derive(Debug)]
pub struct Garbage {
    blocks: Arc<[Bytes]>,
    left: u32,
    next: usize,
    meter: Option<Counted>,
    /// Charged chunk by chunk to this visitor's transfer budget; the body ends early when it
    /// runs out (the responsiveness test's large object, whose size is not known up front).
    charged: Option<(Arc<Limits>, IpAddr)>,
    /// Held until the body is done or dropped (the client went away): the per-client cap.
    _slot: StreamSlot,
    /// `wirespeed_web_bytes_total{direction="sent"}`.
    sent: IntCounter,
}

impl Garbage {
    /// `chunks` MiB of `blocks`, counted into `meter` and `sent` as they go out.
    pub fn new(
        blocks: Arc<[Bytes]>,
        chunks: u32,
        meter: Option<Counted>,
        slot: StreamSlot,
        sent: IntCounter,
    ) -> Self {
        Self { blocks, left: chunks, next: 0, meter, charged: None, _slot: slot, sent }
    }

    /// The same download, charged to `(limits, client)` as it is sent rather than up front.
    pub fn charged(mut self, to: (Arc<Limits>, IpAddr)) -> Self {
        self.charged = Some(to);
        self
    }
}

/// A response body.
#[derive(Debug)]
pub enum WebBody {
    /// Held whole (possibly empty).
    Full(Option<Bytes>),
    /// The download source.
    Garbage(Box<Garbage>),
}

impl WebBody {
    /// No body.
    pub fn empty() -> Self {
        Self::Full(None)
    }
}

impl From<String> for WebBody {
    fn from(s: String) -> Self {
        Self::Full(Some(Bytes::from(s)))
    }
}

impl From<&'static str> for WebBody {
    fn from(s: &'static str) -> Self {
        Self::Full(Some(Bytes::from_static(s.as_bytes())))
    }
}

impl Body for WebBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Full(b) => {
                Poll::Ready(b.take().filter(|b| !b.is_empty()).map(|b| Ok(Frame::data(b))))
            }
            Self::Garbage(g) => {
                if g.left == 0 {
                    return Poll::Ready(None);
                }
                if let Some((limits, client)) = &g.charged {
                    if limits.charge(*client, CHUNK as u64, Instant::now()).is_err() {
                        // Out of budget: the answer stops short of its length, which the
                        // client sees as a cut transfer.
                        g.left = 0;
                        return Poll::Ready(None);
                    }
                }
                g.left -= 1;
                let chunk = g.blocks[g.next % g.blocks.len()].clone();
                g.next += 1;
                g.sent.inc_by(chunk.len() as u64);
                if let Some(Counted::AsSent(t)) = &g.meter {
                    t.add(chunk.len() as u64, Instant::now());
                }
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Full(b) => b.as_ref().is_none_or(Bytes::is_empty),
            Self::Garbage(g) => g.left == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Self::Garbage(g) => SizeHint::with_exact(u64::from(g.left) * CHUNK as u64),
        }
    }
}
