//! The loop of the transports that give each query an exchange of its own, DNS over QUIC (a
//! stream per query) and DNS over HTTPS (a request per query): open exchanges as the window
//! and the schedule allow, count each answer as its exchange ends. The wire carries message ID
//! 0 (RFC 9250 requires it, RFC 8484 recommends it for caching); the client keeps its own ID
//! for each exchange and writes it into the answer before the tracker counts it, so such an
//! answer is checked (question, response code, lateness) exactly as a UDP or TCP one. An
//! exchange that fails on its own (a reset stream, an HTTP error, a reply that is not one DNS
//! message) is a stream error: counted as such, and its query lost at once (it waited for its
//! timeout, so a DoH server answering 404 to everything read as queries that timed out).

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::task::JoinSet;
use wirespeed_proto::dns::wire::set_id;

use super::shared::{since, Ended, Local, Part, Source};
use super::tracker::Answered;

/// Longest wait between looks at the run's flags.
const HEARTBEAT: Duration = Duration::from_millis(10);

/// What became of one query's exchange.
pub(super) enum Reply {
    /// The answer.
    Answer(Vec<u8>),
    /// This exchange failed alone: reset, refused, an HTTP error, or not one DNS message;
    /// why, for the report.
    StreamError(String),
    /// The connection is gone, and every exchange on it.
    Lost,
}

/// A connection that carries one exchange per query.
pub(super) trait Exchanges: Clone + Send + Sync + 'static {
    /// One query's exchange: `msg` (ID 0) out, the reply back.
    fn exchange(&self, msg: Vec<u8>) -> impl Future<Output = Reply> + Send;
    /// Resolves once the connection is gone.
    fn closed(&self) -> impl Future<Output = ()> + Send;
    /// Closes the connection politely.
    fn close(self) -> impl Future<Output = ()> + Send;
}

/// Drives one connection of per-query exchanges until the work is done, the run stops, or the
/// connection is lost: a stream client's `part` of the run, its queries from `source`.
pub(super) async fn serve<E: Exchanges>(
    part: &mut Part,
    source: &mut Source,
    conn: E,
    local: &mut Local,
) -> Ended {
    let mut asked: JoinSet<(u16, u32, Reply)> = JoinSet::new();
    let ended = loop {
        if part.control.interrupt.load(Relaxed) {
            break Ended::Done;
        }
        let sending = !part.control.stop.load(Relaxed) && !source.exhausted();
        if !sending && part.tracker.in_flight() == 0 {
            break Ended::Done;
        }
        let now = since(part.begin);
        if sending {
            open_exchanges(part, source, now, &conn, &mut asked);
        }
        let wait = part.wait(now, HEARTBEAT);
        tokio::select! {
            Some(done) = asked.join_next() => match done {
                Ok((id, _, Reply::Answer(mut msg))) => {
                    if msg.len() >= 2 {
                        set_id(&mut msg, id);
                    }
                    let now = since(part.begin);
                    let answered = part.tracker.answer(&msg, 0, now, &part.queries);
                    if let Answered::Completed { latency_ns, .. } = answered {
                        local.pending.push(latency_ns);
                    }
                }
                Ok((id, generation, Reply::StreamError(why))) => {
                    // Its query cannot be answered any more: lost now, not at its timeout
                    // (unless that came first).
                    if part.tracker.fail(id, generation) {
                        part.tracker.counts.stream_errors += 1;
                        part.tracker.counts.last_stream_error = Some(why);
                    }
                }
                Ok((_, _, Reply::Lost)) => break Ended::Closed,
                Err(_) => {}
            },
            () = conn.closed() => break Ended::Closed,
            () = tokio::time::sleep(wait) => {}
        }
        let now = since(part.begin);
        part.tracker.expire(now);
        local.publish(&part.shared, &part.tracker.counts, now, false);
    };
    asked.abort_all();
    conn.close().await;
    ended
}

/// Opens an exchange for each query the window and the schedule allow.
fn open_exchanges<E: Exchanges>(
    part: &mut Part,
    source: &mut Source,
    now: u64,
    conn: &E,
    asked: &mut JoinSet<(u16, u32, Reply)>,
) {
    let want = part.sendable(now);
    // An exchange lives a little past its query's timeout, so a late answer is still told
    // from a stray one, and never longer.
    let limit = Duration::from_nanos(part.tracker.timeout_ns()).saturating_mul(2);
    let mut queued = 0;
    while queued < want {
        let Some(id) = part.tracker.take_id() else { break };
        let Some(q) = source.next() else {
            part.tracker.give_back(id);
            break;
        };
        let mut msg = part.queries.get(q).bytes.clone();
        set_id(&mut msg, 0);
        let generation = part.tracker.sent(id, q, 0, now, msg.len());
        let conn = conn.clone();
        asked.spawn(async move {
            match tokio::time::timeout(limit, conn.exchange(msg)).await {
                Ok(reply) => (id, generation, reply),
                // Its query is lost by now; the exchange is dropped (and reset).
                Err(_) => (id, generation, Reply::StreamError("no answer".into())),
            }
        });
        queued += 1;
    }
    if let Some(p) = &mut part.pace {
        p.book(queued);
    }
}
