//! The subcommands that run a test, as one unit each: their output flags, the flag that says
//! how long they run, their client (resolved from the flags), and how a finished run maps to
//! an exit code. `run`, `quick`'s neighbours and a benchmark's workloads all go through
//! [`Command::test`], whose `match` is exhaustive: a new test subcommand left out of it, or of
//! [`TestKind`], fails to compile.

use anyhow::Result;
use wirespeed_engine::kinds::Client;
use wirespeed_model::{Report, ReportBody};

use crate::exit;
use crate::flags::{
    BandwidthArgs, Command, CpsArgs, DnsArgs, HttpArgs, LatencyArgs, MemberArgs, OutputArgs,
    PingArgs, PpsArgs, RpmArgs, TraceArgs,
};
use crate::resolve;

wirespeed_model::named! {
    /// The subcommands that run a test, by the name they are typed with (and that a scenario's
    /// workload gives as its `kind`).
    pub enum TestKind {
        /// `wirespeed bandwidth`.
        Bandwidth = "bandwidth",
        /// `wirespeed latency`.
        Latency = "latency",
        /// `wirespeed cps`.
        Cps = "cps",
        /// `wirespeed pps`.
        Pps = "pps",
        /// `wirespeed ping`.
        Ping = "ping",
        /// `wirespeed trace`.
        Trace = "trace",
        /// `wirespeed http`.
        Http = "http",
        /// `wirespeed dns`.
        Dns = "dns",
        /// `wirespeed rpm`.
        Rpm = "rpm",
    }
}

impl TestKind {
    /// The flag that sets how long a test of this kind runs (what `bench --smoke` shortens);
    /// `None` for a kind that ends by itself.
    pub(crate) fn time_flag(self) -> Option<&'static str> {
        match self {
            TestKind::Bandwidth
            | TestKind::Pps
            | TestKind::Latency
            | TestKind::Cps
            | TestKind::Rpm => Some("time"),
            TestKind::Http => Some("duration"),
            TestKind::Dns => Some("time-limit"),
            TestKind::Ping => Some("deadline"),
            TestKind::Trace => None,
        }
    }

    /// Whether a scenario's workload may be of this kind: a trace measures a path, not a
    /// system under load.
    pub(crate) fn in_scenarios(self) -> bool {
        self != TestKind::Trace
    }

    /// The kinds a scenario's workload may be.
    pub(crate) fn workload_names() -> Vec<&'static str> {
        Self::ALL.iter().filter(|k| k.in_scenarios()).map(|k| k.name()).collect()
    }
}

/// What every test subcommand's flags answer.
pub(crate) trait TestArgs {
    /// The output flags.
    fn output(&self) -> &OutputArgs;

    /// The client the flags resolve to.
    fn client(&self, version: &str) -> Result<Client>;

    /// The flags that make it one member of a run of several, for the kinds that make load.
    fn member(&self) -> Option<&MemberArgs> {
        None
    }

    /// The exit code a finished run earns ([`exit::OK`] unless the kind says otherwise).
    fn judge(&self, _report: &Report) -> u8 {
        exit::OK
    }
}

impl Command {
    /// The test this subcommand runs, with its kind; `None` for the subcommands that run no
    /// single test.
    pub(crate) fn test(&self) -> Option<(TestKind, &dyn TestArgs)> {
        Some(match self {
            Command::Bandwidth(a) => (TestKind::Bandwidth, a.as_ref()),
            Command::Latency(a) => (TestKind::Latency, a.as_ref()),
            Command::Cps(a) => (TestKind::Cps, a.as_ref()),
            Command::Pps(a) => (TestKind::Pps, a.as_ref()),
            Command::Ping(a) => (TestKind::Ping, a.as_ref()),
            Command::Trace(a) => (TestKind::Trace, a.as_ref()),
            Command::Http(a) => (TestKind::Http, a.as_ref()),
            Command::Dns(a) => (TestKind::Dns, a.as_ref()),
            Command::Rpm(a) => (TestKind::Rpm, a.as_ref()),
            Command::Server(_)
            | Command::Web(_)
            | Command::Quick(_)
            | Command::History(_)
            | Command::Show(_)
            | Command::Export(_)
            | Command::Compare(_)
            | Command::Merge(_)
            | Command::K8s(_)
            | Command::Rm(_)
            | Command::Retention(_)
            | Command::Bench(_)
            | Command::Publish(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::Role(_)
            | Command::Peer(_) => return None,
        })
    }
}

impl TestArgs for BandwidthArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn member(&self) -> Option<&MemberArgs> {
        Some(&self.member)
    }

    fn client(&self, version: &str) -> Result<Client> {
        let opts = resolve::bandwidth(self, version)?;
        Ok(if self.iperf3 { Client::Iperf3(opts) } else { Client::Bandwidth(opts) })
    }
}

impl TestArgs for PpsArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn member(&self) -> Option<&MemberArgs> {
        Some(&self.member)
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Bandwidth(resolve::pps(self, version)?))
    }
}

impl TestArgs for LatencyArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn member(&self) -> Option<&MemberArgs> {
        Some(&self.member)
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Latency(resolve::latency(self, version)?))
    }
}

impl TestArgs for CpsArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn member(&self) -> Option<&MemberArgs> {
        Some(&self.member)
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Cps(resolve::cps(self, version)?))
    }
}

impl TestArgs for PingArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Ping(resolve::ping(self, version)?))
    }

    /// Like `ping`, a run that got no reply at all fails.
    fn judge(&self, report: &Report) -> u8 {
        match &report.body {
            ReportBody::Ping(p) if p.summary.received == 0 => exit::UNREACHABLE,
            _ => exit::OK,
        }
    }
}

impl TestArgs for TraceArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Trace(resolve::trace(self, version)?))
    }

    /// A trace that never reached its destination fails, as traceroute's users script on.
    fn judge(&self, report: &Report) -> u8 {
        match &report.body {
            ReportBody::Trace(t) if !t.summary.reached => exit::UNREACHABLE,
            _ => exit::OK,
        }
    }
}

impl TestArgs for HttpArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn member(&self) -> Option<&MemberArgs> {
        Some(&self.member)
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Http(Box::new(resolve::http(self, version)?)))
    }
}

impl TestArgs for DnsArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn member(&self) -> Option<&MemberArgs> {
        Some(&self.member)
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Dns(Box::new(resolve::dns(self, version)?)))
    }

    /// A run in which nothing was answered fails: exit 6 when answers came but none matched
    /// a query (the server answers garbage), else 3 (nothing answered at all).
    fn judge(&self, report: &Report) -> u8 {
        match &report.body {
            ReportBody::Dns(d) if d.summary.completed == 0 && d.summary.stray.total() > 0 => {
                exit::PROTOCOL
            }
            ReportBody::Dns(d) if d.summary.completed == 0 => exit::UNREACHABLE,
            _ => exit::OK,
        }
    }
}

impl TestArgs for RpmArgs {
    fn output(&self) -> &OutputArgs {
        &self.output
    }

    fn client(&self, version: &str) -> Result<Client> {
        Ok(Client::Rpm(Box::new(resolve::rpm(self, version)?)))
    }

    /// A run whose legs never reached working conditions is reported, and fails: its RPM is
    /// the last interval's, not a stable one.
    fn judge(&self, report: &Report) -> u8 {
        match &report.body {
            ReportBody::Rpm(r) if !r.summary.working_conditions => exit::UNSTABLE,
            _ => exit::OK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_test_kind_is_a_subcommand_with_its_time_flag() {
        for &kind in TestKind::ALL {
            let words = ["wirespeed", kind.name(), "--help"];
            let err = crate::flags::parse_from(words).unwrap_err();
            let help = err.render().to_string();
            if let Some(flag) = kind.time_flag() {
                assert!(help.contains(&format!("--{flag}")), "{kind}: no --{flag} in\n{help}");
            }
        }
    }
}
