//! The retire record: the one vocabulary every stage shares (DESIGN.md "retire record"), and
//! the [`Observer`] trait through which a source hands records to mechanisms.
//!
//! A *source* (the built-in machine, later trace files and `perf.data`) produces one
//! [`Retire`] record per retired instruction, plus two cheap derived streams: basic-block ends
//! and taken branches. The fields are ISA-neutral: a RISC-V machine and an x86 trace fill the
//! same record. A timing model may add a [`Stamp`] (cycle numbers and events) to each record.
//!
//! Observers are generic parameters, so their calls are monomorphized and inlined; the
//! associated constants say which streams an observer wants, and a source builds nothing for a
//! stream nobody wants: a run with `()` as observer pays nothing. Observers compose: a tuple of
//! observers is an observer, and so is `&mut O`.
//!
//! # Order of calls
//! For each retired instruction a source calls [`Observer::retire`], then
//! [`Observer::taken_branch`] if it transferred control, then [`Observer::block`] if it ended a
//! basic block. Timing wrappers (`outcrop_timing::Timed`) keep that order: a block's end and
//! its branch reach the observer after the retire record of the block's last instruction.
//! After the last record the owner of the run calls [`Observer::finish`] once.

/// Instruction classes of the retire record (the RPA paper's classes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Class {
    /// Unconditional jumps (jal, jalr).
    Jump,
    /// Conditional branches.
    Branch,
    /// Integer and FP loads, LR, and AMOs (which also store).
    Load,
    /// Integer and FP stores, SC.
    Store,
    /// Integer ALU operations.
    Alu,
    /// Multiply and divide.
    Mult,
    /// Floating-point arithmetic, moves and conversions.
    Float,
    /// ecall, ebreak, CSR access, fences.
    Sys,
}

impl Class {
    /// All classes, in the order used by counters.
    pub const ALL: [Class; 8] = [
        Class::Jump,
        Class::Branch,
        Class::Load,
        Class::Store,
        Class::Alu,
        Class::Mult,
        Class::Float,
        Class::Sys,
    ];
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Class::Jump => "jump",
            Class::Branch => "branch",
            Class::Load => "load",
            Class::Store => "store",
            Class::Alu => "alu",
            Class::Mult => "mult",
            Class::Float => "float",
            Class::Sys => "sys",
        }
    }
}

/// The kind of execution unit (and so the latency class) an instruction uses; what a timing
/// model needs to know about the operation, whatever the ISA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Unit {
    /// Integer ALU.
    #[default]
    Alu,
    /// Integer multiply.
    Mult,
    /// Integer divide and remainder.
    Div,
    /// Floating-point arithmetic, moves and conversions (but divide and square root).
    Float,
    /// Floating-point divide and square root.
    FloatDiv,
    /// Loads (and atomics).
    Load,
    /// Stores.
    Store,
    /// Conditional branches.
    Branch,
    /// A direct jump or call (target encoded in the instruction).
    Jump,
    /// An indirect jump, call or return (target from a register).
    JumpIndirect,
    /// System calls, CSR access, fences, and anything the source could not decode.
    Sys,
    /// A branch-on-random (`brr`): a branch whose outcome the front end decides at decode
    /// from a random source, never predicted (branch-on-random paper §3.3).
    BranchOnRandom,
    /// Vector arithmetic (RVV): one pipelined vector unit.
    Vector,
}

impl Unit {
    /// Every unit, in `repr` order.
    pub const ALL: [Unit; 13] = [
        Unit::Alu,
        Unit::Mult,
        Unit::Div,
        Unit::Float,
        Unit::FloatDiv,
        Unit::Load,
        Unit::Store,
        Unit::Branch,
        Unit::Jump,
        Unit::JumpIndirect,
        Unit::Sys,
        Unit::BranchOnRandom,
        Unit::Vector,
    ];
}

/// The registers an instruction reads and writes, in one numbering for every register file:
/// numbers `1..=63`, with `0` meaning "none" (a source maps its registers into that range; the
/// RISC-V machine uses `xN` → `N` and `fN` → `32 + N`, and never lists `x0`). Implicit operands
/// (status registers, the system-call registers of a trap) are not listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegUse {
    /// Destination register, 0 if none.
    pub dst: u8,
    /// Source registers, 0 where unused.
    pub src: [u8; 3],
}

/// One retired instruction (DESIGN.md "retire record").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retire {
    /// Address of the instruction.
    pub pc: u64,
    /// Raw bits as fetched (up to 32 bits; `len` says how many bytes are meaningful).
    pub raw: u32,
    /// Length in bytes.
    pub len: u8,
    /// Class (jump, branch, load, store, alu, mult, float, sys); `None` if the source could
    /// not decode the instruction.
    pub class: Option<Class>,
    /// Execution unit (latency class).
    pub unit: Unit,
    /// Registers read and written (for dependence tracking).
    pub regs: RegUse,
    /// Value of the first source operand, 0 if none.
    pub src1: u64,
    /// Value of the second source operand, 0 if none.
    pub src2: u64,
    /// Value written to the destination register, if any.
    pub result: Option<u64>,
    /// Effective address of a load, store or atomic.
    pub mem_addr: u64,
    /// Access size in bytes (0: no memory access).
    pub mem_size: u8,
    /// Value loaded (loads, atomics) or stored (stores).
    pub mem_value: u64,
    /// Whether a branch or jump transferred control.
    pub taken: bool,
    /// Branch or jump target (taken or not).
    pub target: u64,
    /// The kind of control transfer, when one happened (a taken branch or any jump).
    pub transfer: Option<BranchKind>,
    /// Address of the next instruction to execute.
    pub next_pc: u64,
    /// The thread that retired it (0 for single-threaded sources).
    pub thread: u32,
    /// The stack pointer after it (x2 on RISC-V); 0 when the source does not know it. The
    /// exact profile matches call frames by it where a program leaves functions without
    /// returning (`longjmp`, unwinders).
    pub sp: u64,
}

/// Kinds of control transfer in the taken-branch stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BranchKind {
    /// A taken conditional branch.
    Cond,
    /// A direct jump that does not link.
    Jump,
    /// A call (a jump that links a return address).
    Call,
    /// A return.
    Return,
    /// Any other indirect jump.
    Indirect,
}

/// What an observer wants the source to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep running.
    Continue,
    /// Stop the run after this instruction.
    Stop,
}

impl Control {
    /// `Stop` if either is `Stop`.
    #[inline]
    #[must_use]
    pub fn and(self, other: Control) -> Control {
        if self == Control::Stop || other == Control::Stop {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// Per-instruction timing events, as bit flags (set by a timing model).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimingEvents(pub u16);

impl TimingEvents {
    /// The fetch of this instruction missed the L1 instruction cache.
    pub const L1I_MISS: TimingEvents = TimingEvents(1);
    /// ... and the L2.
    pub const L2I_MISS: TimingEvents = TimingEvents(1 << 1);
    /// Its data access missed the L1 data cache.
    pub const L1D_MISS: TimingEvents = TimingEvents(1 << 2);
    /// ... and the L2.
    pub const L2D_MISS: TimingEvents = TimingEvents(1 << 3);
    /// Instruction-TLB miss on its fetch.
    pub const ITLB_MISS: TimingEvents = TimingEvents(1 << 4);
    /// Data-TLB miss on its access.
    pub const DTLB_MISS: TimingEvents = TimingEvents(1 << 5);
    /// A branch or jump whose direction or target was mispredicted (resolved at execute).
    pub const MISPREDICT: TimingEvents = TimingEvents(1 << 6);
    /// A taken transfer the BTB had no (or a wrong) target for.
    pub const BTB_MISS: TimingEvents = TimingEvents(1 << 7);

    /// Whether every flag of `other` is set.
    #[inline]
    pub fn contains(self, other: TimingEvents) -> bool {
        self.0 & other.0 == other.0
    }
    /// Sets every flag of `other`.
    #[inline]
    pub fn insert(&mut self, other: TimingEvents) {
        self.0 |= other.0;
    }
}

/// Timing of one retired instruction (the timing model's part of the retire record).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// Cycle the instruction was fetched.
    pub fetch: u64,
    /// Cycle it entered the reorder buffer.
    pub dispatch: u64,
    /// Cycle it began executing.
    pub issue: u64,
    /// Cycle its result was available.
    pub complete: u64,
    /// Cycle it retired.
    pub retire: u64,
    /// What happened to it.
    pub events: TimingEvents,
    /// Retire rate, *n* (RPA paper §3.1): instructions retired in the same cycle, this one
    /// included (filled when a cycle's records are delivered together).
    pub retire_group: u8,
    /// Retire rate, *c*: cycles without retirement just before this one's retire cycle, if it
    /// was the first to retire in its cycle (then it was at the head of the reorder buffer
    /// during them); 0 otherwise.
    pub retire_stall: u32,
}

/// An object (the program, its dynamic linker, a shared library) mapped executable: what a
/// report needs to name code inside it, as perf's `MMAP` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping<'a> {
    /// Its index in the order objects were mapped (0: the program).
    pub index: u32,
    /// The lowest address mapped.
    pub start: u64,
    /// The mapping's length in bytes.
    pub len: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// The path the guest knows it by.
    pub path: &'a std::path::Path,
    /// The host file it was read from, if known.
    pub host_path: Option<&'a std::path::Path>,
    /// The GNU build-id of the file, if it has one.
    pub build_id: Option<&'a [u8]>,
}

/// What [`Observer::process`] says: whose records come next, and whose came before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProcessSwitch {
    /// The process whose records come next.
    pub pid: u32,
    /// Its parent (0: none inside the machine).
    pub parent: u32,
    /// Which of its programs runs: 0 the one it started with (a forked child's is its
    /// parent's), one more for each `execve`.
    pub image: u32,
    /// The process whose records came before.
    pub from_pid: u32,
    /// The image that process was running.
    pub from_image: u32,
}

impl Mapping<'_> {
    /// The object's file name (`libc.so.6`).
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// Receives the retire stream and the derived streams. Every method has a no-op default; set
/// the matching constant to `true` for each stream you implement.
pub trait Observer {
    /// Call [`Observer::retire`] for every retired instruction.
    const RETIRE: bool = false;
    /// Call [`Observer::block`] at the end of every basic block.
    const BLOCKS: bool = false;
    /// Call [`Observer::taken_branch`] for every taken branch or jump.
    const BRANCHES: bool = false;
    /// The observer needs timing stamps: a run without a timing model is a configuration
    /// error (the run builder checks this before starting).
    const STAMPS: bool = false;
    /// Call [`Observer::classes`] with retired instructions per class.
    const CLASSES: bool = false;
    /// Call [`Observer::mapped`] for every object mapped executable.
    const MAPPINGS: bool = false;
    /// Call [`Observer::block_lens`] instead of [`Observer::block`] at the end of every basic
    /// block: with the length of each of its instructions (an observer that counts by
    /// instruction address without retire records, such as the exact profiler's block mode).
    /// An observer that sets it sets [`Observer::BLOCKS`] too.
    const BLOCK_LENS: bool = false;
    /// Wants [`Observer::stack`] after each taken call, return and indirect jump (an observer
    /// of blocks that follows the call stack by stack pointer; retire records carry it in
    /// [`Retire::sp`]).
    const STACK: bool = false;
    /// Takes compiled code's inline counts in place of its block-level streams: the
    /// observer's state changes only where control leaves a *range* of code
    /// ([`Observer::range`], a function for the exact profile), so compiled blocks, each in
    /// one range, count their runs ([`Observer::counted`]) and report only the instructions
    /// retired ([`Observer::retired`]) and the transfers out of a range
    /// ([`Observer::left`]). Blocks the engines run the usual way still come through
    /// [`Observer::block_lens`], [`Observer::taken_branch`] and [`Observer::classes`], in
    /// order with the others. Set only by observers of [`Observer::BLOCKS`] or
    /// [`Observer::CLASSES`] whose results do not depend on the order of the counts.
    const COUNTS: bool = false;
    /// With [`Observer::COUNTS`]: calls and returns change the observer's state even when
    /// they stay in one range (a call tree: a recursive call does), so compiled code reports
    /// each through [`Observer::left`]. Without it, only transfers out of a range are reported
    /// (the class counter, whose range is everything, then hears of none).
    const CALLS: bool = false;
    /// With [`Observer::COUNTS`]: the observer reads taken branches, and compiled code writes
    /// each of its taken branches into a ring the source hands over
    /// ([`Observer::ring`]) whenever compiled code stops, before the instructions it retired
    /// ([`Observer::retired`]). Blocks the engines run the usual way still come through
    /// [`Observer::taken_branch`].
    const RING: bool = false;
    /// With [`Observer::COUNTS`]: the observer takes no block counts (it never reads
    /// [`Observer::counted`]), so compiled blocks keep no counters for it.
    const UNCOUNTED: bool = false;
    /// With [`Observer::COUNTS`] and [`Observer::BLOCKS`]: compiled code appends each basic
    /// block it runs to its end to a trace, which the source hands over as
    /// [`Observer::block`] calls in order with the engines' — every basic block whole, as
    /// without counts (the whole-program capture). Composed with an observer of blocks that is
    /// not, the composition takes no counts (a tuple's [`Observer::COUNTS`] is false then).
    const TRACE: bool = false;
    /// Functional warming: what compiled code runs comes as [`Observer::warm`] calls (fetch,
    /// data addresses and the final transfer of each block run, no retire records); what the
    /// engines run comes as retire records ([`Observer::RETIRE`], which such an observer
    /// sets), in program order with the runs.
    const WARM: bool = false;

    /// One retired instruction, with its timing when a timing model runs.
    #[inline]
    fn retire(&mut self, _r: &Retire, _t: Option<&Stamp>) -> Control {
        Control::Continue
    }
    /// A basic block ended: it started at `start` and retired `insns` instructions. Blocks end
    /// after every branch or jump (taken or not), and at a system call.
    #[inline]
    fn block(&mut self, _start: u64, _insns: u32) -> Control {
        Control::Continue
    }
    /// Basic blocks that ended one after another, each (start, instructions): what
    /// [`Observer::block`] hears of each, delivered at once (compiled code's trace:
    /// [`Observer::TRACE`]; never to observers of [`Observer::BLOCK_LENS`]).
    #[inline]
    fn blocks(&mut self, blocks: &[(u64, u32)]) -> Control {
        let mut c = Control::Continue;
        for &(start, insns) in blocks {
            c = c.and(self.block(start, insns));
        }
        c
    }
    /// A basic block ended ([`Observer::block`]) whose instructions are `lens.len()`
    /// instructions of these lengths in bytes (2 or 4), from `start` on. Called instead of
    /// `block` when [`Observer::BLOCK_LENS`] is set.
    #[inline]
    fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
        self.block(start, lens.len() as u32)
    }
    /// The running thread leaves the machine in the middle of a basic block (its quantum
    /// ended, or it blocked): `lens` are the lengths of the instructions of that block
    /// retired so far, from `start`. Called only when [`Observer::BLOCK_LENS`] is set, just
    /// before [`Observer::thread`] names the next thread. The block is still reported whole
    /// by `block_lens` when it ends, with these instructions at its head: an observer that
    /// counts them here (so that its counts follow the instructions as they retire, as they
    /// would under retire records) skips them there.
    #[inline]
    fn block_part(&mut self, _start: u64, _lens: &[u8]) -> Control {
        Control::Continue
    }
    /// The stack pointer after the call, return or indirect jump that
    /// [`Observer::taken_branch`] has just reported (only when [`Observer::STACK`] is set).
    #[inline]
    fn stack(&mut self, _sp: u64) -> Control {
        Control::Continue
    }
    /// A taken branch or jump from `from` to `to`.
    #[inline]
    fn taken_branch(&mut self, _from: u64, _to: u64, _kind: BranchKind) -> Control {
        Control::Continue
    }
    /// Instructions retired since the last call, per class (indexed like [`Class::ALL`]). A
    /// source calls it once per block it runs, or once per instruction; the sums are exact
    /// either way.
    #[inline]
    fn classes(&mut self, _counts: &[u32; 8]) -> Control {
        Control::Continue
    }
    /// One instruction of class `class` retired: [`Observer::classes`] with a count of one
    /// (what a source that runs one instruction at a time calls; override it when one
    /// increment is cheaper than adding eight counts).
    #[inline]
    fn class(&mut self, class: Class) -> Control {
        let mut counts = [0; 8];
        counts[class as usize] = 1;
        self.classes(&counts)
    }
    /// The running thread changed: every record from here until the next call belongs to
    /// thread `index` (its creation order: 0 is the main thread, whose records come before
    /// any call). Sources with one thread never call it.
    #[inline]
    fn thread(&mut self, _index: u32) -> Control {
        Control::Continue
    }
    /// A signal handler was entered (`entered`: the next record is the handler's first
    /// instruction, reached without a call) or left by `rt_sigreturn` (the next record is where
    /// the interrupted code resumes). Sources without signals never call it.
    #[inline]
    fn signal(&mut self, _entered: bool) -> Control {
        Control::Continue
    }
    /// The running process changed, or the running process began another program
    /// (`execve`): every record from here until the next call belongs to `p.pid` running
    /// its `p.image`-th program. When the image is new to the observer, the objects it maps
    /// follow through [`Observer::mapped`] (index 0: its program) before its first record;
    /// a forked child's first image is its parent's program. Comes before the
    /// [`Observer::thread`] that names the process's thread. Called only when
    /// [`Observer::MAPPINGS`] is set; sources with one process never call it.
    #[inline]
    fn process(&mut self, _p: &ProcessSwitch) -> Control {
        Control::Continue
    }
    /// An object was mapped executable (the program and its interpreter before the first
    /// record; shared libraries as the dynamic linker maps them, before any of their code
    /// runs). Called only when [`Observer::MAPPINGS`] is set.
    #[inline]
    fn mapped(&mut self, _m: &Mapping<'_>) -> Control {
        Control::Continue
    }
    /// The stream ended (normally, by a stop, or by a limit); called once, after the last
    /// record. Wrappers that hold records back deliver them here.
    #[inline]
    fn finish(&mut self) -> Control {
        Control::Continue
    }
    /// The range `[lo, hi)` around `pc` inside which control moves without changing this
    /// observer's state ([`Observer::COUNTS`]); `pc` lies in it (`lo == hi` for none). A
    /// source asks when it builds counted code for `pc`.
    #[inline]
    fn range(&mut self, _pc: u64) -> (u64, u64) {
        (0, u64::MAX)
    }
    /// `count` runs to its end of the basic block of `lens.len()` instructions of these
    /// lengths from `start`, with `classes` instructions per class each run
    /// ([`Observer::COUNTS`]). Delivered in bulk and late (when the source drains its
    /// counters: at the latest when its run returns); the instructions were already reported
    /// by [`Observer::retired`].
    #[inline]
    fn counted(&mut self, _start: u64, _lens: &[u8], _classes: &[u32; 8], _count: u64) -> Control {
        Control::Continue
    }
    /// Compiled code took `total` branches since the last call ([`Observer::RING`]); `last`
    /// are the latest of them, oldest first, as (from, to) — all of them when `total` is at
    /// most [`RING_ENTRIES`]. Comes before the [`Observer::retired`] that counts the
    /// instructions they are among.
    #[inline]
    fn ring(&mut self, _last: &[[u64; 2]], _total: u64) -> Control {
        Control::Continue
    }
    /// How many more instructions compiled code may retire before the observer must hear the
    /// next one through the engines' hooks (a sample falls due then: [`Observer::COUNTS`]
    /// observers only). The source stops compiled code after at most that many, hands over
    /// what it retired, and runs on the engine until the observer's next block.
    #[inline]
    fn budget(&mut self) -> u64 {
        u64::MAX
    }
    /// Compiled code ran the instructions of `run`, in order after everything the observer
    /// heard before ([`Observer::WARM`]).
    #[inline]
    fn warm(&mut self, _run: &WarmRun<'_>) -> Control {
        Control::Continue
    }
    /// `n` instructions retired in counted blocks of one range, the first at `first`, since
    /// the last record ([`Observer::COUNTS`]).
    #[inline]
    fn retired(&mut self, _first: u64, _n: u64) -> Control {
        Control::Continue
    }
    /// The last instruction retired, which ends at `end` (the return address of a call),
    /// transferred control to `to`, outside its range or by a call or a return (`kind`:
    /// `None` for a fall-through), leaving the stack pointer `sp` ([`Observer::COUNTS`]).
    #[inline]
    fn left(&mut self, _end: u64, _to: u64, _kind: Option<BranchKind>, _sp: u64) -> Control {
        Control::Continue
    }
}

/// What functional warming needs of the instructions one run of a compiled block retired
/// ([`Observer::WARM`]): enough to update caches, TLBs and predictors exactly as the
/// instructions' retire records would.
#[derive(Clone, Copy, Debug)]
pub struct WarmRun<'a> {
    /// The first instruction's pc.
    pub start: u64,
    /// The instructions' lengths in bytes, in order.
    pub lens: &'a [u8],
    /// Each instruction's access size in bytes (0: none), as its retire record's `mem_size`.
    pub sizes: &'a [u8],
    /// The accesses' addresses, one for each nonzero size, in order.
    pub addrs: &'a [u64],
    /// The last instruction's transfer, if it is a branch or a jump (and ran).
    pub end: Option<WarmEnd>,
    /// Where control went after the last instruction (read with `end`).
    pub next: u64,
}

/// The branch or jump that ends a [`WarmRun`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmEnd {
    /// A conditional branch (taken: `next` is not the fall-through; a branch to its own
    /// fall-through never comes this way).
    Branch,
    /// A jump of `kind`; `indirect` for `jalr`.
    Jump {
        /// Its kind (call, return, indirect, direct).
        kind: BranchKind,
        /// Through a register.
        indirect: bool,
    },
}

/// Taken branches compiled code keeps for an observer of [`Observer::RING`] between two
/// calls of [`Observer::ring`]: the deepest branch-record buffer modelled (256).
pub const RING_ENTRIES: usize = 256;

/// Whether `O` reads a block-level stream (basic blocks, taken branches or class counts).
pub const fn reads_blocks<O: Observer + ?Sized>() -> bool {
    O::BLOCKS || O::BRANCHES || O::CLASSES
}

/// No observer: the source runs at full speed.
impl Observer for () {}

impl<O: Observer + ?Sized> Observer for &mut O {
    const RETIRE: bool = O::RETIRE;
    const BLOCKS: bool = O::BLOCKS;
    const BRANCHES: bool = O::BRANCHES;
    const STAMPS: bool = O::STAMPS;
    const CLASSES: bool = O::CLASSES;
    const MAPPINGS: bool = O::MAPPINGS;
    const BLOCK_LENS: bool = O::BLOCK_LENS;
    const STACK: bool = O::STACK;
    const COUNTS: bool = O::COUNTS;
    const CALLS: bool = O::CALLS;
    const RING: bool = O::RING;
    const UNCOUNTED: bool = O::UNCOUNTED;
    const TRACE: bool = O::TRACE;
    const WARM: bool = O::WARM;
    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        (**self).retire(r, t)
    }
    #[inline]
    fn ring(&mut self, last: &[[u64; 2]], total: u64) -> Control {
        (**self).ring(last, total)
    }
    #[inline]
    fn blocks(&mut self, blocks: &[(u64, u32)]) -> Control {
        (**self).blocks(blocks)
    }
    #[inline]
    fn budget(&mut self) -> u64 {
        (**self).budget()
    }
    #[inline]
    fn warm(&mut self, run: &WarmRun<'_>) -> Control {
        (**self).warm(run)
    }
    #[inline]
    fn range(&mut self, pc: u64) -> (u64, u64) {
        (**self).range(pc)
    }
    #[inline]
    fn counted(&mut self, start: u64, lens: &[u8], classes: &[u32; 8], count: u64) -> Control {
        (**self).counted(start, lens, classes, count)
    }
    #[inline]
    fn retired(&mut self, first: u64, n: u64) -> Control {
        (**self).retired(first, n)
    }
    #[inline]
    fn left(&mut self, end: u64, to: u64, kind: Option<BranchKind>, sp: u64) -> Control {
        (**self).left(end, to, kind, sp)
    }
    #[inline]
    fn stack(&mut self, sp: u64) -> Control {
        (**self).stack(sp)
    }
    #[inline]
    fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
        (**self).block_lens(start, lens)
    }
    #[inline]
    fn block_part(&mut self, start: u64, lens: &[u8]) -> Control {
        (**self).block_part(start, lens)
    }
    #[inline]
    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        (**self).mapped(m)
    }
    #[inline]
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        (**self).classes(counts)
    }
    #[inline]
    fn class(&mut self, class: Class) -> Control {
        (**self).class(class)
    }
    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        (**self).block(start, insns)
    }
    #[inline]
    fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
        (**self).taken_branch(from, to, kind)
    }
    #[inline]
    fn thread(&mut self, index: u32) -> Control {
        (**self).thread(index)
    }
    #[inline]
    fn process(&mut self, p: &ProcessSwitch) -> Control {
        (**self).process(p)
    }
    #[inline]
    fn signal(&mut self, entered: bool) -> Control {
        (**self).signal(entered)
    }
    #[inline]
    fn finish(&mut self) -> Control {
        (**self).finish()
    }
}

macro_rules! tuple_observer {
    ($($name:ident $idx:tt),+) => {
        /// Every member sees every stream it asked for, in tuple order; the run stops if any
        /// member says stop.
        impl<$($name: Observer),+> Observer for ($($name,)+) {
            const RETIRE: bool = false $(|| $name::RETIRE)+;
            const BLOCKS: bool = false $(|| $name::BLOCKS)+;
            const BRANCHES: bool = false $(|| $name::BRANCHES)+;
            const STAMPS: bool = false $(|| $name::STAMPS)+;
            const CLASSES: bool = false $(|| $name::CLASSES)+;
            const MAPPINGS: bool = false $(|| $name::MAPPINGS)+;
            const BLOCK_LENS: bool = false $(|| $name::BLOCK_LENS)+;
            const STACK: bool = false $(|| $name::STACK)+;
            /// Counted when every member that reads a block-level stream takes counts, unless
            /// a member wants traced blocks ([`Observer::TRACE`]) and another reads blocks
            /// untraced (which would split them where compiled code takes over).
            const COUNTS: bool = true $(&& ($name::COUNTS || !reads_blocks::<$name>()))+
                && !((false $(|| $name::TRACE)+)
                    && (false $(|| ($name::BLOCKS && !$name::TRACE))+));
            const TRACE: bool = false $(|| $name::TRACE)+;
            const CALLS: bool = false $(|| $name::CALLS)+;
            const RING: bool = false $(|| $name::RING)+;
            /// Uncounted when no member that reads a block-level stream takes counts.
            const UNCOUNTED: bool = true $(&& ($name::UNCOUNTED || !reads_blocks::<$name>()))+;
            #[inline]
            fn ring(&mut self, last: &[[u64; 2]], total: u64) -> Control {
                let mut c = Control::Continue;
                $(if $name::RING { c = c.and(self.$idx.ring(last, total)); })+
                c
            }
            #[inline]
            fn blocks(&mut self, blocks: &[(u64, u32)]) -> Control {
                let mut c = Control::Continue;
                $(if $name::BLOCKS { c = c.and(self.$idx.blocks(blocks)); })+
                c
            }
            /// The members' least.
            #[inline]
            fn budget(&mut self) -> u64 {
                let mut b = u64::MAX;
                $(if $name::COUNTS { b = b.min(self.$idx.budget()); })+
                b
            }
            /// The intersection of the members' ranges.
            #[inline]
            fn range(&mut self, pc: u64) -> (u64, u64) {
                let (mut lo, mut hi) = (0u64, u64::MAX);
                $(if $name::COUNTS {
                    let (l, h) = self.$idx.range(pc);
                    lo = lo.max(l);
                    hi = hi.min(h);
                })+
                (lo, hi.max(lo))
            }
            #[inline]
            fn counted(&mut self, start: u64, lens: &[u8], classes: &[u32; 8], count: u64) -> Control {
                let mut c = Control::Continue;
                $(if $name::COUNTS { c = c.and(self.$idx.counted(start, lens, classes, count)); })+
                c
            }
            #[inline]
            fn retired(&mut self, first: u64, n: u64) -> Control {
                let mut c = Control::Continue;
                $(if $name::COUNTS { c = c.and(self.$idx.retired(first, n)); })+
                c
            }
            #[inline]
            fn left(&mut self, end: u64, to: u64, kind: Option<BranchKind>, sp: u64) -> Control {
                let mut c = Control::Continue;
                $(if $name::COUNTS { c = c.and(self.$idx.left(end, to, kind, sp)); })+
                c
            }
            #[inline]
            fn stack(&mut self, sp: u64) -> Control {
                let mut c = Control::Continue;
                $(if $name::STACK { c = c.and(self.$idx.stack(sp)); })+
                c
            }
            #[inline]
            fn mapped(&mut self, m: &Mapping<'_>) -> Control {
                let mut c = Control::Continue;
                $(if $name::MAPPINGS { c = c.and(self.$idx.mapped(m)); })+
                c
            }
            #[inline]
            fn classes(&mut self, counts: &[u32; 8]) -> Control {
                let mut c = Control::Continue;
                $(if $name::CLASSES { c = c.and(self.$idx.classes(counts)); })+
                c
            }
            #[inline]
            fn class(&mut self, class: Class) -> Control {
                let mut c = Control::Continue;
                $(if $name::CLASSES { c = c.and(self.$idx.class(class)); })+
                c
            }
            #[inline]
            fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
                let mut c = Control::Continue;
                $(if $name::RETIRE { c = c.and(self.$idx.retire(r, t)); })+
                c
            }
            #[inline]
            fn block(&mut self, start: u64, insns: u32) -> Control {
                let mut c = Control::Continue;
                $(if $name::BLOCKS { c = c.and(self.$idx.block(start, insns)); })+
                c
            }
            /// (members that want no lengths get [`Observer::block`], through the default)
            #[inline]
            fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
                let mut c = Control::Continue;
                $(if $name::BLOCKS {
                    c = c.and(self.$idx.block_lens(start, lens));
                })+
                c
            }
            #[inline]
            fn block_part(&mut self, start: u64, lens: &[u8]) -> Control {
                let mut c = Control::Continue;
                $(if $name::BLOCK_LENS {
                    c = c.and(self.$idx.block_part(start, lens));
                })+
                c
            }
            #[inline]
            fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
                let mut c = Control::Continue;
                $(if $name::BRANCHES { c = c.and(self.$idx.taken_branch(from, to, kind)); })+
                c
            }
            #[inline]
            fn thread(&mut self, index: u32) -> Control {
                let mut c = Control::Continue;
                $(c = c.and(self.$idx.thread(index));)+
                c
            }
            #[inline]
            fn process(&mut self, p: &ProcessSwitch) -> Control {
                let mut c = Control::Continue;
                $(c = c.and(self.$idx.process(p));)+
                c
            }
            #[inline]
            fn signal(&mut self, entered: bool) -> Control {
                let mut c = Control::Continue;
                $(c = c.and(self.$idx.signal(entered));)+
                c
            }
            #[inline]
            fn finish(&mut self) -> Control {
                let mut c = Control::Continue;
                $(c = c.and(self.$idx.finish());)+
                c
            }
        }
    };
}

tuple_observer!(A 0);
tuple_observer!(A 0, B 1);
tuple_observer!(A 0, B 1, C 2);
tuple_observer!(A 0, B 1, C 2, D 3);
tuple_observer!(A 0, B 1, C 2, D 3, E 4);

/// An optional observer: `None` observes nothing (but the stream flags are those of `O`, so
/// the source still builds what `O` would want).
impl<O: Observer> Observer for Option<O> {
    const RETIRE: bool = O::RETIRE;
    const BLOCKS: bool = O::BLOCKS;
    const BRANCHES: bool = O::BRANCHES;
    const STAMPS: bool = O::STAMPS;
    const CLASSES: bool = O::CLASSES;
    const MAPPINGS: bool = O::MAPPINGS;
    const BLOCK_LENS: bool = O::BLOCK_LENS;
    const STACK: bool = O::STACK;
    const COUNTS: bool = O::COUNTS;
    const CALLS: bool = O::CALLS;
    const RING: bool = O::RING;
    const UNCOUNTED: bool = O::UNCOUNTED;
    const TRACE: bool = O::TRACE;
    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.retire(r, t))
    }
    #[inline]
    fn ring(&mut self, last: &[[u64; 2]], total: u64) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.ring(last, total))
    }
    #[inline]
    fn blocks(&mut self, blocks: &[(u64, u32)]) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.blocks(blocks))
    }
    #[inline]
    fn budget(&mut self) -> u64 {
        self.as_mut().map_or(u64::MAX, |o| o.budget())
    }
    #[inline]
    fn range(&mut self, pc: u64) -> (u64, u64) {
        self.as_mut().map_or((0, u64::MAX), |o| o.range(pc))
    }
    #[inline]
    fn counted(&mut self, start: u64, lens: &[u8], classes: &[u32; 8], count: u64) -> Control {
        self.as_mut().map_or(Control::Continue, |o| {
            o.counted(start, lens, classes, count)
        })
    }
    #[inline]
    fn retired(&mut self, first: u64, n: u64) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.retired(first, n))
    }
    #[inline]
    fn left(&mut self, end: u64, to: u64, kind: Option<BranchKind>, sp: u64) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.left(end, to, kind, sp))
    }
    #[inline]
    fn stack(&mut self, sp: u64) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.stack(sp))
    }
    #[inline]
    fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.block_lens(start, lens))
    }
    #[inline]
    fn block_part(&mut self, start: u64, lens: &[u8]) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.block_part(start, lens))
    }
    #[inline]
    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.mapped(m))
    }
    #[inline]
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.classes(counts))
    }
    #[inline]
    fn class(&mut self, class: Class) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.class(class))
    }
    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.block(start, insns))
    }
    #[inline]
    fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.taken_branch(from, to, kind))
    }
    #[inline]
    fn thread(&mut self, index: u32) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.thread(index))
    }
    #[inline]
    fn process(&mut self, p: &ProcessSwitch) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.process(p))
    }
    #[inline]
    fn signal(&mut self, entered: bool) -> Control {
        self.as_mut()
            .map_or(Control::Continue, |o| o.signal(entered))
    }
    #[inline]
    fn finish(&mut self) -> Control {
        self.as_mut().map_or(Control::Continue, |o| o.finish())
    }
}

/// Counts retired instructions per class (the `--stats-json` counter, and the observer whose
/// overhead BENCHMARKS.md reports).
#[derive(Clone, Debug, Default)]
pub struct ClassCounter {
    /// Retired instructions per class, indexed like [`Class::ALL`].
    pub counts: [u64; 8],
}

/// Counts from the class stream, which the machine delivers once per block (no retire
/// records needed).
impl Observer for ClassCounter {
    const CLASSES: bool = true;
    const COUNTS: bool = true;
    #[inline]
    fn counted(&mut self, _start: u64, _lens: &[u8], classes: &[u32; 8], count: u64) -> Control {
        for (total, &n) in self.counts.iter_mut().zip(classes) {
            *total += u64::from(n) * count;
        }
        Control::Continue
    }
    #[inline]
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        for (total, &n) in self.counts.iter_mut().zip(counts) {
            *total += u64::from(n);
        }
        Control::Continue
    }
    #[inline]
    fn class(&mut self, class: Class) -> Control {
        self.counts[class as usize] += 1;
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts blocks; stops at the `stop_at`-th.
    #[derive(Default)]
    struct Blocks {
        n: u32,
        stop_at: u32,
        finished: bool,
    }

    impl Observer for Blocks {
        const BLOCKS: bool = true;
        fn block(&mut self, _start: u64, _insns: u32) -> Control {
            self.n += 1;
            if self.n == self.stop_at {
                Control::Stop
            } else {
                Control::Continue
            }
        }
        fn finish(&mut self) -> Control {
            self.finished = true;
            Control::Continue
        }
    }

    #[test]
    fn tuples_forward_each_stream_to_the_members_that_want_it() {
        type Pair = (ClassCounter, Blocks);
        const { assert!(Pair::CLASSES && Pair::BLOCKS && !Pair::BRANCHES && !Pair::STAMPS) };
        const { assert!(!Pair::RETIRE) };
        let mut pair: Pair = (ClassCounter::default(), Blocks::default());
        let mut counts = [0; 8];
        counts[Class::Load as usize] = 1;
        assert_eq!(pair.classes(&counts), Control::Continue);
        assert_eq!(pair.block(0, 1), Control::Continue);
        assert_eq!(pair.0.counts[Class::Load as usize], 1);
        assert_eq!(pair.1.n, 1);
        pair.finish();
        assert!(pair.1.finished);
    }

    #[test]
    fn any_member_can_stop_the_run_and_none_is_a_silent_member() {
        let mut obs = (
            Blocks {
                stop_at: 2,
                ..Blocks::default()
            },
            None::<Blocks>,
            &mut ClassCounter::default(),
        );
        assert_eq!(obs.block(0, 1), Control::Continue);
        assert_eq!(obs.block(0, 1), Control::Stop);
        assert_eq!(Control::Continue.and(Control::Stop), Control::Stop);
        const { assert!(<Option<Blocks> as Observer>::BLOCKS) };
    }
}
