//! Runs made by several processes at once — members — whose results merge into one: which
//! member a process is ([`Member`]), the share of the run's load it takes (each kind's
//! `ShareRun`, asked by [`TestSpec::share`](crate::spec::TestSpec::share); a [`Stripe`] of
//! the open model's schedule), how its start was agreed and how good its clock was. What its
//! report carries for the merge is in [`crate::provenance`].
//!
//! Splitting follows one rule: the members together do what one process asked for the whole
//! run would have done. Connections, streams, sockets and counts are divided, the remainder
//! going to the lowest indices; an open model's rate is divided and its schedule striped, so
//! member `i` of `N` sends requests `i, i + N, i + 2N, …` of the one schedule `k / R`.

use serde::{Deserialize, Serialize};

use crate::kind::KindSpec;

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

/// What a kind does to split its run between members: one impl per kind (`crate::kinds`),
/// asked by [`TestSpec::share`](crate::spec::TestSpec::share) through one line per kind. A
/// kind that measures a path rather than making load keeps the default, which refuses.
pub(crate) trait ShareRun: KindSpec + Sized {
    /// The part of this run that `member` (one of two or more) does.
    fn share(&self, member: &Member) -> Result<Self, ShareError> {
        let _ = member;
        Err(ShareError(format!(
            "a {} measures a path, not load: it does not run as a member",
            self.kind()
        )))
    }
}

impl Member {
    /// Its part of `total` connections, streams or clients, which every member needs one of
    /// at least: refused, naming the `flag` to raise, when there are fewer than members.
    pub(crate) fn part_of_each(
        &self,
        what: &str,
        flag: &str,
        total: u16,
    ) -> Result<u16, ShareError> {
        if u32::from(total) < self.members {
            return Err(ShareError(format!(
                "{total} {what} cannot be shared by {} members: give at least {} ({flag})",
                self.members, self.members
            )));
        }
        Ok(self.part(u64::from(total)) as u16)
    }

    /// Its part of a count limit (`-n`), which every member needs one of at least.
    pub(crate) fn part_of_count(&self, count: Option<u64>) -> Result<Option<u64>, ShareError> {
        match count {
            Some(c) if c < u64::from(self.members) => Err(ShareError(format!(
                "a count of {c} cannot be shared by {} members: give at least {}",
                self.members, self.members
            ))),
            other => Ok(other.map(|c| self.part(c))),
        }
    }

    /// Its part of a rate: an equal share.
    pub(crate) fn part_of_rate(&self, rate: f64) -> f64 {
        rate / f64::from(self.members.max(1))
    }

    /// Its part of a limit that may be smaller than the members: at least one.
    pub(crate) fn part_at_least_one(&self, total: u64) -> u64 {
        self.part(total).max(1)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TestSpec;

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
