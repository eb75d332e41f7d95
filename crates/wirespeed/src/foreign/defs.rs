//! The other tools' clients wirespeed can make a study's load with, as data
//! (`clients.toml`, built in): for each test kind, the words to run, what each workload
//! option becomes, and where each figure is read in what the client prints. A workload's
//! options are wirespeed's own flags, so the same cell is our test for one system and the
//! other tool's for the next; an option the client has no equivalent for is refused by name.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use wirespeed_model::units::{parse_bitrate, parse_bytes, parse_duration};
use wirespeed_runner::matrix::scalar_text;

/// The built-in clients.
const CLIENTS: &str = include_str!("clients.toml");

/// One client.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientDef {
    /// What it is, in a few words.
    pub about: String,
    /// The program that runs it, from PATH, unless the system names another.
    pub program: String,
    /// Its words that print its version.
    #[serde(default)]
    pub version: Vec<String>,
    /// A whole command that prints its version, where the program itself cannot (hey has no
    /// version flag: its package says).
    #[serde(default)]
    pub version_command: Option<Vec<String>>,
    /// Text on the line that holds its version, where that is not the first line it prints
    /// (dnsperf's usage ends with `Version 2.10.0`).
    #[serde(default)]
    pub version_line: Option<String>,
    /// The test kinds it makes, by wirespeed's kind names.
    pub kind: BTreeMap<String, KindDef>,
}

/// How a client makes one test kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KindDef {
    /// How to read what it prints.
    pub output: Output,
    /// Where its JSON output says why a run failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Its words before the options' (`{host}`, `{port}`, `{entry}`, `{url}`).
    pub words: Vec<String>,
    /// Its words after the options': where its flags end at its first other word (Go's flag
    /// package: hey's URL goes last, or the flags after it are taken for arguments).
    #[serde(default)]
    pub after: Vec<String>,
    /// What a reader of its reports should know of how it measures.
    pub note: String,
    /// What each workload option becomes among its words (which may hold `{host}`, `{port}`,
    /// `{entry}` and `{url}` as well as the value).
    #[serde(default)]
    pub options: BTreeMap<String, Vec<String>>,
    /// Its words where the workload does not set an option (or sets it false): what makes
    /// its default ours (`time = ["-t", "10"]`, `udp = ["--tcp"]`). A key naming several
    /// options (`"doh|doq"`) gives its words where the workload sets none of them: how a
    /// client that takes its server in the form of its transport is given the plain one.
    #[serde(default)]
    pub defaults: BTreeMap<String, Vec<String>>,
    /// Where each figure of the kind's report summary is read, by its name there (dotted
    /// for a nested one: `rtt.p50_ns`).
    pub figures: BTreeMap<String, FigureAt>,
}

/// The form of a client's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Output {
    /// One JSON document on stdout.
    Json,
    /// Lines of text (its terminal colours left out before any pattern is matched).
    Text,
}

/// Where one figure is read: a JSON pointer, several tried in order, or a reading with a
/// scale.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum FigureAt {
    Pointer(String),
    Pointers(Vec<String>),
    Read(Reading),
}

/// A figure read from JSON (pointers tried in order) or from text (a regular expression whose
/// first group is the number), times `scale`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reading {
    #[serde(default)]
    pub json: Option<Pointers>,
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default = "one")]
    pub scale: f64,
    /// The JSON value is an object or list of counts (oha's responses by status): their sum.
    #[serde(default)]
    pub sum: bool,
    /// The unit a pattern's second group gives the number in, as the client prints it
    /// beside the number (`523.97us`, `22.26MB`), converted before the scale.
    #[serde(default)]
    pub unit: Option<UnitWords>,
}

fn one() -> f64 {
    1.0
}

/// The units a client writes after its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum UnitWords {
    /// A time (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), read as nanoseconds.
    Time,
    /// A size in steps of 1024 (`B`, `KB`, `MB`, `GB`, `TB`, as wrk writes them; `KiB` too),
    /// read as bytes.
    BinaryBytes,
}

impl UnitWords {
    /// What one of `word` is in the figure's own unit (ns, bytes); `None` for a word it
    /// does not know.
    pub(crate) fn factor(self, word: &str) -> Option<f64> {
        let factor = match self {
            UnitWords::Time => match word {
                "ns" => 1.0,
                "us" | "µs" | "μs" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                "m" | "min" => 60e9,
                "h" => 3600e9,
                _ => return None,
            },
            UnitWords::BinaryBytes => {
                let steps = match word.trim_end_matches("iB").trim_end_matches('B') {
                    "" => 0,
                    "K" | "k" => 1,
                    "M" => 2,
                    "G" => 3,
                    "T" => 4,
                    _ => return None,
                };
                1024f64.powi(steps)
            }
        };
        Some(factor)
    }
}

/// A pattern over a client's text, and the unit its second group gives.
pub(crate) type TextAt<'a> = (&'a str, Option<UnitWords>);

/// One pointer or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Pointers {
    One(String),
    Many(Vec<String>),
}

impl FigureAt {
    /// The JSON pointers to try, in order; the pattern and its unit; and the scale.
    pub(crate) fn parts(&self) -> (Vec<&str>, Option<TextAt<'_>>, f64) {
        match self {
            FigureAt::Pointer(p) => (vec![p.as_str()], None, 1.0),
            FigureAt::Pointers(many) => (many.iter().map(String::as_str).collect(), None, 1.0),
            FigureAt::Read(r) => {
                let pointers = match &r.json {
                    None => Vec::new(),
                    Some(Pointers::One(one)) => vec![one.as_str()],
                    Some(Pointers::Many(many)) => many.iter().map(String::as_str).collect(),
                };
                (pointers, r.pattern.as_deref().map(|p| (p, r.unit)), r.scale)
            }
        }
    }

    /// Whether the JSON value is a collection of counts to add up.
    pub(crate) fn sums(&self) -> bool {
        matches!(self, FigureAt::Read(r) if r.sum)
    }
}

/// Every built-in client, by name.
pub(crate) fn all() -> &'static BTreeMap<String, ClientDef> {
    static CLIENTS_READ: OnceLock<BTreeMap<String, ClientDef>> = OnceLock::new();
    CLIENTS_READ.get_or_init(|| {
        // Built in and checked by the tests: it cannot fail to read.
        toml::from_str(CLIENTS).unwrap_or_default()
    })
}

/// The client called `name`.
pub(crate) fn find(name: &str) -> Result<&'static ClientDef> {
    all().get(name).with_context(|| {
        let mut known: Vec<&str> = all().keys().map(String::as_str).collect();
        known.push(crate::ethr::CLIENT);
        known.sort_unstable();
        format!("client {name:?}: not one wirespeed can run (it runs {})", known.join(", "))
    })
}

impl ClientDef {
    /// How it makes `kind`.
    pub(crate) fn kind(&self, name: &str, kind: &str) -> Result<&KindDef> {
        self.kind.get(kind).with_context(|| {
            let makes: Vec<&str> = self.kind.keys().map(String::as_str).collect();
            format!("{name}'s client makes no {kind} test (it makes {})", makes.join(", "))
        })
    }
}

impl KindDef {
    /// Its words for a test aimed at `entry` (HOST:PORT) with `options`.
    pub(crate) fn words(
        &self,
        name: &str,
        kind: &str,
        entry: &str,
        options: &BTreeMap<String, toml::Value>,
    ) -> Result<Vec<String>> {
        // An HTTP workload's entry may be its URL; its HOST:PORT is then the URL's.
        let tls = options.get("h3") == Some(&toml::Value::Boolean(true));
        let (url, authority) = url_of(entry, tls);
        let (host, port) = split_entry(&authority)
            .with_context(|| format!("{name}: entry {entry:?}: expected HOST:PORT or a URL"))?;
        let fill = |word: &str| {
            word.replace("{host}", host)
                .replace("{port}", port)
                .replace("{entry}", &authority)
                .replace("{url}", &url)
        };
        let mut words: Vec<String> = self.words.iter().map(|w| fill(w)).collect();
        let unset =
            |key: &str| matches!(options.get(key), None | Some(toml::Value::Boolean(false)));
        for (keys, default) in &self.defaults {
            if keys.split('|').all(unset) {
                words.extend(default.iter().map(|w| fill(w)));
            }
        }
        for (key, value) in options {
            let Some(becomes) = self.options.get(key) else {
                let takes: Vec<&str> = self.options.keys().map(String::as_str).collect();
                bail!(
                    "{name}'s client has no equivalent of {kind} --{key} (it takes {})",
                    takes.join(", ")
                );
            };
            match value {
                toml::Value::Boolean(false) => {}
                toml::Value::Boolean(true) => words.extend(becomes.iter().map(|w| fill(w))),
                v => {
                    let text = scalar_text(v)
                        .with_context(|| format!("option {key}: expected a word or number"))?;
                    for word in becomes {
                        // The entry's placeholders first: the value is the workload's, as
                        // written, whatever it holds.
                        words.push(
                            value_word(&fill(word), &text)
                                .with_context(|| format!("{name}: {kind} --{key} {text:?}"))?,
                        );
                    }
                }
            }
        }
        words.extend(self.after.iter().map(|w| fill(w)));
        Ok(words)
    }
}

/// One word of an option's: its placeholder replaced by `value` in the form it asks for.
fn value_word(word: &str, value: &str) -> Result<String> {
    let seconds =
        || parse_duration(value).map(|d| d.as_secs_f64()).map_err(|e| anyhow::anyhow!("{e}"));
    let filled = if word.contains("{whole-seconds}") {
        // A client whose time is whole seconds: rounded up, and never 0 (to many, forever).
        let whole = (seconds()?.ceil() as u64).max(1);
        word.replace("{whole-seconds}", &whole.to_string())
    } else if word.contains("{seconds}") {
        word.replace("{seconds}", &seconds()?.to_string())
    } else if word.contains("{bits}") {
        let bits = parse_bitrate(value).map_err(|e| anyhow::anyhow!("{e}"))?;
        word.replace("{bits}", &bits.to_string())
    } else if word.contains("{bytes}") {
        let bytes = parse_bytes(value).map_err(|e| anyhow::anyhow!("{e}"))?;
        word.replace("{bytes}", &bytes.to_string())
    } else {
        word.replace("{}", value)
    };
    Ok(filled)
}

/// The URL an HTTP test of `entry` loads (as our own command line makes it: the entry
/// itself when it is a URL, else its root over http, or https for HTTP/3) and its HOST:PORT
/// (the default port of its scheme where it names none).
fn url_of(entry: &str, tls: bool) -> (String, String) {
    let Some((scheme, rest)) = entry.split_once("://") else {
        let scheme = if tls { "https" } else { "http" };
        return (format!("{scheme}://{entry}/"), entry.to_string());
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    if split_entry(authority).is_some() {
        return (entry.to_string(), authority.to_string());
    }
    let port = if scheme == "https" { 443 } else { 80 };
    (entry.to_string(), format!("{authority}:{port}"))
}

/// `HOST:PORT` or `[V6]:PORT` as host and port.
fn split_entry(entry: &str) -> Option<(&str, &str)> {
    if let Some(rest) = entry.strip_prefix('[') {
        return rest.split_once("]:");
    }
    entry.rsplit_once(':').filter(|(host, _)| !host.contains(':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_clients_read() {
        let clients: BTreeMap<String, ClientDef> = toml::from_str(CLIENTS).unwrap();
        assert!(clients.contains_key("iperf3"));
        assert_eq!(all().len(), clients.len());
    }

    #[test]
    fn options_become_the_clients_words_in_the_form_it_takes() {
        let iperf3 = find("iperf3").unwrap();
        let bw = iperf3.kind("iperf3", "bandwidth").unwrap();
        let options: BTreeMap<String, toml::Value> = [
            ("time", "0.5s".into()),
            ("parallel", 4.into()),
            ("bitrate", "1G".into()),
            ("length", "1400".into()),
            ("udp", true.into()),
            ("reverse", false.into()),
        ]
        .into_iter()
        .map(|(k, v): (&str, toml::Value)| (k.to_string(), v))
        .collect();
        let words = bw.words("iperf3", "bandwidth", "[::1]:5201", &options).unwrap();
        assert_eq!(words.join(" "), "-c ::1 -p 5201 --json -b 1000000000 -l 1400 -P 4 -t 1 -u");
        let e = bw
            .words("iperf3", "bandwidth", "h:1", &[("bidir".to_string(), true.into())].into())
            .unwrap_err();
        assert!(e.to_string().contains("no equivalent of bandwidth --bidir"), "{e}");
        // Where sockperf's defaults differ from ours, ours are given.
        let sockperf = find("sockperf").unwrap().kind("sockperf", "latency").unwrap();
        let default = sockperf.words("sockperf", "latency", "127.0.0.1:9", &BTreeMap::new());
        assert_eq!(
            default.unwrap().join(" "),
            "ping-pong -i 127.0.0.1 -p 9 --full-rtt -m 16 -t 10 --tcp"
        );
        let udp: BTreeMap<String, toml::Value> =
            [("udp".to_string(), true.into()), ("busy-poll".to_string(), true.into())].into();
        let words = sockperf.words("sockperf", "latency", "127.0.0.1:9", &udp).unwrap();
        assert_eq!(
            words.join(" "),
            "ping-pong -i 127.0.0.1 -p 9 --full-rtt -m 16 -t 10 --nonblocked"
        );
        // A Go client's flags end at its first other word: hey's URL goes after them.
        let hey = find("hey").unwrap().kind("hey", "http").unwrap();
        let options = [("connections".to_string(), 32.into())].into();
        let words = hey.words("hey", "http", "127.0.0.1:80", &options).unwrap();
        assert_eq!(words.join(" "), "-z 10s -c 32 http://127.0.0.1:80/");
        // dnspyre takes its server in its transport's form: the plain one is a default given
        // where no transport is.
        let dnspyre = find("dnspyre").unwrap().kind("dnspyre", "dns").unwrap();
        let with = |pairs: &[(&str, toml::Value)]| -> String {
            let options = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            dnspyre.words("dnspyre", "dns", "127.0.0.1:853", &options).unwrap().join(" ")
        };
        let fixed = "--no-progress --no-color --no-distribution --precision 3";
        assert_eq!(
            with(&[("doq", true.into()), ("max-outstanding", 8.into())]),
            format!("{fixed} --doh-method get -s quic://127.0.0.1:853 -c 8")
        );
        assert_eq!(
            with(&[("doh", "https://h/q?x={y}".into()), ("doh-post", true.into())]),
            format!("{fixed} -c 100 -s https://h/q?x={{y}} --doh-protocol 2 --doh-method post")
        );
        assert_eq!(
            with(&[("time-limit", "1.5s".into())]),
            format!("{fixed} --doh-method get -s 127.0.0.1:853 -c 100 --duration 1.5s")
        );
        let e = iperf3.kind("iperf3", "dns").unwrap_err();
        assert!(e.to_string().contains("makes no dns test"), "{e}");
        assert!(find("nope").unwrap_err().to_string().contains("iperf3"));
    }
}
