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
    let mut state = run_observed(make, engine, &mut streams, snapshot);
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
    run_observed(make, engine, &mut (), snapshot)
}

fn run_observed<O: Observer>(
    make: &dyn Fn() -> Machine,
    engine: Engine,
    obs: &mut O,
    snapshot: &[(u64, u64)],
) -> RunState {
    let mut m = make();
    m.engine = engine;
    // the compiling tier compiles a block the first time it runs, so that every block of a
    // short test program runs compiled from its second run on
    m.jit_hot = 1;
    m.jit_background = false;
    let outcome = m.run(obs);
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
