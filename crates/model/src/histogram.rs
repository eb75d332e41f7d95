//! The round-trip histogram every latency-measuring kind shares: [`RttHistogram`], an HDR
//! histogram with sub-microsecond resolution that merges exactly across streams, intervals and
//! runs, its [`LatencyStats`] and its [`HistogramBucket`]s as reports keep them.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Longest round trip the histogram records, in nanoseconds (60 s); longer ones are clamped.
pub const MAX_RTT_NS: u64 = 60_000_000_000;

/// Round-trip times in nanoseconds, 1 ns to 60 s at three significant digits (so a 20 µs
/// round trip is resolved to 10 ns). Histograms of streams and intervals add up exactly.
#[derive(Debug, Clone)]
pub struct RttHistogram(Histogram<u64>);

impl Default for RttHistogram {
    fn default() -> Self {
        Self(
            Histogram::new_with_bounds(1, MAX_RTT_NS, 3)
                .unwrap_or_else(|_| unreachable!("valid bounds")),
        )
    }
}

impl RttHistogram {
    /// Records one round trip; values beyond the range are clamped to it.
    pub fn record(&mut self, rtt_ns: u64) {
        self.0.saturating_record(rtt_ns.clamp(1, MAX_RTT_NS));
    }

    /// Adds every sample of `other`.
    pub fn add(&mut self, other: &RttHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// Number of round trips recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets every sample (zeroing ~40 k counters, so an empty histogram is left alone).
    pub fn clear(&mut self) {
        if !self.0.is_empty() {
            self.0.reset();
        }
    }

    /// The summary statistics.
    pub fn stats(&self) -> LatencyStats {
        let h = &self.0;
        if h.is_empty() {
            return LatencyStats::default();
        }
        let q = |p: f64| h.value_at_quantile(p);
        LatencyStats {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p95_ns: q(0.95),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: h.max(),
            stddev_ns: h.stdev(),
        }
    }

    /// Every non-empty bucket: the highest value it stands for and how many samples fell in it.
    pub fn buckets(&self) -> Vec<HistogramBucket> {
        self.0
            .iter_recorded()
            .map(|v| HistogramBucket { value_ns: v.value_iterated_to(), count: v.count_at_value() })
            .collect()
    }

    /// A histogram rebuilt from [`Self::buckets`].
    pub fn from_buckets(buckets: &[HistogramBucket]) -> Self {
        let mut h = Self::default();
        for b in buckets {
            let _ = h.0.record_n(b.value_ns.clamp(1, MAX_RTT_NS), b.count);
        }
        h
    }
}

/// The bounds every [`RttHistogram`] has, as an encoded one states them.
pub const LOWEST_NS: u64 = 1;
/// Significant decimal digits every [`RttHistogram`] keeps.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Why an encoded histogram could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HistogramError(pub String);

impl RttHistogram {
    /// The histogram in HdrHistogram's V2 compressed encoding, base64: the form the Java, Go,
    /// Python and C libraries decode (`HISTFAAA…`).
    pub fn encode(&self) -> String {
        use base64::Engine;
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut bytes = Vec::new();
        // Writing to a Vec cannot fail, and a histogram of u64 always serialises.
        let _ = V2DeflateSerializer::new().serialize(&self.0, &mut bytes);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads [`Self::encode`]'s text back; refused when it is not an encoded histogram or its
    /// bounds are not ours (a merge of different settings would not be exact).
    pub fn decode(text: &str) -> Result<Self, HistogramError> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| HistogramError(format!("not base64: {e}")))?;
        let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError(format!("not an HdrHistogram encoding: {e:?}")))?;
        let (lowest, highest, digits) = (h.low(), h.high(), h.sigfig());
        if lowest != LOWEST_NS || highest < MAX_RTT_NS || digits != SIGNIFICANT_DIGITS {
            return Err(HistogramError(format!(
                "histogram settings differ: lowest {lowest}, highest {highest}, {digits} significant digits \
                 (wirespeed's are {LOWEST_NS}, {MAX_RTT_NS}, {SIGNIFICANT_DIGITS})"
            )));
        }
        let mut ours = Self::default();
        ours.0.add(&h).map_err(|e| HistogramError(format!("cannot add: {e:?}")))?;
        Ok(ours)
    }
}

/// A run's histograms in HdrHistogram's encoding ([`RttHistogram::encode`]), kept in a member's
/// report so that merging members adds histograms, not percentiles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EncodedHistograms {
    /// Smallest value the histograms resolve, nanoseconds.
    pub lowest_ns: u64,
    /// Largest value they hold, nanoseconds.
    pub highest_ns: u64,
    /// Significant decimal digits.
    pub significant_digits: u8,
    /// The run's whole histograms by name: `total` (the latency the summary shows), and the
    /// parts a kind breaks it into (`connect`, `tls`, `first_byte`, `queue`, `setup`), and a
    /// sweep's steps (`step0.total`, …).
    pub named: std::collections::BTreeMap<String, String>,
    /// One `total` histogram per reporting interval, in the order of the report's intervals.
    pub intervals: Vec<String>,
}

impl EncodedHistograms {
    /// Empty, with wirespeed's settings.
    pub fn new() -> Self {
        Self {
            lowest_ns: LOWEST_NS,
            highest_ns: MAX_RTT_NS,
            significant_digits: SIGNIFICANT_DIGITS,
            ..Self::default()
        }
    }

    /// Keeps `h` under `name`.
    pub fn keep(&mut self, name: &str, h: &RttHistogram) {
        self.named.insert(name.to_string(), h.encode());
    }

    /// The histogram kept under `name`.
    pub fn get(&self, name: &str) -> Result<Option<RttHistogram>, HistogramError> {
        self.named.get(name).map(|t| RttHistogram::decode(t)).transpose()
    }
}

/// One histogram bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistogramBucket {
    /// The largest round trip (ns) this bucket stands for.
    pub value_ns: u64,
    /// Round trips that fell in it.
    pub count: u64,
}

/// Summary statistics of a set of round trips, all in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyStats {
    /// Round trips measured.
    pub count: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// 99.99th percentile.
    pub p9999_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Population standard deviation.
    pub stddev_ns: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_resolve_below_a_microsecond_and_merge_exactly() {
        let mut a = RttHistogram::default();
        let mut b = RttHistogram::default();
        for i in 0..1000u64 {
            a.record(20_000 + i); // 20.000–20.999 µs
            b.record(40_000 + i);
        }
        let sa = a.stats();
        assert_eq!(sa.count, 1000);
        assert!((sa.p50_ns as i64 - 20_500).abs() <= 20, "{sa:?}");
        assert_eq!(sa.min_ns, 20_000);
        a.add(&b);
        let s = a.stats();
        assert_eq!(s.count, 2000);
        assert!((s.p50_ns as i64 - 21_000).abs() <= 30, "{s:?}");
        assert!(s.p99_ns >= 40_900 && s.max_ns >= 40_990, "{s:?}");
        assert!((s.mean_ns - 30_499.5).abs() < 50.0, "{s:?}");
        // The buckets carry every sample and rebuild the same statistics.
        let rebuilt = RttHistogram::from_buckets(&a.buckets());
        assert_eq!(rebuilt.len(), 2000);
        assert_eq!(rebuilt.stats().p99_ns, s.p99_ns);
    }

    #[test]
    fn an_encoded_histogram_reads_back_bucket_for_bucket() {
        let mut h = RttHistogram::default();
        for i in 0..5000u64 {
            h.record(1_000 + i * 37);
        }
        h.record(MAX_RTT_NS);
        let text = h.encode();
        assert!(text.starts_with("HISTFAAA"), "the V2 compressed cookie: {text}");
        let back = RttHistogram::decode(&text).unwrap();
        assert_eq!(back.buckets(), h.buckets());
        assert_eq!(back.stats(), h.stats());
        assert!(RttHistogram::decode("bm90IGEgaGlzdG9ncmFt")
            .unwrap_err()
            .0
            .contains("HdrHistogram"));
        assert!(RttHistogram::decode("%%%").unwrap_err().0.contains("base64"));
        // Another library's settings are refused, not merged inexactly.
        let other = Histogram::<u64>::new_with_bounds(1, MAX_RTT_NS, 2).unwrap();
        let mut bytes = Vec::new();
        hdrhistogram::serialization::Serializer::serialize(
            &mut hdrhistogram::serialization::V2DeflateSerializer::new(),
            &other,
            &mut bytes,
        )
        .unwrap();
        use base64::Engine;
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert!(RttHistogram::decode(&text).unwrap_err().0.contains("settings differ"));
    }

    #[test]
    fn out_of_range_samples_are_clamped_not_lost() {
        let mut h = RttHistogram::default();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.len(), 2);
        assert!(h.stats().max_ns >= MAX_RTT_NS);
        assert!(RttHistogram::default().stats() == LatencyStats::default());
    }
}
