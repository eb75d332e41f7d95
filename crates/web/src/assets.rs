//! The pages and scripts embedded in the binary: the speed-test page, the results page, their
//! scripts and style sheet, and Chart.js (vendored in the report crate). Pages are sent with a
//! content security policy that allows only this server's own scripts, so even a stored string
//! that slipped past escaping could not run.

use hyper::header::{self, HeaderValue};
use hyper::StatusCode;

use crate::respond::{self, Reply};
use crate::routes::Asset;

const INDEX: &str = include_str!("../assets/index.html");
const RESULTS: &str = include_str!("../assets/results.html");
const SPEEDTEST_JS: &str = include_str!("../assets/speedtest.js");
const RESULTS_JS: &str = include_str!("../assets/results.js");
const STYLE: &str = include_str!("../assets/style.css");

/// Scripts and styles from this server only; no inline script, no other origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn page(html: &'static str) -> Reply {
    let mut r = respond::with(StatusCode::OK, "text/html; charset=utf-8", html);
    r.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    r.headers_mut().insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r
}

/// The results page; `/results` is sent to `/results/`, so the page's relative links (which
/// also work behind a proxy's path prefix) resolve the same way from every spelling.
pub fn results_page(path: &str) -> Reply {
    if path == "/results" {
        let mut r = respond::empty();
        *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
        r.headers_mut().insert(header::LOCATION, HeaderValue::from_static("results/"));
        return r;
    }
    page(RESULTS)
}

/// An embedded file.
pub fn serve(asset: Asset) -> Reply {
    match asset {
        Asset::Index => page(INDEX),
        Asset::SpeedtestJs => {
            respond::with(StatusCode::OK, "text/javascript; charset=utf-8", SPEEDTEST_JS)
        }
        Asset::ResultsJs => {
            respond::with(StatusCode::OK, "text/javascript; charset=utf-8", RESULTS_JS)
        }
        Asset::Style => respond::with(StatusCode::OK, "text/css; charset=utf-8", STYLE),
        Asset::ChartJs => respond::with(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            wirespeed_report::html::CHART_JS,
        ),
    }
}
