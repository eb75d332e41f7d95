//! LibreSpeed's backend API, as its JS frontend and librespeed-cli use it: `garbage` (download),
//! `empty` (upload sink and ping), `getIP`, `results/telemetry`, `results/json` and the server
//! list at `/.well-known/librespeed`. Answers match LibreSpeed's byte for byte where a client
//! depends on them (an empty 200 from `empty`, `id …` from telemetry, getIP's JSON fields).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde_json::json;
use wirespeed_engine::net::delivered::DeliveryTap;
use wirespeed_model::web::{latency_grade, network_of, WebResult, WebSource};

use crate::body::{Counted, Garbage, WebBody, CHUNK};
use crate::client_ip::local_label;
use crate::geoip::Place;
use crate::meter::{Meter, Tally, Transfer};
use crate::respond::{self, Reply};
use crate::routes::query_value;
use crate::runs::{Direction, Measured};
use crate::{telemetry, State};

/// Grace periods of LibreSpeed's page: bytes before them are slow start, not the link.
pub const DOWNLOAD_GRACE: Duration = Duration::from_millis(1500);
/// Upload's grace period.
pub const UPLOAD_GRACE: Duration = Duration::from_secs(3);
/// How long a result waits for its address's transfers to close before it is measured.
const SETTLE: Duration = Duration::from_secs(1);

/// What a handler needs of its request besides the request itself.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// Shared state.
    pub state: &'a State,
    /// The client's address (after trusted proxies).
    pub client: IpAddr,
    /// The query string.
    pub query: Option<&'a str>,
    /// When the request arrived.
    pub now: Instant,
}

impl Ctx<'_> {
    /// The query value of `key`.
    pub fn param(&self, key: &str) -> Option<String> {
        query_value(self.query, key)
    }

    /// Starts counting a transfer in `direction`: into the page's token if it has a live one,
    /// else into its client address's run.
    pub fn transfer(&self, direction: Direction) -> Transfer {
        let token = self.param("t").filter(|t| !t.is_empty());
        let meters = &self.state.meters;
        Transfer::new(match token.and_then(|t| meters.get(&t, self.now)) {
            Some(m) => Tally::Token(m, direction),
            None => Tally::Run(meters.addresses.start(self.client, direction, self.now)),
        })
    }

    /// What the databases (or LibreSpeed's labels) say of the client.
    pub fn place(&self) -> (Place, Option<&'static str>) {
        match local_label(self.client) {
            Some(label) => (Place { isp: label.into(), ..Place::default() }, Some(label)),
            None => (self.state.config.geoip.lookup(self.client), None),
        }
    }
}

/// LibreSpeed's `ckSize`: digits only and above 0, else 4; capped at `max`.
pub fn chunks(ck: Option<&str>, max: u32) -> u32 {
    ck.filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .map(|s| s.parse::<u32>().unwrap_or(u32::MAX))
        .filter(|&n| n > 0)
        .unwrap_or(4)
        .min(max)
}

/// `garbage`: `ckSize` MiB of random bytes, never compressed or cached.
/// With `tap` (an HTTP/1.1 connection), the download's meter counts what the client
/// acknowledges; without, what is handed to the connection.
pub async fn garbage(ctx: &Ctx<'_>, method: &Method, tap: Option<Arc<DeliveryTap>>) -> Reply {
    if method != Method::GET && method != Method::HEAD {
        return respond::refuse(StatusCode::METHOD_NOT_ALLOWED, "garbage takes GET", false);
    }
    let n = chunks(ctx.param("ckSize").as_deref(), ctx.state.config.max_chunks);
    let bytes = u64::from(n) * CHUNK as u64;
    let (body, length) = if method == Method::HEAD {
        (WebBody::empty(), bytes)
    } else {
        let slot = match ctx.state.limits.stream(ctx.client, bytes, ctx.now) {
            Ok(s) => s,
            Err(refusal) => return respond::too_many(refusal, false),
        };
        if let Err(refusal) = ctx.state.take_shared(ctx.client, bytes, false).await {
            return respond::too_many(refusal, false);
        }
        let transfer = ctx.transfer(Direction::Download);
        let counted = match tap {
            Some(tap) => {
                let tally = transfer.tally().clone();
                tap.attach(Arc::new(move |n, at| tally.add(n, at)));
                Counted::Elsewhere(transfer)
            }
            None => Counted::AsSent(transfer),
        };
        (
            WebBody::Garbage(Box::new(Garbage::new(
                ctx.state.blocks.clone(),
                n,
                Some(counted),
                slot,
                ctx.state.sent.clone(),
            ))),
            bytes,
        )
    };
    let mut r = respond::with(StatusCode::OK, "application/octet-stream", body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=random.dat"),
    );
    h.insert("content-description", HeaderValue::from_static("File Transfer"));
    h.insert("content-transfer-encoding", HeaderValue::from_static("binary"));
    r
}

/// `empty`: the upload sink (the whole body is drained and counted, chunked or not) and the
/// ping target; 200 with no body.
pub async fn empty(ctx: &Ctx<'_>, req: Request<Incoming>) -> Reply {
    match *req.method() {
        Method::GET | Method::HEAD => {
            // A ping carries no body; anything sent anyway is read away, capped.
            return match respond::read_capped(req.into_body(), 64 * 1024).await {
                Ok(_) => keep_alive(respond::empty()),
                Err(r) => r,
            };
        }
        Method::POST => {}
        _ => {
            return respond::refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "empty takes GET or POST",
                false,
            )
        }
    }
    let cap = ctx.state.config.max_upload;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap) {
        return respond::refuse(StatusCode::PAYLOAD_TOO_LARGE, too_large(cap), true);
    }
    let slot = match ctx.state.limits.stream(ctx.client, 0, ctx.now) {
        Ok(s) => s,
        Err(refusal) => return respond::too_many(refusal, true),
    };
    // An upload's size is known only as it arrives: it may start while the shared budget is
    // not in debt, and what it brought is owed once it has.
    if let Err(refusal) = ctx.state.take_shared(ctx.client, 0, false).await {
        return respond::too_many(refusal, true);
    }
    let transfer = ctx.transfer(Direction::Upload);
    let mut body = req.into_body();
    let (mut seen, mut uncharged) = (0u64, 0u64);
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            // The client went away mid-body: what arrived is counted, there is no one to answer.
            return respond::refuse(StatusCode::BAD_REQUEST, "upload cut short", true);
        };
        let Some(data) = frame.data_ref() else { continue };
        let n = data.len() as u64;
        ctx.state.received.inc_by(n);
        seen += n;
        uncharged += n;
        if seen > cap {
            return respond::refuse(StatusCode::PAYLOAD_TOO_LARGE, too_large(cap), true);
        }
        let now = Instant::now();
        transfer.add(n, now);
        if uncharged >= CHUNK as u64 {
            if let Err(refusal) = ctx.state.limits.charge(ctx.client, uncharged, now) {
                return respond::too_many(refusal, true);
            }
            uncharged = 0;
        }
    }
    let _ = ctx.state.limits.charge(ctx.client, uncharged, Instant::now());
    drop(slot);
    drop(transfer);
    let _ = ctx.state.take_shared(ctx.client, seen, true).await;
    keep_alive(respond::empty())
}

fn too_large(cap: u64) -> String {
    format!("upload larger than {cap} bytes (the server's --max-upload)")
}

fn keep_alive(mut r: Reply) -> Reply {
    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    r
}

/// getIP's `processedString`: `IP - ISP, Country` (or `IP - label` for local addresses).
pub fn processed_string(ip: IpAddr, place: &Place) -> String {
    let isp = [place.isp.as_str(), place.country.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    if isp.is_empty() {
        ip.to_string()
    } else {
        format!("{ip} - {isp}")
    }
}

/// `getIP`: `{"processedString", "rawIspInfo"}`; with `isp` in the query, the ISP and country
/// too, in ipinfo's field names (the JS frontend and librespeed-cli both read those).
pub fn get_ip(ctx: &Ctx<'_>) -> Reply {
    let ip = ctx.client;
    if ctx.param("isp").is_none() {
        return respond::json(
            StatusCode::OK,
            &json!({"processedString": ip.to_string(), "rawIspInfo": ""}),
        );
    }
    let (place, _) = ctx.place();
    let org = match (place.asn.as_str(), place.isp.as_str()) {
        ("", isp) => isp.to_string(),
        (asn, isp) => format!("{asn} {isp}"),
    };
    let raw = json!({
        "ip": ip.to_string(), "hostname": "", "city": place.city, "region": place.region,
        "country": place.country_code, "loc": "", "org": org, "postal": "", "timezone": "",
        "as_name": place.isp, "asn": place.asn, "country_name": place.country,
    });
    respond::json(
        StatusCode::OK,
        &json!({"processedString": processed_string(ip, &place), "rawIspInfo": raw}),
    )
}

/// A new result id: 128 random bits in hex.
pub fn new_id() -> String {
    let mut b = [0u8; 16];
    // Without the OS's randomness there is no safe id to give: fail loudly rather than guessably.
    getrandom::fill(&mut b).expect("the OS random source failed");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What the server measured of a token's test, in each direction.
pub fn measured_by(meter: &Meter) -> [Measured; 2] {
    let why = "less than a second was measured after the grace period";
    [
        meter.download.rate_bps(DOWNLOAD_GRACE).ok_or(why),
        meter.upload.rate_bps(UPLOAD_GRACE).ok_or(why),
    ]
}

/// Builds the result to save from what the client claims and what the server `measured`; a
/// direction the server has no figure for keeps the client's, and the log says why.
pub fn build_result(
    ctx: &Ctx<'_>,
    headers: &HeaderMap,
    claims: &telemetry::Claims,
    measured: [Measured; 2],
    source: WebSource,
) -> WebResult {
    let (place, _) = ctx.place();
    let claimed_dl = claims.dl_mbps.map(|m| m * 1e6);
    let claimed_ul = claims.ul_mbps.map(|m| m * 1e6);
    for (direction, m, claim) in
        [("download", &measured[0], claimed_dl), ("upload", &measured[1], claimed_ul)]
    {
        if let (Err(why), Some(_)) = (m, claim) {
            tracing::info!(
                "result from {}: the {direction} figure is the client's own: {why}",
                ctx.client
            );
        }
    }
    let [measured_dl, measured_ul] = measured.map(Result::ok);
    let header_text = |name: header::HeaderName, cap: usize| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(cap).collect::<String>())
            .unwrap_or_default()
    };
    let region = match (place.region.as_str(), place.city.as_str()) {
        ("", city) => city.to_string(),
        (region, "") => region.to_string(),
        (region, city) => format!("{city}, {region}"),
    };
    WebResult {
        id: new_id(),
        created_ms: now_ms(),
        network: network_of(ctx.client),
        isp: place.isp,
        country: place.country,
        region,
        download_bps: measured_dl.or(claimed_dl),
        upload_bps: measured_ul.or(claimed_ul),
        ping_ms: claims.ping_ms,
        jitter_ms: claims.jitter_ms,
        latency_down_ms: claims.latency_down_ms,
        latency_up_ms: claims.latency_up_ms,
        latency_grade: latency_grade(claims.ping_ms, claims.latency_down_ms, claims.latency_up_ms)
            .map(str::to_string),
        download_by_server: measured_dl.is_some(),
        upload_by_server: measured_ul.is_some(),
        claimed_download_bps: claimed_dl,
        claimed_upload_bps: claimed_ul,
        user_agent: header_text(header::USER_AGENT, 512),
        lang: header_text(header::ACCEPT_LANGUAGE, 128),
        source,
    }
}

/// Saves `result`; the reply when that failed.
pub async fn save(ctx: &Ctx<'_>, result: &WebResult) -> Result<(), Reply> {
    let policy = ctx.state.config.policy;
    let r = result.clone();
    let metrics = &ctx.state.config.metrics.web;
    match ctx.state.with_store(move |s| s.save_web(&r, policy)).await {
        None => Ok(()),
        Some(Ok(())) => {
            metrics.saved();
            Ok(())
        }
        Some(Err(e)) => {
            metrics.unsaved("store_error");
            tracing::warn!("cannot save a web result: {e}");
            Err(respond::refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the result could not be saved",
                false,
            ))
        }
    }
}

/// `results/telemetry`: a LibreSpeed client's result, answered `id <id>`.
pub async fn telemetry(ctx: &Ctx<'_>, req: Request<Incoming>) -> Reply {
    if req.method() != Method::POST {
        return respond::refuse(StatusCode::METHOD_NOT_ALLOWED, "telemetry takes POST", false);
    }
    let headers = req.headers().clone();
    let body = match respond::read_capped(req.into_body(), telemetry::MAX_BODY).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let claims = match telemetry::parse(content_type, body).await {
        Ok(c) => c,
        Err(why) => return respond::refuse(StatusCode::BAD_REQUEST, why, false),
    };
    if let Err(why) = claims.has_a_speed() {
        return respond::refuse(StatusCode::BAD_REQUEST, why, false);
    }
    // A client that posts as it cuts its last transfers (librespeed-cli, a script) can be a
    // moment ahead of the server seeing them close: its own end within a second; another
    // visitor's still running then is not this test's, and counts against it below.
    let posted = Instant::now();
    let settle_by = posted + SETTLE;
    while ctx.state.meters.addresses.in_flight(ctx.client, posted) && Instant::now() < settle_by {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let measured = ctx.state.meters.addresses.finish(
        ctx.client,
        [claims.dl_mbps.is_some(), claims.ul_mbps.is_some()],
        [DOWNLOAD_GRACE, UPLOAD_GRACE],
        Instant::now(),
    );
    let result = build_result(ctx, &headers, &claims, measured, WebSource::Telemetry);
    if let Err(r) = save(ctx, &result).await {
        return r;
    }
    respond::text(StatusCode::OK, format!("id {}", result.id))
}

/// `results/json.php?id=`: one result as LibreSpeed's backend gives it, or `{}`.
pub async fn result_json(ctx: &Ctx<'_>) -> Reply {
    let Some(id) = ctx.param("id").filter(|id| !id.is_empty() && id.len() <= 64) else {
        return respond::json(StatusCode::OK, &json!({}));
    };
    let found = ctx.state.with_store(move |s| s.get_web(&id)).await;
    match found {
        Some(Ok(Some(r))) => {
            let mbps = |b: Option<f64>| b.map_or(String::new(), |b| format!("{:.2}", b / 1e6));
            let ms = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
            respond::json(
                StatusCode::OK,
                &json!({
                    "timestamp": wirespeed_report::history::utc(r.created_ms),
                    "download": mbps(r.download_bps), "upload": mbps(r.upload_bps),
                    "ping": ms(r.ping_ms), "jitter": ms(r.jitter_ms),
                    "ispinfo": json!({"processedString": format!("{} - {}, {}", r.network, r.isp, r.country)}).to_string(),
                }),
            )
        }
        _ => respond::json(StatusCode::OK, &json!({})),
    }
}

/// The server list naming this server, for LibreSpeed's multi-server frontend and for
/// librespeed-cli's discovery (`/.well-known/librespeed`).
pub fn server_list(ctx: &Ctx<'_>, headers: &HeaderMap) -> Reply {
    // Only a plain host[:port] goes back out; anything else is someone else's Host header.
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    respond::json(
        StatusCode::OK,
        &json!([{
            "id": 1, "name": ctx.state.config.name, "server": format!("//{host}/"),
            "dlURL": "backend/garbage.php", "ulURL": "backend/empty.php",
            "pingURL": "backend/empty.php", "getIpURL": "backend/getIP.php",
            "sponsorName": "", "sponsorURL": "",
        }]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cksize_follows_librespeed() {
        assert_eq!(chunks(None, 1024), 4);
        assert_eq!(chunks(Some("100"), 1024), 100);
        assert_eq!(chunks(Some("2"), 1024), 2);
        assert_eq!(chunks(Some("5000"), 1024), 1024);
        assert_eq!(chunks(Some("99999999999999999999"), 1024), 1024);
        assert_eq!(chunks(Some("100"), 50), 50, "speedtest-x's cap");
        for bad in ["0", "-5", "1e3", "abc", "", " 5"] {
            assert_eq!(chunks(Some(bad), 1024), 4, "{bad}");
        }
    }

    #[test]
    fn processed_strings_read_like_librespeeds() {
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(processed_string(ip, &Place::default()), "192.0.2.7");
        let p =
            Place { isp: "Example Net".into(), country: "Netherlands".into(), ..Place::default() };
        assert_eq!(processed_string(ip, &p), "192.0.2.7 - Example Net, Netherlands");
        let local = Place { isp: "localhost IPv4 access".into(), ..Place::default() };
        assert_eq!(processed_string(ip, &local), "192.0.2.7 - localhost IPv4 access");
    }

    #[test]
    fn ids_are_random_and_hex() {
        let (a, b) = (new_id(), new_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
