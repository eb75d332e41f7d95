//! Small statistics every kind uses: rates, ratios, and the min/mean/max of a sampled gauge.

use serde::{Deserialize, Serialize};

/// Events per second: `count` over `nanos` nanoseconds; 0 when no time passed.
pub fn per_second(count: u64, nanos: u64) -> f64 {
    if nanos == 0 {
        0.0
    } else {
        count as f64 * 1e9 / nanos as f64
    }
}

/// `part / whole`, 0 when `whole` is 0.
pub fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A running mean of counts (summed in 128 bits, so it cannot overflow).
#[derive(Default)]
pub(crate) struct Mean {
    sum: u128,
    n: u64,
}

impl Mean {
    pub(crate) fn add(&mut self, v: u64) {
        self.sum += u128::from(v);
        self.n += 1;
    }
    pub(crate) fn get(&self) -> Option<u64> {
        (self.n > 0).then(|| (self.sum / u128::from(self.n)) as u64)
    }
}

/// Minimum, maximum and mean of a gauge sampled once per interval (e.g. TCP RTT).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GaugeStats {
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Arithmetic mean of the samples.
    pub mean: u64,
}

impl GaugeStats {
    /// Stats over `samples`, `None` when there are none.
    pub fn of(samples: impl IntoIterator<Item = u64>) -> Option<Self> {
        let mut mean = Mean::default();
        let (mut min, mut max) = (u64::MAX, 0);
        for s in samples {
            min = min.min(s);
            max = max.max(s);
            mean.add(s);
        }
        mean.get().map(|mean| GaugeStats { min, max, mean })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_stats() {
        assert_eq!(GaugeStats::of([3, 1, 2]), Some(GaugeStats { min: 1, max: 3, mean: 2 }));
        assert_eq!(GaugeStats::of([]), None);
    }
}
