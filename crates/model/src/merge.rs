//! Merging the reports of a run's members into the report one process would have written:
//! counts and bytes are summed, rates recomputed from the sums over the common window, and
//! every latency figure read from the sum of the members' HDR histograms — so a merged p99 is
//! exactly the p99 of one histogram that recorded every sample, not an average of p99s.
//!
//! A merge refuses what would be wrong in silence: reports of different runs or specs,
//! histograms of other settings, an index twice, and (unless allowed, then flagged) a run with
//! members missing. Each kind merges its own report ([`crate::kinds`]); this module checks the
//! set, asks the kind (its `MergeRuns`, one line per kind) and
//! writes down what was merged ([`MergeRecord`]).

use std::collections::BTreeMap;

use crate::event::Steps;
use crate::histogram::{EncodedHistograms, HistogramError, RttHistogram};
use crate::kinds::bandwidth::BandwidthReport;
use crate::kinds::cps::CpsReport;
use crate::kinds::dns::DnsReport;
use crate::kinds::http::HttpReport;
use crate::kinds::latency::LatencyReport;
use crate::kinds::ping::PingReport;
use crate::kinds::rpm::RpmReport;
use crate::kinds::trace::TraceReport;
use crate::merge_parts::{check_samples, merged_histograms, MergeRuns, Part};
use crate::provenance::{MemberRecord, MergeRecord};
use crate::report::{Report, ReportBody};
use crate::spec::TestSpec;

/// Why reports could not be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("nothing to merge")]
    Empty,
    /// A report was not written by a member.
    #[error("{0} was not run as a member (no --members): there is nothing to merge it with")]
    NotAMember(String),
    /// Reports of different runs, member counts, kinds or specs.
    #[error("these reports are not one run: {0}")]
    Mismatch(String),
    /// One index twice.
    #[error("member {index} of run {run_id} appears twice ({first} and {second}): a member restarted or was started twice; merge one of them")]
    Duplicate {
        /// The run.
        run_id: String,
        /// The index.
        index: u32,
        /// Where the first came from.
        first: String,
        /// Where the second came from.
        second: String,
    },
    /// Members missing, and `--allow-partial` not given.
    #[error("run {run_id} is partial: members {missing:?} of {members} are missing (merge what is there with --allow-partial, and the result says it is partial)")]
    Partial {
        /// The run.
        run_id: String,
        /// How many it should have.
        members: u32,
        /// The indices missing.
        missing: Vec<u32>,
    },
    /// A member's counts disagree with the histograms that must hold them, or with its own
    /// intervals: an edited or damaged report.
    #[error("{source_name}: {why}; its counts cannot be trusted, so the run is not merged")]
    Inconsistent {
        /// Which report.
        source_name: String,
        /// What does not add up.
        why: String,
    },
    /// Members that did not run at the same time.
    #[error("members of run {run_id} began {apart_ms} ms apart, more than their runs allow ({allowed_ms} ms): they did not measure the same moments")]
    Apart {
        /// The run.
        run_id: String,
        /// Latest start minus earliest, milliseconds.
        apart_ms: u64,
        /// The most allowed, milliseconds.
        allowed_ms: u64,
    },
    /// A histogram is unreadable or of other settings.
    #[error("{source_name}: {error}")]
    Histogram {
        /// Which report.
        source_name: String,
        /// What is wrong.
        error: HistogramError,
    },
}

/// Merges `reports` (each named by where it came from, for messages) into one report of the
/// whole run. Refuses a partial run unless `allow_partial`.
pub fn merge(reports: &[(String, Report)], allow_partial: bool) -> Result<Report, MergeError> {
    let (first_name, first) = reports.first().ok_or(MergeError::Empty)?;
    let record_of = |(name, r): &(String, Report)| {
        r.meta.member.clone().ok_or_else(|| MergeError::NotAMember(name.clone()))
    };
    let base = record_of(&reports[0])?;
    let mut by_index: BTreeMap<u32, (&String, &Report, MemberRecord)> = BTreeMap::new();
    for entry in reports {
        let rec = record_of(entry)?;
        let (name, report) = entry;
        let mismatch =
            |what: String| Err(MergeError::Mismatch(format!("{first_name} and {name} {what}")));
        if rec.member.run_id != base.member.run_id {
            return mismatch(format!(
                "belong to runs {:?} and {:?}",
                base.member.run_id, rec.member.run_id
            ));
        }
        if rec.member.members != base.member.members {
            return mismatch(format!(
                "say the run has {} and {} members",
                base.member.members, rec.member.members
            ));
        }
        if rec.run_spec != base.run_spec {
            return mismatch(format!(
                "were given different specs ({})",
                spec_difference(&base.run_spec, &rec.run_spec)
            ));
        }
        if report.kind() != first.kind() {
            return mismatch(format!("are of kinds {} and {}", first.kind(), report.kind()));
        }
        let (a, b) = (first.meta.histograms.as_ref(), report.meta.histograms.as_ref());
        if let (Some(a), Some(b)) = (a, b) {
            if (a.lowest_ns, a.highest_ns, a.significant_digits)
                != (b.lowest_ns, b.highest_ns, b.significant_digits)
            {
                return mismatch("kept histograms of different settings".into());
            }
        }
        if a.is_some() != b.is_some() {
            return mismatch(
                "do not both keep histograms (one was run by another version?)".into(),
            );
        }
        if let Some((earlier, _, _)) = by_index.get(&rec.member.index) {
            return Err(MergeError::Duplicate {
                run_id: rec.member.run_id.clone(),
                index: rec.member.index,
                first: (*earlier).clone(),
                second: name.clone(),
            });
        }
        by_index.insert(rec.member.index, (name, report, rec));
    }
    let members = base.member.members;
    let missing: Vec<u32> = (0..members).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::Partial { run_id: base.member.run_id.clone(), members, missing });
    }
    let ordered: Vec<&(&String, &Report, MemberRecord)> = by_index.values().collect();
    let empty = EncodedHistograms::new();
    let hists: Vec<&EncodedHistograms> =
        ordered.iter().map(|(_, r, _)| r.meta.histograms.as_ref().unwrap_or(&empty)).collect();
    // Every histogram is read once up front, so a damaged one is named.
    for (i, (name, _, _)) in ordered.iter().enumerate() {
        for text in hists[i].named.values().chain(&hists[i].intervals) {
            RttHistogram::decode(text)
                .map_err(|error| MergeError::Histogram { source_name: (*name).clone(), error })?;
        }
    }
    // Members are started together (a barrier, or one --start-at): ones that began further
    // apart than a tenth of their run (a second at least) did not measure the same moments.
    let starts: Vec<u64> = ordered.iter().map(|(_, _, m)| m.achieved_start_unix_ns).collect();
    let apart = starts.iter().max().unwrap_or(&0) - starts.iter().min().unwrap_or(&0);
    let longest = ordered
        .iter()
        .filter_map(|(_, r, _)| r.body.as_kind().spec().planned_ns())
        .max()
        .unwrap_or(0);
    let allowed = (longest / 10).max(1_000_000_000);
    if apart > allowed {
        return Err(MergeError::Apart {
            run_id: base.member.run_id.clone(),
            apart_ms: apart / 1_000_000,
            allowed_ms: allowed / 1_000_000,
        });
    }
    let parts: Vec<MemberPart<'_>> = ordered
        .iter()
        .zip(&hists)
        .map(|((name, report, _), histograms)| MemberPart { name, report, histograms })
        .collect();
    let (body, histograms) = match &base.run_spec {
        TestSpec::Bandwidth(spec) => merge_kind::<BandwidthReport>(spec, &parts)?,
        TestSpec::Latency(spec) => merge_kind::<LatencyReport>(spec, &parts)?,
        TestSpec::Cps(spec) => merge_kind::<CpsReport>(spec, &parts)?,
        TestSpec::Ping(spec) => merge_kind::<PingReport>(spec, &parts)?,
        TestSpec::Trace(spec) => merge_kind::<TraceReport>(spec, &parts)?,
        TestSpec::Http(spec) => merge_kind::<HttpReport>(spec, &parts)?,
        TestSpec::Dns(spec) => merge_kind::<DnsReport>(spec, &parts)?,
        TestSpec::Rpm(spec) => merge_kind::<RpmReport>(spec, &parts)?,
    };
    let achieved: Vec<u64> = ordered.iter().map(|(_, _, m)| m.achieved_start_unix_ns).collect();
    let earliest = achieved.iter().copied().min().unwrap_or(0);
    let latest = achieved.iter().copied().max().unwrap_or(0);
    let planned = base.planned_start_unix_ns;
    let record = MergeRecord {
        run_id: base.member.run_id.clone(),
        members,
        merged: by_index.keys().copied().collect(),
        missing: missing.clone(),
        partial: !missing.is_empty(),
        hosts: ordered.iter().map(|(_, _, m)| m.host.clone()).collect(),
        planned_start_unix_ns: planned,
        start_skew_ns: latest - earliest,
        latest_start_late_ns: latest as i64 - planned as i64,
    };
    let mut meta = first.meta.clone();
    meta.member = None;
    meta.histograms = histograms;
    meta.host = record.hosts.join(", ");
    meta.start_unix_ms = earliest / 1_000_000;
    meta.start_time = ordered
        .iter()
        .min_by_key(|(_, _, m)| m.achieved_start_unix_ns)
        .map(|(_, r, _)| r.meta.start_time.clone())
        .unwrap_or_default();
    meta.local_addr = None;
    // Each member's notes, said of it: they count its own requests, not the run's.
    meta.notes = ordered
        .iter()
        .flat_map(|(_, r, m)| {
            r.meta.notes.iter().map(move |n| format!("member {}: {n}", m.member.index))
        })
        .collect();
    // No one process ran the merged run: each member's findings on its tester become notes.
    meta.diagnosis = None;
    meta.notes.extend(ordered.iter().flat_map(|(_, r, m)| {
        r.meta.diagnosis.iter().flat_map(|d| &d.findings).map(move |f| {
            format!("member {}'s tester ({}): {}", m.member.index, f.code.name(), f.text)
        })
    }));
    if record.partial {
        meta.notes.push(format!(
            "PARTIAL: members {:?} of {members} are missing; every figure is of the members present",
            record.missing
        ));
    }
    meta.merged = Some(record);
    Ok(Report { body, meta })
}

/// One member's report, where it came from, and its histograms (empty when it kept none).
struct MemberPart<'a> {
    name: &'a String,
    report: &'a Report,
    histograms: &'a EncodedHistograms,
}

/// The members' reports of a run of kind `R` merged by the kind ([`MergeRuns`]): each report
/// downcast once, its counts checked against the histograms that must hold them.
fn merge_kind<R: MergeRuns + Steps>(
    spec: &R::Spec,
    members: &[MemberPart<'_>],
) -> Result<(ReportBody, Option<EncodedHistograms>), MergeError> {
    let mut parts = Vec::with_capacity(members.len());
    for m in members {
        let report = R::of_body(&m.report.body).ok_or_else(|| {
            MergeError::Mismatch(format!(
                "{} is a {} report, not of its run's kind",
                m.name,
                m.report.kind()
            ))
        })?;
        if let (Some(samples), Some(_)) = (report.samples(), m.report.meta.histograms.as_ref()) {
            check_samples(&samples, m.histograms)
                .map_err(|why| MergeError::Inconsistent { source_name: m.name.clone(), why })?;
        }
        parts.push(Part { report, histograms: m.histograms });
    }
    let fail =
        |e: HistogramError| MergeError::Histogram { source_name: "merging".into(), error: e };
    let merged = R::merge(&parts, spec).map_err(fail)?.ok_or_else(|| {
        let kind = members[0].report.kind();
        MergeError::Mismatch(format!(
            "a {kind} report cannot be merged: a {kind} measures a path, not load"
        ))
    })?;
    // A kind that keeps histograms keeps their sums, whole and per interval.
    let histograms = match parts.first().and_then(|p| p.report.samples()) {
        Some(_) => Some(merged_histograms(&parts, merged.steps().len()).map_err(fail)?),
        None => None,
    };
    Ok((merged.into_body(), histograms))
}

/// The first field in which two specs differ, for a message.
fn spec_difference(a: &TestSpec, b: &TestSpec) -> String {
    let (a, b) =
        (serde_json::to_value(a).unwrap_or_default(), serde_json::to_value(b).unwrap_or_default());
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            for (k, v) in a {
                if b.get(k) != Some(v) {
                    return format!("{k}: {} vs {}", v, b.get(k).cloned().unwrap_or_default());
                }
            }
            "fields differ".into()
        }
        _ => "different kinds".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::latency::{LatencyInterval, LatencyReport, LatencySpec, LatencySummary};
    use crate::member::{ClockQuality, Member, StartMethod};
    use crate::provenance::MemberRecord;
    use crate::report::Meta;
    use crate::rules::Protocol;
    use crate::TestSpec;

    /// Member `index` of `members` of run "r", whose round trips were `rtts` (one interval).
    fn member(index: u32, members: u32, rtts: &[u64]) -> (String, Report) {
        let whole = LatencySpec::new("127.0.0.1", Protocol::Tcp);
        let mut h = RttHistogram::default();
        for &r in rtts {
            h.record(r);
        }
        let mut kept = EncodedHistograms::new();
        kept.keep("total", &h);
        kept.intervals.push(h.encode());
        let report = Report {
            body: ReportBody::Latency(LatencyReport {
                spec: whole.clone(),
                intervals: vec![LatencyInterval {
                    index: 0,
                    start_ns: 0,
                    end_ns: 1_000_000_000,
                    omitted: false,
                    messages_per_second: rtts.len() as f64,
                    lost: None,
                    rtt: h.stats(),
                }],
                summary: LatencySummary {
                    duration_ns: 1_000_000_000,
                    sent: rtts.len() as u64,
                    received: rtts.len() as u64,
                    lost: None,
                    messages_per_second: rtts.len() as f64,
                    rtt: h.stats(),
                    histogram: h.buckets(),
                },
            }),
            meta: Meta {
                member: Some(MemberRecord {
                    member: Member { run_id: "r".into(), index, members },
                    run_spec: TestSpec::Latency(whole),
                    host: format!("host{index}"),
                    start_method: StartMethod::StartAt,
                    planned_start_unix_ns: 1_000,
                    achieved_start_unix_ns: 1_000 + u64::from(index) * 250,
                    clock: ClockQuality::default(),
                }),
                histograms: Some(kept),
                ..Meta::default()
            },
        };
        (format!("m{index}.json"), report)
    }

    #[test]
    fn merged_percentiles_are_those_of_one_histogram_of_every_sample() {
        let a: Vec<u64> = (0..1000).map(|i| 20_000 + i * 7).collect();
        let b: Vec<u64> = (0..300).map(|i| 90_000 + i * 131).collect();
        let merged = merge(&[member(0, 2, &a), member(1, 2, &b)], false).unwrap();
        let mut one = RttHistogram::default();
        for &r in a.iter().chain(&b) {
            one.record(r);
        }
        let ReportBody::Latency(l) = &merged.body else { panic!("a latency report") };
        assert_eq!(l.summary.rtt, one.stats());
        assert_eq!(l.summary.histogram, one.buckets());
        assert_eq!(l.intervals[0].rtt, one.stats());
        assert_eq!(l.summary.received, 1300);
        let record = merged.meta.merged.unwrap();
        assert_eq!((record.start_skew_ns, record.latest_start_late_ns), (250, 250));
        assert_eq!(record.hosts, ["host0", "host1"]);
        assert!(merged.meta.member.is_none());
    }

    #[test]
    fn members_findings_on_their_testers_become_notes_of_the_merged_run() {
        let busy = |mut m: (String, Report)| {
            m.1.meta.diagnosis = Some(crate::diagnosis::Diagnosis {
                findings: vec![crate::diagnosis::Finding {
                    code: crate::diagnosis::FindingCode::SaturatedCore,
                    side: crate::diagnosis::Side::Client,
                    text: "the client kept a core busy".into(),
                }],
                ..Default::default()
            });
            m
        };
        let merged = merge(&[member(0, 2, &[10_000]), busy(member(1, 2, &[20_000]))], false);
        let merged = merged.unwrap();
        assert_eq!(merged.meta.diagnosis, None, "no one process ran the merged run");
        assert_eq!(
            merged.meta.notes,
            ["member 1's tester (saturated_core): the client kept a core busy"]
        );
    }

    /// Counts that the histograms cannot hold were summed as given: an edited `received`
    /// merged to "1003001 round trips" over histograms of 6004 samples, a member without
    /// interval histograms showed one member's rate under the run's summary, a duration ×1000
    /// merged to "2/s", and members started an hour apart merged with a note.
    #[test]
    fn counts_the_histograms_cannot_hold_and_members_far_apart_are_refused() {
        let a = member(0, 2, &[10_000, 11_000]);
        fn latency(m: &mut (String, Report)) -> &mut LatencyReport {
            match &mut m.1.body {
                ReportBody::Latency(l) => l,
                _ => unreachable!("a latency member"),
            }
        }
        let refused = |b: (String, Report)| merge(&[a.clone(), b], false).unwrap_err();

        let mut edited = member(1, 2, &[20_000, 21_000]);
        latency(&mut edited).summary.received = 1_000_000;
        let err = refused(edited);
        assert!(matches!(&err, MergeError::Inconsistent { .. }), "{err}");
        assert!(err.to_string().contains("counts 1000000 samples, its histograms hold 2"), "{err}");

        let mut bare = member(1, 2, &[20_000]);
        if let Some(h) = bare.1.meta.histograms.as_mut() {
            h.intervals.clear();
        }
        let err = refused(bare).to_string();
        assert!(err.contains("1 intervals but keeps 0 interval histograms"), "{err}");

        let mut stretched = member(1, 2, &[20_000]);
        latency(&mut stretched).summary.duration_ns *= 1000;
        let err = refused(stretched).to_string();
        assert!(err.contains("measured 1000.000 s, its intervals cover 1.000 s"), "{err}");

        let mut late = member(1, 2, &[20_000]);
        if let Some(m) = late.1.meta.member.as_mut() {
            m.achieved_start_unix_ns += 3_600_000_000_000;
        }
        let err = refused(late);
        assert!(matches!(err, MergeError::Apart { apart_ms: 3_600_000, .. }), "{err}");
    }

    #[test]
    fn a_partial_doubled_mismatched_or_foreign_set_is_refused() {
        let (a, b) = (member(0, 3, &[10_000]), member(2, 3, &[20_000]));
        let err = merge(&[a.clone(), b.clone()], false).unwrap_err();
        assert!(matches!(&err, MergeError::Partial { missing, .. } if missing == &[1]), "{err}");
        let partial = merge(&[a.clone(), b.clone()], true).unwrap();
        assert!(partial.meta.merged.as_ref().unwrap().partial);
        assert!(partial.meta.notes.iter().any(|n| n.starts_with("PARTIAL")));
        let err = merge(&[a.clone(), a.clone()], true).unwrap_err();
        assert!(matches!(err, MergeError::Duplicate { index: 0, .. }), "{err}");

        let mut other = member(1, 3, &[1]);
        if let Some(m) = other.1.meta.member.as_mut() {
            m.run_spec = TestSpec::Latency(LatencySpec::new("192.0.2.1", Protocol::Udp));
        }
        let err = merge(&[a.clone(), other], false).unwrap_err().to_string();
        assert!(err.contains("were given different specs"), "{err}");

        let mut coarse = member(1, 3, &[1]);
        if let Some(h) = coarse.1.meta.histograms.as_mut() {
            h.significant_digits = 2;
        }
        let err = merge(&[a.clone(), coarse], false).unwrap_err().to_string();
        assert!(err.contains("histograms of different settings"), "{err}");

        let mut alone = member(1, 3, &[1]);
        alone.1.meta.member = None;
        let err = merge(&[a, alone], false).unwrap_err().to_string();
        assert!(err.contains("was not run as a member"), "{err}");
    }
}
