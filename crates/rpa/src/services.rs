//! The paper's service threads (§3.2, Figure 2), as the software that reads a queue: what
//! each does with a message, and the exact references each is checked against.
//!
//! * [`Kind::Edges`] (Figure 2a): taken / not-taken (and mispredicted) counts per branch pc,
//!   scaled by the sampling rate into an estimated edge profile.
//! * [`Kind::Cpi`] (Figure 2d): per-instruction cycles `C = c + 1/n` from `rrate`; the sum
//!   over samples divided by the sampling rate estimates each instruction's total cycles,
//!   their mean its CPI.
//! * [`Kind::Gc`] (Figure 2c): the concurrent collector's store barrier: it sees every
//!   non-null reference store (value `op1`, slot `op2 + op3`), keeps a count and a checksum,
//!   and shades the stored object; a collector built on it ([`Collector`]) marks from a
//!   guest's roots through the slots the barrier saw.
//! * [`Kind::Log`] (Figure 2b and anything else): keeps the first records and counts all.
//!
//! A service is plain data: the run layer gives it a thread and a queue.

use crate::names;
use crate::queue::RECORD_WORDS;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A message: the record's seven words.
pub type Message = [u32; RECORD_WORDS];

/// Which service reads a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Edge profiling (Figure 2a): needs `pc` and `misc`.
    Edges,
    /// Per-instruction CPI (Figure 2d): needs `pc` and `rrate`.
    Cpi,
    /// The concurrent collector's store barrier (Figure 2c): needs `op1`, `op2` and `op3`.
    Gc,
    /// Keeps the first records, counts every one.
    Log,
}

impl Kind {
    /// Every kind, in `--help` order.
    pub const ALL: [Kind; 4] = [Kind::Edges, Kind::Cpi, Kind::Gc, Kind::Log];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Edges => "edges",
            Kind::Cpi => "cpi",
            Kind::Gc => "gc",
            Kind::Log => "log",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The items its records must carry.
    pub fn needs(self) -> &'static [&'static str] {
        match self {
            Kind::Edges => &["pc", "misc"],
            Kind::Cpi => &["pc", "rrate"],
            Kind::Gc => &["op1", "op2", "op3"],
            Kind::Log => &[],
        }
    }

    /// The service a query's records suggest: the first whose items are all collected
    /// (edges for `pc misc`, CPI for `pc rrate`, GC for `op1 op2 op3`), else the log.
    pub fn infer(items: &[u8]) -> Kind {
        [Kind::Edges, Kind::Cpi, Kind::Gc]
            .into_iter()
            .find(|k| k.needs().iter().all(|n| word_of(items, n).is_some()))
            .unwrap_or(Kind::Log)
    }
}

/// The record word that holds item `name` in a record of `items` (Table 2 order).
pub fn word_of(items: &[u8], name: &str) -> Option<usize> {
    let i = names::item(name)?;
    items.iter().position(|&x| x == i)
}

fn words(kind: Kind, items: &[u8]) -> Result<Vec<usize>, String> {
    kind.needs()
        .iter()
        .map(|n| {
            word_of(items, n).ok_or_else(|| {
                format!(
                    "the {} service needs `{}` in its records ({}); the query collects {}",
                    kind.name(),
                    n,
                    kind.needs().join(" "),
                    items
                        .iter()
                        .map(|&i| names::ITEMS[usize::from(i)])
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
        })
        .collect()
}

/// A branch's sampled outcomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BranchCounts {
    /// Records with the taken bit set.
    pub taken: u64,
    /// Records without it.
    pub not_taken: u64,
    /// Records with the mispredicted bit set (timing model only): taken, not taken.
    pub mispredicted: [u64; 2],
}

impl BranchCounts {
    /// Both directions.
    pub fn total(&self) -> u64 {
        self.taken + self.not_taken
    }
}

/// The record word that carries a sample's throttle level when the adaptive rate is on and
/// the record has a word to spare (docs/rpa.md "The RPA watching itself"): the sample
/// stands for 2^level of its query's samples.
pub const WEIGHT_WORD: usize = RECORD_WORDS - 1;

/// A sample's weight: 2^level from `word` of `m`, or 1.
fn weight(m: &Message, word: Option<usize>) -> u64 {
    word.and_then(|w| m.get(w))
        .map_or(1, |&level| 1u64 << level.min(32))
}

/// Edge profiling (Figure 2a).
#[derive(Clone, Debug, Default)]
pub struct Edges {
    pc: usize,
    misc: usize,
    /// The word holding each sample's throttle level, when samples are weighted.
    weight: Option<usize>,
    /// Sampled counts per branch pc (low 32 bits).
    pub branches: HashMap<u32, BranchCounts>,
}

impl Edges {
    fn message(&mut self, m: &Message) {
        let misc = m[self.misc];
        let w = weight(m, self.weight);
        let b = self.branches.entry(m[self.pc]).or_default();
        if misc & 1 != 0 {
            b.taken += w;
        } else {
            b.not_taken += w;
        }
        b.mispredicted[usize::from(misc & 1 == 0)] += w * u64::from(misc >> 1 & 1);
    }
}

/// One instruction's CPI samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpiSum {
    /// Samples.
    pub samples: u64,
    /// Σ C = Σ (c + 1/n) over its samples.
    pub cycles: f64,
}

/// Per-instruction CPI (Figure 2d).
#[derive(Clone, Debug, Default)]
pub struct Cpi {
    pc: usize,
    rrate: usize,
    /// The word holding each sample's throttle level, when samples are weighted.
    weight: Option<usize>,
    /// Samples per pc (low 32 bits).
    pub pcs: HashMap<u32, CpiSum>,
}

impl Cpi {
    fn message(&mut self, m: &Message) {
        let rrate = m[self.rrate];
        let n = (rrate & 0xffff).max(1);
        let c = rrate >> 16;
        let w = weight(m, self.weight);
        let s = self.pcs.entry(m[self.pc]).or_default();
        s.samples += w;
        s.cycles += w as f64 * (f64::from(c) + 1.0 / f64::from(n));
    }
}

/// A checksum of reference stores (slot, value) that does not depend on their order.
pub fn store_hash(slot: u32, value: u32) -> u64 {
    // SplitMix64's finalizer over the pair: a sum of these is order-independent and a lost,
    // duplicated or altered store changes it
    let mut z = (u64::from(slot) << 32 | u64::from(value)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The concurrent collector's store barrier (Figure 2c).
#[derive(Clone, Debug, Default)]
pub struct Gc {
    op1: usize,
    op2: usize,
    op3: usize,
    /// Non-null reference stores seen.
    pub stores: u64,
    /// Null stores seen (only when the query does not filter them out, as Figure 2c does).
    pub nulls: u64,
    /// Σ [`store_hash`] over them.
    pub checksum: u64,
    /// The collector, when the guest's heap is known.
    pub collector: Option<Collector>,
}

impl Gc {
    fn message(&mut self, m: &Message) {
        let value = m[self.op1];
        let slot = m[self.op2].wrapping_add(m[self.op3]);
        if value == 0 {
            self.nulls += 1;
            if let Some(c) = self.collector.as_mut() {
                c.slots.remove(&slot);
            }
            return;
        }
        self.stores += 1;
        self.checksum = self.checksum.wrapping_add(store_hash(slot, value));
        if let Some(c) = self.collector.as_mut() {
            c.store(slot, value);
        }
    }
}

/// Where a guest's heap lives (32-bit addresses): fixed-size objects in an arena, whose
/// words after the first are reference slots, and an array of root slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HeapLayout {
    /// The arena's first byte.
    pub arena: u32,
    /// Its length in bytes.
    pub arena_len: u32,
    /// Bytes per object (a multiple of 8, at least 16; word 0 is the header).
    pub object_size: u32,
    /// The root array's first byte.
    pub roots: u32,
    /// Its length in bytes.
    pub roots_len: u32,
    /// Collect every this many barrier stores.
    pub period: u64,
}

impl HeapLayout {
    fn object_of(&self, addr: u32) -> Option<u32> {
        let off = addr.checked_sub(self.arena)?;
        (off < self.arena_len).then(|| self.arena + off - off % self.object_size)
    }
}

/// One collection: after how many barrier stores, and the objects it would free.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Collection {
    /// Barrier stores seen before it.
    pub after: u64,
    /// Objects known to the collector.
    pub known: usize,
    /// Objects it found reachable.
    pub marked: usize,
    /// Objects it frees (unreachable in what the barrier told it), sorted.
    pub freed: Vec<u32>,
}

/// A mark-sweep collector on a service thread, built only on the store barrier: it keeps
/// the last value stored into each slot (when the query filters null stores out, as Figure
/// 2c does, a cleared slot keeps its old target: conservative, never unsafe), marks from the
/// root slots every `period` non-null stores, and frees every object it has seen stored
/// that is not marked. If the barrier lost
/// a store, it could free a reachable object: [`check_collections`] catches that.
#[derive(Clone, Debug)]
pub struct Collector {
    layout: HeapLayout,
    slots: HashMap<u32, u32>,
    objects: HashSet<u32>,
    stores: u64,
    /// Collections made so far.
    pub collections: Vec<Collection>,
}

impl Collector {
    /// A collector for `layout`.
    pub fn new(layout: HeapLayout) -> Collector {
        Collector {
            layout,
            slots: HashMap::new(),
            objects: HashSet::new(),
            stores: 0,
            collections: Vec::new(),
        }
    }

    /// The heap it collects.
    pub fn layout(&self) -> &HeapLayout {
        &self.layout
    }

    fn store(&mut self, slot: u32, value: u32) {
        self.slots.insert(slot, value);
        if let Some(o) = self.layout.object_of(value) {
            self.objects.insert(o);
        }
        self.stores += 1;
        if self.layout.period > 0 && self.stores % self.layout.period == 0 {
            let (marked, freed) = collect(&self.layout, &self.slots, &self.objects);
            for f in &freed {
                self.objects.remove(f);
            }
            self.collections.push(Collection {
                after: self.stores,
                known: self.objects.len() + freed.len(),
                marked,
                freed,
            });
        }
    }
}

/// Marks from `layout`'s roots through `slots`; returns the marked count and the objects of
/// `objects` left unmarked, sorted.
fn collect(
    layout: &HeapLayout,
    slots: &HashMap<u32, u32>,
    objects: &HashSet<u32>,
) -> (usize, Vec<u32>) {
    let mut marked: HashSet<u32> = HashSet::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut r = layout.roots;
    while r < layout.roots.saturating_add(layout.roots_len) {
        if let Some(o) = slots.get(&r).and_then(|&v| layout.object_of(v)) {
            if marked.insert(o) {
                stack.push(o);
            }
        }
        r += 8;
    }
    while let Some(o) = stack.pop() {
        let mut s = o + 8;
        while s < o + layout.object_size {
            if let Some(t) = slots.get(&s).and_then(|&v| layout.object_of(v)) {
                if marked.insert(t) {
                    stack.push(t);
                }
            }
            s += 8;
        }
    }
    let mut freed: Vec<u32> = objects
        .iter()
        .copied()
        .filter(|o| !marked.contains(o))
        .collect();
    freed.sort_unstable();
    (marked.len(), freed)
}

/// What the exact check of a collector found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CollectorCheck {
    /// Collections checked.
    pub collections: usize,
    /// Objects freed over all of them.
    pub freed: u64,
    /// Objects freed while reachable in the exact heap (must be 0), with the first few.
    pub unsafe_frees: u64,
    /// The first unsafe frees: (collection index, object).
    pub examples: Vec<(usize, u32)>,
}

/// Replays the exact store log — every reference store in program order, null ones included:
/// `(slot, value)` — and checks that no object a collection freed was reachable in the
/// exact heap at that moment (the moment being after the `after`-th non-null store).
pub fn check_collections(
    layout: &HeapLayout,
    exact: &[(u32, u32)],
    collections: &[Collection],
) -> CollectorCheck {
    let mut out = CollectorCheck {
        collections: collections.len(),
        ..CollectorCheck::default()
    };
    let mut slots: HashMap<u32, u32> = HashMap::new();
    let mut log = exact.iter().peekable();
    let mut non_null = 0u64;
    for (ci, c) in collections.iter().enumerate() {
        // apply stores up to the `after`-th non-null one, and the null stores after it
        // (the barrier cannot tell them apart from "no store")
        while let Some(&&(slot, value)) = log.peek() {
            if value != 0 && non_null == c.after {
                break;
            }
            log.next();
            if value == 0 {
                slots.remove(&slot);
            } else {
                slots.insert(slot, value);
                non_null += 1;
            }
        }
        let live: HashSet<u32> = {
            let all: HashSet<u32> = c.freed.iter().copied().collect();
            let (_, unreachable) = collect(layout, &slots, &all);
            let unreachable: HashSet<u32> = unreachable.into_iter().collect();
            all.difference(&unreachable).copied().collect()
        };
        out.freed += c.freed.len() as u64;
        let mut bad: Vec<u32> = live.into_iter().collect();
        bad.sort_unstable();
        out.unsafe_frees += bad.len() as u64;
        for o in bad {
            if out.examples.len() < 8 {
                out.examples.push((ci, o));
            }
        }
    }
    out
}

/// Keeps the first records and counts them all; when records carry `pc` and `res2` (an
/// address: Figure 2b's L2 misses), also what a prefetcher would learn per pc: its records
/// and the strides between its consecutive addresses.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// The first [`LOG_KEEP`] records.
    pub records: Vec<Message>,
    /// Words of `pc` and `res2`, when both are collected.
    addr_words: Option<(usize, usize)>,
    /// Per pc: records, last address, stride counts (at most [`MAX_STRIDES`] strides).
    pub by_pc: HashMap<u32, PcAddresses>,
}

/// Strides a log keeps per pc.
pub const MAX_STRIDES: usize = 64;

/// One pc's addresses in a log.
#[derive(Clone, Debug, Default)]
pub struct PcAddresses {
    /// Records.
    pub count: u64,
    /// The last address.
    pub last: u32,
    /// Stride (address minus the previous one of the same pc) → occurrences.
    pub strides: HashMap<i32, u64>,
}

impl PcAddresses {
    /// The most frequent stride and its share of this pc's strides.
    pub fn dominant(&self) -> Option<(i32, f64)> {
        let total: u64 = self.strides.values().sum();
        self.strides
            .iter()
            .max_by_key(|(s, c)| (**c, std::cmp::Reverse(**s)))
            .map(|(s, c)| (*s, *c as f64 / total.max(1) as f64))
    }
}

impl Log {
    fn message(&mut self, m: &Message) {
        if self.records.len() < LOG_KEEP {
            self.records.push(*m);
        }
        if let Some((pw, aw)) = self.addr_words {
            let p = self.by_pc.entry(m[pw]).or_default();
            let a = m[aw];
            if p.count > 0 {
                let stride = a.wrapping_sub(p.last) as i32;
                let n = p.strides.len();
                match p.strides.get_mut(&stride) {
                    Some(c) => *c += 1,
                    None if n < MAX_STRIDES => {
                        p.strides.insert(stride, 1);
                    }
                    None => {}
                }
            }
            p.count += 1;
            p.last = a;
        }
    }
}

/// Records a log service keeps.
pub const LOG_KEEP: usize = 4096;

/// A service and its state.
#[derive(Clone, Debug)]
pub enum Service {
    /// Edge profiling.
    Edges(Edges),
    /// Per-instruction CPI.
    Cpi(Cpi),
    /// The store barrier (and collector).
    Gc(Gc),
    /// The log.
    Log(Log),
}

impl Service {
    /// A `kind` service for records of `items`; an error names a missing item.
    pub fn new(
        kind: Kind,
        items: &[u8],
        heap: Option<HeapLayout>,
    ) -> Result<Service, crate::Error> {
        let w = words(kind, items).map_err(crate::Error::Service)?;
        Ok(match kind {
            Kind::Edges => Service::Edges(Edges {
                pc: w[0],
                misc: w[1],
                ..Edges::default()
            }),
            Kind::Cpi => Service::Cpi(Cpi {
                pc: w[0],
                rrate: w[1],
                ..Cpi::default()
            }),
            Kind::Gc => Service::Gc(Gc {
                op1: w[0],
                op2: w[1],
                op3: w[2],
                collector: heap.map(Collector::new),
                ..Gc::default()
            }),
            Kind::Log => Service::Log(Log {
                addr_words: word_of(items, "pc").zip(word_of(items, "res2")),
                ..Log::default()
            }),
        })
    }

    /// Weighs each sample by 2^(the level in record word `word`) from now on: the adaptive
    /// rate's throttle, carried in a word the query does not collect (edges and CPI; the
    /// others count every record and ignore it). Counts then estimate what the query would
    /// have sampled unthrottled.
    pub fn weigh(&mut self, word: usize) {
        match self {
            Service::Edges(e) => e.weight = Some(word),
            Service::Cpi(c) => c.weight = Some(word),
            Service::Gc(_) | Service::Log(_) => {}
        }
    }

    /// Whether samples are weighted ([`Service::weigh`]).
    pub fn weighted(&self) -> bool {
        match self {
            Service::Edges(e) => e.weight.is_some(),
            Service::Cpi(c) => c.weight.is_some(),
            Service::Gc(_) | Service::Log(_) => false,
        }
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Service::Edges(_) => Kind::Edges,
            Service::Cpi(_) => Kind::Cpi,
            Service::Gc(_) => Kind::Gc,
            Service::Log(_) => Kind::Log,
        }
    }

    /// Handles one message.
    #[inline]
    pub fn message(&mut self, m: &Message) {
        match self {
            Service::Edges(e) => e.message(m),
            Service::Cpi(c) => c.message(m),
            Service::Gc(g) => g.message(m),
            Service::Log(l) => l.message(m),
        }
    }
}

/// Per-branch estimate against the exact counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BranchEstimate {
    /// Branch pc.
    pub pc: u64,
    /// Exact taken and not-taken counts.
    pub exact: [u64; 2],
    /// Estimated taken and not-taken counts (samples × rate).
    pub estimate: [u64; 2],
    /// Estimated mispredictions, taken and not taken (samples × rate; timing model only).
    pub mispredicted: [u64; 2],
    /// |estimate − exact| / exact of the branch's total, percent.
    pub error_pct: f64,
}

/// An estimated edge profile against the exact one.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EdgeAccuracy {
    /// Σ over edges (branch, direction) of min(estimated share, exact share), percent
    /// (the overlap of Arnold–Ryder and branch-on-random §4.1).
    pub overlap_pct: f64,
    /// Branches executed.
    pub branches: usize,
    /// Branches with at least one sample.
    pub sampled: usize,
    /// Branch executions, exactly.
    pub executions: u64,
    /// Samples.
    pub samples: u64,
    /// Branches with ≥ 1% of the executions, hottest first.
    pub hot: Vec<BranchEstimate>,
    /// Mean error over the hot branches, percent.
    pub hot_mean_error_pct: f64,
}

/// Scores sampled edge counts (one sample stands for `rate` executions: the query's
/// `every N`, times selected / sent when a full queue dropped some) against exact
/// per-branch `[taken, not_taken]` counts (full pcs; samples carry the low 32 bits).
pub fn edge_accuracy(
    sampled: &HashMap<u32, BranchCounts>,
    rate: f64,
    exact: &BTreeMap<u64, [u64; 2]>,
) -> EdgeAccuracy {
    let executions: u64 = exact.values().map(|c| c[0] + c[1]).sum();
    let samples: u64 = sampled.values().map(|c| c.total()).sum();
    let mut overlap = 0.0;
    let mut hot = Vec::new();
    for (&pc, c) in exact {
        let s = sampled.get(&(pc as u32)).copied().unwrap_or_default();
        if samples > 0 && executions > 0 {
            for (e, k) in [(c[0], s.taken), (c[1], s.not_taken)] {
                overlap += (e as f64 / executions as f64).min(k as f64 / samples as f64);
            }
        }
        let total = c[0] + c[1];
        if executions > 0 && total * 100 >= executions {
            let scale = |n: u64| (n as f64 * rate).round() as u64;
            let est = [scale(s.taken), scale(s.not_taken)];
            hot.push(BranchEstimate {
                pc,
                exact: *c,
                estimate: est,
                mispredicted: s.mispredicted.map(scale),
                error_pct: 100.0 * (est[0] + est[1]).abs_diff(total) as f64 / total as f64,
            });
        }
    }
    hot.sort_by(|a, b| {
        (b.exact[0] + b.exact[1])
            .cmp(&(a.exact[0] + a.exact[1]))
            .then(a.pc.cmp(&b.pc))
    });
    let hot_mean_error_pct = if hot.is_empty() {
        0.0
    } else {
        hot.iter().map(|h| h.error_pct).sum::<f64>() / hot.len() as f64
    };
    EdgeAccuracy {
        overlap_pct: 100.0 * overlap,
        branches: exact.len(),
        sampled: sampled.len(),
        executions,
        samples,
        hot,
        hot_mean_error_pct,
    }
}

/// One instruction's exact cycles by the RPA's definition: Σ (c + 1/n) over every execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ExactCpi {
    /// Executions.
    pub executions: u64,
    /// Σ (c + 1/n).
    pub cycles: f64,
}

/// Per-instruction or per-function CPI: estimate against exact.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpiEstimate {
    /// Instruction pc or function start.
    pub addr: u64,
    /// Exact cycles (Σ c + 1/n).
    pub exact_cycles: f64,
    /// Estimated cycles (Σ C over samples × rate).
    pub estimated_cycles: f64,
    /// Exact CPI.
    pub exact_cpi: f64,
    /// Estimated CPI (mean C over its samples).
    pub estimated_cpi: f64,
    /// Samples.
    pub samples: u64,
}

/// CPI estimates against the exact attribution.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CpiAccuracy {
    /// Total cycles, exactly (Σ c + 1/n over the run).
    pub exact_cycles: f64,
    /// Estimated total cycles.
    pub estimated_cycles: f64,
    /// Instructions with ≥ 1% of the cycles, hottest first.
    pub hot: Vec<CpiEstimate>,
    /// Groups (functions) with ≥ 1% of the cycles, hottest first.
    pub groups: Vec<CpiEstimate>,
}

/// Scores CPI samples (one stands for `rate` executions, as in [`edge_accuracy`]) against
/// exact per-pc cycles; `group` maps a pc to its function's start (or `None`), for the
/// per-function lines.
pub fn cpi_accuracy(
    sampled: &HashMap<u32, CpiSum>,
    rate: f64,
    exact: &BTreeMap<u64, ExactCpi>,
    group: impl Fn(u64) -> Option<u64>,
) -> CpiAccuracy {
    let exact_cycles: f64 = exact.values().map(|e| e.cycles).sum();
    let estimated_cycles = rate * sampled.values().map(|s| s.cycles).sum::<f64>();
    let mut hot = Vec::new();
    let mut groups: BTreeMap<u64, (ExactCpi, CpiSum)> = BTreeMap::new();
    for (&pc, e) in exact {
        let s = sampled.get(&(pc as u32)).copied().unwrap_or_default();
        if let Some(g) = group(pc) {
            let x = groups.entry(g).or_default();
            x.0.executions += e.executions;
            x.0.cycles += e.cycles;
            x.1.samples += s.samples;
            x.1.cycles += s.cycles;
        }
        if e.cycles * 100.0 >= exact_cycles {
            hot.push(estimate(pc, e, &s, rate));
        }
    }
    let mut groups: Vec<CpiEstimate> = groups
        .into_iter()
        .filter(|(_, (e, _))| e.cycles * 100.0 >= exact_cycles)
        .map(|(g, (e, s))| estimate(g, &e, &s, rate))
        .collect();
    let by_cycles = |a: &CpiEstimate, b: &CpiEstimate| {
        b.exact_cycles
            .total_cmp(&a.exact_cycles)
            .then(a.addr.cmp(&b.addr))
    };
    hot.sort_by(by_cycles);
    groups.sort_by(by_cycles);
    CpiAccuracy {
        exact_cycles,
        estimated_cycles,
        hot,
        groups,
    }
}

fn estimate(addr: u64, e: &ExactCpi, s: &CpiSum, rate: f64) -> CpiEstimate {
    CpiEstimate {
        addr,
        exact_cycles: e.cycles,
        estimated_cycles: s.cycles * rate,
        exact_cpi: e.cycles / e.executions.max(1) as f64,
        estimated_cpi: if s.samples > 0 {
            s.cycles / s.samples as f64
        } else {
            0.0
        },
        samples: s.samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(names: &[&str]) -> Vec<u8> {
        let mut v: Vec<u8> = names.iter().map(|n| names::item(n).unwrap()).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn services_find_their_words_or_name_what_is_missing() {
        assert_eq!(Kind::infer(&items(&["pc", "misc"])), Kind::Edges);
        assert_eq!(Kind::infer(&items(&["pc", "rrate"])), Kind::Cpi);
        assert_eq!(Kind::infer(&items(&["op1", "op2", "op3"])), Kind::Gc);
        assert_eq!(Kind::infer(&items(&["pc", "res2"])), Kind::Log);
        let e = Service::new(Kind::Edges, &items(&["pc", "res2"]), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs `misc`") && e.contains("collects pc res2"),
            "{e}"
        );
    }

    #[test]
    fn edges_count_directions_and_score_against_exact() {
        let mut s = Service::new(Kind::Edges, &items(&["pc", "misc"]), None).unwrap();
        for m in [[0x100, 1], [0x100, 3], [0x100, 0], [0x200, 0]] {
            s.message(&[m[0], m[1], 0, 0, 0, 0, 0]);
        }
        let Service::Edges(e) = &s else { panic!() };
        assert_eq!(
            e.branches[&0x100],
            BranchCounts {
                taken: 2,
                not_taken: 1,
                mispredicted: [1, 0]
            }
        );
        let exact: BTreeMap<u64, [u64; 2]> =
            [(0x1_0000_0100, [20, 10]), (0x1_0000_0200, [0, 10])].into();
        let a = edge_accuracy(&e.branches, 10.0, &exact);
        assert!((a.overlap_pct - 100.0).abs() < 1e-9, "{a:?}");
        assert_eq!(a.hot.len(), 2);
        assert_eq!(a.hot[0].estimate, [20, 10]);
        assert_eq!(a.hot[0].error_pct, 0.0);
    }

    #[test]
    fn cpi_is_c_plus_one_over_n() {
        let mut s = Service::new(Kind::Cpi, &items(&["pc", "rrate"]), None).unwrap();
        s.message(&[0x40, 4 | 3 << 16, 0, 0, 0, 0, 0]); // n = 4, c = 3: 3.25
        s.message(&[0x40, 1, 0, 0, 0, 0, 0]); // n = 1, c = 0: 1
        let Service::Cpi(c) = &s else { panic!() };
        assert_eq!(
            c.pcs[&0x40],
            CpiSum {
                samples: 2,
                cycles: 4.25
            }
        );
        let exact: BTreeMap<u64, ExactCpi> = [(
            0x40,
            ExactCpi {
                executions: 4,
                cycles: 8.5,
            },
        )]
        .into();
        let a = cpi_accuracy(&c.pcs, 2.0, &exact, |_| Some(0));
        assert_eq!(a.estimated_cycles, 8.5);
        assert_eq!(a.hot[0].estimated_cpi, 2.125);
        assert_eq!(a.hot[0].exact_cpi, 2.125);
        assert_eq!(a.groups.len(), 1);
    }

    fn layout() -> HeapLayout {
        HeapLayout {
            arena: 0x1000,
            arena_len: 64 * 4,
            object_size: 64,
            roots: 0x100,
            roots_len: 16,
            period: 0,
        }
    }

    #[test]
    fn the_collector_frees_what_the_barrier_shows_unreachable_and_the_check_agrees() {
        // root 0 → A; A.slot1 → B; then root 0 → C: A and B are garbage
        let (a, b, c) = (0x1000, 0x1040, 0x1080);
        let log = [(0x100, a), (a + 8, b), (0x100, c)];
        let mut col = Collector::new(HeapLayout {
            period: 3,
            ..layout()
        });
        for &(s, v) in &log {
            col.store(s, v);
        }
        assert_eq!(col.collections.len(), 1);
        assert_eq!(col.collections[0].freed, vec![a, b]);
        let check = check_collections(&col.layout, &log, &col.collections);
        assert_eq!((check.freed, check.unsafe_frees), (2, 0));
    }

    #[test]
    fn a_lost_store_makes_the_check_fail() {
        // root 0 → A, root 1 → B, A.slot1 → B, root 1 := null (filtered), then the
        // barrier loses the store A.slot1 → B: it would free B, still reachable through A
        let (a, b) = (0x1000, 0x1040);
        let exact = [(0x100, a), (0x108, b), (a + 8, b), (0x108, 0)];
        let seen = Collection {
            after: 3,
            known: 2,
            marked: 1,
            freed: vec![b],
        };
        let check = check_collections(&layout(), &exact, &[seen]);
        assert_eq!(check.unsafe_frees, 1);
        assert_eq!(check.examples, vec![(0, b)]);
    }

    #[test]
    fn weighted_samples_count_as_many_as_their_throttle_level_says() {
        let mut s = Service::new(Kind::Edges, &items(&["pc", "misc"]), None).unwrap();
        s.weigh(WEIGHT_WORD);
        assert!(s.weighted());
        let mut m = [0u32; RECORD_WORDS];
        m[0] = 0x40;
        m[1] = 1; // taken
        s.message(&m);
        m[WEIGHT_WORD] = 3; // kept 1 in 8: stands for 8
        s.message(&m);
        m[1] = 0b10; // not taken, mispredicted
        s.message(&m);
        let Service::Edges(e) = &s else { panic!() };
        let b = e.branches[&0x40];
        assert_eq!((b.taken, b.not_taken, b.mispredicted), (9, 8, [0, 8]));
    }

    #[test]
    fn a_log_of_addresses_learns_each_pcs_stride() {
        let mut s = Service::new(Kind::Log, &items(&["pc", "res2"]), None).unwrap();
        for i in 0..10u32 {
            s.message(&[0x40, 0x1000 + 64 * i, 0, 0, 0, 0, 0]);
            s.message(&[0x80, 0x9000 - 8 * (i % 2), 0, 0, 0, 0, 0]);
        }
        let Service::Log(l) = &s else { panic!() };
        assert_eq!(l.records.len(), 20);
        assert_eq!(l.by_pc[&0x40].dominant(), Some((64, 1.0)));
        assert_eq!(l.by_pc[&0x80].count, 10);
        assert_eq!(l.by_pc[&0x80].dominant().map(|d| d.0), Some(-8));
    }

    #[test]
    fn the_store_checksum_ignores_order_and_sees_changes() {
        let a = store_hash(1, 2).wrapping_add(store_hash(3, 4));
        let b = store_hash(3, 4).wrapping_add(store_hash(1, 2));
        assert_eq!(a, b);
        assert_ne!(store_hash(1, 2), store_hash(2, 1));
    }
}
