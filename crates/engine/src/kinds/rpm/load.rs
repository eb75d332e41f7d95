//! The load of a responsiveness leg: HTTP/2 connections, each carrying one transfer at a time
//! (a download of the large object, or an upload of a fixed size) started again as soon as it
//! ends, their bytes counted into the leg's counters as they move. A connection's sender is
//! kept for the self probes, which share its congestion window and queues.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::client::conn::http2::SendRequest;
use hyper::Request;
use tokio::task::JoinSet;
use wirespeed_proto::http_url::HttpUrl;

use super::conn::{self, no_body, Failure, ReqBody, Server};

/// Bytes in one upload request before it is sent again: large enough that request overhead
/// is nothing, under the caps servers put on a request body.
pub(super) const UPLOAD_REQUEST_BYTES: u64 = 100_000_000;

/// What the leg's load has moved and how it fares.
#[derive(Default)]
pub(super) struct LoadCounters {
    /// Bytes received by downloads.
    pub download: Arc<AtomicU64>,
    /// Bytes handed to uploads.
    pub upload: Arc<AtomicU64>,
    /// Connections or transfers that failed.
    pub failures: AtomicU64,
    /// The last failure's reason.
    pub last_failure: Mutex<Option<Failure>>,
}

impl LoadCounters {
    pub(super) fn fail(&self, why: Failure) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

/// Which way a load connection moves bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    Down,
    Up,
}

/// The leg's load-generating connections.
pub(super) struct Load {
    server: Server,
    large: HttpUrl,
    upload: HttpUrl,
    pub counters: Arc<LoadCounters>,
    block: Bytes,
    /// Senders of the connections that opened, for self probes.
    senders: Arc<Mutex<Vec<SendRequest<ReqBody>>>>,
    tasks: JoinSet<()>,
    /// Connections asked for.
    pub opened: u32,
    next_probe: usize,
}

impl Load {
    pub(super) fn new(server: Server, large: HttpUrl, upload: HttpUrl) -> Self {
        let mut block = vec![0u8; 1 << 16];
        // A failure leaves zeros: still a valid load on paths that do not compress.
        let _ = getrandom::fill(&mut block);
        Self {
            server,
            large,
            upload,
            counters: Arc::default(),
            block: Bytes::from(block),
            senders: Arc::default(),
            tasks: JoinSet::new(),
            opened: 0,
            next_probe: 0,
        }
    }

    /// Opens one more connection moving bytes `way`, in the background.
    pub(super) fn add(&mut self, way: Way) {
        self.opened += 1;
        let (server, counters, senders, block) =
            (self.server.clone(), self.counters.clone(), self.senders.clone(), self.block.clone());
        let url = if way == Way::Down { self.large.clone() } else { self.upload.clone() };
        self.tasks.spawn(async move {
            let mut sender = match conn::connect(&server).await {
                Ok((s, _)) => s,
                Err(why) => return counters.fail(why),
            };
            senders.lock().unwrap_or_else(|e| e.into_inner()).push(sender.clone());
            loop {
                let moved = match way {
                    Way::Down => download(&mut sender, &server, &url, &counters.download).await,
                    Way::Up => upload(&mut sender, &server, &url, &counters.upload, &block).await,
                };
                if let Err(why) = moved {
                    return counters.fail(why);
                }
            }
        });
    }

    /// Connections that opened and are still running.
    pub(super) fn live(&self) -> u32 {
        let senders = self.senders.lock().unwrap_or_else(|e| e.into_inner());
        senders.iter().filter(|s| !s.is_closed()).count() as u32
    }

    /// The next open connection's sender for a self probe, round robin.
    pub(super) fn probe_sender(&mut self) -> Option<SendRequest<ReqBody>> {
        let senders = self.senders.lock().unwrap_or_else(|e| e.into_inner());
        let open: Vec<&SendRequest<ReqBody>> = senders.iter().filter(|s| !s.is_closed()).collect();
        if open.is_empty() {
            return None;
        }
        self.next_probe = self.next_probe.wrapping_add(1);
        Some(open[self.next_probe % open.len()].clone())
    }

    /// Stops every transfer and closes the connections.
    pub(super) async fn stop(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.senders.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

async fn download(
    sender: &mut SendRequest<ReqBody>,
    server: &Server,
    url: &HttpUrl,
    count: &AtomicU64,
) -> Result<(), Failure> {
    let request = Request::get(format!("{}{}", server.origin, url.path))
        .body(no_body())
        .map_err(|e| format!("request: {e}"))?;
    sender.ready().await.map_err(|e| format!("load connection closed: {e}"))?;
    let response =
        sender.send_request(request).await.map_err(|e| format!("download failed: {e}"))?;
    if response.status() != hyper::StatusCode::OK {
        return Err(format!("the download URL answered {}", response.status()));
    }
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("download cut short: {e}"))?;
        if let Some(d) = frame.data_ref() {
            count.fetch_add(d.len() as u64, Ordering::Relaxed);
        }
    }
    Ok(())
}

async fn upload(
    sender: &mut SendRequest<ReqBody>,
    server: &Server,
    url: &HttpUrl,
    count: &Arc<AtomicU64>,
    block: &Bytes,
) -> Result<(), Failure> {
    let body = conn::upload_body(UPLOAD_REQUEST_BYTES, block.clone(), count.clone());
    let request = Request::post(format!("{}{}", server.origin, url.path))
        .header(hyper::header::CONTENT_TYPE, "application/octet-stream")
        .body(body)
        .map_err(|e| format!("request: {e}"))?;
    sender.ready().await.map_err(|e| format!("load connection closed: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| format!("upload failed: {e}"))?;
    let status = response.status();
    let _ = response.into_body().collect().await;
    if !status.is_success() {
        return Err(format!("the upload URL answered {status}"));
    }
    Ok(())
}
