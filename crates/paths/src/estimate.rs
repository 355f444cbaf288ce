//! Matching partial paths to full paths and weighting them (paper §3.4).
//!
//! For a fragment p with edges e₁…eₙ, the matching set is M_p = ∩ P(eᵢ) over the region's
//! full paths (a one-block fragment uses the paths through its block; a fragment known to end
//! at its last block keeps only the paths ending there). The fragment's count is then split
//! over M_p:
//!
//! * [`Weighting::Equal`]: equally (the paper's assumption 1);
//! * [`Weighting::Edges`] (beyond the paper, its §4.6 "redistribution of weights"): in
//!   proportion to each path's likelihood under the edge profile of the same samples, the
//!   product over its blocks of the observed branch frequencies (with add-one smoothing),
//!   exits included.

use crate::partial::{EdgeProfile, Fragment};
use crate::regions::{PathIndex, PathKey, RegionId, Regions};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// How a fragment's count is split over its matching paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Weighting {
    /// Equally (the paper).
    #[default]
    Equal,
    /// By path likelihood under the sampled edge profile.
    Edges,
}

/// An estimated path profile.
#[derive(Clone, Debug, Default)]
pub struct Estimate {
    /// Estimated count per path.
    pub paths: FxHashMap<PathKey, f64>,
    /// Fragment occurrences that matched at least one path.
    pub matched: u64,
    /// Fragment occurrences that matched none.
    pub unmatched: u64,
    /// Per region: (Σ count·|M|, Σ count) over its matched fragments; their ratio is the
    /// paper's matching ratio (§4.6).
    pub ratio: FxHashMap<RegionId, (f64, f64)>,
}

impl Estimate {
    /// Matching ratio of region `r` (mean |M| over its fragments), if any matched.
    pub fn matching_ratio(&self, r: RegionId) -> Option<f64> {
        self.ratio.get(&r).map(|(m, n)| m / n)
    }

    /// Mean matching ratio over all matched fragment occurrences.
    pub fn mean_matching_ratio(&self) -> f64 {
        let (m, n) = self
            .ratio
            .values()
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        if n > 0.0 {
            m / n
        } else {
            0.0
        }
    }
}

/// Path indexes built on first use.
#[derive(Debug, Default)]
pub struct IndexCache {
    map: FxHashMap<RegionId, PathIndex>,
}

impl IndexCache {
    /// The index of region `r`.
    pub fn get(&mut self, regions: &Regions, r: RegionId) -> &PathIndex {
        self.map
            .entry(r)
            .or_insert_with(|| PathIndex::build(regions, r))
    }
}

/// The ids of the paths of `r` matching `f`.
pub fn matches(ix: &PathIndex, f: &Fragment) -> Vec<u64> {
    let mut sets: Vec<&Vec<u64>> = Vec::new();
    if f.blocks.len() == 1 {
        match ix.by_block.get(&f.blocks[0]) {
            Some(s) => sets.push(s),
            None => return Vec::new(),
        }
    }
    for w in f.blocks.windows(2) {
        match ix.by_edge.get(&(w[0], w[1])) {
            Some(s) => sets.push(s),
            None => return Vec::new(),
        }
    }
    if f.ends {
        match f.blocks.last().and_then(|l| ix.by_end.get(l)) {
            Some(s) => sets.push(s),
            None => return Vec::new(),
        }
    }
    let Some(first) = sets.first() else {
        return Vec::new();
    };
    let mut acc: Vec<u64> = first.to_vec();
    for s in &sets[1..] {
        for (a, b) in acc.iter_mut().zip(s.iter()) {
            *a &= b;
        }
    }
    let mut out = Vec::new();
    for (w, &bits) in acc.iter().enumerate() {
        let mut b = bits;
        while b != 0 {
            let i = b.trailing_zeros() as u64;
            out.push(w as u64 * 64 + i);
            b &= b - 1;
        }
    }
    out
}

/// Likelihood of a path under the edge profile.
fn likelihood(regions: &Regions, edges: &EdgeProfile, path: &[u32]) -> f64 {
    let mut p = 1.0;
    for (i, &b) in path.iter().enumerate() {
        let out = regions.internal_edges(b);
        let exit = regions.is_exit(b);
        let options = out.len() + usize::from(exit);
        if options <= 1 {
            continue;
        }
        let count = |to: u32| edges.edges.get(&(b, to)).copied().unwrap_or(0) as f64;
        let exits = edges.exits.get(&b).copied().unwrap_or(0) as f64;
        let total: f64 =
            out.iter().map(|e| count(e.0)).sum::<f64>() + if exit { exits } else { 0.0 };
        let chosen = match path.get(i + 1) {
            Some(&n) => count(n),
            None => exits,
        };
        p *= (chosen + 1.0) / (total + options as f64);
    }
    p
}

/// Matches and weights every fragment (in a fixed order, so results are reproducible).
pub fn estimate(
    regions: &Regions,
    fragments: &FxHashMap<Fragment, u64>,
    weighting: Weighting,
    edges: &EdgeProfile,
    cache: &mut IndexCache,
) -> Estimate {
    let mut list: Vec<(&Fragment, &u64)> = fragments.iter().collect();
    list.sort();
    let mut est = Estimate::default();
    for (f, &count) in list {
        let ix = cache.get(regions, f.region);
        let m = matches(ix, f);
        if m.is_empty() {
            est.unmatched += count;
            continue;
        }
        est.matched += count;
        let r = est.ratio.entry(f.region).or_default();
        r.0 += count as f64 * m.len() as f64;
        r.1 += count as f64;
        let c = count as f64;
        match weighting {
            Weighting::Equal => {
                let w = c / m.len() as f64;
                for id in m {
                    *est.paths.entry((f.region, id)).or_default() += w;
                }
            }
            Weighting::Edges => {
                let ls: Vec<f64> = m
                    .iter()
                    .map(|&id| likelihood(regions, edges, &ix.paths[id as usize]))
                    .collect();
                let sum: f64 = ls.iter().sum();
                for (&id, l) in m.iter().zip(ls) {
                    let w = if sum > 0.0 {
                        c * l / sum
                    } else {
                        c / m.len() as f64
                    };
                    *est.paths.entry((f.region, id)).or_default() += w;
                }
            }
        }
    }
    est
}
