//! `bandwidth --latency`: the shared probers ([`crate::net::probe`]), TCP handshakes and UDP
//! echoes, run beside a test and read back by the test's own time so each interval carries
//! the round trips probed during it.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;
use wirespeed_model::histogram::LatencyStats;
use wirespeed_proto::codec::SESSION_ID_LEN;

use super::collect::ProbeWindow;
use crate::net::probe::{self, Prober};

/// Probes before the test: the idle round trip.
const IDLE_PROBES: u32 = 10;

/// The UDP echo probes: their idle figures, the socket until the test starts, then the prober.
#[derive(Debug)]
struct Echoes {
    idle: (LatencyStats, u64),
    socket: Option<UdpSocket>,
    prober: Option<Prober>,
}

/// The idle probes' figures, then the probers running beside the test.
#[derive(Debug)]
pub(crate) struct Probing {
    idle: (LatencyStats, u64),
    prober: Option<Prober>,
    echoes: Option<Echoes>,
    began: Option<Instant>,
    to: SocketAddr,
    session: [u8; SESSION_ID_LEN],
}

impl Probing {
    /// Probes `to` while nothing else runs: call before the test's streams open. UDP echoes go
    /// from `bind` (the control connection's address) for `session`; the note says why there
    /// are none when the server answers none.
    pub(crate) async fn idle(
        to: SocketAddr,
        bind: Option<IpAddr>,
        session: [u8; SESSION_ID_LEN],
    ) -> (Self, Option<String>) {
        let tcp = probe::idle(to, IDLE_PROBES).await;
        let (echoes, note) = match probe::echo_socket(to, bind).await {
            Err(e) => (None, Some(format!("no UDP echo probes: {e}"))),
            Ok(socket) => match probe::idle_echo(&socket, session, IDLE_PROBES).await {
                Some(idle) => (Some(Echoes { idle, socket: Some(socket), prober: None }), None),
                None => (
                    None,
                    Some(
                        "no UDP echo probes: the server answered none (a wirespeed server older \
                         than this client, or UDP blocked on the path); TCP handshakes only"
                            .into(),
                    ),
                ),
            },
        };
        let probing = Self { idle: tcp, prober: None, echoes, began: None, to, session };
        (probing, note)
    }

    /// Starts probing beside the test that began at `begin`.
    pub(crate) fn start(mut self, begin: Instant) -> Self {
        self.prober = Some(Prober::start(self.to));
        if let Some(e) = &mut self.echoes {
            e.prober = e.socket.take().map(|s| Prober::echo(s, self.session));
        }
        self.began = Some(begin);
        self
    }

    /// `prober`'s probes that ended in the test's `[start_ns, end_ns)`.
    fn window(&self, prober: Option<&Prober>, start_ns: u64, end_ns: u64) -> (LatencyStats, u64) {
        match (prober, self.began) {
            (Some(p), Some(begin)) => p.between(
                begin + Duration::from_nanos(start_ns),
                begin + Duration::from_nanos(end_ns),
            ),
            _ => (LatencyStats::default(), 0),
        }
    }
}

impl ProbeWindow for Probing {
    fn between(&self, start_ns: u64, end_ns: u64) -> (LatencyStats, u64) {
        self.window(self.prober.as_ref(), start_ns, end_ns)
    }

    fn idle(&self) -> (LatencyStats, u64) {
        self.idle
    }

    fn udp_between(&self, start_ns: u64, end_ns: u64) -> Option<(LatencyStats, u64)> {
        let echoes = self.echoes.as_ref()?;
        Some(self.window(echoes.prober.as_ref(), start_ns, end_ns))
    }

    fn udp_idle(&self) -> Option<(LatencyStats, u64)> {
        self.echoes.as_ref().map(|e| e.idle)
    }
}
