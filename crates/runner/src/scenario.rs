//! A scenario file as written: the TOML tables of a side-by-side study. `fixture`s are the
//! built-in backends (`wirespeed server` listeners), `system`s the processes under test,
//! `matrix` the axes that expand systems, `workload`s the loads (any wirespeed test kind with
//! its options; a list of values is a sweep), `check`s the pass/fail rules, `report` the
//! baseline. Unknown keys are refused, with the line they are on, except among a workload's
//! options, which the test kind's own flags check.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What the study is.
    pub scenario: About,
    /// Repeats, warm-up and run order.
    #[serde(default)]
    pub run: RunSettings,
    /// Process sampling.
    #[serde(default)]
    pub sample: SampleSettings,
    /// Built-in backends the systems forward to.
    #[serde(default)]
    pub fixture: Vec<Fixture>,
    /// The hosts roles and loads are placed on; none: everything runs on this machine.
    #[serde(default)]
    pub host: Vec<Host>,
    /// Emulated paths between pairs of hosts (`hosts = "netns"`).
    #[serde(default)]
    pub link: Vec<Link>,
    /// The path between every pair of hosts that has no `[[link]]` of its own.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub network: Option<Conditions>,
    /// Systems under test.
    #[serde(default)]
    pub system: Vec<System>,
    /// Axes that expand systems: `[matrix.NAME] values = [...]`.
    #[serde(default)]
    pub matrix: BTreeMap<String, Axis>,
    /// Loads run against every system.
    #[serde(default)]
    pub workload: Vec<Workload>,
    /// Rules each result must meet (`p99 < 5ms`); a failure gives its own exit code.
    #[serde(default)]
    pub check: Vec<Check>,
    /// How results are reported.
    #[serde(default)]
    pub report: ReportSettings,
}

/// The scenario's name and description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct About {
    /// Short name, used for the report directory.
    pub name: String,
    /// What is being compared, for the report.
    #[serde(default)]
    pub description: Option<String>,
}

/// The order cells run in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Each repeat runs every cell once before the next repeat starts (A B A B), so drift on a
    /// shared machine falls on every system alike.
    #[default]
    Interleave,
    /// All repeats of a cell, then the next cell.
    Sequential,
    /// Like interleave, each repeat in a shuffled order (seeded by `seed`).
    Shuffle,
}

/// Repeats, warm-up and run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    /// Measured runs per cell.
    #[serde(default = "three")]
    pub repeat: u32,
    /// Load before each measured run, left out (e.g. `5s`).
    #[serde(default)]
    pub warmup: Option<String>,
    /// Pause after each run (e.g. `2s`).
    #[serde(default)]
    pub cooldown: Option<String>,
    /// Times a failed run is started again from its system up (0: never). For systems with
    /// known start-up faults of their own; a run that needed a retry says so in its report.
    #[serde(default)]
    pub retries: u32,
    /// Run order.
    #[serde(default)]
    pub order: Order,
    /// Run each load as a process of its own (this program's test as its own command), as a
    /// pinned load always runs, so that the report keeps the load's CPU (`meta.load_cpu`)
    /// beside another tool's client's; by default a load on this machine runs in-process.
    #[serde(default)]
    pub load_process: bool,
    /// Seed of `shuffle`.
    #[serde(default = "one")]
    pub seed: u64,
    /// What the `[[host]]`s are: `local` (all on this machine, links not emulated), `netns`
    /// (each a network namespace on this machine, joined by emulated links) or `ssh` (reached
    /// through OpenSSH). Default: `ssh` when a host names an ssh destination, else `local`.
    #[serde(default)]
    pub hosts: Option<HostsMode>,
}

/// What a scenario's hosts are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostsMode {
    /// Every role on this machine; links are not emulated.
    Local,
    /// Each host a network namespace on this machine, pairs joined by emulated links.
    Netns,
    /// Each host reached through OpenSSH.
    Ssh,
}

impl HostsMode {
    /// Its name as written.
    pub fn name(self) -> &'static str {
        match self {
            HostsMode::Local => "local",
            HostsMode::Netns => "netns",
            HostsMode::Ssh => "ssh",
        }
    }
}

/// A host of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Its name: what `host = "…"` and `{host.NAME.addr}` say.
    pub name: String,
    /// `hosts = "ssh"`: the destination `ssh` is given (`user@lab-1`, or a `Host` of the
    /// user's `~/.ssh/config`, with its keys and jump hosts).
    #[serde(default)]
    pub ssh: Option<String>,
    /// The address the other hosts reach it at (`hosts = "ssh"`; a netns host's is given).
    #[serde(default)]
    pub address: Option<String>,
    /// The `wirespeed` program on the host (default: `wirespeed` on its PATH).
    #[serde(default)]
    pub wirespeed: Option<String>,
    /// Kubernetes node labels its Pods are placed by (`kubernetes.io/hostname = "node-1"`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// The conditions of a path as written: `delay`, `jitter`, `loss`, `duplicate`, `reorder`,
/// `corrupt`, `rate`, `queue` (a list of values is a sweep).
pub type Conditions = BTreeMap<String, toml::Value>;

/// An emulated path between two hosts: the same both ways (`between`), or one way (`from` and
/// `to`). (Its other keys are conditions, checked by name when the file is read.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Link {
    /// Its name in swept values' labels (default `A-B`).
    #[serde(default)]
    pub name: Option<String>,
    /// The two hosts, both directions alike.
    #[serde(default)]
    pub between: Option<[String; 2]>,
    /// The sending host of a one-way link.
    #[serde(default)]
    pub from: Option<String>,
    /// The receiving host of a one-way link.
    #[serde(default)]
    pub to: Option<String>,
    /// What the path does.
    #[serde(flatten)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub conditions: Conditions,
}

impl Link {
    /// Its two ends in order (`from`, `to` or `between`); `None` when neither way is given.
    pub fn ends(&self) -> Option<(&String, &String)> {
        match (&self.between, &self.from, &self.to) {
            (Some([a, b]), None, None) => Some((a, b)),
            (None, Some(a), Some(b)) => Some((a, b)),
            _ => None,
        }
    }

    /// True when it applies both ways.
    pub fn both_ways(&self) -> bool {
        self.between.is_some()
    }

    /// Its name in labels.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| match self.ends() {
            Some((a, b)) => format!("{a}-{b}"),
            None => "link".into(),
        })
    }
}

fn three() -> u32 {
    3
}

fn one() -> u64 {
    1
}

impl Default for RunSettings {
    fn default() -> Self {
        Self {
            repeat: 3,
            warmup: None,
            cooldown: None,
            retries: 0,
            order: Order::Interleave,
            load_process: false,
            seed: 1,
            hosts: None,
        }
    }
}

/// A figure sampled from every system process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SampleMetric {
    /// Resident memory (VmRSS).
    Rss,
    /// Peak resident memory (VmHWM).
    Hwm,
    /// CPU time, user and system.
    Cpu,
}

/// Process sampling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SampleSettings {
    /// Time between samples (e.g. `1s`).
    #[serde(default = "one_second")]
    pub interval: String,
    /// What is sampled; `[]` turns sampling off.
    #[serde(default = "all_metrics")]
    pub metrics: Vec<SampleMetric>,
}

fn one_second() -> String {
    "1s".into()
}

fn all_metrics() -> Vec<SampleMetric> {
    vec![SampleMetric::Rss, SampleMetric::Hwm, SampleMetric::Cpu]
}

impl Default for SampleSettings {
    fn default() -> Self {
        Self { interval: one_second(), metrics: all_metrics() }
    }
}

/// Which built-in backend a fixture is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FixtureKind {
    /// The test server: bandwidth, latency, cps, pps and UDP ping (TCP and UDP on one port).
    BandwidthSink,
    /// The HTTP fixture (HTTP/1.1 and h2c).
    Http,
    /// The DNS fixture (UDP and TCP).
    Dns,
}

/// A built-in backend, started in-process on a free loopback port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// Name, for `{fixture.NAME.addr}` and `{fixture.NAME.port}`.
    pub name: String,
    /// Which backend.
    pub kind: FixtureKind,
    /// http: the body size of an answer (e.g. `615B`).
    #[serde(default)]
    pub body_size: Option<String>,
    /// http: serve HTTP/3 too, on the same port number over UDP, with a certificate made at
    /// start (an HTTP/3 workload then needs `insecure = true`), and https:// on its TCP port.
    #[serde(default)]
    pub h3: bool,
    /// dns: a zone file to serve instead of the generated one.
    #[serde(default)]
    pub zone: Option<String>,
    /// The host it runs on (as a `wirespeed server` process there); default: in-process on
    /// this machine.
    #[serde(default)]
    pub host: Option<String>,
}

/// Where a system takes the load: one address, or one per workload target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Entry {
    /// Every workload goes here.
    One(String),
    /// Workloads go to the address of their `target`.
    Named(BTreeMap<String, String>),
}

impl Entry {
    /// The address a workload with `target` loads; `None` when the entry has names and none is
    /// `target` (refused when the file is read).
    pub fn for_target(&self, target: Option<&str>) -> Option<&String> {
        match self {
            Entry::One(e) => Some(e),
            Entry::Named(map) => map.get(target?),
        }
    }
}

/// How to tell that a process is ready for load. Exactly one of the probes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ready {
    /// A TCP connection to this port (or address) succeeds, or to each of these (a tunnel
    /// that opens a port per service is ready when all are open).
    #[serde(default)]
    pub tcp: Option<OneOrMore>,
    /// A UDP echo or any answer from this port (or address).
    #[serde(default)]
    pub udp: Option<String>,
    /// An HTTP GET of this URL answers.
    #[serde(default)]
    pub http: Option<String>,
    /// A DNS query to this port (or address) is answered.
    #[serde(default)]
    pub dns: Option<String>,
    /// The process prints a line containing this text, or one containing each of these
    /// texts (a tunnel client that starts several proxies is ready when it has said so of
    /// every one).
    #[serde(default)]
    pub log: Option<LogText>,
    /// How long to wait (default 10s).
    #[serde(default)]
    pub timeout: Option<String>,
}

/// A word, or a list of them: a `log` probe's texts (each must appear), or a report's
/// baselines (each gets its column of percentages).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMore {
    /// One.
    One(String),
    /// Several, in order.
    More(Vec<String>),
}

/// What a `log` probe waits for: a text, or several that must each appear.
pub type LogText = OneOrMore;

impl OneOrMore {
    /// The words, one or more.
    pub fn items(&self) -> Vec<&str> {
        self.strings().into_iter().map(String::as_str).collect()
    }

    /// The words as they were read.
    pub fn strings(&self) -> Vec<&String> {
        match self {
            Self::One(t) => vec![t],
            Self::More(ts) => ts.iter().collect(),
        }
    }
}

impl From<&str> for OneOrMore {
    fn from(text: &str) -> Self {
        Self::One(text.to_string())
    }
}

/// One process of a system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Process {
    /// Its part (`server`, `client`): processes are sampled and named by role.
    pub role: String,
    /// The command line, a template (`{port.NAME}`, `{file.NAME}`, `{fixture.NAME.addr}`, axis
    /// variables); split into words like a shell would, without a shell.
    pub cmd: String,
    /// When it is ready for load.
    #[serde(default)]
    pub ready: Option<Ready>,
    /// Start it after this role is ready.
    #[serde(default)]
    pub after: Option<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The host it runs on (default: this machine).
    #[serde(default)]
    pub host: Option<String>,
    /// The CPUs it (and whatever it starts) runs on, as `taskset -c` writes them (`"1"`,
    /// `"0-1"`, `"0,2"`); default: any. A server pinned apart from the load makes its CPU the
    /// ceiling, so the load's CPU per unit of work tells clients apart.
    #[serde(default)]
    pub cpus: Option<String>,
}

/// Another tool's client a system's load is made with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ClientChoice {
    /// The client by name, run as the program of that name from PATH.
    Name(String),
    /// The client by name, run as another program, with words added.
    Given(GivenClient),
}

/// [`ClientChoice::Given`]: a client run as another program than its name's, or with more words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GivenClient {
    /// Which client (`iperf3`).
    pub name: String,
    /// The program to run, from PATH (`iperf3-3.21`); the name's own when absent.
    #[serde(default)]
    pub program: Option<String>,
    /// Words added to each of its command lines (`--gsro`).
    #[serde(default)]
    pub args: Vec<String>,
    /// wirespeed's own client only: the load made by this many processes of this build, members
    /// of one run that meet at a common start, whose reports are merged into the run's
    /// (`wirespeed merge`'s exact merge), so a study sets members beside one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<u16>,
}

impl ClientChoice {
    /// Which client.
    pub fn name(&self) -> &str {
        match self {
            ClientChoice::Name(name) | ClientChoice::Given(GivenClient { name, .. }) => name,
        }
    }

    /// The program to run, when not the name's own.
    pub fn program(&self) -> Option<&str> {
        match self {
            ClientChoice::Name(_) => None,
            ClientChoice::Given(g) => g.program.as_deref(),
        }
    }

    /// Words added to each of its command lines.
    pub fn args(&self) -> &[String] {
        match self {
            ClientChoice::Name(_) => &[],
            ClientChoice::Given(g) => &g.args,
        }
    }

    /// How many members make the load, where it is several processes of this build.
    pub fn members(&self) -> Option<u16> {
        match self {
            ClientChoice::Name(_) => None,
            ClientChoice::Given(g) => g.members,
        }
    }
}

/// A system under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct System {
    /// Name, a template over the axes it expands on (`gost-{transport}`).
    pub name: String,
    /// The `[matrix]` axes it expands over.
    #[serde(default)]
    pub matrix: Vec<String>,
    /// Programs that must be on PATH; without them the system's cells are skipped, not failed.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Whose client makes its workloads' load: wirespeed's own (the default), or another
    /// tool's by name (`ethr`, `iperf3`: `wirespeed bench --clients` lists them), each
    /// workload's test kind and options made by that client's flags, so that another tool's
    /// client and server stand beside wirespeed's. As a table, it may also name the program
    /// that runs it (`{ name = "iperf3", program = "iperf3-3.21" }`) and words added to each
    /// of its command lines (`args = ["--gsro"]`).
    #[serde(default)]
    pub client: Option<ClientChoice>,
    /// Where the load goes.
    pub entry: Entry,
    /// Environment of every process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Config files, templates written per cell: `file.NAME = '''...'''`, `{file.NAME}` in commands.
    #[serde(default)]
    pub file: BTreeMap<String, String>,
    /// Its processes, started in order (and after `after`).
    #[serde(default)]
    pub process: Vec<Process>,
    /// A command that prints its program's version, recorded with the results.
    #[serde(default)]
    pub version: Option<VersionCommand>,
    /// The container image its processes run in (`bench --k8s`; default: `--image`'s).
    #[serde(default)]
    pub image: Option<String>,
}

/// How to ask a system's program for its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionCommand {
    /// The command (no shell; `frps --version`).
    pub cmd: String,
    /// Text its output should hold (`0.71.0`); otherwise the summary says what it printed
    /// instead.
    #[serde(default)]
    pub expect: Option<String>,
}

impl System {
    /// Every template of the system: commands, probes, environments, files and entries.
    pub fn templates(&self) -> Vec<&String> {
        let entries: Vec<&String> = match &self.entry {
            Entry::One(e) => vec![e],
            Entry::Named(map) => map.values().collect(),
        };
        self.process
            .iter()
            .flat_map(|p| {
                let probes = p.ready.iter().flat_map(|r| {
                    let lists = r.tcp.iter().chain(&r.log).flat_map(OneOrMore::strings);
                    [&r.udp, &r.http, &r.dns].into_iter().flatten().chain(lists)
                });
                std::iter::once(&p.cmd).chain(probes).chain(p.env.values())
            })
            .chain(self.file.values())
            .chain(self.env.values())
            .chain(entries)
            .collect()
    }
}

/// One value of an axis: a word, or a table of variables with a `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AxisValue {
    /// Variables; `name` is the one shown. (Tried first: a TOML value would take tables too.)
    Table(BTreeMap<String, String>),
    /// A word or a number: the variable named after the axis.
    #[schemars(with = "serde_json::Value")]
    Scalar(toml::Value),
}

/// An axis of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// Its values.
    pub values: Vec<AxisValue>,
}

/// A load: a wirespeed test kind and its options, named as the command line's long flags
/// (`parallel = 4` is `--parallel 4`). An option given a list is swept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Workload {
    /// Name.
    pub name: String,
    /// Test kind: bandwidth, latency, cps, pps, ping, http, dns.
    pub kind: String,
    /// Which of a system's named entries it loads.
    #[serde(default)]
    pub target: Option<String>,
    /// The host the load runs on (as a `wirespeed` command there); default: in-process on
    /// this machine.
    #[serde(default)]
    pub host: Option<String>,
    /// Programs that must be on PATH (a load generator such as vegeta); without them the
    /// workload's runs are skipped, not failed.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The CPUs the load runs on, as `taskset -c` writes them (`"0"`); default: any. A pinned
    /// load runs as a process of its own (this program's test, or another tool's client), so
    /// that only it is pinned.
    #[serde(default)]
    pub cpus: Option<String>,
    /// The test's options.
    #[serde(flatten)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub options: BTreeMap<String, toml::Value>,
}

/// A rule a result must meet: `FIGURE OP VALUE` (`p99 < 5ms`, `loss_ratio < 0.01`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Only this workload's results (default: every workload's).
    #[serde(default)]
    pub workload: Option<String>,
    /// The rule.
    pub expr: String,
}

/// How results are reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSettings {
    /// The system others are shown as a percentage of, or `fastest`: in each workload, the
    /// system with the best median (highest rate, or lowest time); or several, each with its
    /// own column (`["bind9", "fastest"]`: the DNS study's "% of BIND" and "% of fastest").
    #[serde(default)]
    pub baseline: Option<OneOrMore>,
}

impl ReportSettings {
    /// The baselines named, in order; none when there is no `baseline`.
    pub fn baselines(&self) -> Vec<&str> {
        self.baseline.as_ref().map_or_else(Vec::new, OneOrMore::items)
    }
}

impl Scenario {
    /// What its hosts are: as `run.hosts` says, else `ssh` when a host has an ssh
    /// destination, else `local`.
    pub fn hosts_mode(&self) -> HostsMode {
        self.run.hosts.unwrap_or(if self.host.iter().any(|h| h.ssh.is_some()) {
            HostsMode::Ssh
        } else {
            HostsMode::Local
        })
    }

    /// The scenario cut down to check that it runs, not to measure: one repeat, no warm-up or
    /// cool-down, each sweep cut to its first, middle and last value, each workload's length
    /// option (`length(kind)` gives its name and short value: `time` = `0.5s` for bandwidth) set
    /// short, and at least one retry.
    pub fn smoke(&mut self, length: impl Fn(&str) -> Option<(&'static str, toml::Value)>) {
        self.run.repeat = 1;
        // A load this short can end before a busy machine lets a cold system answer anything
        // (a TLS tunnel's first handshakes, all at once, at 4000 requests/s): one more try from
        // the system up tells that from a cell that cannot run, which fails both.
        self.run.retries = self.run.retries.max(1);
        self.run.warmup = None;
        self.run.cooldown = None;
        for w in &mut self.workload {
            for v in w.options.values_mut() {
                if let toml::Value::Array(a) = v {
                    if a.len() > 3 {
                        // First, middle and last: still a line to draw.
                        *a = vec![a[0].clone(), a[a.len() / 2].clone(), a[a.len() - 1].clone()];
                    }
                }
            }
            for left_out in ["omit", "warmup"] {
                w.options.remove(left_out);
            }
            if let Some((key, value)) = length(&w.kind) {
                w.options.insert(key.to_string(), value);
            }
        }
    }
}

/// The JSON schema of scenario files, generated from these types.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Scenario)).unwrap_or_default()
}
