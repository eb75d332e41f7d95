//! The load loops of the multiplexed protocols, HTTP/2 (`super::h2`) and HTTP/3
//! (`super::h3`): a runtime of `-t` threads (`crate::run::runtime`), `-c` connections each
//! shared by every request that goes out on it, and a connection that fails replaced by the
//! first request to notice.
//! Closed model: every connection keeps `--streams` requests in flight. Open model: requests
//! fall due on a fixed schedule and go out round-robin over the connections (none waits for a
//! free one); latency counts from the scheduled time. Without keep-alive, each request opens
//! a connection of its own and closes it. A [`Protocol`] says how to open a connection and
//! send one request on it.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::member::Stripe;

use super::counts::{Cause, ShardCounts};
use super::requests::RequestSet;
use super::results::ResultSink;
use super::shard::{Peer, Schedule};
use super::step::{Running, Stopper, FINISH_GRACE};
use crate::run::budget::Budget;

/// How one multiplexed protocol opens connections and sends requests on them.
pub(super) trait Protocol: Sized + Send + Sync + 'static {
    /// What sends requests on one connection (cheap to clone).
    type Sender: Clone + Send + Sync + 'static;

    /// Opens connection `index` of the `-c`, counting it and its handshake's parts.
    fn handshake(
        ctx: &Ctx<Self>,
        c: &ShardCounts,
        opened: Instant,
        index: usize,
    ) -> impl Future<Output = Result<Self::Sender, (Cause, Option<String>)>> + Send;

    /// True when `sender`'s connection takes no more requests.
    fn is_closed(sender: &Self::Sender) -> bool;

    /// Sends one request scheduled at `scheduled` on `on` and reads its whole response,
    /// counting it; false when the connection is no longer usable.
    fn request(
        ctx: &Ctx<Self>,
        c: &ShardCounts,
        on: On<'_, Self>,
        scheduled: Instant,
        open: bool,
    ) -> impl Future<Output = bool> + Send;
}

/// Most counts a step's connections share.
const MAX_SHARDS: usize = 16;

/// What every task of a step shares.
pub(super) struct Ctx<P> {
    /// The protocol's own state (HTTP/3's endpoints).
    pub proto: P,
    pub peer: Arc<Peer>,
    pub set: Arc<RequestSet>,
    /// `scheme://authority` for the requests' URIs.
    pub origin: String,
    pub timeout: Duration,
    pub(super) budget: Budget,
    /// False: every request on a connection of its own (`--no-keepalive`), closed after it.
    pub(super) keepalive: bool,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) next: AtomicU64,
    pub results: Option<ResultSink>,
}

impl<P> Ctx<P> {
    /// The index of the next request of the set to send (round-robin).
    pub(super) fn next_request(&self) -> usize {
        (self.next.fetch_add(1, Relaxed) % self.set.len().max(1) as u64) as usize
    }
}

/// One of the `-c` connections, shared by every request that goes out on it. When it fails
/// (a GOAWAY, a reset), the first request to notice opens its replacement and the others use
/// that one: a GOAWAY costs one new connection, not one per request in flight.
pub(super) struct Connection<P: Protocol> {
    index: usize,
    current: AsyncMutex<Slot<P::Sender>>,
}

struct Slot<S> {
    /// Counts the connections this slot has had, so a request can say which one failed it.
    generation: u64,
    sender: Option<S>,
}

impl<P: Protocol> Connection<P> {
    fn new(index: usize) -> Self {
        Self { index, current: AsyncMutex::new(Slot { generation: 0, sender: None }) }
    }

    /// The live connection and its generation, opened first if there is none or it closed.
    /// `None` when opening failed (counted against the request due at `scheduled`).
    pub(super) async fn get(
        &self,
        ctx: &Ctx<P>,
        c: &ShardCounts,
        scheduled: Instant,
    ) -> Option<(u64, P::Sender)> {
        let mut slot = self.current.lock().await;
        if slot.sender.as_ref().is_none_or(P::is_closed) {
            slot.generation += 1;
            slot.sender = connect(ctx, c, scheduled, self.index).await;
        }
        Some((slot.generation, slot.sender.clone()?))
    }

    /// A connection to use instead of generation `failed`: its replacement if another request
    /// opened one already, else a new one.
    pub(super) async fn replace(
        &self,
        failed: u64,
        ctx: &Ctx<P>,
        c: &ShardCounts,
        scheduled: Instant,
    ) -> Option<(u64, P::Sender)> {
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

/// The connection a request goes out on: the slot, which of its connections, and its sender.
pub(super) struct On<'a, P: Protocol> {
    pub connection: &'a Connection<P>,
    pub generation: u64,
    pub sender: P::Sender,
    /// The open model's request: whether it went out before the step gave up on it.
    pub due: Option<&'a Due>,
}

/// An open-model request handed to its task, until it is counted as sent, its task ends
/// (having counted what became of it), or the stopped step gives up on it: exactly one of
/// the three, so a request due before the end is counted once, never lost.
pub(super) struct Due {
    scheduled: Instant,
    state: AtomicU8,
}

impl Due {
    const WAITING: u8 = 0;
    const SENT: u8 = 1;
    const ENDED: u8 = 2;
    const GIVEN_UP: u8 = 3;

    fn new(scheduled: Instant) -> Self {
        Self { scheduled, state: AtomicU8::new(Self::WAITING) }
    }

    fn settle(&self, to: u8) -> bool {
        self.state.compare_exchange(Self::WAITING, to, Relaxed, Relaxed).is_ok()
    }

    fn waiting(&self) -> bool {
        self.state.load(Relaxed) == Self::WAITING
    }
}

/// The runtime thread of one step.
struct MultiplexStep {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stopper for MultiplexStep {
    fn stop(mut self: Box<Self>) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a step of a multiplexed protocol runs: the test and its target.
pub(super) struct StepPlan<'a> {
    pub spec: &'a HttpSpec,
    pub peer: &'a Arc<Peer>,
    pub origin: String,
    pub set: &'a Arc<RequestSet>,
    /// The open model's rate, or `None`; and this member's stripe of its schedule.
    pub rate: (Option<f64>, Stripe),
    pub results: Option<ResultSink>,
    /// Names its threads.
    pub name: &'static str,
}

/// Starts one step: `make` builds the protocol's state within the step's runtime.
pub(super) fn start<P: Protocol>(
    plan: StepPlan<'_>,
    make: impl FnOnce() -> io::Result<P>,
) -> io::Result<Running> {
    let StepPlan { spec, peer, origin, set, rate: (rate, stripe), results, name } = plan;
    let stop = Arc::new(AtomicBool::new(false));
    let connections = usize::from(spec.connections);
    // Connections share a few counts (each holds five HDR histograms the sampler takes and
    // merges every interval): one each, 5000 connections made every interval a merge of
    // 25 000 histograms, and a 2 s run took 15-20 s with its intervals seconds late.
    let counts: Vec<Arc<ShardCounts>> =
        (0..connections.min(MAX_SHARDS)).map(|_| Arc::new(ShardCounts::default())).collect();
    let runtime = crate::run::runtime::for_connections(spec.threads, name)?;
    let proto = {
        let _inside = runtime.enter();
        make()?
    };
    let ctx = Arc::new(Ctx {
        proto,
        peer: peer.clone(),
        set: set.clone(),
        origin,
        timeout: Duration::from_nanos(spec.timeout_ns),
        budget: Budget::new(spec.count),
        keepalive: spec.keepalive,
        stop: stop.clone(),
        next: AtomicU64::new(0),
        results,
    });
    let begin = Instant::now();
    // One sender of requests, so one schedule: every 1/rate s, until the step's end.
    let schedule = rate.map(|r| Schedule::new(spec, begin, r, 0, 1, stripe));
    let streams = usize::from(spec.streams.max(1));
    let thread = {
        let counts = counts.clone();
        std::thread::Builder::new().name(format!("{name}-main")).spawn(move || {
            runtime.block_on(async move {
                match schedule {
                    None => closed(ctx, counts, connections, streams).await,
                    Some(schedule) => open(ctx, counts, connections, schedule).await,
                }
            });
            // Requests still in flight when the step ended are abandoned with the runtime.
            runtime.shutdown_timeout(Duration::from_millis(100));
        })?
    };
    Ok(Running { begin, counts, stopper: Box::new(MultiplexStep { stop, thread: Some(thread) }) })
}

/// Closed model: every one of `connections` keeps `streams` requests in flight.
async fn closed<P: Protocol>(
    ctx: Arc<Ctx<P>>,
    all: Vec<Arc<ShardCounts>>,
    connections: usize,
    streams: usize,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..connections {
        let c = all[index % all.len()].clone();
        let ctx = ctx.clone();
        tasks.spawn(async move {
            let connection = Arc::new(Connection::<P>::new(index));
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
                        let on = On { connection: &connection, generation, sender, due: None };
                        if !P::request(&ctx, &c, on, now, false).await || !ctx.keepalive {
                            connection.retire(generation).await;
                        }
                    }
                });
            }
            while streams_set.join_next().await.is_some() {}
        });
    }
    // Once stopped, what is still in flight (a request, a handshake that may take its whole
    // timeout) is abandoned, as the open model's is: waiting for it ran `-d 2` with 5000
    // HTTP/3 connections to 20 s of wall clock.
    while !tasks.is_empty() {
        if ctx.stop.load(Relaxed) {
            tasks.abort_all();
            break;
        }
        tokio::select! {
            _ = tasks.join_next() => {}
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
    }
    for c in &all {
        c.done.store(true, Relaxed);
    }
}

/// Open model: a request falls due on `schedule` and goes out on the next connection. A
/// pacing thread says when: tokio's timers tick in whole milliseconds and fire up to one
/// late, and since latency counts from the schedule, that lateness would be added to every
/// request (and each counted late). The thread sleeps with a tight timer slack instead.
pub(super) async fn open<P: Protocol>(
    ctx: Arc<Ctx<P>>,
    counts: Vec<Arc<ShardCounts>>,
    connections: usize,
    mut schedule: Schedule,
) {
    let connections: Vec<Arc<Connection<P>>> =
        (0..connections).map(|i| Arc::new(Connection::new(i))).collect();
    let mut inflight = tokio::task::JoinSet::new();
    let (due_tx, mut due_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let stop = ctx.stop.clone();
    let pacer = std::thread::Builder::new().name("ws-http-pace".into()).spawn(move || {
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
            // Once stopped, what fell due before still goes out (this thread may wake after
            // the end on a busy machine), and nothing after. Or the loop below has ended.
            if (stop.load(Relaxed) && due > Instant::now()) || due_tx.send(due).is_err() {
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
    // The requests handed to a task and not yet out, checked when the step is stopped.
    let mut waiting: Vec<Arc<Due>> = Vec::new();
    while let Some(due) = due_rx.recv().await {
        // Every request the pacer hands over fell due before any stop.
        if !ctx.budget.claim() {
            break;
        }
        let i = (k as usize) % connections.len();
        k += 1;
        // Without keep-alive, a connection of its own (on connection i's endpoint).
        let connection = match ctx.keepalive {
            true => connections[i].clone(),
            false => Arc::new(Connection::new(i)),
        };
        let (ctx, c) = (ctx.clone(), counts[i % counts.len()].clone());
        let token = Arc::new(Due::new(due));
        if k.is_multiple_of(64) {
            waiting.retain(|d| d.waiting());
        }
        waiting.push(token.clone());
        inflight.spawn(async move {
            // Without a connection, the failed connect was counted against this request.
            if let Some((generation, sender)) = connection.get(&ctx, &c, due).await {
                let on = On { connection: &connection, generation, sender, due: Some(&token) };
                if !P::request(&ctx, &c, on, due, true).await {
                    connection.retire(generation).await;
                }
            }
            token.settle(Due::ENDED);
        });
        // Reap finished requests so the set stays as small as what is in flight.
        while inflight.try_join_next().is_some() {}
    }
    // The pacer's next send fails and it ends (within 50 ms when it is sleeping).
    drop(due_rx);
    // Unstopped, every response is waited for (each within its timeout). Stopped, only what
    // fell due before the stop and is not out yet, for at most the grace; the responses still
    // out are abandoned, as a closed run's are.
    let mut finish_by = None;
    while !inflight.is_empty() {
        let stopped = ctx.stop.load(Relaxed);
        if stopped {
            let by =
                *finish_by.get_or_insert_with(|| Instant::now() + FINISH_GRACE.min(ctx.timeout));
            waiting.retain(|d| d.waiting());
            if waiting.is_empty() || Instant::now() >= by {
                break;
            }
        }
        // Finishing, the last requests' going out is looked for every millisecond; until the
        // stop, a look every 10 ms is enough to see it come.
        let look = Duration::from_millis(if stopped { 1 } else { 10 });
        tokio::select! {
            _ = inflight.join_next() => {}
            _ = tokio::time::sleep(look) => {}
        }
    }
    for due in waiting.iter().filter(|d| d.settle(Due::GIVEN_UP)) {
        unsent(&ctx, &counts[0], due.scheduled, (Cause::Dropped, None));
    }
    for c in &counts {
        c.done.store(true, Relaxed);
    }
}

/// Counts (and records) a request due at `scheduled` that never went out: its connection
/// could not be opened, or the stopped step gave up on it after the grace.
fn unsent<P>(
    ctx: &Ctx<P>,
    c: &ShardCounts,
    scheduled: Instant,
    (cause, detail): (Cause, Option<String>),
) {
    if let Some(sink) = &ctx.results {
        let i = ctx.next_request();
        let out = ctx.set.requests[i].body.len() as u64;
        sink.emit(i, scheduled, scheduled.elapsed(), 0, (out, 0), Some(cause.name()));
    }
    c.fail(cause, detail);
}

/// Opens connection `index`; a failure is counted (and recorded) against the request that
/// needed it, due at `scheduled`.
async fn connect<P: Protocol>(
    ctx: &Ctx<P>,
    c: &ShardCounts,
    scheduled: Instant,
    index: usize,
) -> Option<P::Sender> {
    let opened = Instant::now();
    let handshake = P::handshake(ctx, c, opened, index);
    let (cause, detail) = match tokio::time::timeout(ctx.timeout, handshake).await {
        Ok(Ok(sender)) => return Some(sender),
        Ok(Err(failure)) => failure,
        Err(_) => (Cause::ConnectTimeout, None),
    };
    unsent(ctx, c, scheduled, (cause, detail));
    None
}

/// Counts a request as sent at `sent` (once, however often it is retried): its bytes, its
/// queueing in the open model. `Err(Some(Dropped))` when it waited past the timeout for its
/// turn; `Err(None)` when the stopped step already gave up on it (and counted that).
pub(super) fn count_sent<P>(
    ctx: &Ctx<P>,
    c: &ShardCounts,
    (scheduled, sent): (Instant, Instant),
    (body_bytes, due): (u64, Option<&Due>),
    open: bool,
) -> Result<(), Option<Cause>> {
    if due.is_some_and(|d| !d.settle(Due::SENT)) {
        return Err(None);
    }
    let queued = sent.saturating_duration_since(scheduled).as_nanos() as u64;
    if open && queued > ctx.timeout.as_nanos() as u64 {
        return Err(Some(Cause::Dropped));
    }
    c.count(|t| {
        t.sent += 1;
        t.bytes_out += body_bytes;
        t.late += u64::from(open && queued > super::conn::LATE_NS);
    });
    if open {
        c.histograms(|h| h.queue.record(queued));
    }
    Ok(())
}

/// A request's outcome: its status and body bytes, or why it failed (`None`: a failed
/// reconnect already counted itself); or the timeout.
pub(super) type Outcome = Result<Result<(u16, u64), Option<Cause>>, tokio::time::error::Elapsed>;

/// What a request's outcome (request `i`, of `out` body bytes) counts for, written to the
/// results sink when there is one; false when the connection is no longer usable.
pub(super) fn settle<P: Protocol>(
    ctx: &Ctx<P>,
    c: &ShardCounts,
    (i, out): (usize, u64),
    scheduled: Instant,
    outcome: Outcome,
    sender: &P::Sender,
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
            c.respond(took.as_nanos() as u64, status, bytes_in);
            true
        }
        Ok(Err(Some(cause))) => {
            c.fail(cause, None);
            !cause.ends_connection() && !P::is_closed(sender)
        }
        Ok(Err(None)) => false,
        Err(_) => {
            c.fail(Cause::Timeout, None);
            !P::is_closed(sender)
        }
    }
}
