//! How a running test is driven, whatever its kind: blocking work off the runtime
//! ([`blocking`]), a count shared among workers ([`budget`]), the client watching itself ([`diagnose`]), the interval clock
//! ([`intervals`]), the pacer ([`pacer`]), the runtime of a client's connections ([`runtime`]) and the threads that own data sockets ([`threads`]).

pub(crate) mod blocking;
pub(crate) mod budget;
pub(crate) mod diagnose;
pub(crate) mod intervals;
pub(crate) mod member;
pub(crate) mod meta;
pub(crate) mod pacer;
pub(crate) mod runtime;
pub(crate) mod threads;
