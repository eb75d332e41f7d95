//! The responsiveness client against servers that are not a responsiveness server, with
//! Debian's nginx as the peer: one that speaks only HTTP/1.1, a configuration that is not
//! JSON, and one (served over TLS and HTTP/2) that sends the load to another host. Each ends
//! with its own clear error before any load is sent.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::rpm::{self, RpmOptions, Urls};
use wirespeed_engine::net::tls::TlsOptions;
use wirespeed_engine::ClientError;
use wirespeed_model::kinds::rpm::RpmSpec;
use wirespeed_testkit::nginx::{Nginx, TlsFiles};

fn options(config_url: String, cacert: Option<&TlsFiles>) -> RpmOptions {
    let mut spec = RpmSpec::new(config_url.clone());
    spec.interval_ns = 100_000_000;
    spec.leg_time_ns = 1_000_000_000;
    RpmOptions {
        spec,
        urls: Urls::Config(config_url),
        tls: TlsOptions { cacert: cacert.map(|f| f.cert.clone()), ..TlsOptions::default() },
        family: None,
        bind: None,
        allow_other_hosts: false,
        connect_timeout: Duration::from_secs(5),
        version: "test".into(),
    }
}

async fn run(opts: RpmOptions) -> Result<(), ClientError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    rpm::run(opts, tx, CancellationToken::new()).await.map(drop)
}

/// A configuration naming URLs on `base`.
fn configuration(base: &str) -> String {
    format!(
        r#"{{"version":1,"urls":{{"small_https_download_url":"{base}/small",
        "large_https_download_url":"{base}/large","https_upload_url":"{base}/upload"}}}}"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_http2_is_named_as_such() {
    let Some(nginx) = Nginx::start() else { return };
    // The configuration is read over HTTP/1.1; the test itself needs HTTP/2.
    nginx.put(".well-known/nq", &configuration(&format!("http://{}", nginx.addr)));
    let url = format!("http://{}/.well-known/nq", nginx.addr);
    let err = run(options(url, None)).await.unwrap_err();
    assert!(matches!(err, ClientError::Protocol(_)), "{err:?}");
    assert!(err.to_string().contains("does not speak HTTP/2"), "{err}");
    assert!(!err.to_string().contains("configuration"), "{err}");
}

/// A configuration served over HTTP/1.1 only (nginx's plain listener) is read, and the test
/// runs over HTTP/2 where it points (nginx's TLS listener): a client that read it over HTTP/2
/// only refused the document before any load.
#[tokio::test(flavor = "multi_thread")]
async fn a_configuration_served_over_http1_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles::self_signed(dir.path());
    let Some(nginx) = Nginx::start_with(Some(&files)) else { return };
    let base = format!("https://127.0.0.1:{}", nginx.tls_port.unwrap());
    nginx.put("nq.json", &configuration(&base));
    nginx.put("small", "x");
    nginx.put("large", &"x".repeat(8 << 20));
    let mut opts = options(format!("http://{}/nq.json", nginx.addr), Some(&files));
    opts.spec.mode = wirespeed_model::kinds::rpm::RpmMode::Download;
    opts.spec.idle_probes = 2;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let report = rpm::run(opts, tx, CancellationToken::new()).await;
    let report = report.unwrap_or_else(|e| panic!("{e}: {}", nginx.error_log()));
    let wirespeed_model::ReportBody::Rpm(rpm) = report.body else { panic!("not an RPM report") };
    assert_eq!(rpm.summary.large_url, format!("{base}/large"));
    assert!(rpm.intervals.iter().any(|i| i.download_bytes > 0), "{:?}", rpm.intervals);
    assert!(rpm.summary.idle.count >= 1, "{:?}", rpm.summary.idle);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configuration_that_is_not_one_or_points_elsewhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles::self_signed(dir.path());
    let Some(nginx) = Nginx::start_with(Some(&files)) else { return };
    let port = nginx.tls_port.unwrap();
    let base = format!("https://localhost:{port}");

    nginx.put("page.html", "<html>a speed test</html>");
    let err = run(options(format!("{base}/page.html"), Some(&files))).await.unwrap_err();
    assert!(err.to_string().contains("is not JSON"), "{err}");

    let err = run(options(format!("{base}/missing"), Some(&files))).await.unwrap_err();
    assert!(err.to_string().contains("answered 404"), "{err}");

    // The load would go to another host: refused unless asked for.
    let elsewhere = format!("https://127.0.0.2:{port}");
    nginx.put(
        "nq.json",
        &format!(
            r#"{{"version":1,"urls":{{"small_https_download_url":"{elsewhere}/s",
            "large_https_download_url":"{elsewhere}/l","https_upload_url":"{elsewhere}/u"}}}}"#
        ),
    );
    let err = run(options(format!("{base}/nq.json"), Some(&files))).await.unwrap_err();
    assert!(matches!(err, ClientError::Protocol(_)), "{err:?}");
    assert!(
        err.to_string().contains("another host") && err.to_string().contains("127.0.0.2"),
        "{err}"
    );
    // Followed when asked: nginx listens on 127.0.0.1 only, so the test cannot start there.
    let mut followed = options(format!("{base}/nq.json"), Some(&files));
    followed.allow_other_hosts = true;
    let err = run(followed).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err:?}");
}
