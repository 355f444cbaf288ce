//! The exact reference: the complete path profile over the same regions, counted from the
//! whole block stream of a run (live from the machine, or from a `.wpp` file or a block
//! trace).
//!
//! Dynamic blocks (which end at every branch, jump and `ecall`) are mapped onto CFG blocks
//! by their start address; a path grows by one Ball–Larus addition per internal edge and is
//! counted when it leaves its region at an exit vertex. A call suspends the caller's path on
//! a stack; the matching return resumes it along the call's return edge (as Ball–Larus
//! intraprocedural paths do). A path entered anywhere but its region's entry (an indirect
//! jump into the middle of a region, a return with no matching call) is counted as
//! `unplaced`, never as a path.

use crate::cfg::{BlockId, Cfg, Term, NONE};
use crate::regions::{PathKey, RegionId, Regions};
use outcrop_events::record::{Control, Observer};
use rustc_hash::FxHashMap;
use serde::Serialize;

#[derive(Clone, Copy, Debug)]
struct Frame {
    region: RegionId,
    block: BlockId,
    id: u64,
    valid: bool,
    /// For suspended frames: the address the callee returns to.
    ret: u64,
}

/// Counters of an exact profile.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExactStats {
    /// Dynamic blocks seen.
    pub blocks: u64,
    /// Dynamic blocks whose start is no CFG block (code without symbols).
    pub unknown_blocks: u64,
    /// Full paths counted.
    pub paths: u64,
    /// Path executions that did not start at their region's entry or did not end at an exit
    /// vertex.
    pub unplaced: u64,
    /// Suspended callers dropped because the call stack exceeded its cap or a return
    /// skipped them.
    pub dropped_frames: u64,
}

/// Counts the exact path profile of a block stream.
pub struct ExactCounter<'a> {
    cfg: &'a Cfg,
    regions: &'a Regions,
    stack: Vec<Frame>,
    cur: Option<Frame>,
    prev: BlockId,
    /// Executions per path.
    pub counts: FxHashMap<PathKey, u64>,
    /// Counters.
    pub stats: ExactStats,
}

const MAX_STACK: usize = 1 << 20;

impl<'a> ExactCounter<'a> {
    /// A counter over `cfg` and its `regions`.
    pub fn new(cfg: &'a Cfg, regions: &'a Regions) -> ExactCounter<'a> {
        ExactCounter {
            cfg,
            regions,
            stack: Vec::new(),
            cur: None,
            prev: NONE,
            counts: FxHashMap::default(),
            stats: ExactStats::default(),
        }
    }

    /// One dynamic block, by its start address.
    #[inline]
    pub fn push_block(&mut self, start: u64) {
        self.stats.blocks += 1;
        let Some(mut b) = self.cfg.block_at(start) else {
            self.stats.unknown_blocks += 1;
            self.abandon();
            return;
        };
        loop {
            self.step(b);
            if self.cfg.blocks[b as usize].term != Term::Fall {
                break;
            }
            match self.cfg.fall(b) {
                Some(n) => b = n,
                None => break,
            }
        }
    }

    /// One CFG block (for streams already mapped onto the CFG).
    pub fn push_cfg_block(&mut self, b: BlockId) {
        if (b as usize) < self.cfg.blocks.len() {
            self.stats.blocks += 1;
            self.step(b);
        } else {
            self.stats.unknown_blocks += 1;
            self.abandon();
        }
    }

    /// Forgets the path in progress (the stream went where the CFG does not reach).
    fn abandon(&mut self) {
        if self.cur.take().is_some() {
            self.stats.unplaced += 1;
        }
        self.prev = NONE;
    }

    fn step(&mut self, c: BlockId) {
        let prev = std::mem::replace(&mut self.prev, c);
        if prev == NONE {
            self.start(c);
            return;
        }
        match self.cfg.blocks[prev as usize].term {
            Term::Call { .. } => {
                if let Some(mut f) = self.cur.take() {
                    f.ret = self.cfg.blocks[prev as usize].end;
                    if self.stack.len() >= MAX_STACK {
                        self.stack.remove(0);
                        self.stats.dropped_frames += 1;
                    }
                    self.stack.push(f);
                }
                self.start(c);
            }
            Term::Return => {
                self.finish();
                let target = self.cfg.blocks[c as usize].start;
                while let Some(f) = self.stack.pop() {
                    if f.ret == target {
                        self.cur = Some(f);
                        self.advance(c);
                        return;
                    }
                    self.stats.dropped_frames += 1;
                }
                self.start(c);
            }
            _ => self.advance(c),
        }
    }

    #[inline]
    fn advance(&mut self, c: BlockId) {
        if let Some(f) = &mut self.cur {
            if let Some(v) = self.regions.internal_edge(f.block, c) {
                f.id += v;
                f.block = c;
                return;
            }
        }
        self.finish();
        self.start(c);
    }

    #[inline]
    fn finish(&mut self) {
        if let Some(f) = self.cur.take() {
            if f.valid && self.regions.is_exit(f.block) {
                *self.counts.entry((f.region, f.id)).or_default() += 1;
                self.stats.paths += 1;
            } else {
                self.stats.unplaced += 1;
            }
        }
    }

    #[inline]
    fn start(&mut self, c: BlockId) {
        self.cur = Some(Frame {
            region: self.regions.region_of[c as usize],
            block: c,
            id: 0,
            valid: self.regions.is_entry(c),
            ret: 0,
        });
    }

    /// The profile. Paths still in progress (the run ended inside them) are not counted.
    pub fn finish_run(self) -> (FxHashMap<PathKey, u64>, ExactStats) {
        (self.counts, self.stats)
    }
}

/// The exact counter watches the block stream of a run.
impl Observer for ExactCounter<'_> {
    const BLOCKS: bool = true;

    #[inline]
    fn block(&mut self, start: u64, _insns: u32) -> Control {
        self.push_block(start);
        Control::Continue
    }
}
