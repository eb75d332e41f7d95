//! Which endpoint a path names. LibreSpeed's clients use every spelling its backends ever had:
//! PHP's `backend/garbage.php`, the Go and Rust servers' `backend/garbage`, and the same at the
//! root; all of them are served.

/// An endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Download source: incompressible bytes, `ckSize` MiB.
    Garbage,
    /// Upload sink and ping target: drains the body, answers 200 with nothing.
    Empty,
    /// The client's address, ISP and country as JSON.
    GetIp,
    /// A LibreSpeed client's result POST, answered `id …`.
    Telemetry,
    /// One saved result as LibreSpeed's `results/json.php` gives it.
    ResultJson,
    /// The results page.
    ResultsPage,
    /// The LibreSpeed server list naming this server.
    ServerList,
    /// Our page: starts a measured test and returns its token.
    ApiStart,
    /// Our page: what the server has measured of a test so far.
    ApiProgress,
    /// Our page: records a finished test.
    ApiResult,
    /// Saved results and their aggregates, as JSON (filters in the query).
    ApiResults,
    /// Saved results as CSV.
    ApiResultsCsv,
    /// One saved result: `DELETE` with the admin password.
    ApiResultById,
    /// The responsiveness configuration (`/.well-known/nq`).
    NqConfig,
    /// The responsiveness test's small object.
    NqSmall,
    /// The responsiveness test's large object.
    NqLarge,
    /// The responsiveness test's upload sink.
    NqUpload,
    /// speedtest-x's own report and results endpoints (`backend/report.php`,
    /// `backend/results-api.php`), which this server does not take: answered with what to use.
    SpeedtestX,
    /// An embedded file.
    Asset(Asset),
}

impl Route {
    /// The `route` label of `wirespeed_web_requests_total`.
    pub fn label(self) -> &'static str {
        match self {
            Route::Garbage => "garbage",
            Route::Empty => "empty",
            Route::GetIp => "getIP",
            Route::Telemetry => "telemetry",
            Route::ResultJson => "result_json",
            Route::ResultsPage => "results_page",
            Route::ServerList => "server_list",
            Route::ApiStart => "api_start",
            Route::ApiProgress => "api_progress",
            Route::ApiResult => "api_result",
            Route::ApiResults => "api_results",
            Route::ApiResultsCsv => "api_results_csv",
            Route::ApiResultById => "api_result_by_id",
            Route::NqConfig => "nq_config",
            Route::NqSmall => "nq_small",
            Route::NqLarge => "nq_large",
            Route::NqUpload => "nq_upload",
            Route::SpeedtestX => "speedtest_x",
            Route::Asset(_) => "asset",
        }
    }
}

/// The files embedded in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asset {
    /// The speed-test page.
    Index,
    /// Its script.
    SpeedtestJs,
    /// The results page's script.
    ResultsJs,
    /// The shared style sheet.
    Style,
    /// Chart.js, for the results page.
    ChartJs,
}

/// The route of `path` (without its query), or `None` for a 404. The id of
/// [`Route::ApiResultById`] is the path's last segment.
pub fn route(path: &str) -> Option<Route> {
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    let rest = path.strip_prefix("/backend/").map(|r| format!("/{r}"));
    let p = rest.as_deref().unwrap_or(path);
    let p = p.strip_suffix(".php").unwrap_or(p);
    Some(match p {
        "/garbage" => Route::Garbage,
        "/empty" => Route::Empty,
        "/getIP" => Route::GetIp,
        "/results/telemetry" => Route::Telemetry,
        "/results/json" => Route::ResultJson,
        "/results" | "/results/index" | "/results/stats" | "/stats" => Route::ResultsPage,
        "/.well-known/librespeed" | "/servers.json" | "/server-list.json" => Route::ServerList,
        "/.well-known/nq" => Route::NqConfig,
        "/nq/small" => Route::NqSmall,
        "/nq/large" => Route::NqLarge,
        "/nq/upload" => Route::NqUpload,
        "/report" | "/results-api" => Route::SpeedtestX,
        "/api/start" => Route::ApiStart,
        "/api/progress" => Route::ApiProgress,
        "/api/result" => Route::ApiResult,
        "/api/results" | "/api/results.json" => Route::ApiResults,
        "/api/results.csv" => Route::ApiResultsCsv,
        "/" | "/index.html" => Route::Asset(Asset::Index),
        "/speedtest.js" => Route::Asset(Asset::SpeedtestJs),
        "/results.js" => Route::Asset(Asset::ResultsJs),
        "/style.css" => Route::Asset(Asset::Style),
        "/chart.js" => Route::Asset(Asset::ChartJs),
        _ => {
            let id = p.strip_prefix("/api/results/")?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            Route::ApiResultById
        }
    })
}

/// The value of `key` in a query string, percent-decoded; `Some("")` for a bare `key`.
pub fn query_value(query: Option<&str>, key: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_librespeed_spelling_is_served() {
        for prefix in ["", "/backend"] {
            for (name, want) in [
                ("garbage", Route::Garbage),
                ("empty", Route::Empty),
                ("getIP", Route::GetIp),
                ("results/telemetry", Route::Telemetry),
                ("results/json", Route::ResultJson),
            ] {
                for suffix in ["", ".php", "/"] {
                    let path = format!("{prefix}/{name}{suffix}");
                    assert_eq!(route(&path), Some(want), "{path}");
                }
            }
        }
        assert_eq!(route("/.well-known/librespeed"), Some(Route::ServerList));
        assert_eq!(route("/"), Some(Route::Asset(Asset::Index)));
        assert_eq!(route("/results/"), Some(Route::ResultsPage));
        assert_eq!(route("/api/results/abc123"), Some(Route::ApiResultById));
        for missing in ["/api/results/a/b", "/garbage.phpx", "/GETIP", "/backend", "/etc/passwd"] {
            assert_eq!(route(missing), None, "{missing}");
        }
    }

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(query_value(Some("r=0.5&ckSize=100&cors"), "ckSize").as_deref(), Some("100"));
        assert_eq!(query_value(Some("r=0.5&cors"), "cors").as_deref(), Some(""));
        assert_eq!(query_value(Some("isp=A%20B"), "isp").as_deref(), Some("A B"));
        assert_eq!(query_value(None, "isp"), None);
    }
}
