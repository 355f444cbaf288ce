//! The audited module: host code memory, the context compiled code reads, the host helpers it
//! calls, and the calls into it. This is the only place in Outcrop with `unsafe` code besides
//! none; every `unsafe` block states its contract.
//!
//! # What keeps a guest from reaching host memory
//! * Compiled code addresses host memory only through (a) the [`Context`] it is given, (b)
//!   the TLB arrays and the jump cache the context points to, at offsets masked to their
//!   sizes, and (c) the address of an access whose page matched a TLB entry's tag and whose
//!   offset leaves room for its bytes, plus that entry's addend (its frame's address less the
//!   page's, so the sum is the frame plus the page offset: `codegen.rs`, `tlb_probe`;
//!   `baseline.rs`, `probe`): an access of at most 8 bytes inside one 4096-byte frame.
//! * TLB entries are written only here ([`fill`]), from frames the [`Host`] lends, and all of
//!   them are dropped whenever the host's [`Host::frames_epoch`] moves (checked at every entry
//!   and after every helper call), so an entry never outlives the frame it points to.
//! * Records ([`crate::ir::Record`]) are written at `records + min(pos, RECORDS) * 32`, a slot
//!   of the [`RECORDS`] + 1 the context points to (`codegen.rs`, `record`).
//! * Ring entries ([`crate::ir::Block::ring`]) are written at `ring + (pos & (RING - 1)) * 16`,
//!   inside the [`RING`] entries the context points to (`codegen.rs`, `ring_push`).
//! * Trace entries ([`crate::ir::Block::trace`]) are written at
//!   `trace + (pos & (TRACE - 1)) * 4`, inside the [`TRACE`] entries the context points to
//!   (`codegen.rs`, `trace_push`).
//! * Counters ([`crate::ir::Counted`], [`crate::ir::Op::Next`]) are written at the
//!   addresses [`Jit`] gave the code generator for that block: each an element of one of its counter chunks, which are allocated
//!   before the unit is compiled, never move (boxed) and are freed only after the module
//!   (`Drop`); a unit with a slot beyond [`MAX_COUNTERS`] is not compiled.
//! * Jump-cache entries hold only pointers to functions of the live module ([`Jit::insert`]);
//!   the module is freed only after the cache is cleared ([`Jit::flush`]).
//! * Code pages are never writable and executable at once: `cranelift-jit` writes a function
//!   into read-write pages and makes them read-execute when the module is finalized.

#![allow(unsafe_code)]

use crate::codegen::{self, reason};
use crate::ir::{Record, Unit};
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, Signature};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Entries of each TLB (read, write): a power of two.
pub const TLB_ENTRIES: usize = 4096;
/// Entries of the jump cache: a power of two. (4,096 entries indexed by the pc's low bits
/// alone made SQLite's hot blocks 256 KiB apart evict each other: 760 k needless exits.)
pub const JUMP_CACHE_ENTRIES: usize = 16384;

/// The jump-cache slot of `pc`: its halfword index folded with the bits above the cache's
/// reach, so that code a multiple of the cache's span apart does not collide. `codegen.rs`
/// computes the same.
pub(crate) fn jump_slot(pc: u64) -> usize {
    (((pc >> 1) ^ (pc >> 15)) as usize) & (JUMP_CACHE_ENTRIES - 1)
}
/// A page.
pub const PAGE: usize = 4096;
/// Finished units [`Jit::poll`] gathers before installing them.
pub const INSTALL_BATCH: usize = 256;
/// Polls after which [`Jit::poll`] installs whatever is ready.
pub const INSTALL_POLLS: u32 = 256;
/// Records one recording call into compiled code can append
/// ([`Jit::run_recording`] caps its budget at this: every record retires an instruction).
pub const RECORDS: usize = 8192;
/// Entries of the taken-branch ring ([`crate::ir::Block::ring`], [`Jit::take_ring`]): a
/// power of two.
pub const RING: usize = 256;
/// Entries of the basic-block trace ([`crate::ir::Block::trace`], [`Jit::run_tracing`]): a
/// power of two.
pub const TRACE: usize = 1 << 16;
/// Entries of the address buffer ([`crate::ir::Block::addresses`], [`Jit::addresses`]): one
/// per instruction of a tracing call, and one for an access that faults, fit with room.
pub const ADDRS: usize = 2 * TRACE;
/// Counter slots ([`crate::ir::Counted::slot`]) the tier keeps, at most: a unit counting a
/// slot past them is not compiled.
pub const MAX_COUNTERS: u32 = 1 << 22;
/// Counters per allocation.
const COUNTER_CHUNK: usize = 4096;
/// A TLB entry: the page address (an invalid entry has its low bits set, so it never matches)
/// and its *addend*: the host frame's address less the page address (wrapping), so that a
/// guest address in the page plus the addend is its byte in the frame (one add in compiled
/// code, as qemu's TLB does).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Entry {
    tag: u64,
    addend: u64,
}

const INVALID: Entry = Entry {
    tag: u64::MAX,
    addend: 0,
};

/// A jump-cache entry: a guest pc and the compiled unit entered there.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct JumpEntry {
    pc: u64,
    code: u64,
}

const NO_JUMP: JumpEntry = JumpEntry {
    pc: u64::MAX,
    code: 0,
};

/// What compiled code reads and writes. `#[repr(C)]`: its offsets are compiled in
/// ([`layout`]).
#[repr(C)]
pub struct Context {
    /// Guest integer registers.
    pub x: [u64; 32],
    /// Guest FP registers (raw bits).
    pub f: [u64; 32],
    budget: u64,
    pc: u64,
    reason: u64,
    fault: u64,
    tlb_read: *mut Entry,
    tlb_write: *mut Entry,
    jump_cache: *mut JumpEntry,
    host: *mut (),
    epoch: u64,
    records: *mut Record,
    record_pos: u64,
    ring: *mut [u64; 2],
    ring_pos: u64,
    trace: *mut u32,
    trace_pos: u64,
    addrs: *mut u64,
    addr_pos: u64,
    /// The host helpers baseline code calls through the context (`baseline.rs`: its bytes
    /// hold no host address).
    helper_load: u64,
    helper_store: u64,
    helper_fill: u64,
    helper_alu: u64,
    helper_float: u64,
    /// The guest's `fcsr` (fflags in bits 0–4, frm in bits 5–7), read and written by
    /// [`Host::float`].
    fcsr: u64,
}

/// Byte offsets into [`Context`].
pub(crate) mod layout {
    use super::Context;
    use std::mem::offset_of;
    pub const BUDGET: usize = offset_of!(Context, budget);
    pub const PC: usize = offset_of!(Context, pc);
    pub const REASON: usize = offset_of!(Context, reason);
    pub const FAULT: usize = offset_of!(Context, fault);
    pub const TLB_READ: usize = offset_of!(Context, tlb_read);
    pub const TLB_WRITE: usize = offset_of!(Context, tlb_write);
    pub const JUMP_CACHE: usize = offset_of!(Context, jump_cache);
    pub const RECORDS: usize = offset_of!(Context, records);
    pub const RECORD_POS: usize = offset_of!(Context, record_pos);
    pub const RING: usize = offset_of!(Context, ring);
    pub const RING_POS: usize = offset_of!(Context, ring_pos);
    pub const TRACE: usize = offset_of!(Context, trace);
    pub const TRACE_POS: usize = offset_of!(Context, trace_pos);
    pub const ADDRS: usize = offset_of!(Context, addrs);
    pub const ADDR_POS: usize = offset_of!(Context, addr_pos);
    pub const HELPER_LOAD: usize = offset_of!(Context, helper_load);
    pub const HELPER_STORE: usize = offset_of!(Context, helper_store);
    pub const HELPER_FILL: usize = offset_of!(Context, helper_fill);
    pub const HELPER_ALU: usize = offset_of!(Context, helper_alu);
    pub const HELPER_FLOAT: usize = offset_of!(Context, helper_float);
    pub const fn x(i: usize) -> usize {
        offset_of!(Context, x) + 8 * i
    }
    pub const fn f(i: usize) -> usize {
        offset_of!(Context, f) + 8 * i
    }
}

/// What a store through the host did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Done.
    Ok,
    /// It faults: nothing was written; the engine runs it.
    Fault,
    /// Done, and it changed code the machine holds decoded.
    CodeChanged,
}

/// Guest memory as the compiled code sees it (implemented by the machine's memory).
///
/// The contract the TLB's safety rests on: a frame lent by [`Host::frame`] stays allocated,
/// unmoved and of the lent permission until [`Host::frames_epoch`] returns another value.
pub trait Host {
    /// Changes whenever a frame lent before may have been freed or moved, or a page's
    /// permission changed (including a page becoming code the machine holds decoded, which
    /// stores must not write directly).
    fn frames_epoch(&self) -> u64;
    /// The host frame of the page holding `addr`, if plain loads (`write`: plain stores,
    /// which may not change code) may go straight to it.
    fn frame(&mut self, addr: u64, write: bool) -> Option<&mut [u8; PAGE]>;
    /// A load of `size` bytes (zero-extended) through the host's own path; `None`: it faults.
    fn load(&mut self, addr: u64, size: u8) -> Option<u64>;
    /// A store of the low `size` bytes of `value` through the host's own path.
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Stored;
    /// Runs the FP instruction `inst` ([`crate::ir::Op::Float`], packed by the host's own
    /// lowering) on the guest's registers and `fcsr` (fflags in bits 0–4, frm in bits
    /// 5–7); false if it cannot (the engine then runs it). None by default.
    fn float(&mut self, inst: u64, x: &mut [u64; 32], f: &mut [u64; 32], fcsr: &mut u64) -> bool {
        let _ = (inst, x, f, fcsr);
        false
    }
}

/// Addresses and calling convention of the host helpers compiled code calls.
pub(crate) struct Helpers {
    pub load: usize,
    pub store: usize,
    pub fill: usize,
    /// [`crate::codegen::alu_helper`]: integer operations compiled code does not inline.
    pub alu: usize,
    /// [`float_helper`].
    pub float: usize,
    pub call_conv: CallConv,
}

/// How a call into compiled code ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Control reached `pc`, which no compiled unit in the jump cache starts at.
    Miss(u64),
    /// The budget did not cover the block at `pc`.
    Budget(u64),
    /// The engine must run the instruction at `pc`.
    Engine(u64),
    /// A store changed code; the run goes on at `pc`, after it.
    CodeChanged(u64),
}

/// Why a unit was not compiled.
#[derive(Debug)]
pub struct CompileError(pub String);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "compiling tier: {}", self.0)
    }
}

impl std::error::Error for CompileError {}

/// Statistics of the compiling tier.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Units compiled.
    pub units: u64,
    /// Guest blocks in them.
    pub blocks: u64,
    /// Host code bytes produced (since the start; the live module holds [`Jit::code_bytes`]).
    pub code_bytes: u64,
    /// Time spent compiling.
    pub compile_time: Duration,
    /// Of these, the baseline tier's units, their guest instructions, their host code bytes
    /// and its compile time (the rest are Cranelift's).
    pub baseline_units: u64,
    /// Guest instructions of baseline units.
    pub baseline_insns: u64,
    /// Host bytes of baseline units.
    pub baseline_bytes: u64,
    /// Time the baseline tier spent compiling.
    pub baseline_time: Duration,
    /// Guest instructions of Cranelift units.
    pub cranelift_insns: u64,
    /// Chain sites patched to their targets' code.
    pub patched: u64,
    /// Times compiled code was dropped.
    pub flushes: u64,
    /// Calls into compiled code.
    pub entries: u64,
    /// How calls ended: a pc not compiled, the budget, an instruction for the engine, a code
    /// change, and a pc whose unit the jump cache did not hold (the machine tells the first
    /// from the last and from a pc no unit can start at: [`Jit::reclassify_miss`]).
    pub exits: [u64; 5],
}

impl Stats {
    /// Adds `other`'s counts and times to these (the tiers of several address spaces).
    pub fn merge(&mut self, other: &Stats) {
        self.units += other.units;
        self.blocks += other.blocks;
        self.code_bytes += other.code_bytes;
        self.compile_time += other.compile_time;
        self.baseline_units += other.baseline_units;
        self.baseline_insns += other.baseline_insns;
        self.baseline_bytes += other.baseline_bytes;
        self.baseline_time += other.baseline_time;
        self.cranelift_insns += other.cranelift_insns;
        self.patched += other.patched;
        self.flushes += other.flushes;
        self.entries += other.entries;
        for (a, b) in self.exits.iter_mut().zip(other.exits) {
            *a += b;
        }
    }
}

/// The compiling tier: a Cranelift module of compiled units, their jump cache and TLBs.
pub struct Jit<H: Host> {
    host: std::marker::PhantomData<fn(&mut H)>,
    isa: OwnedTargetIsa,
    module: Option<JITModule>,
    fctx: FunctionBuilderContext,
    ctx: Box<Context>,
    tlb: Box<[Entry]>,
    jump_cache: Box<[JumpEntry]>,
    /// [`RECORDS`] records and one more slot that absorbs any write past them.
    records: Box<[Record]>,
    /// The taken-branch ring: [`RING`] (from, to) pairs, the next at `ctx.ring_pos % RING`.
    ring: Box<[[u64; 2]]>,
    /// `ctx.ring_pos` when the ring was last taken ([`Jit::take_ring`]).
    ring_taken: u64,
    /// The basic-block trace: [`TRACE`] tags, written from 0 by each call.
    trace: Box<[u32]>,
    /// The address buffer: [`ADDRS`] guest addresses, written from 0 by each call.
    addrs: Box<[u64]>,
    /// Counters of counted blocks, [`COUNTER_CHUNK`] per chunk, slot `s` in chunk
    /// `s / COUNTER_CHUNK` (written by compiled code; never moved or freed before the module).
    counters: Vec<Box<[u64]>>,
    units: HashMap<u64, u64>,
    trampoline: u64,
    helper_conv: CallConv,
    live_bytes: u64,
    next_name: u32,
    worker: Option<Worker>,
    no_worker: bool,
    pending: u64,
    /// Units the compiling thread finished, not installed yet ([`Jit::poll`] installs them
    /// in batches).
    ready: Vec<codegen::Compiled>,
    /// Polls since the last install.
    idle_polls: u32,
    /// The baseline tier's code memory (`None`: no baseline tier on this host).
    arena: Option<Arena>,
    /// Chain sites of baseline units by the guest pc they go to (host addresses of their
    /// `jmp rel32`), patched when a unit starts there ([`Jit::install_baseline`]).
    sites: HashMap<u64, Vec<u64>>,
    /// What it did so far.
    pub stats: Stats,
}

/// The trampoline's type: a C-ABI function calling a unit (tail convention) with the context.
type Trampoline = unsafe extern "C" fn(*mut Context, u64);

impl<H: Host> Jit<H> {
    /// A compiling tier for this host, or why there is none (the block engine runs then).
    pub fn new() -> Result<Self, CompileError> {
        let err = |e: &dyn std::fmt::Display| CompileError(e.to_string());
        let mut flags = settings::builder();
        // no mid-end optimisation: units are short and compile time is the tier's main cost
        // (measured on four real programs: "none" ran each faster end to end than "speed";
        // regalloc2's single-pass allocator compiles faster but its code runs slower)
        flags.set("opt_level", "none").map_err(|e| err(&e))?;
        // the IR is built by one generator, checked by tests: no verifier pass per unit
        flags.set("enable_verifier", "false").map_err(|e| err(&e))?;
        flags.set("is_pic", "false").map_err(|e| err(&e))?;
        // the x86-64 tail calls of units into units need frame pointers
        flags
            .set("preserve_frame_pointers", "true")
            .map_err(|e| err(&e))?;
        flags
            .set("use_colocated_libcalls", "false")
            .map_err(|e| err(&e))?;
        let isa = cranelift_native::builder()
            .map_err(|e| err(&e))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| err(&e))?;
        let helper_conv = isa.default_call_conv();
        let mut tlb = vec![INVALID; 2 * TLB_ENTRIES].into_boxed_slice();
        let mut jump_cache = vec![NO_JUMP; JUMP_CACHE_ENTRIES].into_boxed_slice();
        let mut records = vec![Record::default(); RECORDS + 1].into_boxed_slice();
        let mut ring = vec![[0u64; 2]; RING].into_boxed_slice();
        let mut trace = vec![0u32; TRACE].into_boxed_slice();
        let mut addrs = vec![0u64; ADDRS].into_boxed_slice();
        let ctx = Box::new(Context {
            x: [0; 32],
            f: [0; 32],
            budget: 0,
            pc: 0,
            reason: 0,
            fault: 0,
            tlb_read: tlb.as_mut_ptr(),
            // SAFETY: TLB_ENTRIES < tlb.len(): the second half of the same allocation
            tlb_write: unsafe { tlb.as_mut_ptr().add(TLB_ENTRIES) },
            jump_cache: jump_cache.as_mut_ptr(),
            host: std::ptr::null_mut(),
            epoch: u64::MAX,
            records: records.as_mut_ptr(),
            record_pos: 0,
            ring: ring.as_mut_ptr(),
            ring_pos: 0,
            trace: trace.as_mut_ptr(),
            trace_pos: 0,
            addrs: addrs.as_mut_ptr(),
            addr_pos: 0,
            helper_load: load_helper::<H> as *const () as u64,
            helper_store: store_helper::<H> as *const () as u64,
            helper_fill: fill_helper::<H> as *const () as u64,
            helper_alu: crate::codegen::alu_helper as *const () as u64,
            helper_float: float_helper::<H> as *const () as u64,
            fcsr: 0,
        });
        let mut jit = Jit {
            host: std::marker::PhantomData,
            isa,
            module: None,
            fctx: FunctionBuilderContext::new(),
            ctx,
            tlb,
            jump_cache,
            records,
            ring,
            ring_taken: 0,
            trace,
            addrs,
            counters: Vec::new(),
            units: HashMap::new(),
            trampoline: 0,
            helper_conv,
            live_bytes: 0,
            next_name: 0,
            worker: None,
            no_worker: false,
            pending: 0,
            ready: Vec::new(),
            idle_polls: 0,
            arena: if cfg!(target_arch = "x86_64") {
                Arena::new(ARENA_BYTES)
            } else {
                None
            },
            sites: HashMap::new(),
            stats: Stats::default(),
        };
        jit.start_module()?;
        Ok(jit)
    }

    /// A fresh module with the trampoline in it.
    fn start_module(&mut self) -> Result<(), CompileError> {
        let builder = JITBuilder::with_isa(self.isa.clone(), default_libcall_names());
        let mut module = JITModule::new(builder);
        let err = |e: &dyn std::fmt::Display| CompileError(e.to_string());
        let mut ctx = module.make_context();
        let ptr = types::I64;
        let mut sig = Signature::new(self.helper_conv);
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(ptr));
        ctx.func.signature = sig.clone();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut self.fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let (c, f) = (b.block_params(entry)[0], b.block_params(entry)[1]);
            let unit_sig = b.import_signature(codegen::unit_signature(ptr));
            b.ins().call_indirect(unit_sig, f, &[c]);
            b.ins().return_(&[]);
            b.seal_all_blocks();
            b.finalize();
        }
        let id = module
            .declare_function("enter", Linkage::Local, &sig)
            .map_err(|e| err(&e))?;
        module.define_function(id, &mut ctx).map_err(|e| err(&e))?;
        module.clear_context(&mut ctx);
        module.finalize_definitions().map_err(|e| err(&e))?;
        self.trampoline = module.get_finalized_function(id) as u64;
        self.module = Some(module);
        Ok(())
    }

    /// The guest's `fcsr` as compiled code left it (fflags in bits 0–4, frm in bits 5–7).
    pub fn fcsr(&self) -> u64 {
        self.ctx.fcsr
    }

    /// Sets the guest's `fcsr` for the next call into compiled code.
    pub fn set_fcsr(&mut self, fcsr: u64) {
        self.ctx.fcsr = fcsr;
    }

    /// Moves the last call's exit, counted as a miss, to `reason` (2: the pc holds an
    /// instruction only the engine runs; 4: its unit is compiled but was not in the jump
    /// cache).
    pub fn reclassify_miss(&mut self, reason: usize) {
        if reason < self.stats.exits.len() && self.stats.exits[0] > 0 {
            self.stats.exits[0] -= 1;
            self.stats.exits[reason] += 1;
        }
    }

    /// Host bytes of compiled code held now.
    pub fn code_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// The compiled unit entered at `pc`, if any.
    pub fn contains(&self, pc: u64) -> bool {
        self.units.contains_key(&pc)
    }

    fn helpers(&self) -> Helpers {
        Helpers {
            load: load_helper::<H> as *const () as usize,
            store: store_helper::<H> as *const () as usize,
            fill: fill_helper::<H> as *const () as usize,
            alu: crate::codegen::alu_helper as *const () as usize,
            float: float_helper::<H> as *const () as usize,
            call_conv: self.helper_conv,
        }
    }

    /// The host address of each counter `unit` adds to, in [`Unit::counter_slots`]' order
    /// (0 where a block counts nothing), allocating what is missing; `None` if a slot is past
    /// [`MAX_COUNTERS`].
    fn counter_addresses(&mut self, unit: &Unit) -> Option<Vec<u64>> {
        unit.counter_slots()
            .into_iter()
            .map(|slot| match slot {
                None => Some(0),
                Some(s) if s >= MAX_COUNTERS => None,
                Some(s) => {
                    let (chunk, at) = (s as usize / COUNTER_CHUNK, s as usize % COUNTER_CHUNK);
                    while self.counters.len() <= chunk {
                        self.counters
                            .push(vec![0; COUNTER_CHUNK].into_boxed_slice());
                    }
                    Some(self.counters[chunk][at..].as_mut_ptr() as u64)
                }
            })
            .collect()
    }

    /// The taken branches compiled code wrote into the ring since the last call: how many,
    /// with the latest of them (at most [`RING`]) in `last`, oldest first.
    pub fn take_ring(&mut self, last: &mut Vec<[u64; 2]>) -> u64 {
        let pos = self.ctx.ring_pos;
        let total = pos.wrapping_sub(self.ring_taken);
        self.ring_taken = pos;
        last.clear();
        let kept = total.min(RING as u64);
        for p in pos - kept..pos {
            last.push(self.ring[(p % RING as u64) as usize]);
        }
        total
    }

    /// Hands every non-zero counter to `f` (its slot and count) and sets it to zero: what
    /// counted blocks ran since the last call.
    pub fn take_counts(&mut self, mut f: impl FnMut(u32, u64)) {
        for (i, chunk) in self.counters.iter_mut().enumerate() {
            for (j, c) in chunk.iter_mut().enumerate() {
                if *c != 0 {
                    f((i * COUNTER_CHUNK + j) as u32, std::mem::take(c));
                }
            }
        }
    }

    /// Compiles `unit` now and makes it reachable at its entry.
    pub fn compile(&mut self, unit: &Unit) -> Result<(), CompileError> {
        let started = Instant::now();
        let helpers = self.helpers();
        let counters = self
            .counter_addresses(unit)
            .ok_or_else(|| CompileError("counter slot out of range".into()))?;
        let compiled = codegen::compile(&*self.isa, &mut self.fctx, unit, &helpers, &counters)
            .map_err(CompileError)?;
        self.stats.compile_time += started.elapsed();
        self.install(&[compiled])
    }

    /// Whether [`Jit::compile_baseline`] compiles `unit` (on a host the baseline tier runs
    /// on, every unit).
    pub fn baseline_supports(&self, unit: &Unit) -> bool {
        self.arena.is_some() && crate::baseline::supports(unit)
    }

    /// Compiles `unit` with the baseline tier now (a few microseconds) and makes it reachable
    /// at its entry; its chain sites are patched to the units already compiled, and the sites
    /// already waiting for its entry to it. Drops every compiled unit first if its code
    /// memory is full.
    pub fn compile_baseline(&mut self, unit: &Unit) -> Result<(), CompileError> {
        let started = Instant::now();
        let counters = self
            .counter_addresses(unit)
            .ok_or_else(|| CompileError("counter slot out of range".into()))?;
        let c = crate::baseline::compile(unit, &counters).map_err(CompileError)?;
        let spent = started.elapsed();
        self.stats.compile_time += spent;
        self.stats.baseline_time += spent;
        self.install_baseline(&c)
    }

    /// Places a baseline unit in the code memory, reachable at its entry, with its chain
    /// sites patched where their targets are compiled.
    fn install_baseline(&mut self, c: &crate::baseline::Compiled) -> Result<(), CompileError> {
        let Some(arena) = self.arena.as_mut() else {
            return Err(CompileError("no baseline tier".into()));
        };
        let code = match arena.place(&c.bytes) {
            Some(code) => code,
            None => {
                self.flush();
                let arena = self.arena.as_mut().ok_or(CompileError("no arena".into()))?;
                arena
                    .place(&c.bytes)
                    .ok_or(CompileError("unit larger than the code memory".into()))?
            }
        };
        for &(at, target) in &c.sites {
            let site = code + u64::from(at);
            match self.units.get(&target) {
                Some(&to) => self.patch(site, to),
                None => self.sites.entry(target).or_default().push(site),
            }
        }
        self.units.insert(c.entry, code);
        self.insert(c.entry, code);
        self.patch_waiting(c.entry, code);
        let size = c.bytes.len() as u64;
        self.live_bytes += size;
        self.stats.units += 1;
        self.stats.blocks += 1;
        self.stats.code_bytes += size;
        self.stats.baseline_units += 1;
        self.stats.baseline_insns += c.insns;
        self.stats.baseline_bytes += size;
        Ok(())
    }

    /// Patches the chain sites waiting for `pc` to jump to `code`.
    fn patch_waiting(&mut self, pc: u64, code: u64) {
        if let Some(waiting) = self.sites.remove(&pc) {
            for site in waiting {
                self.patch(site, code);
            }
        }
    }

    /// Points the chain site at `site` (a `jmp rel32` in the arena) at `to`, if `to` is in
    /// its reach (else it keeps going through the jump cache).
    fn patch(&mut self, site: u64, to: u64) {
        if let Some(arena) = self.arena.as_mut() {
            if arena.patch_jump(site, to) {
                self.stats.patched += 1;
            }
        }
    }

    /// Hands `unit` to the compiling thread (started on first use); [`Jit::poll`] installs it
    /// when it is done. Returns false if there is no compiling thread (compile it now).
    pub fn submit(&mut self, unit: Unit) -> bool {
        if self.worker.is_none() && !self.no_worker {
            self.worker = Worker::start(self.isa.clone(), self.helpers());
            self.no_worker = self.worker.is_none();
        }
        let generation = self.stats.flushes;
        let Some(counters) = self.counter_addresses(&unit) else {
            return false;
        };
        match &self.worker {
            Some(w) if w.jobs.send((generation, unit, counters)).is_ok() => {
                self.pending += 1;
                true
            }
            _ => false,
        }
    }

    /// Units handed to the compiling thread and not installed yet.
    pub fn pending(&self) -> u64 {
        self.pending + self.ready.len() as u64
    }

    /// Installs the units the compiling thread finished (those compiled before a flush are
    /// dropped); returns their entry pcs. Units are installed in batches of [`INSTALL_BATCH`]
    /// (or whatever is ready once nothing more is coming, or after [`INSTALL_POLLS`] polls):
    /// every install makes fresh pages executable (`mprotect`, and a TLB shootdown on every
    /// core), which installing each unit as it came cost SQLite 6% of its run. (Batches of
    /// 16, 64, 256 and 1,024 units with as many polls: 256 and 1,024 ran the four real
    /// programs fastest, SQLite 0.36 → 0.30 s; the units' later arrival costs less than the
    /// installs it saves.)
    pub fn poll(&mut self) -> Vec<u64> {
        let mut time = Duration::ZERO;
        if let Some(w) = &self.worker {
            while let Ok((generation, result, spent)) = w.done.try_recv() {
                self.pending = self.pending.saturating_sub(1);
                time += spent;
                if let (true, Ok(c)) = (generation == self.stats.flushes, result) {
                    self.ready.push(c);
                }
            }
        }
        self.stats.compile_time += time;
        self.idle_polls = self.idle_polls.saturating_add(1);
        if self.ready.is_empty()
            || (self.ready.len() < INSTALL_BATCH
                && self.pending > 0
                && self.idle_polls < INSTALL_POLLS)
        {
            return Vec::new();
        }
        self.idle_polls = 0;
        let done = std::mem::take(&mut self.ready);
        let entries: Vec<u64> = done.iter().map(|c| c.entry).collect();
        match self.install(&done) {
            Ok(()) => entries,
            Err(_) => Vec::new(),
        }
    }

    /// Defines compiled units in the live module, finalizes them, and puts them in the jump
    /// cache.
    fn install(&mut self, units: &[codegen::Compiled]) -> Result<(), CompileError> {
        if units.is_empty() {
            return Ok(());
        }
        let err = |e: &dyn std::fmt::Display| CompileError(e.to_string());
        let Some(module) = self.module.as_mut() else {
            return Err(CompileError("no module".into()));
        };
        let sig = codegen::unit_signature(types::I64);
        let mut ids = Vec::with_capacity(units.len());
        for c in units {
            self.next_name += 1;
            let name = format!("u{:x}_{}", c.entry, self.next_name);
            let id = module
                .declare_function(&name, Linkage::Local, &sig)
                .map_err(|e| err(&e))?;
            module
                .define_function_bytes(id, c.alignment, &c.bytes, &[])
                .map_err(|e| err(&e))?;
            ids.push(id);
        }
        module.finalize_definitions().map_err(|e| err(&e))?;
        let codes: Vec<u64> = ids
            .into_iter()
            .map(|id| module.get_finalized_function(id) as u64)
            .collect();
        for (c, code) in units.iter().zip(codes) {
            self.units.insert(c.entry, code);
            self.insert(c.entry, code);
            self.patch_waiting(c.entry, code);
            self.stats.cranelift_insns += c.insns;
            let size = c.bytes.len() as u64;
            self.live_bytes += size.max(64);
            self.stats.units += 1;
            self.stats.blocks += c.blocks as u64;
            self.stats.code_bytes += size;
        }
        Ok(())
    }

    /// Puts a unit of the live module in the jump cache.
    fn insert(&mut self, pc: u64, code: u64) {
        self.jump_cache[jump_slot(pc)] = JumpEntry { pc, code };
    }

    /// Drops every compiled unit (code changed, or the budget for code is spent).
    pub fn flush(&mut self) {
        // units still on the compiling thread belong to the old code too: the generation must
        // move so that `poll` drops them
        if self.units.is_empty() && self.pending == 0 && self.ready.is_empty() {
            return;
        }
        self.jump_cache.fill(NO_JUMP);
        self.units.clear();
        self.ready.clear();
        self.sites.clear();
        if let Some(arena) = self.arena.as_mut() {
            arena.reset();
        }
        self.live_bytes = 0;
        self.stats.flushes += 1;
        if let Some(module) = self.module.take() {
            // SAFETY: no pointer into the module is left: the jump cache and the unit table
            // were just cleared, the trampoline is replaced below, and no compiled code is
            // running (`run` holds `&mut self` for the whole call).
            unsafe { module.free_memory() };
        }
        if let Err(e) = self.start_module() {
            // (the module was made once already with the same ISA: not expected) without a
            // module, `compile` fails and the engine runs everything
            self.module = None;
            let _ = e;
        }
    }

    /// Runs compiled code from `pc` (a unit must start there: [`Jit::contains`]) with the
    /// guest registers `regs` (integer, FP), retiring at most `budget` instructions. Returns
    /// how it ended and the instructions retired.
    pub fn run(
        &mut self,
        host: &mut H,
        regs: (&mut [u64; 32], &mut [u64; 32]),
        pc: u64,
        budget: u64,
    ) -> (Exit, u64) {
        self.ctx.record_pos = 0;
        self.ctx.trace_pos = 0;
        self.ctx.addr_pos = 0;
        let (x, f) = regs;
        // the jump cache first (an array read), the unit table on a collision
        let slot = self.jump_cache[jump_slot(pc)];
        let code = if slot.pc == pc {
            slot.code
        } else {
            match self.units.get(&pc) {
                Some(&code) => code,
                None => return (Exit::Miss(pc), 0),
            }
        };
        if self.module.is_none() {
            return (Exit::Miss(pc), 0);
        }
        let epoch = host.frames_epoch();
        if epoch != self.ctx.epoch {
            self.tlb.fill(INVALID);
            self.ctx.epoch = epoch;
        }
        self.insert(pc, code);
        self.stats.entries += 1;
        self.ctx.x = *x;
        self.ctx.x[0] = 0;
        self.ctx.f = *f;
        self.ctx.budget = budget;
        self.ctx.fault = 0;
        self.ctx.host = host as *mut H as *mut ();
        let ctx: *mut Context = &mut *self.ctx;
        // SAFETY: `trampoline` is the finalized `enter` function of the live module, of type
        // `Trampoline`; `code` is a finalized unit of the same module (from `units`). The
        // context is valid for the call and its `host` points at `host`, borrowed mutably for
        // the whole call and used only by the helpers below through that pointer; the TLB
        // holds only frames lent under the current epoch (flushed above).
        unsafe {
            let enter: Trampoline = std::mem::transmute::<u64, Trampoline>(self.trampoline);
            enter(ctx, code);
        }
        self.ctx.host = std::ptr::null_mut();
        *x = self.ctx.x;
        x[0] = 0;
        *f = self.ctx.f;
        let retired = budget - self.ctx.budget;
        let pc = self.ctx.pc;
        self.stats.exits[(self.ctx.reason as usize).min(3)] += 1;
        let exit = match self.ctx.reason {
            reason::MISS => Exit::Miss(pc),
            reason::BUDGET => Exit::Budget(pc),
            reason::CODE => Exit::CodeChanged(pc),
            _ => Exit::Engine(pc),
        };
        (exit, retired)
    }

    /// [`Jit::run`] for units compiled with [`crate::ir::Block::record`]: at most [`RECORDS`]
    /// instructions retire, so every record the blocks append fits; [`Jit::records`] returns
    /// them afterwards, in the order the blocks ran.
    pub fn run_recording(
        &mut self,
        host: &mut H,
        regs: (&mut [u64; 32], &mut [u64; 32]),
        pc: u64,
        budget: u64,
    ) -> (Exit, u64) {
        self.run(host, regs, pc, budget.min(RECORDS as u64))
    }

    /// [`Jit::run`] for units compiled with [`crate::ir::Block::trace`]: at most [`TRACE`]
    /// instructions retire, so every tag the blocks append fits; [`Jit::trace`] returns them
    /// afterwards, in the order the basic blocks ran.
    pub fn run_tracing(
        &mut self,
        host: &mut H,
        regs: (&mut [u64; 32], &mut [u64; 32]),
        pc: u64,
        budget: u64,
    ) -> (Exit, u64) {
        self.run(host, regs, pc, budget.min(TRACE as u64))
    }

    /// The tags of the basic blocks the last call ran to their ends
    /// ([`crate::ir::Block::trace`]).
    ///
    /// # Panics
    /// If compiled code appended more than [`TRACE`] (a code-generator bug: each tag retires
    /// at least one instruction of the budget [`Jit::run_tracing`] caps). None was written
    /// outside the buffer: positions are masked to it.
    pub fn trace(&self) -> &[u32] {
        let n = self.ctx.trace_pos as usize;
        assert!(n <= TRACE, "compiled code appended {n} trace entries");
        &self.trace[..n]
    }

    /// The guest addresses of the loads, stores and atomics the last call's blocks performed
    /// ([`crate::ir::Block::addresses`]), in program order.
    ///
    /// # Panics
    /// If compiled code appended more than [`ADDRS`] (a code-generator bug: under
    /// [`Jit::run_tracing`] each retired instruction appends at most one, and an access that
    /// faults, ending the call, one more). None was written outside the buffer: positions are
    /// masked to it.
    pub fn addresses(&self) -> &[u64] {
        let n = self.ctx.addr_pos as usize;
        assert!(n <= ADDRS, "compiled code appended {n} addresses");
        &self.addrs[..n]
    }

    /// The records the last call appended ([`Jit::run_recording`]; or [`Jit::run`], for
    /// units whose recording blocks are [`crate::ir::Counted`]: their records are sparse, and
    /// one that fills the buffer ends the call).
    ///
    /// # Panics
    /// If compiled code appended more than [`RECORDS`] (a code-generator bug: each record
    /// retires at least one instruction of the capped budget). None was written outside the
    /// buffer: appends past its end all land in its spare slot.
    pub fn records(&self) -> &[Record] {
        let n = self.ctx.record_pos as usize;
        assert!(n <= RECORDS, "compiled code appended {n} records");
        &self.records[..n]
    }
}

impl<H: Host> Drop for Jit<H> {
    fn drop(&mut self) {
        self.jump_cache.fill(NO_JUMP);
        self.units.clear();
        if let Some(module) = self.module.take() {
            // SAFETY: as in `flush`: nothing refers to the module's code any more and none of
            // it runs.
            unsafe { module.free_memory() };
        }
    }
}

/// Drops the TLB if the host's frames changed since it was filled (after a helper ran).
///
/// # Safety
/// `ctx` is the context of a running call.
unsafe fn check_epoch<H: Host>(ctx: &mut Context, host: &H) {
    let epoch = host.frames_epoch();
    if epoch != ctx.epoch {
        // SAFETY: both TLB pointers point at TLB_ENTRIES entries of the Jit's TLB
        unsafe {
            std::slice::from_raw_parts_mut(ctx.tlb_read, TLB_ENTRIES).fill(INVALID);
            std::slice::from_raw_parts_mut(ctx.tlb_write, TLB_ENTRIES).fill(INVALID);
        }
        ctx.epoch = epoch;
    }
}

/// Fills the TLB entry for `addr` from the host, if it lends the frame.
///
/// # Safety
/// `ctx` is the context of a running call.
unsafe fn fill<H: Host>(ctx: &mut Context, host: &mut H, addr: u64, write: bool) {
    let Some(frame) = host.frame(addr, write) else {
        return;
    };
    let frame = frame.as_mut_ptr() as u64;
    let i = ((addr >> 12) as usize) & (TLB_ENTRIES - 1);
    let tlb = if write { ctx.tlb_write } else { ctx.tlb_read };
    // SAFETY: i < TLB_ENTRIES, the length of the array `tlb` points at
    unsafe {
        *tlb.add(i) = Entry {
            tag: addr & !0xfff,
            addend: frame.wrapping_sub(addr & !0xfff),
        };
    }
}

/// The load slow path compiled code calls: performs the load through the host (value
/// returned; `ctx.fault` set if it faults) and fills the read TLB.
extern "C" fn load_helper<H: Host>(ctx: *mut Context, addr: u64, kind: u64) -> u64 {
    // SAFETY: compiled code passes the context pointer it was entered with (`Jit::run`), whose
    // `host` points at the `H` borrowed for the call; nothing else uses either meanwhile.
    let (ctx, host) = unsafe {
        let ctx = &mut *ctx;
        let host = &mut *(ctx.host as *mut H);
        (ctx, host)
    };
    let size = (kind & 0xff) as u8;
    let signed = kind & 0x100 != 0;
    match host.load(addr, size) {
        Some(v) => {
            ctx.fault = 0;
            // SAFETY: ctx is the running call's context
            unsafe {
                check_epoch(ctx, host);
                fill(ctx, host, addr, false);
            }
            if signed {
                let shift = 64 - 8 * u32::from(size);
                (((v << shift) as i64) >> shift) as u64
            } else {
                v
            }
        }
        None => {
            ctx.fault = 1;
            0
        }
    }
}

/// FP arithmetic ([`crate::ir::Op::Float`]) through the host: 1 done, 0 the engine must run
/// it.
extern "C" fn float_helper<H: Host>(ctx: *mut Context, inst: u64) -> u64 {
    // SAFETY: as in `load_helper`
    let (ctx, host) = unsafe {
        let ctx = &mut *ctx;
        let host = &mut *(ctx.host as *mut H);
        (ctx, host)
    };
    let done = host.float(inst, &mut ctx.x, &mut ctx.f, &mut ctx.fcsr);
    // (comparisons and conversions write x registers, x0 included)
    ctx.x[0] = 0;
    u64::from(done)
}

/// The store slow path: 0 done, 1 fault (nothing written), 2 done and code changed.
extern "C" fn store_helper<H: Host>(ctx: *mut Context, addr: u64, size: u64, value: u64) -> u64 {
    // SAFETY: as in `load_helper`
    let (ctx, host) = unsafe {
        let ctx = &mut *ctx;
        let host = &mut *(ctx.host as *mut H);
        (ctx, host)
    };
    let r = host.store(addr, size as u8, value);
    // SAFETY: ctx is the running call's context
    unsafe { check_epoch(ctx, host) };
    match r {
        Stored::Ok => {
            // SAFETY: as above
            unsafe { fill(ctx, host, addr, true) };
            0
        }
        Stored::Fault => 1,
        Stored::CodeChanged => 2,
    }
}

/// Lends the frame for an aligned `size`-byte read-modify-write at `addr` to the write TLB:
/// 1 if it is there now, 0 if the engine must run the access.
extern "C" fn fill_helper<H: Host>(ctx: *mut Context, addr: u64, size: u64) -> u64 {
    // SAFETY: as in `load_helper`
    let (ctx, host) = unsafe {
        let ctx = &mut *ctx;
        let host = &mut *(ctx.host as *mut H);
        (ctx, host)
    };
    if size == 0 || addr % size != 0 {
        return 0;
    }
    // SAFETY: ctx is the running call's context
    unsafe {
        check_epoch(ctx, host);
        fill(ctx, host, addr, true);
    }
    let i = ((addr >> 12) as usize) & (TLB_ENTRIES - 1);
    // SAFETY: i < TLB_ENTRIES, the length of the write TLB
    let tag = unsafe { (*ctx.tlb_write.add(i)).tag };
    u64::from(tag == addr & !0xfff)
}

/// A compiled unit or why not, the generation it was asked in, and the time it took.
type Done = (u64, Result<codegen::Compiled, String>, Duration);
/// A unit for the compiling thread: the generation it was asked in, the unit, its counter
/// addresses ([`Unit::counter_slots`]).
type Job = (u64, Unit, Vec<u64>);

/// The compiling thread: units in, machine code out (it never touches the module).
struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
    done: std::sync::mpsc::Receiver<Done>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn start(isa: OwnedTargetIsa, helpers: Helpers) -> Option<Worker> {
        let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
        let (outbox, done) = std::sync::mpsc::channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("outcrop-jit".into())
            .spawn(move || {
                let mut fctx = FunctionBuilderContext::new();
                for (generation, unit, counters) in inbox {
                    let started = Instant::now();
                    // a code generator panic loses one unit, never the run
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        codegen::compile(&*isa, &mut fctx, &unit, &helpers, &counters)
                    }))
                    .unwrap_or_else(|_| {
                        fctx = FunctionBuilderContext::new();
                        Err("the code generator panicked".into())
                    });
                    if outbox.send((generation, r, started.elapsed())).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Worker {
            jobs,
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // closing the job channel ends the thread after the unit it is compiling
        let (closed, _) = std::sync::mpsc::channel();
        self.jobs = closed;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Bytes of the baseline tier's code memory (address space; pages are touched as code is
/// placed). Past it, the tier drops every unit and starts over ([`Jit::install_baseline`]).
pub const ARENA_BYTES: usize = 64 << 20;

/// The baseline tier's code memory: one shared-memory object mapped twice, read-write where
/// the tier writes and patches code and read-execute where it runs, so no page is ever
/// writable and executable at once in one mapping and placing a unit needs no `mprotect`.
struct Arena {
    rw: *mut u8,
    rx: *mut u8,
    size: usize,
    used: usize,
}

impl Arena {
    /// The two mappings of a fresh `size`-byte object, or `None` where the host refuses them
    /// (the tier then compiles with Cranelift only).
    fn new(size: usize) -> Option<Arena> {
        // SAFETY: memfd_create takes a NUL-terminated name and flags; the descriptor it
        // returns is owned here and closed below once both mappings hold the memory.
        let fd = unsafe { libc::memfd_create(c"outcrop-jit".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let map = |prot| {
            // SAFETY: a fresh shared mapping of the whole object, at an address the kernel
            // picks: it overlaps nothing else.
            unsafe { libc::mmap(std::ptr::null_mut(), size, prot, libc::MAP_SHARED, fd, 0) }
        };
        // SAFETY: fd is the object created above
        let sized = unsafe { libc::ftruncate(fd, size as libc::off_t) } == 0;
        let rw = if sized {
            map(libc::PROT_READ | libc::PROT_WRITE)
        } else {
            libc::MAP_FAILED
        };
        let rx = if rw != libc::MAP_FAILED {
            map(libc::PROT_READ | libc::PROT_EXEC)
        } else {
            libc::MAP_FAILED
        };
        // SAFETY: fd is ours; the mappings keep the memory alive without it
        unsafe { libc::close(fd) };
        if rx == libc::MAP_FAILED {
            if rw != libc::MAP_FAILED {
                // SAFETY: rw is the mapping of `size` bytes made above, used by nothing
                unsafe { libc::munmap(rw, size) };
            }
            return None;
        }
        Some(Arena {
            rw: rw.cast(),
            rx: rx.cast(),
            size,
            used: 0,
        })
    }

    /// Copies `code` in (16-byte aligned) and returns its executable address, or `None` if it
    /// does not fit.
    fn place(&mut self, code: &[u8]) -> Option<u64> {
        let at = self.used.next_multiple_of(16);
        let end = at.checked_add(code.len())?;
        if end > self.size {
            return None;
        }
        // SAFETY: [at, end) lies inside the read-write mapping of `size` bytes; no compiled
        // code runs while the tier places code (the machine's thread does both), and the
        // bytes there are no unit's yet
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), self.rw.add(at), code.len()) };
        self.used = end;
        Some(self.rx as u64 + at as u64)
    }

    /// Points the `jmp rel32` at executable address `site` at `to`; false if `site` is not a
    /// placed jump or `to` is out of a rel32's reach.
    fn patch_jump(&mut self, site: u64, to: u64) -> bool {
        let Some(off) = site.checked_sub(self.rx as u64).map(|o| o as usize) else {
            return false;
        };
        if off.checked_add(5).is_none_or(|end| end > self.used) {
            return false;
        }
        let Ok(rel) = i32::try_from(to.wrapping_sub(site + 5) as i64) else {
            return false;
        };
        // SAFETY: [off, off + 5) lies in the placed part of the read-write mapping; the byte
        // there is the jump's opcode (checked), and no compiled code runs meanwhile
        unsafe {
            let p = self.rw.add(off);
            if *p != 0xe9 {
                return false;
            }
            std::ptr::copy_nonoverlapping(rel.to_le_bytes().as_ptr(), p.add(1), 4);
        }
        true
    }

    /// Forgets every unit (their memory is reused).
    fn reset(&mut self) {
        self.used = 0;
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: both are the mappings of `size` bytes made in `new`; nothing points into
        // them any more (the Jit clears its jump cache and units before dropping this)
        unsafe {
            libc::munmap(self.rw.cast(), self.size);
            libc::munmap(self.rx.cast(), self.size);
        }
    }
}
