//! Connections a cps connector has finished with, waiting for the server to close first.
//! Against a wirespeed server each connection says it is a probe and the server closes it at
//! once: the side that closes first keeps the TIME_WAIT, so it stays on the server and this
//! host's local ports are not what the default (FIN) mode ends up measuring. The connector's
//! slot is refilled at once; the socket waits here, on the same epoll instance, until the
//! server's FIN arrives (then its close leaves nothing behind), or closes it itself after the
//! timeout or when too many wait.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::Socket;
use wirespeed_proto::codec::{ConnKind, Preamble};

use crate::net::sys::{self, EpollOp};

/// Epoll tags at or above this are waiting sockets; below, connector slots.
pub(super) const TAG_BASE: u64 = 1 << 40;
/// Sockets one connector lets wait at once (fewer when the open-file limit is low: a quarter
/// of it); past this the oldest is closed by this side.
const MAX_WAITING: usize = 4096;

/// The waiting sockets of one connector thread.
pub(super) struct Closing {
    epoll: libc::c_int,
    waiting: HashMap<u64, Socket>,
    /// Tags in arrival order with their deadlines (some already gone from `waiting`).
    order: VecDeque<(u64, Instant)>,
    next: u64,
    timeout: Duration,
    max_waiting: usize,
}

impl Closing {
    pub(super) fn new(epoll: libc::c_int, timeout: Duration) -> Self {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into the struct given.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            limit.rlim_cur as usize
        } else {
            1024
        };
        Self {
            epoll,
            waiting: HashMap::new(),
            order: VecDeque::new(),
            next: TAG_BASE,
            timeout,
            max_waiting: MAX_WAITING.min(soft / 4).max(16),
        }
    }

    /// Says "probe" on a connected `socket` and waits for the server to close it; `registered`
    /// when the socket is on the epoll set already (as a connect in flight). A socket that
    /// cannot is closed at once (by this side, as before).
    pub(super) fn hand_over(&mut self, mut socket: Socket, registered: bool) {
        if socket.write(&Preamble::encode(ConnKind::Probe)).is_err() {
            return;
        }
        let tag = self.next;
        self.next += 1;
        let op = if registered { EpollOp::Modify } else { EpollOp::Add };
        let events = libc::EPOLLIN | libc::EPOLLRDHUP;
        if sys::epoll_ctl(self.epoll, op, socket.as_raw_fd(), tag, events).is_err() {
            return;
        }
        if self.waiting.len() >= self.max_waiting {
            self.close_oldest();
        }
        self.waiting.insert(tag, socket);
        self.order.push_back((tag, Instant::now() + self.timeout));
    }

    /// The server closed the socket tagged `tag`: close ours (nothing is left behind).
    pub(super) fn closed_by_peer(&mut self, tag: u64) {
        self.waiting.remove(&tag);
    }

    /// Closes the sockets whose server has not closed them within the timeout.
    pub(super) fn expire(&mut self, now: Instant) {
        while let Some(&(tag, deadline)) = self.order.front() {
            if deadline > now && self.order.len() <= 2 * self.max_waiting {
                break;
            }
            self.order.pop_front();
            self.waiting.remove(&tag);
        }
    }

    /// True when no socket waits.
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    fn close_oldest(&mut self) {
        while let Some((tag, _)) = self.order.pop_front() {
            if self.waiting.remove(&tag).is_some() {
                return;
            }
        }
    }
}
