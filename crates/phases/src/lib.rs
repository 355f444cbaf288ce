//! `outcrop-phases`: a run's phases, as SimPoint finds them.
//!
//! * [`BbvCollector`]: an observer that cuts the run into intervals of a fixed number of
//!   retired instructions and counts, per interval, the instructions each basic block
//!   retired: the interval's *basic-block vector* (BBV; Sherwood et al., "Automatically
//!   characterizing large scale program behavior", ASPLOS 2002).
//! * [`Bbv::to_bb`]: the vectors in SimPoint's `.bb` text format, as QEMU's `bbv` plugin
//!   writes it, so SimPoint 3.2 and the tools built on it read them.
//! * [`cluster`]: phases in the SimPoint 3.0 way (Hamerly et al., "SimPoint 3.0: faster and
//!   more flexible program phase analysis", JILP 2005): each vector normalized, randomly
//!   projected to 15 dimensions, k-means for k = 1..=max_k from several seeds, and the
//!   smallest k whose BIC reaches 90% of the range of the BIC scores; each phase's
//!   representative is the interval closest to its centroid, its weight its share of the
//!   run's instructions.
//! * [`estimate`]: the sampled CPI estimate stratified by phase, its confidence interval and
//!   the units a target interval needs (SMARTS's statistics, Neyman's allocation).
//!
//! Nothing here reads files or runs the machine. docs/phases.md describes the method and
//! where it differs from SimPoint's.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod cluster;
pub mod estimate;

pub use cluster::{cluster, ClusterOptions, Phase, Phases};
pub use estimate::{Estimate as CpiEstimate, RatioEstimate, StratumEstimate};

use outcrop_events::record::{Control, Observer};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::fmt::Write as _;

/// Most intervals a collector keeps before it merges neighbours pairwise and doubles its
/// interval (so its memory stays bounded on any run).
pub const MAX_INTERVALS: usize = 1 << 14;

/// One interval's basic-block vector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Interval {
    /// Instructions retired before the interval began.
    pub start: u64,
    /// Instructions it holds (the interval length, but for the last one, and a block that
    /// straddles the boundary stays whole in the interval it began in).
    pub instructions: u64,
    /// `(block id, instructions it retired in the interval)`, by block id; the counts sum to
    /// `instructions`.
    pub counts: Vec<(u32, u64)>,
}

/// The basic-block vectors of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Bbv {
    /// Instructions per interval (after any doubling).
    pub interval: u64,
    /// Block start addresses by id (ids in order of first execution, from 0).
    pub blocks: Vec<u64>,
    /// The intervals, in run order.
    pub intervals: Vec<Interval>,
}

impl Bbv {
    /// Instructions in all intervals.
    pub fn instructions(&self) -> u64 {
        self.intervals.iter().map(|i| i.instructions).sum()
    }

    /// The vectors in SimPoint's `.bb` format, as QEMU's `bbv` plugin writes it: one line per
    /// interval, `T` then `:ID:COUNT ` for each block that retired instructions in it (ids
    /// from 0 in order of first execution, counts in instructions), by id. Unlike the plugin
    /// (which drops it) the last, partial interval is written too.
    pub fn to_bb(&self) -> String {
        let mut s = String::new();
        for i in &self.intervals {
            s.push('T');
            for (id, c) in &i.counts {
                let _ = write!(s, ":{id}:{c} ");
            }
            s.push('\n');
        }
        s
    }
}

/// An observer collecting a [`Bbv`] from basic blocks (the machine's block engine and
/// compiling tier deliver them, so a run collecting BBVs runs at their speed).
pub struct BbvCollector {
    interval: u64,
    ids: FxHashMap<u64, u32>,
    blocks: Vec<u64>,
    /// Instructions per block id in the current interval, and the ids touched.
    current: Vec<u64>,
    touched: Vec<u32>,
    in_interval: u64,
    total: u64,
    intervals: Vec<Interval>,
}

impl BbvCollector {
    /// Intervals of `interval` retired instructions (at least 1).
    pub fn new(interval: u64) -> BbvCollector {
        BbvCollector {
            interval: interval.max(1),
            ids: FxHashMap::default(),
            blocks: Vec::new(),
            current: Vec::new(),
            touched: Vec::new(),
            in_interval: 0,
            total: 0,
            intervals: Vec::new(),
        }
    }

    fn close(&mut self) {
        if self.in_interval == 0 {
            return;
        }
        self.touched.sort_unstable();
        let counts: Vec<(u32, u64)> = self
            .touched
            .iter()
            .map(|&id| (id, std::mem::take(&mut self.current[id as usize])))
            .collect();
        self.touched.clear();
        self.intervals.push(Interval {
            start: self.total - self.in_interval,
            instructions: self.in_interval,
            counts,
        });
        self.in_interval = 0;
        if self.intervals.len() >= MAX_INTERVALS {
            self.halve();
        }
    }

    /// Merges neighbouring intervals pairwise and doubles the interval.
    fn halve(&mut self) {
        let old = std::mem::take(&mut self.intervals);
        let mut it = old.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => self.intervals.push(merge(a, b)),
                None => self.intervals.push(a),
            }
        }
        self.interval = self.interval.saturating_mul(2);
    }

    /// The vectors so far (the current interval closed).
    pub fn finish_bbv(mut self) -> Bbv {
        self.close();
        Bbv {
            interval: self.interval,
            blocks: self.blocks,
            intervals: self.intervals,
        }
    }
}

fn merge(a: Interval, b: Interval) -> Interval {
    let mut counts = Vec::with_capacity(a.counts.len() + b.counts.len());
    let (mut i, mut j) = (0, 0);
    while i < a.counts.len() || j < b.counts.len() {
        match (a.counts.get(i), b.counts.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                counts.push((x.0, x.1 + y.1));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                counts.push(*x);
                i += 1;
            }
            (Some(x), None) => {
                counts.push(*x);
                i += 1;
            }
            (_, Some(y)) => {
                counts.push(*y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    Interval {
        start: a.start,
        instructions: a.instructions + b.instructions,
        counts,
    }
}

impl Observer for BbvCollector {
    const BLOCKS: bool = true;

    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        if insns == 0 {
            return Control::Continue;
        }
        let next = self.blocks.len() as u32;
        let id = *self.ids.entry(start).or_insert(next);
        if id == next {
            self.blocks.push(start);
            self.current.push(0);
        }
        let slot = &mut self.current[id as usize];
        if *slot == 0 {
            self.touched.push(id);
        }
        let n = u64::from(insns);
        *slot += n;
        self.in_interval += n;
        self.total += n;
        if self.in_interval >= self.interval {
            self.close();
        }
        Control::Continue
    }
}
