//! Samplers that decide *when* to take a sample: [`PeriodSampler`] (every P events, optionally
//! randomized) and [`GeometricSampler`] (each event independently with probability 1/P, drawn
//! as geometric gaps so the cost is per sample, not per event).

use crate::error::{Error, Result};
use crate::rng::SplitMix64;

/// A fixed or randomized sampling period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodSampler {
    period: u64,
    random: bool,
}

impl PeriodSampler {
    /// Every `period` events (≥ 1); with `random`, each interval is uniform in
    /// `[period/2, period/2 + period)` (mean ≈ `period`) so samples cannot lock onto loops
    /// whose length divides the period.
    pub fn new(period: u64, random: bool) -> Result<PeriodSampler> {
        if period == 0 {
            return Err(Error::Config("period must be at least 1".into()));
        }
        Ok(PeriodSampler { period, random })
    }

    /// The mean period.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The next interval (≥ 1); draws from `rng` only when randomized.
    #[inline]
    pub fn next_interval(&self, rng: &mut SplitMix64) -> u64 {
        let p = self.period;
        if self.random && p > 1 {
            p / 2 + rng.next_u64() % p
        } else {
            p
        }
        .max(1)
    }
}

/// Bernoulli sampling with probability `1/mean` per event, as gaps between samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeometricSampler {
    /// `ln(1 - 1/mean)`; 0 when every event is sampled.
    log_q: f64,
}

impl GeometricSampler {
    /// Samples each event with probability `1/mean` (`mean` ≥ 1).
    pub fn new(mean: f64) -> Result<GeometricSampler> {
        if !(mean >= 1.0 && mean.is_finite()) {
            return Err(Error::Config(format!(
                "a geometric sampler's mean gap must be a finite number ≥ 1, not {mean}"
            )));
        }
        Ok(GeometricSampler {
            log_q: (1.0 - 1.0 / mean).ln(),
        })
    }

    /// Events until the next sample, the sampled one included (≥ 1).
    #[inline]
    pub fn next_gap(&self, rng: &mut SplitMix64) -> u64 {
        if self.log_q == 0.0 || !self.log_q.is_finite() {
            return 1;
        }
        // inverse CDF of the geometric distribution; 1 - U is in (0, 1]
        let u = 1.0 - rng.next_f64();
        let gap = (u.ln() / self.log_q).floor() + 1.0;
        if gap >= u64::MAX as f64 {
            u64::MAX
        } else {
            gap as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_period_is_exact() {
        let s = PeriodSampler::new(7, false).unwrap();
        let mut rng = SplitMix64::new(1);
        assert!((0..100).all(|_| s.next_interval(&mut rng) == 7));
        assert!(PeriodSampler::new(0, false).is_err());
    }

    #[test]
    fn randomized_period_stays_in_range_with_the_right_mean() {
        let s = PeriodSampler::new(1000, true).unwrap();
        let mut rng = SplitMix64::new(3);
        let n = 20_000u64;
        let mut sum = 0u64;
        for _ in 0..n {
            let i = s.next_interval(&mut rng);
            assert!((500..1500).contains(&i));
            sum += i;
        }
        let mean = sum as f64 / n as f64;
        assert!((mean - 999.5).abs() < 10.0, "{mean}");
    }

    #[test]
    fn geometric_gaps_have_the_right_mean() {
        let s = GeometricSampler::new(64.0).unwrap();
        let mut rng = SplitMix64::new(9);
        let n = 50_000u64;
        let sum: u64 = (0..n).map(|_| s.next_gap(&mut rng)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 64.0).abs() < 1.5, "{mean}");
        assert_eq!(GeometricSampler::new(1.0).unwrap().next_gap(&mut rng), 1);
        assert!(GeometricSampler::new(0.5).is_err());
        assert!(GeometricSampler::new(f64::NAN).is_err());
    }
}
