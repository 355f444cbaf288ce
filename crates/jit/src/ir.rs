//! What the compiling tier compiles: a *unit* of guest blocks in a small, ISA-shaped form.
//!
//! The machine (`outcrop-rv`) translates its pre-decoded blocks into a [`Unit`]; this crate
//! turns a unit into host code. A unit is entered at its first block's start. Every block
//! begins with the instruction-budget check (a block runs whole or not at all, unless one of
//! its instructions leaves early), runs its [`Op`]s and ends with a [`Term`]. A transfer to a
//! block of the same unit is a host jump (guest registers stay in host registers); any other
//! target leaves through the jump cache (a direct tail call when the target is compiled, else a
//! return to the engine).
//!
//! Registers are numbered 0–31 (`x0` reads 0; a write to it is dropped by the code generator).

pub use outcrop_sem::{Alu, AmoOp, Cond, FMove};

/// A second operand: a register or an immediate (already sign-extended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Register `x[n]`.
    Reg(u8),
    /// A constant.
    Imm(u64),
}

/// One operation of a block. `pc` and `n` (instructions of the block before it) say where an
/// early exit leaves the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `x[rd] = v`.
    Li {
        /// Destination.
        rd: u8,
        /// The value.
        v: u64,
    },
    /// `x[rd] = op(x[rs1], b)`.
    Alu {
        /// The operation.
        op: Alu,
        /// Destination.
        rd: u8,
        /// First source register.
        rs1: u8,
        /// Second operand.
        b: Src,
    },
    /// `x[rd] = load(x[rs1] + off)` of `size` bytes (1, 2, 4, 8), sign- or zero-extended.
    /// A miss in the compiled TLB calls the host; a fault leaves the unit at this instruction.
    Load {
        /// Destination.
        rd: u8,
        /// Base register.
        rs1: u8,
        /// Offset.
        off: i64,
        /// Bytes.
        size: u8,
        /// Sign-extend.
        signed: bool,
        /// Its pc.
        pc: u64,
        /// Instructions of the block before it.
        n: u32,
    },
    /// `store(x[rs1] + off, x[rs2])` of `size` bytes. A store that changes code leaves the
    /// unit right after it.
    Store {
        /// Base register.
        rs1: u8,
        /// Value register.
        rs2: u8,
        /// Offset.
        off: i64,
        /// Bytes.
        size: u8,
        /// Its pc.
        pc: u64,
        /// Its length in bytes (2 or 4).
        len: u8,
        /// Instructions of the block before it.
        n: u32,
    },
    /// An atomic memory operation of `size` bytes (4 or 8) at `x[rs1]`: `x[rd]` = the old
    /// value (sign-extended from a word), memory = `op(old, x[rs2])` in the operation's width.
    /// Compiled code does it only through the write TLB on an aligned address; anything else
    /// leaves the unit at this instruction for the engine.
    Amo {
        /// The operation.
        op: AmoOp,
        /// Destination.
        rd: u8,
        /// Address register.
        rs1: u8,
        /// Operand register.
        rs2: u8,
        /// Bytes.
        size: u8,
        /// Its pc.
        pc: u64,
        /// Instructions of the block before it.
        n: u32,
    },
    /// `f[rd] = load(x[rs1] + off)`: `size` 8 (`fld`) or 4 (`flw`, NaN-boxed).
    FLoad {
        /// Destination FP register.
        rd: u8,
        /// Base register.
        rs1: u8,
        /// Offset.
        off: i64,
        /// Bytes.
        size: u8,
        /// Its pc.
        pc: u64,
        /// Instructions of the block before it.
        n: u32,
    },
    /// `store(x[rs1] + off, f[rs2])`: the low `size` bytes (`fsd`, `fsw`).
    FStore {
        /// Base register.
        rs1: u8,
        /// Value FP register.
        rs2: u8,
        /// Offset.
        off: i64,
        /// Bytes.
        size: u8,
        /// Its pc.
        pc: u64,
        /// Its length in bytes.
        len: u8,
        /// Instructions of the block before it.
        n: u32,
    },
    /// A bit-pattern move between register files or a sign injection.
    FMove {
        /// Which.
        op: FMove,
        /// Destination.
        rd: u8,
        /// First source.
        rs1: u8,
        /// Second source (sign injections).
        rs2: u8,
    },
    /// FP arithmetic, a conversion, a comparison or a classification: the host's one
    /// definition of it ([`crate::Host::float`]) runs on the context's registers and `fcsr`.
    /// If the host declines (an invalid rounding mode), the unit leaves at this instruction
    /// for the engine.
    Float {
        /// The instruction as the host packs it (opaque here).
        inst: u64,
        /// Its pc.
        pc: u64,
        /// Instructions of the block before it.
        n: u32,
    },
    /// A conditional branch inside a block (the block goes on when it is not taken): taken,
    /// control goes to `target` with `n` instructions of the block retired (the branch
    /// included).
    Exit {
        /// Condition.
        cond: Cond,
        /// First register.
        rs1: u8,
        /// Second register.
        rs2: u8,
        /// Where a taken branch goes.
        target: u64,
        /// Instructions retired when taken.
        n: u32,
        /// The branch's pc (what a ring entry records: [`Block::ring`]).
        pc: u64,
    },
    /// In a [`Counted`] block, after a not-taken [`Op::Exit`]: the next basic block begins,
    /// `n` instructions into the block. From here on the block counts its runs in counter
    /// `slot` and its records carry `tag` and the instructions retired since this point,
    /// as if the basic block from here to the next `Next` or the end were a block of its own
    /// (a counted *superblock*: registers stay in host registers across not-taken branches,
    /// and one budget check covers all its basic blocks). Ignored in other blocks.
    Next {
        /// The record tag of the basic block from here on.
        tag: u32,
        /// Its counter ([`NO_COUNTER`] for none).
        slot: u32,
        /// Instructions of the block before it.
        n: u32,
    },
}

impl Op {
    /// The same operation in a block that has `by` more instructions before it (each
    /// instruction count `n` moved by `by`).
    pub fn shifted(mut self, by: u32) -> Op {
        match &mut self {
            Op::Load { n, .. }
            | Op::Store { n, .. }
            | Op::Amo { n, .. }
            | Op::FLoad { n, .. }
            | Op::FStore { n, .. }
            | Op::Exit { n, .. }
            | Op::Float { n, .. }
            | Op::Next { n, .. } => *n += by,
            Op::Li { .. } | Op::Alu { .. } | Op::FMove { .. } => {}
        }
        self
    }
}

/// How a block ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// Runs on to `next` (the block ended at a page boundary or its size limit).
    Fall {
        /// The next pc.
        next: u64,
    },
    /// A conditional branch: `taken` or `fall`.
    Branch {
        /// Condition.
        cond: Cond,
        /// First register.
        rs1: u8,
        /// Second register.
        rs2: u8,
        /// Target when taken.
        taken: u64,
        /// The next instruction.
        fall: u64,
    },
    /// `jal`: `x[rd] = link`, go to `target`.
    Jal {
        /// Link register.
        rd: u8,
        /// Return address.
        link: u64,
        /// Target.
        target: u64,
    },
    /// `jalr`: `x[rd] = link`, go to `(x[rs1] + off) & !1` (the target read before the
    /// link is written).
    Jalr {
        /// Link register.
        rd: u8,
        /// Base.
        rs1: u8,
        /// Offset.
        off: i64,
        /// Return address.
        link: u64,
    },
    /// The engine runs the instruction at `pc` (anything this tier does not compile); `n`
    /// instructions of the block retired before it.
    Engine {
        /// Its pc.
        pc: u64,
        /// Instructions of the block before it.
        n: u32,
    },
}

/// One guest block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its first instruction's pc.
    pub start: u64,
    /// Instructions it retires when it runs to its end (its terminator included, unless the
    /// terminator is [`Term::Engine`]).
    pub insns: u32,
    /// Its operations.
    pub ops: Vec<Op>,
    /// How it ends.
    pub term: Term,
    /// Record its runs for an observer: `Some(tag)` makes every exit from the block that
    /// retired at least one of its instructions append a [`Record`] (module docs of
    /// [`crate::exec`], "Records") — unless [`Block::counted`] says otherwise.
    pub record: Option<u32>,
    /// Count its runs inline instead ([`Counted`]): with `record` set, the block appends a
    /// record only where control leaves its function or the block stops early.
    pub counted: Option<Counted>,
    /// Write every taken branch and jump of the block into the ring
    /// ([`crate::Jit::take_ring`]): `Some(pc)` of its final instruction (the source of a
    /// taken final transfer; an [`Op::Exit`] carries its own).
    pub ring: Option<u64>,
    /// Append the tag of each basic block of the block that runs to its end (its
    /// [`Block::record`] tag, then each [`Op::Next`]'s) to the trace
    /// ([`crate::Jit::trace`]), at the branch or jump that ends it: with [`Block::counted`]
    /// and [`Block::record`] set.
    pub trace: bool,
    /// Append the guest address of each load, store and atomic the block performs to the
    /// address buffer ([`crate::Jit::addresses`]), in program order, before the access (an
    /// access that faults leaves its entry behind: the caller knows from the block's records
    /// how many of its instructions retired).
    pub addresses: bool,
}

/// [`Counted::slot`] of a counted block that keeps no counter (its observer takes no counts:
/// it still records only where control leaves its range).
pub const NO_COUNTER: u32 = u32::MAX;

/// How a block counts its runs and when it still appends a [`Record`] (a block with
/// [`Block::counted`] set).
///
/// Every run of the block to its end adds one to its counter, the [`Jit::counter`](
/// crate::Jit::counter) slot `slot` (a run that stops early takes its one back and appends a
/// [`Record::PARTIAL`] record, as a recording block does). The block lies in one function,
/// `[lo, hi)`: its final transfer appends a record (with the stack pointer and the budget left)
/// only if it goes outside that range, or if `always` (a call or a return, whatever the
/// target). An indirect jump checks its target against the range inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    /// Its counter ([`NO_COUNTER`] for none).
    pub slot: u32,
    /// First byte of its function.
    pub lo: u64,
    /// First byte after it.
    pub hi: u64,
    /// Its final jump is a call or a return: it always appends a record when taken.
    pub always: bool,
}

impl Counted {
    /// Whether a transfer to `pc` leaves the function.
    pub fn leaves(&self, pc: u64) -> bool {
        pc < self.lo || pc >= self.hi
    }
}

/// What a block appended when it ran with [`Block::record`] set: four words.
///
/// * `next`: the pc the guest goes to after it (the next block, or where the engine resumes);
/// * `word`: the block's tag in bits 0–31, the instructions of the block that retired in bits
///   32–47, and how it ended ([`Record::END`], [`Record::TAKEN`], [`Record::PARTIAL`],
///   [`Record::EXIT`]) in bits 48–63;
/// * `sp`: the guest's stack pointer (x2) when it left the block, stored only by blocks that
///   end in a call, a return or an indirect jump (an observer that follows the call stack
///   matches frames by it), and by every record of a [`Counted`] block; other records leave
///   the slot as it was;
/// * `budget`: the instruction budget left after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Record {
    /// Where the guest goes on.
    pub next: u64,
    /// Tag, retired instructions and how it ended.
    pub word: u64,
    /// The stack pointer (x2) at the block's exit.
    pub sp: u64,
    /// The instruction budget left after it (counted blocks' records are sparse: the
    /// instructions retired between two records are the difference).
    pub budget: u64,
}

impl Record {
    /// It ran to its end and fell through (or its final branch was not taken).
    pub const END: u16 = 0;
    /// It ran to its end, and its final branch or jump was taken to `next`.
    pub const TAKEN: u16 = 1;
    /// It stopped before its end (the engine runs the instruction at `next`, or a store
    /// changed code and the run resumes at `next`).
    pub const PARTIAL: u16 = 2;
    /// A conditional branch inside it ([`Op::Exit`]) was taken to `next`.
    pub const EXIT: u16 = 3;

    /// The word for `tag`, `retired` instructions and `how`.
    pub fn word(tag: u32, retired: u32, how: u16) -> u64 {
        u64::from(tag) | (u64::from(retired as u16) << 32) | (u64::from(how) << 48)
    }
    /// The block's tag.
    pub fn tag(&self) -> u32 {
        self.word as u32
    }
    /// Instructions of the block that retired.
    pub fn retired(&self) -> u32 {
        u32::from((self.word >> 32) as u16)
    }
    /// How it ended.
    pub fn how(&self) -> u16 {
        (self.word >> 48) as u16
    }
}

/// A compilation unit: blocks entered at `blocks[0].start`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unit {
    /// The blocks; the first is the entry. Starts are distinct.
    pub blocks: Vec<Block>,
}

impl Unit {
    /// The entry pc (0 for an empty unit).
    pub fn entry(&self) -> u64 {
        self.blocks.first().map_or(0, |b| b.start)
    }

    /// The counter slots the unit's code adds to, in the order the code generator meets
    /// them: for each block, its [`Counted::slot`] (`None` if it counts nothing), then the
    /// slot of each [`Op::Next`] in it (counted blocks only).
    pub fn counter_slots(&self) -> Vec<Option<u32>> {
        let mut out = Vec::new();
        for b in &self.blocks {
            let kept = |slot: u32| (slot != NO_COUNTER).then_some(slot);
            out.push(b.counted.and_then(|c| kept(c.slot)));
            if b.counted.is_some() {
                out.extend(b.ops.iter().filter_map(|op| match op {
                    Op::Next { slot, .. } => Some(kept(*slot)),
                    _ => None,
                }));
            }
        }
        out
    }
}
