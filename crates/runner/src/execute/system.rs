//! A system's side of one run: the ports its templates name (allocated free on loopback), and
//! its config files and processes rendered with everything a template can name (`plan.rs` puts
//! them in the run's plan).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::dir_name;
use super::error::RunError;
use super::fixtures::Fixtures;
use crate::scenario::{OneOrMore, Process, Ready, System};
use crate::template::{self, FixturePart, Placeholder};
use crate::words;

/// Where a fixture is: a host (an IP address, or a name such as a Kubernetes Service) and a
/// port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FixtureAt {
    /// The host part.
    pub(crate) host: String,
    /// The port.
    pub(crate) port: u16,
    /// A DNS fixture's zone file, where the processes of its host read it.
    pub(crate) zone: Option<String>,
}

impl FixtureAt {
    /// At a socket address.
    pub(crate) fn of(a: &SocketAddr) -> Self {
        Self { host: a.ip().to_string(), port: a.port(), zone: None }
    }

    /// `HOST:PORT` (an IPv6 address in brackets).
    pub(crate) fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Everything a template of one run can name.
pub(crate) struct Bindings<'a> {
    ports: BTreeMap<String, u16>,
    files: BTreeMap<String, PathBuf>,
    fixtures: &'a Fixtures,
    /// Fixtures started on hosts for this run, by name.
    placed: BTreeMap<String, FixtureAt>,
    /// Every host's address.
    hosts: BTreeMap<String, String>,
    vars: &'a BTreeMap<String, String>,
    scenario_dir: &'a Path,
    dir: &'a Path,
}

impl<'a> Bindings<'a> {
    /// A free port for every `{port.NAME}` the system's templates use, a file in `dir` for
    /// each of its `file.NAME`s, the fixtures started on hosts for this run and the hosts'
    /// addresses.
    pub(crate) fn allocate(
        system: &System,
        vars: &'a BTreeMap<String, String>,
        fixtures: &'a Fixtures,
        (placed, hosts): (BTreeMap<String, FixtureAt>, BTreeMap<String, String>),
        scenario_dir: &'a Path,
        dir: &'a Path,
    ) -> Result<Self, RunError> {
        let names: BTreeSet<&str> = system
            .templates()
            .into_iter()
            .flat_map(|t| template::placeholders(t))
            .filter_map(|n| match Placeholder::of(n) {
                Some(Placeholder::Port(p)) => Some(p),
                _ => None,
            })
            .collect();
        let ports = names
            .into_iter()
            .map(|name| Ok((name.to_string(), free_port()?)))
            .collect::<Result<_, RunError>>()?;
        let files = system
            .file
            .keys()
            .map(|k| (k.clone(), dir.join(format!("{}.conf", dir_name(k)))))
            .collect();
        Ok(Self { ports, files, fixtures, placed, hosts, vars, scenario_dir, dir })
    }

    /// The ports allocated for the run's `{port.NAME}`s.
    pub(crate) fn ports(&self) -> Vec<u16> {
        self.ports.values().copied().collect()
    }

    /// The value of placeholder `name`, if this run has one.
    fn lookup(&self, name: &str) -> Option<String> {
        let fixture = |f: &str| {
            self.placed.get(f).cloned().or_else(|| self.fixtures.addrs.get(f).map(FixtureAt::of))
        };
        match Placeholder::of(name)? {
            Placeholder::Port(p) => self.ports.get(p).map(u16::to_string),
            Placeholder::File(f) => self.files.get(f).map(|p| p.display().to_string()),
            Placeholder::Fixture(f, FixturePart::Addr) => fixture(f).map(|a| a.addr()),
            Placeholder::Fixture(f, FixturePart::Port) => fixture(f).map(|a| a.port.to_string()),
            Placeholder::Fixture(f, FixturePart::Host) => fixture(f).map(|a| a.host),
            Placeholder::Fixture(f, FixturePart::Zone) => self
                .placed
                .get(f)
                .and_then(|a| a.zone.clone())
                .or_else(|| self.fixtures.zones.get(f).map(|p| p.display().to_string())),
            Placeholder::ScenarioDir => Some(self.scenario_dir.display().to_string()),
            Placeholder::RunDir => Some(self.dir.display().to_string()),
            Placeholder::HostAddr(h) => self.hosts.get(h).cloned(),
            Placeholder::Var(v) => self.vars.get(v).cloned(),
        }
    }

    /// `text` with every placeholder filled in, or the one that has no value.
    pub(crate) fn render(&self, text: &str) -> Result<String, RunError> {
        Ok(template::render(text, |n| self.lookup(n))?)
    }
}

/// A process of a system with its templates filled in: its words, environment and probe.
pub(crate) struct RenderedProcess {
    /// The command line, split into words.
    pub(crate) argv: Vec<String>,
    /// The system's environment and its own.
    pub(crate) env: BTreeMap<String, String>,
    /// Its readiness probe.
    pub(crate) ready: Option<Ready>,
}

/// `p` of `system` rendered with `b`.
pub(crate) fn rendered_process(
    system: &System,
    p: &Process,
    b: &Bindings<'_>,
) -> Result<RenderedProcess, RunError> {
    let mut env = system.env.clone();
    env.extend(p.env.clone());
    let env = env
        .into_iter()
        .map(|(k, v)| Ok((k, b.render(&v)?)))
        .collect::<Result<BTreeMap<_, _>, RunError>>()?;
    let argv = words::split(&b.render(&p.cmd)?)?;
    let ready = p.ready.as_ref().map(|r| rendered_ready(r, b)).transpose()?;
    Ok(RenderedProcess { argv, env, ready })
}

/// The system's config files rendered, each with its path (on the hosts that run its
/// processes).
pub(crate) fn rendered_files(
    system: &System,
    b: &Bindings<'_>,
) -> Result<Vec<(PathBuf, String)>, RunError> {
    system
        .file
        .iter()
        .map(|(name, content)| {
            let text = b.render(content).map_err(|e| e.of(format!("file.{name}")))?;
            Ok((b.files[name].clone(), text))
        })
        .collect()
}

/// A probe with its templates filled in.
pub(crate) fn rendered_ready(r: &Ready, b: &Bindings<'_>) -> Result<Ready, RunError> {
    let one = |t: &Option<String>| t.as_deref().map(|t| b.render(t)).transpose();
    let many = |t: &Option<OneOrMore>| {
        t.as_ref()
            .map(|m| {
                let items =
                    m.items().into_iter().map(|i| b.render(i)).collect::<Result<Vec<_>, _>>()?;
                Ok::<_, RunError>(OneOrMore::More(items))
            })
            .transpose()
    };
    Ok(Ready {
        tcp: many(&r.tcp)?,
        udp: one(&r.udp)?,
        http: one(&r.http)?,
        dns: one(&r.dns)?,
        log: many(&r.log)?,
        timeout: r.timeout.clone(),
    })
}

/// Ports handed out lately, never handed out again soon: a port taken by a process on
/// another host (a namespace, an ssh host) is free on this machine's loopback, and two roles
/// of one run must not be given the same one.
static HANDED_OUT: std::sync::Mutex<std::collections::VecDeque<u16>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// How many recent ports [`HANDED_OUT`] remembers.
const REMEMBERED: usize = 4096;

/// A TCP port free on loopback now, whose UDP port is free too, and not handed out lately.
pub(crate) fn free_port() -> Result<u16, RunError> {
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let local = |e: std::io::Error| RunError::Local(format!("a port on loopback: {e}"));
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").map_err(local)?;
        let port = tcp.local_addr().map_err(local)?.port();
        if !handed.contains(&port) && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            if handed.len() >= REMEMBERED {
                handed.pop_front();
            }
            handed.push_back(port);
            return Ok(port);
        }
    }
    Err(RunError::Local("no free port on loopback".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_handed_out_in_a_row_are_all_different_even_when_none_is_kept_open() {
        // A port is free here again as soon as it is handed out (its process binds it on
        // another host); it must still not be handed out twice.
        let ports: BTreeSet<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        assert_eq!(ports.len(), 200);
    }
}
