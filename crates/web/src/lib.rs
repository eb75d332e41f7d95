//! The browser speed test (`wirespeed web`, `wirespeed server --web PORT`): a backend that
//! LibreSpeed's clients use unchanged ([`librespeed`]: download, upload sink, getIP, telemetry,
//! a server list), wirespeed's own page and results page ([`api`], [`assets`]), and what makes
//! it safe to leave on the Internet: per-client budgets ([`limits`]), forwarded addresses
//! believed only from trusted proxies ([`client_ip`]), capped bodies, results keyed by random
//! ids and recorded from what the server measured ([`meter`], [`runs`]).
//!
//! HTTP/1.1 and HTTP/2 (prior knowledge) on one port, served by hyper. The server takes bound
//! listeners and a shutdown token; results go to the store through blocking tasks.

pub mod api;
pub mod assets;
pub mod body;
pub mod client_ip;
pub mod geoip;
pub mod librespeed;
pub mod limits;
pub mod meter;
pub mod respond;
pub mod responsiveness;
pub mod routes;
pub mod runs;
pub mod telemetry;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use ipnet::IpNet;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wirespeed_engine::net::delivered::DeliveryTap;
use wirespeed_engine::net::http_serve::{serve, ServeOptions};
use wirespeed_metrics::{IntCounter, Metrics, WebMetrics};
use wirespeed_store::{Budget, Store, Taken, WebPolicy};

use crate::geoip::GeoIp;
use crate::limits::{LimitConfig, Limits, Refusal};
use crate::meter::Meters;
use crate::respond::{RefusedBy, Reply};
use crate::routes::Route;

/// How long a client has to send a request head, on a new or a kept-alive connection.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Unsent bytes a connection keeps in its socket at most (TCP_NOTSENT_LOWAT).
pub const NOTSENT_LOWAT: u32 = 16 * 1024;

/// Largest `ckSize` LibreSpeed allows (MiB per download request).
pub const MAX_CHUNKS: u32 = 1024;

/// How the web server behaves.
#[derive(Debug)]
pub struct WebConfig {
    /// Largest `ckSize` honoured (MiB per download request; speedtest-x uses 50).
    pub max_chunks: u32,
    /// Largest upload body, bytes.
    pub max_upload: u64,
    /// Per-client budgets.
    pub limits: LimitConfig,
    /// Peers whose `X-Forwarded-For` / `X-Real-IP` are believed.
    pub trusted_proxies: Vec<IpNet>,
    /// ISP and place of clients.
    pub geoip: GeoIp,
    /// How many results are kept, and per network.
    pub policy: WebPolicy,
    /// Argon2 hash (PHC string) of the admin password; deleting results needs it.
    pub admin_hash: Option<String>,
    /// Where results are saved (none: not saved).
    pub store: Option<Arc<Mutex<Store>>>,
    /// This server's name in server lists.
    pub name: String,
    /// Serve TLS (HTTP/2 and HTTP/1.1 by ALPN) with these settings; `None`: plain TCP, where
    /// HTTP/2 is spoken with prior knowledge.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Where the server counts what it does (served at `/metrics` when `--metrics` asks).
    pub metrics: Arc<Metrics>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            max_chunks: MAX_CHUNKS,
            max_upload: 64 << 20,
            limits: LimitConfig::default(),
            trusted_proxies: Vec::new(),
            geoip: GeoIp::default(),
            policy: WebPolicy { max_results: 0, same_ip_multi: true },
            admin_hash: None,
            store: None,
            name: "wirespeed".into(),
            tls: None,
            metrics: Metrics::new(env!("CARGO_PKG_VERSION")),
        }
    }
}

/// What every request handler shares.
#[derive(Debug)]
pub struct State {
    /// The configuration.
    pub config: WebConfig,
    /// Per-client budgets.
    pub limits: Arc<Limits>,
    /// The responsiveness endpoints' probes and transfers at once.
    pub rpm_limits: Arc<Limits>,
    /// Admin password attempts: 10 a minute per client.
    pub admin_attempts: Arc<Limits>,
    /// Tests being measured.
    pub meters: Meters,
    /// The download source's random chunks.
    pub blocks: Arc<[Bytes]>,
    /// Whether the store is shared (PostgreSQL), and so holds the visitors' transfer budgets:
    /// read once here, not under the store's lock on every transfer.
    shared_store: bool,
    /// Upload bytes received, for `wirespeed_web_bytes_total`.
    pub received: IntCounter,
    /// Download bytes sent, for `wirespeed_web_bytes_total`.
    pub sent: IntCounter,
}

impl State {
    /// Shared state for `config`.
    pub fn new(config: WebConfig) -> Arc<Self> {
        let (received, sent) = config.metrics.web.transfer();
        Arc::new(Self {
            received,
            sent,
            limits: Limits::new(config.limits),
            rpm_limits: responsiveness::limits(config.limits),
            admin_attempts: Limits::new(LimitConfig {
                requests_per_minute: 10,
                bytes_per_hour: 0,
                streams: 0,
            }),
            meters: Meters::default(),
            blocks: body::random_blocks(),
            shared_store: config
                .store
                .as_ref()
                .is_some_and(|s| s.lock().unwrap_or_else(|e| e.into_inner()).is_shared()),
            config,
        })
    }

    /// Runs `f` on the store in a blocking task; `None` when results are not saved.
    pub async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, wirespeed_store::StoreError> + Send + 'static,
    ) -> Option<Result<T, String>> {
        let store = self.config.store.clone()?;
        let joined = tokio::task::spawn_blocking(move || {
            let store = store.lock().unwrap_or_else(|e| e.into_inner());
            f(&store).map_err(|e| e.to_string())
        })
        .await;
        Some(joined.unwrap_or_else(|e| Err(format!("store task failed: {e}"))))
    }
}

impl State {
    /// Takes `bytes` from `client`'s transfer budget kept in a shared (PostgreSQL) database, so
    /// a visitor cannot multiply the budget by the number of servers behind one name (the
    /// per-server budget in [`Limits`] still applies first). Only the byte budget is shared: it
    /// spends the one thing the servers have in common, their operator's traffic; requests a
    /// minute and transfers at once guard each server's own sockets and CPU, and checking them
    /// in the database would put its round trip in front of every ping the browser times.
    /// With `owed`, bytes already received are charged even past empty. A database that fails
    /// is logged and the transfer allowed: the per-server budget still holds.
    pub async fn take_shared(
        &self,
        client: std::net::IpAddr,
        bytes: u64,
        owed: bool,
    ) -> Result<(), Refusal> {
        let per_hour = self.limits.config().bytes_per_hour;
        if per_hour == 0 || !self.shared_store {
            return Ok(());
        }
        let budget = Budget { capacity: per_hour as f64, per_sec: per_hour as f64 / 3600.0 };
        let key = limits::key_of(client).to_string();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let taken =
            self.with_store(move |s| s.take_budget(&key, bytes as f64, budget, now_ms, owed)).await;
        match taken {
            Some(Ok(Taken::Wait(wait_s))) => Err(self.limits.shared_refusal(client, wait_s)),
            Some(Err(e)) => {
                tracing::warn!("shared transfer budget not checked: {e}");
                Ok(())
            }
            Some(Ok(Taken::Yes)) | None => Ok(()),
        }
    }
}

/// Serves every listener until `shutdown`, then lets requests in flight finish (downloads are
/// cut off after a second: a 1 GiB one would otherwise hold shutdown up for its whole length).
/// A client must send each request head within 10 s (slowloris, idle keep-alive).
pub async fn run(listeners: Vec<TcpListener>, state: Arc<State>, shutdown: CancellationToken) {
    let options = ServeOptions {
        label: "web",
        head_timeout: Some(HEADER_TIMEOUT),
        shutdown_grace: Some(Duration::from_secs(1)),
        delivery: true,
        // A responsiveness probe's answer (and a page's) queues behind at most this much of a
        // download on its connection, as the draft asks of servers.
        notsent_lowat: Some(NOTSENT_LOWAT),
        tls: state.config.tls.clone(),
        plain_too: false,
    };
    serve(listeners, options, shutdown, move |peer, req| handle(state.clone(), peer, req)).await;
}

/// Answers one request.
async fn handle(
    state: Arc<State>,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Result<Reply, Infallible> {
    let route = routes::route(req.uri().path());
    let reply = answer(&state, peer, route, req).await;
    count(&state.config.metrics.web, route, &reply);
    Ok(reply)
}

/// Counts an answer: its route and status, the budget that refused it, a result not saved.
fn count(metrics: &WebMetrics, route: Option<Route>, reply: &Reply) {
    let code = reply.status();
    metrics.request(route.map_or("none", Route::label), code.as_u16());
    if let Some(RefusedBy(budget)) = reply.extensions().get::<RefusedBy>() {
        metrics.refused(budget);
    }
    // A result that could not be read or checked; a refusal by budget is counted as that.
    let posts_result = matches!(route, Some(Route::Telemetry | Route::ApiResult));
    if posts_result && code.is_client_error() && code != StatusCode::TOO_MANY_REQUESTS {
        metrics.unsaved("invalid");
    }
}

/// Answers one request routed to `route` (`None`: a path we do not serve).
async fn answer(
    state: &Arc<State>,
    peer: SocketAddr,
    route: Option<Route>,
    req: Request<Incoming>,
) -> Reply {
    let client = client_ip::client_ip(peer.ip(), req.headers(), &state.config.trusted_proxies);
    let now = Instant::now();
    let query = req.uri().query().map(str::to_string);
    let cors =
        req.method() == Method::OPTIONS || routes::query_value(query.as_deref(), "cors").is_some();
    let Some(route) = route else {
        return respond::finish(respond::refuse(StatusCode::NOT_FOUND, "not found", false), cors);
    };
    // Downloads and uploads are budgeted by bytes and by transfers at once; everything else
    // by requests.
    // The responsiveness endpoints have budgets of their own (probes come 100 a second).
    let streaming =
        matches!(route, Route::Garbage | Route::NqSmall | Route::NqLarge | Route::NqUpload)
            || (route == Route::Empty && req.method() == Method::POST);
    if !streaming {
        if let Err(refusal) = state.limits.request(client, now) {
            return respond::finish(respond::too_many(refusal, false), cors);
        }
    }
    // A CORS preflight (LibreSpeed's multi-server page on another origin) gets the CORS
    // headers and nothing else, whatever it asks about.
    if req.method() == Method::OPTIONS {
        return respond::finish(respond::empty(), true);
    }
    let ctx = librespeed::Ctx { state, client, query: query.as_deref(), now };
    // What this connection's client acknowledges counts toward a download only while one is
    // being served on it (HTTP/1.1 carries one response at a time; h2 streams share the
    // connection, so their downloads are counted as sent).
    let tap = req.extensions().get::<Arc<DeliveryTap>>().cloned();
    let tap = match tap {
        Some(tap) if req.version() < hyper::Version::HTTP_2 => {
            tap.detach();
            Some(tap)
        }
        _ => None,
    };
    let reply = match route {
        Route::Garbage => librespeed::garbage(&ctx, req.method(), tap).await,
        Route::Empty => librespeed::empty(&ctx, req).await,
        Route::GetIp => librespeed::get_ip(&ctx),
        Route::Telemetry => librespeed::telemetry(&ctx, req).await,
        Route::ResultJson => librespeed::result_json(&ctx).await,
        Route::ServerList => librespeed::server_list(&ctx, req.headers()),
        Route::ApiStart => api::start(&ctx),
        Route::ApiProgress => api::progress(&ctx),
        Route::ApiResult => api::result(&ctx, req).await,
        Route::ApiResults => api::results(&ctx, false).await,
        Route::ApiResultsCsv => api::results(&ctx, true).await,
        Route::ApiResultById => api::result_by_id(&ctx, req).await,
        Route::NqConfig => responsiveness::config(&ctx, &req),
        Route::NqSmall => responsiveness::small(&ctx, req.method()),
        Route::NqLarge => responsiveness::large(&ctx, req.method()),
        Route::NqUpload => responsiveness::upload(&ctx, req).await,
        Route::ResultsPage => assets::results_page(req.uri().path()),
        Route::SpeedtestX => respond::refuse(
            StatusCode::NOT_IMPLEMENTED,
            "this is wirespeed web, not speedtest-x: it does not take speedtest-x's reports, which \
             carry figures the browser typed in. It measures and saves LibreSpeed results itself \
             (results/telemetry.php, which speedtest-x's page can be pointed at), serves its own \
             page at /, and lists results at /results and /api/results",
            false,
        ),
        Route::Asset(a) => assets::serve(a),
    };
    respond::finish(reply, cors)
}

/// Feeds `data` to everything the web server decodes from a client: telemetry bodies
/// (multipart with a boundary taken from the input, and urlencoded), paths, query strings,
/// `ckSize`, and forwarding headers from a trusted proxy. For the `web` fuzz target and the
/// seeded test that runs in CI; none of it may panic.
#[doc(hidden)]
pub fn exercise_decoders(data: &[u8]) {
    use futures_util::FutureExt;
    let text = String::from_utf8_lossy(data);
    let boundary: String = text.chars().take(8).filter(|c| c.is_ascii_alphanumeric()).collect();
    let body = Bytes::copy_from_slice(data);
    for content_type in [
        format!("multipart/form-data; boundary={boundary}"),
        "multipart/form-data; boundary=B".to_string(),
        "application/x-www-form-urlencoded".to_string(),
        text.chars().take(40).collect(),
    ] {
        // The body is all there: the parse never waits, so no runtime is needed.
        let _ = telemetry::parse(Some(&content_type), body.clone()).now_or_never();
    }
    let _ = routes::route(&text);
    for key in ["ckSize", "t", "isp", "cors", "since", "limit"] {
        let v = routes::query_value(Some(&text), key);
        let _ = librespeed::chunks(v.as_deref(), MAX_CHUNKS);
    }
    if let Ok(value) = hyper::header::HeaderValue::from_bytes(data) {
        let mut headers = hyper::HeaderMap::new();
        headers.insert("x-forwarded-for", value.clone());
        headers.insert("x-real-ip", value);
        let trusted: Vec<IpNet> = vec!["127.0.0.0/8".parse().expect("a valid network")];
        let _ = client_ip::client_ip("127.0.0.1".parse().expect("an address"), &headers, &trusted);
    }
}
