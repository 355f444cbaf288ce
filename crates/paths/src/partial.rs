//! Partial paths from branch-record samples (paper §3.2).
//!
//! One sample is the last N taken branches, oldest first. Between the target of one record
//! and the source of the next, execution fell through: the blocks in between are walked by
//! fall-through edges. The walk fails (the sample is cut there) when a block on the way ends
//! in an unconditional transfer, which means a record is missing or wrong. Then:
//!
//! * **extension**: the first block is extended upwards while it has a single predecessor
//!   (up to a join point), the last block downwards by fall-through (down to the first
//!   branch point);
//! * **splitting**: the walk is cut at function boundaries (calls, returns, tail calls), at
//!   indirect jumps, at loop back edges, and where it leaves a region (the paper's regions
//!   never span a back edge or a call, and P(e) lives inside one region).
//!
//! Each piece is a [`Fragment`]: a region and a block sequence inside it. With
//! [`Options::stitch`] (beyond the paper) a fragment also keeps what its boundaries say: a
//! piece followed by a back edge or another exit must end at its last block, and a caller's
//! piece resumes after a call whose return is in the same sample.

use crate::cfg::{BlockId, Cfg, EdgeKind, Term};
use crate::regions::{RegionId, Regions};
use rustc_hash::FxHashMap;
use serde::Serialize;

pub use outcrop_sampling::Record;

/// A piece of a partial path inside one region.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fragment {
    /// Its region.
    pub region: RegionId,
    /// Its blocks, in execution order.
    pub blocks: Vec<BlockId>,
    /// Whether the path is known to end at the last block (stitch mode only).
    pub ends: bool,
}

/// Reconstruction options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Options {
    /// Extend up to a join point and down to a branch point (the paper does).
    pub extend: bool,
    /// Keep boundary information across back edges and calls (beyond the paper).
    pub stitch: bool,
    /// Longest fall-through walk between two records, in blocks.
    pub max_walk: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            extend: true,
            stitch: false,
            max_walk: 4096,
        }
    }
}

/// How one block leads to the next in a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// An intraprocedural edge of the CFG.
    Edge {
        back: bool,
    },
    Call,
    Return,
    Tail,
    Indirect,
}

/// Statistics of a reconstruction (paper Tables 2 and 3), weighted by sample counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PartialStats {
    /// Samples seen.
    pub samples: u64,
    /// Samples none of whose records could be placed on the CFG.
    pub discarded: u64,
    /// Places where a sample had to be cut (a walk failed or a record was unplaceable).
    pub breaks: u64,
    /// Records whose source was not the last instruction of its block (imprecise
    /// hardware) and was moved to the block's branch.
    pub snapped: u64,
    /// Records whose lost target was recovered from the branch's static target.
    pub recovered_targets: u64,
    /// Instructions in the walks before extension (sum over chains).
    pub insns_initial: u64,
    /// Chains.
    pub chains: u64,
    /// Instructions after extension.
    pub insns_extended: u64,
    /// Pieces after splitting at function boundaries only, and their instructions.
    pub pieces_func: u64,
    /// Instructions in those pieces.
    pub insns_func: u64,
    /// Pieces after splitting at function boundaries and back edges.
    pub pieces_loop: u64,
    /// Instructions in those pieces.
    pub insns_loop: u64,
    /// Fragments (also split at region boundaries).
    pub fragments: u64,
    /// Instructions in fragments.
    pub insns_fragments: u64,
    /// Samples by function boundaries spanned: 0, 1, 2, 3, 4 and more (paper Table 3).
    pub spans: [u64; 5],
}

impl PartialStats {
    fn mean(a: u64, n: u64) -> f64 {
        if n == 0 {
            0.0
        } else {
            a as f64 / n as f64
        }
    }
    /// Mean instructions per chain before extension (Table 2 "Initial").
    pub fn mean_initial(&self) -> f64 {
        Self::mean(self.insns_initial, self.chains)
    }
    /// Mean after extension (Table 2 "Ext").
    pub fn mean_extended(&self) -> f64 {
        Self::mean(self.insns_extended, self.chains)
    }
    /// Mean after splitting at function boundaries (Table 2 "Func").
    pub fn mean_func(&self) -> f64 {
        Self::mean(self.insns_func, self.pieces_func)
    }
    /// Mean after splitting at function boundaries and back edges (Table 2 "Loop").
    pub fn mean_loop(&self) -> f64 {
        Self::mean(self.insns_loop, self.pieces_loop)
    }
    /// Mean per fragment (also split at region boundaries).
    pub fn mean_fragment(&self) -> f64 {
        Self::mean(self.insns_fragments, self.fragments)
    }
}

/// The edge profile seen in the samples' walks (not in the speculative extensions).
#[derive(Clone, Debug, Default)]
pub struct EdgeProfile {
    /// Intraprocedural transitions (from block, to block).
    pub edges: FxHashMap<(BlockId, BlockId), u64>,
    /// Paths leaving their region at a block (back edge, other region, return, call out,
    /// indirect jump).
    pub exits: FxHashMap<BlockId, u64>,
    /// Taken transfers by address (from, to), as recorded.
    pub branches: FxHashMap<(u64, u64), u64>,
    /// Fall-throughs by address (last instruction of the block, next block's start).
    pub falls: FxHashMap<(u64, u64), u64>,
}

/// Everything reconstructed from a set of samples.
#[derive(Clone, Debug, Default)]
pub struct Reconstruction {
    /// Fragments with their counts.
    pub fragments: FxHashMap<Fragment, u64>,
    /// Statistics.
    pub stats: PartialStats,
    /// The edge profile.
    pub edges: EdgeProfile,
}

/// Reconstructs partial paths.
pub struct Reconstructor<'a> {
    cfg: &'a Cfg,
    regions: &'a Regions,
    opts: Options,
    /// What has been reconstructed so far.
    pub out: Reconstruction,
}

type Chain = Vec<(BlockId, Link)>;

impl<'a> Reconstructor<'a> {
    /// A reconstructor over `cfg` and its `regions`.
    pub fn new(cfg: &'a Cfg, regions: &'a Regions, opts: Options) -> Reconstructor<'a> {
        Reconstructor {
            cfg,
            regions,
            opts,
            out: Reconstruction::default(),
        }
    }

    /// Adds one sample (records oldest first) that occurred `count` times.
    pub fn add(&mut self, records: &[Record], count: u64) {
        let st = &mut self.out.stats;
        st.samples += count;
        let chains = self.walk(records, count);
        if chains.is_empty() {
            self.out.stats.discarded += count;
            return;
        }
        let spans = chains
            .iter()
            .flat_map(|c| c.iter())
            .filter(|(_, l)| matches!(l, Link::Call | Link::Return | Link::Tail))
            .count();
        self.out.stats.spans[spans.min(4)] += count;
        let n = chains.len();
        for (i, mut chain) in chains.into_iter().enumerate() {
            let initial = self.insns(&chain);
            let st = &mut self.out.stats;
            st.chains += count;
            st.insns_initial += count * initial;
            if self.opts.extend {
                if i == 0 {
                    self.extend_up(&mut chain);
                }
                if i + 1 == n {
                    self.extend_down(&mut chain);
                }
            }
            let extended = self.insns(&chain);
            self.out.stats.insns_extended += count * extended;
            self.split(&chain, count);
        }
    }

    fn insns(&self, chain: &[(BlockId, Link)]) -> u64 {
        chain
            .iter()
            .map(|(b, _)| u64::from(self.cfg.blocks[*b as usize].insns))
            .sum()
    }

    /// The source block of a record, snapping an imprecise source to its block's branch.
    fn source(&mut self, from: u64, count: u64) -> Option<BlockId> {
        let b = self.cfg.block_containing(from)?;
        let blk = &self.cfg.blocks[b as usize];
        if blk.last == from {
            return Some(b);
        }
        if blk.term.is_transfer() {
            self.out.stats.snapped += count;
            return Some(b);
        }
        None
    }

    /// Maps records onto the CFG: chains of blocks joined by links, cut where the records
    /// are inconsistent with the CFG.
    fn walk(&mut self, records: &[Record], count: u64) -> Vec<Chain> {
        let cfg = self.cfg;
        let mut chains: Vec<Chain> = Vec::new();
        let mut cur: Chain = Vec::new();
        // the block the previous record went to
        let mut at: Option<BlockId> = None;
        for r in records {
            let Some(fb) = self.source(r.from, count) else {
                self.cut(&mut cur, &mut chains, count);
                at = None;
                continue;
            };
            if let Some(t) = at {
                match self.fall_walk(t, fb) {
                    Some(blocks) => {
                        for w in blocks.windows(2) {
                            cur.push((w[0], Link::Edge { back: false }));
                            let e = &mut self.out.edges;
                            *e.edges.entry((w[0], w[1])).or_default() += count;
                            let (a, b) = (&cfg.blocks[w[0] as usize], &cfg.blocks[w[1] as usize]);
                            *e.falls.entry((a.last, b.start)).or_default() += count;
                        }
                    }
                    None => {
                        self.cut(&mut cur, &mut chains, count);
                    }
                }
            }
            // the transfer itself
            let blk = &cfg.blocks[fb as usize];
            let mut to = r.to;
            if to == 0 {
                match blk.term {
                    Term::Cond { target } | Term::Jump { target } => {
                        self.out.stats.recovered_targets += count;
                        to = target;
                    }
                    Term::Call {
                        target: Some(target),
                    } => {
                        self.out.stats.recovered_targets += count;
                        to = target;
                    }
                    _ => {}
                }
            }
            let tb = if to == 0 {
                None
            } else {
                cfg.block_containing(to)
            };
            let Some(tb) = tb else {
                cur.push((fb, Link::Indirect));
                self.cut(&mut cur, &mut chains, count);
                at = None;
                continue;
            };
            let link = match blk.term {
                Term::Cond { .. } | Term::Jump { .. } => match cfg.edge(fb, tb) {
                    Some(e) => Link::Edge { back: e.back },
                    None => Link::Tail,
                },
                Term::Call { .. } => Link::Call,
                Term::Return => Link::Return,
                Term::Indirect => Link::Indirect,
                Term::Fall | Term::Ecall | Term::Halt => {
                    // a taken transfer from a block that has none: the record is wrong
                    self.cut(&mut cur, &mut chains, count);
                    at = None;
                    continue;
                }
            };
            let e = &mut self.out.edges;
            *e.branches.entry((blk.last, to)).or_default() += count;
            if let Link::Edge { .. } = link {
                *e.edges.entry((fb, tb)).or_default() += count;
            } else {
                *e.exits.entry(fb).or_default() += count;
            }
            cur.push((fb, link));
            at = Some(tb);
        }
        if let Some(t) = at {
            cur.push((t, Link::Indirect));
        }
        self.cut(&mut cur, &mut chains, count);
        if chains.len() > 1 {
            self.out.stats.breaks += count * (chains.len() as u64 - 1);
        }
        // fix back flags and region exits on intraprocedural links, which the walk left
        // as plain edges
        for c in &mut chains {
            for i in 0..c.len().saturating_sub(1) {
                if let Link::Edge { .. } = c[i].1 {
                    let back = cfg.edge(c[i].0, c[i + 1].0).is_some_and(|e| e.back);
                    c[i].1 = Link::Edge { back };
                    if back || self.regions.internal_edge(c[i].0, c[i + 1].0).is_none() {
                        *self.out.edges.exits.entry(c[i].0).or_default() += count;
                    }
                }
            }
        }
        chains
    }

    fn cut(&mut self, cur: &mut Chain, chains: &mut Vec<Chain>, _count: u64) {
        if !cur.is_empty() {
            chains.push(std::mem::take(cur));
        }
    }

    /// Blocks from `t` to `f` by fall-through, both included.
    fn fall_walk(&self, t: BlockId, f: BlockId) -> Option<Vec<BlockId>> {
        let mut v = vec![t];
        let mut cur = t;
        while cur != f {
            match self.cfg.blocks[cur as usize].term {
                Term::Fall | Term::Ecall | Term::Cond { .. } => cur = self.cfg.fall(cur)?,
                _ => return None,
            }
            v.push(cur);
            if v.len() > self.opts.max_walk {
                return None;
            }
        }
        Some(v)
    }

    fn extend_up(&self, chain: &mut Chain) {
        let Some(&(mut cur, _)) = chain.first() else {
            return;
        };
        let mut pre = Vec::new();
        while pre.len() < 64 && !self.cfg.is_entry(cur) {
            let preds = &self.cfg.preds[cur as usize];
            let [p] = preds.as_slice() else { break };
            let Some(e) = self.cfg.edge(*p, cur) else {
                break;
            };
            if e.back || *p == cur {
                break;
            }
            pre.push((*p, Link::Edge { back: false }));
            cur = *p;
        }
        pre.reverse();
        pre.append(chain);
        *chain = pre;
    }

    fn extend_down(&self, chain: &mut Chain) {
        let Some(&(mut cur, _)) = chain.last() else {
            return;
        };
        let mut n = 0;
        while n < 64 {
            let term = self.cfg.blocks[cur as usize].term;
            if !matches!(term, Term::Fall | Term::Ecall) {
                break;
            }
            let Some(next) = self.cfg.fall(cur) else {
                break;
            };
            if let Some(last) = chain.last_mut() {
                last.1 = Link::Edge { back: false };
            }
            chain.push((next, Link::Indirect));
            cur = next;
            n += 1;
        }
    }

    /// Splits a chain into pieces and fragments and records them.
    fn split(&mut self, chain: &Chain, count: u64) {
        let st = &mut self.out.stats;
        // statistics: function-boundary pieces and loop pieces
        let (mut fi, mut li) = (0u64, 0u64);
        for (i, &(b, link)) in chain.iter().enumerate() {
            let n = u64::from(self.cfg.blocks[b as usize].insns);
            fi += n;
            li += n;
            let last = i + 1 == chain.len();
            let func_cut = last || matches!(link, Link::Call | Link::Return | Link::Tail);
            let loop_cut = func_cut || matches!(link, Link::Edge { back: true });
            if func_cut {
                st.pieces_func += count;
                st.insns_func += count * fi;
                fi = 0;
            }
            if loop_cut {
                st.pieces_loop += count;
                st.insns_loop += count * li;
                li = 0;
            }
        }
        // fragments
        let mut stack: Vec<(Vec<BlockId>, BlockId)> = Vec::new(); // suspended callers
        let mut cur: Vec<BlockId> = Vec::new();
        for (i, &(b, link)) in chain.iter().enumerate() {
            cur.push(b);
            let next = chain.get(i + 1).map(|x| x.0);
            let Some(next) = next else { break };
            match link {
                Link::Edge { back } => {
                    if back || self.regions.internal_edge(b, next).is_none() {
                        self.emit(std::mem::take(&mut cur), true, count);
                    }
                }
                Link::Call if self.opts.stitch => {
                    let ret = self
                        .cfg
                        .succs
                        .get(b as usize)
                        .and_then(|s| s.iter().find(|e| e.kind == EdgeKind::CallReturn))
                        .map(|e| e.to);
                    match ret {
                        Some(r) => stack.push((std::mem::take(&mut cur), r)),
                        None => self.emit(std::mem::take(&mut cur), true, count),
                    }
                }
                Link::Return if self.opts.stitch => {
                    self.emit(std::mem::take(&mut cur), true, count);
                    match stack.pop() {
                        Some((caller, r)) if r == next => {
                            let last = caller.last().copied();
                            if last.is_some_and(|l| self.regions.internal_edge(l, r).is_some()) {
                                cur = caller;
                            } else {
                                self.emit(caller, true, count);
                            }
                        }
                        Some((caller, _)) => {
                            self.emit(caller, false, count);
                            for (c, _) in std::mem::take(&mut stack) {
                                self.emit(c, false, count);
                            }
                        }
                        None => {}
                    }
                }
                Link::Call | Link::Return | Link::Tail | Link::Indirect => {
                    self.emit(std::mem::take(&mut cur), true, count);
                }
            }
        }
        self.emit(cur, false, count);
        for (c, _) in stack {
            self.emit(c, false, count);
        }
    }

    fn emit(&mut self, blocks: Vec<BlockId>, ends: bool, count: u64) {
        let Some(&first) = blocks.first() else { return };
        let Some(&region) = self.regions.region_of.get(first as usize) else {
            return;
        };
        let st = &mut self.out.stats;
        st.fragments += count;
        st.insns_fragments += count
            * blocks
                .iter()
                .map(|&b| u64::from(self.cfg.blocks[b as usize].insns))
                .sum::<u64>();
        let f = Fragment {
            region,
            blocks,
            ends: ends && self.opts.stitch,
        };
        *self.out.fragments.entry(f).or_default() += count;
    }

    /// The result.
    pub fn finish(self) -> Reconstruction {
        self.out
    }
}
