//! The retire stream: what the machine tells an [`Observer`] about every retired instruction,
//! and the cheap derived streams (basic blocks, taken branches) that later mechanisms consume.
//!
//! Observers are generic parameters of [`crate::Machine::run`], so their calls are
//! monomorphized and inlined. The associated constants say which streams an observer wants; the
//! machine builds nothing for a stream nobody wants, so a run with `()` as observer pays
//! nothing.

use crate::inst::{Class, Op, RegUse};

/// One retired instruction (DESIGN.md "retire record").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retire {
    /// Address of the instruction.
    pub pc: u64,
    /// Raw bits as fetched (16 or 32 bits).
    pub raw: u32,
    /// Length in bytes (2 or 4).
    pub len: u8,
    /// The operation.
    pub op: Option<Op>,
    /// Class (jump, branch, load, store, alu, mult, float, sys).
    pub class: Option<Class>,
    /// Value of the first source operand (x or f register by instruction), 0 if none.
    pub src1: u64,
    /// Value of the second source operand, 0 if none.
    pub src2: u64,
    /// Value written to the destination register, if any.
    pub result: Option<u64>,
    /// Effective address of a load, store or AMO.
    pub mem_addr: u64,
    /// Access size in bytes (0: no memory access).
    pub mem_size: u8,
    /// Value loaded (loads, AMOs) or stored (stores).
    pub mem_value: u64,
    /// Whether a branch or jump transferred control.
    pub taken: bool,
    /// Branch or jump target (taken or not).
    pub target: u64,
    /// The kind of control transfer, when one happened (a taken branch or any jump).
    pub transfer: Option<BranchKind>,
    /// Address of the next instruction to execute.
    pub next_pc: u64,
    /// Register fields as encoded (`rd`, `rs1`, `rs2`, `rs3`); [`Retire::reg_use`] says which
    /// are used and in which register file.
    pub regs: [u8; 4],
}

impl Retire {
    /// The registers this instruction read and wrote (for dependence tracking).
    #[inline]
    pub fn reg_use(&self) -> RegUse {
        match self.op {
            Some(op) => op.reg_use(self.regs[0], self.regs[1], self.regs[2], self.regs[3]),
            None => RegUse::default(),
        }
    }
}

/// Kinds of control transfer in the taken-branch stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BranchKind {
    /// A taken conditional branch.
    Cond,
    /// A direct jump (`jal` not linking).
    Jump,
    /// A call: `jal`/`jalr` linking `ra` or `t0`.
    Call,
    /// A return: `jalr x0, 0(ra|t0)`.
    Return,
    /// Any other indirect jump.
    Indirect,
}

/// What an observer wants the machine to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep running.
    Continue,
    /// Stop the run after this instruction ([`crate::Outcome::Stopped`]).
    Stop,
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

    /// One retired instruction.
    #[inline]
    fn retire(&mut self, _r: &Retire) -> Control {
        Control::Continue
    }
    /// A basic block ended: it started at `start` and retired `insns` instructions. Blocks end
    /// after every branch or jump (taken or not), and at a system call.
    #[inline]
    fn block(&mut self, _start: u64, _insns: u32) -> Control {
        Control::Continue
    }
    /// A taken branch or jump from `from` to `to`.
    #[inline]
    fn taken_branch(&mut self, _from: u64, _to: u64, _kind: BranchKind) -> Control {
        Control::Continue
    }
}

/// No observer: the machine runs at full speed.
impl Observer for () {}

/// Counts retired instructions per class (the `--stats-json` counter, and the observer whose
/// overhead BENCHMARKS.md reports).
#[derive(Clone, Debug, Default)]
pub struct ClassCounter {
    /// Retired instructions per class, indexed like [`Class::ALL`].
    pub counts: [u64; 8],
}

impl Observer for ClassCounter {
    const RETIRE: bool = true;
    #[inline]
    fn retire(&mut self, r: &Retire) -> Control {
        if let Some(c) = r.class {
            self.counts[c as usize] += 1;
        }
        Control::Continue
    }
}
