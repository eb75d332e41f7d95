//! The end of an open-model step: a load thread (HTTP/1.1's, or the HTTP/2 and HTTP/3 loop)
//! that gets on only after its step was stopped (a busy machine) still sends every request
//! that fell due before the stop, or counts it as dropped; none vanishes from the counts. The
//! thread is held at a known point by holding the lock of the histograms it records into, so
//! the tests do not depend on the machine's speed.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::SockAddr;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::member::Stripe;
use wirespeed_proto::http_url::HttpUrl;

use super::conn::Mode;
use super::counts::{ShardCounts, Tally, Totals};
use super::fixture::{self, FixtureConfig};
use super::h2::H2;
use super::multiplex::{open, Ctx};
use super::requests::{Request, RequestSet};
use super::shard::{Peer, Schedule, Shard};
use crate::run::budget::Budget;

/// 1000 requests/s for 200 ms: 200 requests due, the last at 199 ms.
const RATE: f64 = 1000.0;
const DURATION: Duration = Duration::from_millis(200);

/// The fixture on loopback, a spec and a one-request set for it, and what stops the fixture.
struct Target {
    rt: tokio::runtime::Runtime,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    shutdown: CancellationToken,
    addr: std::net::SocketAddr,
    spec: HttpSpec,
    set: Arc<RequestSet>,
}

impl Target {
    fn start() -> Self {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let config = FixtureConfig::default();
        let server = rt.spawn(fixture::run(vec![listener], config, shutdown.clone()));
        let url = format!("http://{addr}/");
        let mut spec = HttpSpec::new(url.clone());
        spec.duration_ns = DURATION.as_nanos() as u64;
        let request = Request {
            method: "GET".into(),
            url: HttpUrl::parse(&url).unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let set = Arc::new(RequestSet::new(vec![request], true, "test"));
        Self { rt, server, shutdown, addr, spec, set }
    }

    fn peer(&self) -> Arc<Peer> {
        Arc::new(Peer { addr: SockAddr::from(self.addr), tls: None })
    }

    fn stop(self) {
        self.shutdown.cancel();
        self.rt.block_on(self.server).unwrap().unwrap();
    }
}

/// Holds `counts`' histograms while `run` starts (so it stops at its first latency record,
/// before anything is sent), lets the whole schedule fall due, sets `stop`, and only then
/// lets `run` get on; its counts once it has ended.
fn held_until_stopped(
    counts: &ShardCounts,
    begin: Instant,
    stop: &AtomicBool,
    run: impl FnOnce() + Send + 'static,
) -> Totals {
    let held = counts.histograms.lock().unwrap();
    let thread = std::thread::spawn(run);
    let past_the_end = begin + DURATION + Duration::from_millis(20);
    std::thread::sleep(past_the_end.saturating_duration_since(Instant::now()));
    stop.store(true, Relaxed);
    drop(held);
    thread.join().unwrap();
    counts.totals.lock().unwrap().clone()
}

/// Every request due was sent (late: after the stop) or counted as dropped, and nothing else
/// failed.
fn none_lost(totals: &Totals) {
    let dropped: u64 = totals
        .errors_by_name()
        .iter()
        .filter(|(name, _)| name.starts_with("dropped"))
        .map(|(_, n)| n)
        .sum();
    let due = (RATE * DURATION.as_secs_f64()) as u64;
    assert_eq!(totals.sent + dropped, due, "{totals:?}");
    assert!(totals.sent > 1, "only the request it held was sent: {totals:?}");
    assert_eq!(totals.late, totals.sent, "{totals:?}");
    assert_eq!(totals.error_total(), dropped, "{totals:?}");
}

#[test]
fn an_http1_thread_that_gets_on_after_the_stop_still_sends_what_fell_due() {
    let target = Target::start();
    let counts = Arc::new(ShardCounts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let begin = Instant::now();
    let shard = Shard {
        peer: target.peer(),
        set: target.set.clone(),
        mode: Mode { open: true, timeout: Duration::from_secs(10) },
        keepalive: true,
        max_redirects: 0,
        slots: 8,
        schedule: Some(Schedule::new(&target.spec, begin, RATE, 0, 1, Stripe::default())),
        counts: counts.clone(),
        stop: stop.clone(),
        budget: Budget::new(None),
        results: None,
        next: Cell::new(0),
        tally: RefCell::new(Tally::new(counts.clone())),
        epoll: Cell::new(-1),
        arrivals: Cell::new(-1),
        eager: Cell::new(false),
    };
    let totals = held_until_stopped(&counts, begin, &stop, move || {
        shard.run().unwrap();
        shard.publish();
    });
    none_lost(&totals);
    target.stop();
}

#[test]
fn the_multiplexed_loop_that_gets_on_after_the_stop_still_sends_what_fell_due() {
    let target = Target::start();
    let counts = Arc::new(ShardCounts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let begin = Instant::now();
    let ctx = Arc::new(Ctx {
        proto: H2,
        peer: target.peer(),
        set: target.set.clone(),
        origin: format!("http://{}", target.addr),
        timeout: Duration::from_secs(10),
        budget: Budget::new(None),
        keepalive: true,
        stop: stop.clone(),
        next: AtomicU64::new(0),
        results: None,
    });
    let schedule = Schedule::new(&target.spec, begin, RATE, 0, 1, Stripe::default());
    let all = vec![counts.clone()];
    // One thread, as `-t 1` runs it: the held task holds the loop that hands requests out.
    let runtime = crate::run::runtime::for_connections(1, "test").unwrap();
    let totals = held_until_stopped(&counts, begin, &stop, move || {
        runtime.block_on(open(ctx, all, 1, schedule));
    });
    none_lost(&totals);
    target.stop();
}
