//! Runs made by several processes at once — members — whose results merge into one: which
//! member a process is ([`Member`]), the share of the run's load it takes ([`TestSpec::share`],
//! a [`Stripe`] of the open model's schedule), and what its report carries so that the merge is
//! exact and honest ([`MemberRecord`]: the whole run's spec, its host, the start it was given
//! and the one it achieved, and how good its clock was).
//!
//! Splitting follows one rule: the members together do what one process asked for the whole
//! run would have done. Connections, streams, sockets and counts are divided, the remainder
//! going to the lowest indices; an open model's rate is divided and its schedule striped, so
//! member `i` of `N` sends requests `i, i + N, i + 2N, …` of the one schedule `k / R`.

use serde::{Deserialize, Serialize};

use crate::spec::TestSpec;

/// Which member of a run a process is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Member {
    /// The run every member shares (any text: a UUID, a CI job's id).
    pub run_id: String,
    /// This member's index, `0..members`.
    pub index: u32,
    /// How many members the run has.
    pub members: u32,
}

/// Most members a run may have.
pub const MAX_MEMBERS: u32 = 10_000;

impl Member {
    /// This member's part of `total` things: `total / members`, one more for the lowest
    /// `total % members` indices, so the parts add up to `total`.
    pub fn part(&self, total: u64) -> u64 {
        let n = u64::from(self.members.max(1));
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// Its stripe of an open model's schedule.
    pub fn stripe(&self) -> Stripe {
        Stripe { index: self.index, of: self.members.max(1) }
    }

    /// Checks the numbers make sense.
    pub fn validate(&self) -> Result<(), String> {
        if self.members == 0 || self.members > MAX_MEMBERS {
            return Err(format!("--members must be 1 to {MAX_MEMBERS}, got {}", self.members));
        }
        if self.index >= self.members {
            return Err(format!(
                "--index {} is not below --members {} (indices count from 0)",
                self.index, self.members
            ));
        }
        if self.run_id.trim().is_empty() || self.run_id.len() > 200 {
            return Err("--run-id must be 1 to 200 characters".into());
        }
        Ok(())
    }
}

/// One sender's stripe of a schedule shared by `of` senders: it sends units `index`,
/// `index + of`, `index + 2·of`, … of the one schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    /// Which stripe, `0..of`.
    pub index: u32,
    /// How many stripes.
    pub of: u32,
}

impl Default for Stripe {
    /// The whole schedule.
    fn default() -> Self {
        Self { index: 0, of: 1 }
    }
}

impl Stripe {
    /// The first due time of sender `sender` inside this stripe, when the stripe
    /// runs `rate` units a second (its own share): senders interleave within the stripe as
    /// stripes interleave within the schedule, so unit `k` of the whole schedule stays due at
    /// `k / (rate · of)`.
    pub fn offset_ns(&self, rate: f64, sender: u64) -> u64 {
        if rate <= 0.0 {
            return 0;
        }
        let whole = rate * f64::from(self.of);
        let slot = sender as f64 * f64::from(self.of) + f64::from(self.index);
        (slot * 1e9 / whole) as u64
    }
}

/// Why a run cannot be split between its members.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShareError(pub String);

impl TestSpec {
    /// The part of this run that `member` does (see the module's rule). Refused when a member
    /// would be left with nothing to do (fewer connections than members) or for a kind that
    /// measures a path rather than making load.
    pub fn share(&self, member: &Member) -> Result<TestSpec, ShareError> {
        let n = member.members;
        if n == 1 {
            return Ok(self.clone());
        }
        let part16 = |what: &str, flag: &str, total: u16| -> Result<u16, ShareError> {
            if u32::from(total) < n {
                return Err(ShareError(format!(
                    "{total} {what} cannot be shared by {n} members: give at least {n} ({flag})"
                )));
            }
            Ok(member.part(u64::from(total)) as u16)
        };
        let count = |c: Option<u64>| -> Result<Option<u64>, ShareError> {
            match c {
                Some(c) if c < u64::from(n) => Err(ShareError(format!(
                    "a count of {c} cannot be shared by {n} members: give at least {n}"
                ))),
                other => Ok(other.map(|c| member.part(c))),
            }
        };
        let per = |r: f64| r / f64::from(n);
        Ok(match self {
            TestSpec::Bandwidth(s) => {
                let mut s = s.clone();
                s.parallel = part16("streams", "-P", s.parallel)?;
                s.bytes = count(s.bytes)?;
                TestSpec::Bandwidth(s)
            }
            TestSpec::Latency(s) => {
                let mut s = s.clone();
                s.parallel = part16("connections", "-P", s.parallel)?;
                s.count = count(s.count)?;
                TestSpec::Latency(s)
            }
            TestSpec::Cps(s) => {
                let mut s = s.clone();
                s.parallel = part16("connections in flight", "-P", s.parallel)?;
                s.threads = s.threads.min(s.parallel).max(1);
                s.count = count(s.count)?;
                TestSpec::Cps(s)
            }
            TestSpec::Http(s) => {
                let mut s = s.as_ref().clone();
                if s.is_open() {
                    s.rates = s.rates.iter().map(|&r| per(r)).collect();
                    s.max_connections = member.part(u64::from(s.max_connections)).max(1) as u16;
                    s.connections = member.part(u64::from(s.connections)).max(1) as u16;
                } else {
                    s.connections = part16("connections", "-c", s.connections)?;
                }
                s.threads = s.threads.min(s.connections.max(s.max_connections)).max(1);
                s.count = count(s.count)?;
                TestSpec::Http(Box::new(s))
            }
            TestSpec::Dns(s) => {
                let mut s = s.as_ref().clone();
                if s.duration_ns.is_none() {
                    return Err(ShareError(
                        "a DNS run shared by members needs a time limit (-l): each member would \
                         otherwise send the whole datafile"
                            .into(),
                    ));
                }
                s.clients = part16("clients", "-c", s.clients)?;
                s.threads = s.threads.min(s.clients).max(1);
                s.max_outstanding = member.part(u64::from(s.max_outstanding)).max(1) as u32;
                s.rate = s.rate.map(per);
                s.max_qps = s.max_qps.map(per);
                TestSpec::Dns(Box::new(s))
            }
            TestSpec::Ping(_) | TestSpec::Trace(_) | TestSpec::Rpm(_) => {
                return Err(ShareError(format!(
                    "a {} measures a path, not load: it does not run as a member",
                    self.kind()
                )))
            }
        })
    }
}

/// How a member's start was agreed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartMethod {
    /// A time given to every member (`--start-at`).
    StartAt,
    /// A barrier kept in the shared database: the last member to arrive set the time.
    Barrier,
}

/// A member's clock, as far as it could tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClockQuality {
    /// The kernel says its clock is synchronised (NTP, chrony, PTP).
    pub kernel_synchronised: bool,
    /// The kernel's bound on the clock's error (`adjtimex` maxerror), nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_max_error_ns: Option<u64>,
    /// The kernel's estimate of the clock's error (`adjtimex` esterror), nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_est_error_ns: Option<u64>,
    /// The shared database's clock minus this one, nanoseconds (barrier runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ns: Option<i64>,
    /// The round trip of the best offset measurement: the offset is good to half of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_rtt_ns: Option<u64>,
    /// The error the start was judged by, nanoseconds: |offset| + half the round trip for a
    /// barrier run; otherwise the kernel's estimate while synchronised, else its bound.
    pub judged_error_ns: u64,
}

/// What a member's report carries about the run it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemberRecord {
    /// Which member.
    #[serde(flatten)]
    pub member: Member,
    /// The whole run's spec, the same in every member's report; the report's own spec is this
    /// member's share of it.
    pub run_spec: TestSpec,
    /// The host (or pod) it ran on.
    pub host: String,
    /// How the start was agreed.
    pub start_method: StartMethod,
    /// The start every member was given, nanoseconds since the Unix epoch (on the reference
    /// clock: this host's for `--start-at`, the database's for a barrier, converted).
    pub planned_start_unix_ns: u64,
    /// When this member's load actually began, on its own clock, nanoseconds since the epoch.
    pub achieved_start_unix_ns: u64,
    /// How far this member's clock could be trusted.
    pub clock: ClockQuality,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(index: u32, members: u32) -> Member {
        Member { run_id: "r".into(), index, members }
    }

    #[test]
    fn parts_add_up_and_the_lowest_indices_take_the_remainder() {
        for total in [0u64, 1, 7, 10, 1001] {
            for n in 1..=5 {
                let parts: Vec<u64> = (0..n).map(|i| member(i, n).part(total)).collect();
                assert_eq!(parts.iter().sum::<u64>(), total, "{total} over {n}: {parts:?}");
                assert!(parts.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1), "{parts:?}");
            }
        }
    }

    /// The union of every member's every sender's due times is the one schedule k / R.
    #[test]
    fn stripes_of_members_and_their_threads_interleave_into_one_schedule() {
        let (rate, members, threads) = (1000.0, 3u32, 2u64);
        let mut due: Vec<u64> = Vec::new();
        for i in 0..members {
            let stripe = member(i, members).stripe();
            let member_rate = rate / f64::from(members);
            for t in 0..threads {
                let sender_rate = member_rate / threads as f64;
                let first = stripe.offset_ns(member_rate, t);
                due.extend((0..10).map(|k| first + (k as f64 * 1e9 / sender_rate) as u64));
            }
        }
        due.sort_unstable();
        let want: Vec<u64> = (0..60).map(|k| (k as f64 * 1e9 / rate) as u64).collect();
        for (got, want) in due.iter().zip(&want) {
            assert!(got.abs_diff(*want) <= 1, "{due:?}");
        }
    }

    #[test]
    fn a_run_too_small_to_share_is_refused_with_the_flag_to_raise() {
        let mut spec = crate::kinds::http::HttpSpec::new("http://127.0.0.1/");
        spec.connections = 2;
        let err = TestSpec::Http(Box::new(spec)).share(&member(0, 3)).unwrap_err();
        assert!(err.0.contains("2 connections cannot be shared by 3 members"), "{err}");
        assert!(err.0.contains("-c"), "{err}");
        assert!(member(3, 3).validate().unwrap_err().contains("not below --members 3"));
    }

    #[test]
    fn an_open_http_run_divides_its_rates() {
        let mut spec = crate::kinds::http::HttpSpec::new("http://127.0.0.1/");
        spec.rates = vec![300.0, 900.0];
        spec.count = Some(10);
        let parts: Vec<_> = (0..3)
            .map(|i| match TestSpec::Http(Box::new(spec.clone())).share(&member(i, 3)).unwrap() {
                TestSpec::Http(s) => s,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(parts[0].rates, [100.0, 300.0]);
        assert_eq!(parts.iter().map(|s| s.count.unwrap()).collect::<Vec<_>>(), [4, 3, 3]);
    }
}
