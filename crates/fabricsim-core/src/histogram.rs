//! Log-bucketed histograms of latencies (picoseconds), compact enough to keep
//! one per flow.
//!
//! Buckets are log-linear (as in HdrHistogram): values below 64 ps have a
//! bucket each; above, every power of two is split into 32 equal buckets, so
//! a bucket is at most 1/32 (3.1 %) of its lower bound wide. A quantile is
//! reported as the middle of its bucket, clamped to the exact minimum and
//! maximum seen, so it is within 1.6 % of the true value.
//!
//! A histogram stores the counts of one contiguous window of bucket indices
//! (the range of latencies it has seen), growing it when a value falls
//! outside; a flow whose packets all see latencies within one octave holds
//! 32 counters at most.

/// Sub-buckets per power of two (`2^SUB_BITS`).
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

/// Bucket index of `v`.
#[inline]
pub fn bucket(v: u64) -> u32 {
    if v < 2 * SUB {
        return v as u32;
    }
    let shift = 63 - v.leading_zeros() - SUB_BITS;
    (shift as u64 * SUB + (v >> shift)) as u32
}

/// `[low, high)` of bucket `i`, in the unit of the recorded values.
pub fn bucket_bounds(i: u32) -> (u64, u64) {
    let i = i as u64;
    let shift = (i / SUB).saturating_sub(1);
    let mantissa = i - shift * SUB;
    (mantissa << shift, (mantissa + 1) << shift)
}

/// Counts of one value distribution, for a window of bucket indices.
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    first: u32,
    counts: Vec<u32>,
    total: u64,
    min: u64,
    max: u64,
}

impl LogHistogram {
    /// Records one value.
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        let b = bucket(v);
        if self.counts.is_empty() {
            self.first = b;
            self.counts.push(0);
            self.min = v;
            self.max = v;
        } else if b < self.first {
            let grow = (self.first - b) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = b;
        } else if (b - self.first) as usize >= self.counts.len() {
            self.counts.resize((b - self.first) as usize + 1, 0);
        }
        self.counts[(b - self.first) as usize] += 1;
        self.total += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Values recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Smallest and largest value recorded (exact, not bucketed); None if empty.
    pub fn min(&self) -> Option<u64> {
        (self.total > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.total > 0).then_some(self.max)
    }

    /// The `q`-quantile (0 < q <= 1): the middle of the bucket holding the
    /// `ceil(q n)`-th smallest value, clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (k, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                let (lo, hi) = bucket_bounds(self.first + k as u32);
                let mid = lo + (hi - lo - 1) / 2;
                return Some(mid.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Non-empty buckets as `(low, high, count)`, in increasing order.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(move |(k, &c)| {
            let (lo, hi) = bucket_bounds(self.first + k as u32);
            (lo, hi, c as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_at_most_one_32nd_wide() {
        let mut prev_high = 0;
        for i in 0..1900u32 {
            let (lo, hi) = bucket_bounds(i);
            assert_eq!(lo, prev_high, "bucket {i}");
            assert!(hi > lo);
            if lo >= 64 {
                assert!((hi - lo) * 32 <= lo, "bucket {i}: [{lo}, {hi})");
            }
            assert_eq!(bucket(lo), i);
            assert_eq!(bucket(hi - 1), i);
            prev_high = hi;
        }
        assert_eq!(bucket(u64::MAX), 58 * 32 + 63);
    }

    #[test]
    fn quantiles_are_within_half_a_bucket_of_the_exact_ones() {
        // 10,000 values spread over four decades.
        let values: Vec<u64> = (1..=10_000u64).map(|k| 1_000 + k * k * 97).collect();
        let mut h = LogHistogram::default();
        for &v in values.iter().rev() {
            h.record(v);
        }
        assert_eq!(h.total(), 10_000);
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = values[((q * 10_000f64).ceil() as usize).clamp(1, 10_000) - 1] as f64;
            let got = h.quantile(q).unwrap() as f64;
            assert!((got - exact).abs() <= exact / 64.0, "q {q}: {got} vs {exact}");
        }
        assert_eq!(h.quantile(1.0), Some(*values.last().unwrap()));
        assert_eq!(h.buckets().map(|b| b.2).sum::<u64>(), 10_000);
    }

    #[test]
    fn min_and_max_are_exact_and_none_when_empty() {
        let mut h = LogHistogram::default();
        assert_eq!((h.min(), h.max()), (None, None));
        for v in [5_000_017, 12, 999_999_937] {
            h.record(v);
        }
        assert_eq!((h.min(), h.max()), (Some(12), Some(999_999_937)));
    }

    #[test]
    fn one_value_gives_itself_at_every_quantile() {
        let mut h = LogHistogram::default();
        for _ in 0..5 {
            h.record(2_345_678);
        }
        assert_eq!(h.quantile(0.5), Some(2_345_678));
        assert_eq!(h.quantile(0.999), Some(2_345_678));
        assert_eq!(LogHistogram::default().quantile(0.5), None);
    }
}
