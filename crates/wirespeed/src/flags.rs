//! The command line, and nothing else: clap definitions with the help text people read.
//! Turning these raw values into specs happens in `resolve.rs`.
// These doc comments are `--help` text, where `[IPV6]:PORT` is literal, not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use wirespeed_model::kinds::cps::MAX_CONNECTORS;
use wirespeed_model::kinds::dns::MAX_DNS_CLIENTS;
use wirespeed_model::kinds::http::MAX_HTTP_CONNECTIONS;
use wirespeed_model::rules::MAX_PARALLEL;
use wirespeed_store::Location;

use crate::test_kinds::TestKind;

mod member;
mod saved;
mod web;
pub(crate) use member::*;
pub(crate) use saved::*;
pub(crate) use web::*;

/// What `--version` says: the package's version and, built from a git checkout, the commit
/// (build.rs), so that two builds of one version compared side by side can be told apart.
const VERSION: &str = if env!("WIRESPEED_COMMIT").is_empty() {
    env!("CARGO_PKG_VERSION")
} else {
    concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("WIRESPEED_COMMIT"), ")")
};

/// Network performance tests in one binary.
#[derive(Debug, Parser)]
#[command(name = "wirespeed", version = VERSION, about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    /// More log output on stderr (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the server that every test talks to (TCP and UDP on one port, many clients at once).
    Server(Box<ServerArgs>),
    /// Serve the browser speed test: a page, a results page, and LibreSpeed's API for its clients.
    Web(Box<WebArgs>),
    /// Measure TCP or UDP throughput to a wirespeed server (like iperf3).
    #[command(visible_alias = "bw")]
    Bandwidth(Box<BandwidthArgs>),
    /// Measure request/response round trips to a wirespeed server (or any echo service): percentiles from an HDR histogram.
    #[command(visible_alias = "lat")]
    Latency(Box<LatencyArgs>),
    /// Measure new TCP connections per second to a wirespeed server, or with --external to any TCP listener.
    Cps(Box<CpsArgs>),
    /// Measure UDP packets per second with small datagrams (sender and receiver rates, loss).
    Pps(Box<PpsArgs>),
    /// Ping a host: ICMP echo, a TCP handshake (--tcp), UDP echo from a wirespeed server (--udp) or HTTP (--http).
    Ping(Box<PingArgs>),
    /// Trace the path to a host hop by hop (traceroute), or keep probing it (--mtr).
    Trace(Box<TraceArgs>),
    /// Load an HTTP server: requests/s and latency with -c connections (closed model, like wrk) or at -r requests/s (open model, like wrk2 and vegeta); HTTP/1.1, h2, HTTP/3, TLS.
    Http(Box<HttpArgs>),
    /// Load a DNS server like dnsperf: queries/s, loss, response codes and latency over UDP, TCP or DoT, closed loop (-q) or open loop (--rate).
    Dns(Box<DnsArgs>),
    /// Measure responsiveness under working conditions (RPM, as Apple's networkQuality and
    /// Cloudflare's mach do) against any server that publishes the configuration, a
    /// `wirespeed web` among them: idle and loaded latency, throughput, a bufferbloat grade.
    Rpm(Box<RpmArgs>),
    /// Run every test kind against a server started in-process on loopback, and print one table.
    Quick(QuickArgs),
    /// List saved runs, newest first, filtered by kind, target, tag or time.
    History(HistoryArgs),
    /// Print a saved run as if it had just run, in any format, and optionally chart it.
    Show(ShowArgs),
    /// Write saved runs out as JSON, CSV, Markdown or a self-contained HTML report.
    Export(ExportArgs),
    /// Compare saved runs side by side: ratios to the first with confidence intervals and verdicts.
    Compare(CompareArgs),
    /// Print what runs a test as a run of members elsewhere: a Kubernetes Indexed Job.
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Merge the reports of a run's members (--members) into the run's one report: totals
    /// summed, percentiles from the summed histograms, the start skew stated.
    Merge(Box<MergeArgs>),
    /// Delete saved runs, by id or by count and age.
    Rm(RmArgs),
    /// Show or set how many saved runs to keep, and for how long.
    Retention(RetentionArgs),
    /// Run a scenario file (systems × workloads, TOML): side-by-side studies, or show its matrix.
    Bench(BenchArgs),
    /// Render study pages from their templates and kept data (every figure drawn from a
    /// table), or check that the pages are what they render.
    Publish(PublishArgs),
    /// Print a shell's completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per subcommand into a directory.
    Man(ManArgs),
    /// A study's role on this host, as `wirespeed bench` asks for it over ssh: start, probe
    /// and sample a process (or pass a load's report through) until standard input closes.
    #[command(hide = true)]
    Role(RoleArgs),
    /// Run another tool's client as a scenario's workload (`ethr …`) and print what it measured
    /// as a wirespeed report (JSON): the load of a system whose `client` is that tool, on a
    /// study's host.
    #[command(hide = true)]
    Peer(PeerArgs),
}

/// `wirespeed completions`.
#[derive(Debug, Args)]
#[command(after_help = "Install, for example:\n  \
    wirespeed completions bash > /etc/bash_completion.d/wirespeed\n  \
    wirespeed completions zsh > \"${fpath[1]}/_wirespeed\"\n  \
    wirespeed completions fish > ~/.config/fish/completions/wirespeed.fish")]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `wirespeed publish`.
#[derive(Debug, Args)]
#[command(
    after_help = "A template is Markdown whose figures are placeholders naming cells of kept \
    CSV tables ({{ ours[tcp-upload/direct].median | rate:2 }}); its prose may carry no figure \
    of its own. A template in DIR/templates/NAME.md renders to DIR/NAME.md, its tables' paths \
    taken from DIR. The syntax and the formats: docs/studies/README.md.\n\n\
    Examples:\n  \
    wirespeed publish docs/studies/templates/*.md\n  \
    wirespeed publish --check docs/studies/templates/*.md"
)]
pub(crate) struct PublishArgs {
    /// The templates (each in a `templates/` folder beside the page it renders).
    #[arg(required = true, value_name = "TEMPLATE")]
    pub templates: Vec<PathBuf>,
    /// Write nothing: exit 14 when a page differs from what its template and data render, or
    /// is missing, naming the first line that differs.
    #[arg(long)]
    pub check: bool,
}

/// `wirespeed man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write wirespeed.1 and a wirespeed-SUBCOMMAND.1 for each subcommand here instead of
    /// printing wirespeed.1 (`man -l wirespeed.1` reads one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `wirespeed role` (internal: the runner's side of a host).
#[derive(Debug, Args)]
pub(crate) struct RoleArgs {
    /// The role as JSON (runner::role::RoleSpec).
    #[arg(long, value_name = "JSON", conflicts_with_all = ["load", "probe"])]
    pub spec: Option<String>,
    /// Try a readiness probe (a scenario's `ready` table as JSON) once: exit 0 when it
    /// answers, 1 when not (a Kubernetes exec probe).
    #[arg(long, value_name = "JSON", conflicts_with = "load")]
    pub probe: Option<String>,
    /// Run ARGV as a load: its output passed through, interrupted when standard input closes.
    #[arg(long, requires = "argv")]
    pub load: bool,
    /// The load's command line.
    #[arg(last = true, value_name = "ARGV")]
    pub argv: Vec<String>,
}

/// `wirespeed peer` (internal: a peer's client as a workload).
#[derive(Debug, Args)]
pub(crate) struct PeerArgs {
    /// Leading time its summary leaves out (the workload's warm-up; ethr's client).
    #[arg(long, value_name = "DURATION")]
    pub omit: Option<String>,
    /// Which described client it is (`wirespeed bench --clients`); ethr's when absent.
    #[arg(long, value_name = "NAME", requires = "like")]
    pub client: Option<String>,
    /// Our own command line for the same workload, as a JSON list of words: its spec is the
    /// report's.
    #[arg(long, value_name = "JSON", requires = "client")]
    pub like: Option<String>,
    /// With `--client wirespeed`: the command is run as this many members of one run, whose
    /// reports are merged.
    #[arg(long, value_name = "N", requires = "client")]
    pub members: Option<u16>,
    /// Output format: json, the only one (the runner reads it).
    #[arg(short = 'f', long, default_value = "json", value_parser = ["json"])]
    pub format: String,
    /// The peer's command line (`ethr -c HOST -port PORT -t b …`, `iperf3 -c HOST …`).
    #[arg(last = true, required = true, value_name = "ARGV")]
    pub argv: Vec<String>,
}

/// `wirespeed k8s`.
#[derive(Debug, Subcommand)]
pub(crate) enum K8sCommand {
    /// Print an Indexed Job that runs `wirespeed KIND ARGS…` as N members, one per node, for
    /// `kubectl apply -f -`; then `kubectl wait --for=condition=complete job/NAME` and
    /// `wirespeed merge --run-id ID`.
    Job(Box<K8sJobArgs>),
}

/// `wirespeed k8s job`.
#[derive(Debug, Args)]
pub(crate) struct K8sJobArgs {
    /// Members: the Job's completions and parallelism, one pod (and one node) each.
    #[arg(long, value_name = "N")]
    pub members: u32,
    /// The image with wirespeed in it (the repository's Dockerfile builds one).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The run's id, in every member's arguments [default: made from the time and random bits].
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// The Job's name [default: wirespeed-RUN-ID, cut to a valid name].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The Kubernetes namespace.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The Secret holding the PostgreSQL URL the members meet at and save to, as NAME or
    /// NAME:KEY (key `url` by default). Without it, give --start-at in the test's arguments.
    #[arg(long, value_name = "NAME[:KEY]")]
    pub db_secret: Option<String>,
    /// Only nodes with this label (repeatable): KEY=VALUE.
    #[arg(long = "node-selector", value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// CPU and memory each member asks for (requests = limits): for example 2 and 1Gi.
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,
    /// Memory each member asks for.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// The test each member runs: KIND and its arguments, as after `wirespeed`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "KIND ARGS"
    )]
    pub test: Vec<String>,
}

/// `wirespeed merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// Members' reports: JSON (`-f json` output, or one a member kept when the database failed)
    /// and SQLite results files. Without any, the members of --run-id are read from --db.
    #[arg(value_name = "FILE")]
    pub sources: Vec<PathBuf>,
    /// The run to merge: needed to read it from a database, or from files holding several.
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Merge a run with members missing, or one that was aborted; the result says it is
    /// partial.
    #[arg(long)]
    pub allow_partial: bool,
    /// Output, and where the merged run is saved (and, without files, read from).
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `wirespeed bench`.
#[derive(Debug, Clone, Args)]
pub(crate) struct BenchArgs {
    /// The scenario file; or a directory, whose scenario files all run in name order (each
    /// into --out/NAME), then one table of every comparison with another tool's client
    /// (`wirespeed bench benches/`).
    #[arg(
        value_name = "SCENARIO.toml|DIR",
        required_unless_present_any = ["schema", "clients", "tabulate"]
    )]
    pub scenario: Option<PathBuf>,
    /// Print the one table of a finished `bench DIR` run kept in this directory (and write it
    /// there as performance.md and ratios.csv), running nothing.
    #[arg(long, value_name = "RESULTS")]
    pub tabulate: Option<PathBuf>,
    /// List the systems, workloads and runs the scenario expands into.
    #[arg(long)]
    pub list: bool,
    /// As --list, plus every process's and workload's command line.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the JSON schema of scenario files.
    #[arg(long)]
    pub schema: bool,
    /// List the other tools' clients a system can make its load with (`client = "NAME"`),
    /// and the options each takes.
    #[arg(long)]
    pub clients: bool,
    /// Where each run's report, samples, config files and logs go (default: bench-results/NAME).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Skip the runs that finished before (their report is in --out), and run the rest.
    #[arg(long)]
    pub resume: bool,
    /// Check that the scenario runs, not measure: one repeat, no warm-up or cool-down, each
    /// load 0.5 s, each sweep cut to its first, middle and last value.
    #[arg(long)]
    pub smoke: bool,
    /// Run only the systems whose names match one of these patterns (`*` any characters;
    /// several separated by commas), their runs as the file orders them: a study of part of a
    /// scenario without a copy of its file (`--systems 'direct,gost-*quic,gost-*kcp'`).
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub systems: Vec<String>,
    /// Run only the workloads whose names match one of these patterns (a swept workload's
    /// cells are named `NAME[VAR=VALUE]`: `h3-latency*` keeps them all).
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Run each cell this many times, whatever the file's `repeat` says (a study the source
    /// ran once, as it ran it).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// The path between the hosts, whatever the file's [network] says: conditions as
    /// KEY=VALUE separated by commas (`delay=0.5ms,rate=1Gbit`), or `none` for a plain link
    /// (--hosts netns).
    #[arg(long, value_name = "CONDITIONS")]
    pub network: Option<String>,
    /// Where the [[host]]s are, whatever the file says: local (all on this machine), netns
    /// (network namespaces on this machine, with emulated links; needs root) or ssh.
    #[arg(long, value_name = "MODE", value_parser = ["local", "netns", "ssh"])]
    pub hosts: Option<String>,
    /// The ssh client configuration for hosts = "ssh" (given to ssh as -F; default: yours,
    /// ~/.ssh/config).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Write the study as an Ansible playbook and inventory into DIR instead of running it
    /// (ssh hosts); `ansible-playbook -i DIR/inventory.ini DIR/study.yml` runs it, and
    /// `bench FILE --resume --out DIR/results` summarizes what it kept.
    #[arg(long, value_name = "DIR", conflicts_with = "k8s")]
    pub ansible: Option<PathBuf>,
    /// Write the study as Kubernetes manifests into DIR instead of running it: per run, Pods
    /// and Services for the systems (placed by each host's labels) and an Indexed Job for the
    /// load, and DIR/run.sh to apply them in order.
    #[arg(long, value_name = "DIR", requires = "image")]
    pub k8s: Option<PathBuf>,
    /// --k8s: the image with wirespeed in it (fixtures, probes, the load, and systems without
    /// an `image` of their own).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// --k8s: the namespace of the objects (default: kubectl's current one).
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Results database for the finished runs: an SQLite file (default: the user's data
    /// directory) or a shared PostgreSQL one (postgres://USER@HOST/DB).
    #[arg(long, value_name = "PATH|URL", env = "WIRESPEED_DB")]
    pub db: Option<Location>,
    /// Do not save runs to the results database.
    #[arg(long)]
    pub no_save: bool,
}

/// Most hosts `--dns-hosts` may generate: memory grows with them (about 500 bytes each), and a
/// zone has to be built before the server listens.
pub(crate) const MAX_DNS_HOSTS: u32 = 1_000_000;

/// `wirespeed server`.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// Port for TCP and UDP.
    #[arg(short, long, default_value_t = 5201)]
    pub port: u16,
    /// Address to listen on (repeatable). Default: every address, IPv4 and IPv6.
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Vec<std::net::IpAddr>,
    /// Most tests running at once; further clients are told the server is busy.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub max_tests: usize,
    /// Longest test allowed, warm-up included (e.g. 60, 10m); byte-count tests are cut off here. 0: no limit.
    #[arg(long, default_value = "24h", value_name = "DURATION")]
    pub max_duration: String,
    /// Most a single test may move, all streams and directions together (e.g. 1G). Faster requests are paced down. 0: no limit.
    #[arg(long, default_value = "0", value_name = "RATE")]
    pub max_bitrate: String,
    /// Require clients to prove they know this secret (HMAC challenge; the secret never crosses the network).
    #[arg(long, env = "WIRESPEED_TOKEN", hide_env_values = true, value_name = "SECRET")]
    pub token: Option<String>,
    /// Only serve clients from this network (repeatable), e.g. 192.0.2.0/24 or ::1/128.
    #[arg(long, value_name = "CIDR")]
    pub allow: Vec<ipnet::IpNet>,
    /// How long a connection may stay silent before its test starts.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub idle_timeout: String,
    /// Also serve the HTTP fixture on this TCP port (HTTP/1.1 and h2c): fixed bodies, and ?size=1M, ?status=503, ?delay=10ms. A request head must start within 20 s of connecting (or of the last answer) and end within 20 s more.
    #[arg(long, value_name = "PORT")]
    pub http: Option<u16>,
    /// Body size the HTTP fixture answers with when the request does not ask (615B is nginx's welcome page).
    #[arg(long, default_value = "615B", value_name = "SIZE", requires = "http")]
    pub http_body: String,
    /// The HTTP fixture serves HTTP/3 too, on the same port number over UDP, and names it in
    /// every TCP answer's Alt-Svc: with --tls-cert and --tls-key, or a certificate made at
    /// start (its SHA-256 is logged; clients need --insecure).
    #[arg(long, requires = "http")]
    pub h3: bool,
    /// Also serve the DNS fixture on this port (UDP and TCP): an authoritative server for
    /// --zone, or for a generated example.test (www, hostN, a large TXT at big).
    #[arg(long, value_name = "PORT")]
    pub dns: Option<u16>,
    /// The zone file the DNS fixture serves: an RFC 1035 master file, any record type, with
    /// $ORIGIN, $TTL and $INCLUDE (paths relative to the file that includes them).
    #[arg(long, value_name = "FILE", requires = "dns", conflicts_with = "dns_hosts")]
    pub zone: Option<PathBuf>,
    /// The zone's apex when the file has no $ORIGIN.
    #[arg(long, value_name = "NAME", requires = "zone")]
    pub zone_origin: Option<String>,
    /// Hosts in the generated zone (host1 … hostN.example.test, each an A record); at most
    /// 1000000. Each costs about 500 bytes of memory (1000000 take about 500 MB) and is built
    /// before the server listens.
    #[arg(long, default_value_t = 1000, value_name = "N", requires = "dns",
          value_parser = clap::value_parser!(u32).range(0..=MAX_DNS_HOSTS as i64))]
    pub dns_hosts: u32,
    /// UDP threads of the DNS fixture (each a socket of one SO_REUSEPORT group).
    #[arg(long, default_value_t = 1, value_name = "N", requires = "dns")]
    pub dns_threads: usize,
    /// Also serve the DNS fixture's zone encrypted on this port, with --tls-cert and
    /// --tls-key: DNS over QUIC and DNS over HTTPS on HTTP/3 on UDP, DNS over HTTPS
    /// (/dns-query, HTTP/2 and HTTP/1.1) on TCP.
    #[arg(long, value_name = "PORT", requires_all = ["dns", "tls_cert"])]
    pub dns_secure: Option<u16>,
    /// Also serve the browser speed test on this TCP port (as `wirespeed web` does).
    #[arg(long, value_name = "PORT")]
    pub web: Option<u16>,
    /// Serve Prometheus metrics at http://ADDR/metrics (tests, refusals, bytes, connections,
    /// process CPU and memory), e.g. 127.0.0.1:9464. Anyone who reaches ADDR can read them:
    /// bind it where only your monitoring does.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// The speed test's settings (with --web).
    #[command(flatten)]
    pub web_options: WebOptions,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// Tables for people.
    Text,
    /// One JSON document when the test ends.
    Json,
    /// One JSON object per event while the test runs (NDJSON).
    JsonStream,
    /// Comma-separated rows.
    Csv,
    /// One document in iperf3's -J schema, for tools that parse iperf3 output.
    #[value(name = "iperf3-json")]
    Iperf3Json,
    /// A Markdown document when the test ends: facts, key figures, intervals, options.
    #[value(alias = "markdown")]
    Md,
    /// A self-contained HTML page when the test ends: tables and interactive charts.
    Html,
    /// http only: one vegeta JSON result line per request on stdout (for `vegeta report` and
    /// `vegeta plot`); the text report goes to stderr.
    Vegeta,
}

impl FormatArg {
    /// Whether a run of `kind` (`None`: `quick`'s runs of every kind) can be rendered in this
    /// format: iperf3's -J schema has bandwidth runs only, and vegeta's lines are per HTTP
    /// request.
    fn renders(self, kind: Option<TestKind>) -> bool {
        match self {
            FormatArg::Iperf3Json => matches!(kind, Some(TestKind::Bandwidth | TestKind::Pps)),
            FormatArg::Vegeta => kind == Some(TestKind::Http),
            FormatArg::Text
            | FormatArg::Json
            | FormatArg::JsonStream
            | FormatArg::Csv
            | FormatArg::Md
            | FormatArg::Html => true,
        }
    }
}

/// The command line, with each test's `--format` offering (in `--help` and when parsing) only
/// the formats that test can render.
pub(crate) fn command() -> clap::Command {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    use clap::CommandFactory;
    let mut cli = Cli::command();
    // Every test subcommand takes `--format`, and `quick`.
    let formatted = TestKind::ALL.iter().map(|&k| (k.name(), Some(k))).chain([("quick", None)]);
    for (name, kind) in formatted {
        let formats: Vec<_> = FormatArg::value_variants()
            .iter()
            .filter(|f| f.renders(kind))
            .filter_map(ValueEnum::to_possible_value)
            .collect();
        let parser = PossibleValuesParser::new(formats)
            .map(|s| FormatArg::from_str(&s, true).unwrap_or(FormatArg::Text));
        cli = cli.mut_subcommand(name, |c| c.mut_arg("format", |a| a.value_parser(parser)));
    }
    cli
}

/// Parses `words` (the program's name first) as [`command`] describes them: the binary's own
/// arguments, and a scenario workload's command line alike.
pub(crate) fn parse_from<I, T>(words: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    command().try_get_matches_from(words).and_then(|m| Cli::from_arg_matches(&m))
}

/// Where results go: shared by every test subcommand.
#[derive(Debug, Clone, Args)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Results database: an SQLite file (default: the user's data directory,
    /// wirespeed/results.db) or a shared PostgreSQL one (postgres://USER@HOST/DB).
    #[arg(long, value_name = "PATH|URL", env = "WIRESPEED_DB")]
    pub db: Option<Location>,
    /// Do not save the results.
    #[arg(long)]
    pub no_save: bool,
    /// A free-text tag stored with the results, for finding them later.
    #[arg(long)]
    pub tag: Option<String>,
    /// Also draw the run's charts into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// No live panel on the terminal while the test runs.
    #[arg(long)]
    pub quiet: bool,
}

/// `wirespeed bandwidth`.
#[derive(Debug, Args)]
pub(crate) struct BandwidthArgs {
    /// Server to test against: HOST, HOST:PORT, or [IPV6]:PORT.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: String,
    /// Use UDP instead of TCP.
    #[arg(short, long)]
    pub udp: bool,
    /// Use QUIC instead of TCP: a QUIC connection (TLS 1.3, quinn) per stream, its data on one
    /// QUIC stream; per interval the connection's own RTT, congestion window and lost packets.
    #[arg(long, conflicts_with_all = ["udp", "iperf3", "zerocopy", "mss", "no_delay"])]
    pub quic: bool,
    /// With --quic: streams per connection (1-64), each carrying its turn of the writes.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "quic")]
    pub quic_streams: u16,
    /// Parallel streams per direction (1-128); with --quic, connections.
    #[arg(short = 'P', long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_PARALLEL)))]
    pub parallel: u16,
    /// How long to send, after the warm-up (e.g. 10, 30s, 2m).
    #[arg(short, long, default_value = "10", value_name = "DURATION")]
    pub time: String,
    /// Send this many bytes per direction (e.g. 1G) instead of for a time.
    #[arg(short = 'n', long, value_name = "SIZE")]
    pub bytes: Option<String>,
    /// Reverse: the server sends and the client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Send in both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Target rate per stream, e.g. 100M or 1G (bit/s, decimal). 0: unlimited. Default: unlimited for TCP, 1M for UDP.
    #[arg(short, long, value_name = "RATE")]
    pub bitrate: Option<String>,
    /// Bytes per write (TCP and QUIC, default 128K) or per datagram (UDP, default 1400).
    #[arg(short, long, value_name = "SIZE")]
    pub length: Option<String>,
    /// Warm-up to leave out of the summary (e.g. 2).
    #[arg(short = 'O', long, default_value = "0", value_name = "DURATION")]
    pub omit: String,
    /// Report interval (0.1 s to 60 s).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// Socket buffer size (SO_SNDBUF/SO_RCVBUF), both ends.
    #[arg(short, long, value_name = "SIZE")]
    pub window: Option<String>,
    /// Congestion control, both ends: the kernel's for TCP (e.g. cubic, bbr); with --quic,
    /// quinn's newreno, cubic (its default) or bbr.
    #[arg(short = 'C', long, value_name = "ALGO")]
    pub congestion: Option<String>,
    /// TCP maximum segment size.
    #[arg(short = 'M', long = "mss", value_name = "BYTES")]
    pub mss: Option<u32>,
    /// Disable Nagle's algorithm (TCP_NODELAY).
    #[arg(short = 'N', long)]
    pub no_delay: bool,
    /// DSCP to mark packets with: 0-63 or a name (ef, af11..af43, cs0..cs7).
    #[arg(long, value_name = "DSCP")]
    pub dscp: Option<String>,
    /// Send TCP data with sendfile() instead of write(): one copy fewer on the sender.
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
    /// Also probe the path's round trip (a TCP handshake with the server's port on a new
    /// connection) 10 times before the test and every 100 ms during it: idle against loaded
    /// latency per interval and in the summary, so a bufferbloated path shows in one run.
    #[arg(long, conflicts_with = "iperf3")]
    pub latency: bool,
    /// The server is a stock `iperf3 -s`: speak iperf3's protocol (same options, same report).
    #[arg(long)]
    pub iperf3: bool,
    /// Where the server is and how to reach it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Taking part in a run of several members.
    #[command(flatten)]
    pub member: MemberArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How a client reaches the server: shared by every test that talks to one.
#[derive(Debug, Args)]
pub(crate) struct ConnectArgs {
    /// Server port (overrides a port in the target).
    #[arg(short, long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Use IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Local address to send from.
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Secret for a server started with --token.
    #[arg(long, env = "WIRESPEED_TOKEN", hide_env_values = true, value_name = "SECRET")]
    pub token: Option<String>,
    /// How long connecting may take.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub connect_timeout: String,
}

/// `wirespeed latency`.
#[derive(Debug, Args)]
pub(crate) struct LatencyArgs {
    /// Server to test against: HOST, HOST:PORT, or [IPV6]:PORT.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: String,
    /// Use UDP request/response instead of TCP.
    #[arg(short, long)]
    pub udp: bool,
    /// Use QUIC instead of TCP: a QUIC connection per -P, messages echoed on one QUIC stream.
    #[arg(long, conflicts_with_all = ["udp", "external"])]
    pub quic: bool,
    /// Bytes per message (1 to 65507).
    #[arg(short, long, default_value = "16", value_name = "SIZE")]
    pub length: String,
    /// Stop after this many round trips (all connections together) instead of after a time.
    #[arg(short = 'n', long, value_name = "COUNT")]
    pub count: Option<u64>,
    /// How long to measure, after the warm-up.
    #[arg(short, long, default_value = "10", value_name = "DURATION")]
    pub time: String,
    /// Connections (or UDP sockets), each with one message in flight.
    #[arg(short = 'P', long, default_value_t = 1, value_name = "N")]
    pub parallel: u16,
    /// Warm-up to leave out of the summary (ends at the next interval boundary).
    #[arg(short = 'O', long = "warmup", default_value = "0", value_name = "DURATION")]
    pub warmup: String,
    /// Send on a fixed schedule: messages per second per connection (latency from the scheduled send time).
    #[arg(long, value_name = "RATE")]
    pub rate: Option<f64>,
    /// Report interval (0.1 s to 60 s).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// UDP: how long an answer may take before the message counts as lost.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub timeout: String,
    /// Poll for each answer without sleeping (like sockperf), and have a wirespeed server poll its echoes too: leaves out the wake-up time, costs a CPU per connection on each side.
    #[arg(long)]
    pub busy_poll: bool,
    /// Measure against any echo service (RFC 862 echo, socat, an echo behind a proxy) instead of a wirespeed server; needs a port.
    #[arg(short = 'x', long)]
    pub external: bool,
    /// Where the server is and how to reach it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Taking part in a run of several members.
    #[command(flatten)]
    pub member: MemberArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `wirespeed cps`.
#[derive(Debug, Args)]
pub(crate) struct CpsArgs {
    /// Target: HOST, HOST:PORT, or [IPV6]:PORT (a wirespeed server, or any listener with --external).
    #[arg(value_name = "HOST[:PORT]")]
    pub target: String,
    /// Connect to any TCP listener (nginx, a database, a proxy) instead of a wirespeed server; needs a port.
    #[arg(short = 'x', long)]
    pub external: bool,
    /// Connections in flight at once (1-1024); each is closed as soon as it connects and replaced.
    #[arg(short = 'P', long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_CONNECTORS)))]
    pub parallel: u16,
    /// Threads sharing those connections (1-64, at most -P), each with its own epoll loop.
    #[arg(short = 'T', long, default_value_t = 1, value_name = "N")]
    pub threads: u16,
    /// Stop after this many attempts (all connectors together) instead of after a time.
    #[arg(short = 'n', long, value_name = "COUNT")]
    pub count: Option<u64>,
    /// How long to measure, after the warm-up.
    #[arg(short, long, default_value = "10", value_name = "DURATION")]
    pub time: String,
    /// Warm-up to leave out of the summary (ends at the next interval boundary).
    #[arg(short = 'O', long = "warmup", default_value = "0", value_name = "DURATION")]
    pub warmup: String,
    /// Report interval (0.1 s to 60 s).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// How long one connection attempt may take before it counts as timed out.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub timeout: String,
    /// Close each connection with a reset instead of a FIN, so no socket waits in TIME_WAIT.
    #[arg(long)]
    pub rst: bool,
    /// Where the target is and how to reach it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Taking part in a run of several members.
    #[command(flatten)]
    pub member: MemberArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// ICMP socket choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum IcmpSocketArg {
    /// An unprivileged ping socket if this user's group may use one, else a raw socket.
    Auto,
    /// Only an unprivileged ping socket (net.ipv4.ping_group_range).
    Dgram,
    /// Only a raw socket (root or CAP_NET_RAW).
    Raw,
}

/// `wirespeed ping`.
#[derive(Debug, Args)]
pub(crate) struct PingArgs {
    /// Host to ping (for --udp: HOST[:PORT] of a wirespeed server). Not needed with --http.
    #[arg(value_name = "HOST", required_unless_present = "http")]
    pub target: Option<String>,
    /// Stop after this many probes (default: until Ctrl-C or -w).
    #[arg(short = 'c', long, value_name = "COUNT")]
    pub count: Option<u64>,
    /// Time between probes (at least 1 ms).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// How long to wait for each answer.
    #[arg(short = 'W', long, default_value = "1", value_name = "DURATION")]
    pub timeout: String,
    /// Stop after this long, whatever the count.
    #[arg(short = 'w', long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// Payload bytes of an ICMP or UDP probe.
    #[arg(short = 's', long, default_value_t = 56, value_name = "BYTES")]
    pub size: u32,
    /// Time a TCP handshake to this port instead of sending ICMP (like tcping).
    #[arg(long, value_name = "PORT", conflicts_with_all = ["udp", "http"])]
    pub tcp: Option<u16>,
    /// Have a wirespeed server echo UDP datagrams (port from HOST:PORT or -p, default 5201).
    #[arg(long, conflicts_with = "http")]
    pub udp: bool,
    /// GET this http:// URL on a new connection per probe and time the first byte of the answer.
    #[arg(long, value_name = "URL")]
    pub http: Option<String>,
    /// Which ICMP socket to use.
    #[arg(long, value_enum, default_value_t = IcmpSocketArg::Auto)]
    pub icmp_socket: IcmpSocketArg,
    /// Where the host is and how to reach it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which legs `wirespeed rpm` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RpmModeArg {
    /// Download under load, then upload under load (as mach and `networkQuality -s`).
    Sequential,
    /// Both at once, one responsiveness (networkQuality's default).
    Parallel,
    /// Download only.
    Download,
    /// Upload only.
    Upload,
}

/// `wirespeed rpm`.
#[derive(Debug, Args)]
pub(crate) struct RpmArgs {
    /// The responsiveness configuration's URL (what `networkQuality -C` and `mach rpm -c`
    /// take); a URL with no path means the server's /.well-known/nq. Not needed with
    /// --large, --small and --upload.
    #[arg(value_name = "URL", required_unless_present_all = ["large", "small", "upload"])]
    pub url: Option<String>,
    /// The large object downloads fetch (instead of the configuration's).
    #[arg(long, value_name = "URL", requires_all = ["small", "upload"], conflicts_with = "url")]
    pub large: Option<String>,
    /// The small object probes fetch.
    #[arg(long, value_name = "URL", requires_all = ["large", "upload"])]
    pub small: Option<String>,
    /// Where uploads go.
    #[arg(long, value_name = "URL", requires_all = ["large", "small"])]
    pub upload: Option<String>,
    /// Which legs run.
    #[arg(short = 'm', long, value_enum, default_value_t = RpmModeArg::Sequential)]
    pub mode: RpmModeArg,
    /// Longest a leg runs before it reports what it has (working conditions not reached).
    #[arg(short = 't', long, default_value = "20", value_name = "DURATION")]
    pub time: String,
    /// Most load-generating connections per direction.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub max_connections: u32,
    /// Interval of the algorithm (the draft's ID).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// Intervals in the moving averages (the draft's MAD).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub moving_average: u32,
    /// Largest variation of the last moving averages that counts as stable (the draft's SDT).
    #[arg(long, default_value = "5%", value_name = "PERCENT")]
    pub stability: String,
    /// Share of probes kept by the trimmed mean (the slowest are dropped).
    #[arg(long, default_value = "95%", value_name = "PERCENT")]
    pub trim: String,
    /// Most probes a second, self and foreign together (the draft's MPS).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub probe_rate: u32,
    /// Probes on new connections before any load, for the idle latency.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub idle_probes: u32,
    /// Follow a configuration whose URLs name another host than its own.
    #[arg(long)]
    pub allow_other_hosts: bool,
    /// https://: accept any server certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// https://: trust the certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https://: the name sent in SNI and verified, instead of the URL's host.
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Use IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// How long connecting (TCP and TLS) may take.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub connect_timeout: String,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `wirespeed http`.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// The URL to request: http://, https://, or with --unix-socket the path and Host to send.
    /// A user:password@ in it is sent as Basic credentials (as curl does) and shown as ***.
    #[arg(value_name = "URL", required_unless_present = "targets")]
    pub url: Option<String>,
    /// Closed model: connections, each with one request in flight (HTTP/2: see --streams).
    #[arg(short = 'c', long, default_value_t = 10, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_HTTP_CONNECTIONS)))]
    pub connections: u16,
    /// Open model: send R requests/s whatever the server does; latency counts from each
    /// request's scheduled time. A list (1,1000,2000) runs one step per rate and prints a
    /// latency-vs-rate table.
    #[arg(short = 'r', long, value_name = "R[,R...]")]
    pub rate: Option<String>,
    /// Open model: most connections to open; past it, requests wait for a free one and are
    /// counted late, or dropped after --timeout.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_connections: u16,
    /// Threads sharing the connections (each runs its own event loop).
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    pub threads: u16,
    /// How long to run (each step of a sweep), after the warm-up.
    #[arg(short = 'd', long, default_value = "10", value_name = "DURATION")]
    pub duration: String,
    /// Stop after this many requests (per step) instead of after a time.
    #[arg(short = 'n', long, value_name = "COUNT")]
    pub requests: Option<u64>,
    /// Warm-up left out of the summary (ends at the next interval boundary).
    #[arg(long, default_value = "0", value_name = "DURATION")]
    pub warmup: String,
    /// Report interval (0.1 s to 60 s).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// How long one request may take (connecting included).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub timeout: String,
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET", value_name = "METHOD")]
    pub method: String,
    /// A request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body: text, or @FILE to send a file's bytes.
    #[arg(long, value_name = "BODY")]
    pub body: Option<String>,
    /// Requests from a targets file in vegeta's format, sent round-robin (all to one origin).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["body", "method"])]
    pub targets: Option<PathBuf>,
    /// The targets file's format.
    #[arg(long, value_enum, default_value_t = TargetsFormatArg::Http, requires = "targets")]
    pub targets_format: TargetsFormatArg,
    /// Open a new connection for every request instead of reusing them.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Follow up to N redirects on the same connection (same origin only). Default: a 3xx
    /// is the answer.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub redirects: u8,
    /// HTTP/2: prior knowledge on http:// (h2c), ALPN h2 on https://.
    #[arg(long)]
    pub h2: bool,
    /// HTTP/3 over QUIC (https:// only): UDP to the URL's port, ALPN h3.
    #[arg(long, conflicts_with_all = ["h2", "unix_socket", "redirects"])]
    pub h3: bool,
    /// With --h3: find the server's HTTP/3 in the Alt-Svc of one answer over TCP (as a
    /// browser does) instead of assuming the URL's port.
    #[arg(long, requires = "h3")]
    pub alt_svc: bool,
    /// With --h3: resume each new connection with a session ticket from an earlier one and
    /// send its first request in 0-RTT (early data), where the server allows it; with
    /// --no-keepalive every request after the first can.
    #[arg(long = "0rtt", requires = "h3")]
    pub zero_rtt: bool,
    /// HTTP/2 and HTTP/3 closed model: requests in flight on each connection.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub streams: u16,
    /// https://: accept any server certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// https://: trust the certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https://: client certificate chain (PEM), with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// https://: the client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// https://: the name sent in SNI and verified, instead of the URL's host.
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Connect to this unix socket instead of the URL's host.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["ipv4", "ipv6"])]
    pub unix_socket: Option<String>,
    /// Use IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Taking part in a run of several members.
    #[command(flatten)]
    pub member: MemberArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `wirespeed dns`: dnsperf's options, with its letters.
#[derive(Debug, Args)]
pub(crate) struct DnsArgs {
    /// The server to load.
    #[arg(short = 's', long, default_value = "127.0.0.1", value_name = "HOST")]
    pub server: String,
    /// Its port (default 53, or 853 with --dot and --doq).
    #[arg(short = 'p', long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Queries, one "NAME TYPE" a line (dnsperf's datafile; ';' and '#' start comments; a NAME
    /// alone asks for its A record, as dnspyre's lists); '-' reads standard input. Default:
    /// queries for the fixture's generated zone.
    #[arg(short = 'd', long, value_name = "FILE")]
    pub datafile: Option<PathBuf>,
    /// Clients: UDP sockets, or TCP/DoT connections (1-4096).
    #[arg(short = 'c', long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_DNS_CLIENTS)))]
    pub clients: u16,
    /// Threads sharing the clients.
    #[arg(short = 'T', long, default_value_t = 1, value_name = "N")]
    pub threads: u16,
    /// Closed loop: most queries in flight, all clients together.
    #[arg(short = 'q', long, default_value_t = 100, value_name = "N")]
    pub max_outstanding: u32,
    /// Closed loop: at most this many queries per second (e.g. 50000, 50k).
    #[arg(short = 'Q', long, value_name = "QPS")]
    pub max_qps: Option<String>,
    /// Open loop: send this many queries per second whatever the server does (e.g. 100k);
    /// a query unanswered within -t is lost, and nothing waits for it.
    #[arg(long, value_name = "QPS", conflicts_with = "max_qps")]
    pub rate: Option<String>,
    /// Stop sending after this long (e.g. 60, 30s); then wait up to -t for the answers.
    #[arg(short = 'l', long, value_name = "DURATION")]
    pub time_limit: Option<String>,
    /// Runs through the datafile (one when neither -n nor -l is given).
    #[arg(short = 'n', long, value_name = "N")]
    pub passes: Option<u64>,
    /// How long a query may wait for its answer before it counts as lost.
    #[arg(short = 't', long, default_value = "5", value_name = "DURATION")]
    pub timeout: String,
    /// Report interval (dnsperf's -S), 0.1 s to 60 s.
    #[arg(short = 'S', long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// Add an EDNS0 OPT record (UDP size 4096, as dnsperf).
    #[arg(short = 'e', long)]
    pub edns: bool,
    /// Add an EDNS0 OPT record advertising this UDP size (e.g. 1232).
    #[arg(long, value_name = "BYTES")]
    pub edns_size: Option<u16>,
    /// Set the DO bit (DNSSEC OK); implies EDNS.
    #[arg(short = 'D', long)]
    pub dnssec: bool,
    /// Queries over TCP, pipelined on one connection per client.
    #[arg(long, conflicts_with_all = ["dot", "doq"])]
    pub tcp: bool,
    /// Queries over TLS (DNS over TLS, RFC 7858).
    #[arg(long, conflicts_with = "doq")]
    pub dot: bool,
    /// Queries over QUIC (DNS over QUIC, RFC 9250): a QUIC connection per client, each query
    /// on a stream of its own.
    #[arg(long, conflicts_with = "doh")]
    pub doq: bool,
    /// Queries over HTTPS (DNS over HTTPS, RFC 8484) to this URL, such as
    /// `https://dns.example/dns-query` (it names the server, port and path): an HTTP/2
    /// connection per client, each query a request.
    #[arg(long, value_name = "URL", conflicts_with_all = ["tcp", "dot", "server", "port"])]
    pub doh: Option<String>,
    /// DoH: send each query as a POST body instead of GET's `dns` parameter.
    #[arg(long, requires = "doh")]
    pub doh_post: bool,
    /// DoH over HTTP/3 (QUIC, UDP to the URL's port) instead of HTTP/2.
    #[arg(long, requires = "doh")]
    pub doh_h3: bool,
    /// Ask truncated (TC=1) UDP answers again over TCP, as a resolver would.
    #[arg(long, conflicts_with_all = ["tcp", "dot", "doq", "doh"])]
    pub tc_retry: bool,
    /// DoT, DoQ and DoH: accept any server certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// DoT, DoQ and DoH: trust the certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// DoT, DoQ and DoH: the name sent in SNI and verified (default: the server's name).
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// TCP, DoT, DoQ and DoH: how long connecting may take.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub connect_timeout: String,
    /// Use IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Taking part in a run of several members.
    #[command(flatten)]
    pub member: MemberArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// vegeta's targets formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TargetsFormatArg {
    /// "METHOD URL" lines, header lines, an optional @body line; a blank line between targets.
    Http,
    /// One JSON object per line: method, url, header, body (base64).
    Json,
}

/// Trace probe protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TraceProtoArg {
    /// ICMP echo requests (like traceroute -I, and mtr).
    Icmp,
    /// UDP datagrams to high ports (traceroute's default).
    Udp,
    /// TCP SYNs to --port (like traceroute -T / tcptraceroute): passes firewalls that allow the port.
    Tcp,
}

/// `wirespeed trace`.
#[derive(Debug, Args)]
pub(crate) struct TraceArgs {
    /// Host to trace.
    #[arg(value_name = "HOST")]
    pub target: String,
    /// Probe protocol.
    #[arg(long = "proto", value_enum, default_value_t = TraceProtoArg::Icmp)]
    pub protocol: TraceProtoArg,
    /// Destination port: TCP's (default 80), or UDP's first (default 33434; each probe takes the next).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Highest TTL to probe.
    #[arg(short = 'm', long, default_value_t = 30, value_name = "HOPS")]
    pub max_hops: u8,
    /// TTL to start at.
    #[arg(long, default_value_t = 1, value_name = "TTL")]
    pub first_ttl: u8,
    /// Probes per hop (classic mode).
    #[arg(short = 'q', long, default_value_t = 3, value_name = "N")]
    pub queries: u32,
    /// How long to wait for a round's answers.
    #[arg(short = 'W', long, default_value = "1", value_name = "DURATION")]
    pub wait: String,
    /// mtr mode: a round every --interval until -c rounds or Ctrl-C, the table refreshed in place on a terminal.
    #[arg(long)]
    pub mtr: bool,
    /// mtr mode: stop after this many rounds.
    #[arg(short = 'c', long, value_name = "ROUNDS", requires = "mtr")]
    pub count: Option<u32>,
    /// mtr mode: time between rounds.
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// Use IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Local address to send from.
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `wirespeed pps`.
#[derive(Debug, Args)]
pub(crate) struct PpsArgs {
    /// Server to test against: HOST, HOST:PORT, or [IPV6]:PORT.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: String,
    /// Bytes per datagram (16 to 65507; the first 16 carry the sequence number and send time).
    #[arg(short, long, default_value = "64", value_name = "SIZE")]
    pub length: String,
    /// How long to send, after the warm-up.
    #[arg(short, long, default_value = "10", value_name = "DURATION")]
    pub time: String,
    /// Sockets (streams), each with its own sending and receiving thread.
    #[arg(short = 'P', long, default_value_t = 1, value_name = "N")]
    pub parallel: u16,
    /// Reverse: the server sends and the client receives.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Datagrams per second per socket (e.g. 100k); unlimited when not given.
    #[arg(long, value_name = "PPS")]
    pub rate: Option<String>,
    /// Warm-up to leave out of the summary.
    #[arg(short = 'O', long, default_value = "0", value_name = "DURATION")]
    pub omit: String,
    /// Report interval (0.1 s to 60 s).
    #[arg(short, long, default_value = "1", value_name = "DURATION")]
    pub interval: String,
    /// Where the server is and how to reach it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Taking part in a run of several members.
    #[command(flatten)]
    pub member: MemberArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `wirespeed quick`.
#[derive(Debug, Args)]
pub(crate) struct QuickArgs {
    /// How long each test runs.
    #[arg(short, long, default_value = "2", value_name = "DURATION")]
    pub time: String,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn iperf3_style_flags_parse() {
        let cli = Cli::try_parse_from([
            "wirespeed",
            "bw",
            "host:5202",
            "-u",
            "-P",
            "4",
            "-t",
            "5",
            "-R",
            "-b",
            "1G",
            "-l",
            "1400",
            "-O",
            "1",
            "-i",
            "0.5",
            "-w",
            "4M",
            "-C",
            "bbr",
            "-M",
            "1400",
            "-N",
            "-4",
            "-B",
            "127.0.0.1",
            "--dscp",
            "ef",
            "--format",
            "json",
        ])
        .unwrap();
        let Command::Bandwidth(b) = cli.command else { panic!("not bandwidth") };
        assert!(b.udp && b.reverse && b.no_delay && b.connect.ipv4);
        assert_eq!(b.parallel, 4);
        assert_eq!(b.output.format, FormatArg::Json);
    }

    #[test]
    fn reverse_and_bidir_conflict() {
        assert!(Cli::try_parse_from(["wirespeed", "bw", "h", "-R", "--bidir"]).is_err());
        assert!(Cli::try_parse_from(["wirespeed", "bw", "h", "-4", "-6"]).is_err());
    }
}
