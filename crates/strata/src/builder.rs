//! [`WppBuilder`]: basic blocks in, the temporal stream of repeated top-layer elements out.
//!
//! Layer 0 turns blocks into repeated paths (paper §III.A). Stratum layer 0 turns repeated
//! paths into repeated stratum elements (§III.B); stratum layer k turns the repeated elements
//! of layer k−1 into its own (beyond the paper, which stopped at layer 0 for lack of memory:
//! every stratum layer here has a dictionary cap, see [`Config::layer_cap`]). What leaves the
//! last layer is the temporal stream ([`Item`]s) that the file stores.

use crate::cycle::{CycleBuilder, CycleState, Run, SeqDict};
use crate::Config;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The level of a thread mark in the temporal stream: the items after it, up to the next mark,
/// belong to guest thread `id` (its creation index). Format version 3; a stream without marks
/// is thread 0's.
pub const THREAD_LEVEL: u8 = u8::MAX;

/// The level of a process mark in the temporal stream: the items after it, up to the next
/// process mark, belong to (process, program) row `id` of the file's `run.processes` (format
/// version 4; a stream without process marks is one process's). An `execve` ends the
/// thread's paths and cycles before its mark, so none spans two programs.
pub const PROCESS_LEVEL: u8 = u8::MAX - 1;

/// One repeated element of the temporal stream: `trip` consecutive executions of entry `id`
/// at `level` (0: a path; k ≥ 1: an element of stratum layer k−1), or a thread mark
/// ([`THREAD_LEVEL`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Item {
    /// 0 for a path, k for an element of stratum layer k−1.
    pub level: u8,
    /// The entry's id in that level's dictionary.
    pub id: u32,
    /// Consecutive executions, ≥ 1.
    pub trip: u64,
}

impl Item {
    /// The mark that thread `index`'s items follow.
    pub fn thread_mark(index: u32) -> Item {
        Item {
            level: THREAD_LEVEL,
            id: index,
            trip: 1,
        }
    }

    /// Whether it is a thread mark (then `id` is the thread).
    pub fn is_thread_mark(&self) -> bool {
        self.level == THREAD_LEVEL
    }

    /// The mark that (process, program) row `row`'s items follow.
    pub fn process_mark(row: u32) -> Item {
        Item {
            level: PROCESS_LEVEL,
            id: row,
            trip: 1,
        }
    }

    /// Whether it is a process mark (then `id` is the row).
    pub fn is_process_mark(&self) -> bool {
        self.level == PROCESS_LEVEL
    }

    /// Whether it is a mark of either kind (no path or element).
    pub fn is_mark(&self) -> bool {
        self.level >= PROCESS_LEVEL
    }
}

/// The path and stratum state of one guest thread while another runs.
#[derive(Debug)]
struct Parked {
    paths: CycleState,
    layers: Vec<CycleState>,
}

/// Basic blocks by dense id: start address and instruction count.
#[derive(Debug, Default)]
pub struct BlockTable {
    map: FxHashMap<(u64, u32), u32>,
    /// Start address of block `i`.
    pub addrs: Vec<u64>,
    /// Instructions in block `i`.
    pub insns: Vec<u32>,
}

impl BlockTable {
    /// The dense id of the block starting at `start` with `insns` instructions.
    #[inline]
    pub fn intern(&mut self, start: u64, insns: u32) -> u32 {
        let next = self.addrs.len() as u32;
        let id = *self.map.entry((start, insns)).or_insert(next);
        if id == next {
            self.addrs.push(start);
            self.insns.push(insns);
        }
        id
    }

    /// Number of distinct blocks.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// True when no block was seen.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

/// Counters of one layer (the paper's Tables 3 and 4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerStats {
    /// Elements that entered the layer (blocks for the path layer, repeated elements below
    /// for a stratum layer).
    pub inputs: u64,
    /// Distinct input symbols (blocks; or (element, trip count) pairs).
    pub unique_inputs: u64,
    /// Completed cycles, counting every consecutive execution (paper: "number of paths",
    /// "total strata").
    pub executions: u64,
    /// Repeated elements emitted (a run of consecutive executions counts once).
    pub repeated: u64,
    /// Executions that repeated the previous cycle: `executions − repeated` (paper Table 4,
    /// "consecutive executions").
    pub consecutive: u64,
    /// Distinct cycles in the dictionary (paper: "unique paths", "unique strata").
    pub unique: u64,
    /// Symbols stored over all dictionary entries.
    pub dict_symbols: u64,
    /// Cycles cut at the length limit.
    pub limit_cuts: u64,
    /// Repeated elements forwarded element by element because the dictionary was full.
    pub bypassed: u64,
    /// Elements kept in the file (after pruning elements used once).
    pub kept: u64,
    /// Approximate heap bytes of the layer's tables at the end.
    pub heap_bytes: u64,
}

/// One stratum layer: interns (element, trip) pairs from below and runs the cycle rule.
#[derive(Debug)]
struct StratumLayer {
    symbols: FxHashMap<Item, u32>,
    sym_items: Vec<Item>,
    cycles: CycleBuilder,
    stats: LayerStats,
}

impl StratumLayer {
    fn push(&mut self, item: Item, level: u8, out: &mut dyn FnMut(Item)) {
        self.stats.inputs += 1;
        let next = self.sym_items.len() as u32;
        let sym = *self.symbols.entry(item).or_insert(next);
        if sym == next {
            self.sym_items.push(item);
        }
        let sym_items = &self.sym_items;
        let stats = &mut self.stats;
        self.cycles
            .push(sym, &mut |r| emit_run(r, level, sym_items, stats, out));
    }

    fn finish(&mut self, level: u8, out: &mut dyn FnMut(Item)) {
        let sym_items = &self.sym_items;
        let stats = &mut self.stats;
        self.cycles
            .finish(&mut |r| emit_run(r, level, sym_items, stats, out));
    }
}

fn emit_run(
    r: Run<'_>,
    level: u8,
    sym_items: &[Item],
    stats: &mut LayerStats,
    out: &mut dyn FnMut(Item),
) {
    stats.executions += r.trip;
    stats.repeated += 1;
    match r.id {
        Some(id) => out(Item {
            level,
            id,
            trip: r.trip,
        }),
        None => {
            // dictionary full: forward the cycle's own elements, losslessly
            stats.bypassed += 1;
            for _ in 0..r.trip {
                for &s in r.seq {
                    if let Some(&it) = sym_items.get(s as usize) {
                        out(it);
                    }
                }
            }
        }
    }
}

/// Builds paths and strata from a basic-block stream (see the module docs).
#[derive(Debug)]
pub struct WppBuilder {
    config: Config,
    blocks: BlockTable,
    paths: CycleBuilder,
    path_stats: LayerStats,
    layers: Vec<StratumLayer>,
    top: Vec<Item>,
    /// Per stratum layer: how many of its first elements are frozen because items already
    /// taken ([`WppBuilder::take_items`]) name the last of them.
    frozen: Vec<u32>,
    instructions: u64,
    /// The running guest thread (creation index).
    thread: u32,
    /// The other threads' path and stratum states, by index.
    parked: std::collections::BTreeMap<u32, Parked>,
    /// Thread marks put in the stream.
    thread_marks: u64,
    /// The running (process, program) row, and each thread's (the row it last ran in).
    process: u32,
    thread_rows: std::collections::BTreeMap<u32, u32>,
    /// Process marks put in the stream.
    process_marks: u64,
}

fn freeze(frozen: &mut [u32], it: &Item) {
    if let Some(f) = usize::from(it.level)
        .checked_sub(1)
        .and_then(|k| frozen.get_mut(k))
    {
        *f = (*f).max(it.id.saturating_add(1));
    }
}

/// Everything a finished builder knows: the dictionaries and the statistics.
#[derive(Debug)]
pub struct Dictionaries {
    /// Basic blocks by id.
    pub blocks: BlockTable,
    /// Paths by id: sequences of block ids.
    pub paths: SeqDict,
    /// Per stratum layer: its input symbols (`Item`s of lower levels) and its elements
    /// (sequences of symbol ids).
    pub layers: Vec<(Vec<Item>, SeqDict)>,
}

/// Run statistics of a builder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildStats {
    /// Retired instructions (sum of block lengths).
    pub instructions: u64,
    /// Basic blocks executed.
    pub blocks: u64,
    /// Distinct basic blocks.
    pub unique_blocks: u64,
    /// The path layer (Table 3).
    pub paths: LayerStats,
    /// Stratum layers 0, 1, ... (Table 4 is layer 0).
    pub layers: Vec<LayerStats>,
    /// Elements inlined at the end because they were used once, per stratum layer.
    pub inlined: Vec<u64>,
    /// Items in the temporal stream.
    pub stream_items: u64,
    /// Thread marks among them (0 for a single-threaded program).
    #[serde(default)]
    pub thread_marks: u64,
    /// Process marks among them (0 for one process running one program).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub process_marks: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl WppBuilder {
    /// A builder with `config`.
    pub fn new(config: Config) -> WppBuilder {
        let layers = (0..config.layers)
            .map(|_| StratumLayer {
                symbols: FxHashMap::default(),
                sym_items: Vec::new(),
                cycles: CycleBuilder::new(config.max_cycle_len, config.layer_cap),
                stats: LayerStats::default(),
            })
            .collect();
        WppBuilder {
            paths: CycleBuilder::new(config.max_path_len, usize::MAX),
            config,
            blocks: BlockTable::default(),
            path_stats: LayerStats::default(),
            layers,
            top: Vec::new(),
            frozen: vec![0; config.layers],
            instructions: 0,
            thread: 0,
            parked: std::collections::BTreeMap::new(),
            thread_marks: 0,
            process: 0,
            thread_rows: std::collections::BTreeMap::new(),
            process_marks: 0,
        }
    }

    /// The blocks pushed next are (process, program) row `row`'s (the caller numbers rows).
    /// With `exec` (the running thread's process ran `execve`), the thread's paths and
    /// stratum cycles end here, so that none spans two programs; a switch of process comes
    /// with a switch of thread ([`WppBuilder::switch_thread`]), which parks them.
    pub fn switch_process(&mut self, row: u32, exec: bool) {
        if row == self.process {
            return;
        }
        if exec {
            // (the thread goes on in the new program; another process's thread comes with
            // its own switch, which notes its row)
            self.flush_thread();
            self.thread_rows.insert(self.thread, row);
        }
        self.process = row;
        self.process_mark(row);
    }

    /// Drops the marks at the stream's end: nothing follows them.
    fn drop_trailing_marks(&mut self) {
        while let Some(last) = self.top.last().filter(|it| it.is_mark()) {
            if last.is_thread_mark() {
                self.thread_marks -= 1;
            } else {
                self.process_marks -= 1;
            }
            self.top.pop();
        }
    }

    /// Puts row `row`'s mark in the stream (marks nothing followed are dropped first).
    fn process_mark(&mut self, row: u32) {
        self.drop_trailing_marks();
        self.top.push(Item::process_mark(row));
        self.process_marks += 1;
    }

    /// Guest thread `index` runs from now on: the blocks pushed next are its. Each thread has
    /// its own paths and stratum cycles under construction (a path never spans a switch); the
    /// dictionaries are shared; the stream gets a thread mark ([`Item::thread_mark`]) before
    /// the items of the thread that runs.
    pub fn switch_thread(&mut self, index: u32) {
        if index == self.thread {
            return;
        }
        let layers = self.layers.len();
        let mut state = self.parked.remove(&index).unwrap_or_else(|| Parked {
            paths: CycleState::default(),
            layers: (0..layers).map(|_| CycleState::default()).collect(),
        });
        self.paths.swap_state(&mut state.paths);
        for (l, s) in self.layers.iter_mut().zip(&mut state.layers) {
            l.cycles.swap_state(s);
        }
        self.parked.insert(self.thread, state);
        self.thread = index;
        self.thread_rows.insert(index, self.process);
        self.mark(index);
    }

    /// Puts thread `index`'s mark in the stream (replacing a mark nothing followed).
    fn mark(&mut self, index: u32) {
        match self.top.last_mut() {
            Some(last) if last.is_thread_mark() => *last = Item::thread_mark(index),
            _ => {
                self.top.push(Item::thread_mark(index));
                self.thread_marks += 1;
            }
        }
    }

    /// Flushes the running thread's paths and stratum layers into the stream.
    fn flush_thread(&mut self) {
        let WppBuilder {
            paths,
            path_stats,
            layers,
            top,
            ..
        } = self;
        paths.finish(&mut |r| path_run(r, path_stats, layers, top));
        for k in 0..layers.len() {
            // layer k's output is level k + 1; what it flushes goes through the layers above
            let (done, rest) = layers.split_at_mut(k + 1);
            done[k].finish((k + 1) as u8, &mut |it| feed(rest, k + 2, top, it));
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// One executed basic block starting at `start` with `insns` instructions.
    #[inline]
    pub fn push_block(&mut self, start: u64, insns: u32) {
        self.instructions += u64::from(insns);
        self.path_stats.inputs += 1;
        let id = self.blocks.intern(start, insns);
        let WppBuilder {
            paths,
            path_stats,
            layers,
            top,
            ..
        } = self;
        paths.push(id, &mut |r| path_run(r, path_stats, layers, top));
    }

    /// Items of the temporal stream produced so far and not yet taken.
    pub fn pending(&self) -> usize {
        self.top.len()
    }

    /// Takes the temporal-stream items produced so far, to be written now. The stratum
    /// elements they name, and every element with a lower id, are frozen: [`WppBuilder::finish`]
    /// will neither inline nor renumber them. Take items
    /// only when [`WppBuilder::pending`] exceeds the memory you grant the stream
    /// ([`Config::hold_items`]); items left in the builder are pruned at the end.
    pub fn take_items(&mut self) -> Vec<Item> {
        for it in &self.top {
            freeze(&mut self.frozen, it);
        }
        std::mem::take(&mut self.top)
    }

    /// Flushes every layer: the remaining items, then the dictionaries and statistics.
    pub fn finish(mut self) -> (Vec<Item>, Dictionaries, BuildStats) {
        self.flush_thread();
        // then every other thread's, in creation order, each after its mark
        let waiting: Vec<u32> = self.parked.keys().copied().collect();
        for index in waiting {
            let len = self.top.len();
            let saved = (self.process, self.process_marks, self.thread_marks);
            // (its items after the mark of the process it last ran in)
            let row = self.thread_rows.get(&index).copied().unwrap_or(0);
            if row != self.process {
                self.process = row;
                self.top.push(Item::process_mark(row));
                self.process_marks += 1;
            }
            self.switch_thread(index);
            self.flush_thread();
            if !self.top[len.min(self.top.len())..]
                .iter()
                .any(|it| !it.is_mark())
            {
                // nothing was pending: drop the marks again
                self.top.truncate(len);
                (self.process, self.process_marks, self.thread_marks) = saved;
            }
        }
        self.drop_trailing_marks();
        let mut stats = BuildStats {
            instructions: self.instructions,
            blocks: self.path_stats.inputs,
            unique_blocks: self.blocks.len() as u64,
            paths: self.path_stats.clone(),
            layers: Vec::new(),
            inlined: Vec::new(),
            stream_items: 0,
            thread_marks: self.thread_marks,
            process_marks: self.process_marks,
        };
        stats.paths.unique_inputs = self.blocks.len() as u64;
        fill_cycle_stats(&mut stats.paths, &self.paths);
        stats.paths.heap_bytes += (self.blocks.len() * 40) as u64;
        let mut resolved = Vec::new();
        for l in self.layers {
            let mut s = l.stats.clone();
            s.unique_inputs = l.sym_items.len() as u64;
            fill_cycle_stats(&mut s, &l.cycles);
            s.heap_bytes += (l.sym_items.len() * 56) as u64;
            stats.layers.push(s);
            let d = &l.cycles.dict;
            let elems: Vec<Vec<Item>> = (0..d.len() as u32)
                .map(|e| {
                    d.get(e)
                        .iter()
                        .map(|&sym| l.sym_items[sym as usize])
                        .collect()
                })
                .collect();
            resolved.push(elems);
        }
        let mut top = self.top;
        let (layers, inlined) = if self.config.prune {
            prune(resolved, &mut top, &self.frozen)
        } else {
            let n = resolved.len();
            (resolved, vec![0; n])
        };
        for (s, l) in stats.layers.iter_mut().zip(&layers) {
            s.kept = l.len() as u64;
        }
        stats.inlined = inlined;
        let dicts = Dictionaries {
            blocks: self.blocks,
            paths: self.paths.dict,
            layers: layers.into_iter().map(intern_layer).collect(),
        };
        (top, dicts, stats)
    }
}

/// A layer's elements as a symbol table and symbol sequences, symbols in order of first use.
fn intern_layer(elems: Vec<Vec<Item>>) -> (Vec<Item>, SeqDict) {
    let mut map: FxHashMap<Item, u32> = FxHashMap::default();
    let mut syms = Vec::new();
    let mut dict = SeqDict::new();
    let mut seq = Vec::new();
    for e in elems {
        seq.clear();
        for it in e {
            let next = syms.len() as u32;
            let s = *map.entry(it).or_insert(next);
            if s == next {
                syms.push(it);
            }
            seq.push(s);
        }
        dict.insert(&seq);
    }
    (syms, dict)
}

/// Inlines every stratum element that is named exactly once in the whole profile (one
/// reference, trip count 1, not frozen): its parent names its contents instead. An element
/// used once costs a dictionary entry and a reference and saves nothing, so this removes the
/// growth of higher layers on code that does not repeat (the paper's "hourglass", §VIII),
/// and keeps every element that does repeat. Ids are renumbered densely, in the old order.
fn prune(
    mut elems: Vec<Vec<Vec<Item>>>,
    top: &mut Vec<Item>,
    frozen: &[u32],
) -> (Vec<Vec<Vec<Item>>>, Vec<u64>) {
    // uses[k][e]: 0 unused, 1 named once with trip 1, 2 anything more
    let mut uses: Vec<Vec<u8>> = elems.iter().map(|l| vec![0u8; l.len()]).collect();
    let count = |it: &Item, uses: &mut Vec<Vec<u8>>| {
        if let Some(u) = usize::from(it.level)
            .checked_sub(1)
            .and_then(|k| uses.get_mut(k))
            .and_then(|l| l.get_mut(it.id as usize))
        {
            *u = if it.trip == 1 { (*u + 1).min(2) } else { 2 };
        }
    };
    for l in &elems {
        for e in l {
            for it in e {
                count(it, &mut uses);
            }
        }
    }
    for it in top.iter() {
        count(it, &mut uses);
    }
    // Items already written name their elements by id, and ids are renumbered below: an
    // element keeps its id only if no element before it is inlined. So the frozen prefix
    // (up to the last element a written item names) stays whole.
    for (u, &f) in uses.iter_mut().zip(frozen) {
        for x in u.iter_mut().take(f as usize) {
            *x = 2;
        }
    }
    let single: Vec<Vec<bool>> = uses
        .iter()
        .map(|l| l.iter().map(|&u| u == 1).collect())
        .collect();
    // expand bottom-up: when layer k is rewritten, every element it may inline (lower
    // layers) is already final
    fn expand(it: Item, single: &[Vec<bool>], done: &mut [Vec<Vec<Item>>], out: &mut Vec<Item>) {
        match usize::from(it.level).checked_sub(1) {
            Some(k) if single.get(k).and_then(|l| l.get(it.id as usize)) == Some(&true) => {
                let inner = std::mem::take(&mut done[k][it.id as usize]);
                out.extend_from_slice(&inner);
            }
            _ => out.push(it),
        }
    }
    for k in 0..elems.len() {
        let (done, rest) = elems.split_at_mut(k);
        for e in rest[0].iter_mut() {
            if !e.iter().any(|it| {
                usize::from(it.level)
                    .checked_sub(1)
                    .and_then(|j| single.get(j))
                    .and_then(|l| l.get(it.id as usize))
                    == Some(&true)
            }) {
                continue;
            }
            let mut out = Vec::with_capacity(e.len());
            for &it in e.iter() {
                expand(it, &single, done, &mut out);
            }
            *e = out;
        }
    }
    let mut new_top = Vec::with_capacity(top.len());
    for &it in top.iter() {
        expand(it, &single, &mut elems, &mut new_top);
    }
    *top = new_top;
    // renumber the kept elements
    let remap: Vec<Vec<u32>> = single
        .iter()
        .map(|l| {
            let mut next = 0u32;
            l.iter()
                .map(|&s| {
                    let id = next;
                    if !s {
                        next += 1;
                    }
                    id
                })
                .collect()
        })
        .collect();
    let fix = |it: &mut Item| {
        if let Some(k) = usize::from(it.level).checked_sub(1) {
            if let Some(&id) = remap.get(k).and_then(|l| l.get(it.id as usize)) {
                it.id = id; // (thread marks name no element)
            }
        }
    };
    let mut inlined = Vec::new();
    let mut out_layers = Vec::new();
    for (k, l) in elems.into_iter().enumerate() {
        inlined.push(single[k].iter().filter(|&&s| s).count() as u64);
        let mut kept = Vec::new();
        for (e, mut items) in l.into_iter().enumerate() {
            if single[k][e] {
                continue;
            }
            items.iter_mut().for_each(fix);
            kept.push(items);
        }
        out_layers.push(kept);
    }
    top.iter_mut().for_each(fix);
    (out_layers, inlined)
}

fn fill_cycle_stats(s: &mut LayerStats, c: &CycleBuilder) {
    s.consecutive = s.executions - s.repeated;
    s.unique = c.dict.len() as u64;
    s.dict_symbols = c.dict.total_symbols() as u64;
    s.limit_cuts = c.limit_cuts;
    s.heap_bytes = c.dict.heap_bytes() as u64;
}

#[inline]
fn path_run(r: Run<'_>, stats: &mut LayerStats, layers: &mut [StratumLayer], top: &mut Vec<Item>) {
    stats.executions += r.trip;
    stats.repeated += 1;
    // the path dictionary has no cap: every path has an id
    let id = r.id.unwrap_or(u32::MAX);
    feed(
        layers,
        1,
        top,
        Item {
            level: 0,
            id,
            trip: r.trip,
        },
    );
}

/// Passes `item` to the first of `layers` (whose output level is `level`), or to the stream.
fn feed(layers: &mut [StratumLayer], level: usize, top: &mut Vec<Item>, item: Item) {
    match layers.split_first_mut() {
        None => top.push(item),
        Some((first, rest)) => {
            first.push(item, level as u8, &mut |it| feed(rest, level + 1, top, it));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_example_through_the_builder() {
        let mut b = WppBuilder::new(Config {
            layers: 0,
            ..Config::default()
        });
        for s in [0xa, 0xa, 0xb, 0xa, 0xa, 0xb, 0xa, 0xa, 0xb] {
            b.push_block(s, 1);
        }
        let (items, dicts, stats) = b.finish();
        let got: Vec<(u32, u64)> = items.iter().map(|i| (i.id, i.trip)).collect();
        assert_eq!(got, vec![(0, 2), (1, 1), (2, 1), (0, 2), (3, 1)]);
        assert_eq!(dicts.paths.len(), 4);
        assert_eq!(stats.paths.executions, 7);
        assert_eq!(stats.paths.repeated, 5);
        assert_eq!(stats.paths.consecutive, 2);
        assert_eq!(stats.blocks, 9);
        assert_eq!(stats.unique_blocks, 2);
    }

    #[test]
    fn nested_loop_collapses_with_one_stratum_layer() {
        // (A^50 B)^100: paths (A)^50 (BA) [(A)^49 (BA)]^98 (A)^49 (B); as layer-0 symbols
        // s0 s1 s2 (s1 s2)^98 s3 → elements [s0 s1 s2]^1 [s1 s2]^98 [s3]^1
        let mut b = WppBuilder::new(Config {
            layers: 1,
            prune: false,
            ..Config::default()
        });
        for _ in 0..100 {
            for _ in 0..50 {
                b.push_block(0x100, 4);
            }
            b.push_block(0x200, 2);
        }
        let (items, dicts, stats) = b.finish();
        let it = |id, trip| Item { level: 1, id, trip };
        assert_eq!(items, vec![it(0, 1), it(1, 98), it(2, 1)]);
        assert_eq!(dicts.paths.len(), 3);
        assert_eq!(dicts.layers[0].1.get(0), &[0, 1, 2]);
        assert_eq!(dicts.layers[0].1.get(1), &[1, 2]);
        assert_eq!(stats.instructions, 100 * (50 * 4 + 2));
        assert_eq!(stats.layers[0].executions, 100);
        assert_eq!(stats.layers[0].consecutive, 97);
    }
}
