//! Flags of the browser speed test: `wirespeed web`, and `wirespeed server --web PORT`.

use std::path::PathBuf;

use clap::Args;
use wirespeed_store::Location;

/// What the web speed test serves and keeps.
#[derive(Debug, Args)]
#[command(next_help_heading = "Web speed test")]
pub(crate) struct WebOptions {
    /// MaxMind-format GeoIP database(s) for visitors' ISP and country (repeatable): ipinfo's
    /// country_asn.mmdb, GeoLite2 ASN/Country/City, DB-IP. Nothing is looked up online.
    #[arg(long, value_name = "FILE.mmdb")]
    pub geoip: Vec<PathBuf>,
    /// Keep at most this many results, dropping the oldest (speedtest-x's MAX_LOG_COUNT). 0: all.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub max_results: u64,
    /// Keep every result of a visitor's network (/24, /56); otherwise the newest replaces the
    /// older ones (speedtest-x's SAME_IP_MULTI_LOGS).
    #[arg(long)]
    pub same_ip_multi_results: bool,
    /// Believe X-Forwarded-For and X-Real-IP from this proxy network only (repeatable), e.g.
    /// 127.0.0.1/32 for a reverse proxy on the same host. Without it they are ignored.
    #[arg(long, value_name = "CIDR")]
    pub trusted_proxy: Vec<ipnet::IpNet>,
    /// Largest download per request, in MiB (LibreSpeed's ckSize; speedtest-x caps it at 50).
    #[arg(long, default_value_t = wirespeed_web::MAX_CHUNKS, value_name = "N")]
    pub max_chunks: u32,
    /// Largest upload body per request (LibreSpeed's page sends 20 MiB).
    #[arg(long, default_value = "64M", value_name = "SIZE")]
    pub max_upload: String,
    /// Requests per minute per visitor (IPv4 address or IPv6 /64), downloads and uploads aside. 0: no limit.
    #[arg(long, default_value_t = 600, value_name = "N")]
    pub requests_per_ip: u32,
    /// Bytes per hour per visitor, downloads and uploads together (e.g. 100G). 0: no limit.
    #[arg(long, default_value = "100G", value_name = "SIZE")]
    pub bytes_per_ip: String,
    /// Downloads and uploads at once per visitor. 0: no limit.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub streams_per_ip: u32,
    /// Argon2 hash of the admin password, who alone may delete results (make one with
    /// --hash-password). Without it, results cannot be deleted over the web.
    #[arg(long, env = "WIRESPEED_ADMIN_PASSWORD_HASH", value_name = "HASH")]
    pub admin_password_hash: Option<String>,
    /// This server's name in LibreSpeed server lists.
    #[arg(long, default_value = "wirespeed", value_name = "NAME")]
    pub name: String,
    /// Results database: an SQLite file (default: the user's data directory,
    /// wirespeed/results.db) or a shared PostgreSQL one (postgres://USER@HOST/DB).
    #[arg(long, value_name = "PATH|URL", env = "WIRESPEED_DB")]
    pub db: Option<Location>,
    /// Do not save results.
    #[arg(long)]
    pub no_save: bool,
    /// Serve HTTPS with this certificate chain (PEM), with --tls-key: HTTP/2 and HTTP/1.1 by
    /// ALPN, as the responsiveness clients (networkQuality, mach) expect.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// `wirespeed web`.
#[derive(Debug, Args)]
pub(crate) struct WebArgs {
    /// TCP port for the page and the LibreSpeed API.
    #[arg(short, long, default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on (repeatable). Default: every address, IPv4 and IPv6.
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Vec<std::net::IpAddr>,
    /// Serve Prometheus metrics at http://ADDR/metrics (tests, refusals, bytes, connections,
    /// process CPU and memory), e.g. 127.0.0.1:9464. Anyone who reaches ADDR can read them:
    /// bind it where only your monitoring does.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Read a password from standard input, print its Argon2 hash for --admin-password-hash, and exit.
    #[arg(long)]
    pub hash_password: bool,
    /// The speed test's settings.
    #[command(flatten)]
    pub web: WebOptions,
}
