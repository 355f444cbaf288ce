//! Accuracy of an estimated path profile against the exact one (paper §4.5).
//!
//! * **Wall's weight matching** as the paper defines it: the hot set H_actual is every path
//!   whose flow (count ÷ all counts) is at least the threshold (0.125%); H_est is the same
//!   number of top paths of the estimate; accuracy = Σ_{p ∈ H_est ∩ H_actual} F(p) ÷
//!   Σ_{p ∈ H_actual} F(p), flows taken from the exact profile.
//! * **Overlap**: Σ_p min(f_exact(p), f_est(p)) over normalized frequencies (as
//!   `llvm-profdata overlap` and the branch-on-random paper's §4.1 define it).

use crate::regions::PathKey;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

/// The paper's hot threshold: 0.125% of all path executions.
pub const HOT: f64 = 0.00125;

/// Accuracy figures of one estimate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// Wall's weight-matching accuracy, 0..1.
    pub wall: f64,
    /// Overlap of the normalized profiles, 0..1.
    pub overlap: f64,
    /// Paths in H_actual (paper Table 4 "# Hot Paths").
    pub hot_paths: usize,
    /// Their share of all flow (Table 4 "% Total Flow"), 0..1.
    pub hot_flow: f64,
    /// Of the hot paths, how many the estimate ranked among its top ones.
    pub hot_found: usize,
}

/// Paths sorted hottest first, ties broken by key (deterministic).
pub fn ranked<T: Copy + PartialOrd>(m: &FxHashMap<PathKey, T>) -> Vec<(PathKey, T)> {
    let mut v: Vec<(PathKey, T)> = m.iter().map(|(k, c)| (*k, *c)).collect();
    v.sort_by(|a, b| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(&b.0))
    });
    v
}

/// Scores `est` against `exact` with hot threshold `threshold`.
pub fn accuracy(
    exact: &FxHashMap<PathKey, u64>,
    est: &FxHashMap<PathKey, f64>,
    threshold: f64,
) -> Accuracy {
    let total: u64 = exact.values().sum();
    if total == 0 {
        return Accuracy::default();
    }
    let flow = |k: &PathKey| exact.get(k).copied().unwrap_or(0) as f64 / total as f64;
    let hot: Vec<(PathKey, u64)> = ranked(exact)
        .into_iter()
        .filter(|(_, c)| *c as f64 / total as f64 >= threshold)
        .collect();
    let hot_flow: f64 = hot.iter().map(|(k, _)| flow(k)).sum();
    let top: FxHashSet<PathKey> = ranked(est)
        .into_iter()
        .take(hot.len())
        .map(|(k, _)| k)
        .collect();
    let found: Vec<&(PathKey, u64)> = hot.iter().filter(|(k, _)| top.contains(k)).collect();
    let covered: f64 = found.iter().map(|(k, _)| flow(k)).sum();
    let est_total: f64 = est.values().sum();
    let mut overlap = 0.0;
    if est_total > 0.0 {
        for (k, c) in exact {
            let e = est.get(k).copied().unwrap_or(0.0) / est_total;
            overlap += (*c as f64 / total as f64).min(e);
        }
    }
    Accuracy {
        wall: if hot_flow > 0.0 {
            covered / hot_flow
        } else {
            1.0
        },
        overlap,
        hot_paths: hot.len(),
        hot_flow,
        hot_found: found.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_and_overlap_by_hand() {
        let exact: FxHashMap<PathKey, u64> = [((0, 0), 600), ((0, 1), 300), ((0, 2), 100)]
            .into_iter()
            .collect();
        // the estimate ranks path 2 above path 1
        let est: FxHashMap<PathKey, f64> = [((0, 0), 5.0), ((0, 1), 1.0), ((0, 2), 4.0)]
            .into_iter()
            .collect();
        let a = accuracy(&exact, &est, 0.2);
        // hot: paths 0 and 1 (flow 0.9); the estimate's top two are 0 and 2
        assert_eq!(a.hot_paths, 2);
        assert!((a.hot_flow - 0.9).abs() < 1e-12);
        assert!((a.wall - 0.6 / 0.9).abs() < 1e-12);
        // overlap: min(.6,.5) + min(.3,.1) + min(.1,.4) = .5 + .1 + .1
        assert!((a.overlap - 0.7).abs() < 1e-12);
        let perfect = accuracy(
            &exact,
            &exact.iter().map(|(k, v)| (*k, *v as f64)).collect(),
            HOT,
        );
        assert_eq!(perfect.wall, 1.0);
        assert!((perfect.overlap - 1.0).abs() < 1e-12);
    }
}
