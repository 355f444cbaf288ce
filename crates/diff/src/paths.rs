//! Hot paths of two path profiles (branch-record samples or whole-program paths): the paths
//! that became hot (gained), the ones that stopped being hot (lost), and path shares summed
//! by function, which stay comparable across builds where block addresses do not.
//!
//! A path is identified by its blocks as `function+offset`, so paths match only between
//! profiles of the same code; for different builds the per-function table is the one to read.

use rustc_hash::FxHashMap;
use serde::Serialize;

/// One path of a profile, with its share of all the profile's path executions.
#[derive(Clone, Debug, PartialEq)]
pub struct PathIn {
    /// The function its first block is in.
    pub function: String,
    /// Its blocks, `function+0xoffset`, in order.
    pub blocks: Vec<String>,
    /// Its share of the profile (0–1).
    pub share: f64,
}

/// One path of the diff.
#[derive(Clone, Debug, Serialize)]
pub struct PathRow {
    /// The function its first block is in.
    pub function: String,
    /// Its blocks.
    pub blocks: Vec<String>,
    /// A's share (0 where A never took it).
    pub a_share: f64,
    /// B's share.
    pub b_share: f64,
}

/// Path shares of one function.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionShare {
    /// The function.
    pub function: String,
    /// A's paths starting in it, summed.
    pub a_share: f64,
    /// B's.
    pub b_share: f64,
}

/// The hot paths' difference.
#[derive(Clone, Debug, Serialize)]
pub struct PathsDiff {
    /// The share at which a path is hot.
    pub hot: f64,
    /// Paths hot in B and not in A, by B's share.
    pub gained: Vec<PathRow>,
    /// Paths hot in A and not in B, by A's share.
    pub lost: Vec<PathRow>,
    /// Paths hot in both, by absolute share change.
    pub kept: Vec<PathRow>,
    /// Path shares by function, by absolute change.
    pub by_function: Vec<FunctionShare>,
}

/// The difference of two path profiles; a path is hot at `hot` of its profile or more.
pub fn diff_paths(a: &[PathIn], b: &[PathIn], hot: f64) -> PathsDiff {
    let index = |v: &[PathIn]| -> FxHashMap<Vec<String>, f64> {
        let mut m = FxHashMap::default();
        for p in v {
            *m.entry(p.blocks.clone()).or_insert(0.0) += p.share;
        }
        m
    };
    let (ia, ib) = (index(a), index(b));
    let mut gained = Vec::new();
    let mut kept = Vec::new();
    let mut lost = Vec::new();
    let mut seen: FxHashMap<&[String], ()> = FxHashMap::default();
    for p in b.iter().chain(a) {
        if seen.insert(&p.blocks, ()).is_some() {
            continue;
        }
        let r = PathRow {
            function: p.function.clone(),
            blocks: p.blocks.clone(),
            a_share: ia.get(&p.blocks).copied().unwrap_or(0.0),
            b_share: ib.get(&p.blocks).copied().unwrap_or(0.0),
        };
        match (r.a_share >= hot, r.b_share >= hot) {
            (true, true) => kept.push(r),
            (false, true) => gained.push(r),
            (true, false) => lost.push(r),
            (false, false) => {}
        }
    }
    let by_key = |x: &PathRow, y: &PathRow| x.blocks.cmp(&y.blocks);
    gained.sort_by(|x, y| y.b_share.total_cmp(&x.b_share).then_with(|| by_key(x, y)));
    lost.sort_by(|x, y| y.a_share.total_cmp(&x.a_share).then_with(|| by_key(x, y)));
    kept.sort_by(|x, y| {
        (y.b_share - y.a_share)
            .abs()
            .total_cmp(&(x.b_share - x.a_share).abs())
            .then_with(|| by_key(x, y))
    });
    let mut funcs: FxHashMap<&str, (f64, f64)> = FxHashMap::default();
    for p in a {
        funcs.entry(&p.function).or_default().0 += p.share;
    }
    for p in b {
        funcs.entry(&p.function).or_default().1 += p.share;
    }
    let mut by_function: Vec<FunctionShare> = funcs
        .into_iter()
        .map(|(f, (x, y))| FunctionShare {
            function: f.to_string(),
            a_share: x,
            b_share: y,
        })
        .collect();
    by_function.sort_by(|x, y| {
        (y.b_share - y.a_share)
            .abs()
            .total_cmp(&(x.b_share - x.a_share).abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    PathsDiff {
        hot,
        gained,
        lost,
        kept,
        by_function,
    }
}
