//! wirespeed's tests made by Microsoft's ethr instead (a scenario system with `client = "ethr"`):
//! each workload's test kind and options become ethr's client flags (bandwidth `-t b`, pps
//! `-t p -p udp`, cps `-t c`, latency `-t l`, ping `-x … -t pi`), ethr (from PATH) runs for the
//! workload's time, and what it printed comes back as a report of the same kind
//! (`report`), its client's CPU from the kernel's account of the child. So a study puts ethr's
//! client and server beside wirespeed's, workload by workload, as the ethr practice ran them.
//! An option ethr has no flag for is refused when the scenario is read, naming what it takes.
//!
//! The words are `wirespeed peer [--omit D] -- ethr ARGS…`: run in-process here, or as that
//! command on a study's host (`wirespeed peer`, which prints the report as JSON).

mod output;
mod report;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_model::units::{parse_bitrate, parse_bytes, parse_duration};
use wirespeed_model::Report;
use wirespeed_runner::matrix::scalar_text;

/// The client a system names to have its workloads made by ethr.
pub(crate) const CLIENT: &str = "ethr";

/// Round trips per latency row (ethr's `-i`, left at its default).
const BATCH: u64 = 1000;

/// What ethr is asked to do, read back from its flags.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ask {
    pub test: Test,
    /// Host (and, for `-x`, port) as given to ethr.
    pub target: String,
    pub duration: Duration,
    /// Leading seconds the summary leaves out (wirespeed's warm-up; ethr has none).
    pub omit: Duration,
    /// ethr's threads (`-n`).
    pub parallel: u16,
    /// Time between ping probes (`-g`).
    pub gap: Duration,
    /// ethr's own words after `ethr`.
    pub args: Vec<String>,
}

/// ethr's test types this reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Test {
    Bandwidth {
        reverse: bool,
        length: u32,
        bitrate_bps: u64,
    },
    Packets,
    Connections,
    Latency {
        length: u32,
    },
    /// ICMP echo, or a TCP handshake to this port.
    Ping {
        port: Option<u16>,
    },
}

impl Ask {
    /// `ethr ARGS…` as typed.
    pub(crate) fn command(&self) -> String {
        format!("{CLIENT} {}", self.args.join(" "))
    }
}

/// The options each test kind takes with ethr's client, each with the ethr flag it becomes.
const OPTIONS: &[(&str, &[&str])] = &[
    (
        "bandwidth",
        &["time (-d)", "parallel (-n)", "reverse (-r)", "length (-l)", "bitrate (-b)", "omit"],
    ),
    // ethr's packets/s test sends 1-byte datagrams whatever its -l says (ethr.go overrides it):
    // a workload's length is taken so that ours can send its least beside it, and its report
    // says the 1 B ethr sent.
    ("pps", &["time (-d)", "parallel (-n)", "warmup", "length (ethr sends 1 B whatever is asked)"]),
    // ethr's client always closes with RST (SO_LINGER 0): `rst = true` says so, false is refused.
    ("cps", &["time (-d)", "parallel (-n)", "warmup", "rst (always)"]),
    ("latency", &["time (-d)", "length (-l)", "warmup"]),
    ("ping", &["deadline (-d)", "interval (-g)", "tcp (-p tcp, port)"]),
];

/// The words of `kind` with `options` made by ethr's client against `entry` (HOST:PORT of an
/// `ethr -s`, or for ping the host, or the host and port a TCP ping connects to).
pub(crate) fn command_line(
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    let Some((_, takes)) = OPTIONS.iter().find(|(k, _)| *k == kind) else {
        bail!(
            "ethr's client makes no {kind} test (it makes {})",
            OPTIONS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
        );
    };
    let mut given: BTreeMap<&str, String> = BTreeMap::new();
    for (key, value) in options {
        if !takes.iter().any(|t| t.split(' ').next() == Some(key.as_str())) {
            bail!(
                "ethr's client has no equivalent of {kind} --{key} (it takes {})",
                takes.join(", ")
            );
        }
        let text = match value {
            toml::Value::Boolean(b) => b.to_string(),
            v => scalar_text(v)
                .with_context(|| format!("option {key}: expected a word or number"))?,
        };
        given.insert(key.as_str(), text);
    }
    let seconds = |key: &str, default: &str| -> Result<Duration> {
        let text = given.get(key).map_or(default, String::as_str);
        parse_duration(text).map_err(|e| anyhow::anyhow!("{kind} --{key} {text:?}: {e}"))
    };
    let go = |d: Duration| format!("{}ms", d.as_millis().max(1));
    // ethr's client stops a test at its -d only when that is a second or more (its
    // runDurationTimer counts whole seconds, and 0 means never): a shorter one would run on.
    let test_length = |d: Duration, key: &str| -> Result<String> {
        if d < Duration::from_secs(1) {
            bail!(
                "{kind} --{key} {d:?}: ethr's client runs a test shorter than a second forever \
                 (its -d counts whole seconds); give 1s or more"
            );
        }
        Ok(go(d))
    };
    let (host, port) = split_entry(entry);
    let mut args: Vec<String> = Vec::new();
    let mut omit = Duration::ZERO;
    if kind == "ping" {
        let deadline = seconds("deadline", "10s")?;
        let gap = seconds("interval", "1s")?;
        match given.get("tcp") {
            Some(p) => {
                let port: u16 = p.parse().with_context(|| format!("ping --tcp {p:?}: a port"))?;
                args.extend([
                    "-x".into(),
                    format!("{}:{port}", bracketed(host)),
                    "-p".into(),
                    "tcp".into(),
                ]);
            }
            None => args.extend(["-x".into(), host.to_string(), "-p".into(), "icmp".into()]),
        }
        let deadline = test_length(deadline, "deadline")?;
        args.extend(["-t".into(), "pi".into(), "-d".into(), deadline, "-g".into(), go(gap)]);
    } else {
        let port = port.with_context(|| format!("ethr's entry {entry:?}: expected HOST:PORT"))?;
        if given.get("rst").is_some_and(|r| r != "true") {
            bail!("ethr's client always closes its connections with RST: cps --rst cannot be off");
        }
        let time = seconds("time", "10s")?;
        omit = seconds(if kind == "bandwidth" { "omit" } else { "warmup" }, "0s")?;
        args.extend(["-c".into(), host.to_string(), "-port".into(), port.to_string()]);
        let test: &[&str] = match kind {
            "bandwidth" => &["-t", "b", "-ncs"],
            "pps" => &["-t", "p", "-p", "udp"],
            "cps" => &["-t", "c"],
            _ => &["-t", "l"],
        };
        args.extend(test.iter().map(|s| s.to_string()));
        // ethr's warm-up is ours: it runs the whole time and the summary leaves it out.
        args.extend(["-d".into(), test_length(time + omit, "time")?]);
        if let Some(n) = given.get("parallel") {
            args.extend(["-n".into(), n.clone()]);
        }
        if given.get("reverse").map(String::as_str) == Some("true") {
            args.push("-r".into());
        }
        if let Some(l) = given.get("length").filter(|_| kind != "pps") {
            let bytes =
                parse_bytes(l).map_err(|e| anyhow::anyhow!("{kind} --length {l:?}: {e}"))?;
            args.extend(["-l".into(), format!("{bytes}B")]);
        }
        if let Some(b) = given.get("bitrate") {
            let bps =
                parse_bitrate(b).map_err(|e| anyhow::anyhow!("bandwidth --bitrate {b:?}: {e}"))?;
            args.extend(["-b".into(), bps.to_string()]);
        }
        args.extend(["-dp".into(), "2".into()]);
    }
    // No log file (ethr writes `ethrc.log` into whatever directory it runs in): what it
    // printed is what is read.
    args.push("-no".into());
    let mut words = vec!["wirespeed".to_string(), "peer".into()];
    if !omit.is_zero() {
        words.extend(["--omit".into(), go(omit)]);
    }
    words.extend(["--".into(), CLIENT.into()]);
    words.extend(args);
    ask_of(&words)?;
    Ok(words)
}

/// `HOST:PORT`, `[V6]:PORT` or a bare host, the port as text: `--dry-run` shows one not yet
/// chosen as `<port.main>`, which `resolve::split_target` (what runs use) rightly refuses.
fn split_entry(entry: &str) -> (&str, Option<&str>) {
    if let Some(rest) = entry.strip_prefix('[') {
        if let Some((host, port)) = rest.split_once("]:") {
            return (host, Some(port));
        }
        return (rest.trim_end_matches(']'), None);
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, Some(port)),
        _ => (entry, None),
    }
}

fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// What the words of [`command_line`] ask ethr for.
pub(crate) fn ask_of(words: &[String]) -> Result<Ask> {
    let at = words.iter().position(|w| w == CLIENT).context("no `ethr` in the peer's words")?;
    let mut omit = Duration::ZERO;
    let mut i = 2;
    while i < at {
        if words[i] == "--omit" {
            let text = words.get(i + 1).context("--omit needs a duration")?;
            omit = parse_duration(text).map_err(|e| anyhow::anyhow!("--omit {text:?}: {e}"))?;
            i += 1;
        }
        i += 1;
    }
    let args: Vec<String> = words[at + 1..].to_vec();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|p| args.get(p + 1));
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let duration = |flag: &str, default: Duration| -> Result<Duration> {
        value(flag).map_or(Ok(default), |t| {
            parse_duration(t).map_err(|e| anyhow::anyhow!("ethr {flag} {t:?}: {e}"))
        })
    };
    let length = |default: u32| -> Result<u32> {
        value("-l").map_or(Ok(default), |t| {
            let bytes = parse_bytes(t).map_err(|e| anyhow::anyhow!("ethr -l {t:?}: {e}"))?;
            u32::try_from(bytes).context("ethr -l: too long")
        })
    };
    let target = value("-c").or_else(|| value("-x")).context("ethr: no -c or -x")?.clone();
    let test = match value("-t").map(String::as_str) {
        Some("b") => Test::Bandwidth {
            reverse: has("-r"),
            length: length(16 * 1024)?,
            bitrate_bps: value("-b")
                .map(|b| b.parse())
                .transpose()
                .context("ethr -b")?
                .unwrap_or(0),
        },
        Some("p") => Test::Packets,
        Some("c") => Test::Connections,
        Some("l") => Test::Latency { length: length(1)? },
        Some("pi") => Test::Ping {
            port: match value("-p").map(String::as_str) {
                Some("tcp") => Some(
                    crate::resolve::split_target(&target)?
                        .1
                        .context("ethr -x: a TCP ping needs HOST:PORT")?,
                ),
                _ => None,
            },
        },
        other => bail!("ethr -t {other:?}: not a test this reads"),
    };
    let parallel =
        value("-n").map(|n| n.parse::<u16>()).transpose().context("ethr -n")?.unwrap_or(1);
    if parallel == 0 {
        bail!("ethr -n 0 (one thread per CPU): give the count, so the report says what ran");
    }
    Ok(Ask {
        test,
        target,
        duration: duration("-d", Duration::from_secs(10))?.saturating_sub(omit),
        omit,
        parallel,
        gap: duration("-g", Duration::from_secs(1))?,
        args,
    })
}

/// Runs ethr as the words say until it ends or `cancel` fires (then SIGINT, on which it stops
/// and prints what it has); what it printed as a report.
pub(crate) async fn run(words: &[String], cancel: CancellationToken) -> Result<Report> {
    let ask = ask_of(words)?;
    // ethr writes a log file into the directory it runs in unless told not to.
    let mut args = ask.args.clone();
    if !args.iter().any(|a| a == "-no" || a == "-o") {
        args.push("-no".into());
    }
    // Its own -d ends it; this is the backstop for an ethr that does not stop.
    let limit = ask.duration + crate::foreign::OVERRUN;
    let ran = crate::foreign::child::run(CLIENT, &args, cancel.clone(), limit).await?;
    let printed = output::parse(&ran.stdout);
    if !ran.status.success() && !cancel.is_cancelled() {
        bail!("{} failed ({}): {}", ask.command(), ran.status, ran.last_words());
    }
    let what = match ask.test {
        Test::Latency { .. } => "latency rows",
        Test::Ping { .. } => "probes",
        _ => "per-second lines",
    };
    output::require(&printed, what)?;
    let mut report = report::of(&ask, &printed, ran.began, ran.cpu);
    report.meta.load_cpu = Some(ran.load_cpu());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, toml::Value)]) -> BTreeMap<String, toml::Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn each_kind_becomes_ethrs_flags_and_reads_back() {
        let bw = command_line(
            "bandwidth",
            "10.0.0.2:8888",
            &options(&[("time", "10s".into()), ("omit", "1s".into()), ("parallel", 4.into())]),
        )
        .unwrap();
        assert_eq!(
            bw.join(" "),
            "wirespeed peer --omit 1000ms -- ethr -c 10.0.0.2 -port 8888 -t b -ncs -d 11000ms -n 4 -dp 2 -no"
        );
        let ask = ask_of(&bw).unwrap();
        assert_eq!(
            (ask.duration, ask.omit, ask.parallel),
            (Duration::from_secs(10), Duration::from_secs(1), 4)
        );
        let ping = command_line(
            "ping",
            "10.0.0.2",
            &options(&[("tcp", 80.into()), ("deadline", "5s".into())]),
        )
        .unwrap();
        assert_eq!(ask_of(&ping).unwrap().test, Test::Ping { port: Some(80) });
        assert!(ping.join(" ").contains("-x 10.0.0.2:80 -p tcp -t pi -d 5000ms"));
        let lat = command_line("latency", "[::1]:8888", &options(&[("length", 1.into())])).unwrap();
        assert_eq!(ask_of(&lat).unwrap().test, Test::Latency { length: 1 });
        assert_eq!(ask_of(&lat).unwrap().target, "::1");
        // ethr's packets/s sends 1 B whatever -l says: a length is taken, and not passed on.
        let pps = command_line("pps", "h:1", &options(&[("length", 16.into())])).unwrap();
        assert!(!pps.contains(&"-l".to_string()), "{pps:?}");
        assert_eq!(ask_of(&pps).unwrap().test, Test::Packets);
    }

    #[test]
    fn what_ethr_cannot_do_is_refused_by_name() {
        let e = command_line("bandwidth", "h:1", &options(&[("udp", true.into())])).unwrap_err();
        assert!(e.to_string().contains("no equivalent of bandwidth --udp"), "{e}");
        let e = command_line("dns", "h:1", &options(&[])).unwrap_err();
        assert!(e.to_string().contains("makes no dns test"), "{e}");
        let e = command_line("cps", "h", &options(&[])).unwrap_err();
        assert!(e.to_string().contains("expected HOST:PORT"), "{e}");
        let e = command_line("cps", "h:1", &options(&[("parallel", 0.into())])).unwrap_err();
        assert!(e.to_string().contains("-n 0"), "{e}");
        let e = command_line("cps", "h:1", &options(&[("rst", false.into())])).unwrap_err();
        assert!(e.to_string().contains("always closes its connections with RST"), "{e}");
        // A test under a second would never end under ethr: refused, not started.
        let short = options(&[("time", "0.5s".into())]);
        let e = command_line("bandwidth", "h:1", &short).unwrap_err();
        assert!(e.to_string().contains("shorter than a second forever"), "{e}");
        let e = command_line("ping", "h", &options(&[("deadline", "900ms".into())])).unwrap_err();
        assert!(e.to_string().contains("ping --deadline"), "{e}");
        let rst = command_line("cps", "h:1", &options(&[("rst", true.into())])).unwrap();
        assert_eq!(rst, command_line("cps", "h:1", &options(&[])).unwrap());
    }
}
