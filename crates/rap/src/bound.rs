//! Worst-case node counts for our split and merge rules (the reasoning of RAP §3.1, Figures 2
//! and 3, redone for the rules in `tree.rs`; the proof is in `docs/rap.md`).
//!
//! Call an internal node whose children are all leaves a *frontier* node, and let its *owned
//! weight* be its own count plus its leaf children's counts. Owned weights of different
//! frontier nodes are disjoint, so if each is at least `w`, there are at most `L = ⌊n / w⌋`
//! frontier nodes. Every internal node at depth `d` has a frontier node in its subtree, so at
//! most `min(nodes possible at d, L)` internal nodes sit at depth `d`, and each has at most
//! `fanout(d)` children:
//!
//! ```text
//! nodes ≤ 1 + Σ_{d=0}^{H−1} min(b^d, L) · fanout(d)
//! ```
//!
//! * right after a merge batch at `n` with threshold τ: every frontier node failed to fold its
//!   lightest leaf child, so owned ≥ τ + 1 and `L = ⌊n / (τ + 1)⌋ < H/ε'`;
//! * at any `n'` after the last merge at `n₀` (τ₀ = τ(n₀)): a frontier node either survived the
//!   merge (owned ≥ τ₀ + 1) or split since (it holds ≥ τ₀, and its child that took the splitting
//!   event holds ≥ 1), so `L = ⌊n' / max(τ₀, 1)⌋`. Before the first merge, `τ₀ = 0`.

use crate::config::Config;
use crate::tree::Geometry;
use crate::RapTree;

/// Upper bound on live nodes for a tree with at most `frontier` frontier nodes.
pub fn node_bound_for_frontier(config: &Config, frontier: u64) -> u64 {
    let geo = Geometry::new(config);
    let mut total: u128 = 1;
    for d in 0..geo.height {
        // nodes possible at depth d: 2^(bits − width_bits(d))
        let level_bits = geo.bits - geo.width_bits(d);
        let possible: u128 = 1u128 << level_bits;
        let internal = possible.min(u128::from(frontier));
        total += internal * u128::from(geo.fanout[d as usize]);
    }
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// Child blocks (of `b` slots) in use right after any merge batch: the root's block and one
/// for each internal node, at most `min(nodes possible at d, ⌈H/ε'⌉)` at each depth `d`.
pub fn blocks_after_merge(config: &Config) -> u64 {
    let geo = Geometry::new(config);
    let frontier = steady_state_bounds(config).frontier_after_merge;
    let mut total: u128 = 1;
    for d in 0..geo.height {
        let possible: u128 = 1u128 << (geo.bits - geo.width_bits(d));
        total += possible.min(u128::from(frontier));
    }
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// The blocks a [`RapTree::with_bounded_arena`] arena stops at: twice what any merge batch
/// leaves, plus the `H` blocks one add's splits may take.
pub fn arena_blocks_bounded(config: &Config) -> u64 {
    blocks_after_merge(config)
        .saturating_mul(2)
        .saturating_add(u64::from(config.height()))
}

/// Most bytes a [`RapTree::with_bounded_arena`] tree ever holds after any sequence of adds
/// ([`RapTree::allocated_bytes`]): its arena's limit, a free list of at most twice that many
/// block numbers, the jump table and the stage-0 buffer at their largest.
///
/// Why the arena stays within its limit: a merge batch leaves at most
/// [`blocks_after_merge`] blocks in use, so right after one at least that many plus `H` are
/// spare; an add splits at most `H` nodes, one block each; and an add that leaves fewer than
/// `H` spare blocks runs a merge batch before the next.
pub fn max_allocated_bytes(config: &Config) -> u64 {
    let geo = Geometry::new(config);
    let blocks = arena_blocks_bounded(config);
    let node = RapTree::node_size();
    blocks
        .saturating_mul(u64::from(geo.b) * node)
        .saturating_add(blocks.saturating_mul(2 * 4))
        .saturating_add(crate::tree::fixed_bytes_max(&geo))
}

/// Bound on live nodes right after a merge batch at stream length `n`.
pub fn node_bound_after_merge(config: &Config, n: u64) -> u64 {
    let tau = config.split_threshold(n);
    node_bound_for_frontier(config, n / (tau + 1))
}

/// Bound on live nodes at stream length `n`, when the last merge batch ran at `last_merge_n`
/// (0 if none has run).
pub fn node_bound_between_merges(config: &Config, last_merge_n: u64, n: u64) -> u64 {
    let tau0 = config.split_threshold(last_merge_n).max(1);
    node_bound_for_frontier(config, n / tau0)
}

/// The steady-state bounds of a config, independent of `n` (for documentation and sizing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SteadyStateBounds {
    /// Frontier limit after a merge, `⌈H/ε'⌉`.
    pub frontier_after_merge: u64,
    /// Nodes right after any merge batch.
    pub after_merge: u64,
    /// Frontier limit just before the next merge, `⌈(q+1)·H/ε'⌉`.
    pub frontier_peak: u64,
    /// Nodes at any time after the first merge.
    pub peak: u64,
}

/// Bounds independent of `n`.
///
/// `after_merge` holds after every merge batch (`L = ⌊n/(τ+1)⌋ < H/ε'`). `peak` is the
/// asymptotic bound between merges for unit-weight streams: there `n'/n₀ ≤ q + 1` (merge points
/// are `E`, `E + qE`, `E + qE + q²E`, …) and `n₀/τ₀ → H/ε'` as `n₀` grows. Early in a stream,
/// and for weighted adds that jump past a merge point, [`node_bound_between_merges`] is the
/// exact statement at any moment.
pub fn steady_state_bounds(config: &Config) -> SteadyStateBounds {
    let h = u128::from(config.height());
    let e = u128::from(config.eps_q32());
    let after = ((h << 32).div_ceil(e)) as u64;
    let q = u128::from(config.merge_ratio());
    let peak_l = (((q + 1) * h) << 32).div_ceil(e);
    let peak_l = u64::try_from(peak_l).unwrap_or(u64::MAX);
    SteadyStateBounds {
        frontier_after_merge: after,
        after_merge: node_bound_for_frontier(config, after),
        frontier_peak: peak_l,
        peak: node_bound_for_frontier(config, peak_l),
    }
}

impl RapTree {
    /// The bound on live nodes that applies now (see [`node_bound_between_merges`]).
    pub fn node_bound(&self) -> u64 {
        node_bound_between_merges(&self.config, self.last_merge_n, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_bounds() {
        let c = Config::default();
        let s = steady_state_bounds(&c);
        // H/ε' = 32/0.01 (ε' a hair below 0.01)
        assert!((3200..=3201).contains(&s.frontier_after_merge));
        // levels 0..=5 are full (1+4+…+1024 = 1365), 26 levels of 3200/3201, times b = 4, plus root
        assert!(s.after_merge > 4 * (1365 + 26 * 3200));
        assert!(s.after_merge <= 1 + 4 * (1365 + 26 * 3201));
        assert!(s.peak > s.after_merge);
    }

    #[test]
    fn small_universe_is_capped_by_its_size() {
        let c = Config::builder().bits(4).branching(2).build().unwrap();
        // A full binary tree over 16 values has 31 nodes.
        assert_eq!(node_bound_for_frontier(&c, u64::MAX), 31);
    }
}
