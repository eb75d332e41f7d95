//! One HTTP/1.1 connection of the load generator and the request on it, as a state machine
//! over a non-blocking socket: connect, TLS handshake (rustls, driven by hand so the same
//! epoll loop serves http:// and https://), write the request, read the response with the
//! sans-I/O parser in `wirespeed_proto::http1` (only the head is copied), then idle or close.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Instant;

use rustls::ClientConnection;
use socket2::Socket;
use wirespeed_proto::codec::DecodeError;
use wirespeed_proto::http1::{self, parse_head, ChunkedScanner, Framing, ResponseHead, MAX_HEAD};
use wirespeed_proto::http_url::HttpUrl;

use super::counts::{Cause, Tally};
use super::requests::RequestSet;
use crate::net::sys;

/// A request sent more than this long after its scheduled time is late.
pub(super) const LATE_NS: u64 = 1_000_000;

/// The socket, with TLS over it for https://.
pub(super) struct Transport {
    pub socket: Socket,
    pub tls: Option<Box<ClientConnection>>,
    /// When the kernel received what the last read of the socket took (wall clock, ns since
    /// the epoch; `SO_TIMESTAMPNS`, turned on by [`Transport::new`]).
    received_ns: Option<i64>,
}

/// The socket as rustls reads it: each read keeps the kernel's receive stamp.
struct Stamped<'a> {
    fd: std::os::fd::RawFd,
    received_ns: &'a mut Option<i64>,
}

impl Read for Stamped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, stamp) = sys::recv_stamped(self.fd, buf)?;
        if stamp.is_some() {
            *self.received_ns = stamp;
        }
        Ok(n)
    }
}

/// Where a wall-clock receive stamp falls on the monotonic clock latency is counted on (the
/// two clocks read as one pair, [`sys::paired_clocks`]); now when there is no stamp, when the
/// wall clock was stepped since (a stamp in the future or more than a minute old), or when the
/// stamp would put the arrival before `not_before`, the request's send: no answer comes before
/// its question, so such a stamp is the clocks' error, not a latency (min 1 ns was reported).
fn arrival(received_ns: Option<i64>, not_before: Instant) -> Instant {
    let (now, wall) = sys::paired_clocks();
    let Some(stamp) = received_ns else { return now };
    match u64::try_from(wall - stamp) {
        Ok(age) if age < 60_000_000_000 => now
            .checked_sub(std::time::Duration::from_nanos(age))
            .filter(|&at| at >= not_before)
            .unwrap_or(now),
        _ => now,
    }
}

impl Transport {
    /// A connection's socket (with TLS over it for https://), asked to stamp what it receives
    /// so that latency ends when the response reached this host, not when this thread woke
    /// up to read it.
    pub(super) fn new(socket: Socket, tls: Option<Box<ClientConnection>>) -> Self {
        // Without stamps (a kernel that refuses), reads are timed when they happen.
        let _ = sys::enable_rx_timestamps(socket.as_raw_fd());
        Self { socket, tls, received_ns: None }
    }

    /// Writes what TLS has queued; false when the socket is full.
    fn flush_tls(&mut self) -> io::Result<bool> {
        if let Some(tls) = self.tls.as_mut() {
            while tls.wants_write() {
                match tls.write_tls(&mut &self.socket) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(true)
    }

    /// Writes request bytes; how many were taken.
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.tls.is_none() {
            return (&self.socket).write(data);
        }
        // Only hand rustls more once what it holds has gone out: the socket is the limit.
        if !self.flush_tls()? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = match self.tls.as_mut() {
            Some(tls) => tls.writer().write(data)?,
            None => 0,
        };
        self.flush_tls()?;
        Ok(n)
    }

    /// Reads response bytes: 0 at the end of the stream.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.socket.as_raw_fd();
        let Some(tls) = self.tls.as_mut() else {
            let (n, stamp) = sys::recv_stamped(fd, buf)?;
            self.received_ns = stamp;
            return Ok(n);
        };
        loop {
            match tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Closed without close_notify: the framing tells whether anything was lost.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            let mut socket = Stamped { fd, received_ns: &mut self.received_ns };
            if tls.read_tls(&mut socket)? == 0 {
                continue; // the reader now reports the end
            }
            tls.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            self.flush_tls()?;
            return self.read(buf);
        }
    }

    /// Moves the TLS handshake on; true once it is complete.
    fn handshake(&mut self) -> io::Result<bool> {
        loop {
            if !self.flush_tls()? {
                return Ok(false);
            }
            let Some(tls) = self.tls.as_mut() else { return Ok(true) };
            if !tls.is_handshaking() {
                return Ok(true);
            }
            match tls.read_tls(&mut &self.socket) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Tell the server why, then fail.
                        let _ = self.flush_tls();
                        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }
}

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Connecting,
    Handshaking,
    Sending {
        written: usize,
    },
    Receiving,
    /// Kept alive with nothing in flight (open model).
    Idle,
}

/// One connection and the request on it.
pub(super) struct Conn {
    pub io: Transport,
    pub phase: Phase,
    /// When connecting (then the TLS handshake) began.
    pub opened: Instant,
    /// When the current request should have been sent: latency starts here.
    pub scheduled: Instant,
    /// When its first byte was written.
    pub sent_at: Instant,
    /// When the request (connecting included) times out.
    pub deadline: Instant,
    /// When the bytes of the last read reached this host (the kernel's receive stamp): at a
    /// response's end, when it was complete.
    pub arrived: Instant,
    /// Which request of the set.
    pub request: usize,
    /// A redirect being followed: its bytes, URL, HEAD flag and how many so far.
    pub redirect: Option<(Vec<u8>, HttpUrl, bool)>,
    pub hops: u8,
    /// Its key in the thread's epoll set.
    pub slot: u64,
    /// Whether epoll watches it for writability now.
    pub watching_writable: bool,
    first_byte: Option<Instant>,
    head_buf: Vec<u8>,
    head: Option<ResponseHead>,
    /// Reads that returned bytes of the current response.
    pub reads: u32,
    body_left: u64,
    chunked: Option<ChunkedScanner>,
    bytes_in: u64,
}

/// What driving a connection led to.
pub(super) enum Step {
    /// Waiting for the socket.
    Wait,
    /// The response is complete; `bytes_in` counts head and body.
    Done { head: ResponseHead, bytes_in: u64 },
    /// The request failed (with the error's text for causes that need explaining).
    Failed(Cause, Option<String>),
    /// An idle connection was closed by the server: not an error.
    PeerClosed,
}

/// How a connection behaves: whether latency starts at a schedule (open model).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mode {
    pub open: bool,
    pub timeout: std::time::Duration,
}

impl Conn {
    /// A connection whose connect has been started at `now` for a request scheduled at
    /// `scheduled`; `connected` when the connect finished at once (unix sockets).
    pub(super) fn new(io: Transport, connected: bool, request: usize, scheduled: Instant) -> Self {
        let now = Instant::now();
        Self {
            io,
            phase: if connected { Phase::Handshaking } else { Phase::Connecting },
            opened: now,
            scheduled,
            sent_at: now,
            deadline: now,
            arrived: now,
            request,
            redirect: None,
            hops: 0,
            slot: 0,
            watching_writable: true,
            first_byte: None,
            head_buf: Vec::with_capacity(1024),
            head: None,
            reads: 0,
            body_left: 0,
            chunked: None,
            bytes_in: 0,
        }
    }

    /// Puts the next request on this kept-alive connection.
    pub(super) fn start(
        &mut self,
        request: usize,
        scheduled: Instant,
        mode: Mode,
        tally: &mut Tally,
    ) {
        self.request = request;
        self.scheduled = scheduled;
        self.redirect = None;
        self.hops = 0;
        self.begin_send(mode, tally);
    }

    fn begin_send(&mut self, mode: Mode, tally: &mut Tally) {
        let now = Instant::now();
        self.phase = Phase::Sending { written: 0 };
        self.sent_at = now;
        self.deadline = now + mode.timeout;
        if mode.open {
            let queued = now.saturating_duration_since(self.scheduled).as_nanos() as u64;
            tally.record(|h| h.queue.record(queued));
            tally.totals.late += u64::from(queued > LATE_NS);
        } else {
            self.scheduled = now;
        }
        tally.totals.sent += 1;
        self.reset_response();
    }

    fn reset_response(&mut self) {
        self.first_byte = None;
        self.head = None;
        self.reads = 0;
        self.head_buf.clear();
        self.chunked = None;
        self.body_left = 0;
        self.bytes_in = 0;
    }

    fn is_head(&self, set: &RequestSet) -> bool {
        match &self.redirect {
            Some((_, _, head)) => *head,
            None => set.is_head(self.request),
        }
    }

    /// The head of the response just completed (for its `Location`).
    pub(super) fn head_bytes(&self) -> &[u8] {
        let len = self.head.map_or(0, |h| h.len).min(self.head_buf.len());
        &self.head_buf[..len]
    }

    /// Sends the redirect `bytes` on this connection as part of the same request.
    pub(super) fn follow(&mut self, bytes: Vec<u8>, url: HttpUrl, head: bool, mode: Mode) {
        self.redirect = Some((bytes, url, head));
        self.hops += 1;
        self.phase = Phase::Sending { written: 0 };
        self.deadline = Instant::now() + mode.timeout;
        self.reset_response();
    }

    /// The URL of the request in flight.
    pub(super) fn url<'a>(&'a self, set: &'a RequestSet) -> &'a HttpUrl {
        match &self.redirect {
            Some((_, url, _)) => url,
            None => &set.requests[self.request].url,
        }
    }

    /// Moves the connection along as far as the socket allows.
    pub(super) fn step(
        &mut self,
        set: &RequestSet,
        mode: Mode,
        tally: &mut Tally,
        scratch: &mut [u8],
    ) -> Step {
        loop {
            // Each phase goes as far as it can: `None` means it moved on to the next phase.
            let stopped = match self.phase {
                Phase::Connecting => self.connecting(tally),
                Phase::Handshaking => self.handshaking(mode, tally),
                Phase::Sending { written } => self.sending(set, written, tally),
                Phase::Receiving | Phase::Idle => self.receiving(set, tally, scratch),
            };
            if let Some(step) = stopped {
                return step;
            }
        }
    }

    /// Connecting: writable means connected, and the connect time is recorded.
    fn connecting(&mut self, tally: &mut Tally) -> Option<Step> {
        match self.io.socket.take_error() {
            Ok(None) => {
                // Writable means connected; otherwise the next event tells.
                if self.io.socket.peer_addr().is_err() {
                    return Some(Step::Wait);
                }
                let took = self.opened.elapsed().as_nanos() as u64;
                tally.record(|h| h.connect.record(took));
                self.phase = Phase::Handshaking;
                None
            }
            Ok(Some(e)) | Err(e) => Some(Step::Failed(Cause::of(&e, true), None)),
        }
    }

    /// The TLS handshake (none for plain HTTP), then the first request.
    fn handshaking(&mut self, mode: Mode, tally: &mut Tally) -> Option<Step> {
        match self.io.handshake() {
            Ok(false) => Some(Step::Wait),
            Ok(true) => {
                if self.io.tls.is_some() {
                    tally.record(|h| h.tls.record(self.opened.elapsed().as_nanos() as u64));
                }
                self.begin_send(mode, tally);
                None
            }
            Err(e) => Some(Step::Failed(Cause::Tls, Some(e.to_string()))),
        }
    }

    /// Writes the request from byte `written` on.
    fn sending(&mut self, set: &RequestSet, written: usize, tally: &mut Tally) -> Option<Step> {
        let wire = match &self.redirect {
            Some((bytes, _, _)) => &bytes[..],
            None => set.wire(self.request),
        };
        let len = wire.len();
        match self.io.write(&wire[written..]) {
            Ok(n) if written + n == len => {
                tally.totals.bytes_out += n as u64;
                self.phase = Phase::Receiving;
                // The last response was read to its end and nothing may follow it, so the
                // socket is empty: the answer's arrival is a new edge. Not reading now saves a
                // read that would only say EAGAIN.
                Some(Step::Wait)
            }
            Ok(n) => {
                tally.totals.bytes_out += n as u64;
                self.phase = Phase::Sending { written: written + n };
                None
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(Step::Wait),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
            Err(e) => Some(Step::Failed(Cause::of(&e, false), None)),
        }
    }

    /// Reads the response (or, idle between requests, watches for the server closing).
    fn receiving(
        &mut self,
        set: &RequestSet,
        tally: &mut Tally,
        scratch: &mut [u8],
    ) -> Option<Step> {
        let idle = self.phase == Phase::Idle;
        // TLS bytes of the request that the socket could not take at once.
        if let Err(e) = self.io.flush_tls() {
            return Some(Step::Failed(Cause::of(&e, false), None));
        }
        let n = match self.io.read(scratch) {
            Ok(0) if idle => return Some(Step::PeerClosed),
            Ok(0) => {
                // The end of a response that runs until the close: it ended now.
                self.arrived = Instant::now();
                return Some(match self.head {
                    Some(head) if head.framing == Framing::UntilClose => {
                        Step::Done { head, bytes_in: self.bytes_in }
                    }
                    _ => Step::Failed(Cause::Closed, None),
                });
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(Step::Wait),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return None,
            Err(e) if idle => return Some(Step::Failed(Cause::of(&e, false), None)),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Some(Step::Failed(Cause::Tls, Some(e.to_string())))
            }
            Err(e) => return Some(Step::Failed(Cause::of(&e, false), None)),
        };
        if idle {
            // Bytes nobody asked for: the connection cannot be trusted.
            return Some(Step::Failed(Cause::Invalid, None));
        }
        self.arrived = arrival(self.io.received_ns, self.sent_at);
        self.reads += 1;
        if self.first_byte.is_none() {
            let arrived = self.arrived;
            self.first_byte = Some(arrived);
            let took = arrived.saturating_duration_since(self.sent_at).as_nanos() as u64;
            tally.record(|h| h.first_byte.record(took));
        }
        self.bytes_in += n as u64;
        let head_request = self.is_head(set);
        match self.take(&scratch[..n], head_request) {
            Ok(Some(head)) => Some(Step::Done { head, bytes_in: self.bytes_in }),
            Ok(None) => None,
            Err(cause) => Some(Step::Failed(cause, None)),
        }
    }

    /// Takes received bytes; the head when the response is complete.
    fn take(&mut self, mut data: &[u8], head_request: bool) -> Result<Option<ResponseHead>, Cause> {
        if self.head.is_none() {
            let keep = data.len().min(MAX_HEAD + 1 - self.head_buf.len().min(MAX_HEAD));
            let before = self.head_buf.len();
            self.head_buf.extend_from_slice(&data[..keep]);
            // Interim responses (100 Continue, 103 Early Hints) are skipped, as RFC 9110
            // §15.2 says a client must: the final response follows them.
            let mut start = 0;
            let head = loop {
                match parse_head(&self.head_buf[start..], head_request) {
                    Ok(h) if http1::is_interim(h.status) => start += h.len,
                    Ok(h) => break h,
                    Err(DecodeError::Incomplete(_)) => {
                        self.head_buf.drain(..start);
                        return Ok(None);
                    }
                    Err(DecodeError::Invalid(_)) => return Err(Cause::Invalid),
                }
            };
            // What came after the head in this read is body.
            data = &data[start + head.len - before..];
            if start > 0 {
                self.head_buf.drain(..start); // the head kept is the final one
            }
            self.head = Some(head);
            match head.framing {
                Framing::Length(n) => self.body_left = n,
                Framing::Chunked => self.chunked = Some(ChunkedScanner::default()),
                Framing::Empty | Framing::UntilClose => self.body_left = 0,
            }
        }
        let Some(head) = self.head else { return Ok(None) };
        let used = match head.framing {
            Framing::Empty => 0,
            Framing::UntilClose => data.len(),
            Framing::Length(_) => {
                let n = (data.len() as u64).min(self.body_left);
                self.body_left -= n;
                n as usize
            }
            Framing::Chunked => match self.chunked.as_mut().map(|c| c.feed(data)) {
                Some(Ok(n)) => n,
                _ => return Err(Cause::Invalid),
            },
        };
        if used < data.len() {
            // Bytes after the response: with one request in flight there can be none.
            return Err(Cause::Invalid);
        }
        let complete = match head.framing {
            Framing::Empty => true,
            Framing::Length(_) => self.body_left == 0,
            Framing::Chunked => self.chunked.as_ref().is_some_and(ChunkedScanner::done),
            Framing::UntilClose => false,
        };
        Ok(complete.then_some(head))
    }

    /// True while the connection needs to hear that it can write: connecting, handshaking,
    /// a request not yet all written, or TLS bytes still queued.
    pub(super) fn wants_writable(&self) -> bool {
        matches!(self.phase, Phase::Connecting | Phase::Handshaking | Phase::Sending { .. })
            || self.io.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// The status of the response just completed.
    pub(super) fn head_status(&self) -> Option<u16> {
        self.head.map(|h| h.status)
    }

    /// Where a completed 3xx response sends the request next, if it is to be followed.
    pub(super) fn location(&self) -> Option<&str> {
        http1::header(self.head_bytes(), "location")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_receive_stamp_puts_the_arrival_back_by_its_age() {
        let before = Instant::now();
        let long_ago = before - Duration::from_secs(30);
        let a = arrival(Some(sys::realtime_ns() - 10_000_000_000), long_ago);
        assert!(before.duration_since(a) >= Duration::from_secs(5), "{a:?} against {before:?}");
        // No stamp, a stamp from the future or over a minute old (the wall clock was stepped):
        // the arrival is when it was read.
        let now_ns = sys::realtime_ns();
        for stamp in [None, Some(now_ns + 10_000_000_000), Some(now_ns - 120_000_000_000)] {
            assert!(arrival(stamp, long_ago) >= before, "{stamp:?}");
        }
    }

    /// HTTP latency read 1 ns at best (h2load: 10 µs on the same fixture): a receive stamp
    /// that lands before the request was sent is the clocks' error, so the read time stands.
    #[test]
    fn no_arrival_comes_before_its_request_was_sent() {
        let sent = Instant::now();
        // A stamp 2 ms old for a request sent just now: impossible, and not believed.
        let a = arrival(Some(sys::realtime_ns() - 2_000_000), sent);
        assert!(a >= sent, "arrived {:?} before it was sent", sent.duration_since(a));
    }
}
