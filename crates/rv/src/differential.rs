//! Differential checking of the block engine against the single-step interpreter (its
//! oracle): run the same machine under [`Engine::Step`] and [`Engine::Blocks`] and compare the
//! architectural state and every derived stream (basic blocks, taken branches, class counts).
//!
//! The block and branch streams together fix the retired pc sequence (blocks tile it, and each
//! block's next pc is either its fall-through or the taken branch's target), so equal streams
//! mean the same instructions retired in the same order. Used by the engine's tests, its
//! property test on random instruction sequences and its fuzz target (`fuzz/`); a library
//! function so anyone changing the block engine can check a program of their own.

use crate::kernel::{Kernel, KernelConfig, Sandbox};
use crate::memory::{perm, Memory, PAGE_SIZE};
use crate::{Engine, Machine, Outcome};
use outcrop_events::record::{BranchKind, Control, Observer};

/// Where [`bare_machine`] puts its code (pages mapped read-write-execute, so the guest can
/// rewrite it).
pub const CODE_BASE: u64 = 0x10_000;
/// Where [`bare_machine`] maps its data page; every register but `x0` starts pointing into it.
pub const DATA_BASE: u64 = 0x40_000;
/// Bytes of data memory [`bare_machine`] maps; registers and the stack pointer start in its
/// middle.
pub const DATA_BYTES: u64 = 16 * PAGE_SIZE;

/// Every stream an observer can ask for except retire records, folded into digests (a run of
/// hundreds of millions of blocks keeps no list), optionally stopping after some blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Streams {
    /// Basic blocks seen.
    pub blocks: u64,
    /// Taken branches seen.
    pub branches: u64,
    /// Instructions per class, summed.
    pub classes: [u64; 8],
    /// A digest of the block and branch streams in order.
    pub digest: u64,
    /// Stop the run at this many blocks (`Control::Stop` from `block`).
    pub stop_after_blocks: Option<u64>,
}

impl Streams {
    fn mix(&mut self, v: u64) {
        // FxHash's step: order-sensitive and cheap
        self.digest = (self.digest.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Observer for Streams {
    const BLOCKS: bool = true;
    const BRANCHES: bool = true;
    const CLASSES: bool = true;
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.blocks += 1;
        self.mix(start);
        self.mix(u64::from(insns));
        if self.stop_after_blocks == Some(self.blocks) {
            Control::Stop
        } else {
            Control::Continue
        }
    }
    fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
        self.branches += 1;
        self.mix(from);
        self.mix(to);
        self.mix(kind as u64);
        Control::Continue
    }
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        for (total, &n) in self.classes.iter_mut().zip(counts) {
            *total += u64::from(n);
        }
        Control::Continue
    }
}

/// What one run ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunState {
    /// How it ended.
    pub outcome: Outcome,
    /// Integer registers.
    pub x: [u64; 32],
    /// FP registers.
    pub f: [u64; 32],
    /// Program counter.
    pub pc: u64,
    /// Instructions retired.
    pub instret: u64,
    /// Signals delivered.
    pub traps: u64,
    /// FP flags and rounding mode.
    pub fcsr: (u8, u8),
    /// The streams the observer saw.
    pub streams: Streams,
    /// The bytes of the ranges asked for (unreadable bytes read as 0xee).
    pub memory: Vec<u8>,
}

/// Runs `make()`'s machine to its end under `engine` with a [`Streams`] observer and returns
/// its final state, with the bytes of `snapshot` ranges.
pub fn run_with(
    make: &dyn Fn() -> Machine,
    engine: Engine,
    stop_after_blocks: Option<u64>,
    snapshot: &[(u64, u64)],
) -> RunState {
    let mut streams = Streams {
        stop_after_blocks,
        ..Streams::default()
    };
    let mut state = run_observed(make, engine, &mut streams, snapshot, 1);
    state.streams = streams;
    state
}

/// [`run_with`] with no observer at all (the block engine then runs extended blocks, which go
/// on through not-taken branches); the state's streams are empty.
pub fn run_unobserved(
    make: &dyn Fn() -> Machine,
    engine: Engine,
    snapshot: &[(u64, u64)],
) -> RunState {
    run_observed(make, engine, &mut (), snapshot, 1)
}

/// Runs `make()`'s machine on `engine` with `obs` to its end or limit, and returns its final
/// state (memory: the `snapshot` ranges). `hot`: runs of a block before the compiling tier
/// compiles it (1: at once, so that every block of a short test program runs compiled); it
/// compiles on the machine's thread, so which blocks run compiled is the same on every run.
pub fn run_observed<O: Observer>(
    make: &dyn Fn() -> Machine,
    engine: Engine,
    obs: &mut O,
    snapshot: &[(u64, u64)],
    hot: u32,
) -> RunState {
    let mut m = make();
    m.engine = engine;
    m.jit_hot = hot;
    m.jit_hot_baseline = hot;
    m.jit_background = false;
    let outcome = m.run(obs);
    if O::COUNTS {
        // the basic block in progress at the end (engines end it at different points: compiled
        // code's entry ends the engine's part early)
        m.flush_blocks(obs);
    }
    let mut memory = Vec::new();
    for &(addr, len) in snapshot {
        let mut bytes = vec![0xee; len.min(1 << 20) as usize];
        if m.mem.read_bytes(addr, &mut bytes).is_err() {
            for (a, b) in (addr..).zip(bytes.iter_mut()) {
                let mut one = [0xee];
                let _ = m.mem.read_bytes(a, &mut one);
                *b = one[0];
            }
        }
        memory.extend_from_slice(&bytes);
    }
    RunState {
        outcome,
        x: m.x,
        f: m.f,
        pc: m.pc,
        instret: m.instret,
        traps: m.traps,
        fcsr: (m.fflags, m.frm),
        streams: Streams::default(),
        memory,
    }
}

/// Runs `make()`'s machine under both engines (and, without a stop, once more with no observer,
/// whose extended blocks differ in shape); `Err` describes the first difference.
pub fn compare_engines(
    make: &dyn Fn() -> Machine,
    stop_after_blocks: Option<u64>,
    snapshot: &[(u64, u64)],
) -> Result<RunState, String> {
    let oracle = run_with(make, Engine::Step, stop_after_blocks, snapshot);
    let blocks = run_with(make, Engine::Blocks, stop_after_blocks, snapshot);
    if oracle == blocks {
        if stop_after_blocks.is_some() {
            return Ok(oracle);
        }
        // and with no observer (extended blocks): the same state, no streams
        let bare = run_unobserved(make, Engine::Blocks, snapshot);
        let without_streams = RunState {
            streams: Streams::default(),
            ..oracle.clone()
        };
        if bare != without_streams {
            return Err(describe(
                "single-step vs unobserved blocks",
                &without_streams,
                &bare,
            ));
        }
        // and under the compiling tier (no observer: it compiles)
        let jit = run_unobserved(make, Engine::Jit, snapshot);
        if jit != without_streams {
            return Err(describe(
                "single-step vs the compiling tier",
                &without_streams,
                &jit,
            ));
        }
        // and under the compiling tier with the observer: compiled blocks record, and the
        // observer sees the same streams
        let observed = run_with(make, Engine::Jit, None, snapshot);
        if observed != oracle {
            return Err(describe(
                "single-step vs the compiling tier, observed",
                &oracle,
                &observed,
            ));
        }
        return Ok(oracle);
    }
    Err(describe("single-step vs blocks", &oracle, &blocks))
}

/// Bytes of code per range of [`RangeRuns`] (a stand-in for a function).
pub const RANGE_BYTES: u64 = 64;

/// What an observer of counts ([`Observer::COUNTS`]) can know of a run, folded so that the
/// counted path (compiled blocks count their runs and record only transfers out of a range or
/// calls and returns) and the block path (every basic block and taken branch) must agree on
/// it: instructions retired per address and per class, and the sequence of *runs* — maximal
/// stretches of retired instructions in one [`RANGE_BYTES`]-aligned range, cut also after each
/// call and return (with the stack pointer after it) — as a count and an order-sensitive digest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeRuns {
    /// Instructions retired per address.
    pub per_pc: std::collections::BTreeMap<u64, u64>,
    /// Instructions retired per class.
    pub classes: [u64; 8],
    /// Runs ended.
    pub runs: u64,
    /// A digest of the runs in order: range, instructions, how each ended.
    pub digest: u64,
    /// The run going on: its range's first byte and its instructions so far.
    run: Option<(u64, u64)>,
    /// On the block path: the call or return the next reported block ends with (its pc, kind
    /// and the stack pointer after it).
    taken: Option<(u64, BranchKind, u64)>,
}

impl RangeRuns {
    fn mix(&mut self, v: u64) {
        self.digest = (self.digest.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    /// Ends the run going on, `how` (0: the range changed or the stream ended; else a call
    /// or return's kind, plus one, and the stack pointer after it).
    fn close(&mut self, how: u64, sp: u64) {
        if let Some((lo, n)) = self.run.take() {
            self.runs += 1;
            self.mix(lo);
            self.mix(n);
            self.mix(how);
            self.mix(sp);
        }
    }

    /// `n` instructions from `pc` on, all in `pc`'s range.
    fn add(&mut self, pc: u64, n: u64) {
        let lo = pc & !(RANGE_BYTES - 1);
        match &mut self.run {
            Some((l, k)) if *l == lo => *k += n,
            _ => {
                self.close(0, 0);
                self.run = Some((lo, n));
            }
        }
    }

    /// A call or return ends the run.
    fn transfer(&mut self, kind: BranchKind, sp: u64) {
        if matches!(kind, BranchKind::Call | BranchKind::Return) {
            self.close(kind as u64 + 1, sp);
        }
    }

    /// Ends the last run (after the machine's run returned).
    pub fn finish(&mut self) {
        self.close(0, 0);
    }
}

impl Observer for RangeRuns {
    const BLOCKS: bool = true;
    const BLOCK_LENS: bool = true;
    const BRANCHES: bool = true;
    const STACK: bool = true;
    const CLASSES: bool = true;
    const COUNTS: bool = true;
    const CALLS: bool = true;

    fn range(&mut self, pc: u64) -> (u64, u64) {
        let lo = pc & !(RANGE_BYTES - 1);
        (lo, lo + RANGE_BYTES)
    }
    fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
        let mut pc = start;
        for &l in lens {
            *self.per_pc.entry(pc).or_default() += 1;
            self.add(pc, 1);
            if let Some((at, kind, sp)) = self.taken {
                if at == pc {
                    self.taken = None;
                    self.transfer(kind, sp);
                }
            }
            pc = pc.wrapping_add(u64::from(l));
        }
        Control::Continue
    }
    fn taken_branch(&mut self, from: u64, _to: u64, kind: BranchKind) -> Control {
        self.taken = Some((from, kind, 0));
        Control::Continue
    }
    fn stack(&mut self, sp: u64) -> Control {
        if let Some((_, _, s)) = &mut self.taken {
            *s = sp;
        }
        Control::Continue
    }
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        for (total, &n) in self.classes.iter_mut().zip(counts) {
            *total += u64::from(n);
        }
        Control::Continue
    }
    fn counted(&mut self, start: u64, lens: &[u8], classes: &[u32; 8], count: u64) -> Control {
        let mut pc = start;
        for &l in lens {
            *self.per_pc.entry(pc).or_default() += count;
            pc = pc.wrapping_add(u64::from(l));
        }
        for (total, &n) in self.classes.iter_mut().zip(classes) {
            *total += u64::from(n) * count;
        }
        Control::Continue
    }
    fn retired(&mut self, first: u64, n: u64) -> Control {
        if n > 0 {
            self.add(first, n);
        }
        Control::Continue
    }
    fn left(&mut self, _end: u64, _to: u64, kind: Option<BranchKind>, sp: u64) -> Control {
        if let Some(kind) = kind {
            self.transfer(kind, sp);
        }
        Control::Continue
    }
}

/// Runs `make()`'s machine under the single-step interpreter, the block engine and the
/// compiling tier with a [`RangeRuns`] observer (compiled blocks then count their runs:
/// [`Observer::COUNTS`]); `Err` describes the first difference in the final state or in what
/// the observer saw. Returns the observer's view.
pub fn compare_counted(
    make: &dyn Fn() -> Machine,
    snapshot: &[(u64, u64)],
) -> Result<RangeRuns, String> {
    let run = |engine, hot| {
        let mut obs = RangeRuns::default();
        let state = run_observed(make, engine, &mut obs, snapshot, hot);
        obs.finish();
        (state, obs)
    };
    let (oracle, want) = run(Engine::Step, 1);
    // (compiled at a block's first run, and at its third: by then the blocks after its
    // not-taken branches are built, and it is compiled with them as one superblock)
    for (engine, hot, what) in [
        (Engine::Blocks, 1, "single-step vs blocks, counted"),
        (Engine::Jit, 1, "single-step vs the compiling tier, counted"),
        (
            Engine::Jit,
            3,
            "single-step vs the compiling tier, counted, superblocks",
        ),
    ] {
        let (state, got) = run(engine, hot);
        if state != oracle {
            return Err(describe(what, &oracle, &state));
        }
        if got != want {
            let first = want
                .per_pc
                .iter()
                .find(|(pc, n)| got.per_pc.get(pc) != Some(n))
                .or_else(|| {
                    got.per_pc
                        .iter()
                        .find(|(pc, _)| !want.per_pc.contains_key(pc))
                });
            return Err(format!(
                "{what}: runs {} vs {}, digests {:#x} vs {:#x}, classes {:?} vs {:?}, first \
                 count that differs: {first:?} (now {:?})",
                want.runs,
                got.runs,
                want.digest,
                got.digest,
                want.classes,
                got.classes,
                first.and_then(|(pc, _)| got.per_pc.get(pc)),
            ));
        }
    }
    Ok(want)
}

/// The differences between two final states, for an error message.
fn describe(what: &str, oracle: &RunState, blocks: &RunState) -> String {
    let mut diff = Vec::new();
    if oracle.outcome != blocks.outcome {
        diff.push(format!(
            "outcome {:?} vs {:?}",
            oracle.outcome, blocks.outcome
        ));
    }
    if (oracle.pc, oracle.instret, oracle.traps) != (blocks.pc, blocks.instret, blocks.traps) {
        diff.push(format!(
            "pc {:#x} vs {:#x}, instret {} vs {}, traps {} vs {}",
            oracle.pc, blocks.pc, oracle.instret, blocks.instret, oracle.traps, blocks.traps
        ));
    }
    for r in 0..32 {
        if oracle.x[r] != blocks.x[r] {
            diff.push(format!("x{r} {:#x} vs {:#x}", oracle.x[r], blocks.x[r]));
        }
        if oracle.f[r] != blocks.f[r] {
            diff.push(format!("f{r} {:#x} vs {:#x}", oracle.f[r], blocks.f[r]));
        }
    }
    if oracle.fcsr != blocks.fcsr {
        diff.push(format!("fcsr {:?} vs {:?}", oracle.fcsr, blocks.fcsr));
    }
    if oracle.streams != blocks.streams {
        diff.push(format!(
            "streams {:?} vs {:?}",
            oracle.streams, blocks.streams
        ));
    }
    if let Some(at) =
        (0..oracle.memory.len()).find(|&i| oracle.memory.get(i) != blocks.memory.get(i))
    {
        diff.push(format!("memory differs at snapshot byte {at}"));
    }
    format!("{what}: {}", diff.join("; "))
}

/// A machine with `code` at [`CODE_BASE`] (read-write-execute pages), [`DATA_BYTES`] of data
/// at [`DATA_BASE`], every register but `x0` pointing into the middle of the data (`x[r]` =
/// DATA_BASE + DATA_BYTES / 2 + 8r), a deterministic kernel with no files and discarded output, and an
/// instruction limit of `max_insns`. For engine tests and fuzzing: any bytes make a machine.
pub fn bare_machine(code: &[u8], max_insns: u64) -> Machine {
    let code_len = (code.len() as u64).clamp(1, 16 * PAGE_SIZE);
    let code_pages = code_len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let mut mem = Memory::new(1 << 24);
    // both ranges are small, fixed and disjoint: mapping cannot fail
    let _ = mem.map(CODE_BASE, code_pages, perm::R | perm::W | perm::X);
    let _ = mem.map(DATA_BASE, DATA_BYTES, perm::R | perm::W);
    let _ = mem.poke_bytes(CODE_BASE, &code[..code_len.min(code.len() as u64) as usize]);
    // data with every bit pattern, so loads of each width and signedness differ
    let pattern: Vec<u8> = (0..DATA_BYTES)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) >> 11) as u8)
        .collect();
    let _ = mem.poke_bytes(DATA_BASE, &pattern);
    let kernel = Kernel::new(
        KernelConfig {
            sandbox: Sandbox::new(),
            deterministic: true,
            exe_path: "/bare".into(),
            stdin: Box::new(std::io::empty()),
            stdout: Box::new(std::io::sink()),
            stderr: Box::new(std::io::sink()),
            on_warning: Box::new(|_| {}),
            stdio_mode: Some(0o020666),
        },
        DATA_BASE + DATA_BYTES + PAGE_SIZE,
        1 << 24,
    );
    let middle = DATA_BASE + DATA_BYTES / 2;
    let mut m = Machine::new(mem, kernel, CODE_BASE, middle);
    for r in 1..32 {
        m.x[r] = middle + 8 * r as u64;
    }
    m.max_insns = max_insns;
    m
}
