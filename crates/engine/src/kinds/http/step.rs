//! A step of an HTTP load test while it runs, whichever protocol's workers run it: when it
//! began, the workers' counts, and how to stop them. The HTTP/1.1 shards and the h2 client
//! both start one; the client samples and stops it.

use std::sync::Arc;
use std::time::Instant;

use super::counts::ShardCounts;
use crate::run::threads::StreamThreads;

/// A step's threads, running.
pub(super) struct Running {
    pub begin: Instant,
    pub counts: Vec<Arc<ShardCounts>>,
    pub stopper: Box<dyn Stopper>,
}

/// Stops a step's workers and waits for them.
pub(super) trait Stopper: Send {
    fn stop(self: Box<Self>);
}

impl Stopper for StreamThreads {
    fn stop(self: Box<Self>) {
        StreamThreads::stop(*self);
    }
}

/// How long, at most, an open-model step that was stopped takes to send the requests that fell
/// due before the stop (a thread that woke after the end on a busy machine, a connection still
/// being opened for them): the request's own timeout, when shorter. What is not out by then is
/// counted as dropped, so a request due within the test is never lost from the counts.
pub(super) const FINISH_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
