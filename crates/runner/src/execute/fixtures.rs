//! A scenario's fixtures, started in-process on loopback before its first run: wirespeed's
//! server (a bandwidth sink), the HTTP fixture and the DNS fixture, each on its own port.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;
use wirespeed_engine::kinds::dns::fixture::{self as dns_fixture, read_zone_file, DnsListeners};
use wirespeed_engine::kinds::http::fixture::{self as http_fixture, FixtureConfig};
use wirespeed_engine::kinds::http::fixture_h3 as http_fixture_h3;
use wirespeed_engine::server::{self, Listeners, ServerConfig};
use wirespeed_model::units::parse_bytes;
use wirespeed_proto::dns::zone::Zone;

use super::dir_name;
use crate::scenario::{Fixture, FixtureKind, Scenario};

/// The fixtures' addresses by name, the DNS fixtures' zone files, and what stops them.
pub(crate) struct Fixtures {
    /// Where each listens.
    pub(crate) addrs: BTreeMap<String, SocketAddr>,
    /// Each DNS fixture's zone file, for `{fixture.NAME.zone}`.
    pub(crate) zones: BTreeMap<String, PathBuf>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Fixtures {
    /// Starts the fixtures of `s`; a DNS fixture's generated zone is written under `out`.
    pub(crate) async fn start(s: &Scenario, out: &Path) -> Result<Self> {
        let mut fixtures = Self {
            addrs: BTreeMap::new(),
            zones: BTreeMap::new(),
            stop: CancellationToken::new(),
            tasks: Vec::new(),
        };
        // A fixture on a host runs there, as a process of each run (`placement.rs`).
        let here = s.hosts_mode() == crate::scenario::HostsMode::Local;
        for f in s.fixture.iter().filter(|f| here || f.host.is_none()) {
            let addr =
                fixtures.start_one(f, out).with_context(|| format!("fixture {:?}", f.name))?;
            fixtures.addrs.insert(f.name.clone(), addr);
        }
        Ok(fixtures)
    }

    /// No fixture at all (every one runs on its host).
    pub(crate) fn none() -> Self {
        Self {
            addrs: BTreeMap::new(),
            zones: BTreeMap::new(),
            stop: CancellationToken::new(),
            tasks: Vec::new(),
        }
    }

    /// Binds and spawns one fixture; its address.
    fn start_one(&mut self, f: &Fixture, out: &Path) -> Result<SocketAddr> {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let stop = self.stop.clone();
        let (addr, task) = match f.kind {
            FixtureKind::BandwidthSink => {
                let l = Listeners::bind(&[any])?;
                let addr = l.local_addrs()[0];
                (
                    addr,
                    tokio::spawn(async move {
                        drop(server::run(l, ServerConfig::default(), stop).await)
                    }),
                )
            }
            FixtureKind::Http => {
                let body_bytes = match &f.body_size {
                    Some(b) => parse_bytes(b).with_context(|| format!("body_size {b:?}"))?,
                    None => FixtureConfig::default().body_bytes,
                };
                let l = Listeners::bind_tcp(&[any], 0)?;
                let addr = l[0].local_addr()?;
                let mut config = FixtureConfig { body_bytes, ..Default::default() };
                if f.h3 {
                    // HTTP/3 on the TCP port's number, with a certificate made now.
                    let (tls, _) = http_fixture_h3::identity(None)?;
                    config.h3.push(http_fixture_h3::endpoint(addr, tls.clone())?);
                    config.tls = Some(tls);
                }
                (addr, tokio::spawn(async move { drop(http_fixture::run(l, config, stop).await) }))
            }
            FixtureKind::Dns => {
                let file = zone_file(f, out)?;
                let zone = read_zone_file(&file, None).map_err(|e| anyhow::anyhow!("{e}"))?;
                self.zones.insert(f.name.clone(), file);
                let l = DnsListeners::bind(&[any], 1)?;
                let addr = l.local_addrs()[0];
                let zone = Arc::new(zone);
                (addr, tokio::spawn(async move { drop(dns_fixture::run(l, zone, stop).await) }))
            }
        };
        self.tasks.push(task);
        Ok(addr)
    }

    /// Stops every fixture and waits for it.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// A DNS fixture's zone: the file it names, or a generated zone written under `out`.
pub(crate) fn zone_file(f: &Fixture, out: &Path) -> Result<PathBuf> {
    if let Some(path) = &f.zone {
        return Ok(std::path::absolute(path)?);
    }
    let dir = out.join("fixtures");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(format!("{}.zone", dir_name(&f.name)));
    std::fs::write(&file, Zone::generated_text(1000))?;
    Ok(std::path::absolute(&file)?)
}
