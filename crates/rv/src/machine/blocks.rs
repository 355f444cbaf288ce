//! The block engine: pre-decoded basic blocks of specialised micro-ops, run one block per
//! dispatch, for observers that read no retire records (docs/machine.md, "The block engine").
//!
//! A block starts at any pc the guest jumps to and runs straight on until a branch, a jump, a
//! system call, a `brr`, the end of its page or [`MAX_UOPS`] micro-ops. Each instruction is
//! translated once into a [`Uop`]: common forms get their own handler (`li` for `lui`, `auipc`
//! and `addi rd, x0, imm`; `mv` for `addi rd, rs, 0` and `add` with an `x0` source; a no-op
//! for ALU writes to `x0`; `beqz`/`bnez`), common pairs are fused into one (`lui`+`addi[w]`
//! and `auipc`+`addi` into `li` of the constant; `auipc`+`jalr` into a jump with the target
//! folded), and everything else (FP, multiply-divide, atomics, CSRs, system calls) runs the
//! single-step interpreter's own `step` on the decoded instruction. Blocks chain to their last
//! two successors, so the common dispatch is one compare.
//!
//! The single-step interpreter ([`super::Machine::run_steps`]) is the oracle: whenever a block
//! meets anything unusual (a memory fault, an illegal instruction, a SIGILL to deliver, the
//! instruction limit inside the block), the engine puts the pc and the retired count exactly at
//! that instruction and lets the oracle run it. Faulting instructions change nothing before
//! they fault, so running them again there is exact. Observers see the same basic blocks,
//! taken branches and class counts as under the oracle (checked by the differential tests).

use super::{jalr_kind, Flow, Machine, SLOTS};
use crate::fpu;
use crate::inst::{Class, Inst, Op};
use crate::memory::{perm, PAGE_SIZE};
use outcrop_events::record::{BranchKind, Control, Observer, WarmEnd};
use outcrop_sem::{extend, Alu, Cond, FMove, Sem};
use std::collections::HashMap;

pub(super) mod jit;

/// Most micro-ops in one block.
const MAX_UOPS: usize = 64;
/// Pages whose block tables are found without a hash lookup.
const RECENT: usize = 64;
/// Block-table entry: no block built here yet.
const NONE: u32 = 0;
/// Block-table entry: no block can start here (its first instruction crosses the page or
/// cannot be fetched); the oracle runs it.
const ORACLE: u32 = u32::MAX;

/// Micro-op kinds. Those after [`K::Generic`] end their block ([`K::ends_block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum K {
    Nop,
    Li,
    Mv,
    /// An integer operation ([`Uop::alu`]) on `rs1` and `rs2` ([`Sem::Alu`]).
    Alu,
    /// An integer operation ([`Uop::alu`]) on `rs1` and the immediate ([`Sem::AluImm`]).
    AluImm,
    // the integer operations compilers emit most, dispatched by kind alone (the same
    // `Alu::eval`; `fast`): register forms, then immediate forms
    Add,
    Sub,
    And,
    Or,
    Xor,
    Sll,
    Srl,
    Sltu,
    Addw,
    Mul,
    Addi,
    Andi,
    Ori,
    Xori,
    Slli,
    Srli,
    Srai,
    Addiw,
    Sltiu,
    Lb,
    Lh,
    Lw,
    Ld,
    Lbu,
    Lhu,
    Lwu,
    Sb,
    Sh,
    Sw,
    Sd,
    Flw,
    Fld,
    Fsw,
    Fsd,
    // double-precision arithmetic: `aux` = rs3 | rounding-mode field << 8
    FaddD,
    FsubD,
    FmulD,
    FdivD,
    FmaddD,
    FmsubD,
    FnmsubD,
    FnmaddD,
    FsgnjD,
    FsgnjnD,
    FsgnjxD,
    FmvXD,
    FmvDX,
    FeqD,
    FltD,
    FleD,
    /// Any other F/D instruction but loads and stores (`imm` indexes `generic`).
    Float,
    /// Any other instruction, through the oracle's `step` (`imm` indexes `generic`).
    Generic,
    // terminators: always the last micro-op of a block
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
    Beqz,
    Bnez,
    /// `brr` (branch-on-random): `rd` holds the frequency field.
    Brr,
    Jal,
    Jalr,
    /// `auipc rd, hi` + `jalr rs2, lo(rd)`: `imm` = the auipc value, `aux` = lo.
    AuipcJalr,
    /// A system call (through `step`; `imm` indexes `generic`).
    Ecall,
}

/// One pre-decoded micro-op: 16 bytes, everything the hot loop reads.
#[derive(Clone, Copy, Debug)]
struct Uop {
    k: K,
    rd: u8,
    rs1: u8,
    rs2: u8,
    /// For [`K::Alu`] and [`K::AluImm`], the operation's index in [`Alu::ALL`].
    aux: i32,
    /// Immediate, constant, absolute branch target or index of `generic`.
    imm: u64,
}

/// What the slow paths need to know about a micro-op.
#[derive(Clone, Copy, Debug)]
struct Meta {
    /// Offset of its (first) instruction from the block start.
    off: u16,
    /// Offset of the instruction after it.
    next_off: u16,
    /// Instructions of the block before it.
    n: u16,
    /// Class of its (last) instruction.
    class: Class,
    /// Two instructions fused (the first is always an ALU `lui`/`auipc`).
    fused: bool,
    /// What its (last) instruction does, for the compiling tier.
    sem: Sem,
}

/// A pre-decoded block.
#[derive(Clone, Debug)]
struct Block {
    start: u64,
    /// The pc after its last instruction (the fall-through of a final branch).
    end: u64,
    /// Its micro-ops: `uops[first..first + count]`.
    first: u32,
    count: u32,
    /// Instructions it retires when it runs to its end.
    insns: u32,
    /// The pc of its last instruction (the `from` of a taken branch).
    last_pc: u64,
    /// Its last instruction ends a basic block (branch, jump, system call): observers' blocks
    /// end with it. Otherwise the next block continues the observers' block.
    ends_basic_block: bool,
    /// Instructions per class when it runs to its end.
    classes: [u32; 8],
    /// Where its instruction lengths start in [`BlockCache::lens`] (`insns` of them).
    lens_at: u32,
    /// The last two successors: (pc, block id).
    links: [(u64, u32); 2],
    /// Times the block engine ran it while the compiling tier was on.
    heat: u32,
    /// The compiling tier's generation (flushes + 1) its unit was compiled in, 0 if none,
    /// [`jit::NEVER`] if it is not compiled.
    jit: u32,
    /// The generation (flushes + 1) its unit was handed to the compiling thread in, 0 if none.
    pending: u32,
    /// The kind of the branch or jump that ends it when taken (what compiled code's records
    /// leave out).
    taken_kind: BranchKind,
    /// Its instructions' accesses of memory (with [`BlockCache::warm`]; `u16::MAX` if one
    /// has no size known before it runs).
    accesses: u16,
    /// Its last instruction's transfer as functional warming reads it (`WarmRun::end`).
    warm_end: Option<WarmEnd>,
}

/// The decoded-block cache, dropped with the instruction cache whenever executable memory
/// changes (the memory's code epoch).
pub(super) struct BlockCache {
    /// Page number → index of its block table.
    pages: HashMap<u64, u32>,
    /// Per page, per 2-byte slot: block id + 1, [`NONE`] or [`ORACLE`].
    tables: Vec<Box<[u32; SLOTS]>>,
    recent: [(u64, u32); RECENT],
    blocks: Vec<Block>,
    uops: Vec<Uop>,
    meta: Vec<Meta>,
    /// Instructions the generic micro-ops run: the decoded instruction, its pc and its index
    /// in the block.
    generic: Vec<(Inst, u64, u16)>,
    /// Every block's instruction lengths in bytes, in order ([`Block::lens`]), for observers
    /// of [`Observer::BLOCK_LENS`].
    lens: Vec<u8>,
    /// Bumped by every flush: ids and links from before are void.
    generation: u64,
    /// Blocks run on through not-taken conditional branches (built so for observers that read
    /// no block-level stream; see [`Machine::run_blocks`]).
    extended: bool,
    /// Compiled blocks count their runs inline for an observer of [`Observer::COUNTS`]
    /// (`jit::Machine::drain_counted`) instead of recording each.
    counting: bool,
    /// Counted blocks also write their taken branches into the compiling tier's ring for an
    /// observer of [`Observer::RING`].
    ring: bool,
    /// Counted blocks keep no counters (an observer of [`Observer::UNCOUNTED`]).
    uncounted: bool,
    /// Counted blocks append each basic block they run to the tier's trace, handed to the
    /// observer as whole basic blocks ([`Observer::TRACE`]).
    trace: bool,
    /// Functional warming ([`Observer::WARM`]): counted, traced blocks also append their
    /// accesses' addresses, and blocks not compiled run on the single-step interpreter.
    warm: bool,
    /// With `warm`: every block's instructions' access sizes ([`warm_size`]), beside `lens`.
    sizes: Vec<u8>,
    /// The ring's latest entries, as the tier last handed them over.
    ring_last: Vec<[u64; 2]>,
    /// The whole basic blocks of the tier's last trace, for [`Observer::blocks`].
    traced: Vec<(u64, u32)>,
    /// Counts of compiled blocks a flush dropped before the observer had them, by (start,
    /// instruction lengths, classes): runs ([`Machine::drain_counts`]). Merged by block, so
    /// code flushed again and again (a guest that rewrites it in a loop) adds no entries.
    flushed_counts: HashMap<CountedBlock, u64>,
    /// The block running now ([`NOT_RUNNING`] outside the block engine).
    running: u32,
    /// What the observer hooks need of the block that was running when the cache was last
    /// flushed (by one of its own instructions).
    saved: Option<Box<SavedBlock>>,
    /// Most host bytes the cache may hold before it starts over.
    max_bytes: u64,
}

/// A block as an observer of counts knows it: start, instruction lengths, classes.
type CountedBlock = (u64, Box<[u8]>, [u32; 8]);

/// [`warm_size`] of an instruction whose access has no size known before it runs.
const DYNAMIC: u8 = u8::MAX;

/// The bytes an instruction that does `sem` accesses, as its retire record's `mem_size`, when
/// that is known before it runs (0: none); [`DYNAMIC`] otherwise (a store-conditional
/// that may fail, a vector access, `cbo.zero`): functional warming does not compile it.
fn warm_size(sem: Sem) -> u8 {
    match sem {
        Sem::Load(size, _) | Sem::Store(size) | Sem::FLoad(size) | Sem::FStore(size) => size,
        Sem::Amo(_, size) => size,
        Sem::Lr(_) | Sem::Sc(_) | Sem::Vector | Sem::CboZero => DYNAMIC,
        _ => 0,
    }
}

/// The transfer functional warming reads of a block that ends with `u`, whose last
/// instruction does `sem` (`WarmRun::end`).
fn warm_end(u: &Uop, sem: Sem) -> Option<WarmEnd> {
    match sem {
        Sem::Branch(_) => Some(WarmEnd::Branch),
        Sem::Jal | Sem::Jalr => Some(WarmEnd::Jump {
            kind: jit::taken_kind(u),
            indirect: sem == Sem::Jalr,
        }),
        _ => None,
    }
}

/// Host bytes of one page's block table.
const TABLE_BYTES: u64 = (SLOTS * 4) as u64;
/// Host bytes per block, micro-op and generic entry (the vectors' element sizes).
const BLOCK_BYTES: u64 = std::mem::size_of::<Block>() as u64;
const UOP_BYTES: u64 = (std::mem::size_of::<Uop>() + std::mem::size_of::<Meta>()) as u64;
const GENERIC_BYTES: u64 = std::mem::size_of::<(Inst, u64, u16)>() as u64;

impl BlockCache {
    /// An empty cache that holds at most `max_bytes` of host memory.
    /// Takes over the compiled blocks' counts `from` kept (an address space going away
    /// before the observer had them).
    pub(super) fn take_kept_counts(&mut self, from: &mut BlockCache) {
        for (k, n) in from.flushed_counts.drain() {
            *self.flushed_counts.entry(k).or_insert(0) += n;
        }
    }

    pub(super) fn new(max_bytes: u64) -> Self {
        BlockCache {
            pages: HashMap::new(),
            tables: Vec::new(),
            recent: [(u64::MAX, 0); RECENT],
            blocks: Vec::new(),
            uops: Vec::new(),
            meta: Vec::new(),
            generic: Vec::new(),
            lens: Vec::new(),
            generation: 0,
            extended: false,
            counting: false,
            ring: false,
            uncounted: false,
            trace: false,
            warm: false,
            sizes: Vec::new(),
            ring_last: Vec::new(),
            traced: Vec::new(),
            flushed_counts: HashMap::new(),
            running: NOT_RUNNING,
            saved: None,
            max_bytes,
        }
    }

    /// The accesses of the instructions whose sizes start at `at` ([`Block::accesses`]).
    fn accesses_from(&self, at: usize) -> u16 {
        let sizes = self.sizes.get(at..).unwrap_or_default();
        if sizes.contains(&DYNAMIC) {
            return u16::MAX;
        }
        sizes.iter().filter(|&&s| s != 0).count() as u16
    }

    /// Block `b`'s instructions' access sizes (with [`BlockCache::warm`]).
    #[inline(always)]
    fn block_sizes(&self, b: &Block) -> &[u8] {
        let at = b.lens_at as usize;
        self.sizes
            .get(at..at + b.insns as usize)
            .unwrap_or_default()
    }

    /// Host bytes held for decoded blocks.
    pub(super) fn host_bytes(&self) -> u64 {
        self.tables.len() as u64 * TABLE_BYTES
            + self.blocks.len() as u64 * BLOCK_BYTES
            + self.uops.len() as u64 * UOP_BYTES
            + self.generic.len() as u64 * GENERIC_BYTES
            + self.lens.len() as u64
            + self.sizes.len() as u64
    }

    /// Block `b`'s instruction lengths.
    #[inline(always)]
    fn block_lens(&self, b: &Block) -> &[u8] {
        let at = b.lens_at as usize;
        self.lens.get(at..at + b.insns as usize).unwrap_or_default()
    }

    /// A copy of the running block's hook data.
    fn running_saved(&self) -> Option<Box<SavedBlock>> {
        self.blocks.get(self.running as usize).map(|b| {
            let (first, count) = (b.first as usize, b.count as usize);
            Box::new(SavedBlock {
                classes: b.classes,
                insns: b.insns,
                ends_basic_block: b.ends_basic_block,
                meta: self
                    .meta
                    .get(first..first + count)
                    .unwrap_or_default()
                    .to_vec(),
                lens: self.block_lens(b).to_vec(),
            })
        })
    }

    /// Hands the running block's hook data to `to`, the cache of the address space an
    /// `execve` replaces this one with, as a flush would: the block that made the call ends
    /// there, and is reported as the old program's.
    pub(super) fn hand_over_running(&self, to: &mut BlockCache) {
        to.saved = self.running_saved();
        to.generation = to.generation.max(self.generation) + 1;
        to.running = NOT_RUNNING;
    }

    /// Forgets every block (keeping a copy of the running one's hook data).
    pub(super) fn flush(&mut self) {
        self.saved = self.running_saved();
        self.running = NOT_RUNNING;
        self.pages.clear();
        self.tables.clear();
        self.recent = [(u64::MAX, 0); RECENT];
        self.blocks.clear();
        self.uops.clear();
        self.meta.clear();
        self.generic.clear();
        self.lens.clear();
        self.sizes.clear();
        self.generation += 1;
    }
}

/// [`BlockCache::running`] outside the block engine.
const NOT_RUNNING: u32 = u32::MAX;

/// What the observer hooks need of a block whose record a flush dropped while it ran.
#[derive(Debug)]
struct SavedBlock {
    classes: [u32; 8],
    insns: u32,
    ends_basic_block: bool,
    meta: Vec<Meta>,
    lens: Vec<u8>,
}

/// How running one block ended.
enum BlockExit {
    /// It ran to its end: the next pc, and the kind of the taken branch that ended it.
    Done(u64, Option<BranchKind>),
    /// A system call ended the guest with this status; the block ran to its end.
    Exited(i32, u64),
    /// A conditional branch was taken to the pc, after this many instructions of the block.
    Taken(u64, u32),
    /// Its first `retired` micro-ops retired, then code changed (the cache was flushed):
    /// `self.pc` and `self.instret` are at the next instruction, which a new block runs.
    Resume(usize),
    /// Its first `retired` micro-ops retired; `self.pc` and `self.instret` are at an
    /// instruction the oracle must run (it faults, or traps to the guest).
    Oracle(usize),
}

/// The register a compressed or full instruction names, as an index.
#[inline(always)]
fn r(v: u8) -> usize {
    v as usize & 31
}

const _: () = assert!(std::mem::size_of::<Uop>() == 16);

impl K {
    /// Whether it is always the last micro-op of its block (a branch, jump or system call).
    fn ends_block(self) -> bool {
        self.is_conditional() || matches!(self, K::Jal | K::Jalr | K::AuipcJalr | K::Ecall)
    }
    /// Whether it is a conditional branch (or `brr`).
    fn is_conditional(self) -> bool {
        matches!(
            self,
            K::Beq | K::Bne | K::Blt | K::Bge | K::Bltu | K::Bgeu | K::Beqz | K::Bnez | K::Brr
        )
    }
}

// The block engine's memory, branch and double-precision micro-ops, expanded in the match of
// `exec_block` (`$m` is the machine; `$fault` is what a fault or an invalid rounding mode does
// there: the oracle redoes the instruction and raises it).

/// A conditional branch: taken, the block ends (`aux` = its instructions so far); not taken,
/// the block goes on (or ends, if the branch is its last micro-op).
macro_rules! cond {
    ($c:expr, $u:expr) => {{
        if $c {
            return BlockExit::Taken($u.imm, $u.aux as u32);
        }
    }};
}

/// A load micro-op into an x register (`$fault` on an access fault).
macro_rules! uop_load {
    ($m:expr, $method:ident, $u:expr, $rs1:expr, $conv:expr, $fault:expr) => {{
        match $m.mem.$method($rs1.wrapping_add($u.imm)) {
            Ok(v) => $m.x[r($u.rd)] = $conv(v),
            Err(_) => $fault,
        }
    }};
}

/// A store micro-op: `$fault` on an access fault; a reservation on its doubleword cleared;
/// `$changed` when the store changed decoded code (perhaps this very block's).
macro_rules! uop_store {
    ($m:expr, $method:ident, $u:expr, $rs1:expr, $v:expr, $fault:expr, $changed:expr) => {{
        let a = $rs1.wrapping_add($u.imm);
        if $m.mem.$method(a, $v).is_err() {
            $fault;
        }
        if $m.reservation == Some(a & !7) {
            $m.reservation = None;
        }
        if $m.mem.code_epoch() != $m.icache.epoch {
            $changed;
        }
    }};
}

/// Double-precision arithmetic with its rounding mode and exception flags.
macro_rules! fp2 {
    ($m:expr, $f:ident, $u:expr, $fault:expr) => {{
        let Some(rm) = $m.rm(($u.aux >> 8) as u8) else {
            $fault
        };
        let mut fl = 0;
        $m.f[r($u.rd)] = fpu::$f($m.f[r($u.rs1)], $m.f[r($u.rs2)], rm, &mut fl);
        $m.fflags |= fl;
    }};
}

/// A fused multiply-add (the third source in `aux`'s low byte).
macro_rules! fp3 {
    ($m:expr, $f:ident, $u:expr, $fault:expr) => {{
        let Some(rm) = $m.rm(($u.aux >> 8) as u8) else {
            $fault
        };
        let mut fl = 0;
        let (a, b, c) = ($m.f[r($u.rs1)], $m.f[r($u.rs2)], $m.f[r($u.aux as u8)]);
        $m.f[r($u.rd)] = fpu::$f(a, b, c, rm, &mut fl);
        $m.fflags |= fl;
    }};
}

/// A comparison into an x register, with its exception flags.
macro_rules! fcmp {
    ($m:expr, $f:ident, $u:expr) => {{
        let mut fl = 0;
        let v = fpu::$f($m.f[r($u.rs1)], $m.f[r($u.rs2)], &mut fl);
        $m.x[r($u.rd)] = u64::from(v);
        $m.x[0] = 0;
        $m.fflags |= fl;
    }};
}

/// A sign injection or a move between the register files.
macro_rules! fmove {
    ($m:expr, $op:ident, $u:expr) => {
        FMove::$op.eval($m.f[r($u.rs1)], $m.f[r($u.rs2)])
    };
}

impl Machine {
    /// Runs blocks until something needs the oracle (`None`: `self.pc` is the instruction to
    /// single-step) or the run ends.
    pub(super) fn run_blocks<O: Observer>(&mut self, obs: &mut O) -> Option<super::Outcome> {
        // An observer that reads no block-level stream gets extended blocks, which run on
        // through not-taken conditional branches (fewer, longer blocks); the others get basic
        // blocks. The shapes differ, so a change of observer starts the cache over.
        // (functional warming: basic blocks, counted without counters and traced, which
        // append their accesses' addresses too)
        let warm = O::WARM;
        let extended = !(O::BLOCKS || O::BRANCHES || O::CLASSES || warm);
        // counted blocks lie in one of the observer's ranges and leave records only at their
        // ends (compiled differently from recording blocks: a change starts over too)
        let counting = !extended && (O::COUNTS || warm);
        let (ring, uncounted) = (counting && O::RING, counting && (O::UNCOUNTED || warm));
        let trace = counting && (O::TRACE || warm);
        let mode = (extended, counting, ring, uncounted, trace, warm);
        let b = &self.blocks;
        if (b.extended, b.counting, b.ring, b.uncounted, b.trace, b.warm) != mode {
            self.flush_icache();
            self.blocks.extended = extended;
            self.blocks.counting = counting;
            self.blocks.ring = ring;
            self.blocks.uncounted = uncounted;
            self.blocks.trace = trace;
            self.blocks.warm = warm;
        }
        // The micro-ops live in a local for the whole call, so the hot loop reads them through
        // a slice in registers; a flush meanwhile (seen by its generation) clears them too.
        let mut uops = std::mem::take(&mut self.blocks.uops);
        let outcome = self.run_blocks_with(&mut uops, obs);
        self.blocks.uops = uops;
        outcome
    }

    /// One more run of block `id` on the engine: at the compiler's threshold
    /// ([`Machine::jit_hot_baseline`] or [`Machine::jit_hot`]) its unit is compiled.
    #[inline(always)]
    fn heat_up<O: Observer>(&mut self, id: u32, uops: &[Uop], obs: &mut O) {
        let hot = if self.jit_baseline && outcrop_jit::BASELINE {
            self.jit_hot_baseline
        } else {
            self.jit_hot
        };
        if let Some(b) = self.blocks.blocks.get_mut(id as usize) {
            if b.jit != jit::NEVER {
                b.heat = b.heat.saturating_add(1);
                if b.heat >= hot {
                    b.heat = 0;
                    self.compile_unit(id, uops, obs);
                }
            }
        }
    }

    fn run_blocks_with<O: Observer>(
        &mut self,
        uops: &mut Vec<Uop>,
        obs: &mut O,
    ) -> Option<super::Outcome> {
        use super::Outcome;
        let mut pc = self.pc;
        let mut id = self.block_at(pc, uops)?;
        // the compiling tier runs hot blocks when nothing reads block-level streams (a
        // reservation pending keeps every store on the engine's path, which clears it)
        // runs hot blocks; under an observer that reads block-level streams, compiled blocks
        // append records that the observer's hooks are run from (`jit::drain`)
        let tier = self.engine == super::Engine::Jit && !self.jit_unavailable;
        // the block at `pc` runs on the engine once (compiled code left it there)
        let mut engine_once = false;
        let mut tick = 0u32;
        loop {
            if tier && !engine_once && self.reservation.is_none() {
                tick = tick.wrapping_add(1);
                if tick & 63 == 0 && self.jit_pending() {
                    self.poll_jit();
                }
                if !self.compiled(id) && !self.jit_waiting(id) {
                    self.heat_up(id, uops, obs);
                }
                if self.compiled(id) {
                    if O::MAPPINGS
                        && self.mappings_seen != self.kernel.mapped_objects().len()
                        && self.note_mappings(obs) == Control::Stop
                    {
                        self.pc = pc;
                        return Some(Outcome::Stopped);
                    }
                    match self.enter_jit(pc, obs) {
                        jit::After::Go(next) => {
                            // (a code change flushed the blocks: `uops` with them)
                            if self.blocks.blocks.is_empty() {
                                uops.clear();
                            }
                            pc = next;
                            self.pc = pc;
                            id = self.block_at(pc, uops)?;
                        }
                        jit::After::Engine(at) => {
                            pc = at;
                            self.pc = pc;
                            id = self.block_at(pc, uops)?;
                            engine_once = true;
                        }
                        jit::After::Oracle => return None,
                        jit::After::Stopped => return Some(Outcome::Stopped),
                    }
                    continue;
                }
            }
            engine_once = false;
            if O::WARM {
                self.pc = pc;
                (pc, id) = match self.warm_on_steps(id, uops, obs) {
                    Ok(next) => next,
                    Err(outcome) => return outcome,
                };
                continue;
            }
            if O::MAPPINGS
                && self.mappings_seen != self.kernel.mapped_objects().len()
                && self.note_mappings(obs) == Control::Stop
            {
                self.pc = pc;
                return Some(Outcome::Stopped);
            }
            let insns = u64::from(self.blocks.blocks[id as usize].insns);
            let left = self
                .stop_at
                .saturating_sub(self.instret.saturating_add(self.traps));
            if left < insns {
                self.pc = pc;
                return None;
            }
            let base = self.instret;
            let generation = self.blocks.generation;
            self.blocks.running = id;
            let exit = self.exec_block(uops, id, base);
            let flushed = self.blocks.generation != generation;
            if flushed {
                uops.clear();
            }
            // the common ends: ran to its end, or left by a taken branch
            let ended = match exit {
                BlockExit::Done(next, kind) if !flushed => Some((next, kind, insns)),
                // (branches flush nothing: after a flush the block would have resumed)
                BlockExit::Taken(next, retired) => {
                    Some((next, Some(BranchKind::Cond), u64::from(retired)))
                }
                _ => None,
            };
            if let Some((next, kind, retired)) = ended {
                self.instret = base + retired;
                if self.block_hooks(id, next, kind, self.x[2], obs) == Control::Stop {
                    self.pc = next;
                    return Some(Outcome::Stopped);
                }
                pc = next;
                id = match self.follow_link(id, next, uops) {
                    Some(n) => n,
                    None => {
                        self.pc = pc;
                        return None;
                    }
                };
                continue;
            }
            match exit {
                // handled above
                BlockExit::Taken(_, _) => {}
                BlockExit::Done(next, _) => {
                    // its last instruction (a system call) changed code: the block is gone
                    self.instret = base + insns;
                    self.pc = next;
                    if self.cold_hooks(id, flushed, None, obs) == Control::Stop {
                        return Some(Outcome::Stopped);
                    }
                    pc = next;
                    id = self.block_at(pc, uops)?;
                }
                BlockExit::Exited(code, next) => {
                    // the system call is the block's last instruction: observers see the
                    // block end, as under the oracle, before the run ends
                    self.instret = base + insns;
                    self.pc = next;
                    self.cold_hooks(id, flushed, None, obs);
                    return Some(Outcome::Exited(code));
                }
                BlockExit::Resume(retired) => {
                    if self.cold_hooks(id, flushed, Some(retired), obs) == Control::Stop {
                        return Some(Outcome::Stopped);
                    }
                    pc = self.pc;
                    id = self.block_at(pc, uops)?;
                }
                BlockExit::Oracle(retired) => {
                    if self.cold_hooks(id, flushed, Some(retired), obs) == Control::Stop {
                        return Some(Outcome::Stopped);
                    }
                    return None;
                }
            }
        }
    }

    /// Functional warming ([`Observer::WARM`]) of block `id` at `self.pc`, not compiled: the
    /// single-step interpreter runs its instructions, and their retire records warm the
    /// model. Where the run goes on and its block, or how [`Machine::run_blocks`] returns.
    fn warm_on_steps<O: Observer>(
        &mut self,
        id: u32,
        uops: &mut Vec<Uop>,
        obs: &mut O,
    ) -> Result<(u64, u32), Option<super::Outcome>> {
        let insns = u64::from(self.blocks.blocks[id as usize].insns);
        let generation = self.blocks.generation;
        if let Some(outcome) = self.run_steps(obs, insns) {
            return Err(Some(outcome));
        }
        if self.blocks.generation != generation {
            uops.clear();
        }
        let pc = self.pc;
        Ok((pc, self.block_at(pc, uops).ok_or(None)?))
    }

    /// The observer hooks for block `id`, run to its end, then going to `next` with the stack
    /// pointer at `sp`.
    #[inline(always)]
    pub(super) fn block_hooks<O: Observer>(
        &mut self,
        id: u32,
        next: u64,
        kind: Option<BranchKind>,
        sp: u64,
        obs: &mut O,
    ) -> Control {
        let mut control = Control::Continue;
        if !(O::CLASSES || O::BRANCHES || O::BLOCKS) {
            return control;
        }
        let b = &self.blocks.blocks[id as usize];
        if O::CLASSES {
            control = control.and(obs.classes(&b.classes));
        }
        if O::BRANCHES {
            if let Some(kind) = kind {
                control = control.and(obs.taken_branch(b.last_pc, next, kind));
                if O::STACK
                    && matches!(
                        kind,
                        BranchKind::Call | BranchKind::Return | BranchKind::Indirect
                    )
                {
                    control = control.and(obs.stack(sp));
                }
            }
        }
        if O::BLOCKS {
            if O::BLOCK_LENS {
                let lens = self.blocks.block_lens(b);
                if b.ends_basic_block && self.block_lens.is_empty() {
                    // the common case: the basic block is this block
                    control = control.and(obs.block_lens(self.block_start, lens));
                    self.block_start = next;
                    self.block_len = 0;
                    return control;
                }
                self.block_lens.extend_from_slice(lens);
            }
            self.block_len += b.insns;
            if b.ends_basic_block {
                control = control.and(self.end_block(obs));
                self.block_start = next;
            }
        }
        control
    }

    /// The hooks of block `id` when it stopped early (after its first `retired` micro-ops:
    /// no branch was taken) or when it ran to its end (`None`) but a flush dropped it (from
    /// the copy the flush kept). `self.pc` is where the run goes on.
    #[cold]
    pub(super) fn cold_hooks<O: Observer>(
        &mut self,
        id: u32,
        flushed: bool,
        retired: Option<usize>,
        obs: &mut O,
    ) -> Control {
        if !(O::CLASSES || O::BLOCKS) {
            return Control::Continue;
        }
        let saved = if flushed {
            self.blocks.saved.take()
        } else {
            self.blocks.blocks.get(id as usize).map(|b| {
                let (first, count) = (b.first as usize, b.count as usize);
                Box::new(SavedBlock {
                    classes: b.classes,
                    insns: b.insns,
                    ends_basic_block: b.ends_basic_block,
                    meta: self.blocks.meta[first..first + count].to_vec(),
                    lens: if O::BLOCK_LENS {
                        self.blocks.block_lens(b).to_vec()
                    } else {
                        Vec::new()
                    },
                })
            })
        };
        let Some(saved) = saved else {
            return Control::Continue;
        };
        let (classes, insns, ends) = match retired {
            None => (saved.classes, saved.insns, saved.ends_basic_block),
            Some(retired) => {
                let mut classes = [0u32; 8];
                for m in &saved.meta[..retired.min(saved.meta.len())] {
                    classes[m.class as usize] += 1;
                    if m.fused {
                        classes[Class::Alu as usize] += 1;
                    }
                }
                (classes, classes.iter().sum(), false)
            }
        };
        if O::BLOCK_LENS {
            let n = (insns as usize).min(saved.lens.len());
            self.block_lens.extend_from_slice(&saved.lens[..n]);
        }
        let mut control = Control::Continue;
        if O::CLASSES {
            control = control.and(obs.classes(&classes));
        }
        if O::BLOCKS {
            self.block_len += insns;
            if ends {
                control = control.and(self.end_block(obs));
                self.block_start = self.pc;
            }
        }
        control
    }

    /// The block that runs at `next` after block `id`: from its links, else looked up (and
    /// linked).
    #[inline(always)]
    fn follow_link(&mut self, id: u32, next: u64, uops: &mut Vec<Uop>) -> Option<u32> {
        let links = self.blocks.blocks[id as usize].links;
        if links[0].0 == next {
            return Some(links[0].1);
        }
        if links[1].0 == next {
            return Some(links[1].1);
        }
        let to = self.block_at(next, uops)?;
        if let Some(b) = self.blocks.blocks.get_mut(id as usize) {
            b.links = [(next, to), b.links[0]];
        }
        Some(to)
    }

    /// The block starting at `pc`, built if new; `None` if the oracle must run `pc`.
    #[inline(never)]
    fn block_at(&mut self, pc: u64, uops: &mut Vec<Uop>) -> Option<u32> {
        if pc & 1 != 0 {
            return None;
        }
        let vpn = pc >> 12;
        let recent = (vpn as usize) & (RECENT - 1);
        let table = match self.blocks.recent[recent] {
            (v, t) if v == vpn => t,
            _ => match self.blocks.pages.get(&vpn) {
                Some(&t) => t,
                None => {
                    if self.mem.perm_at(pc) & perm::X == 0 {
                        return None;
                    }
                    self.make_room(uops);
                    let t = self.blocks.tables.len() as u32;
                    self.blocks.tables.push(Box::new([NONE; SLOTS]));
                    self.blocks.pages.insert(vpn, t);
                    t
                }
            },
        };
        self.blocks.recent[recent] = (vpn, table);
        let slot = ((pc & (PAGE_SIZE - 1)) >> 1) as usize;
        match self.blocks.tables[table as usize][slot] {
            ORACLE => None,
            NONE => {
                let built = self.build_block(pc, uops);
                let entry = built.map_or(ORACLE, |id| id + 1);
                if let Some(t) = self.blocks.tables.get_mut(table as usize) {
                    t[slot] = entry;
                }
                built
            }
            e => Some(e - 1),
        }
    }

    /// Starts the cache over when it holds its budget's worth (a block is at most
    /// [`MAX_UOPS`] micro-ops, so one more stays within a block's bytes of it).
    /// `uops` are the micro-ops (out of the cache while blocks run).
    fn make_room(&mut self, uops: &mut Vec<Uop>) {
        let block_max = TABLE_BYTES + BLOCK_BYTES + MAX_UOPS as u64 * (UOP_BYTES + GENERIC_BYTES);
        // one budget for decoded blocks and the single-step interpreter's decoded pages
        let held = self.blocks.host_bytes()
            + uops.len() as u64 * UOP_BYTES
            + self.icache_bytes()
            + self.jit_bytes();
        if held + block_max > self.blocks.max_bytes {
            self.flush_icache();
            uops.clear();
        }
    }

    /// Decodes the instruction at `pc` if it starts in the page ending at `page_end` and can
    /// be fetched. A 4-byte instruction may end in the next page (its fetch marks that page
    /// as holding decoded code too, so a store there drops the block as one to its own page
    /// does); it is then the block's last (a program whose hot loop has one ran each pass
    /// through it on the single-step interpreter: 0.5 M exits from compiled code in one lzip
    /// run).
    fn fetch_in_page(&mut self, pc: u64, page_end: u64) -> Option<Inst> {
        let lo = self.mem.fetch_u16(pc).ok()?;
        let hi = if lo & 3 == 3 {
            if pc + 2 > page_end {
                return None;
            }
            self.mem.fetch_u16(pc + 2).ok()?
        } else {
            0
        };
        Some(self.decode_isa(lo, hi))
    }

    /// Translates the instructions from `pc` into a new block; `None` if not even the first
    /// can be (the oracle runs it).
    fn build_block(&mut self, pc: u64, uops: &mut Vec<Uop>) -> Option<u32> {
        self.make_room(uops);
        let page_end = (pc | (PAGE_SIZE - 1)) + 1;
        let first = uops.len();
        let lens_at = self.blocks.lens.len() as u32;
        let mut at = pc;
        let mut insns: u16 = 0;
        let mut classes = [0u32; 8];
        let mut ends_basic_block = false;
        let mut last_pc = pc;
        let mut pending = self.fetch_in_page(at, page_end);
        while let Some(inst) = pending.take() {
            if uops.len() - first >= MAX_UOPS || matches!(inst.op, Op::Illegal | Op::Ebreak) {
                // what always traps ends the block before it: the oracle runs it
                break;
            }
            let len = u64::from(inst.len);
            let after = at + len;
            let next = if after < page_end {
                self.fetch_in_page(after, page_end)
            } else {
                None
            };
            let fused = next.and_then(|n| fuse(&inst, &n, at));
            let (uop, count, last) = match fused {
                Some(u) => (u, 2u16, next.unwrap_or(inst)),
                None => (self.translate(&inst, at, insns), 1u16, inst),
            };
            let end = match fused {
                Some(_) => after + u64::from(last.len),
                None => after,
            };
            uops.push(uop);
            self.blocks.lens.push(inst.len);
            if fused.is_some() {
                self.blocks.lens.push(last.len);
            }
            if self.blocks.warm {
                self.blocks.sizes.push(warm_size(inst.op.sem()));
                if fused.is_some() {
                    self.blocks.sizes.push(warm_size(last.op.sem()));
                }
            }
            self.blocks.meta.push(Meta {
                off: (at - pc) as u16,
                next_off: (end - pc) as u16,
                n: insns,
                class: last.class,
                fused: count == 2,
                sem: last.op.sem(),
            });
            classes[inst.class as usize] += 1;
            if count == 2 {
                classes[last.class as usize] += 1;
            }
            insns += count;
            last_pc = end - u64::from(last.len);
            at = end;
            if uop.k.ends_block() {
                ends_basic_block = true;
                if uop.k.is_conditional() {
                    // a conditional branch: a taken exit retires this many
                    if let Some(u) = uops.last_mut() {
                        u.aux = i32::from(insns);
                    }
                    if self.blocks.extended && uop.k != K::Brr {
                        ends_basic_block = false;
                        if at < page_end {
                            pending = self.fetch_in_page(at, page_end);
                            continue;
                        }
                    }
                }
                break;
            }
            if at >= page_end {
                break;
            }
            pending = match fused {
                Some(_) => self.fetch_in_page(at, page_end),
                None => next,
            };
        }
        let count = uops.len() - first;
        if count == 0 {
            self.blocks.lens.truncate(lens_at as usize);
            self.blocks.sizes.truncate(lens_at as usize);
            return None;
        }
        let id = self.blocks.blocks.len() as u32;
        self.blocks.blocks.push(Block {
            start: pc,
            end: at,
            first: first as u32,
            count: count as u32,
            insns: u32::from(insns),
            last_pc,
            ends_basic_block,
            classes,
            lens_at,
            links: [(u64::MAX, 0); 2],
            heat: 0,
            jit: 0,
            pending: 0,
            taken_kind: uops.last().map_or(BranchKind::Cond, jit::taken_kind),
            accesses: self.blocks.accesses_from(lens_at as usize),
            warm_end: uops
                .last()
                .and_then(|u| warm_end(u, self.blocks.meta.last()?.sem)),
        });
        Some(id)
    }

    /// The micro-op for one instruction at `pc`, the `n`-th of its block: chosen by what the
    /// instruction does ([`Sem`]), with the forms compilers emit most given their own kinds.
    fn translate(&mut self, i: &Inst, pc: u64, n: u16) -> Uop {
        let imm = i.imm as i64 as u64;
        let (rd, rs1, rs2) = (i.rd & 31, i.rs1 & 31, i.rs2 & 31);
        let u = |k: K, imm: u64| Uop {
            k,
            rd,
            rs1,
            rs2,
            aux: i.imm,
            imm,
        };
        let alu = |k: K| if rd == 0 { u(K::Nop, 0) } else { u(k, imm) };
        let li = |v: u64| if rd == 0 { u(K::Nop, 0) } else { u(K::Li, v) };
        let fp = |k: K| Uop {
            aux: i32::from(i.rs3 & 31) | i32::from(i.rm) << 8,
            ..u(k, 0)
        };
        let target = pc.wrapping_add(imm);
        match i.op.sem() {
            Sem::Lui => li(imm),
            Sem::Auipc => li(target),
            Sem::AluImm(Alu::Add) if rs1 == 0 => li(imm),
            Sem::AluImm(Alu::Add) if imm == 0 => alu(K::Mv),
            Sem::Alu(Alu::Add) if rs1 == 0 => Uop {
                rs1: rs2,
                ..alu(K::Mv)
            },
            Sem::Alu(Alu::Add) if rs2 == 0 => alu(K::Mv),
            Sem::Alu(op) => Uop {
                aux: op as i32,
                ..alu(fast(op, false).unwrap_or(K::Alu))
            },
            Sem::AluImm(op) => Uop {
                aux: op as i32,
                ..alu(fast(op, true).unwrap_or(K::AluImm))
            },
            Sem::Zero => li(0),
            Sem::Nop => u(K::Nop, 0),
            Sem::Load(size, signed) if rd != 0 => u(load_kind(size, signed), imm),
            Sem::Store(size) => u(store_kind(size), imm),
            Sem::FLoad(size) => u(if size == 4 { K::Flw } else { K::Fld }, imm),
            Sem::FStore(size) => u(if size == 4 { K::Fsw } else { K::Fsd }, imm),
            Sem::FMove(m) => fp(match m {
                FMove::XFromD => K::FmvXD,
                FMove::DFromX => K::FmvDX,
                FMove::SgnjD => K::FsgnjD,
                FMove::SgnjnD => K::FsgnjnD,
                FMove::SgnjxD => K::FsgnjxD,
            }),
            // the double-precision arithmetic compilers emit most, without the FP family's
            // dispatch (the same soft-float functions)
            Sem::Float => match i.op {
                Op::FaddD => fp(K::FaddD),
                Op::FsubD => fp(K::FsubD),
                Op::FmulD => fp(K::FmulD),
                Op::FdivD => fp(K::FdivD),
                Op::FmaddD => fp(K::FmaddD),
                Op::FmsubD => fp(K::FmsubD),
                Op::FnmsubD => fp(K::FnmsubD),
                Op::FnmaddD => fp(K::FnmaddD),
                Op::FeqD => fp(K::FeqD),
                Op::FltD => fp(K::FltD),
                Op::FleD => fp(K::FleD),
                _ => self.generic(i, pc, n, K::Float),
            },
            Sem::Branch(Cond::Eq) if rs2 == 0 => u(K::Beqz, target),
            Sem::Branch(Cond::Ne) if rs2 == 0 => u(K::Bnez, target),
            Sem::Branch(c) => u(branch_kind(c), target),
            // `brr` keeps its frequency field in `rd`
            Sem::Brr => Uop {
                rd: i.rd,
                ..u(K::Brr, target)
            },
            Sem::Jal => u(K::Jal, target),
            Sem::Jalr => u(K::Jalr, imm),
            Sem::Ecall => self.generic(i, pc, n, K::Ecall),
            _ => self.generic(i, pc, n, K::Generic),
        }
    }

    /// A micro-op that runs `i` through the oracle's `step`.
    fn generic(&mut self, i: &Inst, pc: u64, n: u16, k: K) -> Uop {
        let at = self.blocks.generic.len() as u64;
        self.blocks.generic.push((*i, pc, n));
        Uop {
            k,
            rd: i.rd & 31,
            rs1: i.rs1 & 31,
            rs2: i.rs2 & 31,
            aux: 0,
            imm: at,
        }
    }

    /// Runs block `id` with `base` instructions retired before it.
    #[inline(always)]
    fn exec_block(&mut self, uops: &[Uop], id: u32, base: u64) -> BlockExit {
        let b = &self.blocks.blocks[id as usize];
        let (first, count, end) = (b.first as usize, b.count as usize, b.end);
        let Some(block) = uops.get(first..first + count) else {
            return BlockExit::Oracle(0);
        };
        let mut i = first;
        macro_rules! fault {
            () => {{
                return self.stop_before(i, base, BlockExit::Oracle(i - first));
            }};
        }
        macro_rules! load {
            ($($a:tt)*) => { uop_load!(self, $($a)*, fault!()) };
        }
        macro_rules! store {
            ($($a:tt)*) => {
                uop_store!(self, $($a)*, fault!(), return self.code_changed(i, base, first))
            };
        }
        // `i` is counted by hand: the fault macros above name it
        #[allow(clippy::explicit_counter_loop)]
        for &u in block {
            let rs1 = self.x[r(u.rs1)];
            let rs2 = self.x[r(u.rs2)];
            let rd = r(u.rd);
            match u.k {
                K::Nop => {}
                K::Li => self.x[rd] = u.imm,
                K::Mv => self.x[rd] = rs1,
                K::Alu => self.x[rd] = eval_outlined(u.aux, rs1, rs2),
                K::AluImm => self.x[rd] = eval_outlined(u.aux, rs1, u.imm),
                K::Add => self.x[rd] = Alu::Add.eval(rs1, rs2),
                K::Sub => self.x[rd] = Alu::Sub.eval(rs1, rs2),
                K::And => self.x[rd] = Alu::And.eval(rs1, rs2),
                K::Or => self.x[rd] = Alu::Or.eval(rs1, rs2),
                K::Xor => self.x[rd] = Alu::Xor.eval(rs1, rs2),
                K::Sll => self.x[rd] = Alu::Sll.eval(rs1, rs2),
                K::Srl => self.x[rd] = Alu::Srl.eval(rs1, rs2),
                K::Sltu => self.x[rd] = Alu::Sltu.eval(rs1, rs2),
                K::Addw => self.x[rd] = Alu::Addw.eval(rs1, rs2),
                K::Mul => self.x[rd] = Alu::Mul.eval(rs1, rs2),
                K::Addi => self.x[rd] = Alu::Add.eval(rs1, u.imm),
                K::Andi => self.x[rd] = Alu::And.eval(rs1, u.imm),
                K::Ori => self.x[rd] = Alu::Or.eval(rs1, u.imm),
                K::Xori => self.x[rd] = Alu::Xor.eval(rs1, u.imm),
                K::Slli => self.x[rd] = Alu::Sll.eval(rs1, u.imm),
                K::Srli => self.x[rd] = Alu::Srl.eval(rs1, u.imm),
                K::Srai => self.x[rd] = Alu::Sra.eval(rs1, u.imm),
                K::Addiw => self.x[rd] = Alu::Addw.eval(rs1, u.imm),
                K::Sltiu => self.x[rd] = Alu::Sltu.eval(rs1, u.imm),
                K::Lb => load!(load_u8, u, rs1, |v: u8| extend(v.into(), 1, true)),
                K::Lh => load!(load_u16, u, rs1, |v: u16| extend(v.into(), 2, true)),
                K::Lw => load!(load_u32, u, rs1, |v: u32| extend(v.into(), 4, true)),
                K::Ld => load!(load_u64, u, rs1, |v: u64| v),
                K::Lbu => load!(load_u8, u, rs1, u64::from),
                K::Lhu => load!(load_u16, u, rs1, u64::from),
                K::Lwu => load!(load_u32, u, rs1, u64::from),
                K::Sb => store!(store_u8, u, rs1, rs2 as u8),
                K::Sh => store!(store_u16, u, rs1, rs2 as u16),
                K::Sw => store!(store_u32, u, rs1, rs2 as u32),
                K::Sd => store!(store_u64, u, rs1, rs2),
                K::Flw => match self.mem.load_u32(rs1.wrapping_add(u.imm)) {
                    Ok(v) => self.f[rd] = 0xffff_ffff_0000_0000 | u64::from(v),
                    Err(_) => fault!(),
                },
                K::Fld => match self.mem.load_u64(rs1.wrapping_add(u.imm)) {
                    Ok(v) => self.f[rd] = v,
                    Err(_) => fault!(),
                },
                K::Fsw => store!(store_u32, u, rs1, self.f[r(u.rs2)] as u32),
                K::Fsd => store!(store_u64, u, rs1, self.f[r(u.rs2)]),
                K::FaddD => fp2!(self, f64_add, u, fault!()),
                K::FsubD => fp2!(self, f64_sub, u, fault!()),
                K::FmulD => fp2!(self, f64_mul, u, fault!()),
                K::FdivD => fp2!(self, f64_div, u, fault!()),
                K::FmaddD => fp3!(self, f64_madd, u, fault!()),
                K::FmsubD => fp3!(self, f64_msub, u, fault!()),
                K::FnmsubD => fp3!(self, f64_nmsub, u, fault!()),
                K::FnmaddD => fp3!(self, f64_nmadd, u, fault!()),
                K::FsgnjD => self.f[rd] = fmove!(self, SgnjD, u),
                K::FsgnjnD => self.f[rd] = fmove!(self, SgnjnD, u),
                K::FsgnjxD => self.f[rd] = fmove!(self, SgnjxD, u),
                K::FmvXD => {
                    self.x[rd] = fmove!(self, XFromD, u);
                    self.x[0] = 0;
                }
                K::FmvDX => self.f[rd] = FMove::DFromX.eval(rs1, 0),
                K::FeqD => fcmp!(self, f64_eq, u),
                K::FltD => fcmp!(self, f64_lt, u),
                K::FleD => fcmp!(self, f64_le, u),
                K::Float => {
                    if !self.float_uop(u, rs1) {
                        fault!()
                    }
                }
                K::Generic | K::Ecall => {
                    if let Some(exit) = self.exec_generic(u.imm, first, i, base) {
                        return exit;
                    }
                }
                K::Beq => cond!(Cond::Eq.eval(rs1, rs2), u),
                K::Bne => cond!(Cond::Ne.eval(rs1, rs2), u),
                K::Blt => cond!(Cond::Lt.eval(rs1, rs2), u),
                K::Bge => cond!(Cond::Ge.eval(rs1, rs2), u),
                K::Bltu => cond!(Cond::Ltu.eval(rs1, rs2), u),
                K::Bgeu => cond!(Cond::Geu.eval(rs1, rs2), u),
                K::Beqz => cond!(Cond::Eq.eval(rs1, 0), u),
                K::Bnez => cond!(Cond::Ne.eval(rs1, 0), u),
                K::Brr => match self.brr.decide(u.rd) {
                    Some(taken) => cond!(taken, u),
                    // --brr trap: the oracle raises SIGILL
                    None => fault!(),
                },
                K::Jal => {
                    self.x[rd] = end;
                    self.x[0] = 0;
                    let kind = if rd == 1 || rd == 5 {
                        BranchKind::Call
                    } else {
                        BranchKind::Jump
                    };
                    return BlockExit::Done(u.imm, Some(kind));
                }
                K::Jalr => {
                    let target = rs1.wrapping_add(u.imm) & !1;
                    self.x[rd] = end;
                    self.x[0] = 0;
                    return BlockExit::Done(target, Some(jalr_kind(rd, u.rs1, u.aux)));
                }
                K::AuipcJalr => {
                    // auipc rd, hi; jalr rs2, lo(rd)
                    let target = u.imm.wrapping_add(u.aux as i64 as u64) & !1;
                    self.x[rd] = u.imm;
                    let link = r(u.rs2);
                    self.x[link] = end;
                    self.x[0] = 0;
                    return BlockExit::Done(target, Some(jalr_kind(link, u.rd, u.aux)));
                }
            }
            i += 1;
        }
        BlockExit::Done(end, None)
    }

    /// An FP operation the block engine runs through the interpreter's `float` (its
    /// instruction in the generic table); false when it raises the illegal instruction.
    #[inline(always)]
    fn float_uop(&mut self, u: Uop, rs1: u64) -> bool {
        let Some(&(inst, _, _)) = self.blocks.generic.get(u.imm as usize) else {
            return false;
        };
        let (op, rd, rs1f, rs2f, rs3, rm) =
            (inst.op, inst.rd, inst.rs1, inst.rs2, inst.rs3, inst.rm);
        if self.float(op, rd, rs1f, rs2f, rs3, rm, rs1).is_none() {
            return false;
        }
        // comparisons and conversions write x registers, x0 included
        self.x[0] = 0;
        true
    }

    /// Runs generic micro-op `i` (entry `at` of the generic table) through `step`; `None` to
    /// go on with the block.
    #[inline(never)]
    fn exec_generic(&mut self, at: u64, first: usize, i: usize, base: u64) -> Option<BlockExit> {
        let Some(&(inst, pc, n)) = self.blocks.generic.get(at as usize) else {
            // (cannot happen: the entry was pushed with the micro-op) the oracle runs it
            return Some(self.stop_before(i, base, BlockExit::Oracle(i - first)));
        };
        self.instret = base + u64::from(n);
        let generation = self.blocks.generation;
        let last = inst.op == Op::Ecall;
        let (flow, _, next) = self.step(inst, pc, &mut ());
        match flow {
            Flow::Next | Flow::Yield if last => {
                if matches!(flow, Flow::Yield) {
                    self.stop_at = 0; // the scheduler runs before the next block
                }
                Some(BlockExit::Done(next, None))
            }
            Flow::Next if self.blocks.generation != generation => {
                // it changed code (fence.i, an atomic or FP store to a code page)
                self.pc = next;
                Some(BlockExit::Resume(i + 1 - first))
            }
            Flow::Next | Flow::Yield => None,
            Flow::Exit(code) => Some(BlockExit::Exited(code, next)),
            Flow::Fault(_) => {
                self.pc = pc;
                Some(BlockExit::Oracle(i - first))
            }
        }
    }

    /// Puts pc and instret at micro-op `i` of the running block, for the oracle.
    #[cold]
    fn stop_before(&mut self, i: usize, base: u64, exit: BlockExit) -> BlockExit {
        let start = self.blocks.blocks[self.blocks.running as usize].start;
        let m = self.blocks.meta[i];
        self.pc = start + u64::from(m.off);
        self.instret = base + u64::from(m.n);
        exit
    }

    /// A store by micro-op `i` of the running block changed code: flush, and resume after it.
    #[cold]
    fn code_changed(&mut self, i: usize, base: u64, first: usize) -> BlockExit {
        let start = self.blocks.blocks[self.blocks.running as usize].start;
        let m = self.blocks.meta[i];
        self.pc = start + u64::from(m.next_off);
        self.instret = base + u64::from(m.n) + 1;
        self.flush_icache();
        BlockExit::Resume(i + 1 - first)
    }
}

/// Two instructions at `pc` fused into one micro-op, if they are a pair we fuse.
fn fuse(a: &Inst, b: &Inst, pc: u64) -> Option<Uop> {
    let rd = a.rd & 31;
    if rd == 0 || b.rs1 & 31 != rd {
        return None;
    }
    let hi = a.imm as i64 as u64;
    let lo = b.imm as i64 as u64;
    let li = |v: u64| Uop {
        k: K::Li,
        rd,
        rs1: 0,
        rs2: 0,
        aux: 0,
        imm: v,
    };
    match (a.op, b.op) {
        (Op::Lui, Op::Addi) if b.rd & 31 == rd => Some(li(hi.wrapping_add(lo))),
        (Op::Lui, Op::Addiw) if b.rd & 31 == rd => Some(li(Alu::Addw.eval(hi, lo))),
        (Op::Auipc, Op::Addi) if b.rd & 31 == rd => Some(li(pc.wrapping_add(hi).wrapping_add(lo))),
        (Op::Auipc, Op::Jalr) => Some(Uop {
            k: K::AuipcJalr,
            rd,
            rs1: rd,
            rs2: b.rd & 31,
            aux: b.imm,
            imm: pc.wrapping_add(hi),
        }),
        _ => None,
    }
}

/// [`Alu::eval`] as a call: inlined, its whole `match` would sit in the block engine's hot loop
/// and crowd its registers (the loop ran 3–7% slower).
#[inline(never)]
fn eval_outlined(op: i32, a: u64, b: u64) -> u64 {
    Alu::ALL.get(op as usize).map_or(0, |op| op.eval(a, b))
}

/// The kind of its own for integer operation `op` (its immediate form if `imm`), if it is one
/// compilers emit most: dispatched by kind alone rather than by [`K::Alu`] and then the
/// operation (the block engine ran 3–4% slower without them).
fn fast(op: Alu, imm: bool) -> Option<K> {
    Some(match (op, imm) {
        (Alu::Add, false) => K::Add,
        (Alu::Sub, false) => K::Sub,
        (Alu::And, false) => K::And,
        (Alu::Or, false) => K::Or,
        (Alu::Xor, false) => K::Xor,
        (Alu::Sll, false) => K::Sll,
        (Alu::Srl, false) => K::Srl,
        (Alu::Sltu, false) => K::Sltu,
        (Alu::Addw, false) => K::Addw,
        (Alu::Mul, false) => K::Mul,
        (Alu::Add, true) => K::Addi,
        (Alu::And, true) => K::Andi,
        (Alu::Or, true) => K::Ori,
        (Alu::Xor, true) => K::Xori,
        (Alu::Sll, true) => K::Slli,
        (Alu::Srl, true) => K::Srli,
        (Alu::Sra, true) => K::Srai,
        (Alu::Addw, true) => K::Addiw,
        (Alu::Sltu, true) => K::Sltiu,
        _ => return None,
    })
}

/// The micro-op kind of a load of `size` bytes.
fn load_kind(size: u8, signed: bool) -> K {
    match (size, signed) {
        (1, true) => K::Lb,
        (2, true) => K::Lh,
        (4, true) => K::Lw,
        (1, false) => K::Lbu,
        (2, false) => K::Lhu,
        (4, false) => K::Lwu,
        _ => K::Ld,
    }
}

/// The micro-op kind of a store of `size` bytes.
fn store_kind(size: u8) -> K {
    match size {
        1 => K::Sb,
        2 => K::Sh,
        4 => K::Sw,
        _ => K::Sd,
    }
}

/// The micro-op kind of a conditional branch.
fn branch_kind(c: Cond) -> K {
    match c {
        Cond::Eq => K::Beq,
        Cond::Ne => K::Bne,
        Cond::Lt => K::Blt,
        Cond::Ge => K::Bge,
        Cond::Ltu => K::Bltu,
        Cond::Geu => K::Bgeu,
    }
}
