//! Reading a RAP tree: node listings, guaranteed `(lower, upper)` estimates for any range, and
//! hot ranges as RAP §4.1 defines them.

use crate::tree::{RapTree, ROOT};
use crate::Error;
use serde::{Deserialize, Serialize};

/// A guaranteed interval for the number of events in a range: `lower ≤ true ≤ upper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    /// Events certainly in the range: counts of nodes whose range lies inside it.
    pub lower: u64,
    /// Events possibly in the range: adds the counts of nodes that only overlap it.
    pub upper: u64,
}

/// One node of the tree with its estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSummary {
    /// First value of the range.
    pub lo: u64,
    /// Last value of the range (inclusive).
    pub hi: u64,
    /// Depth (root = 0).
    pub depth: u32,
    /// The node's own counter.
    pub count: u64,
    /// Sum of counters in the node's subtree: the lower bound for `[lo, hi]`.
    pub subtree: u64,
    /// `subtree` plus the counters of all ancestors: the upper bound for `[lo, hi]`.
    pub upper: u64,
    /// Whether the node has children.
    pub internal: bool,
}

/// A hot range (RAP §4.1): its own count plus the counts of its non-hot descendants reach the
/// threshold. A range is never hot merely because a descendant is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotRange {
    /// First value.
    pub lo: u64,
    /// Last value (inclusive).
    pub hi: u64,
    /// Depth in the tree (root = 0).
    pub depth: u32,
    /// Events in `[lo, hi]` as far as the tree knows: every counter in the subtree (the lower
    /// bound of [`RapTree::estimate`]).
    pub count: u64,
    /// Exclusive weight: the node's own count plus its non-hot descendants' — what makes the
    /// range hot (the paper's Figure 5 annotation). Exclusive weights of hot ranges are disjoint.
    pub exclusive: u64,
    /// Upper bound for `[lo, hi]` (adds the ancestors' counters).
    pub upper: u64,
    /// `count / n`.
    pub share: f64,
    /// `exclusive / n`.
    pub exclusive_share: f64,
}

impl RapTree {
    /// Every node in pre-order (a parent before its children, children by address).
    pub fn nodes(&self) -> Vec<NodeSummary> {
        let mut out = Vec::with_capacity(self.live_nodes as usize);
        self.summarize(ROOT, 0, 0, 0, &mut out);
        out
    }

    /// Returns the subtree sum; pushes summaries in pre-order.
    fn summarize(
        &self,
        node: u32,
        depth: u32,
        lo: u64,
        above: u64,
        out: &mut Vec<NodeSummary>,
    ) -> u64 {
        let count = self.nodes[node as usize].count;
        let at = out.len();
        out.push(NodeSummary {
            lo,
            hi: self.geo.hi(lo, depth),
            depth,
            count,
            subtree: 0,
            upper: 0,
            internal: false,
        });
        let mut subtree = count;
        let mut internal = false;
        for (slot, child) in self.children(node, depth) {
            internal = true;
            let child_lo = lo + (u64::from(slot) << self.geo.shift[depth as usize]);
            subtree += self.summarize(child, depth + 1, child_lo, above + count, out);
        }
        let s = &mut out[at];
        s.subtree = subtree;
        s.upper = subtree + above;
        s.internal = internal;
        subtree
    }

    /// Guaranteed bounds on the number of events with value in `[lo, hi]`.
    ///
    /// For a range that is a node of the aligned subdivision (existing or not), `upper − lower
    /// ≤ ε·n`; for any range, `lower ≤ true ≤ upper`.
    pub fn estimate(&self, lo: u64, hi: u64) -> Result<Estimate, Error> {
        if lo > hi {
            return Err(Error::InvalidRange {
                lo,
                hi,
                reason: "lo > hi",
            });
        }
        if hi > self.geo.max_value {
            return Err(Error::InvalidRange {
                lo,
                hi,
                reason: "outside the universe",
            });
        }
        let (lower, upper) = self.estimate_in(ROOT, 0, 0, lo, hi);
        Ok(Estimate { lower, upper })
    }

    fn estimate_in(&self, node: u32, depth: u32, nlo: u64, lo: u64, hi: u64) -> (u64, u64) {
        let nhi = self.geo.hi(nlo, depth);
        if nhi < lo || nlo > hi {
            return (0, 0);
        }
        if lo <= nlo && nhi <= hi {
            let s = self.subtree_sum(node, depth);
            return (s, s);
        }
        let count = self.nodes[node as usize].count;
        let (mut lower, mut upper) = (0, count);
        for (slot, child) in self.children(node, depth) {
            let child_lo = nlo + (u64::from(slot) << self.geo.shift[depth as usize]);
            let (l, u) = self.estimate_in(child, depth + 1, child_lo, lo, hi);
            lower += l;
            upper += u;
        }
        (lower, upper)
    }

    fn subtree_sum(&self, node: u32, depth: u32) -> u64 {
        self.nodes[node as usize].count
            + self
                .children(node, depth)
                .map(|(_, c)| self.subtree_sum(c, depth + 1))
                .sum::<u64>()
    }

    /// Hot ranges for `fraction` of `n` (RAP §4.1), in pre-order. With `n = 0` there are none.
    pub fn hot_ranges(&self, fraction: f64) -> Result<Vec<HotRange>, Error> {
        if !(fraction.is_finite() && fraction > 0.0 && fraction <= 1.0) {
            return Err(Error::InvalidFraction(fraction));
        }
        let mut out = Vec::new();
        if self.n == 0 {
            return Ok(out);
        }
        let threshold = fraction * self.n as f64;
        self.hot_in(ROOT, 0, 0, 0, threshold, &mut out);
        Ok(out)
    }

    /// Returns `(subtree, acc, hot)` where `acc` is the count plus non-hot descendants.
    fn hot_in(
        &self,
        node: u32,
        depth: u32,
        lo: u64,
        above: u64,
        threshold: f64,
        out: &mut Vec<HotRange>,
    ) -> (u64, u64, bool) {
        let count = self.nodes[node as usize].count;
        let at = out.len();
        let mut subtree = count;
        let mut acc = count;
        for (slot, child) in self.children(node, depth) {
            let child_lo = lo + (u64::from(slot) << self.geo.shift[depth as usize]);
            let (s, a, hot) =
                self.hot_in(child, depth + 1, child_lo, above + count, threshold, out);
            subtree += s;
            if !hot {
                acc += a;
            }
        }
        let hot = acc as f64 >= threshold;
        if hot {
            let n = self.n as f64;
            out.insert(
                at,
                HotRange {
                    lo,
                    hi: self.geo.hi(lo, depth),
                    depth,
                    count: subtree,
                    exclusive: acc,
                    upper: subtree + above,
                    share: subtree as f64 / n,
                    exclusive_share: acc as f64 / n,
                },
            );
        }
        (subtree, acc, hot)
    }
}
