//! Region-based paths (paper §3.3).
//!
//! A region is a single-entry, acyclic piece of one function. The greedy breadth-first
//! formation follows the paper's four rules:
//!
//! 1. a block joins only if every predecessor is already in the region (single entry);
//! 2. a block joins only if its innermost loop is the entry's (no mix of in-loop and
//!    out-of-loop blocks; back edges never join, so a loop header always starts a region);
//! 3. a block joins only if the region then has fewer than N full paths;
//! 4. otherwise blocks join as long as any can (breadth-first, repeated until nothing moves).
//!
//! When a region is complete, the targets of its exit edges start new regions, and so on;
//! blocks no edge reaches (targets of indirect jumps) start regions of their own.
//!
//! A **full path** runs from the region's entry to an **exit vertex**: a block with an edge
//! leaving the region (a back edge, an edge to another region) or with a transfer that has no
//! static edge (return, indirect jump, tail call). Full paths are block sequences, as in the
//! paper's Table 1: two exits of the same block end the same path. Paths are numbered
//! Ball–Larus style: every internal edge carries a value, and the sum along a path is its id
//! in `0..paths`, so the exact profile is counted with one addition per edge.

use crate::cfg::{BlockId, Cfg, Term, NONE};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Index of a region in [`Regions::regions`].
pub type RegionId = u32;

/// A path: its region and its Ball–Larus id there.
pub type PathKey = (RegionId, u64);

/// One region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Entry block.
    pub entry: BlockId,
    /// Its function.
    pub func: u32,
    /// Its blocks, in topological order (entry first).
    pub blocks: Vec<BlockId>,
    /// Number of full paths.
    pub paths: u64,
}

/// The regions of a whole program, with Ball–Larus path numbering.
#[derive(Clone, Debug)]
pub struct Regions {
    /// Region of each block.
    pub region_of: Vec<RegionId>,
    /// The regions.
    pub regions: Vec<Region>,
    /// Per block: internal out-edges (target, Ball–Larus value), in the CFG's edge order.
    internal: Vec<Vec<(BlockId, u64)>>,
    /// Per block: whether it is an exit vertex.
    exit: Vec<bool>,
    /// Per block: full paths from it to an exit (saturating).
    npaths: Vec<u64>,
    /// The limit N of rule 3.
    pub limit: u64,
}

/// Whether `b` has a transfer with no static edge, or lacks an edge its terminator implies.
fn open_exit(cfg: &Cfg, b: BlockId) -> bool {
    let blk = &cfg.blocks[b as usize];
    let succs = &cfg.succs[b as usize];
    match blk.term {
        Term::Return | Term::Indirect | Term::Halt => true,
        Term::Cond { target } => {
            let fall = cfg.fall(b);
            let taken = cfg.block_at(target).and_then(|t| cfg.edge(b, t));
            fall.is_none() || taken.is_none()
        }
        _ => succs.is_empty(),
    }
}

/// Paths from the region's entry to its exits, with the region given by `inr`; `blocks`
/// are its members. Returns (topological order, paths) or `None` for a cycle (cannot happen
/// without back edges; defensive).
fn count_paths(cfg: &Cfg, blocks: &[BlockId], inr: &[bool]) -> (Vec<BlockId>, u64) {
    // Kahn over internal edges
    let mut indeg: FxHashMap<BlockId, u32> = blocks.iter().map(|&b| (b, 0)).collect();
    for &b in blocks {
        for e in &cfg.succs[b as usize] {
            if !e.back && inr[e.to as usize] {
                if let Some(d) = indeg.get_mut(&e.to) {
                    *d += 1;
                }
            }
        }
    }
    let mut order: Vec<BlockId> = blocks
        .iter()
        .copied()
        .filter(|b| indeg.get(b) == Some(&0))
        .collect();
    let mut i = 0;
    while i < order.len() {
        let b = order[i];
        i += 1;
        for e in &cfg.succs[b as usize] {
            if !e.back && inr[e.to as usize] {
                if let Some(d) = indeg.get_mut(&e.to) {
                    *d -= 1;
                    if *d == 0 {
                        order.push(e.to);
                    }
                }
            }
        }
    }
    let mut np: FxHashMap<BlockId, u64> = FxHashMap::default();
    for &b in order.iter().rev() {
        let mut n = u64::from(is_exit(cfg, b, inr));
        for e in &cfg.succs[b as usize] {
            if !e.back && inr[e.to as usize] {
                n = n.saturating_add(np.get(&e.to).copied().unwrap_or(0));
            }
        }
        np.insert(b, n);
    }
    let total = order.first().and_then(|b| np.get(b)).copied().unwrap_or(0);
    (order, total)
}

fn is_exit(cfg: &Cfg, b: BlockId, inr: &[bool]) -> bool {
    open_exit(cfg, b)
        || cfg.succs[b as usize]
            .iter()
            .any(|e| e.back || !inr[e.to as usize])
}

impl Regions {
    /// Forms the regions of every function of `cfg` with fewer than `limit` paths each
    /// (`limit` ≥ 2).
    pub fn new(cfg: &Cfg, limit: u64) -> Regions {
        let limit = limit.max(2);
        let n = cfg.blocks.len();
        let mut region_of = vec![NONE; n];
        let mut regions = Vec::new();
        let mut inr = vec![false; n];
        for (fi, f) in cfg.funcs.iter().enumerate() {
            let first = f.first_block;
            let last = first + f.block_count;
            let mut queue: VecDeque<BlockId> = VecDeque::new();
            let mut scan = first;
            loop {
                if queue.is_empty() {
                    while scan < last && region_of[scan as usize] != NONE {
                        scan += 1;
                    }
                    if scan == last {
                        break;
                    }
                    queue.push_back(scan);
                }
                let Some(e) = queue.pop_front() else { break };
                if region_of[e as usize] != NONE {
                    continue;
                }
                let members = grow(cfg, e, &region_of, &mut inr, limit);
                let (order, paths) = count_paths(cfg, &members, &inr);
                let rid = regions.len() as RegionId;
                for &b in &members {
                    region_of[b as usize] = rid;
                }
                for &b in &members {
                    for s in &cfg.succs[b as usize] {
                        if !inr[s.to as usize] && region_of[s.to as usize] == NONE {
                            queue.push_back(s.to);
                        }
                    }
                }
                for &b in &members {
                    inr[b as usize] = false;
                }
                regions.push(Region {
                    entry: e,
                    func: fi as u32,
                    blocks: order,
                    paths,
                });
            }
        }
        // Ball–Larus values
        let mut internal = vec![Vec::new(); n];
        let mut exit = vec![false; n];
        let mut npaths = vec![0u64; n];
        for r in &regions {
            for &b in r.blocks.iter().rev() {
                let rid = region_of[b as usize];
                let same = |t: BlockId| region_of[t as usize] == rid;
                let is_exit = open_exit(cfg, b)
                    || cfg.succs[b as usize].iter().any(|e| e.back || !same(e.to));
                let mut next = u64::from(is_exit);
                let mut out = Vec::new();
                for e in &cfg.succs[b as usize] {
                    if !e.back && same(e.to) {
                        out.push((e.to, next));
                        next = next.saturating_add(npaths[e.to as usize]);
                    }
                }
                exit[b as usize] = is_exit;
                npaths[b as usize] = next;
                internal[b as usize] = out;
            }
        }
        Regions {
            region_of,
            regions,
            internal,
            exit,
            npaths,
            limit,
        }
    }

    /// The Ball–Larus value of the internal edge `from → to`, or `None` if the edge leaves
    /// the region (or does not exist).
    #[inline]
    pub fn internal_edge(&self, from: BlockId, to: BlockId) -> Option<u64> {
        self.internal
            .get(from as usize)?
            .iter()
            .find(|e| e.0 == to)
            .map(|e| e.1)
    }

    /// Internal out-edges of `b`: (target, value).
    pub fn internal_edges(&self, b: BlockId) -> &[(BlockId, u64)] {
        self.internal.get(b as usize).map_or(&[], |v| v.as_slice())
    }

    /// Full paths from `b` to an exit of its region (saturating).
    pub fn paths_from(&self, b: BlockId) -> u64 {
        self.npaths.get(b as usize).copied().unwrap_or(0)
    }

    /// Whether `b` is an exit vertex of its region.
    #[inline]
    pub fn is_exit(&self, b: BlockId) -> bool {
        self.exit.get(b as usize).copied().unwrap_or(false)
    }

    /// Whether `b` is the entry of its region.
    #[inline]
    pub fn is_entry(&self, b: BlockId) -> bool {
        self.region_of
            .get(b as usize)
            .and_then(|&r| self.regions.get(r as usize))
            .is_some_and(|r| r.entry == b)
    }

    /// The blocks of path `id` of region `r`, or `None` for an id out of range.
    pub fn decode(&self, r: RegionId, id: u64) -> Option<Vec<BlockId>> {
        let reg = self.regions.get(r as usize)?;
        if id >= reg.paths {
            return None;
        }
        let mut out = vec![reg.entry];
        let mut v = reg.entry;
        let mut rest = id;
        loop {
            if self.exit[v as usize] && rest == 0 {
                return Some(out);
            }
            // the internal edge with the greatest value ≤ rest
            let (to, val) = *self.internal[v as usize]
                .iter()
                .rev()
                .find(|e| e.1 <= rest)?;
            rest -= val;
            v = to;
            out.push(v);
        }
    }

    /// Every full path of region `r`, in id order.
    pub fn enumerate(&self, r: RegionId) -> Vec<Vec<BlockId>> {
        let n = self.regions.get(r as usize).map_or(0, |x| x.paths);
        (0..n).filter_map(|id| self.decode(r, id)).collect()
    }

    /// The id of a full path given as blocks, if it is one.
    pub fn id_of(&self, blocks: &[BlockId]) -> Option<PathKey> {
        let first = *blocks.first()?;
        let r = *self.region_of.get(first as usize)?;
        if !self.is_entry(first) || !self.is_exit(*blocks.last()?) {
            return None;
        }
        let mut id = 0;
        for w in blocks.windows(2) {
            id += self.internal_edge(w[0], w[1])?;
        }
        Some((r, id))
    }
}

/// Grows a region from `entry` by the four rules; marks its members in `inr`.
fn grow(
    cfg: &Cfg,
    entry: BlockId,
    region_of: &[u32],
    inr: &mut [bool],
    limit: u64,
) -> Vec<BlockId> {
    let lp = cfg.loop_of[entry as usize];
    let mut members = vec![entry];
    inr[entry as usize] = true;
    loop {
        let mut changed = false;
        let mut i = 0;
        while i < members.len() {
            let m = members[i];
            i += 1;
            for e in &cfg.succs[m as usize] {
                let w = e.to;
                if e.back
                    || inr[w as usize]
                    || region_of[w as usize] != NONE
                    || cfg.loop_of[w as usize] != lp
                    || !cfg.preds[w as usize].iter().all(|&p| inr[p as usize])
                {
                    continue;
                }
                inr[w as usize] = true;
                members.push(w);
                if count_paths(cfg, &members, inr).1 >= limit {
                    inr[w as usize] = false;
                    members.pop();
                } else {
                    changed = true;
                }
            }
        }
        if !changed {
            return members;
        }
    }
}

/// Per region: its full paths and the paper's P(e) index, built on first use.
#[derive(Clone, Debug, Default)]
pub struct PathIndex {
    /// Blocks of each path, by id.
    pub paths: Vec<Vec<BlockId>>,
    /// P(e): paths containing the edge (from, to), as a bit set over ids.
    pub by_edge: FxHashMap<(BlockId, BlockId), Vec<u64>>,
    /// Paths containing the block.
    pub by_block: FxHashMap<BlockId, Vec<u64>>,
    /// Paths ending at the block.
    pub by_end: FxHashMap<BlockId, Vec<u64>>,
}

impl PathIndex {
    /// Enumerates region `r` and indexes its paths.
    pub fn build(regions: &Regions, r: RegionId) -> PathIndex {
        let paths = regions.enumerate(r);
        let words = paths.len().div_ceil(64).max(1);
        let mut ix = PathIndex {
            paths: Vec::new(),
            ..PathIndex::default()
        };
        for (i, p) in paths.iter().enumerate() {
            let bit = |v: &mut Vec<u64>| {
                if v.is_empty() {
                    v.resize(words, 0);
                }
                v[i / 64] |= 1 << (i % 64);
            };
            for w in p.windows(2) {
                bit(ix.by_edge.entry((w[0], w[1])).or_default());
            }
            for &b in p {
                bit(ix.by_block.entry(b).or_default());
            }
            if let Some(&l) = p.last() {
                bit(ix.by_end.entry(l).or_default());
            }
        }
        ix.paths = paths;
        ix
    }
}
