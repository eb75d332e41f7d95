//! HTTP/2 load (`--h2`): hyper's client on a runtime of `-t` threads, prior knowledge on
//! http:// (h2c) and ALPN `h2` over TLS. Closed model: `-c` connections, each with
//! `--streams` requests in flight. Open model: requests fall due on a fixed schedule and go
//! out round-robin over `-c` connections (HTTP/2 multiplexes, so none waits for a free
//! connection); latency counts from the scheduled time. A connection that fails is replaced.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex as AsyncMutex;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::member::Stripe;
use wirespeed_proto::http_url::HttpUrl;

use super::conn::LATE_NS;
use super::counts::{Cause, ShardCounts};
use super::requests::{Request, RequestSet};
use super::results::ResultSink;
use super::shard::{Peer, Schedule};
use super::step::{Running, Stopper};
use crate::run::budget::Budget;

type Sender = SendRequest<Full<Bytes>>;

/// What every task of a step shares.
struct Ctx {
    peer: Arc<Peer>,
    set: Arc<RequestSet>,
    /// `scheme://authority` for the requests' URIs.
    origin: String,
    timeout: Duration,
    budget: Budget,
    stop: Arc<AtomicBool>,
    next: AtomicU64,
    results: Option<ResultSink>,
}

/// One of the `-c` connections, shared by every request that goes out on it. When it fails
/// (a GOAWAY, a reset), the first request to notice opens its replacement and the others use
/// that one: a GOAWAY costs one new connection, not one per request in flight.
#[derive(Default)]
struct Connection {
    current: AsyncMutex<Slot>,
}

#[derive(Default)]
struct Slot {
    /// Counts the connections this slot has had, so a request can say which one failed it.
    generation: u64,
    sender: Option<Sender>,
}

impl Connection {
    /// The live connection and its generation, opened first if there is none or it closed.
    /// `None` when opening failed (counted against the request due at `scheduled`).
    async fn get(&self, ctx: &Ctx, c: &ShardCounts, scheduled: Instant) -> Option<(u64, Sender)> {
        let mut slot = self.current.lock().await;
        if slot.sender.as_ref().is_none_or(Sender::is_closed) {
            slot.generation += 1;
            slot.sender = connect(ctx, c, scheduled).await;
        }
        Some((slot.generation, slot.sender.clone()?))
    }

    /// A connection to use instead of generation `failed`: its replacement if another request
    /// opened one already, else a new one.
    async fn replace(
        &self,
        failed: u64,
        ctx: &Ctx,
        c: &ShardCounts,
        scheduled: Instant,
    ) -> Option<(u64, Sender)> {
        self.retire(failed).await;
        self.get(ctx, c, scheduled).await
    }

    /// Forgets generation `failed` if it is still the current one, so the next request opens
    /// a new connection.
    async fn retire(&self, failed: u64) {
        let mut slot = self.current.lock().await;
        if slot.generation == failed {
            slot.sender = None;
        }
    }
}

/// The runtime thread of one step.
struct H2Step {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stopper for H2Step {
    fn stop(mut self: Box<Self>) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts one step of an HTTP/2 test (`rate`: the open model's, or `None`).
pub(super) fn start(
    spec: &HttpSpec,
    peer: &Arc<Peer>,
    url: &HttpUrl,
    set: &Arc<RequestSet>,
    (rate, stripe): (Option<f64>, Stripe),
    results: Option<ResultSink>,
) -> io::Result<Running> {
    let stop = Arc::new(AtomicBool::new(false));
    let connections = usize::from(spec.connections);
    let counts: Vec<Arc<ShardCounts>> =
        (0..connections).map(|_| Arc::new(ShardCounts::default())).collect();
    let ctx = Arc::new(Ctx {
        peer: peer.clone(),
        set: set.clone(),
        origin: url.origin(),
        timeout: Duration::from_nanos(spec.timeout_ns),
        budget: Budget::new(spec.count),
        stop: stop.clone(),
        next: AtomicU64::new(0),
        results,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(spec.threads.max(1)))
        .thread_name("ws-h2")
        .enable_all()
        .build()?;
    let begin = Instant::now();
    // One sender of requests, so one schedule: every 1/rate s, until the step's end.
    let schedule = rate.map(|r| Schedule::new(spec, begin, r, 0, 1, stripe));
    let streams = usize::from(spec.streams.max(1));
    let thread = {
        let counts = counts.clone();
        std::thread::Builder::new().name("ws-h2-main".into()).spawn(move || {
            runtime.block_on(async move {
                match schedule {
                    None => closed(ctx, counts, streams).await,
                    Some(schedule) => open(ctx, counts, schedule).await,
                }
            });
            // Requests still in flight when the step ended are abandoned with the runtime.
            runtime.shutdown_timeout(Duration::from_millis(100));
        })?
    };
    Ok(Running { begin, counts, stopper: Box::new(H2Step { stop, thread: Some(thread) }) })
}

/// Closed model: every connection keeps `streams` requests in flight.
async fn closed(ctx: Arc<Ctx>, counts: Vec<Arc<ShardCounts>>, streams: usize) {
    let mut tasks = tokio::task::JoinSet::new();
    for c in counts {
        let ctx = ctx.clone();
        tasks.spawn(async move {
            let connection = Arc::new(Connection::default());
            let mut streams_set = tokio::task::JoinSet::new();
            for _ in 0..streams {
                let (ctx, c, connection) = (ctx.clone(), c.clone(), connection.clone());
                streams_set.spawn(async move {
                    // A counted run ends with the claim that finds the budget spent.
                    while !ctx.stop.load(Relaxed) && ctx.budget.claim() {
                        let now = Instant::now();
                        // A connection that cannot be opened fails the claimed request.
                        let Some((generation, sender)) = connection.get(&ctx, &c, now).await else {
                            continue;
                        };
                        let on = On { connection: &connection, generation, sender };
                        if !request(&ctx, &c, on, now, false).await {
                            connection.retire(generation).await;
                        }
                    }
                });
            }
            while streams_set.join_next().await.is_some() {}
            c.done.store(true, Relaxed);
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Open model: a request falls due on `schedule` and goes out on the next connection. A pacing thread says when: tokio's timers tick in whole milliseconds and fire
/// up to one late, and since latency counts from the schedule, that lateness would be added to
/// every request (and each counted late). The thread sleeps with a tight timer slack instead.
async fn open(ctx: Arc<Ctx>, counts: Vec<Arc<ShardCounts>>, mut schedule: Schedule) {
    let connections: Vec<Arc<Connection>> =
        counts.iter().map(|_| Arc::new(Connection::default())).collect();
    let mut inflight = tokio::task::JoinSet::new();
    let (due_tx, mut due_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let stop = ctx.stop.clone();
    let pacer = std::thread::Builder::new().name("ws-h2-pace".into()).spawn(move || {
        crate::net::sys::tighten_timer_slack();
        loop {
            let Some(due) = schedule.next_due() else { return };
            schedule.book();
            // In steps of at most 50 ms, so a stop is seen.
            loop {
                let now = Instant::now();
                if now >= due || stop.load(Relaxed) {
                    break;
                }
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
            }
            // Stopped, or the loop below has ended.
            if stop.load(Relaxed) || due_tx.send(due).is_err() {
                return;
            }
        }
    });
    if pacer.is_err() {
        // No thread for the pacer: nothing can be sent on time.
        for c in &counts {
            c.done.store(true, Relaxed);
        }
        return;
    }
    let mut k = 0u64;
    while let Some(due) = due_rx.recv().await {
        if ctx.stop.load(Relaxed) || !ctx.budget.claim() {
            break;
        }
        let i = (k as usize) % counts.len();
        k += 1;
        let (ctx, c, connection) = (ctx.clone(), counts[i].clone(), connections[i].clone());
        inflight.spawn(async move {
            // Without a connection, the failed connect was counted against this request.
            if let Some((generation, sender)) = connection.get(&ctx, &c, due).await {
                let on = On { connection: &connection, generation, sender };
                if !request(&ctx, &c, on, due, true).await {
                    connection.retire(generation).await;
                }
            }
        });
        // Reap finished requests so the set stays as small as what is in flight.
        while inflight.try_join_next().is_some() {}
    }
    // The pacer's next send fails and it ends (within 50 ms when it is sleeping).
    drop(due_rx);
    while !ctx.stop.load(Relaxed) && !inflight.is_empty() {
        tokio::select! {
            _ = inflight.join_next() => {}
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
    }
    for c in &counts {
        c.done.store(true, Relaxed);
    }
}

/// Opens one HTTP/2 connection; a failure is counted (and recorded) against the request that
/// needed it, due at `scheduled`.
async fn connect(ctx: &Ctx, c: &ShardCounts, scheduled: Instant) -> Option<Sender> {
    let opened = Instant::now();
    let (cause, detail) = match tokio::time::timeout(ctx.timeout, handshake(ctx, c, opened)).await {
        Ok(Ok(sender)) => return Some(sender),
        Ok(Err(failure)) => failure,
        Err(_) => (Cause::ConnectTimeout, None),
    };
    if let Some(sink) = &ctx.results {
        let i = (ctx.next.fetch_add(1, Relaxed) % ctx.set.len().max(1) as u64) as usize;
        let out = ctx.set.requests[i].body.len() as u64;
        sink.emit(i, scheduled, scheduled.elapsed(), 0, (out, 0), Some(cause.name()));
    }
    c.fail(cause, detail);
    None
}

async fn handshake(
    ctx: &Ctx,
    c: &ShardCounts,
    opened: Instant,
) -> Result<Sender, (Cause, Option<String>)> {
    let io_err = |e: io::Error| (Cause::of(&e, true), None);
    let since = |t: Instant| t.elapsed().as_nanos() as u64;
    c.count(|t| t.connections += 1);
    if let Some(path) = ctx.peer.addr.as_pathname() {
        let stream = tokio::net::UnixStream::connect(path).await.map_err(io_err)?;
        c.histograms(|h| h.connect.record(since(opened)));
        return h2_over(stream).await;
    }
    let addr = ctx.peer.addr.as_socket().ok_or((Cause::Other, None))?;
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(io_err)?;
    let _ = tcp.set_nodelay(true);
    c.histograms(|h| h.connect.record(since(opened)));
    let Some((config, name)) = &ctx.peer.tls else { return h2_over(tcp).await };
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let tls = connector
        .connect(name.clone(), tcp)
        .await
        .map_err(|e| (Cause::Tls, Some(e.to_string())))?;
    c.histograms(|h| h.tls.record(since(opened)));
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err((Cause::Tls, Some("the server did not agree to HTTP/2 (ALPN h2)".into())));
    }
    h2_over(tls).await
}

async fn h2_over<S>(stream: S) -> Result<Sender, (Cause, Option<String>)>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| (cause_of(&e), None))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// True when `e` says the server never processed the request, so it may be sent again.
fn never_processed(e: &hyper::Error) -> bool {
    if e.is_canceled() || dispatch_gone(e) {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h2) = s.downcast_ref::<h2::Error>() {
            return (h2.is_go_away() && h2.is_remote())
                || h2.reason() == Some(h2::Reason::REFUSED_STREAM);
        }
        source = s.source();
    }
    false
}

/// hyper's "dispatch task is gone": the connection's task ended while the request waited in
/// its queue, before a stream carried it (a connection a GOAWAY closed, under load). hyper
/// has no accessor for this kind of error, only its text; the request never reached the
/// server, and it is the connection that closed, not the response that was invalid.
fn dispatch_gone(e: &hyper::Error) -> bool {
    e.is_user() && e.to_string().contains("dispatch task is gone")
}

fn cause_of(e: &hyper::Error) -> Cause {
    if e.is_timeout() {
        Cause::Timeout
    } else if dispatch_gone(e) {
        Cause::Closed
    } else if e.is_parse() || e.is_user() {
        Cause::Invalid
    } else if e.is_closed() || e.is_incomplete_message() {
        Cause::Closed
    } else {
        // h2 protocol errors (GOAWAY, RST_STREAM) and I/O errors end up here.
        let text = e.to_string();
        if text.contains("reset") {
            Cause::Reset
        } else {
            Cause::Other
        }
    }
}

/// How many times a request the server never processed is sent again before it counts as
/// failed:
/// each try goes out on a newer connection (or after REFUSED_STREAM), so this bounds the
/// unlucky case where hundreds queued behind one GOAWAY meet the next one too.
const UNPROCESSED_TRIES: u32 = 3;

/// The connection a request goes out on: the slot, which of its connections, and its sender.
struct On<'a> {
    connection: &'a Connection,
    generation: u64,
    sender: Sender,
}

/// Sends one request scheduled at `scheduled` and reads its whole response; false when the
/// connection is no longer usable.
async fn request(ctx: &Ctx, c: &ShardCounts, on: On<'_>, scheduled: Instant, open: bool) -> bool {
    let On { connection, mut generation, mut sender } = on;
    let i = (ctx.next.fetch_add(1, Relaxed) % ctx.set.len().max(1) as u64) as usize;
    let r = &ctx.set.requests[i];
    let make = || build(&ctx.origin, r);
    let Ok(req) = make() else {
        c.fail(Cause::Other, None);
        return true;
    };
    // Errors are `Some(cause)`, or `None` when a failed reconnect already counted itself.
    let work = async {
        let mut first = Some(req);
        let mut counted = false;
        let mut tries = 0;
        let (response, sent) = loop {
            let may_retry = tries < UNPROCESSED_TRIES;
            tries += 1;
            if let Err(e) = sender.ready().await {
                if !may_retry {
                    return Err(Some(cause_of(&e)));
                }
                // The connection went away (a GOAWAY, say) before this request went out.
                (generation, sender) =
                    connection.replace(generation, ctx, c, scheduled).await.ok_or(None)?;
                continue;
            }
            let sent = Instant::now();
            if !counted {
                counted = true;
                let queued = sent.saturating_duration_since(scheduled).as_nanos() as u64;
                if open && queued > ctx.timeout.as_nanos() as u64 {
                    return Err(Some(Cause::Dropped));
                }
                c.count(|t| {
                    t.sent += 1;
                    t.bytes_out += r.body.len() as u64;
                    t.late += u64::from(open && queued > LATE_NS);
                });
                if open {
                    c.histograms(|h| h.queue.record(queued));
                }
            }
            let req = match first.take() {
                Some(req) => req,
                None => make().map_err(|_| Some(Cause::Other))?,
            };
            match sender.send_request(req).await {
                Ok(response) => break (response, sent),
                // The server never processed it (a GOAWAY whose last stream id is below it, a
                // REFUSED_STREAM, a connection closed before it went out): HTTP/2 lets it be
                // sent again (RFC 9113 §8.7): after a GOAWAY on the connection that replaced
                // this one; after REFUSED_STREAM on the same one if it still takes requests.
                Err(e) if may_retry && never_processed(&e) && sender.is_ready() => {}
                Err(e) if may_retry && never_processed(&e) => {
                    (generation, sender) =
                        connection.replace(generation, ctx, c, scheduled).await.ok_or(None)?;
                }
                Err(e) => return Err(Some(cause_of(&e))),
            }
        };
        c.histograms(|h| h.first_byte.record(sent.elapsed().as_nanos() as u64));
        read_body(response).await
    };
    let outcome = tokio::time::timeout(ctx.timeout, work).await;
    settle(ctx, c, (i, r.body.len() as u64), scheduled, outcome, &sender)
}

/// Request `r` of the set, for `origin`.
fn build(origin: &str, r: &Request) -> hyper::http::Result<hyper::Request<Full<Bytes>>> {
    let mut builder = hyper::Request::builder()
        .method(r.method.as_str())
        .uri(format!("{origin}{}", r.url.path))
        .header("user-agent", concat!("wirespeed/", env!("CARGO_PKG_VERSION")));
    for (k, v) in &r.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let given = r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if let Some(credentials) = r.url.basic_auth.as_deref().filter(|_| !given) {
        builder = builder.header("authorization", credentials);
    }
    builder.body(Full::new(Bytes::from(r.body.clone())))
}

/// Reads a response's whole body: its status and the body's bytes.
async fn read_body(
    response: hyper::Response<hyper::body::Incoming>,
) -> Result<(u16, u64), Option<Cause>> {
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes_in = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Some(cause_of(&e)))?;
        if let Some(data) = frame.data_ref() {
            bytes_in += data.len() as u64;
        }
    }
    Ok((status, bytes_in))
}

/// What a request's outcome (request `i`, of `out` body bytes) counts for, written to the
/// results sink when there is one; false when the connection is no longer usable.
fn settle(
    ctx: &Ctx,
    c: &ShardCounts,
    (i, out): (usize, u64),
    scheduled: Instant,
    outcome: Result<Result<(u16, u64), Option<Cause>>, tokio::time::error::Elapsed>,
    sender: &Sender,
) -> bool {
    let took = scheduled.elapsed();
    if let Some(sink) = &ctx.results {
        match &outcome {
            Ok(Ok((status, bytes_in))) => {
                sink.emit(i, scheduled, took, *status, (out, *bytes_in), None)
            }
            Ok(Err(Some(cause))) => sink.emit(i, scheduled, took, 0, (out, 0), Some(cause.name())),
            Ok(Err(None)) => {} // the failed reconnect recorded it
            Err(_) => sink.emit(i, scheduled, took, 0, (out, 0), Some(Cause::Timeout.name())),
        }
    }
    match outcome {
        Ok(Ok((status, bytes_in))) => {
            c.histograms(|h| h.total.record(took.as_nanos() as u64));
            c.count(|t| {
                t.responses += 1;
                t.succeeded += u64::from((200..400).contains(&status));
                t.bytes_in += bytes_in;
                *t.status.entry(status).or_default() += 1;
            });
            true
        }
        Ok(Err(Some(cause))) => {
            c.fail(cause, None);
            !matches!(cause, Cause::Closed | Cause::Reset | Cause::Other) && !sender.is_closed()
        }
        Ok(Err(None)) => false,
        Err(_) => {
            c.fail(Cause::Timeout, None);
            !sender.is_closed()
        }
    }
}
