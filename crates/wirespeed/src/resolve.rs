//! Raw flag values → validated specs and options. Every rule about what a flag means lives
//! here, next to its tests, so the engine only ever sees values that make sense.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use wirespeed_engine::kinds::bandwidth::client::ClientOptions;
use wirespeed_engine::kinds::cps::client::CpsOptions;
use wirespeed_engine::kinds::dns::client::DnsOptions;
use wirespeed_engine::kinds::dns::queries::QuerySet;
use wirespeed_engine::kinds::http::client::HttpOptions;
use wirespeed_engine::kinds::http::requests::Request;
use wirespeed_engine::kinds::latency::client::LatencyOptions;
use wirespeed_engine::kinds::ping::client::PingOptions;
use wirespeed_engine::kinds::ping::probes::http_target;
use wirespeed_engine::kinds::rpm::{Config as RpmUrls, RpmOptions, Urls};
use wirespeed_engine::kinds::trace::client::TraceOptions;
use wirespeed_engine::net::handshake::Endpoint;
use wirespeed_engine::net::handshake::Family;
use wirespeed_engine::net::icmp::IcmpSocketKind;
use wirespeed_engine::net::tls::TlsOptions;
use wirespeed_engine::server::ServerConfig;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, Direction, DEFAULT_UDP_BITRATE};
use wirespeed_model::kinds::cps::CpsSpec;
use wirespeed_model::kinds::dns::{DnsSpec, DnsTransport};
use wirespeed_model::kinds::http::HttpSpec;
use wirespeed_model::kinds::http::TargetsFile;
use wirespeed_model::kinds::latency::LatencySpec;
use wirespeed_model::kinds::ping::{PingMode, PingSpec};
use wirespeed_model::kinds::rpm::{RpmMode, RpmSpec};
use wirespeed_model::kinds::trace::{TraceProtocol, TraceSpec};
use wirespeed_model::rules::Protocol;
use wirespeed_model::units::{parse_bitrate, parse_bytes, parse_duration};
use wirespeed_proto::dns::wire::Edns;
use wirespeed_proto::http_targets::{self, TargetBody};
use wirespeed_proto::http_url::HttpUrl;

use crate::flags::{
    BandwidthArgs, ConnectArgs, CpsArgs, DnsArgs, HttpArgs, IcmpSocketArg, LatencyArgs, PingArgs,
    PpsArgs, RpmArgs, RpmModeArg, ServerArgs, TargetsFormatArg, TraceArgs, TraceProtoArg,
};

/// Default port of the wirespeed server (the same as iperf3's).
pub(crate) const DEFAULT_PORT: u16 = 5201;

fn duration(flag: &str, text: &str) -> Result<Duration> {
    parse_duration(text).with_context(|| format!("{flag} {text}"))
}

/// A duration flag's value in nanoseconds, as specs keep it.
fn nanos(flag: &str, text: &str) -> Result<u64> {
    Ok(duration(flag, text)?.as_nanos() as u64)
}

/// An optional duration flag's value in nanoseconds.
fn optional_nanos(flag: &str, text: Option<&str>) -> Result<Option<u64>> {
    text.map(|t| nanos(flag, t)).transpose()
}

fn size(flag: &str, text: &str) -> Result<u64> {
    parse_bytes(text).with_context(|| format!("{flag} {text}"))
}

/// The port of a `HOST:PORT` target: 1 to 65535, refused as a command-line error (exit 2)
/// like the same value given with `-p`.
fn target_port(target: &str, port: &str) -> Result<u16> {
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(crate::exit::Usage(format!(
            "invalid value '{target}' for '<HOST[:PORT]>': the port must be 1 to 65535, not '{port}'"
        ))
        .into()),
    }
}

/// Splits `HOST`, `HOST:PORT`, `[V6]`, `[V6]:PORT` or a bare IPv6 address.
pub(crate) fn split_target(target: &str) -> Result<(String, Option<u16>)> {
    if let Some(rest) = target.strip_prefix('[') {
        let (host, after) =
            rest.split_once(']').with_context(|| format!("'{target}': missing ']'"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(target_port(target, p)?),
            None if after.is_empty() => None,
            None => bail!("'{target}': unexpected text after ']'"),
        };
        return Ok((host.to_string(), port));
    }
    match target.matches(':').count() {
        0 => Ok((target.to_string(), None)),
        1 => {
            let (host, port) = target.split_once(':').unwrap_or((target, ""));
            Ok((host.to_string(), Some(target_port(target, port)?)))
        }
        _ => Ok((target.to_string(), None)), // a bare IPv6 address
    }
    .and_then(|(h, p): (String, Option<u16>)| {
        if h.is_empty() {
            bail!("'{target}': empty host name");
        }
        Ok((h, p))
    })
}

/// A DSCP value from a number (0-63) or a name.
pub(crate) fn parse_dscp(text: &str) -> Result<u8> {
    let lower = text.to_ascii_lowercase();
    let value = match lower.as_str() {
        "ef" => 46,
        "va" => 44,
        "le" => 1,
        n if n.starts_with("cs") && n.len() == 3 => {
            let class = n[2..]
                .parse::<u8>()
                .ok()
                .filter(|c| *c <= 7)
                .with_context(|| format!("unknown DSCP '{text}'"))?;
            class << 3
        }
        n if n.starts_with("af") && n.len() == 4 => {
            let class = n[2..3].parse::<u8>().ok().filter(|c| (1..=4).contains(c));
            let drop = n[3..4].parse::<u8>().ok().filter(|d| (1..=3).contains(d));
            match (class, drop) {
                (Some(c), Some(d)) => (c << 3) | (d << 1),
                _ => bail!("unknown DSCP '{text}'"),
            }
        }
        n => n.parse::<u8>().ok().filter(|v| *v <= 63).with_context(|| {
            format!("DSCP must be 0-63 or a name like ef or af41, got '{text}'")
        })?,
    };
    Ok(value)
}

/// `wirespeed bandwidth` flags → client options.
pub(crate) fn bandwidth(args: &BandwidthArgs, version: &str) -> Result<ClientOptions> {
    let endpoint = endpoint(&args.target, &args.connect, version)?;
    let protocol = match (args.udp, args.quic) {
        (true, _) => Protocol::Udp,
        (_, true) => Protocol::Quic,
        _ => Protocol::Tcp,
    };
    let mut spec = BandwidthSpec::new(args.target.clone(), protocol);
    spec.parallel = args.parallel;
    spec.quic_streams = args.quic_streams;
    spec.duration_ns = nanos("--time", &args.time)?;
    spec.bytes = args.bytes.as_deref().map(|b| size("--bytes", b)).transpose()?;
    spec.direction = match (args.reverse, args.bidir) {
        (true, _) => Direction::Download,
        (_, true) => Direction::Bidir,
        _ => Direction::Upload,
    };
    spec.bitrate_bps = match &args.bitrate {
        Some(b) => parse_bitrate(b).with_context(|| format!("--bitrate {b}"))?,
        None if protocol == Protocol::Udp => DEFAULT_UDP_BITRATE,
        None => 0,
    };
    if let Some(l) = &args.length {
        spec.length = u32::try_from(size("--length", l)?).context("--length is too large")?;
    }
    spec.omit_ns = nanos("--omit", &args.omit)?;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.window = args
        .window
        .as_deref()
        .map(|w| size("--window", w).map(|v| v.min(u64::from(u32::MAX)) as u32))
        .transpose()?;
    if let Some(cc) = args.congestion.as_ref().filter(|_| protocol != Protocol::Quic) {
        wirespeed_engine::net::congestion_available(cc).map_err(|e| {
            let available =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .map(|a| format!(" (this host has: {})", a.trim()))
                    .unwrap_or_default();
            anyhow::anyhow!("congestion control '{cc}' cannot be used here: {e}{available}")
        })?;
    }
    spec.congestion = args.congestion.clone();
    spec.mss = args.mss;
    spec.no_delay = args.no_delay;
    spec.dscp = args.dscp.as_deref().map(parse_dscp).transpose()?;
    spec.zerocopy = args.zerocopy;
    spec.validate()?;
    Ok(ClientOptions { spec, endpoint, latency: args.latency })
}

/// A target and the connection flags → where the server is.
pub(crate) fn endpoint(target: &str, args: &ConnectArgs, version: &str) -> Result<Endpoint> {
    let (host, target_port) = split_target(target)?;
    Ok(Endpoint {
        host,
        port: args.port.or(target_port).unwrap_or(DEFAULT_PORT),
        family: if args.ipv4 {
            Some(Family::V4)
        } else if args.ipv6 {
            Some(Family::V6)
        } else {
            None
        },
        bind: args.bind,
        token: args.token.clone(),
        connect_timeout: duration("--connect-timeout", &args.connect_timeout)?,
        version: version.to_string(),
    })
}

/// `wirespeed pps` flags → a UDP bandwidth test with small datagrams, unlimited unless `--rate`.
pub(crate) fn pps(args: &PpsArgs, version: &str) -> Result<ClientOptions> {
    let endpoint = endpoint(&args.target, &args.connect, version)?;
    let mut spec = BandwidthSpec::new(args.target.clone(), Protocol::Udp);
    spec.length =
        u32::try_from(size("--length", &args.length)?).context("--length is too large")?;
    spec.duration_ns = nanos("--time", &args.time)?;
    spec.parallel = args.parallel;
    spec.direction = if args.reverse { Direction::Download } else { Direction::Upload };
    // A packet rate is a bit rate at this datagram size.
    spec.bitrate_bps = match &args.rate {
        Some(r) => {
            let pps = parse_bitrate(r).with_context(|| format!("--rate {r}"))?;
            pps.saturating_mul(u64::from(spec.length) * 8)
        }
        None => 0,
    };
    spec.omit_ns = nanos("--omit", &args.omit)?;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.per_packet = true;
    spec.validate()?;
    Ok(ClientOptions { spec, endpoint, latency: false })
}

/// `wirespeed latency` flags → client options.
pub(crate) fn latency(args: &LatencyArgs, version: &str) -> Result<LatencyOptions> {
    let protocol = match (args.udp, args.quic) {
        (true, _) => Protocol::Udp,
        (_, true) => Protocol::Quic,
        _ => Protocol::Tcp,
    };
    let mut spec = LatencySpec::new(args.target.clone(), protocol);
    spec.length =
        u32::try_from(size("--length", &args.length)?).context("--length is too large")?;
    spec.count = args.count;
    spec.duration_ns = nanos("--time", &args.time)?;
    spec.parallel = args.parallel;
    spec.warmup_ns = nanos("--warmup", &args.warmup)?;
    spec.rate = args.rate;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.timeout_ns = nanos("--timeout", &args.timeout)?;
    spec.busy_poll = args.busy_poll;
    spec.external = args.external;
    if args.external && args.connect.port.is_none() && split_target(&args.target)?.1.is_none() {
        bail!("--external needs the echo service's port: HOST:PORT or --port");
    }
    spec.validate()?;
    Ok(LatencyOptions {
        spec,
        endpoint: endpoint(&args.target, &args.connect, version)?,
        member: Default::default(),
    })
}

/// `wirespeed cps` flags → options. An external target has no default port to fall back on.
pub(crate) fn cps(args: &CpsArgs, version: &str) -> Result<CpsOptions> {
    let endpoint = endpoint(&args.target, &args.connect, version)?;
    if args.external && args.connect.port.is_none() && split_target(&args.target)?.1.is_none() {
        bail!("--external needs the listener's port: HOST:PORT or --port");
    }
    let mut spec = CpsSpec::new(args.target.clone());
    spec.external = args.external;
    spec.parallel = args.parallel;
    spec.threads = args.threads;
    spec.count = args.count;
    spec.duration_ns = nanos("--time", &args.time)?;
    spec.warmup_ns = nanos("--warmup", &args.warmup)?;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.timeout_ns = nanos("--timeout", &args.timeout)?;
    spec.rst = args.rst;
    spec.validate()?;
    Ok(CpsOptions { spec, endpoint, member: Default::default() })
}

/// `wirespeed ping` flags → options.
pub(crate) fn ping(args: &PingArgs, version: &str) -> Result<PingOptions> {
    let target = match (&args.target, &args.http) {
        (Some(t), _) => t.clone(),
        (None, Some(url)) => http_target(url).map_err(anyhow::Error::msg)?.host,
        (None, None) => bail!("a host to ping is needed"),
    };
    let endpoint = endpoint(&target, &args.connect, version)?;
    let mode = if let Some(port) = args.tcp {
        PingMode::Tcp { port }
    } else if args.udp {
        PingMode::Udp { port: endpoint.port }
    } else if let Some(url) = &args.http {
        http_target(url).map_err(anyhow::Error::msg)?;
        PingMode::Http { url: url.clone() }
    } else {
        PingMode::Icmp
    };
    let mut spec = PingSpec::new(target, mode);
    spec.count = args.count;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.timeout_ns = nanos("--timeout", &args.timeout)?;
    spec.deadline_ns = optional_nanos("--deadline", args.deadline.as_deref())?;
    spec.size = args.size;
    spec.validate()?;
    let icmp_socket = match args.icmp_socket {
        IcmpSocketArg::Auto => IcmpSocketKind::Auto,
        IcmpSocketArg::Dgram => IcmpSocketKind::Datagram,
        IcmpSocketArg::Raw => IcmpSocketKind::Raw,
    };
    Ok(PingOptions { spec, endpoint, icmp_socket })
}

/// A share given as `5%` or `0.05`.
fn fraction(flag: &str, text: &str) -> Result<f64> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    value
        .ok()
        .filter(|v| v.is_finite())
        .with_context(|| format!("{flag} {text}: give a share such as 5% or 0.05"))
}

/// The configuration URL of `wirespeed rpm URL`: a URL without a path means the server's
/// `/.well-known/nq` (where Apple's and wirespeed's servers publish it).
pub(crate) fn rpm_config_url(url: &str) -> Result<String> {
    let parsed = HttpUrl::parse(url).map_err(anyhow::Error::msg)?;
    Ok(if parsed.path == "/" && !url.trim_end().ends_with("/?") {
        format!("{}/.well-known/nq", parsed.origin())
    } else {
        url.trim().to_string()
    })
}

/// `wirespeed rpm` flags → options.
pub(crate) fn rpm(args: &RpmArgs, version: &str) -> Result<RpmOptions> {
    let urls = match (&args.url, &args.large, &args.small, &args.upload) {
        (_, Some(large), Some(small), Some(upload)) => {
            for u in [large, small, upload] {
                HttpUrl::parse(u).map_err(anyhow::Error::msg)?;
            }
            Urls::Given(RpmUrls {
                large: large.clone(),
                small: small.clone(),
                upload: upload.clone(),
            })
        }
        (Some(url), ..) => Urls::Config(rpm_config_url(url)?),
        _ => bail!("give the configuration's URL, or --large, --small and --upload"),
    };
    let target = match &urls {
        Urls::Config(u) => u.clone(),
        Urls::Given(c) => c.small.clone(),
    };
    let mut spec = RpmSpec::new(target);
    spec.mode = match args.mode {
        RpmModeArg::Sequential => RpmMode::Sequential,
        RpmModeArg::Parallel => RpmMode::Parallel,
        RpmModeArg::Download => RpmMode::Download,
        RpmModeArg::Upload => RpmMode::Upload,
    };
    spec.leg_time_ns = nanos("--time", &args.time)?;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.max_connections = args.max_connections;
    spec.moving_average = args.moving_average;
    spec.stability = fraction("--stability", &args.stability)?;
    spec.trim = fraction("--trim", &args.trim)?;
    spec.probes_per_second = args.probe_rate;
    spec.idle_probes = args.idle_probes;
    spec.validate()?;
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Some(Family::V4),
        (_, true) => Some(Family::V6),
        _ => None,
    };
    Ok(RpmOptions {
        spec,
        urls,
        tls: TlsOptions {
            cacert: args.cacert.clone(),
            insecure: args.insecure,
            server_name: args.sni.clone(),
            ..TlsOptions::default()
        },
        family,
        bind: None,
        allow_other_hosts: args.allow_other_hosts,
        connect_timeout: duration("--connect-timeout", &args.connect_timeout)?,
        version: version.to_string(),
    })
}

/// `wirespeed trace` flags → options.
pub(crate) fn trace(args: &TraceArgs, version: &str) -> Result<TraceOptions> {
    let protocol = match args.protocol {
        TraceProtoArg::Icmp => TraceProtocol::Icmp,
        TraceProtoArg::Udp => TraceProtocol::Udp,
        TraceProtoArg::Tcp => TraceProtocol::Tcp,
    };
    let mut spec = TraceSpec::new(args.target.clone(), protocol);
    if let Some(p) = args.port {
        spec.port = p;
    }
    spec.max_hops = args.max_hops;
    spec.first_ttl = args.first_ttl;
    spec.mtr = args.mtr;
    spec.rounds = if args.mtr { args.count } else { Some(args.queries) };
    spec.interval_ns = if args.mtr { nanos("--interval", &args.interval)? } else { 0 };
    spec.timeout_ns = nanos("--wait", &args.wait)?;
    spec.validate()?;
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Some(Family::V4),
        (_, true) => Some(Family::V6),
        _ => None,
    };
    let endpoint = Endpoint {
        host: split_target(&args.target)?.0,
        port: 0,
        family,
        bind: args.bind,
        token: None,
        connect_timeout: Duration::from_secs(5),
        version: version.to_string(),
    };
    Ok(TraceOptions { spec, endpoint })
}

/// Largest request body `--body @FILE` may send.
const MAX_REQUEST_BODY: u64 = 64 << 20;

/// `wirespeed http` flags → options. Kept whole although it runs past 80 lines: it is one
/// flag after another, each checked and set in the spec in the order `--help` lists them, and
/// splitting it would scatter that one-to-one reading over helpers.
pub(crate) fn http(args: &HttpArgs, version: &str) -> Result<HttpOptions> {
    let mut headers = Vec::new();
    for h in &args.headers {
        let (k, v) =
            h.split_once(':').with_context(|| format!("--header '{h}': expected 'Name: value'"))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let (requests, targets) = match &args.targets {
        Some(path) => {
            let requests = targets_file(path, args.targets_format, &headers)?;
            let info = TargetsFile { path: path.display().to_string(), count: requests.len() };
            (requests, Some(info))
        }
        None => {
            let url = args.url.as_deref().unwrap_or_default();
            let body = match args.body.as_deref() {
                None => Vec::new(),
                Some(b) => match b.strip_prefix('@') {
                    Some(path) => read_body(path, "--body")?,
                    None => b.as_bytes().to_vec(),
                },
            };
            let request = Request {
                method: args.method.clone(),
                url: HttpUrl::parse(url).map_err(anyhow::Error::msg)?,
                headers: headers.clone(),
                body,
            };
            (vec![request], None)
        }
    };
    let first = &requests[0];
    let url = match (&args.url, &targets) {
        (Some(u), _) => u.clone(),
        (None, _) => format!("{}{}", first.url.origin(), first.url.path),
    };
    let origin = HttpUrl::parse(&url).map_err(anyhow::Error::msg)?.origin();
    if let Some(other) = requests.iter().find(|r| r.url.origin() != origin) {
        bail!(
            "every request must go to {origin} (one connection pool); '{}' goes to {}",
            other.url.path,
            other.url.origin()
        );
    }
    // The report shows and keeps the URL without its password; the requests carry it.
    let mut spec = HttpSpec::new(HttpUrl::redacted(&url));
    spec.method = first.method.clone();
    spec.headers = headers;
    spec.body_bytes = first.body.len() as u64;
    spec.connections = args.connections;
    spec.threads = args.threads;
    spec.count = args.requests;
    spec.duration_ns = nanos("--duration", &args.duration)?;
    spec.warmup_ns = nanos("--warmup", &args.warmup)?;
    spec.interval_ns = nanos("--interval", &args.interval)?;
    spec.timeout_ns = nanos("--timeout", &args.timeout)?;
    spec.keepalive = !args.no_keepalive;
    spec.rates = match &args.rate {
        None => Vec::new(),
        Some(list) => list
            .split(',')
            .map(|r| {
                r.trim()
                    .parse::<f64>()
                    .map_err(|_| anyhow!("--rate '{r}': not a number of requests per second"))
            })
            .collect::<Result<_>>()?,
    };
    spec.max_connections = args.max_connections;
    spec.unix_socket = args.unix_socket.clone();
    spec.http2 = args.h2;
    spec.http3 = args.h3;
    spec.alt_svc = args.alt_svc;
    spec.zero_rtt = args.zero_rtt;
    spec.streams = args.streams;
    spec.max_redirects = args.redirects;
    spec.insecure = args.insecure;
    spec.targets = targets;
    if spec.http2 && spec.max_redirects > 0 {
        bail!("--redirects is for HTTP/1.1; with --h2 a 3xx is the answer");
    }
    spec.validate()?;
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Some(Family::V4),
        (_, true) => Some(Family::V6),
        _ => None,
    };
    let tls = TlsOptions {
        cacert: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        insecure: args.insecure,
        server_name: args.sni.clone(),
    };
    Ok(HttpOptions {
        spec,
        requests,
        family,
        tls,
        version: version.to_string(),
        results: None,
        member: Default::default(),
    })
}

/// A request body file, within the size limit.
fn read_body(path: &str, flag: &str) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path).with_context(|| format!("{flag} @{path}"))?.len();
    if len > MAX_REQUEST_BODY {
        bail!("{flag} @{path}: {len} bytes, at most {MAX_REQUEST_BODY}");
    }
    std::fs::read(path).with_context(|| format!("{flag} @{path}"))
}

/// The requests of a vegeta targets file; `-H` headers go on every one.
fn targets_file(
    path: &std::path::Path,
    format: TargetsFormatArg,
    headers: &[(String, String)],
) -> Result<Vec<Request>> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("--targets {shown}"))?;
    let parsed = match format {
        TargetsFormatArg::Http => http_targets::parse_http(&text),
        TargetsFormatArg::Json => http_targets::parse_json(&text),
    }
    .with_context(|| format!("--targets {shown}"))?;
    if parsed.is_empty() {
        bail!("--targets {shown}: no requests in the file");
    }
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    parsed
        .into_iter()
        .map(|t| {
            let body = match t.body {
                TargetBody::None => Vec::new(),
                TargetBody::Bytes(b) => b,
                TargetBody::File(f) => {
                    // Relative body paths are relative to the targets file, as in vegeta.
                    let p = dir.join(&f);
                    read_body(&p.display().to_string(), "a targets body")?
                }
            };
            let url = HttpUrl::parse(&t.url).map_err(|m| anyhow!("--targets {shown}: {m}"))?;
            let mut all = headers.to_vec();
            all.extend(t.headers);
            Ok(Request { method: t.method, url, headers: all, body })
        })
        .collect()
}

/// A rate of queries per second: a number, optionally with k or M (`50k`, `1.5M`).
fn qps(flag: &str, text: &str) -> Result<f64> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (t, 1.0),
        },
    };
    num.parse::<f64>()
        .map(|v| v * scale)
        .map_err(|_| anyhow!("{flag} '{text}': not a number of queries per second"))
}

/// The queries of `wirespeed dns`: the datafile (`-` for standard input), or the built-in
/// ones for the fixture's zone.
pub(crate) fn dns_queries(
    args: &DnsArgs,
) -> Result<Vec<wirespeed_proto::dns::datafile::QueryLine>> {
    let Some(path) = &args.datafile else {
        return Ok(wirespeed_engine::kinds::dns::queries::builtin_lines(1000));
    };
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading queries from standard input")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("-d {}", path.display()))?
    };
    let what =
        if path.as_os_str() == "-" { "standard input".into() } else { path.display().to_string() };
    wirespeed_proto::dns::datafile::parse(&text).with_context(|| format!("datafile {what}"))
}

/// `wirespeed dns` flags → a DNS load test.
pub(crate) fn dns(args: &DnsArgs, version: &str) -> Result<DnsOptions> {
    let lines = dns_queries(args)?;
    let transport = match (args.tcp, args.dot, args.doq, &args.doh) {
        (true, ..) => DnsTransport::Tcp,
        (_, true, ..) => DnsTransport::Dot,
        (_, _, true, _) => DnsTransport::Doq,
        (.., Some(_)) => DnsTransport::Doh,
        _ => DnsTransport::Udp,
    };
    let encrypted = !matches!(transport, DnsTransport::Udp | DnsTransport::Tcp);
    if !encrypted && (args.insecure || args.cacert.is_some() || args.sni.is_some()) {
        anyhow::bail!("--insecure, --cacert and --sni go with --dot, --doq or --doh");
    }
    let doh = args
        .doh
        .as_deref()
        .map(|url| {
            let u = HttpUrl::parse(url).map_err(anyhow::Error::msg)?;
            anyhow::ensure!(u.secure, "--doh {url}: DNS over HTTPS needs an https:// URL");
            Ok(u)
        })
        .transpose()?;
    let (host, port) = match &doh {
        Some(u) => (u.host.clone(), u.port),
        None => (split_target(&args.server)?.0, args.port.unwrap_or(transport.default_port())),
    };
    let mut spec = DnsSpec::new(host, port);
    spec.transport = transport;
    spec.doh_path = doh.map(|u| u.path);
    if args.doh_post {
        spec.doh_method = wirespeed_model::kinds::dns::DohMethod::Post;
    }
    spec.doh_http3 = args.doh_h3;
    spec.datafile = args.datafile.as_ref().map(|p| p.display().to_string());
    spec.queries = lines.len();
    spec.clients = args.clients;
    spec.threads = args.threads;
    spec.max_outstanding = args.max_outstanding;
    spec.max_qps = args.max_qps.as_deref().map(|q| qps("-Q", q)).transpose()?;
    spec.rate = args.rate.as_deref().map(|q| qps("--rate", q)).transpose()?;
    spec.duration_ns = optional_nanos("-l", args.time_limit.as_deref())?;
    spec.passes = args.passes;
    spec.timeout_ns = nanos("-t", &args.timeout)?;
    spec.interval_ns = nanos("-S", &args.interval)?;
    spec.edns_size = match (args.edns_size, args.edns || args.dnssec) {
        (Some(size), _) => Some(size),
        (None, true) => Some(4096),
        (None, false) => None,
    };
    spec.dnssec_ok = args.dnssec;
    spec.tc_retry = args.tc_retry;
    spec.insecure = args.insecure;
    spec.sni = args.sni.clone();
    spec.validate()?;
    let edns = spec.edns_size.map(|udp_size| Edns { udp_size, dnssec_ok: spec.dnssec_ok });
    let queries = QuerySet::from_lines(&lines, edns).map_err(anyhow::Error::msg)?;
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Some(Family::V4),
        (_, true) => Some(Family::V6),
        _ => None,
    };
    let tls = TlsOptions {
        cacert: args.cacert.clone(),
        insecure: args.insecure,
        server_name: args.sni.clone(),
        ..TlsOptions::default()
    };
    Ok(DnsOptions {
        spec,
        queries: std::sync::Arc::new(queries),
        family,
        tls,
        connect_timeout: duration("--connect-timeout", &args.connect_timeout)?,
        version: version.to_string(),
        member: Default::default(),
    })
}

/// `wirespeed server` flags → server configuration.
pub(crate) fn server(args: &ServerArgs, version: &str) -> Result<ServerConfig> {
    if args.max_tests == 0 {
        bail!("--max-tests must be at least 1");
    }
    Ok(ServerConfig {
        max_tests: args.max_tests,
        max_duration: duration("--max-duration", &args.max_duration)?,
        max_bitrate_bps: parse_bitrate(&args.max_bitrate)
            .with_context(|| format!("--max-bitrate {}", args.max_bitrate))?,
        token: args.token.clone(),
        allow: args.allow.clone(),
        idle_timeout: duration("--idle-timeout", &args.idle_timeout)?
            .max(Duration::from_millis(100)),
        version: version.to_string(),
        metrics: wirespeed_metrics::Metrics::new(version),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::{Cli, Command};
    use clap::Parser;

    fn bw(args: &[&str]) -> Result<ClientOptions> {
        let mut all = vec!["wirespeed", "bw"];
        all.extend_from_slice(args);
        let Command::Bandwidth(b) = Cli::try_parse_from(all).unwrap().command else {
            unreachable!()
        };
        bandwidth(&b, "t")
    }

    #[test]
    fn targets() {
        assert_eq!(split_target("host").unwrap(), ("host".into(), None));
        assert_eq!(split_target("host:99").unwrap(), ("host".into(), Some(99)));
        assert_eq!(split_target("[::1]:99").unwrap(), ("::1".into(), Some(99)));
        assert_eq!(split_target("[::1]").unwrap(), ("::1".into(), None));
        assert_eq!(split_target("::1").unwrap(), ("::1".into(), None));
        assert!(split_target("host:notaport").is_err());
        assert!(split_target("host:0").is_err() && split_target("host:70000").is_err());
        assert!(split_target("[::1").is_err());
        assert!(split_target(":80").is_err());
    }

    #[test]
    fn dscp_names() {
        assert_eq!(parse_dscp("ef").unwrap(), 46);
        assert_eq!(parse_dscp("AF41").unwrap(), 34);
        assert_eq!(parse_dscp("cs1").unwrap(), 8);
        assert_eq!(parse_dscp("10").unwrap(), 10);
        assert!(parse_dscp("64").is_err());
        assert!(parse_dscp("af51").is_err());
    }

    #[test]
    fn defaults_and_overrides() {
        let o = bw(&["127.0.0.1"]).unwrap();
        assert_eq!((o.endpoint.port, o.spec.bitrate_bps, o.spec.length), (5201, 0, 131_072));
        let o = bw(&["127.0.0.1:7000", "-u"]).unwrap();
        assert_eq!((o.endpoint.port, o.spec.bitrate_bps, o.spec.length), (7000, 1_000_000, 1400));
        let o = bw(&["127.0.0.1:7000", "-p", "7001", "-n", "1M", "--bidir", "-b", "0"]).unwrap();
        assert_eq!(
            (o.endpoint.port, o.spec.bytes, o.spec.direction, o.spec.bitrate_bps),
            (7001, Some(1 << 20), Direction::Bidir, 0)
        );
    }

    #[test]
    fn bad_values_name_their_flag() {
        let err = bw(&["h", "-t", "ten"]).unwrap_err();
        assert!(format!("{err:#}").contains("--time"), "{err:#}");
        let err = bw(&["h", "-u", "-l", "8"]).unwrap_err();
        assert!(format!("{err:#}").contains("UDP length"), "{err:#}");
        assert!(crate::flags::parse_from(["wirespeed", "bw", "h", "-P", "0"]).is_err());
        assert!(bw(&["h", "-b", "fast"]).is_err());
    }
}
