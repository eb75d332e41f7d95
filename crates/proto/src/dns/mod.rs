//! DNS for the load tester and its fixture, sans I/O: the wire format a generator needs
//! ([`wire`]: queries encoded once, answers read without copying), record type names
//! ([`qtype`]), dnsperf's datafile ([`datafile`]), a zone file subset ([`zone`]), the
//! fixture's answers ([`responder`]) and the framing of DoQ and DoH ([`encrypted`]).

pub mod datafile;
pub mod encrypted;
pub mod qtype;
pub mod responder;
pub mod wire;
pub mod zone;
