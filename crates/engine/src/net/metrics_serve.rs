//! `--metrics ADDR`: the process's series at `/metrics`, in Prometheus' text format, on a
//! listener of its own (so a scraper never competes with tests for the test port, and the
//! operator can bind it where only the monitoring network reaches). Plain HTTP/1.1 and h2c,
//! read-only, with the same head timeout as the web server against idle or slow clients.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wirespeed_metrics::{Metrics, CONTENT_TYPE as TEXT_FORMAT};

use super::http_serve::{serve, ServeOptions};

/// Serves `metrics` on `listeners` until `shutdown`.
pub async fn run(listeners: Vec<TcpListener>, metrics: Arc<Metrics>, shutdown: CancellationToken) {
    let options = ServeOptions {
        label: "metrics",
        head_timeout: Some(Duration::from_secs(10)),
        shutdown_grace: Some(Duration::from_secs(1)),
        delivery: false,
        notsent_lowat: None,
        tls: None,
        plain_too: false,
    };
    serve(listeners, options, shutdown, move |_peer, req| {
        let metrics = metrics.clone();
        async move { Ok::<_, Infallible>(answer(&metrics, &req)) }
    })
    .await;
}

/// `GET /metrics` (and `HEAD`); everything else is refused.
fn answer<B>(metrics: &Metrics, req: &Request<B>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "not found: the series are at /metrics\n".into());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, "/metrics takes GET\n".into());
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let tasks = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    metrics.runtime_tasks.set(i64::try_from(tasks).unwrap_or(i64::MAX));
    let mut r = reply(StatusCode::OK, metrics.render());
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
    r
}
