//! `outcrop-profile`: the exact profile a perf or samply user looks for first, from every
//! retired instruction of a run.
//!
//! * [`Profiler`]: an observer that counts every retired instruction (and, under the timing
//!   model, its cycles, mispredictions and cache misses) by instruction address and by
//!   call-tree node, following calls and returns.
//! * [`Profile`]: the result: per function self and total ("inclusive") counts, the call
//!   tree (a flame graph's data), and per-instruction counts.
//! * [`lines`]: source lines from DWARF line tables, to aggregate the per-instruction counts
//!   by file and line.
//!
//! Nothing here samples: every count is exact, so the flat profile's self instructions sum
//! to the run's instruction count, and its self cycles to the last instruction's retire
//! cycle. docs/profile.md describes the call-tree rules (calls, returns, tail calls,
//! `longjmp`) and the limits.
//!
//! # Example
//! ```
//! use outcrop_events::record::{Observer, Retire};
//! use outcrop_profile::Profiler;
//! use outcrop_rv::symbols::Symbols;
//!
//! // no symbol table: every instruction belongs to `[unknown]`
//! let mut p = Profiler::new(Symbols::default());
//! for pc in [0x1000u64, 0x1004, 0x1008] {
//!     let r = Retire { pc, len: 4, next_pc: pc + 4, ..Retire::default() };
//!     p.retire(&r, None);
//! }
//! let profile = p.finish_profile();
//! assert_eq!(profile.instructions, 3);
//! assert_eq!(profile.functions[0].self_counts.instructions, 3);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod inline;
pub mod lines;
mod processes;
pub mod sampled;
pub mod unwind;

pub use processes::{ProcessProfile, MAX_PROCESS_PROFILES};

use outcrop_events::record::{BranchKind, Control, Mapping, Observer, Retire, Stamp, TimingEvents};
use outcrop_rv::symbols::Symbols;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Deepest call stack kept: deeper calls are folded into the frame at this depth (their
/// counts stay exact; only the tree stops growing). Counted in [`Profile::folded_calls`].
pub const MAX_DEPTH: usize = 1024;

/// Most call-tree nodes kept: beyond, a new callee's counts go to its caller's node.
/// Counted in [`Profile::folded_calls`].
pub const MAX_NODES: usize = 1 << 20;

/// How far down the stack a return looks for the frame it returns to (a `longjmp` or an
/// exception unwinds several frames at once).
pub const RETURN_SEARCH: usize = 64;

/// Most per-address slots one function gets (2^20: 48 MiB of counts); a symbol table that
/// declares a larger function sends the addresses past it to a hash map, so a file cannot
/// make a large allocation.
pub const MAX_SLOTS: u64 = 1 << 20;

/// What one instruction, function, line or call-tree node accounts for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    /// Retired instructions.
    pub instructions: u64,
    /// Cycles (timing model only): each instruction is charged the cycles from the previous
    /// instruction's retirement to its own, so a stall is charged to the instruction the
    /// core waited for, as a retirement-based sampling profiler would charge it.
    pub cycles: u64,
    /// Branches and jumps whose direction or target was mispredicted (timing model only).
    pub mispredicts: u64,
    /// Instruction fetches that missed the L1 instruction cache (timing model only).
    pub l1i_misses: u64,
    /// Data accesses that missed the L1 data cache (timing model only).
    pub l1d_misses: u64,
    /// Instruction fetches and data accesses that also missed the L2 (timing model only; an
    /// instruction whose fetch and access both missed counts twice).
    pub l2_misses: u64,
}

impl Counts {
    #[inline(always)]
    fn add_retire(&mut self, cycles: u64, ev: TimingEvents) {
        self.instructions += 1;
        self.cycles += cycles;
        self.add_events(ev);
    }

    /// Adds the mispredictions and cache misses of `ev`.
    #[inline(always)]
    fn add_events(&mut self, ev: TimingEvents) {
        if ev.0 != 0 {
            self.mispredicts += u64::from(ev.contains(TimingEvents::MISPREDICT));
            self.l1i_misses += u64::from(ev.contains(TimingEvents::L1I_MISS));
            self.l1d_misses += u64::from(ev.contains(TimingEvents::L1D_MISS));
            self.l2_misses += u64::from(ev.contains(TimingEvents::L2I_MISS))
                + u64::from(ev.contains(TimingEvents::L2D_MISS));
        }
    }

    /// Adds every field of `o`.
    pub fn add(&mut self, o: &Counts) {
        self.instructions += o.instructions;
        self.cycles += o.cycles;
        self.mispredicts += o.mispredicts;
        self.l1i_misses += o.l1i_misses;
        self.l1d_misses += o.l1d_misses;
        self.l2_misses += o.l2_misses;
    }
}

/// The root of the call tree (the program itself, before its first instruction).
const ROOT: u32 = u32::MAX;
/// Function id of code outside every function.
const UNKNOWN: u32 = u32::MAX - 1;

struct Node {
    parent: u32,
    /// Function id in the [`Symbols`] (`unknown` for code outside every function), or ROOT
    /// for the root and for each thread's root.
    function: u32,
    /// The thread whose calls reached it (creation index; 0 is the main thread).
    thread: u32,
    counts: Counts,
    calls: u64,
    /// The last child looked up under it: (key, node), or `NO_MEMO` (a call from the same
    /// place to the same function again costs no hash lookup).
    memo: (u32, u32),
}

/// [`Node::memo`] before any lookup (no key is `u32::MAX`: thread keys stay below ROOT).
const NO_MEMO: (u32, u32) = (u32::MAX, 0);

/// Key in `children` of thread `index`'s root under the program's root (never a function id).
fn thread_key(index: u32) -> u32 {
    ROOT - 1 - index.min(ROOT / 2)
}

/// Where a thread is in its calls, besides its stack.
#[derive(Clone, Copy)]
struct Position {
    cur_node: u32,
    cur_fn: u32,
    lo: u64,
    hi: u64,
    overflow: u64,
    pending: Pending,
}

/// The call state where a signal handler was entered (the stack below `depth` is the
/// interrupted code's and stays as it is).
struct SignalMark {
    depth: usize,
    at: Position,
}

/// A thread's call-tracking state while another thread runs.
struct Parked {
    stack: Vec<Frame>,
    at: Position,
}

struct Frame {
    /// The caller's node.
    node: u32,
    /// Where the callee returns to.
    ret: u64,
    /// The stack pointer at the call (0: not known). The frame is gone once the stack
    /// pointer rises above it, whatever the program did to get there (`longjmp`, an
    /// unwinder): the caller's own frame was below this address.
    sp: u64,
}

/// Entries of the cache of [`Profiler::enter`] results.
const ENTER_CACHE: usize = 4096;

/// One remembered result of [`Profiler::enter`]: the function (and its bounds) of `pc`.
#[derive(Clone, Copy, Default)]
struct Entered {
    valid: bool,
    pc: u64,
    function: u32,
    lo: u64,
    hi: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pending {
    None,
    Call {
        ret: u64,
        sp: u64,
    },
    Return {
        sp: u64,
    },
    /// An indirect jump that left the stack above the innermost frame: frames are unwound.
    Unwind {
        sp: u64,
    },
}

/// Gives the symbols of an object mapped during the run (a shared library), placed at its
/// load address, or `None` when it cannot be read (its code is then `[unknown]`). The run
/// layer supplies it: the profiler itself reads no files.
pub type ObjectSymbols = Box<dyn FnMut(&Mapping<'_>) -> Option<Symbols> + Send>;

/// A shared object's functions: ids `base..base + symbols.len()`.
struct Object {
    lo: u64,
    hi: u64,
    symbols: Symbols,
    base: u32,
    /// `@libc.so.6`, appended to its function names.
    suffix: String,
}

/// Most objects whose symbols a profile keeps (a guest mapping code without end cannot grow
/// the table past it).
const MAX_OBJECTS: usize = 1024;

/// An observer that builds the exact profile of the instructions it sees (see the crate
/// docs). Wants retire records; uses timing stamps when they come.
pub struct Profiler {
    symbols: Symbols,
    /// Objects mapped during the run, newest last (their functions follow the program's).
    objects: Vec<Object>,
    resolver: Option<ObjectSymbols>,
    /// Function id for addresses outside every function.
    unknown: u32,
    /// Per function, one slot per 2-byte instruction position, allocated when first entered.
    pcs: Vec<Vec<Counts>>,
    /// Counts of instructions outside every function, by address.
    unknown_pcs: FxHashMap<u64, Counts>,
    /// [`ByBlocks`]' fast path: instructions per slot of `pcs` (8 bytes a slot rather than a
    /// [`Counts`]' 48, so a hot function's slots stay in cache), added in at the end.
    block_counts: Vec<Vec<u64>>,
    /// The function `[lo, hi)` that the last instruction was in.
    cur_fn: u32,
    lo: u64,
    hi: u64,
    nodes: Vec<Node>,
    children: FxHashMap<(u32, u32), u32>,
    stack: Vec<Frame>,
    cur_node: u32,
    /// Calls made at [`MAX_DEPTH`] not yet returned from.
    overflow: u64,
    folded_calls: u64,
    pending: Pending,
    last_retire: u64,
    timed: bool,
    instructions: u64,
    enter_cache: Box<[Entered; ENTER_CACHE]>,
    /// The running thread (creation index).
    thread: u32,
    /// The call state of the threads not running.
    parked: FxHashMap<u32, Parked>,
    /// The running thread's call state when each signal handler it is in was entered.
    signals: FxHashMap<u32, std::collections::VecDeque<SignalMark>>,
    /// The timeline's marks so far, and when the next is due.
    timeline: TimelineState,
    /// The stack pointer after the last taken call, return or indirect jump (0: unknown).
    sp: u64,
    /// [`ByBlocks`]: per thread switched out in the middle of a block, that block's start and
    /// how many of its instructions were counted then ([`Observer::block_part`]).
    parts: FxHashMap<u32, (u64, usize)>,
    /// The other processes' profilers, once the source named a process
    /// ([`Observer::process`]).
    processes: Option<Box<processes::Processes>>,
    /// The process and program this profiler profiles, once known.
    image: Option<processes::ImageInfo>,
}

/// What a run looks like over time: every [`Timeline::interval`] retired instructions
/// (cycles when timed) the profiler marks the counts so far and the call chain on top of the
/// running thread's stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// Instructions (cycles when timed) between two marks; 0: no timeline. Doubles when the
    /// marks reach [`MAX_MARKS`] (every other mark is dropped).
    pub interval: u64,
    /// Whether time is cycles (a timing model ran) rather than instructions.
    pub cycles: bool,
    /// The marks, in time order; the last is the end of the run.
    pub marks: Vec<Mark>,
}

/// One mark of the [`Timeline`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Mark {
    /// The run's counts up to this mark (the counts of an interval are the difference of two
    /// marks').
    pub at: Counts,
    /// The call-tree node on top of the running thread's stack (an index into
    /// [`Profile::nodes`]).
    pub node: u32,
    /// The running thread (creation index).
    pub thread: u32,
}

/// Most marks a timeline keeps before it halves them and doubles its interval.
pub const MAX_MARKS: usize = 1 << 16;

/// The timeline as it is being recorded.
struct TimelineState {
    interval: u64,
    /// Instructions or cycles at which the next mark is due (`u64::MAX`: none).
    next: u64,
    marks: Vec<Mark>,
    /// The run's mispredictions and cache misses so far (instructions and cycles are kept
    /// anyway).
    events: Counts,
}

impl Default for TimelineState {
    fn default() -> Self {
        TimelineState {
            interval: 0,
            next: u64::MAX,
            marks: Vec::new(),
            events: Counts::default(),
        }
    }
}

impl Profiler {
    /// A profiler that names code with `symbols` (an empty table puts everything in
    /// `[unknown]`).
    pub fn new(symbols: Symbols) -> Profiler {
        let n = symbols.len();
        let unknown = UNKNOWN;
        Profiler {
            symbols,
            objects: Vec::new(),
            resolver: None,
            unknown,
            pcs: (0..n).map(|_| Vec::new()).collect(),
            unknown_pcs: FxHashMap::default(),
            block_counts: Vec::new(),
            cur_fn: unknown,
            lo: 0,
            hi: 0,
            nodes: vec![Node {
                parent: 0,
                function: ROOT,
                thread: 0,
                counts: Counts::default(),
                calls: 0,
                memo: NO_MEMO,
            }],
            children: FxHashMap::default(),
            stack: Vec::new(),
            cur_node: 0,
            overflow: 0,
            folded_calls: 0,
            pending: Pending::None,
            last_retire: 0,
            timed: false,
            instructions: 0,
            enter_cache: Box::new([Entered::default(); ENTER_CACHE]),
            thread: 0,
            parked: FxHashMap::default(),
            signals: FxHashMap::default(),
            timeline: TimelineState::default(),
            parts: FxHashMap::default(),
            sp: 0,
            processes: None,
            image: None,
        }
    }

    /// Records a [`Timeline`]: a mark every `interval` retired instructions, or cycles when
    /// a timing model runs (0: none).
    pub fn with_timeline(mut self, interval: u64) -> Profiler {
        self.timeline = TimelineState {
            interval,
            next: if interval == 0 { u64::MAX } else { interval },
            ..TimelineState::default()
        };
        self
    }

    /// The run's counts so far.
    fn counts_now(&self) -> Counts {
        Counts {
            instructions: self.instructions,
            cycles: self.last_retire,
            ..self.timeline.events
        }
    }

    /// Marks the timeline now (its next mark is due) and schedules the next.
    #[cold]
    #[inline(never)]
    fn mark(&mut self) {
        self.mark_at(self.counts_now());
    }

    /// Marks the timeline at `at` (the counts when the mark fell due) and schedules the next.
    fn mark_at(&mut self, at: Counts) {
        let mark = Mark {
            at,
            node: self.cur_node,
            thread: self.thread,
        };
        let t = &mut self.timeline;
        t.marks.push(mark);
        if t.marks.len() >= MAX_MARKS {
            // keep every other mark (the 2nd, 4th, …: they fall on the doubled interval)
            let kept: Vec<Mark> = t.marks.iter().skip(1).step_by(2).copied().collect();
            t.marks = kept;
            t.interval = t.interval.saturating_mul(2);
        }
        let now = if self.timed {
            at.cycles
        } else {
            at.instructions
        };
        let t = &mut self.timeline;
        // the next multiple of the interval after now
        t.next = (now / t.interval.max(1))
            .saturating_add(1)
            .saturating_mul(t.interval.max(1));
    }

    /// Names the code of objects mapped during the run (shared libraries) with the symbols
    /// `resolver` gives for each ([`Observer::mapped`]): their functions are named
    /// `name@object` (`memcpy@libc.so.6`). Without it, their code is `[unknown]`.
    pub fn with_objects(mut self, resolver: ObjectSymbols) -> Profiler {
        self.resolver = Some(resolver);
        self
    }

    /// The name, mangled name, start and size of function `id` (the program's, then the
    /// objects').
    fn function_info(&self, id: u32) -> Option<(String, Option<String>, u64, u64)> {
        if let Some(f) = self.symbols.function(outcrop_rv::symbols::FunctionId(id)) {
            return Some((
                f.name.to_string(),
                f.mangled.map(str::to_string),
                f.start,
                f.size,
            ));
        }
        let o = self
            .objects
            .iter()
            .rev()
            .find(|o| id >= o.base && id - o.base < o.symbols.len() as u32)?;
        let f = o
            .symbols
            .function(outcrop_rv::symbols::FunctionId(id - o.base))?;
        Some((
            format!("{}{}", f.name, o.suffix),
            f.mangled.map(|m| format!("{m}{}", o.suffix)),
            f.start,
            f.size,
        ))
    }

    /// Instructions seen so far.
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Finds the function of `pc` and makes it current.
    #[cold]
    fn enter(&mut self, pc: u64) {
        // functions are entered at few addresses (entry points, return addresses), so a
        // small cache keyed by the exact address saves most symbol-table searches
        let way = &mut self.enter_cache[((pc >> 1) as usize) % ENTER_CACHE];
        if way.pc == pc && way.valid {
            (self.cur_fn, self.lo, self.hi) = (way.function, way.lo, way.hi);
            return;
        }
        match self.locate(pc) {
            Some((id, start, size, slotted)) => {
                self.cur_fn = id;
                self.lo = start;
                self.hi = start.saturating_add(size);
                let slots = if slotted { size.div_ceil(2) } else { 0 };
                let v = &mut self.pcs[id as usize];
                if v.is_empty() {
                    // sizes come from the symbol table: cap what one function can claim
                    v.resize(slots.min(MAX_SLOTS) as usize, Counts::default());
                }
            }
            None => {
                self.cur_fn = self.unknown;
                self.lo = 0;
                self.hi = 0;
            }
        }
        self.enter_cache[((pc >> 1) as usize) % ENTER_CACHE] = Entered {
            valid: true,
            pc,
            function: self.cur_fn,
            lo: self.lo,
            hi: self.hi,
        };
    }

    /// The function of `pc`: its id, first byte, size and whether its counts go by slot
    /// (`false`: an object's `[unknown]`, counted by address); `None` outside every object.
    fn locate(&self, pc: u64) -> Option<(u32, u64, u64, bool)> {
        match self.symbols.lookup(pc) {
            Some(f) => Some((f.id.0, f.start, f.size, true)),
            None => self
                .objects
                .iter()
                .rev()
                .find(|o| pc >= o.lo && pc < o.hi)
                .map(|o| match o.symbols.lookup(pc) {
                    Some(f) => (o.base + f.id.0, f.start, f.size, true),
                    None => {
                        // between its functions: the object's own `[unknown]`, for as far
                        // as no function begins (its counts go by address)
                        let (lo, hi) = o.symbols.gap(pc);
                        let (lo, hi) = (lo.max(o.lo), hi.min(o.hi));
                        (o.base + o.symbols.len() as u32, lo, hi - lo, false)
                    }
                }),
        }
    }

    /// The range around `pc` over which [`Profiler::locate`] gives the same answer: the
    /// steady range of the program's symbols, or of the object's, cut at every object's
    /// bounds ([`Observer::range`]).
    fn steady_range(&self, pc: u64) -> (u64, u64) {
        let (mut lo, mut hi) = self.symbols.steady_range(pc);
        if self.symbols.lookup(pc).is_some() {
            return (lo, hi);
        }
        if let Some(o) = self.objects.iter().rev().find(|o| pc >= o.lo && pc < o.hi) {
            let (l, h) = o.symbols.steady_range(pc);
            (lo, hi) = (lo.max(l), hi.min(h));
        }
        for o in &self.objects {
            if o.lo > pc {
                hi = hi.min(o.lo);
            } else if o.hi <= pc {
                lo = lo.max(o.hi);
            } else {
                (lo, hi) = (lo.max(o.lo), hi.min(o.hi));
            }
        }
        (lo, hi)
    }

    /// `count` runs of the instructions of these lengths from `start`, all in one function,
    /// added to their addresses' counts ([`Observer::counted`]).
    fn add_counted(&mut self, start: u64, lens: &[u8], count: u64) {
        let found = self.locate(start);
        let mut pc = start;
        for &l in lens {
            let slot = match found {
                Some((id, lo, size, true)) if pc >= lo => {
                    let v = &mut self.pcs[id as usize];
                    if v.is_empty() {
                        v.resize(size.div_ceil(2).min(MAX_SLOTS) as usize, Counts::default());
                    }
                    v.get_mut(((pc - lo) >> 1) as usize)
                }
                _ => None,
            };
            match slot {
                Some(c) => c.instructions += count,
                None => self.unknown_pcs.entry(pc).or_default().instructions += count,
            }
            pc = pc.wrapping_add(u64::from(l));
        }
    }

    /// `n` instructions of counted blocks from `first` on, in one function
    /// ([`Observer::retired`]): the function, the pending call or return and the node are
    /// settled at `first`, then the counts and the timeline move on as the block path's do.
    fn retired_at(&mut self, first: u64, n: u64) {
        if n == 0 {
            return;
        }
        if self.pending != Pending::None || first < self.lo || first >= self.hi {
            self.resolve(first);
        }
        self.advance(n);
    }

    /// `n` instructions retired in the current node (untimed): the total, the node and the
    /// timeline move on; a mark due among them falls where the retire path puts it (they are
    /// all in one function, so the call chain is the same there).
    #[inline(always)]
    fn advance(&mut self, n: u64) {
        self.instructions += n;
        if let Some(node) = self.nodes.get_mut(self.cur_node as usize) {
            node.counts.instructions += n;
        }
        while self.instructions >= self.timeline.next {
            let at = Counts {
                instructions: self.timeline.next,
                ..Counts::default()
            };
            self.mark_at(at);
        }
    }

    /// The node for `function` called from `parent` (created on first use).
    fn child(&mut self, parent: u32, function: u32) -> u32 {
        self.child_keyed(parent, function, function)
    }

    /// The node under `parent` known by `key`, for `function` (created on first use).
    fn child_keyed(&mut self, parent: u32, key: u32, function: u32) -> u32 {
        if let Some(p) = self.nodes.get(parent as usize) {
            if p.memo.0 == key {
                return p.memo.1;
            }
        }
        if let Some(&n) = self.children.get(&(parent, key)) {
            self.nodes[parent as usize].memo = (key, n);
            return n;
        }
        if self.nodes.len() >= MAX_NODES {
            self.folded_calls += 1;
            return parent;
        }
        let n = self.nodes.len() as u32;
        let thread = self.nodes[parent as usize].thread;
        self.nodes.push(Node {
            parent,
            function,
            thread,
            counts: Counts::default(),
            calls: 0,
            memo: NO_MEMO,
        });
        self.children.insert((parent, key), n);
        self.nodes[parent as usize].memo = (key, n);
        n
    }

    /// Where the running thread is in its calls (besides its stack).
    fn position(&self) -> Position {
        Position {
            cur_node: self.cur_node,
            cur_fn: self.cur_fn,
            lo: self.lo,
            hi: self.hi,
            overflow: self.overflow,
            pending: self.pending,
        }
    }

    /// Puts the running thread back at `p`.
    fn go_to(&mut self, p: Position) {
        self.cur_node = p.cur_node;
        self.cur_fn = p.cur_fn;
        self.lo = p.lo;
        self.hi = p.hi;
        self.overflow = p.overflow;
        self.pending = p.pending;
    }

    /// The root of thread `index`'s calls: the program's root for the main thread, a node of
    /// its own under it for the others.
    fn thread_root(&mut self, index: u32) -> u32 {
        if index == 0 {
            return 0;
        }
        if let Some(&n) = self.children.get(&(0, thread_key(index))) {
            return n;
        }
        let n = self.child_keyed(0, thread_key(index), ROOT);
        if n != 0 {
            self.nodes[n as usize].thread = index;
        }
        n
    }

    /// What the taken transfer `kind` of the instruction that ends at `ret` leaves for the
    /// next instruction to account (with the stack pointer the source gave, `self.sp`).
    #[inline(always)]
    fn transfer(&mut self, kind: Option<BranchKind>, ret: u64) {
        let sp = self.sp;
        match kind {
            Some(BranchKind::Call) => self.pending = Pending::Call { ret, sp },
            Some(BranchKind::Return) => self.pending = Pending::Return { sp },
            // a jump that leaves the stack above the innermost frame left it (longjmp and
            // unwinders jump so on some targets); any other indirect jump costs a compare
            Some(BranchKind::Indirect)
                if sp != 0 && self.stack.last().is_some_and(|f| f.sp != 0 && sp > f.sp) =>
            {
                self.pending = Pending::Unwind { sp }
            }
            _ => {}
        }
    }

    fn call(&mut self, ret: u64, sp: u64) {
        if self.stack.len() >= MAX_DEPTH || self.overflow > 0 {
            self.overflow += 1;
            self.folded_calls += 1;
            return;
        }
        self.stack.push(Frame {
            node: self.cur_node,
            ret,
            sp,
        });
        self.cur_node = self.child(self.cur_node, self.cur_fn);
        self.nodes[self.cur_node as usize].calls += 1;
    }

    fn ret(&mut self, to: u64, sp: u64) {
        if self.overflow > 0 && (sp == 0 || self.stack.last().is_none_or(|f| sp <= f.sp)) {
            // a return from a call folded at the depth limit (a stack pointer above the
            // deepest frame means more than those calls were left: unwound below)
            self.overflow -= 1;
            return;
        }
        let len = self.stack.len();
        let found = self
            .stack
            .iter()
            .rev()
            .take(RETURN_SEARCH)
            .position(|f| f.ret == to);
        if found.is_none() && sp != 0 {
            // a return to an address no frame expects, with the stack pointer known: a
            // longjmp (it ends with `ret` on RISC-V) or an unwinder left frames behind
            self.unwind(sp);
            return;
        }
        // without a stack pointer, a return no frame expects (hand-written code using `ret`
        // as a jump) pops one frame
        let keep = len - found.map_or(1, |i| i + 1).min(len);
        if keep < len {
            self.cur_node = self.stack[keep].node;
            self.stack.truncate(keep);
        }
    }

    /// The stack pointer is now `sp`, and control is in `self.cur_fn` by a transfer no frame
    /// expected: every frame whose call was made below `sp` is gone (their callers' stack is
    /// released), and so is a frame made at `sp` itself when control is back in the function
    /// that made it (a `longjmp` to the `setjmp` of the caller of the function it leaves).
    fn unwind(&mut self, sp: u64) {
        let before = self.stack.len();
        while let Some(f) = self.stack.last() {
            let gone = f.sp != 0
                && (f.sp < sp
                    || (f.sp == sp && self.nodes[f.node as usize].function == self.cur_fn));
            if !gone {
                break;
            }
            self.cur_node = f.node;
            self.stack.pop();
        }
        if self.stack.len() < before {
            self.overflow = 0; // the calls folded above the deepest frame went with it
        }
    }

    /// The profile of everything seen.
    pub fn finish_profile(self) -> Profile {
        Profile::build(self)
    }
}

impl Profiler {
    /// One retired instruction at `pc` of `len` bytes (`taken`: the kind of the branch or
    /// jump it took), charged `cycles` and `ev`: what [`Observer::retire`] does per record
    /// and [`ByBlocks`] per instruction of a block off its fast path.
    #[inline(always)]
    fn count(
        &mut self,
        pc: u64,
        len: u8,
        taken: Option<BranchKind>,
        cycles: u64,
        ev: TimingEvents,
    ) {
        self.instructions += 1;
        let slot = match self.pcs.get_mut(self.cur_fn as usize) {
            Some(v) if self.pending == Pending::None && pc >= self.lo && pc < self.hi => {
                v.get_mut(((pc - self.lo) >> 1) as usize)
            }
            _ => None,
        };
        match slot {
            Some(c) => c.add_retire(cycles, ev),
            None => self.transition(pc, cycles, ev),
        }
        if let Some(n) = self.nodes.get_mut(self.cur_node as usize) {
            n.counts.add_retire(cycles, ev);
        }
        self.timeline.events.add_events(ev);
        if taken.is_some() {
            self.transfer(taken, pc.wrapping_add(u64::from(len)));
        }
        let now = if self.timed {
            self.last_retire
        } else {
            self.instructions
        };
        if now >= self.timeline.next {
            self.mark();
        }
    }

    /// Everything but the common case (the next instruction of the current function, no call
    /// or return pending): a change of function, a call or return to account, code outside
    /// every function. Out of line, so that the common case inlines into the machine's loop
    /// and the record fields the profiler does not read are never computed.
    #[inline(never)]
    fn transition(&mut self, pc: u64, cycles: u64, ev: TimingEvents) {
        self.resolve(pc);
        let slot = if self.cur_fn == self.unknown {
            None
        } else {
            self.pcs[self.cur_fn as usize].get_mut(((pc - self.lo) >> 1) as usize)
        };
        match slot {
            Some(c) => c.add_retire(cycles, ev),
            // outside every function, or past the slots a huge function was given
            None => self
                .unknown_pcs
                .entry(pc)
                .or_default()
                .add_retire(cycles, ev),
        }
    }

    /// What the instruction at `pc` changes before it is counted: the function it is in, the
    /// call or return pending, the call tree's node.
    fn resolve(&mut self, pc: u64) {
        if pc < self.lo || pc >= self.hi {
            self.enter(pc);
        }
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::None => {}
            Pending::Call { ret, sp } => self.call(ret, sp),
            Pending::Return { sp } => self.ret(pc, sp),
            Pending::Unwind { sp } => self.unwind(sp),
        }
        if self.nodes[self.cur_node as usize].function != self.cur_fn && self.overflow == 0 {
            // entered another function without a call: a tail call, a fall-through, or the
            // first instruction: the new function replaces the current frame (a root stays)
            let parent = if self.nodes[self.cur_node as usize].function == ROOT {
                self.cur_node
            } else {
                self.nodes[self.cur_node as usize].parent
            };
            self.cur_node = self.child(parent, self.cur_fn);
            self.nodes[self.cur_node as usize].calls += 1;
        }
        if self.cur_fn == self.unknown {
            // stay on this path for the next instruction too: it has no slots to go to
            self.lo = 0;
            self.hi = 0;
        }
    }
}

impl Observer for Profiler {
    const RETIRE: bool = true;
    const MAPPINGS: bool = true;

    /// A shared object (not the program, whose symbols the profiler was made with): its
    /// functions join the table, named `name@object`.
    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        if m.index == 0 {
            self.name_program(m);
            return Control::Continue;
        }
        if self.objects.len() >= MAX_OBJECTS {
            return Control::Continue;
        }
        let Some(symbols) = self.object_symbols(m) else {
            return Control::Continue;
        };
        let base = self.pcs.len() as u32;
        if base.saturating_add(symbols.len() as u32 + 1) >= UNKNOWN {
            return Control::Continue;
        }
        // its functions, then one id for its code outside them (`[unknown]@object`)
        self.pcs.extend((0..=symbols.len()).map(|_| Vec::new()));
        self.objects.push(Object {
            lo: m.start,
            hi: m.start.saturating_add(m.len),
            symbols,
            base,
            suffix: format!("@{}", m.name()),
        });
        // an address looked up before may now lie in a function
        for e in self.enter_cache.iter_mut() {
            e.valid = false;
        }
        if self.cur_fn == self.unknown {
            (self.lo, self.hi) = (0, 0);
        }
        Control::Continue
    }

    #[inline(always)]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        let (cycles, ev) = match t {
            Some(t) => {
                self.timed = true;
                let c = t.retire.saturating_sub(self.last_retire);
                self.last_retire = self.last_retire.max(t.retire);
                (c, t.events)
            }
            None => (0, TimingEvents::default()),
        };
        let taken = if r.taken { r.transfer } else { None };
        if taken.is_some() {
            self.sp = r.sp;
        }
        self.count(r.pc, r.len, taken, cycles, ev);
        Control::Continue
    }

    /// A handler is entered as if called from the interrupted instruction; `rt_sigreturn`
    /// puts the call state back as it was (whatever the handler and the trampoline did).
    fn signal(&mut self, entered: bool) -> Control {
        if entered {
            let saved = SignalMark {
                depth: self.stack.len(),
                at: self.position(),
            };
            let nested = self.signals.entry(self.thread).or_default();
            if nested.len() >= MAX_DEPTH {
                nested.pop_front(); // handlers left by siglongjmp never return
            }
            nested.push_back(saved);
            // no frame returns to 0: the handler's own return (to the trampoline) pops it
            self.pending = Pending::Call { ret: 0, sp: 0 };
        } else if let Some(p) = self
            .signals
            .get_mut(&self.thread)
            .and_then(std::collections::VecDeque::pop_back)
        {
            if self.stack.len() < p.depth {
                return Control::Continue; // the interrupted frames are gone (a longjmp)
            }
            self.stack.truncate(p.depth);
            self.go_to(p.at);
        }
        Control::Continue
    }

    /// Each (process, image) has its own profile ([`Profiler::finish_processes`]).
    fn process(&mut self, p: &outcrop_events::ProcessSwitch) -> Control {
        self.switch_process(p)
    }

    fn thread(&mut self, index: u32) -> Control {
        if index == self.thread {
            return Control::Continue;
        }
        let now = Parked {
            stack: std::mem::take(&mut self.stack),
            at: self.position(),
        };
        self.parked.insert(self.thread, now);
        self.thread = index;
        let next = match self.parked.remove(&index) {
            Some(p) => p,
            None => Parked {
                stack: Vec::new(),
                at: Position {
                    cur_node: self.thread_root(index),
                    cur_fn: self.unknown,
                    lo: 0,
                    hi: 0,
                    overflow: 0,
                    pending: Pending::None,
                },
            },
        };
        self.stack = next.stack;
        self.go_to(next.at);
        Control::Continue
    }
}

/// The exact profile from basic blocks and taken branches instead of retire records, for
/// untimed runs: the machine's block engine and compiling tier deliver these (with each
/// block's instruction lengths, [`Observer::BLOCK_LENS`]), so the profiled program runs at
/// their speed. The profile is the one [`Profiler`] builds from retire records of the same
/// run, equal in every field (checked on every bundled workload by the run layer's tests);
/// it has no cycles or cache events, which need the timing model's retire records.
///
/// A block that lies in the current function, entered without a pending call or return, is
/// counted in one pass over its instruction lengths; any other block goes instruction by
/// instruction through the same code as a retire record.
pub struct ByBlocks<'a> {
    profiler: &'a mut Profiler,
    /// The taken branch or jump reported for the block about to end: (its pc, its kind).
    taken: Option<(u64, BranchKind)>,
}

impl Profiler {
    /// This profiler, fed from basic blocks ([`ByBlocks`]).
    pub fn by_blocks(&mut self) -> ByBlocks<'_> {
        ByBlocks {
            profiler: self,
            taken: None,
        }
    }
}

impl ByBlocks<'_> {
    /// The end of a block whose first `done` instructions were counted at a thread switch
    /// ([`Observer::block_part`]): the rest, instruction by instruction, and the taken
    /// transfer at its end.
    fn block_rest(&mut self, start: u64, lens: &[u8], done: usize) -> Control {
        let done = done.min(lens.len());
        let mut pc = start.wrapping_add(lens[..done].iter().map(|&l| u64::from(l)).sum::<u64>());
        let last = lens.len() - 1;
        if done > last {
            // every instruction was counted: only the transfer at its end is left
            let last_pc = pc.wrapping_sub(u64::from(lens[last]));
            let taken = self.taken_at(last_pc);
            self.profiler.transfer(taken, pc);
            return Control::Continue;
        }
        for (i, &l) in lens.iter().enumerate().skip(done) {
            let taken = if i == last { self.taken_at(pc) } else { None };
            self.profiler
                .count(pc, l, taken, 0, TimingEvents::default());
            pc = pc.wrapping_add(u64::from(l));
        }
        Control::Continue
    }

    /// The kind of the taken transfer at `pc` (the block's last instruction), if any.
    #[inline(always)]
    fn taken_at(&mut self, pc: u64) -> Option<BranchKind> {
        match self.taken.take() {
            Some((from, kind)) if from == pc => Some(kind),
            _ => None,
        }
    }
}

impl Observer for ByBlocks<'_> {
    const BLOCKS: bool = true;
    const BLOCK_LENS: bool = true;
    const BRANCHES: bool = true;
    const STACK: bool = true;
    const MAPPINGS: bool = true;
    const COUNTS: bool = true;
    const CALLS: bool = true;

    /// Where the profiler's function stays the same.
    fn range(&mut self, pc: u64) -> (u64, u64) {
        self.profiler.steady_range(pc)
    }

    fn counted(&mut self, start: u64, lens: &[u8], _classes: &[u32; 8], count: u64) -> Control {
        self.profiler.add_counted(start, lens, count);
        Control::Continue
    }

    fn retired(&mut self, first: u64, n: u64) -> Control {
        self.profiler.retired_at(first, n);
        Control::Continue
    }

    /// The transfer at the end of the instructions [`ByBlocks::retired`] reported, as the
    /// block path's `transfer` takes it; it is settled where the next instructions begin.
    fn left(&mut self, end: u64, _to: u64, kind: Option<BranchKind>, sp: u64) -> Control {
        self.taken = None;
        let p = &mut *self.profiler;
        if matches!(
            kind,
            Some(BranchKind::Call | BranchKind::Return | BranchKind::Indirect)
        ) {
            p.sp = sp;
        }
        p.transfer(kind, end);
        Control::Continue
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.profiler.mapped(m)
    }

    #[inline(always)]
    fn taken_branch(&mut self, from: u64, _to: u64, kind: BranchKind) -> Control {
        self.taken = Some((from, kind));
        Control::Continue
    }

    #[inline(always)]
    fn stack(&mut self, sp: u64) -> Control {
        self.profiler.sp = sp;
        Control::Continue
    }

    /// Counts the instructions of a block in progress that were not counted yet, as retire
    /// records would have at the switch; `block_lens` skips them when the block ends.
    fn block_part(&mut self, start: u64, lens: &[u8]) -> Control {
        let p = &mut *self.profiler;
        let done = match p.parts.get(&p.thread) {
            Some(&(s, n)) if s == start => n.min(lens.len()),
            _ => 0,
        };
        let mut pc = start.wrapping_add(lens[..done].iter().map(|&l| u64::from(l)).sum::<u64>());
        for &l in &lens[done..] {
            p.count(pc, l, None, 0, TimingEvents::default());
            pc = pc.wrapping_add(u64::from(l));
        }
        p.parts.insert(p.thread, (start, lens.len()));
        Control::Continue
    }

    #[inline(always)]
    fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
        let Some((&last_len, _)) = lens.split_last() else {
            return Control::Continue;
        };
        if !self.profiler.parts.is_empty() {
            let thread = self.profiler.thread;
            if let Some((s, done)) = self.profiler.parts.remove(&thread) {
                if s == start && done > 0 {
                    return self.block_rest(start, lens, done);
                }
            }
        }
        let bytes: u64 = lens.iter().map(|&l| u64::from(l)).sum();
        let end = start.wrapping_add(bytes);
        let last = end.wrapping_sub(u64::from(last_len));
        let p = &mut *self.profiler;
        // the fast path: the whole block in the current function's slots, nothing pending
        if p.pending == Pending::None && start >= p.lo && end <= p.hi && start <= last {
            let f = p.cur_fn as usize;
            if let Some(v) = p.pcs.get(f) {
                let first = ((start - p.lo) >> 1) as usize;
                if ((last - p.lo) >> 1) < v.len() as u64 {
                    if p.block_counts.len() < p.pcs.len() {
                        p.block_counts.resize_with(p.pcs.len(), Vec::new);
                    }
                    let counts = &mut p.block_counts[f];
                    if counts.len() != v.len() {
                        counts.resize(v.len(), 0);
                    }
                    let mut at = first;
                    for &l in lens {
                        if let Some(c) = counts.get_mut(at) {
                            *c += 1;
                        }
                        at += usize::from(l >> 1);
                    }
                    p.advance(lens.len() as u64);
                    let taken = self.taken_at(last);
                    let p = &mut *self.profiler;
                    if taken.is_some() {
                        p.transfer(taken, end);
                    }
                    return Control::Continue;
                }
            }
        }
        let mut pc = start;
        for (i, &l) in lens.iter().enumerate() {
            let taken = if i + 1 == lens.len() {
                self.taken_at(pc)
            } else {
                None
            };
            self.profiler
                .count(pc, l, taken, 0, TimingEvents::default());
            pc = pc.wrapping_add(u64::from(l));
        }
        Control::Continue
    }

    /// Not called by sources that honour [`Observer::BLOCK_LENS`]; without the lengths the
    /// instructions cannot be placed, so they are counted at the block's start.
    fn block(&mut self, start: u64, insns: u32) -> Control {
        for i in 0..insns {
            let taken = if i + 1 == insns {
                self.taken.take().map(|(_, kind)| kind)
            } else {
                None
            };
            self.profiler
                .count(start, 2, taken, 0, TimingEvents::default());
        }
        Control::Continue
    }

    fn thread(&mut self, index: u32) -> Control {
        self.taken = None;
        self.profiler.thread(index)
    }

    fn process(&mut self, p: &outcrop_events::ProcessSwitch) -> Control {
        self.taken = None;
        self.profiler.switch_process(p)
    }

    fn signal(&mut self, entered: bool) -> Control {
        self.profiler.signal(entered)
    }
}

/// One function of a [`Profile`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Function {
    /// Its name (`[unknown]` for code outside every symbol), demangled unless the symbols
    /// were read without ([`outcrop_rv::symbols::Symbols::mangled_names`]).
    pub name: String,
    /// The name as the symbol table spells it, when demangling changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// First byte (0 for `[unknown]`).
    pub start: u64,
    /// Length in bytes (0 for `[unknown]`).
    pub size: u64,
    /// What its own instructions account for ("self").
    pub self_counts: Counts,
    /// What was retired while it was on the call stack, itself and its callees ("total",
    /// "inclusive"; recursion counted once).
    pub total_counts: Counts,
    /// Times it was entered (by a call, a tail call or falling into it).
    pub calls: u64,
}

/// One node of the call tree: a function reached by one chain of calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeNode {
    /// The caller's node (the root's parent is itself, 0).
    pub parent: u32,
    /// Index into [`Profile::functions`]; `None` for the root.
    pub function: Option<u32>,
    /// What was retired in this function on this chain of calls.
    pub self_counts: Counts,
    /// What was retired in it and below it.
    pub total_counts: Counts,
    /// Times this chain was entered.
    pub calls: u64,
    /// The thread whose calls reached it (creation index; 0 is the main thread). Every
    /// thread but the main one has a root of its own (`function` `None`) under `nodes[0]`.
    pub thread: u32,
}

/// What one thread of the run accounts for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThreadCounts {
    /// Its creation index (0 is the main thread).
    pub index: u32,
    /// Its node under the root (0 for the main thread).
    pub root: u32,
    /// What it retired.
    pub counts: Counts,
}

/// The exact profile of a run (see the crate docs).
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    /// Instructions retired.
    pub instructions: u64,
    /// Whether cycles and events were counted (a timing model ran).
    pub timed: bool,
    /// Every function that retired an instruction: `[unknown]` and each shared object's
    /// `[unknown]@object` first, then the program's functions by address, then those of the
    /// shared objects in the order they were mapped (named `name@object`).
    pub functions: Vec<Function>,
    /// The call tree; `nodes[0]` is the root, and every parent comes before its children.
    pub nodes: Vec<TreeNode>,
    /// Calls folded into their caller because the stack was [`MAX_DEPTH`] deep or the tree
    /// had [`MAX_NODES`] nodes (0: the tree is exact).
    pub folded_calls: u64,
    /// Every thread that retired anything, by creation index: its counts sum to the run's.
    pub threads: Vec<ThreadCounts>,
    /// Every instruction address that retired, in address order, with its counts and its
    /// function (an index into `functions`).
    #[serde(skip)]
    pub pcs: Vec<PcCounts>,
    /// The run over time (empty unless [`Profiler::with_timeline`]).
    pub timeline: Timeline,
}

/// The counts of one instruction address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcCounts {
    /// Its address.
    pub pc: u64,
    /// Index into [`Profile::functions`].
    pub function: u32,
    /// What it accounts for.
    pub counts: Counts,
}

impl Profile {
    fn build(mut p: Profiler) -> Profile {
        for (slots, counts) in p.pcs.iter_mut().zip(std::mem::take(&mut p.block_counts)) {
            for (c, n) in slots.iter_mut().zip(counts) {
                c.instructions += n;
            }
        }
        // functions that retired something, renumbered in address order
        let mut remap: FxHashMap<u32, u32> = FxHashMap::default();
        let mut functions = Vec::new();
        let mut pcs = Vec::new();
        // code outside every function: `[unknown]`, or `[unknown]@object` inside a shared
        // object's mapping (a stripped library's internal functions)
        let mut u: Vec<(u64, Counts)> = std::mem::take(&mut p.unknown_pcs).into_iter().collect();
        u.sort_unstable_by_key(|&(pc, _)| pc);
        let mut pseudo: FxHashMap<Option<usize>, u32> = FxHashMap::default();
        for (pc, counts) in u {
            let owner = p.objects.iter().rposition(|o| pc >= o.lo && pc < o.hi);
            let idx = *pseudo.entry(owner).or_insert_with(|| {
                functions.push(Function {
                    name: owner.map_or_else(
                        || "[unknown]".to_string(),
                        |o| format!("[unknown]{}", p.objects[o].suffix),
                    ),
                    mangled: None,
                    start: owner.map_or(0, |o| p.objects[o].lo),
                    size: 0,
                    self_counts: Counts::default(),
                    total_counts: Counts::default(),
                    calls: 0,
                });
                functions.len() as u32 - 1
            });
            functions[idx as usize].self_counts.add(&counts);
            pcs.push(PcCounts {
                pc,
                function: idx,
                counts,
            });
        }
        if let Some(&i) = pseudo.get(&None) {
            remap.insert(p.unknown, i);
        }
        for (o, object) in p.objects.iter().enumerate() {
            if let Some(&i) = pseudo.get(&Some(o)) {
                remap.insert(object.base + object.symbols.len() as u32, i);
            }
        }
        for (id, slots) in p.pcs.iter().enumerate() {
            if slots.iter().all(|c| c.instructions == 0) {
                continue;
            }
            let Some((name, mangled, start, size)) = p.function_info(id as u32) else {
                continue;
            };
            let idx = functions.len() as u32;
            remap.insert(id as u32, idx);
            let mut f = Function {
                name,
                mangled,
                start,
                size,
                self_counts: Counts::default(),
                total_counts: Counts::default(),
                calls: 0,
            };
            for (i, c) in slots.iter().enumerate() {
                if c.instructions > 0 {
                    f.self_counts.add(c);
                    pcs.push(PcCounts {
                        pc: start + 2 * i as u64,
                        function: idx,
                        counts: *c,
                    });
                }
            }
            functions.push(f);
        }
        pcs.sort_by_key(|c| c.pc);

        // the tree: nodes are created after their parents, so one backward pass sums totals
        let mut nodes: Vec<TreeNode> = p
            .nodes
            .iter()
            .map(|n| TreeNode {
                parent: n.parent,
                function: if n.function == ROOT {
                    None
                } else {
                    remap.get(&n.function).copied()
                },
                self_counts: n.counts,
                total_counts: n.counts,
                calls: n.calls,
                thread: n.thread,
            })
            .collect();
        let threads = threads_of(&nodes);
        for i in (1..nodes.len()).rev() {
            let t = nodes[i].total_counts;
            let parent = nodes[i].parent as usize;
            nodes[parent].total_counts.add(&t);
        }
        add_function_totals(&nodes, &mut functions);
        // the end of the run closes the last interval, so the intervals sum to the run
        let end = p.counts_now();
        let mut timeline = Timeline {
            interval: p.timeline.interval,
            cycles: p.timed,
            marks: std::mem::take(&mut p.timeline.marks),
        };
        if timeline.interval > 0 && timeline.marks.last().map(|m| m.at) != Some(end) {
            timeline.marks.push(Mark {
                at: end,
                node: p.cur_node,
                thread: p.thread,
            });
        }
        Profile {
            instructions: p.instructions,
            timed: p.timed,
            functions,
            nodes,
            folded_calls: p.folded_calls,
            threads,
            pcs,
            timeline,
        }
    }

    /// Functions by self instructions (or self cycles, with `by_cycles`), most first; ties by
    /// address.
    pub fn hottest(&self, by_cycles: bool) -> Vec<&Function> {
        let mut v: Vec<&Function> = self.functions.iter().collect();
        let key = |f: &Function| {
            if by_cycles {
                f.self_counts.cycles
            } else {
                f.self_counts.instructions
            }
        };
        v.sort_by(|a, b| key(b).cmp(&key(a)).then(a.start.cmp(&b.start)));
        v
    }

    /// The call stack of node `n`, outermost first, as function indexes.
    pub fn stack(&self, mut n: u32) -> Vec<u32> {
        let mut s = Vec::new();
        while n != 0 && (n as usize) < self.nodes.len() {
            if let Some(f) = self.nodes[n as usize].function {
                s.push(f);
            }
            n = self.nodes[n as usize].parent;
        }
        s.reverse();
        s
    }

    /// The children of every node, in node order.
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut c = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            c[n.parent as usize].push(i as u32);
        }
        c
    }

    /// The sum of every function's self counts (equal to the run's totals: a check).
    pub fn self_sum(&self) -> Counts {
        let mut c = Counts::default();
        for f in &self.functions {
            c.add(&f.self_counts);
        }
        c
    }

    /// Self counts aggregated by source line, most instructions first (ties by file and
    /// line); instructions without line information are left out (see
    /// [`LineProfile::unattributed`]).
    pub fn by_line(&self, table: &mut lines::LineTable) -> LineProfile {
        // per line: its counts, and the instructions of each function it ran in (a line
        // inlined into several functions runs in each of them)
        type Entry = (Counts, Vec<(u32, u64)>);
        let mut map: FxHashMap<(u32, u32), Entry> = FxHashMap::default();
        let mut unattributed = Counts::default();
        for pc in &self.pcs {
            match table.locate(pc.pc) {
                Some(loc) => {
                    let e = map.entry((loc.file, loc.line)).or_default();
                    e.0.add(&pc.counts);
                    match e.1.iter_mut().find(|(f, _)| *f == pc.function) {
                        Some(f) => f.1 += pc.counts.instructions,
                        None => e.1.push((pc.function, pc.counts.instructions)),
                    }
                }
                None => unattributed.add(&pc.counts),
            }
        }
        let mut rows: Vec<LineRow> = map
            .into_iter()
            .map(|((file, line), (counts, functions))| {
                // the function with the most of the line's instructions; the lowest index
                // among equals, so that the choice does not depend on hashing
                let function = functions
                    .iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                    .map_or(0, |f| f.0);
                LineRow {
                    file: table.file_name(file).to_string(),
                    line,
                    function,
                    functions: functions.len() as u32,
                    counts,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.counts
                .instructions
                .cmp(&a.counts.instructions)
                .then_with(|| a.file.cmp(&b.file))
                .then(a.line.cmp(&b.line))
        });
        LineProfile { rows, unattributed }
    }
}

/// One source line's counts ([`Profile::by_line`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineRow {
    /// Source file, as the compiler recorded it (directory joined).
    pub file: String,
    /// Line number (1-based; 0 when the compiler gave none).
    pub line: u32,
    /// The function in which most of its instructions ran (index into
    /// [`Profile::functions`]; a line inlined into several functions runs in each).
    pub function: u32,
    /// How many functions its instructions ran in (1 unless it was inlined or shared).
    pub functions: u32,
    /// Self counts of its instructions.
    pub counts: Counts,
}

/// A profile by source line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LineProfile {
    /// Lines, most instructions first.
    pub rows: Vec<LineRow>,
    /// Counts of instructions the line table does not cover (libc without debug info).
    pub unattributed: Counts,
}

/// Each guest thread's root node and own instruction counts: those that retired something
/// (the first alone when none did; a process's profile has only its own threads).
fn threads_of(nodes: &[TreeNode]) -> Vec<ThreadCounts> {
    let mut threads: Vec<ThreadCounts> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let t = match threads.binary_search_by_key(&n.thread, |t| t.index) {
            Ok(t) => t,
            Err(at) => {
                threads.insert(
                    at,
                    ThreadCounts {
                        index: n.thread,
                        ..ThreadCounts::default()
                    },
                );
                at
            }
        };
        if i == 0 || (n.function.is_none() && n.parent == 0) {
            threads[t].root = i as u32;
        }
        threads[t].counts.add(&n.self_counts);
    }
    if threads.iter().any(|t| t.counts.instructions > 0) {
        threads.retain(|t| t.counts.instructions > 0);
    } else {
        threads.truncate(1);
    }
    threads
}

/// Adds each function's calls and total counts from the call tree's nodes.
fn add_function_totals(nodes: &[TreeNode], functions: &mut [Function]) {
    // a function's total: its nodes' totals, except nodes below another node of the
    // same function (recursion counted once)
    let mut outer = vec![false; nodes.len()];
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
    for i in 1..nodes.len() {
        children[nodes[i].parent as usize].push(i as u32);
    }
    let mut active = vec![0u32; functions.len()];
    // iterative DFS: (node, entering)
    let mut work = vec![(0u32, true)];
    while let Some((n, entering)) = work.pop() {
        let f = nodes[n as usize].function;
        if entering {
            if let Some(f) = f {
                outer[n as usize] = active[f as usize] == 0;
                active[f as usize] += 1;
            }
            work.push((n, false));
            for &c in children[n as usize].iter().rev() {
                work.push((c, true));
            }
        } else if let Some(f) = f {
            active[f as usize] -= 1;
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        if let Some(f) = n.function {
            let f = &mut functions[f as usize];
            f.calls += n.calls;
            if outer[i] {
                f.total_counts.add(&n.total_counts);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn insn(pc: u64) -> Retire {
        Retire {
            pc,
            len: 4,
            next_pc: pc + 4,
            ..Retire::default()
        }
    }

    fn call(pc: u64, to: u64) -> Retire {
        Retire {
            taken: true,
            transfer: Some(BranchKind::Call),
            target: to,
            next_pc: to,
            ..insn(pc)
        }
    }

    fn ret(pc: u64, to: u64) -> Retire {
        Retire {
            taken: true,
            transfer: Some(BranchKind::Return),
            target: to,
            next_pc: to,
            ..insn(pc)
        }
    }

    fn depth(p: &Profiler) -> usize {
        p.stack.len()
    }

    #[test]
    fn a_longjmp_unwinds_to_the_frame_it_returns_to() {
        let mut p = Profiler::new(Symbols::default());
        p.retire(&insn(0x100), None);
        // ten nested calls from 0x100, 0x200, ...
        for i in 0..10u64 {
            p.retire(&call(0x100 * (i + 1), 0x100 * (i + 2)), None);
        }
        p.retire(&insn(0x1100), None);
        assert_eq!(depth(&p), 10);
        // a return straight to the first caller's continuation
        p.retire(&ret(0x1104, 0x104), None);
        p.retire(&insn(0x104), None);
        assert_eq!(depth(&p), 0);
        // a return nobody expects pops one frame, and never underflows
        p.retire(&ret(0x108, 0x5000), None);
        p.retire(&insn(0x5000), None);
        assert_eq!(depth(&p), 0);
        let prof = p.finish_profile();
        assert_eq!(prof.self_sum().instructions, prof.instructions);
        assert_eq!(prof.nodes[0].total_counts.instructions, prof.instructions);
    }

    #[test]
    fn recursion_deeper_than_the_cap_is_folded_and_still_exact() {
        let mut p = Profiler::new(Symbols::default());
        let deep = MAX_DEPTH as u64 + 500;
        for i in 0..deep {
            p.retire(&call(0x1000, 0x1000), None);
            let _ = i;
        }
        assert_eq!(depth(&p), MAX_DEPTH);
        for _ in 0..deep {
            p.retire(&ret(0x1004, 0x1004), None);
        }
        p.retire(&insn(0x1004), None);
        assert_eq!(depth(&p), 0);
        let prof = p.finish_profile();
        assert_eq!(prof.folded_calls, 500);
        assert_eq!(prof.instructions, 2 * deep + 1);
        assert_eq!(prof.self_sum().instructions, prof.instructions);
        // one function, counted once however deep the recursion
        assert_eq!(prof.functions.len(), 1);
        assert_eq!(
            prof.functions[0].total_counts.instructions,
            prof.instructions
        );
    }

    #[test]
    fn timing_stamps_charge_cycles_since_the_previous_retirement() {
        let mut p = Profiler::new(Symbols::default());
        let mut t = Stamp {
            retire: 5,
            ..Stamp::default()
        };
        p.retire(&insn(0x100), Some(&t));
        t.retire = 5;
        t.events = TimingEvents(TimingEvents::L2I_MISS.0 | TimingEvents::L2D_MISS.0);
        p.retire(&insn(0x104), Some(&t));
        t.retire = 12;
        t.events = TimingEvents::MISPREDICT;
        p.retire(&insn(0x108), Some(&t));
        let prof = p.finish_profile();
        let by_pc: Vec<(u64, u64)> = prof.pcs.iter().map(|c| (c.pc, c.counts.cycles)).collect();
        assert_eq!(by_pc, vec![(0x100, 5), (0x104, 0), (0x108, 7)]);
        let s = prof.self_sum();
        assert_eq!((s.cycles, s.l2_misses, s.mispredicts), (12, 2, 1));
    }
}
