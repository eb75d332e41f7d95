//! One worker's queries in flight and what it counted, sans I/O (times are passed in): a
//! table of 65 536 IDs, each remembering its query, socket, send time and fate; a FIFO of free
//! IDs, so an ID is reused as late as possible and a late or duplicate answer can still be
//! told from a stray one; and the queue of deadlines, oldest first (every query waits the
//! same `-t`, so send order is deadline order). An answer counts as completed only when its
//! ID is in flight on the socket it arrived on *and* it repeats the query's question.

use std::collections::{BTreeMap, VecDeque};

use wirespeed_model::kinds::dns::StrayAnswers;
use wirespeed_proto::dns::wire::{self, Header};

use super::queries::QuerySet;

/// IDs per worker: the 16-bit ID space.
pub(super) const IDS: usize = 65_536;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Never,
    InFlight,
    Answered,
    TimedOut,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    sent_ns: u64,
    query: u32,
    generation: u32,
    socket: u16,
    fate: Fate,
}

/// What one worker counted, cumulatively.
#[derive(Debug, Clone, Default)]
pub(super) struct Counts {
    pub sent: u64,
    pub completed: u64,
    pub lost: u64,
    pub truncated: u64,
    pub send_errors: u64,
    /// DoQ streams the server reset, or whose reply was not one message; DoH requests that
    /// failed alone (an HTTP error).
    pub stream_errors: u64,
    /// Why the last of them failed.
    pub last_stream_error: Option<String>,
    /// Stream workers whose last attempt to connect failed after they had connected before:
    /// the server went away and did not come back.
    pub cut_off: u64,
    /// The latest moment one of them lost its server, nanoseconds since the run began.
    pub cut_off_at_ns: u64,
    pub unsent: u64,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub stray: StrayAnswers,
    /// Answers by response code below 32; [`Self::rcodes_high`] holds the rest.
    pub rcodes: [u64; 32],
    pub rcodes_high: BTreeMap<u16, u64>,
    pub latency_sum_ns: f64,
    pub latency_sum_sq: f64,
    pub latency_min_ns: u64,
    pub latency_max_ns: u64,
    pub tc_retried: u64,
    pub tc_retry_completed: u64,
    pub connect_attempts: u64,
    pub connects: u64,
    /// Queries in flight when the worker stopped on an interruption.
    pub interrupted: u64,
    /// Why the last failed connection failed.
    pub last_connect_failure: Option<String>,
}

impl Counts {
    /// Adds `other`'s counts.
    pub(super) fn add(&mut self, o: &Counts) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.lost += o.lost;
        self.truncated += o.truncated;
        self.send_errors += o.send_errors;
        self.stream_errors += o.stream_errors;
        self.unsent += o.unsent;
        self.request_bytes += o.request_bytes;
        self.response_bytes += o.response_bytes;
        self.stray.mismatched += o.stray.mismatched;
        self.stray.duplicate += o.stray.duplicate;
        self.stray.late += o.stray.late;
        self.stray.unexpected += o.stray.unexpected;
        self.stray.malformed += o.stray.malformed;
        for (a, b) in self.rcodes.iter_mut().zip(o.rcodes) {
            *a += b;
        }
        for (code, n) in &o.rcodes_high {
            *self.rcodes_high.entry(*code).or_default() += n;
        }
        self.latency_sum_ns += o.latency_sum_ns;
        self.latency_sum_sq += o.latency_sum_sq;
        if o.completed > 0 {
            self.latency_min_ns = if self.latency_min_ns == 0 {
                o.latency_min_ns
            } else {
                self.latency_min_ns.min(o.latency_min_ns)
            };
        }
        self.latency_max_ns = self.latency_max_ns.max(o.latency_max_ns);
        self.tc_retried += o.tc_retried;
        self.tc_retry_completed += o.tc_retry_completed;
        self.connect_attempts += o.connect_attempts;
        self.connects += o.connects;
        self.interrupted += o.interrupted;
        self.cut_off += o.cut_off;
        self.cut_off_at_ns = self.cut_off_at_ns.max(o.cut_off_at_ns);
        if o.last_stream_error.is_some() {
            self.last_stream_error.clone_from(&o.last_stream_error);
        }
        if o.last_connect_failure.is_some() {
            self.last_connect_failure.clone_from(&o.last_connect_failure);
        }
    }

    /// Counts an answer with `rcode` that took `latency_ns`.
    pub(super) fn complete(&mut self, rcode: u16, latency_ns: u64, bytes: usize) {
        self.completed += 1;
        self.response_bytes += bytes as u64;
        match self.rcodes.get_mut(usize::from(rcode)) {
            Some(n) => *n += 1,
            None => *self.rcodes_high.entry(rcode).or_default() += 1,
        }
        let l = latency_ns as f64;
        self.latency_sum_ns += l;
        self.latency_sum_sq += l * l;
        self.latency_min_ns =
            if self.completed == 1 { latency_ns } else { self.latency_min_ns.min(latency_ns) };
        self.latency_max_ns = self.latency_max_ns.max(latency_ns);
    }
}

/// What became of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answered {
    /// It completed query `query` after `latency_ns`; `truncated` when TC=1.
    Completed { query: u32, latency_ns: u64, truncated: bool },
    /// It was counted as stray (see [`StrayAnswers`]).
    Stray,
}

/// One worker's IDs, deadlines and counts.
pub(super) struct Tracker {
    slots: Vec<Slot>,
    free: VecDeque<u16>,
    deadlines: VecDeque<(u16, u32, u64)>,
    in_flight: u32,
    timeout_ns: u64,
    /// What was counted so far.
    pub counts: Counts,
}

impl Tracker {
    /// A tracker of every 16-bit ID whose queries time out after `timeout_ns`; `seed`
    /// shuffles the IDs (a predictable sequence is what spoofing attacks guess, and servers
    /// may treat it oddly).
    pub(super) fn new(timeout_ns: u64, seed: u64) -> Self {
        Self::with_ids(timeout_ns, seed, IDS)
    }

    /// A tracker of the first `ids` IDs only (a power of two, at most 65 536): a TCP
    /// connection with a small window needs no 1.5 MB table, and thousands of them would.
    pub(super) fn with_ids(timeout_ns: u64, seed: u64, ids: usize) -> Self {
        let ids = ids.clamp(1, IDS);
        let mut ids: Vec<u16> = (0..ids).map(|i| i as u16).collect();
        let mut x = seed | 1;
        for i in (1..ids.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ids.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let slot = Slot { sent_ns: 0, query: 0, generation: 0, socket: 0, fate: Fate::Never };
        Self {
            slots: vec![slot; IDS.min(ids.len())],
            free: ids.into(),
            deadlines: VecDeque::new(),
            in_flight: 0,
            timeout_ns,
            counts: Counts::default(),
        }
    }

    /// How long a query may wait for its answer, nanoseconds.
    pub(super) fn timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    /// Queries waiting for an answer.
    pub(super) fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// An ID for the next query, if one is free.
    pub(super) fn take_id(&mut self) -> Option<u16> {
        self.free.pop_front()
    }

    /// Gives back an ID whose query could not be sent.
    pub(super) fn give_back(&mut self, id: u16) {
        self.free.push_front(id);
    }

    /// Records that query `query` left on `socket` with `id` at `now_ns`.
    /// Returns the slot's generation, which tells this query from a later one on the same ID.
    pub(super) fn sent(
        &mut self,
        id: u16,
        query: u32,
        socket: u16,
        now_ns: u64,
        bytes: usize,
    ) -> u32 {
        let s = &mut self.slots[usize::from(id)];
        s.generation = s.generation.wrapping_add(1);
        *s =
            Slot { sent_ns: now_ns, query, generation: s.generation, socket, fate: Fate::InFlight };
        self.deadlines.push_back((id, s.generation, now_ns + self.timeout_ns));
        self.in_flight += 1;
        self.counts.sent += 1;
        self.counts.request_bytes += bytes as u64;
        s.generation
    }

    /// Counts query `id` (of `generation`) as lost now: its exchange failed and no answer can
    /// come. False when it was no longer waiting (timed out first, or the ID reused).
    pub(super) fn fail(&mut self, id: u16, generation: u32) -> bool {
        let slot = &mut self.slots[usize::from(id)];
        if slot.generation != generation || slot.fate != Fate::InFlight {
            return false;
        }
        slot.fate = Fate::TimedOut;
        self.in_flight -= 1;
        self.counts.lost += 1;
        self.free.push_back(id);
        true
    }

    /// Counts one answer that arrived on `socket` at `now_ns`.
    pub(super) fn answer(
        &mut self,
        msg: &[u8],
        socket: u16,
        now_ns: u64,
        queries: &QuerySet,
    ) -> Answered {
        self.answer_stamped(msg, socket, (now_ns, now_ns), queries)
    }

    /// Counts one answer that the kernel stamped at `stamp_ns` and this thread read at
    /// `read_ns`: the stamp, unless it falls before its query was sent (the clocks' error, no
    /// latency: the read time stands then).
    pub(super) fn answer_stamped(
        &mut self,
        msg: &[u8],
        socket: u16,
        (stamp_ns, read_ns): (u64, u64),
        queries: &QuerySet,
    ) -> Answered {
        let Ok(h) = Header::read_answer(msg) else {
            self.counts.stray.malformed += 1;
            return Answered::Stray;
        };
        let id = usize::from(h.id);
        let Some(&slot) = self.slots.get(id) else {
            self.counts.stray.unexpected += 1;
            return Answered::Stray;
        };
        if slot.socket != socket || slot.fate == Fate::Never {
            self.counts.stray.unexpected += 1;
            return Answered::Stray;
        }
        let question = queries.get(slot.query).question();
        // An answer that could not read the question (FORMERR, NOTIMP) may leave it out.
        let matches =
            wire::question_matches(msg, &h, question) || (h.qdcount == 0 && h.rcode() != 0);
        let stray = &mut self.counts.stray;
        match slot.fate {
            Fate::InFlight if matches => {}
            Fate::InFlight => {
                stray.mismatched += 1;
                return Answered::Stray;
            }
            Fate::Answered if matches => {
                stray.duplicate += 1;
                return Answered::Stray;
            }
            Fate::TimedOut if matches => {
                stray.late += 1;
                return Answered::Stray;
            }
            _ => {
                stray.unexpected += 1;
                return Answered::Stray;
            }
        }
        let Ok(rcode) = wire::full_rcode(msg, &h) else {
            stray.malformed += 1;
            return Answered::Stray;
        };
        let now_ns = if stamp_ns >= slot.sent_ns { stamp_ns } else { read_ns };
        let latency_ns = now_ns.saturating_sub(slot.sent_ns);
        self.counts.complete(rcode, latency_ns, msg.len());
        let truncated = h.truncated();
        if truncated {
            self.counts.truncated += 1;
        }
        self.slots[id].fate = Fate::Answered;
        self.in_flight -= 1;
        self.free.push_back(h.id);
        Answered::Completed { query: slot.query, latency_ns, truncated }
    }

    /// Counts every query whose deadline has passed at `now_ns` as lost.
    pub(super) fn expire(&mut self, now_ns: u64) {
        while let Some(&(id, generation, deadline)) = self.deadlines.front() {
            let slot = &mut self.slots[usize::from(id)];
            let waiting = slot.generation == generation && slot.fate == Fate::InFlight;
            if waiting && deadline > now_ns {
                break;
            }
            self.deadlines.pop_front();
            if waiting {
                slot.fate = Fate::TimedOut;
                self.in_flight -= 1;
                self.counts.lost += 1;
                self.free.push_back(id);
            }
        }
    }

    /// Counts every query in flight as lost at once (its connection closed: no answer can
    /// come), or as interrupted.
    pub(super) fn abandon(&mut self, interrupted: bool) {
        while let Some((id, generation, _)) = self.deadlines.pop_front() {
            let slot = &mut self.slots[usize::from(id)];
            if slot.generation == generation && slot.fate == Fate::InFlight {
                slot.fate = Fate::TimedOut;
                self.in_flight -= 1;
                if interrupted {
                    self.counts.interrupted += 1;
                } else {
                    self.counts.lost += 1;
                }
                self.free.push_back(id);
            }
        }
    }

    /// When the oldest query in flight times out.
    pub(super) fn next_deadline(&self) -> Option<u64> {
        self.deadlines
            .iter()
            .find(|(id, generation, _)| {
                let s = &self.slots[usize::from(*id)];
                s.generation == *generation && s.fate == Fate::InFlight
            })
            .map(|d| d.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_proto::dns::wire::set_id;

    fn answer_to(queries: &QuerySet, q: u32, id: u16, flags: u8) -> Vec<u8> {
        let mut a = queries.get(q).bytes[..queries.get(q).question_end].to_vec();
        set_id(&mut a, id);
        a[2] |= 0x80 | flags;
        a
    }

    fn queries() -> QuerySet {
        QuerySet::from_names(&[("a.test", 1), ("b.test", 28)], None).unwrap()
    }

    #[test]
    fn answers_are_matched_by_id_socket_and_question() {
        let qs = queries();
        let mut t = Tracker::new(1_000, 7);
        let (a, b) = (t.take_id().unwrap(), t.take_id().unwrap());
        t.sent(a, 0, 0, 100, 30);
        t.sent(b, 1, 1, 100, 30);
        assert_eq!(t.in_flight(), 2);
        // b's ID with a's question: mismatched; on the wrong socket: unexpected.
        assert_eq!(t.answer(&answer_to(&qs, 0, b, 0), 1, 150, &qs), Answered::Stray);
        assert_eq!(t.answer(&answer_to(&qs, 1, b, 0), 0, 150, &qs), Answered::Stray);
        assert_eq!(t.counts.stray.mismatched, 1);
        assert_eq!(t.counts.stray.unexpected, 1);
        let got = t.answer(&answer_to(&qs, 0, a, 0x02), 0, 160, &qs);
        assert_eq!(got, Answered::Completed { query: 0, latency_ns: 60, truncated: true });
        assert_eq!(t.answer(&answer_to(&qs, 0, a, 0), 0, 170, &qs), Answered::Stray);
        assert_eq!(t.counts.stray.duplicate, 1);
        // b times out; its answer after that is late, and counts once as lost.
        t.expire(1_099);
        assert_eq!(t.counts.lost, 0);
        t.expire(1_100);
        assert_eq!((t.counts.lost, t.in_flight()), (1, 0));
        assert_eq!(t.answer(&answer_to(&qs, 1, b, 0), 1, 1_200, &qs), Answered::Stray);
        assert_eq!(t.counts.stray.late, 1);
        assert_eq!((t.counts.completed, t.counts.truncated, t.counts.rcodes[0]), (1, 1, 1));
        assert_eq!(t.answer(b"junk", 0, 0, &qs), Answered::Stray);
        assert_eq!(t.counts.stray.malformed, 1);
    }

    /// A kernel stamp earlier than its query's send is the clocks' error: the read time is
    /// the arrival then, never a latency of 0.
    #[test]
    fn a_stamp_before_the_send_gives_way_to_the_read_time() {
        let qs = queries();
        let mut t = Tracker::new(1_000, 1);
        let id = t.take_id().unwrap();
        t.sent(id, 0, 0, 500, 30);
        let got = t.answer_stamped(&answer_to(&qs, 0, id, 0), 0, (400, 540), &qs);
        assert_eq!(got, Answered::Completed { query: 0, latency_ns: 40, truncated: false });
    }

    #[test]
    fn ids_are_reused_last_and_abandoning_counts_the_rest() {
        let qs = queries();
        let mut t = Tracker::new(1_000, 1);
        let first = t.take_id().unwrap();
        t.sent(first, 0, 0, 0, 30);
        t.answer(&answer_to(&qs, 0, first, 0), 0, 5, &qs);
        // 65 535 other IDs come before the first one again.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..IDS - 1 {
            let id = t.take_id().unwrap();
            assert_ne!(id, first);
            assert!(seen.insert(id));
            t.sent(id, 1, 0, 10, 30);
        }
        assert_eq!(t.take_id(), Some(first));
        assert_eq!(t.take_id(), None);
        assert_eq!(t.next_deadline(), Some(1_010));
        t.abandon(true);
        assert_eq!((t.counts.interrupted, t.in_flight()), (IDS as u64 - 1, 0));
    }
}
