//! The hart: registers, the pre-decoded instruction cache, and the interpreter loop that
//! executes RV64GC and hands every retired instruction to an [`Observer`].
//!
//! Instruction cache: every executable page that runs gets an array of 2048 pre-decoded
//! [`Inst`] slots (one per 2-byte offset), filled lazily on first execution. The loop keeps the
//! current page's array at hand, so the common case is one compare and one array read per
//! instruction, with no decoding and no allocation. Any change to executable memory (see
//! [`Memory::code_epoch`]) drops the cache.

use crate::fpu::{self, Rm};
use crate::inst::{decode, Class, Ext, Inst, Isa, Op};
use crate::kernel::{Kernel, SyscallOutcome};
use crate::memory::{perm, AccessError, Memory, PAGE_SIZE};
use outcrop_events::record::{BranchKind, Control, Observer, Retire};
use outcrop_sampling::BrrUnit;
use outcrop_sem::{sext32, AmoOp, FMove, Sem};
use std::collections::HashMap;
use std::fmt;

mod blocks;
pub(crate) use blocks::jit::{packed_vector, run_float};
mod process;
mod sched;
pub use sched::ThreadWait;
mod signal;

const SLOTS: usize = (PAGE_SIZE / 2) as usize;
/// Recently executed pages remembered without a hash lookup.
const RECENT: usize = 64;
/// An empty instruction-cache slot (length 0: never a real instruction).
const NOT_DECODED: Inst = Inst::illegal(0, 0);

/// Why the guest stopped abnormally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// No instruction has this encoding (or it is reserved, or an FP rounding mode is invalid).
    IllegalInstruction,
    /// Fetching from an unmapped or non-executable address.
    FetchAccess(u64),
    /// Loading from an unmapped or unreadable address.
    LoadAccess(u64),
    /// Storing to an unmapped or read-only address.
    StoreAccess(u64),
    /// A misaligned atomic memory operation.
    MisalignedAtomic(u64),
    /// An access to a page of a file mapping past the end of its file (SIGBUS).
    PastEndOfFile(u64),
    /// `ebreak`.
    Breakpoint,
}

/// A guest fault: where, what, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Address of the faulting instruction.
    pub pc: u64,
    /// The instruction (its raw bits even when illegal; `len` 0 if it could not be fetched).
    pub inst: Inst,
    /// The reason.
    pub kind: FaultKind,
}

impl Fault {
    /// The exit status a shell would show for the signal Linux delivers (128 + signal).
    pub fn exit_status(&self) -> i32 {
        128 + match self.kind {
            FaultKind::IllegalInstruction => 4, // SIGILL
            FaultKind::Breakpoint => 5,         // SIGTRAP
            FaultKind::MisalignedAtomic(_) | FaultKind::PastEndOfFile(_) => 7, // SIGBUS
            FaultKind::FetchAccess(_) | FaultKind::LoadAccess(_) | FaultKind::StoreAccess(_) => 11, // SIGSEGV
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.kind {
            FaultKind::IllegalInstruction => illegal_why(self.inst),
            FaultKind::FetchAccess(a) => {
                format!("instruction fetch from {a:#x} (unmapped or not executable)")
            }
            // the one load fault an `ecall` raises: rt_sigreturn's, as Linux forces SIGSEGV
            FaultKind::LoadAccess(a) if self.inst.op == Op::Ecall => format!(
                "rt_sigreturn: the signal frame at {a:#x} is unreadable or malformed (its vector \
                 context's header, size or registers)"
            ),
            FaultKind::LoadAccess(a) => format!("load from {a:#x} (unmapped or not readable)"),
            FaultKind::StoreAccess(a) => format!("store to {a:#x} (unmapped or read-only)"),
            FaultKind::MisalignedAtomic(a) => format!("misaligned atomic access at {a:#x}"),
            FaultKind::PastEndOfFile(a) => {
                format!("access to {a:#x}, in a file mapping past the end of its file (SIGBUS)")
            }
            FaultKind::Breakpoint => "breakpoint (ebreak)".to_string(),
        };
        let width = if self.inst.len == 2 { 4 } else { 8 };
        if self.inst.len == 0 {
            write!(f, "guest fault at pc {:#x}: {why}", self.pc)
        } else if self.inst.op == Op::Illegal && why.len() > "illegal instruction".len() {
            // the extension is named: the raw bits say the rest
            write!(
                f,
                "guest fault at pc {:#x}: {why} (instruction {:#0w$x})",
                self.pc,
                self.inst.raw,
                w = width + 2
            )
        } else {
            write!(
                f,
                "guest fault at pc {:#x}: {why}; instruction {:#0w$x} `{}`",
                self.pc,
                self.inst.raw,
                self.inst,
                w = width + 2
            )
        }
    }
}

/// Why an instruction is illegal, naming its extension when it has one: switched off by
/// `--isa`, or one the machine does not implement (V, Zfh, …).
fn illegal_why(inst: Inst) -> String {
    if inst.len == 0 {
        return "illegal instruction".to_string();
    }
    // decoded as enabled: the instruction itself refused its operands
    if inst.op.sem() == Sem::Vector {
        return format!(
            "illegal instruction: `{inst}`: the vector unit refuses it (vtype is vill, a \
             register group is not aligned to its size, the element width is not allowed, or \
             the form is reserved)"
        );
    }
    if inst.op.sem() == Sem::Csr
        && matches!(
            inst.imm as u32 & 0xfff,
            0x008 | 0x009 | 0x00a | 0x00f | 0xc20..=0xc22
        )
    {
        return format!(
            "illegal instruction: `{inst}` accesses a V CSR: V is switched off by --isa, or \
             the CSR is read-only"
        );
    }
    let full = if inst.len == 2 {
        decode(inst.raw as u16, 0)
    } else {
        crate::inst::decode32(inst.raw, 4, inst.raw)
    };
    if full.op != Op::Illegal {
        let ext = if full.len == 2 && crate::compressed::ext(full.raw as u16) != Ext::C {
            crate::compressed::ext(full.raw as u16)
        } else {
            full.op.ext()
        };
        return format!(
            "illegal instruction: `{full}` is a {} instruction, switched off by --isa",
            ext.title()
        );
    }
    match crate::isa::unimplemented(inst.raw, inst.len) {
        Some(ext) => format!(
            "illegal instruction: the {ext} extension, which the machine does not implement"
        ),
        None => "illegal instruction".to_string(),
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The guest called exit/exit_group with this status.
    Exited(i32),
    /// The guest faulted.
    Fault(Fault),
    /// The instruction limit was reached.
    InstructionLimit,
    /// The observer asked to stop.
    Stopped,
    /// A signal's default action ended the process (128 + the signal as a shell shows it);
    /// `core` for the signals whose default action dumps core (no core file is written).
    Signaled {
        /// The signal number.
        signal: u8,
        /// Its default action is "core".
        core: bool,
    },
    /// Every thread waits and nothing can wake one: no timer is armed and no wait has a
    /// deadline ([`Machine::deadlock_report`] names each thread and what it waits on).
    Deadlock,
    /// The guest tried to run more threads at once than [`Machine::set_max_threads`] allows.
    ThreadLimit,
}

impl Outcome {
    /// The exit status a shell would show for an outcome that ended the guest (`None` for
    /// the instruction limit and a stop, which the caller names).
    pub fn exit_status(&self) -> Option<i32> {
        match self {
            Outcome::Exited(c) => Some(*c),
            Outcome::Fault(f) => Some(f.exit_status()),
            Outcome::Signaled { signal, .. } => Some(128 + i32::from(*signal)),
            Outcome::Deadlock | Outcome::ThreadLimit => Some(EXIT_MACHINE_ERROR),
            Outcome::InstructionLimit | Outcome::Stopped => None,
        }
    }

    /// A short text: `exited`, `fault: …`, `killed by SIGUSR1`, `deadlock`….
    pub fn describe(&self) -> String {
        match self {
            Outcome::Exited(c) => format!("exited {c}"),
            Outcome::Fault(f) => format!("fault: {f}"),
            Outcome::InstructionLimit => "instruction limit".to_string(),
            Outcome::Stopped => "stopped".to_string(),
            Outcome::Signaled { signal, core } => format!(
                "killed by {}{}",
                crate::kernel::signals::signal_name(u64::from(*signal)),
                if *core { " (core dumped)" } else { "" }
            ),
            Outcome::Deadlock => {
                "deadlock: every thread waits and no timer or timeout can wake one".to_string()
            }
            Outcome::ThreadLimit => "thread limit: the guest started more threads than \
                                     --max-threads allows"
                .to_string(),
        }
    }
}

/// Exit status of a run ended by the machine rather than the guest: a deadlock or too many
/// threads (as `timeout(1)`'s own errors).
pub const EXIT_MACHINE_ERROR: i32 = 125;

/// Result of executing one instruction.
enum Flow {
    Next,
    /// A system call asked for the scheduler (the instruction retired).
    Yield,
    Exit(i32),
    Fault(FaultKind),
}

/// What one instruction did beyond its register write, for the observer: kept in locals of
/// `step` (the struct is taken apart when `execute` and `tell_observer` are inlined), and
/// dead code unless the observer asks for retire records.
struct Effects {
    /// The next pc (a taken branch's target, or after a system call where it returns).
    next: u64,
    /// The value written to the destination register.
    result: Option<u64>,
    mem_addr: u64,
    mem_size: u8,
    mem_value: u64,
    /// The source operands (an FP instruction's are its own).
    src1: u64,
    src2: u64,
    /// A branch's or jump's target, taken or not.
    target: u64,
    /// A taken control transfer.
    branch: Option<BranchKind>,
    /// The process exited with this code.
    exit: Option<i32>,
    /// A system call asked for the scheduler.
    yielded: bool,
}

struct ICache {
    pages: HashMap<u64, usize>,
    /// Parked pages; the current one is swapped out into `page`.
    slots: Vec<Box<[Inst; SLOTS]>>,
    /// The current page's slots (`cur_vpn`); its `slots[cur]` holds a placeholder meanwhile.
    page: Box<[Inst; SLOTS]>,
    /// Direct-mapped (vpn, slot index) of recently executed pages.
    recent: [(u64, usize); RECENT],
    epoch: u64,
    cur_vpn: u64,
    cur: usize,
    /// Most pages decoded at once (see [`decoded_pages_cap`]).
    max_pages: usize,
}

impl ICache {
    /// Nothing decoded yet; at most `max_pages` pages at once.
    fn new(max_pages: usize) -> ICache {
        ICache {
            pages: HashMap::new(),
            slots: Vec::new(),
            page: Box::new([NOT_DECODED; SLOTS]),
            recent: [(u64::MAX, 0); RECENT],
            epoch: u64::MAX,
            cur_vpn: u64::MAX,
            cur: 0,
            max_pages,
        }
    }
}

/// Host bytes one decoded page takes.
pub const DECODED_PAGE_BYTES: u64 = (SLOTS * std::mem::size_of::<Inst>()) as u64;

/// Most executable pages the instruction cache holds decoded for a memory limit of
/// `limit_bytes`: decoded code may take as much host memory as the limit itself, and never
/// less than 16 MiB (512 pages).
pub fn decoded_pages_cap(limit_bytes: u64) -> usize {
    (limit_bytes / DECODED_PAGE_BYTES).max(512) as usize
}

/// Which interpreter runs the guest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// Pre-decoded basic blocks for observers that read no retire records; the single-step
    /// interpreter for those that do, and for every instruction a block cannot run.
    Blocks,
    /// The single-step interpreter only: the oracle the block engine is tested against.
    Step,
    /// The default: the block engine with the compiling tier under it. Blocks that run hot
    /// are compiled to host code (Cranelift); under observers of class counts, blocks and
    /// taken branches, compiled blocks emit those streams as records (docs/machine.md, "The
    /// compiling tier"). Observers of retire records run as under [`Engine::Blocks`].
    #[default]
    Jit,
}

/// A RISC-V hart with its memory and its Linux kernel emulation.
pub struct Machine {
    /// Integer registers (x0 always reads 0).
    pub x: [u64; 32],
    /// FP registers as raw bits (singles NaN-boxed).
    pub f: [u64; 32],
    /// The vector unit's registers and state (docs/machine.md, "Vectors").
    pub v: crate::vector::VState,
    /// Program counter. Bit 0 is always clear when an instruction runs: [`Machine::run`]
    /// clears it, as hardware does wherever a pc comes from software (`jalr` clears it; `sepc`,
    /// through which Linux enters the program, a signal handler or a `rt_sigreturn` target, has
    /// bit 0 hardwired to zero). Both engines therefore see the same, even, pc.
    pub pc: u64,
    /// Signals delivered (each a trapping instruction that retired nothing). They count
    /// against [`Machine::max_insns`] with the retired instructions, so a handler that traps
    /// again at once cannot run forever under a limit.
    pub traps: u64,
    /// Times all decoded code was dropped: code the machine held changed (a store to a page
    /// code was fetched from, unmapping, re-protecting) or the decoded-code budget was full.
    pub code_flushes: u64,
    /// Accrued FP exception flags (fcsr bits 4:0).
    pub fflags: u8,
    /// Dynamic rounding mode (fcsr bits 7:5).
    pub frm: u8,
    /// Guest memory.
    pub mem: Memory,
    /// Linux system call emulation, file descriptors and sandbox.
    pub kernel: Kernel,
    /// Instructions retired so far.
    pub instret: u64,
    /// Stop after this many instructions.
    pub max_insns: u64,
    /// Where the engines stop next (instructions and traps): the instruction limit, the end
    /// of the running thread's quantum, the next timer, or now when a system call asked for
    /// the scheduler.
    stop_at: u64,
    /// The scheduler's state (docs/machine.md, "Threads").
    sched: sched::Scheduler,
    /// Branch-on-random's decision unit (`brr`; docs/machine.md "Branch-on-random").
    pub brr: BrrUnit,
    /// The interpreter that runs the guest (the block engine unless set otherwise).
    pub engine: Engine,
    reservation: Option<u64>,
    icache: ICache,
    blocks: blocks::BlockCache,
    block_start: u64,
    block_len: u32,
    /// The lengths of that block's instructions so far (observers of block lengths only).
    block_lens: Vec<u8>,
    /// Whether the last run's observer followed basic blocks (so `block_start` and the
    /// parked threads' blocks in progress are current).
    blocks_tracked: bool,
    /// The enabled extensions (`--isa`).
    isa: Isa,
    /// Mapped objects the observer has heard of ([`Observer::mapped`]).
    mappings_seen: usize,
    /// The process and image the observer last heard of ([`Observer::process`]; `None`: the
    /// first process's first).
    announced: Option<(u32, u32)>,
    /// The compiling tier ([`Engine::Jit`]), made on first use.
    jit: Option<Box<blocks::jit::Tier>>,
    /// The other processes' address spaces and code, by pid (docs/machine.md, "Processes").
    spaces: Vec<(u32, process::Space)>,
    /// What the compiling tiers of ended address spaces did (`None`: none had one).
    jit_retired: Option<outcrop_jit::Stats>,
    /// Cranelift cannot compile for this host: the block engine runs everything.
    jit_unavailable: bool,
    /// Runs of a block on the block engine before Cranelift compiles its unit (where the
    /// baseline tier is off or the host has none).
    pub jit_hot: u32,
    /// Runs of a block on the block engine before the baseline tier compiles its unit.
    pub jit_hot_baseline: u32,
    /// Compile with the baseline tier where the host has one (the default); off, Cranelift
    /// compiles every unit.
    pub jit_baseline: bool,
    /// Compile on a second thread while the block engine goes on (the default); off, units are
    /// compiled on the machine's thread when they get hot (tests: which blocks run compiled
    /// is then the same on every run).
    pub jit_background: bool,
}

/// rt_sigreturn's system call number.
const RT_SIGRETURN: u64 = 139;
/// Bytes of a signal frame: siginfo (128) and ucontext (960), as Linux lays them out on riscv64.
const SIGFRAME_BYTES: u64 = 128 + 960;
/// Offsets in the frame: the ucontext, and in it the signal mask and the machine context
/// (pc, x1..x31, then f0..f31 and fcsr).
const UC: usize = 128;
const UC_SIGMASK: usize = 40;
const UC_MCONTEXT: usize = 176;

/// The kind of a `jalr rd, imm(rs1)`: a call if it links `ra`/`t0`, a return if it jumps
/// through one of them without linking or offset, else indirect (the RISC-V hint convention).
#[inline(always)]
fn jalr_kind(rd: usize, rs1: u8, imm: i32) -> BranchKind {
    let links = |r: usize| r == 1 || r == 5;
    if links(rd) {
        BranchKind::Call
    } else if links(usize::from(rs1 & 31)) && rd == 0 && imm == 0 {
        BranchKind::Return
    } else {
        BranchKind::Indirect
    }
}

#[inline]
fn box32(v: u32) -> u64 {
    0xffff_ffff_0000_0000 | u64::from(v)
}

#[inline]
fn unbox32(v: u64) -> u32 {
    if v >> 32 == 0xffff_ffff {
        v as u32
    } else {
        fpu::CANONICAL_NAN_32
    }
}

impl Machine {
    /// A machine over `mem` and `kernel`, starting at `pc` with stack pointer `sp`.
    pub fn new(mem: Memory, kernel: Kernel, pc: u64, sp: u64) -> Self {
        let mut x = [0; 32];
        x[2] = sp;
        let max_pages = decoded_pages_cap(mem.limit_bytes());
        Machine {
            x,
            f: [0; 32],
            pc,
            traps: 0,
            code_flushes: 0,
            fflags: 0,
            frm: 0,
            mem,
            kernel,
            instret: 0,
            max_insns: u64::MAX,
            stop_at: u64::MAX,
            sched: sched::Scheduler::default(),
            brr: BrrUnit::default(),
            engine: Engine::default(),
            reservation: None,
            blocks: blocks::BlockCache::new(max_pages as u64 * DECODED_PAGE_BYTES),
            icache: ICache::new(max_pages),
            spaces: Vec::new(),
            jit_retired: None,
            block_start: pc,
            block_len: 0,
            block_lens: Vec::new(),
            blocks_tracked: false,
            isa: Isa::ALL,
            v: crate::vector::VState::default(),
            mappings_seen: 0,
            announced: None,
            jit: None,
            jit_unavailable: false,
            jit_hot: blocks::jit::JIT_HOT,
            jit_hot_baseline: blocks::jit::BASELINE_HOT,
            jit_baseline: true,
            jit_background: true,
        }
    }

    /// Host bytes the guest has caused the machine to hold: guest memory with its page table
    /// ([`Memory::host_bytes`]) and the decoded instructions. Bounded by the memory limit (see
    /// docs/machine.md, "Security model").
    pub fn host_bytes(&self) -> u64 {
        self.mem.host_bytes()
            + self.icache_bytes()
            + self.blocks.host_bytes()
            + self.jit_bytes()
            + self.kernel.threads().list.len() as u64 * crate::kernel::threads::THREAD_CHARGE
            + self.parked_host_bytes()
    }

    /// Host bytes of compiled code.
    fn jit_bytes(&self) -> u64 {
        self.jit.as_ref().map_or(0, |j| j.code_bytes())
    }

    /// What the compiling tier did: units compiled, their blocks, code bytes, compile time,
    /// flushes and entries (all zero unless [`Engine::Jit`] ran).
    pub fn jit_stats(&self) -> outcrop_jit::Stats {
        self.jit_stats_if_used().unwrap_or_default()
    }

    /// [`Machine::jit_stats`], if the compiling tier was started at all: summed over every
    /// process's tier, those that ended included.
    pub fn jit_stats_if_used(&self) -> Option<outcrop_jit::Stats> {
        let tiers = self.jit.iter().chain(self.parked_tiers());
        tiers.fold(self.jit_retired, |acc, j| {
            let mut s = acc.unwrap_or_default();
            s.merge(&j.stats);
            Some(s)
        })
    }

    /// Host bytes of the single-step interpreter's decoded pages.
    fn icache_bytes(&self) -> u64 {
        (self.icache.slots.len() as u64 + 1) * DECODED_PAGE_BYTES
    }

    /// Runs the engines until they stop (at [`Machine::stop_at`], exit, fault, or the
    /// observer's word).
    ///
    /// Observers that read retire records run on the single-step interpreter (functional
    /// warming, [`Observer::WARM`], on compiled blocks and the interpreter); the others on
    /// the block engine, which hands every instruction it cannot run to the single-step one.
    /// Both deliver the same streams (docs/machine.md, "The block engine").
    fn run_engine<O: Observer>(&mut self, obs: &mut O) -> Outcome {
        if (O::RETIRE && !O::WARM) || self.engine == Engine::Step {
            return self
                .run_steps(obs, u64::MAX)
                .unwrap_or(Outcome::InstructionLimit);
        }
        loop {
            if let Some(outcome) = self.run_blocks(obs) {
                return outcome;
            }
            if let Some(outcome) = self.run_steps(obs, 1) {
                return outcome;
            }
        }
    }

    /// The single-step interpreter: runs at most `steps` instructions; `None` when it ran
    /// them all and the run goes on.
    fn run_steps<O: Observer>(&mut self, obs: &mut O, mut steps: u64) -> Option<Outcome> {
        loop {
            let done = self.instret.saturating_add(self.traps);
            if done >= self.stop_at {
                return Some(Outcome::InstructionLimit);
            }
            if steps == 0 {
                return None;
            }
            let budget = (self.stop_at - done).min(1 << 20).min(steps);
            steps -= budget;
            // `pc` lives in a register for the whole chunk; `self.pc` is written back whenever
            // control leaves the loop or calls out.
            let mut pc = self.pc;
            for _ in 0..budget {
                // Fetch from the pre-decoded page (inlined: returning a Result here would build
                // the 16-byte Inst in memory and stall on store forwarding).
                let vpn = pc >> 12;
                if vpn != self.icache.cur_vpn {
                    self.pc = pc;
                    if let Err(fault) = self.switch_page(vpn) {
                        return Some(Outcome::Fault(self.refine(fault)));
                    }
                }
                let slot = ((pc & (PAGE_SIZE - 1)) >> 1) as usize;
                let mut inst = self.icache.page[slot];
                if inst.len == 0 {
                    self.pc = pc;
                    match self.decode_slot(slot) {
                        Ok(i) => inst = i,
                        Err(fault) => return Some(Outcome::Fault(self.refine(fault))),
                    }
                }
                let (flow, control, next) = self.step(inst, pc, obs);
                match (flow, control) {
                    (Flow::Next, Control::Continue) => pc = next,
                    (Flow::Next, Control::Stop) => {
                        self.pc = next;
                        return Some(Outcome::Stopped);
                    }
                    (Flow::Exit(code), _) => {
                        self.pc = next;
                        return Some(Outcome::Exited(code));
                    }
                    (Flow::Yield, control) => {
                        self.pc = next;
                        return Some(if control == Control::Stop {
                            Outcome::Stopped
                        } else {
                            Outcome::InstructionLimit
                        });
                    }
                    (Flow::Fault(kind), _) if self.deliver_fault(kind, pc) => {
                        // the guest's handler runs next (SIGILL emulating brr, say): the
                        // block the fault interrupted ends before it
                        pc = self.pc;
                        self.traps += 1;
                        if self.signal_entered(obs) == Control::Stop {
                            return Some(Outcome::Stopped);
                        }
                        if self.instret.saturating_add(self.traps) >= self.stop_at {
                            return Some(Outcome::InstructionLimit);
                        }
                    }
                    (Flow::Fault(kind), _) => {
                        self.pc = pc;
                        // re-read rather than keep `inst` alive across `step` (which would force
                        // a stack copy of every instruction)
                        let inst = self.icache.page[slot];
                        return Some(Outcome::Fault(self.refine(Fault { pc, inst, kind })));
                    }
                }
            }
            self.pc = pc;
        }
    }

    /// Drops the instruction cache if executable memory changed since it was filled.
    #[inline]
    fn check_code_epoch(&mut self) {
        if self.mem.code_epoch() != self.icache.epoch {
            self.flush_icache();
        }
    }

    #[cold]
    fn flush_icache(&mut self) {
        // nothing decoded is kept: stores stop bumping the epoch until code is fetched again
        self.mem.forget_decoded();
        self.code_flushes += 1;
        // the counts of compiled blocks about to be forgotten, for the next `drain_counts`
        self.blocks.keep_counts(self.jit.as_deref_mut());
        self.blocks.flush();
        if let Some(j) = self.jit.as_deref_mut() {
            j.flush();
        }
        self.icache.pages.clear();
        self.icache.slots.clear();
        *self.icache.page = [NOT_DECODED; SLOTS];
        self.icache.cur_vpn = u64::MAX;
        self.icache.recent = [(u64::MAX, 0); RECENT];
        self.icache.epoch = self.mem.code_epoch();
    }

    #[inline(never)]
    fn switch_page(&mut self, vpn: u64) -> Result<(), Fault> {
        // Pages already in the cache were executable when they entered it, and any permission
        // change since would have flushed the cache (code epoch): only new pages are checked.
        let recent = (vpn as usize) & (RECENT - 1);
        let idx = match self.icache.recent[recent] {
            (v, i) if v == vpn => i,
            _ => match self.icache.pages.get(&vpn) {
                Some(&i) => i,
                None => {
                    // one budget for decoded pages and decoded blocks together
                    let held = (self.icache.slots.len() as u64 + 2) * DECODED_PAGE_BYTES
                        + self.blocks.host_bytes();
                    if held > self.icache.max_pages as u64 * DECODED_PAGE_BYTES {
                        // Decoded code is 8× the guest bytes it decodes; the cap keeps it
                        // within the memory limit. Start over, as a code change would.
                        self.flush_icache();
                    }
                    if self.mem.perm_at(self.pc) & perm::X == 0 {
                        return Err(Fault {
                            pc: self.pc,
                            inst: NOT_DECODED,
                            kind: FaultKind::FetchAccess(self.pc),
                        });
                    }
                    self.icache.slots.push(Box::new([NOT_DECODED; SLOTS]));
                    let i = self.icache.slots.len() - 1;
                    self.icache.pages.insert(vpn, i);
                    i
                }
            },
        };
        self.icache.recent[recent] = (vpn, idx);
        // put the current page back, take the new one
        if self.icache.cur_vpn != u64::MAX {
            let cur = self.icache.cur;
            std::mem::swap(&mut self.icache.page, &mut self.icache.slots[cur]);
        }
        std::mem::swap(&mut self.icache.page, &mut self.icache.slots[idx]);
        self.icache.cur = idx;
        self.icache.cur_vpn = vpn;
        Ok(())
    }

    #[cold]
    fn decode_slot(&mut self, slot: usize) -> Result<Inst, Fault> {
        let fetch_fault = |pc: u64, e: AccessError| Fault {
            pc,
            inst: NOT_DECODED,
            kind: FaultKind::FetchAccess(e.addr()),
        };
        let lo = self
            .mem
            .fetch_u16(self.pc)
            .map_err(|e| fetch_fault(self.pc, e))?;
        let hi = if lo & 3 == 3 {
            self.mem
                .fetch_u16(self.pc.wrapping_add(2))
                .map_err(|e| fetch_fault(self.pc, e))?
        } else {
            0
        };
        let inst = self.decode_isa(lo, hi);
        self.icache.page[slot] = inst;
        Ok(inst)
    }

    /// Decodes as [`decode`], with instructions of extensions outside [`Machine::isa`]
    /// illegal.
    #[inline]
    fn decode_isa(&self, lo: u16, hi: u16) -> Inst {
        let inst = decode(lo, hi);
        if self.isa == Isa::ALL || inst.allowed(self.isa) {
            inst
        } else {
            Inst::illegal(inst.raw, inst.len)
        }
    }

    /// Tells the observer of the objects mapped executable since it last heard
    /// ([`Observer::mapped`]).
    #[cold]
    /// Ends the observers' current basic block ([`Observer::block`], or
    /// [`Observer::block_lens`] with its instructions' lengths); the caller sets where the
    /// next one starts.
    #[inline(always)]
    fn end_block<O: Observer>(&mut self, obs: &mut O) -> Control {
        let control = if O::BLOCK_LENS {
            obs.block_lens(self.block_start, &self.block_lens)
        } else {
            obs.block(self.block_start, self.block_len)
        };
        self.block_len = 0;
        self.block_lens.clear();
        control
    }

    /// A signal handler was entered (`self.pc` is its first instruction): the observers'
    /// basic block the signal interrupted ends, the handler starts a new one, then
    /// [`Observer::signal`].
    fn signal_entered<O: Observer>(&mut self, obs: &mut O) -> Control {
        let mut control = Control::Continue;
        if O::BLOCKS {
            if self.block_len > 0 {
                control = self.end_block(obs);
            }
            self.block_start = self.pc;
            self.block_len = 0;
            self.block_lens.clear();
        }
        control.and(obs.signal(true))
    }

    fn note_mappings<O: Observer>(&mut self, obs: &mut O) -> Control {
        // a new image's mappings come after the switch to it
        let mut control = self.note_process(obs);
        let objects = self.kernel.mapped_objects();
        for (i, o) in objects.iter().enumerate().skip(self.mappings_seen) {
            control = control.and(obs.mapped(&o.mapping(i as u32)));
        }
        self.mappings_seen = objects.len();
        control
    }

    /// `fault` with an access to a page past the end of a mapped file made the SIGBUS Linux
    /// raises there.
    fn refine(&self, fault: Fault) -> Fault {
        Fault {
            kind: self.refine_kind(fault.kind),
            ..fault
        }
    }

    fn refine_kind(&self, kind: FaultKind) -> FaultKind {
        match kind {
            FaultKind::FetchAccess(a) | FaultKind::LoadAccess(a) | FaultKind::StoreAccess(a)
                if self.mem.past_eof(a) =>
            {
                FaultKind::PastEndOfFile(a)
            }
            k => k,
        }
    }

    /// Enables only the extensions in `isa` (the default: every one the machine implements);
    /// an instruction of another decodes as illegal. Decoded code is dropped.
    pub fn set_isa(&mut self, isa: Isa) {
        self.isa = isa;
        self.flush_icache();
    }

    /// Sets VLEN, the bits per vector register (a power of two from 128 to 1024; anything
    /// else is refused). The vector state starts afresh.
    pub fn set_vlen(&mut self, vlen: u32) -> Result<(), String> {
        use crate::vector::{MAX_VLEN, MIN_VLEN};
        if !vlen.is_power_of_two() || !(MIN_VLEN..=MAX_VLEN).contains(&vlen) {
            return Err(format!(
                "VLEN {vlen}: a power of two from {MIN_VLEN} to {MAX_VLEN} bits"
            ));
        }
        self.v = crate::vector::VState::new(vlen);
        Ok(())
    }

    /// The enabled extensions.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    #[inline]
    fn rm(&self, field: u8) -> Option<Rm> {
        let bits = if field == 7 { self.frm } else { field };
        Rm::from_bits(u32::from(bits))
    }

    /// Executes one instruction; returns the flow and the observer's verdict.
    #[inline(always)]
    fn step<O: Observer>(&mut self, inst: Inst, pc: u64, obs: &mut O) -> (Flow, Control, u64) {
        let mut e = Effects {
            next: pc.wrapping_add(u64::from(inst.len)),
            result: None,
            mem_addr: 0,
            mem_size: 0,
            mem_value: 0,
            src1: self.x[inst.rs1 as usize & 31],
            src2: self.x[inst.rs2 as usize & 31],
            target: 0,
            branch: None,
            exit: None,
            yielded: false,
        };
        if let Err(kind) = self.execute(inst, pc, &mut e) {
            return (Flow::Fault(kind), Control::Continue, pc);
        }
        self.x[0] = 0;
        self.instret += 1;
        let control = self.tell_observer(inst, pc, &e, obs);
        match e.exit {
            Some(code) => (Flow::Exit(code), control, e.next),
            None if e.yielded => (Flow::Yield, control, e.next),
            None => (Flow::Next, control, e.next),
        }
    }

    /// What `inst` at `pc` computes, written once per operation family: its registers and
    /// memory changed, what the observer may want in `e`, or the fault it raises (nothing
    /// changed then). `for_each_op!` generates one match arm per operation of the opcode table
    /// from its row's semantics column, so the match dispatches once per instruction (as if
    /// each operation were written out) and every operand of the family (the `Alu`, the size)
    /// is a constant in its arm.
    #[inline(always)]
    fn execute(&mut self, inst: Inst, pc: u64, e: &mut Effects) -> Result<(), FaultKind> {
        let len = u64::from(inst.len);
        let (rs1, rs2) = (e.src1, e.src2);
        let imm = inst.imm as i64 as u64;
        let rd = inst.rd as usize & 31;
        macro_rules! wr {
            ($v:expr) => {{
                let v: u64 = $v;
                self.x[rd] = v;
                e.result = Some(v);
            }};
        }
        macro_rules! branch {
            ($cond:expr) => {{
                e.target = pc.wrapping_add(imm);
                if $cond {
                    e.next = e.target;
                    e.branch = Some(BranchKind::Cond);
                }
            }};
        }
        #[allow(unused_imports)]
        use outcrop_sem::{Alu as A, AmoOp as M, Cond as C, FMove as F};
        macro_rules! family {
            (Alu($op:expr)) => {
                wr!($op.eval(rs1, rs2))
            };
            (AluImm($op:expr)) => {
                wr!($op.eval(rs1, imm))
            };
            (Lui) => {
                wr!(imm)
            };
            (Auipc) => {
                wr!(pc.wrapping_add(imm))
            };
            (Jal) => {{
                e.target = pc.wrapping_add(imm);
                e.next = e.target;
                let call = rd == 1 || rd == 5;
                e.branch = Some(if call {
                    BranchKind::Call
                } else {
                    BranchKind::Jump
                });
                wr!(pc.wrapping_add(len));
            }};
            (Jalr) => {{
                e.target = rs1.wrapping_add(imm) & !1;
                e.next = e.target;
                e.branch = Some(jalr_kind(rd, inst.rs1, inst.imm));
                wr!(pc.wrapping_add(len));
            }};
            (Branch($c:expr)) => {
                branch!($c.eval(rs1, rs2))
            };
            // --brr trap: an illegal instruction, for the guest's SIGILL handler
            (Brr) => {
                branch!(self
                    .brr
                    .decide(inst.rd)
                    .ok_or(FaultKind::IllegalInstruction)?)
            };
            (Load($size:expr, $signed:expr)) => {
                wr!(self.load_effect(e, rs1.wrapping_add(imm), $size, $signed)?)
            };
            (Store($size:expr)) => {
                self.store_effect(e, rs1.wrapping_add(imm), $size, rs2)?
            };
            (FLoad($size:expr)) => {{
                let v = self.load_effect(e, rs1.wrapping_add(imm), $size, false)?;
                let r = if $size == 4 { box32(v as u32) } else { v };
                self.f[rd] = r;
                e.result = Some(r);
            }};
            (FStore($size:expr)) => {{
                let v = self.f[inst.rs2 as usize & 31];
                e.src2 = if $size == 4 { u64::from(v as u32) } else { v };
                self.store_effect(e, rs1.wrapping_add(imm), $size, e.src2)?
            }};
            (Fence) => {
                ()
            };
            (Nop) => {
                ()
            };
            (FenceI) => {
                self.check_code_epoch()
            };
            (Ecall) => {
                (e.next, e.result, e.yielded, e.exit) = self.ecall(e.next)?
            };
            (Ebreak) => {
                return Err(FaultKind::Breakpoint)
            };
            // scalars, not the Inst: passing the aggregate would force a stack copy of every
            // instruction in the hot loop
            (Csr) => {
                wr!(self
                    .csr(inst.op, inst.imm, inst.rs1, rs1)
                    .ok_or(FaultKind::IllegalInstruction)?)
            };
            (Lr($size:expr)) => {{
                let v = self.load_reserved(rs1, $size)?;
                (e.mem_addr, e.mem_size, e.mem_value) = (rs1, $size, v);
                wr!(v)
            }};
            (Sc($size:expr)) => {{
                let stored = self.store_conditional(rs1, $size, rs2)?;
                if stored {
                    (e.mem_addr, e.mem_size, e.mem_value) = (rs1, $size, rs2);
                }
                wr!(u64::from(!stored))
            }};
            (Amo($op:expr, $size:expr)) => {{
                let old = self.amo($op, $size, rs1, rs2)?;
                (e.mem_addr, e.mem_size, e.mem_value) = (rs1, $size, old);
                wr!(if $size == 4 { sext32(old) } else { old })
            }};
            // may-be-operations write zero
            (Zero) => {
                wr!(0)
            };
            (FMove($m:expr)) => {
                family!(Float)
            };
            (Vector) => {
                self.vector_effect(inst.raw, e)?
            };
            (CboZero) => {
                self.cbo_zero(e, rs1)?
            };
            (Float) => {{
                let f = self.float(inst.op, inst.rd, inst.rs1, inst.rs2, inst.rs3, inst.rm, rs1);
                let (v, s1, s2) = f.ok_or(FaultKind::IllegalInstruction)?;
                (e.result, e.src1, e.src2) = (Some(v), s1, s2);
            }};
        }
        macro_rules! dispatch {
            ($($op:ident $family:ident $(($($args:tt)*))? ;)*) => {
                match inst.op {
                    $(Op::$op => family!($family $(($($args)*))?),)*
                    Op::Illegal => return Err(FaultKind::IllegalInstruction),
                }
            };
        }
        crate::inst::for_each_op!(dispatch);
        Ok(())
    }

    /// `cbo.zero`: zeroes the 64-byte block holding `a`, recorded in `e`.
    fn cbo_zero(&mut self, e: &mut Effects, a: u64) -> Result<(), FaultKind> {
        let a = a & !63;
        for k in 0..8 {
            self.store_effect(e, a + 8 * k, 8, 0)?;
        }
        (e.mem_addr, e.mem_size, e.mem_value) = (a, 64, 0);
        Ok(())
    }

    /// Runs the vector instruction `raw` on the vector unit, recorded in `e`: its first
    /// memory address and bytes (at most 255 recorded), the scalar it wrote.
    #[inline(never)]
    fn vector_effect(&mut self, raw: u32, e: &mut Effects) -> Result<(), FaultKind> {
        use crate::vector::{execute, Ctx, VFault};
        let mut c = Ctx {
            x: &mut self.x,
            f: &mut self.f,
            fflags: &mut self.fflags,
            frm: self.frm,
            mem: &mut self.mem,
            zvbb: self.isa.has(crate::isa::Ext::Zvbb),
            zvfhmin: self.isa.has(crate::isa::Ext::Zvfhmin),
        };
        let r = execute(&mut self.v, &mut c, raw);
        self.x[0] = 0;
        match r {
            Ok(d) => {
                e.result = d.result;
                if d.mem_bytes > 0 {
                    (e.mem_addr, e.mem_size) = (d.mem_addr, d.mem_bytes.min(255) as u8);
                }
                if d.stored {
                    self.reservation = None;
                    self.check_code_epoch();
                }
                Ok(())
            }
            Err(VFault::Illegal) => Err(FaultKind::IllegalInstruction),
            Err(VFault::Load(a)) => Err(FaultKind::LoadAccess(a)),
            Err(VFault::Store(a)) => {
                self.reservation = None;
                self.check_code_epoch();
                Err(FaultKind::StoreAccess(a))
            }
        }
    }

    /// A load of `size` bytes at `a`, extended as the instruction says, recorded in `e`.
    #[inline(always)]
    fn load_effect(
        &mut self,
        e: &mut Effects,
        a: u64,
        size: u8,
        signed: bool,
    ) -> Result<u64, FaultKind> {
        match self.mem.load_sized(a, size) {
            Ok(v) => {
                let v = outcrop_sem::extend(v, size, signed);
                (e.mem_addr, e.mem_size, e.mem_value) = (a, size, v);
                Ok(v)
            }
            Err(err) => Err(FaultKind::LoadAccess(err.addr())),
        }
    }

    /// A store of the low `size` bytes of `v` at `a`: a reservation on its doubleword is
    /// cleared and decoded code it changed is dropped; recorded in `e`.
    #[inline(always)]
    fn store_effect(&mut self, e: &mut Effects, a: u64, size: u8, v: u64) -> Result<(), FaultKind> {
        if let Err(err) = self.mem.store_sized(a, size, v) {
            return Err(FaultKind::StoreAccess(err.addr()));
        }
        if self.reservation == Some(a & !7) {
            self.reservation = None;
        }
        self.check_code_epoch();
        (e.mem_addr, e.mem_size) = (a, size);
        e.mem_value = if size == 8 {
            v
        } else {
            v & ((1 << (8 * size)) - 1)
        };
        Ok(())
    }

    /// Tells the observer what `inst` at `pc` did (`e`), as much as it asked for: the retire
    /// record, its class, a taken branch and the stack pointer at calls and returns, basic
    /// blocks, new mappings after a system call. Its verdict.
    #[inline(always)]
    fn tell_observer<O: Observer>(
        &mut self,
        inst: Inst,
        pc: u64,
        e: &Effects,
        obs: &mut O,
    ) -> Control {
        let mut control = Control::Continue;
        let rd = inst.rd as usize & 31;
        if O::RETIRE {
            let taken = e.branch.is_some();
            let class = inst.class;
            let r = Retire {
                pc,
                raw: inst.raw,
                len: inst.len,
                class: Some(class),
                unit: inst.op.unit(),
                regs: inst.op.reg_use(inst.rd, inst.rs1, inst.rs2, inst.rs3),
                src1: e.src1,
                src2: e.src2,
                result: if rd == 0 && class != Class::Float {
                    None
                } else {
                    e.result
                },
                mem_addr: e.mem_addr,
                mem_size: e.mem_size,
                mem_value: e.mem_value,
                taken,
                target: e.target,
                transfer: e.branch,
                next_pc: e.next,
                thread: self.sched.thread_index,
                sp: self.x[2],
            };
            if obs.retire(&r, None) == Control::Stop {
                control = Control::Stop;
            }
        }
        if O::CLASSES && obs.class(inst.class) == Control::Stop {
            control = Control::Stop;
        }
        if O::BRANCHES {
            if let Some(kind) = e.branch {
                if obs.taken_branch(pc, e.next, kind) == Control::Stop {
                    control = Control::Stop;
                }
                if O::STACK
                    && matches!(
                        kind,
                        BranchKind::Call | BranchKind::Return | BranchKind::Indirect
                    )
                    && obs.stack(self.x[2]) == Control::Stop
                {
                    control = Control::Stop;
                }
            }
        }
        if O::BLOCKS {
            self.block_len += 1;
            if O::BLOCK_LENS {
                self.block_lens.push(inst.len);
            }
            if matches!(inst.class(), Class::Branch | Class::Jump) || inst.op == Op::Ecall {
                if self.end_block(obs) == Control::Stop {
                    control = Control::Stop;
                }
                self.block_start = e.next;
            }
        }
        if O::MAPPINGS
            && inst.op == Op::Ecall
            && self.mappings_seen != self.kernel.mapped_objects().len()
        {
            control = control.and(self.note_mappings(obs));
        }
        control
    }

    /// A system call (or `rt_sigreturn`) by the instruction before `next`: where the guest goes
    /// on, the value it returned, whether the scheduler runs now, and the exit code if the
    /// process exited.
    #[inline(never)]
    fn ecall(&mut self, next: u64) -> Result<(u64, Option<u64>, bool, Option<i32>), FaultKind> {
        if self.x[17] == RT_SIGRETURN {
            let Some(to) = self.sigreturn() else {
                return Err(FaultKind::LoadAccess(self.x[2]));
            };
            // a signal the restored mask unblocks is delivered now
            let current = self.kernel.threads().current;
            return Ok((to, None, self.kernel.deliverable(current).is_some(), None));
        }
        let outcome = self
            .kernel
            .syscall(&mut self.mem, &mut self.x, self.instret);
        self.check_code_epoch();
        let ret = Some(self.x[10]);
        Ok(match outcome {
            SyscallOutcome::Continue => (next, ret, false, None),
            SyscallOutcome::Exit(code) => (next, None, false, Some(code)),
            SyscallOutcome::Reschedule => (next, ret, true, None),
            SyscallOutcome::Spawned => {
                self.complete_child(next);
                (next, ret, true, None)
            }
            // back to the `ecall`: it runs again when the thread wakes
            SyscallOutcome::Retry => (next.wrapping_sub(4), None, true, None),
            SyscallOutcome::Forked(f) => match self.complete_fork(f, next) {
                Ok(()) if f.vfork => {
                    self.kernel.vfork_wait(f.child);
                    (next, None, true, None)
                }
                Ok(()) => (next, ret, true, None),
                Err(e) => (next, Some((-e) as u64), false, None),
            },
            SyscallOutcome::Exec(req) => match self.exec(&req) {
                Ok(pc) => (pc, None, true, None),
                Err(e) => (next, Some((-e) as u64), false, None),
            },
        })
    }

    /// Load-reserved of `size` bytes at `addr` (sign-extended from a word).
    #[inline(never)]
    fn load_reserved(&mut self, addr: u64, size: u8) -> Result<u64, FaultKind> {
        if addr % u64::from(size) != 0 {
            return Err(FaultKind::MisalignedAtomic(addr));
        }
        let v = self
            .mem
            .load_sized(addr, size)
            .map_err(|e| FaultKind::LoadAccess(e.addr()))?;
        self.reservation = Some(addr & !7);
        Ok(outcrop_sem::extend(v, size, true))
    }

    /// Store-conditional of the low `size` bytes of `v` at `addr`: whether it stored.
    #[inline(never)]
    fn store_conditional(&mut self, addr: u64, size: u8, v: u64) -> Result<bool, FaultKind> {
        if addr % u64::from(size) != 0 {
            return Err(FaultKind::MisalignedAtomic(addr));
        }
        let stored = self.reservation == Some(addr & !7);
        if stored {
            self.mem
                .store_sized(addr, size, v)
                .map_err(|e| FaultKind::StoreAccess(e.addr()))?;
            self.check_code_epoch();
        }
        self.reservation = None;
        Ok(stored)
    }

    /// An atomic memory operation (A extension) of `size` bytes at `addr` with operand `src`;
    /// returns the old memory value (zero-extended).
    #[inline(never)]
    fn amo(&mut self, op: AmoOp, size: u8, addr: u64, src: u64) -> Result<u64, FaultKind> {
        if addr % u64::from(size) != 0 {
            return Err(FaultKind::MisalignedAtomic(addr));
        }
        let old = self
            .mem
            .load_sized(addr, size)
            .map_err(|e| FaultKind::LoadAccess(e.addr()))?;
        self.mem
            .store_sized(addr, size, op.eval(old, src, size))
            .map_err(|e| FaultKind::StoreAccess(e.addr()))?;
        self.check_code_epoch();
        self.reservation = None;
        Ok(old)
    }

    /// CSR access (Zicsr). Returns the old value, or `None` for an illegal access.
    fn csr(&mut self, op: Op, imm: i32, rs1_field: u8, rs1: u64) -> Option<u64> {
        let num = (imm as u32) & 0xfff;
        // (a write to a read-only counter is illegal; csrrs/csrrc with x0 only read)
        let write = matches!(op, Op::Csrrw | Op::Csrrwi) || rs1_field != 0;
        if (1..=3).contains(&num) {
            let mut fcsr = u64::from(self.frm & 7) << 5 | u64::from(self.fflags & 0x1f);
            let old = fcsr_access(op, num, (rs1_field, rs1), &mut fcsr);
            self.fflags = (fcsr & 0x1f) as u8;
            self.frm = ((fcsr >> 5) & 7) as u8;
            return Some(old);
        }
        if matches!(num, 0x008 | 0x009 | 0x00a | 0x00f | 0xc20..=0xc22) && self.isa.has(Ext::V) {
            let old = self.v.csr(num, None)?;
            if write {
                let value = match op {
                    Op::Csrrwi | Op::Csrrsi | Op::Csrrci => u64::from(rs1_field),
                    _ => rs1,
                };
                let new = match op {
                    Op::Csrrw | Op::Csrrwi => value,
                    Op::Csrrs | Op::Csrrsi => old | value,
                    _ => old & !value,
                };
                self.v.csr(num, Some(new))?;
            }
            return Some(old);
        }
        let old = match num {
            0xc00 | 0xc02 => self.instret,
            0xc01 => self.kernel.time_ticks(self.instret),
            _ => return None,
        };
        if write {
            return None; // read-only counters
        }
        Some(old)
    }

    /// F and D arithmetic, moves and conversions. Returns `(value written, src1, src2)`, or
    /// `None` for an illegal instruction (invalid rounding mode).
    #[allow(clippy::too_many_arguments)]
    fn float(
        &mut self,
        op: Op,
        rd: u8,
        rs1: u8,
        rs2: u8,
        rs3: u8,
        rm_field: u8,
        xs1: u64,
    ) -> Option<(u64, u64, u64)> {
        float_exec(
            op,
            (rd, rs1, rs2, rs3, rm_field),
            xs1,
            (&mut self.x, &mut self.f),
            &mut self.fflags,
            self.frm,
        )
    }
}

/// A Zicsr access `op` to `fflags` (CSR 1), `frm` (2) or `fcsr` (3), held as `fcsr` (fflags
/// in bits 0–4, frm in bits 5–7), with the instruction's `rs1` field and `x[rs1]`: the old
/// value (the one definition the engines and compiled code share).
pub(crate) fn fcsr_access(op: Op, num: u32, (rs1_field, rs1): (u8, u64), fcsr: &mut u64) -> u64 {
    let (write, value) = match op {
        Op::Csrrw => (true, rs1),
        Op::Csrrs | Op::Csrrc => (rs1_field != 0, rs1),
        Op::Csrrwi => (true, u64::from(rs1_field)),
        _ => (rs1_field != 0, u64::from(rs1_field)),
    };
    let (shift, mask) = match num {
        1 => (0, 0x1f),
        2 => (5, 7),
        _ => (0, 0xff),
    };
    let old = (*fcsr >> shift) & mask;
    if write {
        let new = match op {
            Op::Csrrw | Op::Csrrwi => value,
            Op::Csrrs | Op::Csrrsi => old | value,
            _ => old & !value,
        } & mask;
        *fcsr = (*fcsr & !(mask << shift)) | new << shift;
    }
    old
}

/// F and D arithmetic, moves and conversions on the registers `(x, f)`, accruing `fflags`
/// under the dynamic rounding mode `frm`: the one definition every engine runs (the
/// interpreter, the block engine's generic FP micro-op, and compiled code through
/// [`outcrop_jit::Host::float`]). Returns `(value written, src1, src2)`, or `None` for an
/// illegal instruction (invalid rounding mode).
pub(crate) fn float_exec(
    op: Op,
    (rd, rs1, rs2, rs3, rm_field): (u8, u8, u8, u8, u8),
    xs1: u64,
    (x, f): (&mut [u64; 32], &mut [u64; 32]),
    fflags: &mut u8,
    frm: u8,
) -> Option<(u64, u64, u64)> {
    let (rd, r1, r2, r3) = (
        rd as usize & 31,
        rs1 as usize & 31,
        rs2 as usize & 31,
        rs3 as usize & 31,
    );
    let fa = f[r1];
    let fb = f[r2];
    let fc = f[r3];
    let (sa, sb, sc) = (unbox32(fa), unbox32(fb), unbox32(fc));
    let mut fl = 0u8;
    // instructions with a rounding-mode field fail on an invalid mode
    let needs_rm = crate::inst::TABLE
        .get(op as usize)
        .is_some_and(|e| e.3 & 0x7000 == 0);
    let rm = if needs_rm {
        Rm::from_bits(u32::from(if rm_field == 7 { frm } else { rm_field }))?
    } else {
        Rm::Rne
    };
    enum W {
        F(u64),
        X(u64),
    }
    let w = match op {
        Op::FaddS => W::F(box32(fpu::f32_add(sa, sb, rm, &mut fl))),
        Op::FsubS => W::F(box32(fpu::f32_sub(sa, sb, rm, &mut fl))),
        Op::FmulS => W::F(box32(fpu::f32_mul(sa, sb, rm, &mut fl))),
        Op::FdivS => W::F(box32(fpu::f32_div(sa, sb, rm, &mut fl))),
        Op::FsqrtS => W::F(box32(fpu::f32_sqrt(sa, rm, &mut fl))),
        Op::FmaddS => W::F(box32(fpu::f32_madd(sa, sb, sc, rm, &mut fl))),
        Op::FmsubS => W::F(box32(fpu::f32_msub(sa, sb, sc, rm, &mut fl))),
        Op::FnmsubS => W::F(box32(fpu::f32_nmsub(sa, sb, sc, rm, &mut fl))),
        Op::FnmaddS => W::F(box32(fpu::f32_nmadd(sa, sb, sc, rm, &mut fl))),
        Op::FsgnjS => W::F(box32((sa & 0x7fff_ffff) | (sb & 0x8000_0000))),
        Op::FsgnjnS => W::F(box32((sa & 0x7fff_ffff) | (!sb & 0x8000_0000))),
        Op::FsgnjxS => W::F(box32(sa ^ (sb & 0x8000_0000))),
        Op::FminS => W::F(box32(fpu::f32_min(sa, sb, &mut fl))),
        Op::FmaxS => W::F(box32(fpu::f32_max(sa, sb, &mut fl))),
        Op::FcvtWS => W::X(fpu::f32_to_i32(sa, rm, &mut fl) as i64 as u64),
        Op::FcvtWuS => W::X(fpu::f32_to_u32(sa, rm, &mut fl) as i32 as i64 as u64),
        Op::FcvtLS => W::X(fpu::f32_to_i64(sa, rm, &mut fl) as u64),
        Op::FcvtLuS => W::X(fpu::f32_to_u64(sa, rm, &mut fl)),
        Op::FmvXW => W::X(fa as u32 as i32 as i64 as u64),
        Op::FclassS => W::X(u64::from(fpu::f32_classify(sa))),
        Op::FeqS => W::X(u64::from(fpu::f32_eq(sa, sb, &mut fl))),
        Op::FltS => W::X(u64::from(fpu::f32_lt(sa, sb, &mut fl))),
        Op::FleS => W::X(u64::from(fpu::f32_le(sa, sb, &mut fl))),
        Op::FcvtSW => W::F(box32(fpu::f32_from_i32(xs1 as i32, rm, &mut fl))),
        Op::FcvtSWu => W::F(box32(fpu::f32_from_u32(xs1 as u32, rm, &mut fl))),
        Op::FcvtSL => W::F(box32(fpu::f32_from_i64(xs1 as i64, rm, &mut fl))),
        Op::FcvtSLu => W::F(box32(fpu::f32_from_u64(xs1, rm, &mut fl))),
        Op::FmvWX => W::F(box32(xs1 as u32)),
        Op::FaddD => W::F(fpu::f64_add(fa, fb, rm, &mut fl)),
        Op::FsubD => W::F(fpu::f64_sub(fa, fb, rm, &mut fl)),
        Op::FmulD => W::F(fpu::f64_mul(fa, fb, rm, &mut fl)),
        Op::FdivD => W::F(fpu::f64_div(fa, fb, rm, &mut fl)),
        Op::FsqrtD => W::F(fpu::f64_sqrt(fa, rm, &mut fl)),
        Op::FmaddD => W::F(fpu::f64_madd(fa, fb, fc, rm, &mut fl)),
        Op::FmsubD => W::F(fpu::f64_msub(fa, fb, fc, rm, &mut fl)),
        Op::FnmsubD => W::F(fpu::f64_nmsub(fa, fb, fc, rm, &mut fl)),
        Op::FnmaddD => W::F(fpu::f64_nmadd(fa, fb, fc, rm, &mut fl)),
        Op::FsgnjD => W::F(FMove::SgnjD.eval(fa, fb)),
        Op::FsgnjnD => W::F(FMove::SgnjnD.eval(fa, fb)),
        Op::FsgnjxD => W::F(FMove::SgnjxD.eval(fa, fb)),
        Op::FminD => W::F(fpu::f64_min(fa, fb, &mut fl)),
        Op::FmaxD => W::F(fpu::f64_max(fa, fb, &mut fl)),
        Op::FcvtSD => W::F(box32(fpu::f64_to_f32(fa, rm, &mut fl))),
        Op::FcvtDS => W::F(fpu::f32_to_f64(sa, &mut fl)),
        Op::FeqD => W::X(u64::from(fpu::f64_eq(fa, fb, &mut fl))),
        Op::FltD => W::X(u64::from(fpu::f64_lt(fa, fb, &mut fl))),
        Op::FleD => W::X(u64::from(fpu::f64_le(fa, fb, &mut fl))),
        Op::FclassD => W::X(u64::from(fpu::f64_classify(fa))),
        Op::FcvtWD => W::X(fpu::f64_to_i32(fa, rm, &mut fl) as i64 as u64),
        Op::FcvtWuD => W::X(fpu::f64_to_u32(fa, rm, &mut fl) as i32 as i64 as u64),
        Op::FcvtLD => W::X(fpu::f64_to_i64(fa, rm, &mut fl) as u64),
        Op::FcvtLuD => W::X(fpu::f64_to_u64(fa, rm, &mut fl)),
        Op::FmvXD => W::X(FMove::XFromD.eval(fa, fb)),
        Op::FcvtDW => W::F(fpu::f64_from_i32(xs1 as i32, rm, &mut fl)),
        Op::FcvtDWu => W::F(fpu::f64_from_u32(xs1 as u32, rm, &mut fl)),
        Op::FcvtDL => W::F(fpu::f64_from_i64(xs1 as i64, rm, &mut fl)),
        Op::FcvtDLu => W::F(fpu::f64_from_u64(xs1, rm, &mut fl)),
        Op::FmvDX => W::F(FMove::DFromX.eval(xs1, fb)),
        // Zfa
        Op::FliS => W::F(box32(fpu::fli_s(u32::from(rs1)))),
        Op::FliD => W::F(fpu::fli_d(u32::from(rs1))),
        Op::FminmS => W::F(box32(fpu::f32_minm(sa, sb, &mut fl))),
        Op::FmaxmS => W::F(box32(fpu::f32_maxm(sa, sb, &mut fl))),
        Op::FminmD => W::F(fpu::f64_minm(fa, fb, &mut fl)),
        Op::FmaxmD => W::F(fpu::f64_maxm(fa, fb, &mut fl)),
        Op::FroundS => W::F(box32(fpu::f32_round(sa, rm, false, &mut fl))),
        Op::FroundnxS => W::F(box32(fpu::f32_round(sa, rm, true, &mut fl))),
        Op::FroundD => W::F(fpu::f64_round(fa, rm, false, &mut fl)),
        Op::FroundnxD => W::F(fpu::f64_round(fa, rm, true, &mut fl)),
        Op::FcvtmodWD => W::X(fpu::f64_cvtmod_w(fa, &mut fl) as i64 as u64),
        Op::FleqS => W::X(u64::from(fpu::f32_leq(sa, sb, &mut fl))),
        Op::FltqS => W::X(u64::from(fpu::f32_ltq(sa, sb, &mut fl))),
        Op::FleqD => W::X(u64::from(fpu::f64_leq(fa, fb, &mut fl))),
        Op::FltqD => W::X(u64::from(fpu::f64_ltq(fa, fb, &mut fl))),
        _ => return None,
    };
    *fflags |= fl;
    let from_x = matches!(
        op,
        Op::FcvtSW
            | Op::FcvtSWu
            | Op::FcvtSL
            | Op::FcvtSLu
            | Op::FmvWX
            | Op::FcvtDW
            | Op::FcvtDWu
            | Op::FcvtDL
            | Op::FcvtDLu
            | Op::FmvDX
    );
    let s1 = if from_x { xs1 } else { fa };
    Some(match w {
        W::F(v) => {
            f[rd] = v;
            (v, s1, fb)
        }
        W::X(v) => {
            x[rd] = v;
            (v, s1, fb)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelConfig, Sandbox};
    use crate::memory::perm;

    /// A machine running `code` at 0x1000 with a data page at 0x2000.
    fn machine(code: &[u32]) -> Machine {
        let mut mem = Memory::new(1 << 20);
        mem.map(0x1000, 0x1000, perm::R | perm::X).unwrap();
        mem.map(0x2000, 0x1000, perm::R | perm::W).unwrap();
        let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
        mem.poke_bytes(0x1000, &bytes).unwrap();
        let kernel = Kernel::new(
            KernelConfig {
                sandbox: Sandbox::new(),
                deterministic: true,
                exe_path: "/t".into(),
                stdin: Box::new(std::io::empty()),
                stdout: Box::new(std::io::sink()),
                stderr: Box::new(std::io::sink()),
                on_warning: Box::new(|_| {}),
                stdio_mode: Some(0o020666),
            },
            0x3000,
            1 << 20,
        );
        let mut m = Machine::new(mem, kernel, 0x1000, 0x2ff0);
        m.max_insns = code.len() as u64;
        m
    }

    #[test]
    fn atomics_compute_in_their_width_and_return_the_old_value() {
        // encodings from riscv64-linux-gnu-as
        let mut m = machine(&[
            0x80b6252f, // amomin.w a0,a1,(a2)
            0xe0b626af, // amomaxu.w a3,a1,(a2)
            0xa0f8372f, // amomax.d a4,a5,(a6)
            0xc0f832af, // amominu.d t0,a5,(a6)
            0x00b6232f, // amoadd.w t1,a1,(a2)
            0x100833af, // lr.d t2,(a6)
            0x18f83e2f, // sc.d t3,a5,(a6)  succeeds
            0x18f83eaf, // sc.d t4,a5,(a6)  fails: the reservation is gone
        ]);
        m.mem.store_u32(0x2000, 5).unwrap(); // word at a2
        m.mem.store_u64(0x2008, u64::MAX).unwrap(); // doubleword at a6 (= -1 signed)
        m.x[11] = (-3i64) as u64; // a1: -3 as a word operand
        m.x[12] = 0x2000; // a2
        m.x[15] = 7; // a5
        m.x[16] = 0x2008; // a6
        assert_eq!(m.run(&mut ()), Outcome::InstructionLimit);
        assert_eq!(m.x[10], 5, "amomin.w returns the old word");
        // min(5, -3) = -3 stored; amomaxu.w sees 0xfffffffd, keeps it (max unsigned), returns it sign-extended
        assert_eq!(m.x[13], (-3i64) as u64);
        // amomax.d: max(-1, 7) = 7, returns -1
        assert_eq!(m.x[14], u64::MAX);
        // amominu.d: min(7, 7) = 7, returns 7
        assert_eq!(m.x[5], 7);
        // amoadd.w: 0xfffffffd + 0xfffffffd = 0xfffffffa, returns -3
        assert_eq!(m.x[6], (-3i64) as u64);
        assert_eq!(m.mem.load_u32(0x2000).unwrap(), (-6i32) as u32);
        assert_eq!(m.x[7], 7, "lr.d loads");
        assert_eq!(
            (m.x[28], m.x[29]),
            (0, 1),
            "first sc.d succeeds, second fails"
        );
        assert_eq!(m.mem.load_u64(0x2008).unwrap(), 7);
    }

    #[test]
    fn writes_to_x0_are_discarded_on_every_path() {
        // feq.d zero,fa0,fa0 ; fcvt.l.d zero,fa0 ; frflags zero ; add a0,zero,zero (from gas)
        let mut m = machine(&[0xa2a52053, 0xc2257053, 0x00102073, 0x00000533]);
        m.f[10] = 42.5f64.to_bits();
        m.x[10] = 7;
        m.run(&mut ());
        assert_eq!(m.x[0], 0);
        assert_eq!(m.x[10], 0, "a0 = zero + zero after FP writes aimed at x0");
    }

    /// `ecall` rt_sigaction(SIGILL, {handler 0x1008}) from 0x1000, an illegal word at
    /// 0x1004, `ebreak` at 0x1008 (the handler).
    fn sigill_machine() -> Machine {
        let mut m = machine(&[0x0000_0073, 0x0000_0000, 0x0010_0073]);
        m.max_insns = 10;
        m.mem.poke_bytes(0x2000, &0x1008u64.to_le_bytes()).unwrap();
        m.x[17] = 134;
        m.x[10] = 4;
        m.x[11] = 0x2000;
        m.x[12] = 0;
        m.x[13] = 8; // sigsetsize
        m
    }

    #[test]
    fn sigill_enters_the_handler_with_a_linux_frame() {
        let mut m = sigill_machine();
        m.x[9] = 0x5eed;
        match m.run(&mut ()) {
            Outcome::Fault(f) => {
                assert_eq!(
                    (f.pc, f.kind),
                    (0x1008, FaultKind::Breakpoint),
                    "in the handler"
                )
            }
            o => panic!("{o:?}"),
        }
        let sp = m.x[2];
        assert_eq!(sp % 16, 0);
        assert_eq!((m.x[10], m.x[11], m.x[12]), (4, sp, sp + 128));
        assert_eq!(m.x[1], crate::elf::SIGRETURN_TRAMPOLINE);
        let word = |m: &mut Machine, a: u64| m.mem.load_u64(a).unwrap();
        assert_eq!(word(&mut m, sp) as u32, 4, "si_signo");
        assert_eq!(word(&mut m, sp + 16), 0x1004, "si_addr");
        assert_eq!(word(&mut m, sp + 128 + 176), 0x1004, "saved pc");
        assert_eq!(word(&mut m, sp + 128 + 176 + 8 * 9), 0x5eed, "saved s1");
        assert_eq!(
            m.kernel.sigmask() & (1 << 3),
            1 << 3,
            "SIGILL blocked in the handler"
        );
    }

    #[test]
    fn a_frame_that_cannot_be_written_or_read_is_a_fault_not_a_panic() {
        let mut m = sigill_machine();
        m.x[2] = 0x10; // no stack below
        match m.run(&mut ()) {
            Outcome::Fault(f) => {
                assert_eq!((f.pc, f.kind), (0x1004, FaultKind::IllegalInstruction))
            }
            o => panic!("{o:?}"),
        }
        // rt_sigreturn with sp pointing nowhere
        let mut m = machine(&[0x0000_0073]);
        m.x[17] = RT_SIGRETURN;
        m.x[2] = 0;
        match m.run(&mut ()) {
            Outcome::Fault(f) => assert_eq!(f.kind, FaultKind::LoadAccess(0)),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn misaligned_atomics_fault() {
        let mut m = machine(&[0x00b6232f]); // amoadd.w t1,a1,(a2)
        m.x[12] = 0x2002;
        match m.run(&mut ()) {
            Outcome::Fault(f) => assert_eq!(f.kind, FaultKind::MisalignedAtomic(0x2002)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn division_corner_cases_follow_the_spec() {
        // div a0,a1,a2 ; divu a3,a1,a2 ; rem a4,a1,a2 ; remw a5,a1,a2 (encodings from gas)
        let mut m = machine(&[0x02c5c533, 0x02c5d6b3, 0x02c5e733, 0x02c5e7bb]);
        m.x[11] = 42;
        m.x[12] = 0; // divide by zero
        m.run(&mut ());
        assert_eq!(
            (m.x[10], m.x[13], m.x[14], m.x[15]),
            (u64::MAX, u64::MAX, 42, 42)
        );
        let mut m = machine(&[0x02c5c533, 0x02c5e733]);
        m.x[11] = i64::MIN as u64;
        m.x[12] = u64::MAX; // -1: overflow
        m.run(&mut ());
        assert_eq!((m.x[10], m.x[14]), (i64::MIN as u64, 0));
    }
}
