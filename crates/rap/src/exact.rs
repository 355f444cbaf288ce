//! The exact reference: true counts of every value, range counts by binary search, and the
//! paper's accuracy metric (RAP §4.3, Figure 8: percent error of each hot range's estimate
//! against its true count).

use crate::{HotRange, RapTree};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Exact counts of a stream, for checking RAP against.
#[derive(Clone, Debug, Default)]
pub struct ExactCounts {
    counts: HashMap<u64, u64>,
    n: u64,
}

impl ExactCounts {
    /// No events yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// Counts one event.
    pub fn add(&mut self, value: u64) {
        self.add_weighted(value, 1);
    }
    /// Counts `weight` events of `value`.
    pub fn add_weighted(&mut self, value: u64, weight: u64) {
        *self.counts.entry(value).or_insert(0) += weight;
        self.n += weight;
    }
    /// Events counted.
    pub fn n(&self) -> u64 {
        self.n
    }
    /// Distinct values seen.
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }
    /// Bytes the hash map holds (buckets × (key + value + 1 control byte)).
    pub fn approx_bytes(&self) -> u64 {
        (self.counts.capacity() * (16 + 1)) as u64
    }
    /// Sorted, prefix-summed form for range queries.
    pub fn finish(&self) -> ExactRanges {
        let mut values: Vec<(u64, u64)> = self.counts.iter().map(|(&v, &c)| (v, c)).collect();
        values.sort_unstable();
        let mut prefix = Vec::with_capacity(values.len() + 1);
        prefix.push(0u64);
        let mut acc = 0u64;
        for &(_, c) in &values {
            acc += c;
            prefix.push(acc);
        }
        ExactRanges {
            keys: values.into_iter().map(|(v, _)| v).collect(),
            prefix,
        }
    }
}

/// Exact range counts over a finished [`ExactCounts`].
#[derive(Clone, Debug)]
pub struct ExactRanges {
    keys: Vec<u64>,
    prefix: Vec<u64>,
}

impl ExactRanges {
    /// True number of events with value in `[lo, hi]`.
    pub fn range_count(&self, lo: u64, hi: u64) -> u64 {
        if lo > hi {
            return 0;
        }
        let a = self.keys.partition_point(|&k| k < lo);
        let b = self.keys.partition_point(|&k| k <= hi);
        self.prefix[b] - self.prefix[a]
    }
    /// Total events.
    pub fn n(&self) -> u64 {
        self.prefix.last().copied().unwrap_or(0)
    }
}

/// One hot range checked against the exact counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotRangeAccuracy {
    /// The hot range as RAP reported it.
    pub hot: HotRange,
    /// True events in `[lo, hi]`.
    pub exact_inclusive: u64,
    /// True events in `[lo, hi]` outside its hot sub-ranges.
    pub exact_exclusive: u64,
    /// `|exact_inclusive − inclusive| / exact_inclusive`, in percent (0 when both are 0).
    pub error_pct: f64,
    /// The same for the exclusive count.
    pub exclusive_error_pct: f64,
}

/// Percent errors of all hot ranges (the paper's Figure 8 metric) with max and mean.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccuracyReport {
    /// Per hot range, in the order given.
    pub ranges: Vec<HotRangeAccuracy>,
    /// Largest inclusive percent error.
    pub max_error_pct: f64,
    /// Mean inclusive percent error.
    pub mean_error_pct: f64,
    /// Largest exclusive percent error.
    pub max_exclusive_error_pct: f64,
    /// Mean exclusive percent error.
    pub mean_exclusive_error_pct: f64,
}

fn pct(exact: u64, est: u64) -> f64 {
    if exact == 0 {
        if est == 0 {
            0.0
        } else {
            100.0
        }
    } else {
        100.0 * exact.abs_diff(est) as f64 / exact as f64
    }
}

/// Checks `hot` (from [`RapTree::hot_ranges`], pre-order) against `exact`.
pub fn accuracy(hot: &[HotRange], exact: &ExactRanges) -> AccuracyReport {
    let mut ranges = Vec::with_capacity(hot.len());
    for (i, h) in hot.iter().enumerate() {
        let inclusive = exact.range_count(h.lo, h.hi);
        // Maximal hot ranges strictly inside h: in pre-order they follow h; skip nested ones.
        let mut inner = 0u64;
        let mut covered_to: Option<u64> = None;
        for g in &hot[i + 1..] {
            if g.lo > h.hi {
                break;
            }
            if g.hi > h.hi || (g.lo == h.lo && g.hi == h.hi) {
                continue;
            }
            if covered_to.is_some_and(|end| g.lo <= end) {
                continue;
            }
            inner += exact.range_count(g.lo, g.hi);
            covered_to = Some(g.hi);
        }
        let exclusive = inclusive - inner;
        ranges.push(HotRangeAccuracy {
            hot: *h,
            exact_inclusive: inclusive,
            exact_exclusive: exclusive,
            error_pct: pct(inclusive, h.count),
            exclusive_error_pct: pct(exclusive, h.exclusive),
        });
    }
    let stats = |f: fn(&HotRangeAccuracy) -> f64| {
        let max = ranges.iter().map(f).fold(0.0, f64::max);
        let mean = if ranges.is_empty() {
            0.0
        } else {
            ranges.iter().map(f).sum::<f64>() / ranges.len() as f64
        };
        (max, mean)
    };
    let (max_error_pct, mean_error_pct) = stats(|r| r.error_pct);
    let (max_exclusive_error_pct, mean_exclusive_error_pct) = stats(|r| r.exclusive_error_pct);
    AccuracyReport {
        ranges,
        max_error_pct,
        mean_error_pct,
        max_exclusive_error_pct,
        mean_exclusive_error_pct,
    }
}

impl RapTree {
    /// Hot ranges for `fraction`, checked against `exact`.
    pub fn accuracy(
        &self,
        fraction: f64,
        exact: &ExactRanges,
    ) -> Result<AccuracyReport, crate::Error> {
        Ok(accuracy(&self.hot_ranges(fraction)?, exact))
    }
}
