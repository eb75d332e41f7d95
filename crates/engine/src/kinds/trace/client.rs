//! The trace client. Each round sends one probe to every TTL from `--first-ttl` up to the
//! destination's distance (up to `--max-hops` until the destination has answered), all at
//! once as mtr does, then listens up to `-W` for the answers on a raw ICMP socket (and, for
//! TCP, on the probes' own sockets). A hop's loss is its unanswered probes; its times are
//! each answer's round trip. Classic mode runs `-q` rounds back to back; `--mtr` runs a round
//! every `-i` until `-c` rounds or Ctrl-C, and every round's table goes out as an event.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use wirespeed_model::histogram::RttHistogram;
use wirespeed_model::kinds::trace::{HopStats, TraceReport, TraceRound, TraceSpec, TraceSummary};
use wirespeed_model::report::{Report, ReportBody};
use wirespeed_model::spec::TestSpec;
use wirespeed_model::Event;

use super::probes::{Heard, Key, Pending, Prober};
use crate::error::ClientError;
use crate::net::handshake::{self, Endpoint};
use crate::net::icmp::{IcmpSocket, IcmpSocketKind};
use crate::run::blocking::run_stoppable;

/// Everything a trace needs.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// The test.
    pub spec: TraceSpec,
    /// The host (its port is unused; the spec has the probes' port).
    pub endpoint: Endpoint,
}

/// Runs one trace and returns its report; each round's hops go to `events`.
pub async fn run(
    opts: TraceOptions,
    events: UnboundedSender<Event>,
    cancel: CancellationToken,
) -> Result<Report, ClientError> {
    let ep = &opts.endpoint;
    let spec = opts.spec.clone();
    let start_wall = SystemTime::now();
    let to = handshake::resolve(&ep.host, 0, ep.family).await?[0].ip();
    let icmp = IcmpSocket::open(to.is_ipv6(), IcmpSocketKind::Raw).map_err(|e| {
        let source = if e.kind() == io::ErrorKind::PermissionDenied {
            io::Error::new(
                e.kind(),
                "trace listens for routers' ICMP answers on a raw socket, which needs root or \
                 CAP_NET_RAW (setcap cap_net_raw+ep on the binary); try ping --tcp PORT instead",
            )
        } else {
            e
        };
        ClientError::Local { context: "opening a raw ICMP socket".into(), cause: source }
    })?;
    let local = ClientError::local("preparing probes");
    if let Some(b) = ep.bind {
        icmp.bind(b).map_err(&local)?;
    }
    let prober = Prober::new(spec.protocol, to, spec.port, ep.bind).map_err(local)?;
    let mut meta = crate::run::meta::run_meta(&ep.version, start_wall, None);
    meta.remote_addr = Some(to.to_string());
    let _ = events.send(Event::Start { spec: TestSpec::Trace(spec.clone()), meta: meta.clone() });
    let traced = {
        let (spec, events) = (spec.clone(), events.clone());
        run_stoppable(&cancel, move |stop| {
            let mut path = Path::new(&spec, to);
            path.trace(&icmp, prober, &events, stop).map(|()| path.summary())
        })
        .await?
    };
    let summary = traced.map_err(|source| match source.raw_os_error() {
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => {
            ClientError::Unreachable { target: to.to_string(), cause: source }
        }
        _ => ClientError::Local { context: "probing".into(), cause: source },
    })?;
    if cancel.is_cancelled() {
        meta.notes.push("interrupted: the test was stopped early by the user".into());
    }
    let report = Report { body: ReportBody::Trace(TraceReport { spec, summary }), meta };
    let _ = events.send(Event::End(Box::new(report.clone())));
    Ok(report)
}

/// What one TTL has answered so far.
#[derive(Default)]
struct Hop {
    addresses: Vec<IpAddr>,
    sent: u64,
    received: u64,
    last_ns: Option<u64>,
    histogram: RttHistogram,
    reached: bool,
    note: Option<String>,
}

impl Hop {
    fn stats(&self, ttl: u8) -> HopStats {
        HopStats {
            ttl,
            addresses: self.addresses.iter().map(IpAddr::to_string).collect(),
            sent: self.sent,
            received: self.received,
            loss_ratio: if self.sent == 0 {
                0.0
            } else {
                (self.sent - self.received) as f64 / self.sent as f64
            },
            last_ns: self.last_ns,
            rtt: self.histogram.stats(),
            reached: self.reached,
            note: self.note.clone(),
        }
    }
}

/// The path as learned so far.
struct Path<'a> {
    spec: &'a TraceSpec,
    to: IpAddr,
    begin: Instant,
    hops: BTreeMap<u8, Hop>,
    /// The lowest TTL at which the destination (or an unreachable) answered.
    end_ttl: Option<u8>,
    rounds: u32,
    probes_sent: u64,
}

impl<'a> Path<'a> {
    fn new(spec: &'a TraceSpec, to: IpAddr) -> Self {
        Self {
            spec,
            to,
            begin: Instant::now(),
            hops: BTreeMap::new(),
            end_ttl: None,
            rounds: 0,
            probes_sent: 0,
        }
    }

    fn more_rounds(&self, stop: &AtomicBool) -> bool {
        !stop.load(Relaxed) && self.spec.rounds.is_none_or(|r| self.rounds < r)
    }

    fn trace(
        &mut self,
        icmp: &IcmpSocket,
        mut prober: Prober,
        events: &UnboundedSender<Event>,
        stop: &AtomicBool,
    ) -> io::Result<()> {
        let interval = Duration::from_nanos(self.spec.interval_ns);
        let mut buf = vec![0u8; 65_536];
        while self.more_rounds(stop) {
            let started = Instant::now();
            self.round(icmp, &mut prober, &mut buf, stop)?;
            self.rounds += 1;
            let _ = events.send(Event::TraceRound(TraceRound {
                rounds: self.rounds,
                hops: self.hop_stats(),
            }));
            while self.more_rounds(stop) && started.elapsed() < interval {
                std::thread::sleep((interval - started.elapsed()).min(Duration::from_millis(100)));
            }
        }
        Ok(())
    }

    /// One probe per TTL, then the answers.
    fn round(
        &mut self,
        icmp: &IcmpSocket,
        prober: &mut Prober,
        buf: &mut [u8],
        stop: &AtomicBool,
    ) -> io::Result<()> {
        let last = self.end_ttl.unwrap_or(self.spec.max_hops);
        let mut pending: HashMap<Key, Pending> = HashMap::new();
        for ttl in self.spec.first_ttl..=last {
            let (key, p) = prober.send(icmp, ttl, self.probes_sent)?;
            self.probes_sent += 1;
            self.hops.entry(ttl).or_default().sent += 1;
            pending.insert(key, p);
            // Take what has already come back, so a quick answer is not left waiting behind
            // the rest of the round's sends (TCP has no kernel arrival stamp).
            self.collect(icmp, prober, &mut pending, buf, Duration::ZERO)?;
        }
        let deadline = Instant::now() + Duration::from_nanos(self.spec.timeout_ns);
        loop {
            // Probes beyond the destination only reach it again; stop waiting for them.
            if let Some(end) = self.end_ttl {
                pending.retain(|_, p| p.ttl <= end);
            }
            let now = Instant::now();
            if pending.is_empty() || now >= deadline || stop.load(Relaxed) {
                return Ok(());
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            self.collect(icmp, prober, &mut pending, buf, wait)?;
        }
    }

    /// Waits up to `wait` for answers and records every one that matches a pending probe.
    fn collect(
        &mut self,
        icmp: &IcmpSocket,
        prober: &Prober,
        pending: &mut HashMap<Key, Pending>,
        buf: &mut [u8],
        wait: Duration,
    ) -> io::Result<()> {
        let (mut heard, readable) = prober.wait(icmp, pending.iter(), wait)?;
        if readable {
            while let Some(m) = icmp.recv(buf, Duration::ZERO)? {
                heard.extend(prober.heard(icmp, &m));
            }
        }
        for h in heard {
            if let Some(p) = pending.remove(&h.key) {
                self.answered(p, h);
            }
        }
        Ok(())
    }

    fn answered(&mut self, p: Pending, h: Heard) {
        // The kernel's arrival stamp when there is one: answers read after a burst of sends
        // are not made later by the sending.
        let rtt = match h.received_ns {
            Some(at) if at >= p.sent_wall_ns => (at - p.sent_wall_ns) as u64,
            _ => p.sent.elapsed().as_nanos() as u64,
        };
        let hop = self.hops.entry(p.ttl).or_default();
        hop.received += 1;
        hop.last_ns = Some(rtt);
        hop.histogram.record(rtt);
        if !hop.addresses.contains(&h.from) {
            hop.addresses.push(h.from);
        }
        if h.note.is_some() {
            hop.note = h.note;
        }
        if h.reached || hop.note.is_some() {
            hop.reached |= h.reached;
            self.end_ttl = Some(self.end_ttl.map_or(p.ttl, |e| e.min(p.ttl)));
        }
    }

    fn hop_stats(&self) -> Vec<HopStats> {
        let end = self.end_ttl.unwrap_or(u8::MAX);
        self.hops.iter().filter(|(&ttl, _)| ttl <= end).map(|(&ttl, h)| h.stats(ttl)).collect()
    }

    fn summary(&self) -> TraceSummary {
        let hops = self.hop_stats();
        TraceSummary {
            address: self.to.to_string(),
            reached: hops.last().is_some_and(|h| h.reached),
            rounds: self.rounds,
            duration_ns: self.begin.elapsed().as_nanos() as u64,
            hops,
        }
    }
}
