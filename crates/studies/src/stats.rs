//! The statistics every table uses: median with min–max over repeated runs or seeds, and
//! geometric means of ratios. One implementation, tested against hand-computed values.

use serde::{Deserialize, Serialize};

/// The median and range of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median (for an even count, the upper of the two middle values, so that it is
    /// always one of the measurements).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// How many values.
    pub n: usize,
}

impl Spread {
    /// The spread of `values` (`None` when empty; NaNs sort last).
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut s = values.to_vec();
        s.sort_by(f64::total_cmp);
        Some(Spread {
            median: s[s.len() / 2],
            min: s[0],
            max: s[s.len() - 1],
            n: s.len(),
        })
    }

    /// `median (min–max)` with `digits` decimals, as BENCHMARKS.md writes it.
    pub fn show(&self, digits: usize) -> String {
        format!(
            "{:.d$} ({:.d$}–{:.d$})",
            self.median,
            self.min,
            self.max,
            d = digits
        )
    }

    /// As [`Spread::show`] for fractions, in percent.
    pub fn show_pct(&self, digits: usize) -> String {
        format!(
            "{:.d$}% ({:.d$}–{:.d$}%)",
            100.0 * self.median,
            100.0 * self.min,
            100.0 * self.max,
            d = digits
        )
    }
}

/// A fraction shown as a percentage with `digits` decimals (`0.1234` → `12.3` for 1).
pub fn pct(fraction: f64, digits: usize) -> String {
    format!("{:.digits$}", 100.0 * fraction)
}

/// The median of `values` (0 when empty), as [`Spread::of`] takes it.
pub fn median(values: &[f64]) -> f64 {
    Spread::of(values).map_or(0.0, |s| s.median)
}

/// The geometric mean of positive `values` (`None` when empty or any is not positive).
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn worked_examples() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(Spread::of(&[4.0, 1.0]).unwrap().median, 4.0);
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(s.show(1), "2.0 (1.0–3.0)");
        assert_eq!(Spread::of(&[0.5]).unwrap().show_pct(0), "50% (50–50%)");
        assert!((geomean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }

    proptest! {
        #[test]
        fn the_median_is_a_member_between_the_extremes(v in proptest::collection::vec(-1e9f64..1e9, 1..50)) {
            let s = Spread::of(&v).unwrap();
            prop_assert!(v.contains(&s.median));
            prop_assert!(s.min <= s.median && s.median <= s.max);
            let below = v.iter().filter(|&&x| x < s.median).count();
            prop_assert!(below <= v.len() / 2);
        }
    }
}
