//! The data path of a bandwidth test: one OS thread per stream end, blocking sockets, large
//! buffers and batched system calls (UDP GSO, `sendmmsg`, `recvmmsg` with GRO). Threads share
//! a [`Shared`] with the control task: flags to stop sending, drain, or abort, and per-flow byte
//! budgets for `-n`. Each thread publishes its running totals in its [`Counters`] and reports its
//! CPU time when it ends.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use wirespeed_model::diagnosis::ThreadCpu;
use wirespeed_model::kinds::bandwidth::{BandwidthSpec, End, Flow};
use wirespeed_model::rules::Protocol;
use wirespeed_proto::control::StreamTotals;
use wirespeed_proto::datagram::{ReceiverStats, Wire, HELLO_ACK_MAGIC, HELLO_MAGIC};

use crate::kinds::bandwidth::counters::Counters;
use crate::kinds::bandwidth::quic_ends::{QuicEnd, QuicSide};
use crate::kinds::bandwidth::shared::{Role, Shared};
use crate::net::buffer::PageBuf;
use crate::net::sys;
use crate::run::pacer::{paced_piece, udp_batch, Pacer};
use crate::server::ctx::Attached;

/// Largest number of datagrams one UDP send or receive call handles.
const MAX_BATCH: usize = 64;
/// A UDP receiver that has been told to drain leaves after this much silence.
const UDP_QUIET: Duration = Duration::from_millis(60);
/// …or after this long, whatever arrives.
const UDP_DRAIN_MAX: Duration = Duration::from_secs(1);
/// How often blocked socket calls wake up to look at the flags.
const POLL: Duration = Duration::from_millis(100);
/// How often a paced sender waiting for its next send looks at the flags: the end of a
/// low-rate test then waits milliseconds for it, not a whole [`POLL`].
const PACE_POLL: Duration = Duration::from_millis(5);
/// Read buffer for TCP receivers: large reads mean fewer system calls per byte.
const TCP_READ_BUF: usize = 256 * 1024;
/// Bytes that must be queued before an unpaced TCP receiver is woken (`SO_RCVLOWAT`). Waking
/// once per 128 KiB instead of once per segment cut the receiver's context switches roughly
/// tenfold on loopback and raised single-stream throughput by about a fifth on two cores.
const TCP_WAKE_BYTES: u32 = 128 * 1024;

/// How long stream ends may go without moving a byte while they finish after `Stop`. What is
/// still queued when the senders stop (socket buffers, a relay's buffers, a bottleneck's queue)
/// drains at the path's rate: seconds on a slow path behind a relay (regression: a fixed five
/// seconds aborted a 1-second test through a tcp forward on a 30 ms, 100 Mbit/s path), so
/// only a stall, or [`FINISH_LIMIT`], ends the wait.
pub(crate) const FINISH_STALL: Duration = Duration::from_secs(5);
/// The longest the stream ends may take to finish after `Stop`, moving or not.
pub(crate) const FINISH_LIMIT: Duration = Duration::from_secs(60);
/// How often finishing looks at the byte counts.
const FINISH_LOOK: Duration = Duration::from_millis(250);

/// The watch over one side's finishing: when it began, and when a byte last moved.
#[derive(Debug)]
pub(crate) struct Finishing {
    began: Instant,
    moved: u64,
    moved_at: Instant,
}

impl Finishing {
    pub(crate) fn new() -> Self {
        let now = Instant::now();
        Self { began: now, moved: 0, moved_at: now }
    }

    /// Takes the side's byte count; false once nothing moved for [`FINISH_STALL`] or the
    /// finishing has lasted [`FINISH_LIMIT`].
    fn still_moving(&mut self, moved: u64) -> bool {
        let now = Instant::now();
        if moved != self.moved {
            self.moved = moved;
            self.moved_at = now;
        }
        now - self.moved_at < FINISH_STALL && now - self.began < FINISH_LIMIT
    }
}

/// How a data thread ended.
#[derive(Debug, Clone)]
pub(crate) struct WorkerDone {
    /// Sender or receiver.
    pub role: Role,
    /// User-mode CPU nanoseconds the thread used.
    pub cpu_user_ns: u64,
    /// Kernel-mode CPU nanoseconds the thread used.
    pub cpu_system_ns: u64,
    /// The thread's use of the CPU over its life, for the diagnosis.
    pub usage: ThreadCpu,
    /// Set when the stream failed rather than finished.
    pub error: Option<String>,
}

/// One stream end on this side.
#[derive(Debug)]
pub(crate) struct StreamEnd {
    /// Its flow.
    pub flow: Flow,
    /// Stream number within the flow, from 1.
    pub id: u16,
    /// Sender or receiver.
    pub role: Role,
    /// Its running totals.
    pub counters: Arc<Counters>,
    socket: Arc<Socket>,
    tcp: bool,
    thread: Option<JoinHandle<()>>,
    /// Keeps a server's data connection counted as open while the test holds it.
    _open: Option<Arc<wirespeed_metrics::ConnectionRecord>>,
}

/// All stream ends of one side of one test.
#[derive(Debug)]
pub(crate) struct Side {
    /// Flags and budgets shared with the threads.
    pub shared: Arc<Shared>,
    /// The stream ends, in (flow, id) order.
    pub ends: Vec<StreamEnd>,
    done_rx: UnboundedReceiver<WorkerDone>,
    /// Workers that have ended so far.
    pub done: Vec<WorkerDone>,
}

impl Side {
    /// Starts a worker thread per attached socket. `me` says which end this side is; `wire`
    /// how UDP datagrams carry their header.
    pub(crate) fn start(
        me: End,
        spec: &BandwidthSpec,
        wire: Wire,
        quic: Option<QuicSide>,
        mut sockets: Vec<Attached>,
    ) -> io::Result<Self> {
        if spec.protocol == Protocol::Quic && quic.is_none() {
            return Err(io::Error::other("a QUIC test needs its QUIC settings"));
        }
        sockets.sort_by_key(|a| (a.flow, a.id));
        let shared = Arc::new(Shared::new(Instant::now(), spec));
        let (done_tx, done_rx) = unbounded_channel();
        let mut ends = Vec::with_capacity(sockets.len());
        for a in sockets {
            let role = if a.flow.sender() == me { Role::Send } else { Role::Recv };
            let counters = Arc::new(Counters::default());
            let socket = Arc::new(a.socket);
            let job = Job {
                flow: a.flow,
                id: a.id,
                role,
                spec: spec.clone(),
                wire,
                quic: quic.clone(),
                socket: socket.clone(),
                counters: counters.clone(),
                shared: shared.clone(),
                done: done_tx.clone(),
            };
            let name = format!(
                "ws-{}-{}{}",
                if role == Role::Send { "tx" } else { "rx" },
                flow_char(a.flow),
                a.id
            );
            let thread = std::thread::Builder::new().name(name).spawn(move || job.run())?;
            ends.push(StreamEnd {
                flow: a.flow,
                id: a.id,
                role,
                counters,
                socket,
                tcp: spec.protocol == Protocol::Tcp,
                thread: Some(thread),
                _open: a.open,
            });
        }
        Ok(Self { shared, ends, done_rx, done: Vec::new() })
    }

    /// Current totals of every stream end, refreshing TCP_INFO of sending sockets first.
    pub(crate) fn snapshot(&self) -> Vec<StreamTotals> {
        self.ends
            .iter()
            .map(|e| {
                if e.tcp
                    && e.role == Role::Send
                    && e.thread.as_ref().is_some_and(|t| !t.is_finished())
                {
                    if let Some(s) = sys::tcp_sample(e.socket.as_raw_fd()) {
                        e.counters.set_tcp(s);
                    }
                }
                StreamTotals { flow: e.flow, id: e.id, totals: e.counters.snapshot() }
            })
            .collect()
    }

    /// All-zero totals for every stream end: the state before any data moved, which is the
    /// warm-up's end when there is no warm-up (a snapshot would already count some bytes).
    pub(crate) fn zeros(&self) -> Vec<StreamTotals> {
        self.ends
            .iter()
            .map(|e| StreamTotals { flow: e.flow, id: e.id, totals: Default::default() })
            .collect()
    }

    /// Tells senders to stop; each then half-closes its TCP stream so the receiver sees EOF.
    pub(crate) fn stop_sending(&self) {
        self.shared.stop_sending();
    }

    /// Tells UDP receivers to leave once the stream falls quiet.
    pub(crate) fn drain(&self) {
        self.shared.begin_drain();
    }

    /// Stops everything at once: flags every thread and shuts every socket down.
    pub(crate) fn abort(&self) {
        self.shared.abort();
        for e in &self.ends {
            let _ = e.socket.shutdown(Shutdown::Both);
        }
    }

    /// True when every end with `role` has finished.
    pub(crate) fn finished(&self, role: Role) -> bool {
        let want = self.ends.iter().filter(|e| e.role == role).count();
        self.done.iter().filter(|d| d.role == role).count() >= want
    }

    /// Waits for the next worker to end; `None` once all have.
    pub(crate) async fn next_done(&mut self) -> Option<WorkerDone> {
        if self.done.len() >= self.ends.len() {
            return None;
        }
        let d = self.done_rx.recv().await?;
        self.done.push(d.clone());
        Some(d)
    }

    /// Waits until every end with `role` has finished.
    pub(crate) async fn wait_role(&mut self, role: Role) {
        while !self.finished(role) {
            if self.next_done().await.is_none() {
                break;
            }
        }
    }

    /// Bytes every end has counted so far, both ways: how finishing ends see progress.
    fn moved(&self) -> u64 {
        self.ends.iter().map(|e| e.counters.moved()).sum()
    }

    /// Waits until every end with `role` has finished, as long as `finishing` allows: false
    /// when the ends stopped moving data or took too long in all.
    pub(crate) async fn finish_role(&mut self, role: Role, finishing: &mut Finishing) -> bool {
        loop {
            match tokio::time::timeout(FINISH_LOOK, self.wait_role(role)).await {
                Ok(()) => return true,
                Err(_) => {
                    if !finishing.still_moving(self.moved()) {
                        return false;
                    }
                }
            }
        }
    }

    /// Each ended worker's use of the CPU over its life.
    pub(crate) fn thread_usage(&self) -> Vec<ThreadCpu> {
        self.done.iter().map(|d| d.usage.clone()).collect()
    }

    /// Sum of CPU time the workers that ended used: (user, system) nanoseconds.
    pub(crate) fn cpu_ns(&self) -> (u64, u64) {
        self.done.iter().fold((0, 0), |(u, s), d| (u + d.cpu_user_ns, s + d.cpu_system_ns))
    }

    /// Per flow, nanoseconds from `from_ns` to the last activity of its receiving (or, for
    /// `role == Send`, sending) ends.
    pub(crate) fn active_ns(&self, role: Role, from_ns: u64) -> Vec<(Flow, u64)> {
        let mut out: Vec<(Flow, u64)> = Vec::new();
        for e in self.ends.iter().filter(|e| e.role == role) {
            let ns = e.counters.last_activity_ns().saturating_sub(from_ns);
            match out.iter_mut().find(|(f, _)| *f == e.flow) {
                Some((_, v)) => *v = (*v).max(ns),
                None => out.push((e.flow, ns)),
            }
        }
        out
    }

    /// When the last stream end's span closed (see `Counters::end_at`), nanoseconds since
    /// begin: the end of the test's last interval, rather than when the control exchange that
    /// follows it finished.
    /// Now, when no end has moved anything.
    pub(crate) fn ended_ns(&self) -> u64 {
        match self.ends.iter().map(|e| e.counters.last_activity_ns()).max() {
            Some(ns) if ns > 0 => ns,
            _ => self.shared.now_ns(),
        }
    }

    /// The first error a worker reported, if any.
    pub(crate) fn first_error(&self) -> Option<String> {
        self.done.iter().find_map(|d| d.error.clone())
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        self.abort();
        for e in &mut self.ends {
            if let Some(t) = e.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn flow_char(flow: Flow) -> char {
    match flow {
        Flow::Upload => 'u',
        Flow::Download => 'd',
    }
}

struct Job {
    flow: Flow,
    id: u16,
    role: Role,
    spec: BandwidthSpec,
    wire: Wire,
    quic: Option<QuicSide>,
    socket: Arc<Socket>,
    counters: Arc<Counters>,
    shared: Arc<Shared>,
    done: UnboundedSender<WorkerDone>,
}

impl Job {
    fn run(self) {
        let born = Instant::now();
        let _ = self.socket.set_read_timeout(Some(POLL));
        let _ = self.socket.set_write_timeout(Some(POLL));
        let result = match (self.spec.protocol, self.role) {
            (Protocol::Tcp, Role::Send) => self.tcp_send(),
            (Protocol::Tcp, Role::Recv) => self.tcp_recv(),
            (Protocol::Udp, Role::Send) => self.udp_send(),
            (Protocol::Udp, Role::Recv) => self.udp_recv(),
            (Protocol::Quic, _) => self.quic(),
        };
        if result.is_ok() && !self.shared.aborted() {
            // The end's span closes where the stream did, not at its last data (see end_at):
            // a sender's when it was told to stop (it may notice a poll later) or spent its
            // budget, a UDP receiver's when it was told the sender had stopped, a TCP
            // receiver's at end of stream.
            let stopped_at = self.shared.stop_started_ns();
            self.counters.end_at(match (self.spec.protocol, self.role) {
                (Protocol::Udp, Role::Recv) => self.shared.drain_started_ns(),
                (_, Role::Send) if stopped_at > 0 => stopped_at,
                _ => self.shared.now_ns(),
            });
        }
        let usage = crate::run::threads::own_usage(born);
        let (cpu_user_ns, cpu_system_ns) = (usage.user_ns, usage.system_ns);
        let error = match result {
            Ok(()) => None,
            Err(_) if self.shared.aborted() => None,
            Err(e) => Some(format!(
                "{} stream {} ({}): {e}",
                flow_name(self.flow),
                self.id,
                role_name(self.role)
            )),
        };
        let done = WorkerDone { role: self.role, cpu_user_ns, cpu_system_ns, usage, error };
        let _ = self.done.send(done);
    }

    /// Waits until `bytes` more are due on the schedule. False when the test stopped first:
    /// those bytes were not due within the test, so they are not sent.
    fn pace(&self, pacer: &mut Pacer, bytes: u64) -> bool {
        let mut wait = pacer.reserve(bytes, self.shared.now_ns());
        while wait > 0 {
            if self.shared.stopping() {
                return false;
            }
            let step = wait.min(PACE_POLL.as_nanos() as u64);
            std::thread::sleep(Duration::from_nanos(step));
            wait -= step;
        }
        !self.shared.stopping()
    }

    fn quic(&self) -> io::Result<()> {
        let Some(side) = &self.quic else {
            return Err(io::Error::other("no QUIC settings"));
        };
        if self.spec.window.is_none() {
            // quinn sends and receives in batches (GSO, GRO): room for a few of them.
            sys::raise_sndbuf(self.socket.as_raw_fd(), 4 << 20);
            sys::raise_rcvbuf(self.socket.as_raw_fd(), 4 << 20);
        }
        QuicEnd {
            flow: self.flow,
            role: self.role,
            spec: &self.spec,
            socket: &self.socket,
            counters: &self.counters,
            shared: &self.shared,
            side,
        }
        .run()
    }

    fn tcp_send(&self) -> io::Result<()> {
        let len = self.spec.length as usize;
        let mut buf = PageBuf::zeroed(len);
        sys::fill_random(&mut buf);
        let file = if self.spec.zerocopy { Some(sys::payload_file(&buf)?) } else { None };
        let mut pacer = Pacer::bytes(self.spec.bitrate_bps, self.shared.now_ns());
        if pacer.is_limited() {
            sys::tighten_timer_slack();
        }
        let piece = paced_piece(self.spec.bitrate_bps, len);
        let sock = &*self.socket;
        let fd = sock.as_raw_fd();
        let result = (|| -> io::Result<()> {
            while !self.shared.stopping() {
                let chunk = self.shared.claim(self.flow, piece as u64) as usize;
                if chunk == 0 {
                    break; // the -n budget is spent
                }
                if !self.pace(&mut pacer, chunk as u64) {
                    break;
                }
                let mut off = 0;
                while off < chunk {
                    let r = match &file {
                        Some(f) => sys::sendfile(fd, f, off as u64, chunk - off),
                        None => (&*sock).write(&buf[off..chunk]),
                    };
                    match r {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => {
                            off += n;
                            self.counters.add(n as u64, 0);
                        }
                        Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                            if self.shared.aborted() {
                                return Ok(());
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                self.counters.touch(self.shared.now_ns());
            }
            Ok(())
        })();
        if let Some(s) = sys::tcp_sample(fd) {
            self.counters.set_tcp(s);
        }
        // Half-close: the receiver reads everything still in flight, then sees EOF.
        let _ = sock.shutdown(Shutdown::Write);
        result
    }

    fn tcp_recv(&self) -> io::Result<()> {
        // Only when nothing caps the rate or the window: a paced stream should be counted as it
        // arrives, and a fixed small buffer might never hold the low-water mark (the read then
        // waits for the POLL timeout). EOF and the timeout still return whatever is queued.
        let fd = self.socket.as_raw_fd();
        let wake = if self.spec.bitrate_bps == 0 && self.spec.window.is_none() {
            TCP_WAKE_BYTES
        } else {
            0
        };
        // The mark starts as high as the buffer allows and follows it up as autotuning grows it
        // (see `raise_rcvlowat` for why it must not go higher), looked at every few reads.
        let mut mark = sys::raise_rcvlowat(fd, wake, 0);
        let mut reads: u32 = 0;
        let mut buf = PageBuf::zeroed(TCP_READ_BUF);
        let quick_ack = self.spec.window.is_some();
        loop {
            match (&*self.socket).read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    reads = reads.wrapping_add(1);
                    if mark < wake && reads.is_multiple_of(16) {
                        mark = sys::raise_rcvlowat(fd, wake, mark);
                    }
                    self.counters.add(n as u64, 0);
                    self.counters.touch(self.shared.now_ns());
                    if quick_ack {
                        let _ = sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 1);
                    }
                }
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                    if self.shared.aborted() {
                        return Ok(());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn udp_send(&self) -> io::Result<()> {
        let len = self.spec.length as usize;
        let fd = self.socket.as_raw_fd();
        if self.spec.window.is_none() {
            sys::raise_sndbuf(fd, 4 << 20);
        }
        let max_batch = (65_000 / len).clamp(1, MAX_BATCH);
        let batch = udp_batch(self.spec.bitrate_bps, self.spec.length, max_batch);
        let mut buf = PageBuf::zeroed(batch * len);
        sys::fill_random(&mut buf);
        let mut pacer = Pacer::bytes(self.spec.bitrate_bps, self.shared.now_ns());
        if pacer.is_limited() {
            sys::tighten_timer_slack();
        }
        // `per_packet` (pps): each datagram its own skb, so the counts are the kernel's packets.
        let mut gso = batch > 1 && !self.spec.per_packet;
        let mut seq: u64 = 1;
        while !self.shared.stopping() {
            let claimed = self.shared.claim(self.flow, (batch * len) as u64) as usize;
            let count = claimed.div_ceil(len).min(batch);
            if count == 0 {
                break;
            }
            if !self.pace(&mut pacer, (count * len) as u64) {
                break;
            }
            // iperf3 receivers turn the stamp into a double of seconds: a monotonic clock keeps
            // its microseconds exact, where the epoch's 1.7e9 s would round them away.
            let now = match self.wire {
                Wire::Wirespeed => sys::realtime_ns(),
                Wire::Iperf3 { .. } => sys::monotonic_ns(),
            };
            for (i, dgram) in buf.chunks_mut(len).take(count).enumerate() {
                self.wire.write(dgram, seq + i as u64, now);
            }
            let sent = if gso && count > 1 {
                match sys::send_gso(fd, &buf[..count * len], len as u16) {
                    Ok(_) => Ok(count),
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::EIO | libc::EINVAL | libc::EOPNOTSUPP | libc::ENOPROTOOPT)
                        ) =>
                    {
                        gso = false; // no UDP GSO here: fall back to sendmmsg
                        continue;
                    }
                    Err(e) => Err(e),
                }
            } else {
                let slices: Vec<&[u8]> = buf.chunks(len).take(count).collect();
                sys::send_many(fd, &slices)
            };
            match sent {
                Ok(n) => {
                    seq += n as u64;
                    self.counters.add((n * len) as u64, n as u64);
                    self.counters.touch(self.shared.now_ns());
                }
                // The peer's port is not open (yet or any more), or the queue is full: the
                // datagrams were not sent, so their sequence numbers are reused.
                Err(e) if is_transient_udp(&e) => std::thread::yield_now(),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn udp_recv(&self) -> io::Result<()> {
        let fd = self.socket.as_raw_fd();
        if self.spec.window.is_none() {
            // Large enough to ride out a scheduling hiccup at multi-gigabit rates.
            sys::raise_rcvbuf(fd, 8 << 20);
        }
        let _ = self.socket.set_read_timeout(Some(Duration::from_millis(20)));
        let gro = !self.spec.per_packet && sys::enable_udp_gro(fd);
        sys::enable_rx_timestamps(fd);
        let mut batch = if gro {
            RecvBatchSize::Coalesced.make()
        } else {
            RecvBatchSize::Single(self.spec.length as usize).make()
        };
        let mut stats = ReceiverStats::default();
        let mut last_packet = Instant::now();
        loop {
            match batch.recv(fd) {
                Ok(n) => {
                    let fallback_stamp = sys::realtime_ns();
                    for i in 0..n {
                        let got = batch.got[i];
                        let stamp = got.stamp_ns.unwrap_or(fallback_stamp);
                        for dgram in batch.payload(i).chunks(got.segment.max(1)) {
                            if dgram.starts_with(&HELLO_MAGIC)
                                || dgram.starts_with(&HELLO_ACK_MAGIC)
                            {
                                continue; // a repeated stream hello, not data
                            }
                            if let Some((seq, sent)) = self.wire.read(dgram) {
                                stats.record(seq, dgram.len(), sent, stamp);
                            }
                        }
                    }
                    self.counters.publish(&stats.totals());
                    self.counters.touch(self.shared.now_ns());
                    last_packet = Instant::now();
                }
                Err(e)
                    if is_timeout(&e)
                        || is_transient_udp(&e)
                        || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if self.shared.aborted() {
                return Ok(());
            }
            if self.shared.draining() {
                let draining_for =
                    self.shared.now_ns().saturating_sub(self.shared.drain_started_ns());
                // Quiet counts from the drain's start too: at a low rate the last datagram
                // may be on its way (or queued unread) when the drain begins long after the
                // one before it.
                let quiet_for = last_packet.elapsed().min(Duration::from_nanos(draining_for));
                if quiet_for >= UDP_QUIET || draining_for >= UDP_DRAIN_MAX.as_nanos() as u64 {
                    return Ok(());
                }
            }
        }
    }
}

enum RecvBatchSize {
    Coalesced,
    Single(usize),
}

impl RecvBatchSize {
    fn make(self) -> sys::RecvBatch {
        match self {
            // With GRO one slot may hold up to 64 KiB of coalesced datagrams.
            Self::Coalesced => sys::RecvBatch::new(8, 65_536),
            Self::Single(len) => sys::RecvBatch::new(MAX_BATCH, len.max(2048)),
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

fn is_transient_udp(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ECONNREFUSED | libc::ENOBUFS | libc::EAGAIN))
}

/// A flow's name in messages.
pub(crate) fn flow_name(flow: Flow) -> &'static str {
    match flow {
        Flow::Upload => "upload",
        Flow::Download => "download",
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Send => "sender",
        Role::Recv => "receiver",
    }
}

/// Applies the spec's socket options to a TCP data socket before it connects. Returns notes for
/// options the OS would not take.
pub(crate) fn tune_tcp(sock: &Socket, spec: &BandwidthSpec, ipv6: bool) -> Vec<String> {
    tune_tcp_socket(sock, spec, ipv6, Opened::Connecting)
}

/// Applies the spec's socket options to a TCP data socket a server accepted, whose window was
/// already advertised. Returns notes for options the OS would not take.
pub(crate) fn tune_accepted_tcp(sock: &Socket, spec: &BandwidthSpec, ipv6: bool) -> Vec<String> {
    tune_tcp_socket(sock, spec, ipv6, Opened::Accepted)
}

/// Whether a socket's connection exists yet, which decides how a window can be set.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opened {
    Connecting,
    Accepted,
}

fn tune_tcp_socket(sock: &Socket, spec: &BandwidthSpec, ipv6: bool, opened: Opened) -> Vec<String> {
    let fd = sock.as_raw_fd();
    let mut notes = tune_socket(sock, spec, ipv6, opened);
    if let Some(cc) = &spec.congestion {
        if let Err(e) = sys::set_congestion(fd, cc) {
            notes.push(format!("congestion control '{cc}' not applied: {e}"));
        }
    }
    if let Some(mss) = spec.mss {
        if let Err(e) = sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, mss as libc::c_int) {
            notes.push(format!("MSS {mss} not applied: {e}"));
        }
    }
    if spec.no_delay {
        let _ = sock.set_tcp_nodelay(true);
    }
    if spec.bitrate_bps > 0 {
        // Let TCP space its packets too, not only our writes.
        let _ = sys::set_max_pacing_rate(fd, spec.bitrate_bps / 8);
        let piece = paced_piece(spec.bitrate_bps, spec.length as usize);
        if piece < spec.length as usize {
            notes.push(format!(
                "paced writes: each {}-byte write goes out in pieces of {piece} bytes as they fall \
                 due, so what is counted as sent is what the rate allowed",
                spec.length
            ));
        }
    }
    notes
}

/// Applies the options every data socket takes (window, DSCP); all a UDP socket needs.
pub(crate) fn tune_udp(sock: &Socket, spec: &BandwidthSpec, ipv6: bool) -> Vec<String> {
    tune_socket(sock, spec, ipv6, Opened::Connecting)
}

fn tune_socket(sock: &Socket, spec: &BandwidthSpec, ipv6: bool, opened: Opened) -> Vec<String> {
    let fd = sock.as_raw_fd();
    let mut notes = Vec::new();
    if let Some(w) = spec.window {
        let set = match opened {
            Opened::Connecting => sys::set_buffers(fd, w),
            Opened::Accepted => sys::set_window_established(fd, w),
        };
        if let Err(e) = set {
            notes.push(format!("window {w} not applied: {e}"));
        }
    }
    if let Some(d) = spec.dscp {
        if let Err(e) = sys::set_dscp(fd, ipv6, d) {
            notes.push(format!("DSCP {d} not applied: {e}"));
        }
    }
    notes
}
