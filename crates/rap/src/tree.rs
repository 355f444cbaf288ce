//! The RAP tree: an arena of range counters, updates with splits (RAP §2.1–2.2) and batched
//! merges at exponentially spaced stream lengths (§3.1).
//!
//! Layout: nodes live in a `Vec<Node>` grouped in blocks of `b` slots; a node's children are
//! one block, so descending one level is `block·b + digit(value)`: no search. Node ranges are
//! implied by position (aligned `b`-ary subdivision of the universe), so a node stores only its
//! count, its child block and a presence flag (16 bytes).
//!
//! Hot path: [`RapTree::add`] remembers the path of the previous lookup and restarts the descent
//! at the deepest node the new value shares with the previous one (common prefix of the two
//! values, found with one XOR and a leading-zero count). Splits never move nodes, so the path
//! stays valid; a merge batch resets it to the root.

use crate::config::{Config, SplitPolicy};
use crate::Error;
use serde::{Deserialize, Serialize};

/// Sentinel for "no child block".
pub(crate) const NONE: u32 = u32::MAX;

/// Values combined per window by [`RapTree::add_batch`]: the paper's 1k stage-0 buffer (§3.3).
pub const COMBINE_WINDOW: usize = 1024;

/// Values whose tree lookups [`RapTree::add_batch`] interleaves when it does not combine.
const GROUP: usize = 16;

/// Windows added without combining after a window that was nearly all distinct values.
const BYPASS_WINDOWS: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) count: u64,
    pub(crate) children: u32,
    pub(crate) present: bool,
}

const ABSENT: Node = Node {
    count: 0,
    children: NONE,
    present: false,
};
const FRESH: Node = Node {
    count: 0,
    children: NONE,
    present: true,
};

/// Per-depth shape of the aligned `b`-ary subdivision of a `bits`-bit universe.
#[derive(Clone, Debug)]
pub(crate) struct Geometry {
    pub(crate) bits: u32,
    pub(crate) b: u32,
    pub(crate) log2b: u32,
    pub(crate) height: u32,
    /// `shift[d]`: a depth-`d` node picks its child with `(v >> shift[d]) & (fanout[d] − 1)`.
    pub(crate) shift: [u32; 65],
    /// `fanout[d]`: children of a depth-`d` node (`b`, or fewer on the last level).
    pub(crate) fanout: [u32; 65],
    pub(crate) max_value: u64,
}

impl Geometry {
    pub(crate) fn new(config: &Config) -> Self {
        let bits = u32::from(config.bits());
        let log2b = config.log2_branching();
        let height = config.height();
        let mut shift = [0; 65];
        let mut fanout = [0; 65];
        for d in 0..height {
            let rem = bits - d * log2b;
            let digit_bits = rem.min(log2b);
            fanout[d as usize] = 1 << digit_bits;
            shift[d as usize] = rem - digit_bits;
        }
        let max_value = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Geometry {
            bits,
            b: 1 << log2b,
            log2b,
            height,
            shift,
            fanout,
            max_value,
        }
    }

    /// Bits of the range width of a depth-`d` node (the node covers `2^width_bits` values).
    #[inline]
    pub(crate) fn width_bits(&self, d: u32) -> u32 {
        self.bits.saturating_sub(d * self.log2b)
    }

    /// Last value of the depth-`d` node starting at `lo`.
    #[inline]
    pub(crate) fn hi(&self, lo: u64, d: u32) -> u64 {
        let w = self.width_bits(d);
        if w >= 64 {
            u64::MAX
        } else {
            lo + ((1u64 << w) - 1)
        }
    }

    #[inline]
    pub(crate) fn digit(&self, v: u64, d: u32) -> u32 {
        ((v >> self.shift[d as usize]) as u32) & (self.fanout[d as usize] - 1)
    }

    /// Deepest depth at which `a` and `b` fall in the same node.
    #[inline]
    fn common_depth(&self, a: u64, b: u64) -> u32 {
        let x = a ^ b;
        if x == 0 {
            return self.height;
        }
        let top = 63 - x.leading_zeros(); // highest differing bit
        (self.bits - 1 - top) / self.log2b
    }
}

/// Counters of what the tree did, for the hardware cost model and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Updates that reached the tree (after stage-0 combining, one per distinct value per window).
    pub tree_updates: u64,
    /// Split operations (a node grew its missing children).
    pub splits: u64,
    /// Nodes created by splits.
    pub nodes_created: u64,
    /// Merge batches run.
    pub merge_batches: u64,
    /// Nodes visited by merge batches (sum of tree sizes at each batch).
    pub merge_scanned: u64,
    /// Nodes folded into their parents by merges.
    pub nodes_folded: u64,
}

/// One merge batch, for tree-size-over-time reports (the paper's Figure 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// Stream length when the batch ran.
    pub n: u64,
    /// Live nodes before the batch.
    pub nodes_before: u64,
    /// Live nodes after the batch.
    pub nodes_after: u64,
}

/// A Range Adaptive Profiling tree over a stream of `u64` events.
///
/// Guarantees (see `docs/rap.md` for the proofs):
/// * conservation: the counts of all nodes sum to `n`;
/// * every event is counted at a node whose range contains it;
/// * every node that is wider than one value holds at most τ(n) = ⌊ε'·n/H⌋, so for a range that
///   is a node of the aligned `b`-ary subdivision, `lower ≤ true ≤ lower + ε·n`;
/// * the node count is bounded by [`RapTree::node_bound`] (independent of `n` once merges run).
#[derive(Clone, Debug)]
pub struct RapTree {
    pub(crate) config: Config,
    pub(crate) geo: Geometry,
    pub(crate) nodes: Vec<Node>,
    free_blocks: Vec<u32>,
    pub(crate) live_nodes: u64,
    pub(crate) peak_nodes: u64,
    pub(crate) n: u64,
    tau: u64,
    next_tau_n: u64,
    pub(crate) next_merge: u64,
    pub(crate) merge_interval: u64,
    pub(crate) last_merge_n: u64,
    pub(crate) stats: Stats,
    pub(crate) merge_log: Vec<MergeRecord>,
    last_value: u64,
    path: [u32; 66],
    path_len: usize,
    /// `path[path_from..path_len]` is valid for `last_value` (lookups that start from the jump
    /// table do not know the nodes above their start).
    path_from: usize,
    jump: JumpTable,
    combiner: Combiner,
    /// Incremented by every merge batch (nodes may have been removed).
    merge_epoch: u64,
    /// Arena slots adds never grow past (`usize::MAX`: unbounded; [`RapTree::with_bounded_arena`]).
    arena_limit: usize,
    /// Above this many slots, an add that leaves fewer than `height` free blocks runs a merge
    /// batch early, so the next add finds the `height` blocks its splits may need.
    arena_soft: usize,
}

/// The root is slot 0 of block 0.
pub(crate) const ROOT: u32 = 0;

impl RapTree {
    /// An empty tree: only the root, covering the whole universe, with count 0.
    pub fn new(config: Config) -> Self {
        let geo = Geometry::new(&config);
        let mut nodes = vec![ABSENT; geo.b as usize];
        nodes[0] = FRESH;
        let mut tree = RapTree {
            config,
            geo,
            nodes,
            free_blocks: Vec::new(),
            live_nodes: 1,
            peak_nodes: 1,
            n: 0,
            tau: 0,
            next_tau_n: 0,
            next_merge: config.first_merge(),
            merge_interval: config.first_merge(),
            last_merge_n: 0,
            stats: Stats::default(),
            merge_log: Vec::new(),
            last_value: 0,
            path: [ROOT; 66],
            path_len: 1,
            path_from: 0,
            jump: JumpTable::default(),
            combiner: Combiner::default(),
            merge_epoch: 0,
            arena_limit: usize::MAX,
            arena_soft: usize::MAX,
        };
        tree.refresh_threshold();
        tree.jump = JumpTable::new(&tree.geo, true);
        tree.rebuild_jump();
        tree
    }

    /// An empty tree whose adds never make it hold more than
    /// [`max_allocated_bytes`](crate::bound::max_allocated_bytes) bytes: its arena stops
    /// growing at twice the blocks any merge batch leaves (plus one add's worth), and an add
    /// that leaves fewer spare blocks than one add can take runs a merge batch early. Merges
    /// only fold what fits under τ, so every guarantee holds as for [`RapTree::new`]; the
    /// bound covers adds, not [`RapTree::merge`] or decoding.
    pub fn with_bounded_arena(config: Config) -> Self {
        Self::with_arena_blocks(config, crate::bound::arena_blocks_bounded(&config))
    }

    /// A tree that runs a merge batch early whenever an add leaves its arena above
    /// `blocks − H` blocks with fewer than `H` free. From
    /// [`blocks_after_merge`](crate::bound::blocks_after_merge) `+ H` blocks up, adds keep the
    /// arena within `blocks`; below that the arena grows past it, merging early at nearly every
    /// add (for tests of the early merges, which the default limit leaves rare).
    #[doc(hidden)]
    pub fn with_arena_blocks(config: Config, blocks: u64) -> Self {
        let mut tree = RapTree::new(config);
        let b = tree.geo.b as usize;
        tree.arena_limit = usize::try_from(blocks)
            .unwrap_or(usize::MAX)
            .saturating_mul(b);
        tree.arena_soft = tree
            .arena_limit
            .saturating_sub(tree.geo.height as usize * b);
        tree
    }

    /// The same tree without the jump table (for differential tests of the accelerators).
    #[doc(hidden)]
    pub fn without_jump_table(mut self) -> Self {
        self.jump = JumpTable::new(&self.geo, false);
        self
    }

    /// The tree's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Events counted so far (sum of weights).
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Current `SplitThreshold` τ(n).
    pub fn split_threshold(&self) -> u64 {
        self.tau
    }

    /// Live nodes (range counters) now.
    pub fn node_count(&self) -> u64 {
        self.live_nodes
    }

    /// Largest node count ever reached.
    pub fn peak_nodes(&self) -> u64 {
        self.peak_nodes
    }

    /// Bytes of node storage in use now (live nodes × node size).
    pub fn bytes(&self) -> u64 {
        self.live_nodes * std::mem::size_of::<Node>() as u64
    }

    /// Bytes the tree holds: the arena, including empty slots of partial child blocks and free
    /// blocks, the jump table (20 KiB for a full 12-bit table) and the stage-0 buffer.
    pub fn allocated_bytes(&self) -> u64 {
        (self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.free_blocks.capacity() * 4
            + self.jump.node.capacity() * 4
            + self.jump.depth.capacity()
            + self.combiner.bytes()) as u64
    }

    /// Size of one node in bytes.
    pub fn node_size() -> u64 {
        std::mem::size_of::<Node>() as u64
    }

    /// What the tree did so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// One record per merge batch, in order.
    pub fn merge_log(&self) -> &[MergeRecord] {
        &self.merge_log
    }

    /// Stream length at which the next merge batch runs.
    pub fn next_merge(&self) -> u64 {
        self.next_merge
    }

    /// Stream length at the last merge batch (0 before the first).
    pub fn last_merge_n(&self) -> u64 {
        self.last_merge_n
    }

    pub(crate) fn refresh_threshold(&mut self) {
        self.tau = self.config.split_threshold(self.n);
        self.next_tau_n = self.config.next_threshold_step(self.n);
    }

    /// Counts one event.
    #[inline]
    pub fn add(&mut self, value: u64) -> Result<(), Error> {
        self.add_weighted(value, 1)
    }

    /// Counts `weight` identical events of `value` at once, with the same guarantees as unit
    /// adds: a node that would overshoot τ absorbs only up to τ, then splits, and the rest goes
    /// on to the child (RAP §2.2, "split before a heavy add").
    pub fn add_weighted(&mut self, value: u64, weight: u64) -> Result<(), Error> {
        if value > self.geo.max_value {
            return Err(Error::ValueOutOfRange {
                value,
                bits: self.config.bits(),
            });
        }
        if weight == 0 {
            return Ok(());
        }
        let n = self
            .n
            .checked_add(weight)
            .ok_or(Error::CountOverflow { n: self.n, weight })?;
        self.add_unchecked(value, weight, n)
    }

    /// `value` is in the universe, `weight ≥ 1`, `n = self.n + weight` did not overflow.
    #[inline]
    fn add_unchecked(&mut self, value: u64, weight: u64, n: u64) -> Result<(), Error> {
        let (node, depth) = self.locate(value);
        self.apply(value, weight, n, node, depth)
    }

    /// Counts `weight` events of `value` at `node` (the deepest node containing `value`, at
    /// `depth`), splitting on the way down as needed; then runs a merge batch if one is due.
    #[inline(always)]
    fn apply(
        &mut self,
        value: u64,
        weight: u64,
        n: u64,
        node: u32,
        depth: u32,
    ) -> Result<(), Error> {
        // the common case, inline: no split, no new τ, no merge due
        let count = self.nodes[node as usize].count;
        if n < self.next_tau_n
            && n < self.next_merge
            && (depth == self.geo.height || count + weight <= self.tau)
        {
            self.nodes[node as usize].count = count + weight;
            self.n = n;
            self.stats.tree_updates += 1;
            return Ok(());
        }
        self.apply_slow(value, weight, n, node, depth)
    }

    #[inline(never)]
    fn apply_slow(
        &mut self,
        value: u64,
        weight: u64,
        n: u64,
        mut node: u32,
        mut depth: u32,
    ) -> Result<(), Error> {
        self.n = n;
        if n >= self.next_tau_n {
            self.refresh_threshold();
        }
        self.stats.tree_updates += 1;
        let mut weight = weight;
        let result = loop {
            let count = self.nodes[node as usize].count;
            // Unit-width nodes never split; non-unit nodes keep count ≤ τ (error invariant).
            if depth == self.geo.height || count + weight <= self.tau {
                self.nodes[node as usize].count = count + weight;
                break Ok(());
            }
            // RAP §2.2 split: the node keeps its count (filled up to τ), grows its children
            // with count 0, and the rest of this update goes to the child containing `value`.
            let absorbed = self.tau - count;
            self.nodes[node as usize].count = self.tau;
            weight -= absorbed;
            if let Err(e) = self.split(node, depth, value) {
                // Conservation over the bound: keep the weight here and report.
                self.nodes[node as usize].count += weight;
                break Err(e);
            }
            let block = self.nodes[node as usize].children;
            node = block * self.geo.b + self.geo.digit(value, depth);
            depth += 1;
            // The path cache still ends at an ancestor of `node`; the next lookup descends on.
        };
        if self.n >= self.next_merge {
            self.merge_batch();
        } else if self.nodes.len() > self.arena_soft
            && self.free_blocks.len() < self.geo.height as usize
        {
            // bounded arena: fold now rather than grow past the limit
            self.merge_pass();
            self.last_merge_n = self.n;
        }
        result
    }

    /// Descends from `node` (containing `value`, at `depth`) to the deepest existing node.
    #[inline]
    fn descend(&self, value: u64, mut node: u32, mut depth: u32) -> (u32, u32) {
        loop {
            let block = self.nodes[node as usize].children;
            if block == NONE {
                return (node, depth);
            }
            let child = block * self.geo.b + self.geo.digit(value, depth);
            if !self.nodes[child as usize].present {
                return (node, depth);
            }
            node = child;
            depth += 1;
        }
    }

    /// Counts up to [`GROUP`] values with their lookups interleaved level by level, so the
    /// cache misses of different values overlap. Lookups are redone from where they stopped
    /// (splits only add nodes below), or from the root after a merge batch.
    fn add_group(&mut self, values: &[u64]) -> Result<(), Error> {
        let g = values.len().min(GROUP);
        let mut node = [ROOT; GROUP];
        let mut depth = [0u32; GROUP];
        for i in 0..g {
            if let Some((n, d)) = self.jump.get(values[i]) {
                node[i] = n;
                depth[i] = u32::from(d);
            }
        }
        let mut active = (1u32 << g) - 1;
        while active != 0 {
            let mut bits = active;
            while bits != 0 {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let block = self.nodes[node[i] as usize].children;
                if block == NONE {
                    active &= !(1 << i);
                    continue;
                }
                let child = block * self.geo.b + self.geo.digit(values[i], depth[i]);
                if self.nodes[child as usize].present {
                    node[i] = child;
                    depth[i] += 1;
                } else {
                    active &= !(1 << i);
                }
            }
        }
        let epoch = self.merge_epoch;
        let mut result = Ok(());
        for i in 0..g {
            let (start, d) = if self.merge_epoch == epoch {
                (node[i], depth[i])
            } else {
                (ROOT, 0)
            };
            let (at, d) = self.descend(values[i], start, d);
            let n = self.n + 1;
            if let Err(e) = self.apply(values[i], 1, n, at, d) {
                result = Err(e);
            }
        }
        // The path cache does not know about this group's nodes; it stays valid (splits do
        // not remove nodes, merge batches reset it).
        result
    }

    /// Deepest existing node containing `value`, and its depth.
    #[inline]
    fn locate(&mut self, value: u64) -> (u32, u32) {
        let common = self.geo.common_depth(value, self.last_value) as usize;
        let cached = common.min(self.path_len - 1);
        let (mut node, mut depth) = if cached >= self.path_from {
            (self.path[cached], cached)
        } else {
            self.path_from = 0;
            (ROOT, 0)
        };
        if let Some((j_node, j_depth)) = self.jump.get(value) {
            if j_depth as usize > depth {
                node = j_node;
                depth = j_depth as usize;
                self.path_from = depth;
                self.path[depth] = node;
            }
        }
        loop {
            let block = self.nodes[node as usize].children;
            if block == NONE {
                break;
            }
            let child = block * self.geo.b + self.geo.digit(value, depth as u32);
            if !self.nodes[child as usize].present {
                break;
            }
            node = child;
            depth += 1;
            self.path[depth] = node;
        }
        self.path_len = depth + 1;
        self.last_value = value;
        (node, depth as u32)
    }

    /// Rebuilds the jump table from the tree (after merges and decoding).
    pub(crate) fn rebuild_jump(&mut self) {
        if self.jump.levels == 0 {
            return;
        }
        self.fill_jump(ROOT, 0, 0);
    }

    fn fill_jump(&mut self, node: u32, depth: u32, base: usize) {
        let len = self.jump.span(depth);
        self.jump.node[base..base + len].fill(node);
        self.jump.depth[base..base + len].fill(depth as u8);
        if depth < self.jump.levels {
            let children: Vec<(u32, u32)> = self.children(node, depth).collect();
            let child_len = self.jump.span(depth + 1);
            for (slot, child) in children {
                self.fill_jump(child, depth + 1, base + slot as usize * child_len);
            }
        }
    }

    /// Gives `node` (at `depth`, not unit width) its missing children with count 0 (all of
    /// them, or with [`SplitPolicy::Lazy`] only the one containing `value`); existing children
    /// are kept.
    fn split(&mut self, node: u32, depth: u32, value: u64) -> Result<(), Error> {
        let mut block = self.nodes[node as usize].children;
        if block == NONE {
            block = self.alloc_block()?;
            self.nodes[node as usize].children = block;
        }
        let base = (block * self.geo.b) as usize;
        let (first, count) = match self.config.split_policy() {
            SplitPolicy::Full => (0, self.geo.fanout[depth as usize] as usize),
            SplitPolicy::Lazy => (self.geo.digit(value, depth) as usize, 1),
        };
        let mut created = 0;
        for s in first..first + count {
            if !self.nodes[base + s].present {
                self.nodes[base + s] = FRESH;
                created += 1;
                if depth < self.jump.levels {
                    // The new child is now the deepest node for its part of the table.
                    let child_len = self.jump.span(depth + 1);
                    let start = self.jump.index(value) / self.jump.span(depth)
                        * self.jump.span(depth)
                        + s * child_len;
                    self.jump.node[start..start + child_len].fill((base + s) as u32);
                    self.jump.depth[start..start + child_len].fill((depth + 1) as u8);
                }
            }
        }
        self.live_nodes += created;
        self.peak_nodes = self.peak_nodes.max(self.live_nodes);
        self.stats.splits += 1;
        self.stats.nodes_created += created;
        Ok(())
    }

    fn alloc_block(&mut self) -> Result<u32, Error> {
        if let Some(block) = self.free_blocks.pop() {
            return Ok(block);
        }
        let block = self.nodes.len() / self.geo.b as usize;
        let b = self.geo.b as usize;
        if (self.nodes.len() + b) as u64 > u64::from(NONE) {
            return Err(Error::CapacityExceeded {
                nodes: self.live_nodes,
            });
        }
        if self.nodes.len() + b > self.nodes.capacity() && self.arena_limit != usize::MAX {
            // grow by doubling, but never past the bounded arena's limit
            let want = (self.nodes.capacity() * 2)
                .min(self.arena_limit)
                .max(self.nodes.len() + b);
            self.nodes.reserve_exact(want - self.nodes.len());
        }
        self.nodes
            .extend(std::iter::repeat_n(ABSENT, self.geo.b as usize));
        Ok(block as u32)
    }

    fn free_block(&mut self, block: u32) {
        let base = (block * self.geo.b) as usize;
        self.nodes[base..base + self.geo.b as usize].fill(ABSENT);
        self.free_blocks.push(block);
    }

    /// Counts a slice of events, combining identical values within windows of
    /// [`COMBINE_WINDOW`] events before touching the tree (the stage-0 buffer of RAP §3.3).
    ///
    /// All-or-nothing: if any value is outside the universe, or the count would overflow,
    /// nothing is added. The result obeys every guarantee; it may differ in shape from adding
    /// the events one by one, because updates reach the tree grouped and reordered within a window.
    pub fn add_batch(&mut self, values: &[u64]) -> Result<(), Error> {
        if self.geo.bits < 64 {
            if let Some(&value) = values.iter().find(|&&v| v > self.geo.max_value) {
                return Err(Error::ValueOutOfRange {
                    value,
                    bits: self.config.bits(),
                });
            }
        }
        let total = values.len() as u64;
        if self.n.checked_add(total).is_none() {
            return Err(Error::CountOverflow {
                n: self.n,
                weight: total,
            });
        }
        let mut combiner = std::mem::take(&mut self.combiner);
        let mut result = Ok(());
        for window in values.chunks(COMBINE_WINDOW) {
            if combiner.bypass > 0 {
                // The last combined window was nearly all distinct: combining would not pay.
                combiner.bypass -= 1;
                for group in window.chunks(GROUP) {
                    if let Err(e) = self.add_group(group) {
                        result = Err(e);
                    }
                }
            } else {
                combiner.fill(window);
                if combiner.order.len() * 8 > window.len() * 7 {
                    combiner.bypass = BYPASS_WINDOWS;
                }
                for (value, weight) in combiner.drain() {
                    // n + weight cannot overflow: checked for the whole batch above.
                    let n = self.n + weight;
                    if let Err(e) = self.add_unchecked(value, weight, n) {
                        result = Err(e);
                    }
                }
            }
            if result.is_err() {
                break;
            }
        }
        self.combiner = combiner;
        result
    }

    /// Runs a merge batch now, without changing the schedule (useful before a final report).
    pub fn compact(&mut self) {
        self.merge_pass();
    }

    /// Scheduled merge batch (RAP §3.1): runs at `E`, then after intervals growing by `q`.
    fn merge_batch(&mut self) {
        self.merge_pass();
        self.last_merge_n = self.n;
        let q = u64::from(self.config.merge_ratio());
        while self.next_merge <= self.n {
            self.merge_interval = self.merge_interval.saturating_mul(q);
            self.next_merge = self.next_merge.saturating_add(self.merge_interval);
            if self.next_merge == u64::MAX {
                break;
            }
        }
    }

    fn merge_pass(&mut self) {
        let before = self.live_nodes;
        self.stats.merge_batches += 1;
        self.stats.merge_scanned += before;
        self.fold_subtree(ROOT, 0);
        self.merge_log.push(MergeRecord {
            n: self.n,
            nodes_before: before,
            nodes_after: self.live_nodes,
        });
        self.path_len = 1;
        self.path_from = 0;
        self.merge_epoch += 1;
        if self.free_blocks.len() * 4 >= self.nodes.len() / self.geo.b as usize {
            self.compact_arena();
        }
        self.rebuild_jump();
    }

    /// Moves the live blocks to the front of a new arena of exactly their size, in depth-first
    /// order, and drops the free ones: what merge batches fold (the exact warm-up's chains,
    /// above all) goes back to the allocator instead of waiting for reuse. Runs after a merge
    /// batch that left a quarter or more of the arena's blocks free; node ids change, so the
    /// caller resets the lookup path and rebuilds the jump table.
    fn compact_arena(&mut self) {
        let b = self.geo.b as usize;
        let used = self.nodes.len() / b - self.free_blocks.len();
        let mut nodes = Vec::with_capacity(used * b);
        nodes.extend_from_slice(&self.nodes[..b]); // block 0: the root
                                                   // nodes[i] for i in `next..` still point into the old arena
        let mut next = 0;
        while next < nodes.len() {
            let old = nodes[next].children;
            if nodes[next].present && old != NONE {
                let new = (nodes.len() / b) as u32;
                let base = old as usize * b;
                nodes.extend_from_slice(&self.nodes[base..base + b]);
                nodes[next].children = new;
            }
            next += 1;
        }
        debug_assert_eq!(nodes.len(), used * b);
        self.nodes = nodes;
        self.free_blocks = Vec::new();
    }

    /// Post-order merge (RAP §2.2 "Merge"): after its children are processed, a node folds
    /// its leaf children into itself, lightest first, while its count stays ≤ τ. Whatever does
    /// not fit stays as a (possibly partial) child set.
    fn fold_subtree(&mut self, node: u32, depth: u32) {
        let block = self.nodes[node as usize].children;
        if block == NONE {
            return;
        }
        let base = block * self.geo.b;
        let fanout = self.geo.fanout[depth as usize];
        for s in 0..fanout {
            if self.nodes[(base + s) as usize].present {
                self.fold_subtree(base + s, depth + 1);
            }
        }
        let mut leaves = [(0u64, 0u32); 16];
        let mut m = 0;
        let mut present = 0;
        for s in 0..fanout {
            let c = self.nodes[(base + s) as usize];
            if c.present {
                present += 1;
                if c.children == NONE {
                    leaves[m] = (c.count, base + s);
                    m += 1;
                }
            }
        }
        leaves[..m].sort_unstable();
        for &(count, child) in &leaves[..m] {
            let parent = &mut self.nodes[node as usize];
            if parent.count + count > self.tau {
                break;
            }
            parent.count += count;
            self.nodes[child as usize] = ABSENT;
            present -= 1;
            self.live_nodes -= 1;
            self.stats.nodes_folded += 1;
        }
        if present == 0 {
            self.nodes[node as usize].children = NONE;
            self.free_block(block);
        }
    }

    /// Adds every counter of `other` into this tree (sharded or per-thread profiling).
    ///
    /// The result is the union of both trees' shapes with summed counts, then one merge batch.
    /// Its bound is that of one tree over the concatenated stream: every non-unit node holds at
    /// most τ(n₁) + τ(n₂) ≤ τ(n₁ + n₂), so `lower ≤ true ≤ lower + ε·(n₁ + n₂)` still holds.
    pub fn merge(&mut self, other: &RapTree) -> Result<(), Error> {
        if self.config != other.config {
            return Err(Error::ConfigMismatch(format!(
                "{:?} vs {:?}",
                self.config, other.config
            )));
        }
        let n = self.n.checked_add(other.n).ok_or(Error::CountOverflow {
            n: self.n,
            weight: other.n,
        })?;
        self.union_from(other, ROOT, ROOT, 0)?;
        self.n = n;
        self.refresh_threshold();
        self.stats.tree_updates += other.stats.tree_updates;
        self.stats.splits += other.stats.splits;
        self.stats.nodes_created += other.stats.nodes_created;
        self.stats.merge_batches += other.stats.merge_batches;
        self.stats.merge_scanned += other.stats.merge_scanned;
        self.stats.nodes_folded += other.stats.nodes_folded;
        self.merge_batch();
        Ok(())
    }

    fn union_from(
        &mut self,
        other: &RapTree,
        mine: u32,
        theirs: u32,
        depth: u32,
    ) -> Result<(), Error> {
        self.nodes[mine as usize].count += other.nodes[theirs as usize].count;
        let their_block = other.nodes[theirs as usize].children;
        if their_block == NONE {
            return Ok(());
        }
        let fanout = self.geo.fanout[depth as usize];
        for s in 0..fanout {
            let t = their_block * self.geo.b + s;
            if !other.nodes[t as usize].present {
                continue;
            }
            let mut my_block = self.nodes[mine as usize].children;
            if my_block == NONE {
                my_block = self.alloc_block()?;
                self.nodes[mine as usize].children = my_block;
            }
            let m = my_block * self.geo.b + s;
            if !self.nodes[m as usize].present {
                self.nodes[m as usize] = FRESH;
                self.live_nodes += 1;
                self.peak_nodes = self.peak_nodes.max(self.live_nodes);
            }
            self.union_from(other, m, t, depth + 1)?;
        }
        Ok(())
    }

    /// Child slots of `node` at `depth`: `(slot index, node)` for present children.
    pub(crate) fn children(&self, node: u32, depth: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let block = self.nodes[node as usize].children;
        let fanout = if block == NONE || depth >= self.geo.height {
            0
        } else {
            self.geo.fanout[depth as usize]
        };
        (0..fanout).filter_map(move |s| {
            let id = block * self.geo.b + s;
            self.nodes[id as usize].present.then_some((s, id))
        })
    }

    /// Adds a present child in `slot` of `parent` (decoders only; they validate).
    pub(crate) fn decode_add_child(
        &mut self,
        parent: u32,
        depth: u32,
        slot: u32,
        count: u64,
    ) -> Result<u32, Error> {
        let mut block = self.nodes[parent as usize].children;
        if block == NONE {
            block = self.alloc_block()?;
            self.nodes[parent as usize].children = block;
        }
        let id = block * self.geo.b + slot;
        debug_assert!(slot < self.geo.fanout[depth as usize]);
        self.nodes[id as usize] = Node {
            count,
            children: NONE,
            present: true,
        };
        self.live_nodes += 1;
        Ok(id)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn decode_finish(
        &mut self,
        n: u64,
        next_merge: u64,
        merge_interval: u64,
        last_merge_n: u64,
        peak_nodes: u64,
        stats: Stats,
    ) {
        self.n = n;
        self.next_merge = next_merge;
        self.merge_interval = merge_interval;
        self.last_merge_n = last_merge_n;
        self.peak_nodes = peak_nodes.max(self.live_nodes);
        self.stats = stats;
        self.refresh_threshold();
        self.path_len = 1;
        self.path_from = 0;
        self.rebuild_jump();
    }
}

/// Direct-mapped index of the top levels: for each prefix of the top `levels · log₂b` bits
/// (at most 12), the deepest existing node at depth ≤ `levels` containing that prefix's range.
/// Splits update it in place; merge batches and decoding rebuild it. A lookup then descends
/// only below that node.
#[derive(Clone, Debug, Default)]
struct JumpTable {
    levels: u32,
    log2b: u32,
    shift: u32,
    node: Vec<u32>,
    depth: Vec<u8>,
}

impl JumpTable {
    /// Bits of prefix the table indexes, at most.
    const MAX_BITS: u32 = 12;

    fn new(geo: &Geometry, enabled: bool) -> Self {
        let levels = if enabled {
            (Self::MAX_BITS / geo.log2b).min(geo.bits / geo.log2b)
        } else {
            0
        };
        let bits = levels * geo.log2b;
        JumpTable {
            levels,
            log2b: geo.log2b,
            shift: geo.bits - bits,
            node: vec![ROOT; 1 << bits],
            depth: vec![0; 1 << bits],
        }
    }

    /// Table slots covered by one node at `depth` (≤ levels).
    #[inline]
    fn span(&self, depth: u32) -> usize {
        1 << ((self.levels - depth) * self.log2b)
    }

    #[inline]
    fn index(&self, value: u64) -> usize {
        // shift < 64 whenever levels > 0 (levels·log₂b ≥ 1 bit is indexed)
        (value >> self.shift) as usize
    }

    #[inline]
    fn get(&self, value: u64) -> Option<(u32, u8)> {
        if self.levels == 0 {
            return None;
        }
        let i = self.index(value);
        Some((self.node[i], self.depth[i]))
    }
}

/// Most bytes the jump table and the stage-0 buffer of a tree of `geo` ever hold.
pub(crate) fn fixed_bytes_max(geo: &Geometry) -> u64 {
    let jump = JumpTable::new(geo, true);
    let jump = jump.node.capacity() * 4 + jump.depth.capacity();
    // the buffer: at most 2 × COMBINE_WINDOW slots of key, count and stamp, and its order
    // list of half the slots
    let slots = 2 * COMBINE_WINDOW;
    (jump + slots * (8 + 8 + 4) + slots / 2 * 4) as u64
}

/// Stage-0 combining buffer: a small open-addressing table that counts identical values of one
/// window and hands them out in first-seen order (deterministic). It starts at
/// [`Combiner::MIN_SLOTS`] and doubles when half full, so it holds what the stream's windows
/// need (at most 2 × [`COMBINE_WINDOW`] slots), not a fixed maximum.
#[derive(Clone, Debug, Default)]
struct Combiner {
    keys: Vec<u64>,
    counts: Vec<u64>,
    stamp: Vec<u32>,
    /// `64 − log₂(slots)`: the hash's top bits index the table.
    shift: u32,
    generation: u32,
    order: Vec<u32>,
    /// Windows left to add without combining.
    bypass: u32,
}

impl Combiner {
    const MIN_SLOTS: usize = 64;

    fn fill(&mut self, window: &[u64]) {
        if self.keys.is_empty() {
            self.resize(Self::MIN_SLOTS);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
        self.order.clear();
        for &v in window {
            if (self.order.len() + 1) * 2 > self.keys.len() {
                self.grow();
            }
            self.insert(v, 1);
        }
    }

    /// Empty tables of `slots` (a power of two) slots.
    fn resize(&mut self, slots: usize) {
        self.keys = vec![0; slots];
        self.counts = vec![0; slots];
        self.stamp = vec![0; slots];
        self.shift = 64 - slots.trailing_zeros();
        self.generation = 1;
        self.order = Vec::with_capacity(slots / 2);
    }

    /// Twice the slots, keeping this window's values in their first-seen order.
    fn grow(&mut self) {
        let entries: Vec<(u64, u64)> = self.drain().collect();
        self.resize(self.keys.len() * 2);
        for (v, c) in entries {
            self.insert(v, c);
        }
    }

    #[inline]
    fn insert(&mut self, v: u64, count: u64) {
        let mask = self.keys.len() - 1;
        let mut i = (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize & mask;
        loop {
            if self.stamp[i] != self.generation {
                self.stamp[i] = self.generation;
                self.keys[i] = v;
                self.counts[i] = count;
                self.order.push(i as u32);
                return;
            }
            if self.keys[i] == v {
                self.counts[i] += count;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Bytes the buffer holds.
    fn bytes(&self) -> usize {
        self.keys.capacity() * 8
            + self.counts.capacity() * 8
            + self.stamp.capacity() * 4
            + self.order.capacity() * 4
    }

    fn drain(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.order
            .iter()
            .map(|&i| (self.keys[i as usize], self.counts[i as usize]))
    }
}

#[cfg(test)]
mod arena_tests {
    use super::*;

    /// A spread-out stream: its exact warm-up builds a chain of splits per distinct value,
    /// which the merge batches fold away.
    fn spread(n: u64) -> Vec<u64> {
        (0..n)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 7))
            .collect()
    }

    #[test]
    fn compaction_keeps_the_tree_and_returns_the_warm_up_blocks() {
        let mut t = RapTree::new(Config::default());
        for c in spread(200_000).chunks(4096) {
            t.add_batch(c).unwrap();
        }
        let before = (t.to_bytes(), t.nodes(), t.node_count());
        let held = t.nodes.capacity();
        t.compact_arena();
        t.path_len = 1;
        t.path_from = 0;
        t.rebuild_jump();
        assert_eq!((t.to_bytes(), t.nodes(), t.node_count()), before);
        assert!(t.free_blocks.is_empty());
        assert!(t.nodes.capacity() <= held);
        // the warm-up peaked far above what the tree keeps, and the arena shrank with it
        let slots = t.nodes.len() as u64;
        assert!(t.peak_nodes() > 8 * t.node_count(), "{}", t.peak_nodes());
        assert!(
            slots <= u64::from(t.geo.b) * t.node_count(),
            "{slots} slots"
        );
        // and it keeps counting the same as before
        let mut u = t.clone();
        t.add_batch(&[1, 2, 3, 1 << 40]).unwrap();
        for v in [1, 2, 3, 1 << 40] {
            u.add(v).unwrap();
        }
        assert_eq!(t.nodes(), u.nodes());
    }

    #[test]
    fn the_combining_buffer_grows_with_the_windows_distinct_values() {
        let mut t = RapTree::new(Config::default());
        t.add_batch(&[7; 4096]).unwrap();
        let small = t.combiner.bytes();
        assert!(small < 2_000, "{small} bytes for one distinct value");
        let wide: Vec<u64> = (0..1024).map(|i| i * 977).collect();
        t.add_batch(&wide).unwrap();
        assert!(t.combiner.keys.len() <= 2 * COMBINE_WINDOW);
        assert_eq!(t.n(), 4096 + 1024);
        // a window with more distinct values than the table had slots is still combined exactly
        let est = t.estimate(7, 7).unwrap();
        assert_eq!(est.lower, 4096);
    }
}
