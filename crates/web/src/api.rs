//! The API behind wirespeed's own pages: a test starts with a token so the server can meter it
//! (`/api/start`, `/api/progress`), ends by recording what the server measured
//! (`/api/result`); saved results are listed with their aggregates by ISP and by region
//! (`/api/results`, `.csv`), and deleted one at a time with the admin password.

use std::collections::BTreeMap;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;
use wirespeed_model::units::parse_duration;
use wirespeed_model::web::{latency_grade, network_of, WebResult, WebSource};
use wirespeed_store::WebFilter;

use crate::librespeed::{self, build_result, new_id, now_ms, Ctx};
use crate::respond::{self, Reply};
use crate::telemetry::Claims;

/// Most results one listing returns.
const MAX_LIST: usize = 10_000;

/// `/api/start`: a token for a new test, and what the server knows of the client.
pub fn start(ctx: &Ctx<'_>) -> Reply {
    let token = new_id();
    ctx.state.meters.issue(token.clone(), ctx.now);
    let (place, _) = ctx.place();
    let c = &ctx.state.config;
    respond::json(
        StatusCode::OK,
        &json!({
            "token": token,
            "ip": ctx.client.to_string(),
            "network": network_of(ctx.client),
            "processedString": librespeed::processed_string(ctx.client, &place),
            "isp": place.isp, "country": place.country, "region": place.region,
            "max_chunks": c.max_chunks, "max_upload": c.max_upload,
            "server": c.name,
        }),
    )
}

fn token(ctx: &Ctx<'_>) -> Option<String> {
    ctx.param("t").filter(|t| !t.is_empty() && t.len() <= 64)
}

/// `/api/progress?t=`: bytes the server has sent and received for a test, and its rates so far.
pub fn progress(ctx: &Ctx<'_>) -> Reply {
    let Some(meter) = token(ctx).and_then(|t| ctx.state.meters.peek(&t)) else {
        return respond::refuse(StatusCode::NOT_FOUND, "unknown or expired test token", false);
    };
    respond::json(
        StatusCode::OK,
        &json!({
            "download_bytes": meter.download.total(),
            "upload_bytes": meter.upload.total(),
            "download_bps": meter.download.rate_bps(librespeed::DOWNLOAD_GRACE),
            "upload_bps": meter.upload.rate_bps(librespeed::UPLOAD_GRACE),
        }),
    )
}

/// What the page reports at the end of a test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageClaims {
    t: String,
    #[serde(default)]
    download_bps: Option<f64>,
    #[serde(default)]
    upload_bps: Option<f64>,
    #[serde(default)]
    ping_ms: Option<f64>,
    #[serde(default)]
    jitter_ms: Option<f64>,
    #[serde(default)]
    latency_down_ms: Option<f64>,
    #[serde(default)]
    latency_up_ms: Option<f64>,
}

/// A figure from the page: finite and within `0..=max`.
fn checked(name: &str, v: Option<f64>, max: f64) -> Result<Option<f64>, String> {
    match v {
        Some(x) if !(x.is_finite() && (0.0..=max).contains(&x)) => {
            Err(format!("{name}: expected a number from 0 to {max}"))
        }
        v => Ok(v),
    }
}

/// `POST /api/result`: records a test the page ran, from the server's own measurement where
/// it has one.
pub async fn result(ctx: &Ctx<'_>, req: Request<Incoming>) -> Reply {
    if req.method() != Method::POST {
        return respond::refuse(StatusCode::METHOD_NOT_ALLOWED, "result takes POST", false);
    }
    let headers = req.headers().clone();
    let body = match respond::read_capped(req.into_body(), 16 * 1024).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let page: PageClaims = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return respond::refuse(StatusCode::BAD_REQUEST, format!("result: {e}"), false),
    };
    let claims = (|| {
        Ok::<_, String>(Claims {
            dl_mbps: checked("download_bps", page.download_bps, 1e13)?.map(|b| b / 1e6),
            ul_mbps: checked("upload_bps", page.upload_bps, 1e13)?.map(|b| b / 1e6),
            ping_ms: checked("ping_ms", page.ping_ms, 1e7)?,
            jitter_ms: checked("jitter_ms", page.jitter_ms, 1e7)?,
            latency_down_ms: checked("latency_down_ms", page.latency_down_ms, 1e7)?,
            latency_up_ms: checked("latency_up_ms", page.latency_up_ms, 1e7)?,
        })
    })();
    let claims = match claims {
        Ok(c) => c,
        Err(why) => return respond::refuse(StatusCode::BAD_REQUEST, why, false),
    };
    let Some(meter) = ctx.state.meters.peek(&page.t) else {
        return respond::refuse(StatusCode::BAD_REQUEST, "unknown or expired test token", false);
    };
    let measured = librespeed::measured_by(&meter);
    // A speed the server measured counts as well as one the page claims.
    let speeds = Claims {
        dl_mbps: claims.dl_mbps.or(measured[0].ok()),
        ul_mbps: claims.ul_mbps.or(measured[1].ok()),
        ..Claims::default()
    };
    if let Err(why) = speeds.has_a_speed() {
        return respond::refuse(StatusCode::BAD_REQUEST, why, false);
    }
    // Recorded once: a second result for the token finds it gone.
    if ctx.state.meters.finish(&page.t).is_none() {
        return respond::refuse(StatusCode::BAD_REQUEST, "unknown or expired test token", false);
    }
    let result = build_result(ctx, &headers, &claims, measured, WebSource::Page);
    if let Err(r) = librespeed::save(ctx, &result).await {
        return r;
    }
    respond::json(StatusCode::OK, &result)
}

/// One group of results: how many, and the medians of their figures.
#[derive(Debug, Serialize, PartialEq)]
pub struct Group {
    /// ISP, or region.
    pub name: String,
    /// Results in it.
    pub count: usize,
    /// Median download, bit/s.
    pub download_bps: Option<f64>,
    /// Median upload, bit/s.
    pub upload_bps: Option<f64>,
    /// Median ping, ms.
    pub ping_ms: Option<f64>,
    /// Median round trip while downloading, ms.
    pub latency_down_ms: Option<f64>,
    /// Median round trip while uploading, ms.
    pub latency_up_ms: Option<f64>,
    /// The grade of the medians' added latency (as one result's is graded).
    pub latency_grade: Option<&'static str>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

/// Results grouped by `key`, largest groups first.
pub fn groups(results: &[WebResult], key: impl Fn(&WebResult) -> String) -> Vec<Group> {
    let mut by: BTreeMap<String, Vec<&WebResult>> = BTreeMap::new();
    for r in results {
        by.entry(key(r)).or_default().push(r);
    }
    let mut out: Vec<Group> = by
        .into_iter()
        .map(|(name, rs)| {
            let figures =
                |f: fn(&WebResult) -> Option<f64>| median(rs.iter().filter_map(|r| f(r)).collect());
            let (ping_ms, latency_down_ms, latency_up_ms) = (
                figures(|r| r.ping_ms),
                figures(|r| r.latency_down_ms),
                figures(|r| r.latency_up_ms),
            );
            Group {
                name,
                count: rs.len(),
                download_bps: figures(|r| r.download_bps),
                upload_bps: figures(|r| r.upload_bps),
                ping_ms,
                latency_down_ms,
                latency_up_ms,
                latency_grade: latency_grade(ping_ms, latency_down_ms, latency_up_ms),
            }
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The region a result is grouped under.
pub fn region_of(r: &WebResult) -> String {
    match (r.region.as_str(), r.country.as_str()) {
        ("", "") => "unknown".into(),
        ("", country) => country.into(),
        (region, "") => region.into(),
        (region, country) => format!("{region}, {country}"),
    }
}

fn filter_of(ctx: &Ctx<'_>) -> Result<WebFilter, String> {
    let text =
        |k: &str| ctx.param(k).filter(|v| !v.is_empty()).map(|v| v.chars().take(200).collect());
    let since_ms = match ctx.param("since").filter(|v| !v.is_empty()) {
        None => None,
        Some(age) => {
            let d = parse_duration(&age)
                .map_err(|_| format!("since={age}: an age such as 24h or 7d"))?;
            Some(now_ms() - d.as_millis().min(i64::MAX as u128) as i64)
        }
    };
    let limit = match ctx.param("limit").filter(|v| !v.is_empty()) {
        None => 1000,
        Some(n) => n.parse::<usize>().map_err(|_| format!("limit={n}: a whole number"))?,
    };
    Ok(WebFilter {
        isp: text("isp"),
        country: text("country"),
        region: text("region"),
        since_ms,
        limit: Some(limit.clamp(1, MAX_LIST)),
    })
}

/// Text a spreadsheet will not run as a formula (a User-Agent of `=HYPERLINK(…)`); the CSV
/// writer quotes it.
fn csv_text(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

/// Results as CSV, one row each, with LibreSpeed's units (Mbit/s, ms).
pub fn csv(results: &[WebResult]) -> String {
    let mut out = String::from(
        "id,time_utc,network,isp,country,region,download_mbps,upload_mbps,ping_ms,jitter_ms,\
         download_by_server,upload_by_server,claimed_download_mbps,claimed_upload_mbps,user_agent,lang,source,\
         latency_down_ms,latency_up_ms,latency_grade\n",
    );
    let num = |v: Option<f64>, div: f64| v.map_or(String::new(), |v| format!("{:.3}", v / div));
    for r in results {
        let cells = [
            csv_text(&r.id),
            wirespeed_report::history::utc(r.created_ms),
            csv_text(&r.network),
            csv_text(&r.isp),
            csv_text(&r.country),
            csv_text(&r.region),
            num(r.download_bps, 1e6),
            num(r.upload_bps, 1e6),
            num(r.ping_ms, 1.0),
            num(r.jitter_ms, 1.0),
            r.download_by_server.to_string(),
            r.upload_by_server.to_string(),
            num(r.claimed_download_bps, 1e6),
            num(r.claimed_upload_bps, 1e6),
            csv_text(&r.user_agent),
            csv_text(&r.lang),
            r.source.code().to_string(),
            num(r.latency_down_ms, 1.0),
            num(r.latency_up_ms, 1.0),
            r.latency_grade.clone().unwrap_or_default(),
        ];
        out.push_str(&wirespeed_report::csv::record(cells));
        out.push('\n');
    }
    out
}

/// `/api/results` (JSON with aggregates) and `/api/results.csv`.
pub async fn results(ctx: &Ctx<'_>, as_csv: bool) -> Reply {
    let filter = match filter_of(ctx) {
        Ok(f) => f,
        Err(why) => return respond::refuse(StatusCode::BAD_REQUEST, why, false),
    };
    let listed = ctx.state.with_store(move |s| s.list_web(&filter)).await;
    let results = match listed {
        None => Vec::new(),
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            tracing::warn!("cannot list web results: {e}");
            return respond::refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "results cannot be read",
                false,
            );
        }
    };
    if as_csv {
        let mut r = respond::with(StatusCode::OK, "text/csv; charset=utf-8", csv(&results));
        r.headers_mut().insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment; filename=wirespeed-results.csv"),
        );
        return r;
    }
    let by_isp =
        groups(&results, |r| if r.isp.is_empty() { "unknown".into() } else { r.isp.clone() });
    let by_region = groups(&results, region_of);
    respond::json(
        StatusCode::OK,
        &json!({
            "saving": ctx.state.config.store.is_some(),
            "admin": ctx.state.config.admin_hash.is_some(),
            "results": results, "by_isp": by_isp, "by_region": by_region,
        }),
    )
}

/// An Argon2id hash of `password` in PHC form, with a random salt (for `--admin-password-hash`).
pub fn hash_password(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("no random salt: {e}"))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Checks that `hash` is a PHC string this server can verify against.
pub fn check_hash(hash: &str) -> Result<(), String> {
    PasswordHash::new(hash).map(|_| ()).map_err(|e| {
        format!("not an Argon2 PHC hash ({e}); make one with `wirespeed web --hash-password`")
    })
}

/// `/api/results/ID`: `GET` one result; `DELETE` it with `Authorization: Bearer PASSWORD`.
pub async fn result_by_id(ctx: &Ctx<'_>, req: Request<Incoming>) -> Reply {
    let id = req.uri().path().trim_end_matches('/').rsplit('/').next().unwrap_or("").to_string();
    if id.len() > 64 {
        return respond::refuse(StatusCode::NOT_FOUND, "no such result", false);
    }
    match *req.method() {
        Method::GET => {
            let found = ctx.state.with_store(move |s| s.get_web(&id)).await;
            match found {
                Some(Ok(Some(r))) => respond::json(StatusCode::OK, &r),
                _ => respond::refuse(StatusCode::NOT_FOUND, "no such result", false),
            }
        }
        Method::DELETE => delete(ctx, &req, id).await,
        _ => respond::refuse(StatusCode::METHOD_NOT_ALLOWED, "results take GET or DELETE", false),
    }
}

async fn delete(ctx: &Ctx<'_>, req: &Request<Incoming>, id: String) -> Reply {
    let Some(hash) = ctx.state.config.admin_hash.clone() else {
        return respond::refuse(
            StatusCode::FORBIDDEN,
            "deleting results is off: start the server with --admin-password-hash",
            false,
        );
    };
    if let Err(refusal) = ctx.state.admin_attempts.request(ctx.client, ctx.now) {
        return respond::too_many(refusal, false);
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string)
        .unwrap_or_default();
    // Argon2 is slow on purpose: keep it off the async threads.
    let ok = tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash)
            .is_ok_and(|h| Argon2::default().verify_password(given.as_bytes(), &h).is_ok())
    })
    .await
    .unwrap_or(false);
    if !ok {
        let mut r =
            respond::refuse(StatusCode::UNAUTHORIZED, "wrong or missing admin password", false);
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    match ctx.state.with_store(move |s| s.remove_web(&id)).await {
        Some(Ok(true)) => {
            let mut r = respond::empty();
            *r.status_mut() = StatusCode::NO_CONTENT;
            r.headers_mut().remove(header::CONTENT_LENGTH);
            r
        }
        Some(Err(e)) => {
            tracing::warn!("cannot delete a web result: {e}");
            respond::refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the result could not be deleted",
                false,
            )
        }
        _ => respond::refuse(StatusCode::NOT_FOUND, "no such result", false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(isp: &str, dl: f64) -> WebResult {
        WebResult {
            id: new_id(),
            created_ms: 0,
            network: "192.0.2.0/24".into(),
            isp: isp.into(),
            country: "Netherlands".into(),
            region: String::new(),
            download_bps: Some(dl),
            upload_bps: None,
            ping_ms: Some(2.0),
            jitter_ms: None,
            latency_down_ms: None,
            latency_up_ms: None,
            latency_grade: None,
            download_by_server: true,
            upload_by_server: false,
            claimed_download_bps: None,
            claimed_upload_bps: None,
            user_agent: "=HYPERLINK(\"http://x\")".into(),
            lang: "en".into(),
            source: WebSource::Page,
        }
    }

    #[test]
    fn groups_hold_medians_and_the_largest_come_first() {
        let mut rs = [r("A", 1.0), r("B", 10.0), r("B", 30.0), r("B", 20.0)];
        // B's download latencies: 40, 52 and 80 ms over a 2 ms ping: 50 ms added, grade B.
        for (r, ms) in rs[1..].iter_mut().zip([40.0, 80.0, 52.0]) {
            r.latency_down_ms = Some(ms);
        }
        let g = groups(&rs, |r| r.isp.clone());
        assert_eq!(g[0].name, "B");
        assert_eq!((g[0].count, g[0].download_bps, g[0].upload_bps), (3, Some(20.0), None));
        assert_eq!(g[1].download_bps, Some(1.0));
        assert_eq!((g[0].latency_down_ms, g[0].latency_grade), (Some(52.0), Some("B")));
        assert_eq!((g[1].latency_up_ms, g[1].latency_grade), (None, None), "A measured none");
        assert_eq!(region_of(&rs[0]), "Netherlands");
    }

    #[test]
    fn csv_rows_are_even_and_formulas_defused() {
        let mut row = r("Example, Net", 9e8);
        (row.latency_down_ms, row.latency_grade) = (Some(40.0), Some("B".into()));
        let out = csv(&[row]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].ends_with(",source,latency_down_ms,latency_up_ms,latency_grade"));
        assert!(lines[1].ends_with(",page,40.000,,B"), "{}", lines[1]);
        assert!(lines[1].contains("\"Example, Net\""), "{}", lines[1]);
        assert!(lines[1].contains("\"'=HYPERLINK(\"\"http://x\"\")\""), "{}", lines[1]);
        assert!(lines[1].contains(",900.000,"), "{}", lines[1]);
    }

    #[test]
    fn passwords_hash_and_verify() {
        let h = hash_password("s3cret").unwrap();
        check_hash(&h).unwrap();
        let parsed = PasswordHash::new(&h).unwrap();
        assert!(Argon2::default().verify_password(b"s3cret", &parsed).is_ok());
        assert!(Argon2::default().verify_password(b"guess", &parsed).is_err());
        assert_ne!(h, hash_password("s3cret").unwrap(), "salted");
        assert!(check_hash("plaintext").unwrap_err().contains("--hash-password"));
    }
}
