//! The sampled CPI estimate and its confidence interval.
//!
//! SMARTS (Wunderlich, Wenisch, Falsafi and Hoe, ISCA 2003, §3) samples *units* of a few
//! thousand instructions systematically through the run and estimates the run's CPI by the
//! mean of the units' CPIs; the central limit theorem gives the interval
//! `± z · s / √n` at a chosen confidence (`z` = 2.97 at 99.7%), and where the interval is wider
//! than the target, the number of units is tuned from the measured coefficient of variation,
//! `n = (z · V / ε)²` (§3.2), and the sampling run repeated.
//!
//! Ours stratifies by phase (SimPoint's clusters, [`crate::cluster`]): the run's CPI is
//! `Σ_h W_h · ȳ_h` over the phases `h` (`W_h` the phase's share of the run's instructions,
//! `ȳ_h` the mean CPI of its units), with the standard stratified variance
//! `Σ_h W_h² · s_h² / n_h` (Cochran, *Sampling Techniques*, §5.3), and a tuned plan allocates
//! units to phases in proportion to `W_h · s_h` (Neyman allocation, §5.5): fewer units where a
//! phase is steady, more where it varies. With one phase this is SMARTS's formula exactly.
//! Like SMARTS, the variance of a systematic sample is estimated as a simple random sample's.

use serde::Serialize;

/// What one phase (stratum) contributes to an [`Estimate`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StratumEstimate {
    /// The phase's id.
    pub id: usize,
    /// Its share of the run's instructions (`W_h`).
    pub weight: f64,
    /// Units measured in it (`n_h`).
    pub units: usize,
    /// The mean of its units' CPIs (`ȳ_h`): the phase's CPI.
    pub cpi: f64,
    /// The standard deviation of its units' CPIs (`s_h`; 0 with fewer than two units).
    pub std_dev: f64,
    /// Half the width of the phase's own confidence interval, `z · s_h / √n_h` (CPI units);
    /// `None` with fewer than two units.
    pub half_width: Option<f64>,
}

/// A stratified CPI estimate with its confidence interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The run's estimated CPI, `Σ_h W_h · ȳ_h`.
    pub cpi: f64,
    /// Its standard error, `√(Σ_h W_h² s_h² / n_h)`; `None` when some phase has fewer than two
    /// units (its variance is unknown: no interval can be claimed).
    pub std_error: Option<f64>,
    /// The confidence level (0.997 for 99.7%).
    pub confidence: f64,
    /// The two-sided normal quantile of `confidence` (2.97 at 99.7%).
    pub z: f64,
    /// Each phase's part, by phase id.
    pub strata: Vec<StratumEstimate>,
}

impl Estimate {
    /// The estimate from `units`, each `(phase id, CPI)`, over phases `strata`, each
    /// `(id, weight)` (weights summing to 1), at `confidence` (0 < confidence < 1). A phase
    /// with no unit contributes nothing to the mean and makes the interval unknown.
    pub fn new(strata: &[(usize, f64)], units: &[(usize, f64)], confidence: f64) -> Estimate {
        let z = normal_quantile(0.5 + confidence / 2.0);
        let mut parts = Vec::with_capacity(strata.len());
        let (mut cpi, mut variance, mut known) = (0.0, 0.0, true);
        for &(id, weight) in strata {
            let ys = units.iter().filter(|u| u.0 == id).map(|u| u.1);
            let (n, mean, m2) = welford(ys);
            let std_dev = if n >= 2 {
                (m2 / (n - 1) as f64).sqrt()
            } else {
                0.0
            };
            let half_width = (n >= 2).then(|| z * std_dev / (n as f64).sqrt());
            if n >= 2 {
                variance += weight * weight * std_dev * std_dev / n as f64;
            } else {
                known = false;
            }
            cpi += weight * mean;
            parts.push(StratumEstimate {
                id,
                weight,
                units: n,
                cpi: mean,
                std_dev,
                half_width,
            });
        }
        Estimate {
            cpi,
            std_error: known.then(|| variance.sqrt()),
            confidence,
            z,
            strata: parts,
        }
    }

    /// Half the width of the run's interval, `z · standard error` (CPI units).
    pub fn half_width(&self) -> Option<f64> {
        self.std_error.map(|s| self.z * s)
    }

    /// The half-width as a fraction of the estimate (0.03 for ±3%).
    pub fn relative_half_width(&self) -> Option<f64> {
        self.half_width()
            .map(|h| if self.cpi > 0.0 { h / self.cpi } else { 0.0 })
    }

    /// Whether the interval holds `cpi` (false when there is no interval).
    pub fn covers(&self, cpi: f64) -> bool {
        self.half_width()
            .is_some_and(|h| (cpi - self.cpi).abs() <= h)
    }

    /// Units per phase (in the order of [`Estimate::strata`]) that bring the interval's
    /// relative half-width to `target` (0.03 for ±3%) by Neyman allocation — `n_h ∝ W_h · s_h`
    /// with `n = (z · Σ_h W_h s_h / (target · CPI))²` —, each at least `min` and at most
    /// `max`. The standard deviations are this estimate's, the pilot's (SMARTS §3.2).
    pub fn tuned_plan(&self, target: f64, min: usize, max: usize) -> Vec<usize> {
        let spread: f64 = self.strata.iter().map(|s| s.weight * s.std_dev).sum();
        let wanted = if target > 0.0 && self.cpi > 0.0 {
            (self.z * spread / (target * self.cpi)).powi(2)
        } else {
            f64::INFINITY
        };
        self.strata
            .iter()
            .map(|s| {
                let share = if spread > 0.0 {
                    s.weight * s.std_dev / spread
                } else {
                    0.0
                };
                let n = (wanted * share).ceil();
                // (a float beyond usize saturates in the cast)
                (if n.is_finite() { n as usize } else { max }).clamp(min, max.max(min))
            })
            .collect()
    }
}

/// A ratio of two totals estimated from the same stratified samples — a function's CPI, its
/// cycles over its instructions in every unit — with its interval by the usual linearization
/// (Cochran §6.11): `R = Ȳ / X̄` with `Ȳ = Σ_h W_h ȳ_h` and `X̄ = Σ_h W_h x̄_h`, and
/// `Var(R) ≈ Σ_h W_h² s²(d)_h / n_h / X̄²` over the residuals `d = y − R · x`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RatioEstimate {
    /// `R`.
    pub ratio: f64,
    /// `Ȳ`: the numerator's mean per unit, weighed over the phases.
    pub numerator: f64,
    /// `X̄`: the denominator's.
    pub denominator: f64,
    /// Half the interval's width at the confidence asked; `None` when a phase has fewer than
    /// two units, or fewer than the minimum asked have a denominator above 0.
    pub half_width: Option<f64>,
}

impl RatioEstimate {
    /// From `units`, each `(phase id, y, x)` — every unit of the sample, zeros included —,
    /// over phases `strata` (`(id, weight)`), at `confidence`. The interval is claimed only
    /// when at least `min_seen` units have `x > 0` (at least 2): a ratio seen in a handful of
    /// units is too far from normal for the formula.
    pub fn new(
        strata: &[(usize, f64)],
        units: &[(usize, f64, f64)],
        confidence: f64,
        min_seen: usize,
    ) -> Self {
        let z = normal_quantile(0.5 + confidence / 2.0);
        let mean_of = |id: usize, f: &dyn Fn(&(usize, f64, f64)) -> f64| {
            welford(units.iter().filter(|u| u.0 == id).map(f))
        };
        let (mut y, mut x, mut known) = (0.0, 0.0, true);
        for &(id, w) in strata {
            let (n, my, _) = mean_of(id, &|u| u.1);
            let (_, mx, _) = mean_of(id, &|u| u.2);
            y += w * my;
            x += w * mx;
            known &= n >= 2;
        }
        // a ratio seen in one unit only has no spread to measure
        known &= units.iter().filter(|u| u.2 > 0.0).count() >= min_seen.max(2);
        let ratio = if x > 0.0 { y / x } else { 0.0 };
        let mut variance = 0.0;
        for &(id, w) in strata {
            let (n, _, m2) = mean_of(id, &|u| u.1 - ratio * u.2);
            if n >= 2 {
                variance += w * w * (m2 / (n - 1) as f64) / n as f64;
            }
        }
        RatioEstimate {
            ratio,
            numerator: y,
            denominator: x,
            half_width: (known && x > 0.0).then(|| z * variance.sqrt() / x),
        }
    }
}

/// Count, mean and sum of squared deviations (Welford's one-pass algorithm, stable for the
/// many nearly equal CPIs a steady phase gives).
fn welford(ys: impl Iterator<Item = f64>) -> (usize, f64, f64) {
    let (mut n, mut mean, mut m2) = (0usize, 0.0, 0.0);
    for y in ys {
        n += 1;
        let d = y - mean;
        mean += d / n as f64;
        m2 += d * (y - mean);
    }
    (n, mean, m2)
}

/// The standard normal distribution's quantile: the `x` with `Φ(x) = p` (0 < p < 1), by
/// Acklam's rational approximation (relative error below 1.2 × 10⁻⁹, ample for confidence
/// levels). Outside (0, 1) it saturates to ±∞.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    if p.is_nan() {
        return f64::NAN;
    }
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn quantiles_are_the_tables() {
        // two-sided z of the usual confidence levels (any statistics table)
        for (conf, z) in [
            (0.90, 1.644_853_6),
            (0.95, 1.959_964_0),
            (0.99, 2.575_829_3),
            (0.997, 2.967_737_9),
            (0.9973, 3.000_0),
        ] {
            let got = normal_quantile(0.5 + conf / 2.0);
            assert!((got - z).abs() < 2e-4, "{conf}: {got} vs {z}");
        }
        assert_eq!(normal_quantile(0.5), 0.0);
        assert!((normal_quantile(0.01) + 2.326_347_9).abs() < 1e-6);
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(normal_quantile(1.0), f64::INFINITY);
    }

    #[test]
    fn one_phase_is_smarts_formula() {
        // CPIs 1, 2, 3, 4: mean 2.5, s = √(5/3), standard error s/2
        let e = Estimate::new(&[(0, 1.0)], &[(0, 1.0), (0, 2.0), (0, 3.0), (0, 4.0)], 0.95);
        assert!((e.cpi - 2.5).abs() < 1e-12);
        let s = (5.0f64 / 3.0).sqrt();
        assert!((e.std_error.unwrap() - s / 2.0).abs() < 1e-12);
        assert!((e.half_width().unwrap() - 1.959_964 * s / 2.0).abs() < 1e-5);
        assert!(e.covers(2.5 + 1.1) && !e.covers(2.5 + 1.3));
        assert_eq!(e.strata[0].units, 4);
    }

    #[test]
    fn strata_weigh_their_means_and_variances() {
        // phase 0 (weight 0.75): 1, 1, 1 (no spread); phase 1 (0.25): 2, 4
        let e = Estimate::new(
            &[(0, 0.75), (1, 0.25)],
            &[(0, 1.0), (1, 2.0), (0, 1.0), (1, 4.0), (0, 1.0)],
            0.997,
        );
        assert!((e.cpi - (0.75 + 0.25 * 3.0)).abs() < 1e-12);
        // Var = 0.25² · 2 / 2 (s² of {2, 4} is 2)
        assert!((e.std_error.unwrap() - (0.0625f64).sqrt()).abs() < 1e-12);
        assert_eq!(e.strata[0].half_width, Some(0.0));
        // Neyman: all units go where the spread is; the steady phase keeps its minimum
        let plan = e.tuned_plan(0.03, 2, 10_000);
        assert_eq!(plan[0], 2);
        let n = (e.z * 0.25 * 2f64.sqrt() / (0.03 * e.cpi)).powi(2).ceil() as usize;
        assert_eq!(plan[1], n);
    }

    #[test]
    fn a_phase_without_two_units_has_no_interval() {
        let e = Estimate::new(
            &[(0, 0.5), (1, 0.5)],
            &[(0, 1.0), (0, 2.0), (1, 3.0)],
            0.997,
        );
        assert_eq!(e.std_error, None);
        assert!(!e.covers(e.cpi));
        assert_eq!(e.strata[1].half_width, None);
        // the phase of one unit gets the minimum, to learn its spread next time
        let plan = e.tuned_plan(0.03, 2, 50);
        assert_eq!(plan[1], 2);
        assert!(plan[0] >= 2);
    }

    #[test]
    fn a_ratio_of_totals_and_its_linearized_interval() {
        // one phase, units (y, x): (2, 1), (4, 2), (6, 2), (0, 0): R = 12 / 5
        let u = [(0, 2.0, 1.0), (0, 4.0, 2.0), (0, 6.0, 2.0), (0, 0.0, 0.0)];
        let r = RatioEstimate::new(&[(0, 1.0)], &u, 0.95, 2);
        assert!((r.ratio - 2.4).abs() < 1e-12);
        // residuals d = y − 2.4 x: −0.4, −0.8, 1.2, 0; mean 0, s² = (0.16+0.64+1.44)/3
        let s2: f64 = (0.16 + 0.64 + 1.44) / 3.0;
        let want = 1.959_964 * (s2 / 4.0).sqrt() / 1.25;
        assert!((r.half_width.unwrap() - want).abs() < 1e-5, "{r:?}");
        // every unit in proportion: no width
        let u = [(0, 3.0, 1.0), (0, 6.0, 2.0), (1, 9.0, 3.0), (1, 0.0, 0.0)];
        let r = RatioEstimate::new(&[(0, 0.5), (1, 0.5)], &u, 0.997, 2);
        assert_eq!(
            RatioEstimate::new(&[(0, 0.5), (1, 0.5)], &u, 0.997, 4).half_width,
            None
        );
        assert!((r.ratio - 3.0).abs() < 1e-12);
        assert!(r.half_width.unwrap() < 1e-12);
        // seen in one unit only: a ratio, but no interval
        let r = RatioEstimate::new(&[(0, 1.0)], &[(0, 5.0, 2.0), (0, 0.0, 0.0)], 0.997, 0);
        assert_eq!((r.ratio, r.half_width), (2.5, None));
        // nothing in the denominator: no ratio, no interval
        let r = RatioEstimate::new(&[(0, 1.0)], &[(0, 0.0, 0.0), (0, 0.0, 0.0)], 0.997, 2);
        assert_eq!((r.ratio, r.half_width), (0.0, None));
    }

    proptest! {
        /// With every unit's CPI known exactly (no spread), the estimate is the weighted mean
        /// and the interval has no width; the interval always narrows as √n.
        #[test]
        fn the_interval_shrinks_with_more_units(
            cpis in proptest::collection::vec(0.1f64..10.0, 2..40),
            copies in 2usize..6,
        ) {
            let units: Vec<(usize, f64)> = cpis.iter().map(|&c| (0, c)).collect();
            let e = Estimate::new(&[(0, 1.0)], &units, 0.997);
            let more: Vec<(usize, f64)> =
                (0..copies).flat_map(|_| units.iter().copied()).collect();
            let f = Estimate::new(&[(0, 1.0)], &more, 0.997);
            prop_assert!((e.cpi - f.cpi).abs() < 1e-9 * e.cpi.max(1.0));
            prop_assert!(f.half_width().unwrap() <= e.half_width().unwrap() + 1e-12);
            let flat = Estimate::new(&[(0, 1.0)], &[(0, cpis[0]); 5], 0.997);
            prop_assert!(flat.half_width().unwrap() < 1e-9);
            prop_assert!(flat.covers(cpis[0]));
        }
    }
}
