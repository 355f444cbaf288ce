//! The compiling tier's side in the machine (docs/machine.md, "The compiling tier"): which
//! blocks are hot, the units formed from them, their translation into `outcrop_jit::ir`, and
//! the calls into compiled code from the block engine's loop. No `unsafe` here: compiled code
//! runs through `outcrop_jit`'s audited module.

use super::{Block, Uop, K};
use crate::inst::{Ext, Op};
use crate::machine::{jalr_kind, Machine};
use outcrop_events::record::{BranchKind, Control, Observer, WarmRun};
use outcrop_jit::ir::Record;
use outcrop_jit::ir::{self, Alu, Cond, Counted, Src, Term};
use outcrop_jit::{Exit, Jit};
use outcrop_sem::Sem;
use std::collections::VecDeque;

/// Most guest blocks in one unit.
///
/// One today: on four real programs, units of 2, 4 and 8 blocks ran slower end to end than
/// single blocks, because compiling on the machine's thread costs more than the register
/// traffic between blocks saves (docs/machine.md, "The compiling tier"). A block's branch to
/// its own start is still a host jump.
pub(in crate::machine) const MAX_UNIT_BLOCKS: usize = 1;

/// Runs of a block on the block engine before it is compiled (the default of
/// [`Machine::jit_hot`]): 256 ran four real programs fastest among 32, 64, 256 and 1024.
pub const JIT_HOT: u32 = 256;
/// Runs of a block on the block engine before the baseline tier compiles it (the default of
/// [`Machine::jit_hot_baseline`]): a baseline compile costs about as much as a few dozen runs
/// of a block on the engine.
pub const BASELINE_HOT: u32 = 8;
/// A block that ends early for the engine is compiled only if at least this many of its
/// instructions run compiled first (`matmul`, whose loop is two FP loads and an FMA, ran 35%
/// slower compiled than on the block engine without this).
const MIN_PREFIX: u32 = 8;
/// The observer's range a counted block lies in ([`Observer::range`]), and whether its calls
/// and returns record even inside it ([`Observer::CALLS`]).
#[derive(Clone, Copy)]
struct Range {
    lo: u64,
    hi: u64,
    calls: bool,
}

/// Most instructions in a counted superblock ([`Machine::extend_counted`]): 24 (the block
/// engine's 64 compiled more code on SQLite than it saved: each basic block is compiled again
/// in every superblock that runs through it; docs/BENCHMARKS.md, issue 50).
const MAX_SUPERBLOCK: u32 = 24;
/// [`Block::jit`]: never compiled here (its first instruction is not compiled).
pub(super) const NEVER: u32 = u32::MAX;

/// The compiling tier of a machine (created on first use).
pub(in crate::machine) type Tier = Jit<crate::memory::Memory>;

/// What one instruction becomes in compiled code.
enum Lowered {
    /// An operation inside the block.
    Op(ir::Op),
    /// A conditional branch on (rs1, rs2).
    Branch(Cond, u8, u8),
    /// `jal rd`.
    Jal(u8),
    /// `jalr rd, off(rs1)`.
    Jalr(u8, u8, i64),
}

/// The compiled form of an instruction that does `sem` with the decoded operands
/// `(rd, rs1, rs2, imm)`, at `pc` after `n` instructions of its block and `len` bytes long;
/// `None` if the engine runs it.
fn lower(
    sem: Sem,
    (rd, rs1, rs2, imm): (u8, u8, u8, i64),
    pc: u64,
    n: u32,
    len: u16,
) -> Option<Lowered> {
    let len = len as u8;
    Some(Lowered::Op(match sem {
        Sem::Alu(op) => ir::Op::Alu {
            op,
            rd,
            rs1,
            b: Src::Reg(rs2),
        },
        Sem::AluImm(op) => ir::Op::Alu {
            op,
            rd,
            rs1,
            b: Src::Imm(imm as u64),
        },
        Sem::Load(size, signed) => ir::Op::Load {
            rd,
            rs1,
            off: imm,
            size,
            signed,
            pc,
            n,
        },
        Sem::Store(size) => ir::Op::Store {
            rs1,
            rs2,
            off: imm,
            size,
            pc,
            len,
            n,
        },
        Sem::FLoad(size) => ir::Op::FLoad {
            rd,
            rs1,
            off: imm,
            size,
            pc,
            n,
        },
        Sem::FStore(size) => ir::Op::FStore {
            rs1,
            rs2,
            off: imm,
            size,
            pc,
            len,
            n,
        },
        Sem::FMove(op) => ir::Op::FMove { op, rd, rs1, rs2 },
        Sem::Amo(op, size) => ir::Op::Amo {
            op,
            rd,
            rs1,
            rs2,
            size,
            pc,
            n,
        },
        Sem::Branch(c) => return Some(Lowered::Branch(c, rs1, rs2)),
        Sem::Jal => return Some(Lowered::Jal(rd)),
        Sem::Jalr => return Some(Lowered::Jalr(rd, rs1, imm)),
        _ => return None,
    }))
}

/// Where the block engine goes on after compiled code ran.
pub(super) enum After {
    /// At this pc, in any block (compiled or not).
    Go(u64),
    /// At this pc, in the block engine (the instruction there is not compiled or faults).
    Engine(u64),
    /// The single-step interpreter runs `self.pc` (the budget is spent, or no block starts
    /// there).
    Oracle,
    /// The observer stopped the run (`self.pc` and `self.instret` are where it stopped).
    Stopped,
}

impl Machine {
    /// Block `id` of the cache as a compiled block (compiled up to the first instruction this
    /// tier leaves to the engine). Each micro-op is lowered from what its instruction does
    /// ([`Sem`]), except the forms the block engine specialised (constants, moves, fused
    /// pairs), which are lowered from what they became. `range`: the observer's range the
    /// block lies in, when it counts its runs ([`Observer::COUNTS`]).
    fn ir_block(&self, b: &Block, id: u32, uops: &[Uop], range: Option<Range>) -> ir::Block {
        let (first, count) = (b.first as usize, b.count as usize);
        let block = |ops, insns, term: Term| {
            let counted = match (range, &term) {
                // a block that stops before its end for the engine never runs to its end
                // compiled: it records each run as a partial one instead
                (_, Term::Engine { .. }) | (None, _) => None,
                (Some(Range { lo, hi, calls }), _) => Some(Counted {
                    slot: if self.blocks.uncounted {
                        ir::NO_COUNTER
                    } else {
                        id
                    },
                    lo,
                    hi,
                    always: calls
                        && matches!(term, Term::Jal { .. } | Term::Jalr { .. })
                        && matches!(b.taken_kind, BranchKind::Call | BranchKind::Return),
                }),
            };
            ir::Block {
                start: b.start,
                insns,
                ops,
                term,
                // basic blocks (an observer reads block-level streams): every run is
                // recorded, or counted
                record: (!self.blocks.extended).then_some(id),
                counted,
                ring: self.blocks.ring.then_some(b.last_pc),
                trace: self.blocks.trace,
                addresses: self.blocks.warm,
            }
        };
        let mut ops = Vec::new();
        let uops = uops.get(first..first + count).unwrap_or_default();
        let meta = self
            .blocks
            .meta
            .get(first..first + count)
            .unwrap_or_default();
        for (k, (u, m)) in uops.iter().zip(meta).enumerate() {
            let pc = b.start + u64::from(m.off);
            let last = k + 1 == count;
            let (rd, rs1, rs2) = (u.rd & 31, u.rs1 & 31, u.rs2 & 31);
            match u.k {
                K::Nop => continue,
                K::Li => {
                    ops.push(ir::Op::Li { rd, v: u.imm });
                    continue;
                }
                K::Mv => {
                    ops.push(ir::Op::Alu {
                        op: Alu::Add,
                        rd,
                        rs1,
                        b: Src::Imm(0),
                    });
                    continue;
                }
                K::AuipcJalr => {
                    // auipc rd, hi; jalr rs2, lo(rd): both writes, the link last
                    ops.push(ir::Op::Li { rd, v: u.imm });
                    let target = u.imm.wrapping_add(u.aux as i64 as u64) & !1;
                    let term = Term::Jal {
                        rd: rs2,
                        link: b.end,
                        target,
                    };
                    return block(ops, b.insns, term);
                }
                _ => {}
            }
            let n = u32::from(m.n);
            if matches!(m.sem, Sem::Float | Sem::Csr | Sem::Vector) {
                if let Some(inst) = self.float_inst(u) {
                    ops.push(ir::Op::Float { inst, pc, n });
                    continue;
                }
            }
            // the operands as decoded (a generic micro-op's `imm` indexes its instruction)
            let fields = match u.k {
                K::Generic | K::Float | K::Ecall => self
                    .blocks
                    .generic
                    .get(u.imm as usize)
                    .map(|g| (g.0.rd & 31, g.0.rs1 & 31, g.0.rs2 & 31, g.0.imm as i64)),
                _ => Some((rd, rs1, rs2, u.imm as i64)),
            };
            let lowered = fields.and_then(|f| lower(m.sem, f, pc, n, m.next_off - m.off));
            match lowered {
                Some(Lowered::Op(op)) => ops.push(op),
                Some(Lowered::Branch(cond, rs1, rs2)) if !last => ops.push(ir::Op::Exit {
                    cond,
                    rs1,
                    rs2,
                    target: u.imm,
                    n: u.aux as u32,
                    pc,
                }),
                Some(Lowered::Branch(cond, rs1, rs2)) => {
                    let term = Term::Branch {
                        cond,
                        rs1,
                        rs2,
                        taken: u.imm,
                        fall: b.end,
                    };
                    return block(ops, b.insns, term);
                }
                Some(Lowered::Jal(rd)) => {
                    let term = Term::Jal {
                        rd,
                        link: b.end,
                        target: u.imm,
                    };
                    return block(ops, b.insns, term);
                }
                Some(Lowered::Jalr(rd, rs1, off)) => {
                    let link = b.end;
                    return block(ops, b.insns, Term::Jalr { rd, rs1, off, link });
                }
                // FP arithmetic, brr, system instructions: the engine
                None => return block(ops, n, Term::Engine { pc, n }),
            }
        }
        block(ops, b.insns, Term::Fall { next: b.end })
    }

    /// Extends counted block `ir` through the not-taken side of its final conditional branch
    /// into the basic blocks already built there, while they lie in `range` and run to their
    /// ends compiled, up to [`MAX_SUPERBLOCK`] instructions: a *superblock* in which each
    /// basic block still counts its own runs and tags its own records ([`ir::Op::Next`]), so
    /// the observer hears exactly what it hears from the basic blocks compiled one by one,
    /// while registers stay in host registers and one budget check covers them all.
    fn extend_counted(&self, ir: &mut ir::Block, last_pc: u64, uops: &[Uop], range: Range) {
        let Range { lo, hi, .. } = range;
        // the pc of the final branch the next basic block is appended after
        let mut last_pc = last_pc;
        while let Term::Branch {
            cond,
            rs1,
            rs2,
            taken,
            fall,
        } = ir.term
        {
            let Some(nid) = self.peek_block(fall) else {
                return;
            };
            let Some(nb) = self.blocks.blocks.get(nid as usize) else {
                return;
            };
            if nb.start != fall || nb.start < lo || nb.end > hi {
                return;
            }
            let next = self.ir_block(nb, nid, uops, Some(range));
            let (Some(counted), false) = (next.counted, matches!(next.term, Term::Engine { .. }))
            else {
                return;
            };
            if ir.insns + next.insns > MAX_SUPERBLOCK {
                return;
            }
            let n = ir.insns;
            ir.ops.push(ir::Op::Exit {
                cond,
                rs1,
                rs2,
                target: taken,
                n,
                pc: last_pc,
            });
            last_pc = nb.last_pc;
            ir.ops.push(ir::Op::Next {
                tag: nid,
                slot: counted.slot,
                n,
            });
            ir.ops.extend(next.ops.into_iter().map(|op| op.shifted(n)));
            ir.insns += next.insns;
            ir.term = next.term;
            ir.ring = next.ring;
            ir.counted = ir.counted.map(|c| Counted {
                always: counted.always,
                ..c
            });
        }
    }

    /// FP micro-op `u` as [`ir::Op::Float`] packs it ([`pack_float`]): a generic FP
    /// micro-op's instruction, or what the block engine specialised.
    fn float_inst(&self, u: &Uop) -> Option<u64> {
        let (rs3, rm) = ((u.aux & 31) as u8, ((u.aux >> 8) & 7) as u8);
        let (rd, rs1, rs2) = (u.rd & 31, u.rs1 & 31, u.rs2 & 31);
        let op = match u.k {
            K::Float => {
                let (i, _, _) = self.blocks.generic.get(u.imm as usize)?;
                return Some(pack_float(i.op, i.rd, i.rs1, i.rs2, i.rs3, i.rm));
            }
            // the FP CSRs (fflags, frm, fcsr) are the context's fcsr; any other CSR is the
            // engine's
            K::Generic => {
                let (i, _, _) = self.blocks.generic.get(u.imm as usize)?;
                if i.op.sem() == Sem::Vector {
                    return Some(pack_vector(i.op, i.raw));
                }
                let num = (i.imm as u32) & 0xfff;
                if i.op.sem() != Sem::Csr || !(1..=3).contains(&num) {
                    return None;
                }
                let packed = pack_float(i.op, i.rd, i.rs1, 0, 0, 0);
                return Some(packed | u64::from(num) << 52);
            }
            K::FaddD => Op::FaddD,
            K::FsubD => Op::FsubD,
            K::FmulD => Op::FmulD,
            K::FdivD => Op::FdivD,
            K::FmaddD => Op::FmaddD,
            K::FmsubD => Op::FmsubD,
            K::FnmsubD => Op::FnmsubD,
            K::FnmaddD => Op::FnmaddD,
            K::FeqD => Op::FeqD,
            K::FltD => Op::FltD,
            K::FleD => Op::FleD,
            _ => return None,
        };
        Some(pack_float(op, rd, rs1, rs2, rs3, rm))
    }

    /// The targets a block may go to next that are known when it is built.
    fn successors(b: &Block, uops: &[Uop]) -> Vec<u64> {
        let (first, count) = (b.first as usize, b.count as usize);
        let mut out = Vec::new();
        for u in uops.get(first..first + count).unwrap_or_default() {
            match u.k {
                K::Beq | K::Bne | K::Blt | K::Bge | K::Bltu | K::Bgeu | K::Beqz | K::Bnez => {
                    out.push(u.imm)
                }
                K::Jal => out.push(u.imm),
                K::AuipcJalr => out.push(u.imm.wrapping_add(u.aux as i64 as u64) & !1),
                _ => {}
            }
        }
        let last = uops.get(first + count.saturating_sub(1)).map(|u| u.k);
        if !matches!(last, Some(K::Jal | K::Jalr | K::AuipcJalr)) {
            out.push(b.end);
        }
        out
    }

    /// The block already built at `pc`, without building one.
    fn peek_block(&self, pc: u64) -> Option<u32> {
        let table = *self.blocks.pages.get(&(pc >> 12))?;
        let slot = ((pc & (crate::memory::PAGE_SIZE - 1)) >> 1) as usize;
        match self.blocks.tables.get(table as usize)?[slot] {
            super::NONE | super::ORACLE => None,
            e => Some(e - 1),
        }
    }

    /// Compiles the unit entered at block `id`: it and the blocks already built that it
    /// reaches by known targets, breadth first, at most [`MAX_UNIT_BLOCKS`]. When the blocks
    /// count ([`BlockCache::counting`]), each is counted in the observer's range around it,
    /// and a block that crosses the end of its range is not compiled.
    pub(super) fn compile_unit<O: Observer>(&mut self, id: u32, uops: &[Uop], obs: &mut O) {
        let Some(entry) = self.blocks.blocks.get(id as usize) else {
            return;
        };
        let counting = self.blocks.counting;
        let mut range_of = |b: &Block| -> Result<Option<Range>, ()> {
            if !counting {
                return Ok(None);
            }
            let (lo, hi) = obs.range(b.start);
            if b.start < lo || b.end > hi {
                return Err(());
            }
            Ok(Some(Range {
                lo,
                hi,
                calls: O::CALLS,
            }))
        };
        let mark = |m: &mut Machine, v: u32| {
            if let Some(b) = m.blocks.blocks.get_mut(id as usize) {
                b.jit = v;
            }
        };
        let Ok(range) = range_of(entry) else {
            mark(self, NEVER);
            return;
        };
        let mut entry_ir = self.ir_block(entry, id, uops, range);
        if self.blocks.warm {
            if !self.warm_compiles(entry, &entry_ir) {
                mark(self, NEVER);
                return;
            }
        } else if let Some(range) = range {
            self.extend_counted(&mut entry_ir, entry.last_pc, uops, range);
        }
        if entry_ir.insns < MIN_PREFIX && matches!(entry_ir.term, Term::Engine { .. }) {
            // the engine runs its first instructions anyway (FP arithmetic, a system call…):
            // a short compiled prefix costs an entry and an exit more than it saves
            mark(self, NEVER);
            return;
        }
        let mut unit = ir::Unit {
            blocks: vec![entry_ir],
        };
        let mut seen = vec![entry.start];
        let mut queue: VecDeque<u32> = VecDeque::from([id]);
        while let Some(at) = queue.pop_front() {
            let Some(b) = self.blocks.blocks.get(at as usize) else {
                continue;
            };
            for next in Self::successors(b, uops) {
                if unit.blocks.len() >= MAX_UNIT_BLOCKS || seen.contains(&next) {
                    continue;
                }
                let Some(nid) = self.peek_block(next) else {
                    continue;
                };
                let Some(nb) = self.blocks.blocks.get(nid as usize) else {
                    continue;
                };
                let Ok(range) = range_of(nb) else {
                    continue;
                };
                let ir = self.ir_block(nb, nid, uops, range);
                if ir.insns == 0 {
                    continue;
                }
                seen.push(next);
                unit.blocks.push(ir);
                queue.push_back(nid);
            }
        }
        // compiled code shares the decoded-code budget: past half of it, start over
        let max = self.blocks.max_bytes / 2;
        let background = self.jit_background;
        let baseline = self.jit_baseline;
        let Some(jit) = self.jit_tier() else {
            mark(self, NEVER);
            return;
        };
        if jit.code_bytes() > max {
            jit.flush();
        }
        if baseline && jit.baseline_supports(&unit) {
            // the baseline tier compiles on the machine's thread, in microseconds (if its code
            // memory was full, everything was dropped first: the generation moved, and the
            // marks of the blocks compiled before are stale)
            let r = jit.compile_baseline(&unit);
            let generation = jit.stats.flushes as u32 + 1;
            match r {
                Ok(()) => mark(self, generation),
                Err(_) => mark(self, NEVER),
            }
            return;
        }
        let generation = jit.stats.flushes as u32 + 1;
        if background {
            if jit.submit(unit) {
                // compiled on the other thread; `poll_jit` marks it when it is installed
                if let Some(b) = self.blocks.blocks.get_mut(id as usize) {
                    b.heat = 0;
                    b.pending = generation;
                }
                return;
            }
            self.jit_background = false;
            return;
        }
        match jit.compile(&unit) {
            Ok(()) => mark(self, generation),
            Err(_) => mark(self, NEVER),
        }
    }

    /// Whether functional warming compiles block `b` (as `ir`): it runs to its end compiled,
    /// every access's size is known before it runs, and a taken final branch is told from a
    /// fall-through by where control goes ([`WarmEnd::Branch`]).
    fn warm_compiles(&self, b: &Block, ir: &ir::Block) -> bool {
        let branch_to_fall = matches!(ir.term, Term::Branch { taken, fall, .. } if taken == fall);
        !matches!(ir.term, Term::Engine { .. })
            && ir.insns == b.insns
            && b.accesses != u16::MAX
            && !branch_to_fall
    }

    /// Installs the units the compiling thread finished and marks their blocks.
    #[cold]
    pub(super) fn poll_jit(&mut self) {
        let Some(jit) = self.jit.as_deref_mut() else {
            return;
        };
        let generation = jit.stats.flushes as u32 + 1;
        for pc in jit.poll() {
            if let Some(id) = self.peek_block(pc) {
                if let Some(b) = self.blocks.blocks.get_mut(id as usize) {
                    b.jit = generation;
                }
            }
        }
    }

    /// Units waiting for the compiling thread.
    #[inline(always)]
    pub(super) fn jit_pending(&self) -> bool {
        self.jit.as_ref().is_some_and(|j| j.pending() > 0)
    }

    /// Whether block `id` waits for its unit from the compiling thread.
    #[inline(always)]
    pub(super) fn jit_waiting(&self, id: u32) -> bool {
        match (&self.jit, self.blocks.blocks.get(id as usize)) {
            (Some(j), Some(b)) => b.pending == j.stats.flushes as u32 + 1,
            _ => false,
        }
    }

    /// The compiling tier, made on first use; `None` on a host Cranelift cannot compile for
    /// (the block engine runs everything).
    fn jit_tier(&mut self) -> Option<&mut Tier> {
        if self.jit.is_none() && !self.jit_unavailable {
            match Jit::new() {
                Ok(j) => self.jit = Some(Box::new(j)),
                Err(_) => self.jit_unavailable = true,
            }
        }
        self.jit.as_deref_mut()
    }

    /// Whether block `id` has a live compiled unit.
    #[inline(always)]
    pub(super) fn compiled(&self, id: u32) -> bool {
        match (&self.jit, self.blocks.blocks.get(id as usize)) {
            (Some(j), Some(b)) => b.jit != NEVER && b.jit == j.stats.flushes as u32 + 1,
            _ => false,
        }
    }

    /// Runs compiled code from `pc` (a compiled unit starts there), then runs the observer's
    /// hooks for the blocks it ran (when the blocks record: [`Machine::drain`]).
    pub(super) fn enter_jit<O: Observer>(&mut self, pc: u64, obs: &mut O) -> After {
        let limit = self
            .stop_at
            .saturating_sub(self.instret.saturating_add(self.traps));
        let recording = !self.blocks.extended;
        let counting = self.blocks.counting;
        // an observer of counts may need to hear an instruction live (a sample due): compiled
        // code stops before it, and the engine runs the block it falls in
        let budget = if counting {
            limit.min(obs.budget())
        } else {
            limit
        };
        if counting && O::BLOCKS && self.block_len > 0 && !self.blocks.trace {
            // the engine's part of a basic block compiled code goes on with: the observer's
            // counts need no whole basic blocks, only the order of what retired (a traced
            // observer's do: the trace goes on with the engine's part)
            if self.end_block(obs) == Control::Stop {
                return After::Stopped;
            }
        }
        let Some(jit) = self.jit.as_deref_mut() else {
            return After::Engine(pc);
        };
        jit.set_fcsr(u64::from(self.fflags & 0x1f) | u64::from(self.frm & 7) << 5);
        let (zvbb, zvfhmin) = (self.isa.has(Ext::Zvbb), self.isa.has(Ext::Zvfhmin));
        self.mem
            .park_vector(std::mem::take(&mut self.v), zvbb, zvfhmin);
        let regs = (&mut self.x, &mut self.f);
        // (counted blocks' records are sparse: a full buffer ends their call, so it is not
        // capped as a recording call is)
        let (exit, retired) = if recording && !counting {
            jit.run_recording(&mut self.mem, regs, pc, budget)
        } else if self.blocks.trace {
            jit.run_tracing(&mut self.mem, regs, pc, budget)
        } else {
            jit.run(&mut self.mem, regs, pc, budget)
        };
        self.v = self.mem.unpark_vector();
        if let Some(jit) = self.jit.as_deref() {
            let fcsr = jit.fcsr();
            self.fflags = (fcsr & 0x1f) as u8;
            self.frm = ((fcsr >> 5) & 7) as u8;
        }
        let drained = if !recording {
            Control::Continue
        } else if self.blocks.warm {
            let (Exit::Miss(at) | Exit::Engine(at) | Exit::Budget(at) | Exit::CodeChanged(at)) =
                exit;
            self.hand_warm(at, obs)
        } else if counting {
            // the taken branches come before the instructions they are among, and the
            // traced blocks before the block that stopped early, if one did
            let (Exit::Miss(at) | Exit::Engine(at) | Exit::Budget(at) | Exit::CodeChanged(at)) =
                exit;
            if self.hand_ring(obs).and(self.hand_trace(at, obs)) == Control::Stop {
                // (an observer that stops here stops at the end of the call)
                self.instret += retired;
                self.pc = at;
                return After::Stopped;
            }
            let (control, partial) = self.drain_counted((pc, budget, retired), obs);
            if !partial && O::BLOCKS && !self.blocks.trace {
                // compiled code stopped between blocks: the observers' next block starts
                // where the run goes on
                let (Exit::Miss(at) | Exit::Engine(at) | Exit::Budget(at) | Exit::CodeChanged(at)) =
                    exit;
                self.block_start = at;
                self.block_len = 0;
                self.block_lens.clear();
            }
            control
        } else {
            self.drain(obs)
        };
        if drained == Control::Stop {
            return After::Stopped;
        }
        self.instret += retired;
        match exit {
            Exit::Miss(next) => {
                self.classify_miss(next);
                After::Go(next)
            }
            Exit::Engine(at) => After::Engine(at),
            // the observer's budget: the engine runs on from there
            Exit::Budget(at) if budget < limit => After::Engine(at),
            Exit::Budget(at) => {
                self.pc = at;
                After::Oracle
            }
            Exit::CodeChanged(next) => {
                // the store retired and changed code: drop everything decoded and compiled
                self.flush_icache();
                After::Go(next)
            }
        }
    }

    /// Tells a miss at `next` that no unit will fix from one at a pc not compiled yet: a pc
    /// whose block the engine keeps (it starts with what only the engine runs), or one whose
    /// unit is compiled but not in the jump cache.
    fn classify_miss(&mut self, next: u64) {
        let reason = match self.peek_entry(next) {
            Some(super::ORACLE) => 2,
            Some(e) if e != super::NONE => {
                let id = e - 1;
                if self.compiled(id) {
                    4
                } else if self
                    .blocks
                    .blocks
                    .get(id as usize)
                    .is_some_and(|b| b.jit == NEVER)
                {
                    2
                } else {
                    0
                }
            }
            _ => 0,
        };
        if reason != 0 {
            if let Some(j) = self.jit.as_deref_mut() {
                j.reclassify_miss(reason);
            }
        }
    }

    /// The block table's entry for `pc` (block id + 1, `NONE` or `ORACLE`), if its page has
    /// a table.
    fn peek_entry(&self, pc: u64) -> Option<u32> {
        let table = *self.blocks.pages.get(&(pc >> 12))?;
        let slot = ((pc & (crate::memory::PAGE_SIZE - 1)) >> 1) as usize;
        self.blocks.tables.get(table as usize).map(|t| t[slot])
    }

    /// Hands an observer of [`Observer::RING`] the taken branches compiled code wrote into
    /// the ring since the last time.
    fn hand_ring<O: Observer>(&mut self, obs: &mut O) -> Control {
        if !(O::RING && self.blocks.ring) {
            return Control::Continue;
        }
        let mut last = std::mem::take(&mut self.blocks.ring_last);
        let total = self
            .jit
            .as_deref_mut()
            .map_or(0, |j| j.take_ring(&mut last));
        let control = if total > 0 {
            obs.ring(&last, total)
        } else {
            Control::Continue
        };
        self.blocks.ring_last = last;
        control
    }

    /// Hands an observer of [`Observer::WARM`] the block runs of the last call into compiled
    /// code: each block of the trace whole, then the block that stopped early, if one did (its
    /// record: the last of the call), with the addresses its accesses appended. `at`: where
    /// the run goes on.
    fn hand_warm<O: Observer>(&mut self, at: u64, obs: &mut O) -> Control {
        if !O::WARM {
            return Control::Continue;
        }
        let Some(jit) = self.jit.take() else {
            return Control::Continue;
        };
        let blocks = &self.blocks;
        let partial = jit
            .records()
            .last()
            .filter(|r| r.how() == Record::PARTIAL)
            .map(|r| (r.tag(), r.retired()));
        let start_of = |tag: u32| blocks.blocks.get(tag as usize).map_or(at, |b| b.start);
        let trace = jit.trace();
        let mut addrs = jit.addresses();
        let mut control = Control::Continue;
        for (k, &tag) in trace.iter().enumerate() {
            let next = match (trace.get(k + 1), partial) {
                (Some(&t), _) | (None, Some((t, _))) => start_of(t),
                (None, None) => at,
            };
            control = control.and(blocks.warm_run(tag, None, next, &mut addrs, obs));
        }
        if let Some((tag, retired)) = partial {
            control = control.and(blocks.warm_run(tag, Some(retired), at, &mut addrs, obs));
        }
        self.jit = Some(jit);
        control
    }

    /// Hands an observer of [`Observer::TRACE`] the basic blocks the last call into compiled
    /// code ran to their ends, whole: a compiled block that does not end its basic block adds
    /// to the engine's part of it, and the next one to it. `at`: where the run goes on.
    fn hand_trace<O: Observer>(&mut self, at: u64, obs: &mut O) -> Control {
        if !(O::TRACE && O::BLOCKS && self.blocks.trace) {
            return Control::Continue;
        }
        let Some(jit) = self.jit.take() else {
            return Control::Continue;
        };
        let mut control = Control::Continue;
        // whole basic blocks gathered and handed over at once (with lengths, one by one)
        let mut whole = std::mem::take(&mut self.blocks.traced);
        whole.clear();
        if O::BLOCK_LENS {
            for &tag in jit.trace() {
                let Some(b) = self.blocks.blocks.get(tag as usize) else {
                    continue;
                };
                if self.block_len == 0 {
                    self.block_start = b.start;
                }
                let at = b.lens_at as usize;
                let lens = self.blocks.lens.get(at..at + b.insns as usize);
                self.block_lens.extend_from_slice(lens.unwrap_or_default());
                self.block_len += b.insns;
                if b.ends_basic_block {
                    control = control.and(self.end_block(obs));
                }
            }
        } else {
            // (the open block in locals: the hot loop touches only the blocks and `whole`)
            let (mut start, mut len) = (self.block_start, self.block_len);
            for &tag in jit.trace() {
                let Some(b) = self.blocks.blocks.get(tag as usize) else {
                    continue;
                };
                if len == 0 {
                    start = b.start;
                }
                len += b.insns;
                if b.ends_basic_block {
                    whole.push((start, len));
                    len = 0;
                }
            }
            (self.block_start, self.block_len) = (start, len);
        }
        if !whole.is_empty() {
            control = control.and(obs.blocks(&whole));
        }
        self.blocks.traced = whole;
        if self.block_len == 0 {
            self.block_start = at;
        }
        self.jit = Some(jit);
        control
    }

    /// Runs the observer's hooks for the records the last call into compiled code left, as the
    /// block engine runs them for the same blocks (checked by the differential tests). On a
    /// stop, `self.pc` and `self.instret` are put where the engine would have stopped; the
    /// registers and memory are then those of the end of the call (up to
    /// [`outcrop_jit::RECORDS`] instructions further), which ends the run anyway.
    fn drain<O: Observer>(&mut self, obs: &mut O) -> Control {
        if !(O::CLASSES || O::BRANCHES || O::BLOCKS) {
            return Control::Continue;
        }
        let Some(jit) = self.jit.take() else {
            return Control::Continue;
        };
        let mut control = Control::Continue;
        let mut instret = self.instret;
        for r in jit.records() {
            let id = r.tag();
            let Some(b) = self.blocks.blocks.get(id as usize) else {
                continue;
            };
            instret += u64::from(r.retired());
            control = match r.how() {
                Record::END => self.block_hooks(id, r.next, None, r.sp, obs),
                Record::TAKEN => self.block_hooks(id, r.next, Some(b.taken_kind), r.sp, obs),
                Record::EXIT => self.block_hooks(id, r.next, Some(BranchKind::Cond), r.sp, obs),
                _ => {
                    // stopped early: the micro-ops of the instructions that retired
                    let done = self.blocks.uops_retired(b, r.retired());
                    self.cold_hooks(id, false, Some(done), obs)
                }
            };
            if control == Control::Stop {
                self.instret = instret;
                self.pc = r.next;
                break;
            }
        }
        self.jit = Some(jit);
        control
    }
}

impl super::BlockCache {
    /// One run of block `tag` for functional warming ([`Observer::warm`]): to its end, going
    /// on at `next`, or its first `retired` instructions; its accesses' addresses are taken
    /// from the front of `addrs`.
    #[inline]
    fn warm_run<O: Observer>(
        &self,
        tag: u32,
        retired: Option<u32>,
        next: u64,
        addrs: &mut &[u64],
        obs: &mut O,
    ) -> Control {
        let Some(b) = self.blocks.get(tag as usize) else {
            return Control::Continue;
        };
        let (mut lens, mut sizes) = (self.block_lens(b), self.block_sizes(b));
        let (end, accesses) = match retired {
            None => (b.warm_end, usize::from(b.accesses)),
            Some(n) => {
                let n = (n as usize).min(lens.len());
                (lens, sizes) = (&lens[..n], &sizes[..n.min(sizes.len())]);
                (None, sizes.iter().filter(|&&s| s != 0).count())
            }
        };
        let (mine, rest) = addrs.split_at(accesses.min(addrs.len()));
        *addrs = rest;
        obs.warm(&WarmRun {
            start: b.start,
            lens,
            sizes,
            addrs: mine,
            end,
            next,
        })
    }

    /// Micro-ops of block `b` whose instructions are among the first `retired` of it.
    fn uops_retired(&self, b: &Block, retired: u32) -> usize {
        let (first, count) = (b.first as usize, b.count as usize);
        self.meta
            .get(first..first + count)
            .unwrap_or_default()
            .iter()
            .take_while(|m| u32::from(m.n) < retired)
            .count()
    }

    /// Before a flush: keeps the counts of the compiled blocks it drops (their ids are
    /// reused), for the next [`Machine::drain_counts`].
    pub(in crate::machine) fn keep_counts(&mut self, jit: Option<&mut Tier>) {
        let (true, Some(j)) = (self.counting, jit) else {
            return;
        };
        let mut kept = Vec::new();
        j.take_counts(|slot, n| {
            if let Some(b) = self.blocks.get(slot as usize) {
                kept.push(((b.start, Box::from(self.block_lens(b)), b.classes), n));
            }
        });
        for (key, n) in kept {
            *self.flushed_counts.entry(key).or_insert(0) += n;
        }
    }
}

impl Machine {
    /// [`Machine::drain`] for counted blocks ([`BlockCache::counting`]): the records are
    /// only those of transfers out of the observer's range and of blocks that stopped early,
    /// each with the budget left after it (`budget` when the call began; `retired` in all).
    /// Between two records every instruction retired in counted blocks of the current range:
    /// the observer hears how many ([`Observer::retired`]), then the transfer
    /// ([`Observer::left`]) or, for a block that stopped early, that block's hooks for the
    /// instructions it retired.
    fn drain_counted<O: Observer>(
        &mut self,
        (pc, budget, retired): (u64, u64, u64),
        obs: &mut O,
    ) -> (Control, bool) {
        if !O::COUNTS {
            return (Control::Continue, false);
        }
        let Some(jit) = self.jit.take() else {
            return (Control::Continue, false);
        };
        let mut partial = false;
        // where the instructions since the last record began, and the budget left then
        let (mut at, mut left) = (pc, budget);
        for r in jit.records() {
            let id = r.tag();
            let Some(b) = self.blocks.blocks.get(id as usize) else {
                continue;
            };
            let (end, taken_kind) = (b.end, b.taken_kind);
            let since = left.saturating_sub(r.budget);
            left = r.budget;
            let control = match r.how() {
                Record::END => obs
                    .retired(at, since)
                    .and(obs.left(end, r.next, None, r.sp)),
                Record::TAKEN => {
                    obs.retired(at, since)
                        .and(obs.left(end, r.next, Some(taken_kind), r.sp))
                }
                // a superblock's conditional branch out of the range
                Record::EXIT => {
                    obs.retired(at, since)
                        .and(obs.left(end, r.next, Some(BranchKind::Cond), r.sp))
                }
                _ => {
                    // stopped early: the counted blocks before it, then its own instructions
                    // as the engine reports them
                    let prefix = u64::from(r.retired());
                    let done = self.blocks.uops_retired(b, r.retired());
                    let start = b.start;
                    let control = obs.retired(at, since.saturating_sub(prefix));
                    // (the last record of its call) the engine goes on with this basic block
                    partial = true;
                    if O::BLOCKS && self.blocks.trace {
                        // its instructions add to the basic block the trace left open
                        if self.block_len == 0 {
                            self.block_start = start;
                        }
                    } else if O::BLOCKS {
                        self.block_start = start;
                        self.block_len = 0;
                        self.block_lens.clear();
                    }
                    control.and(self.cold_hooks(id, false, Some(done), obs))
                }
            };
            at = r.next;
            if control == Control::Stop {
                self.instret += budget - r.budget;
                self.pc = r.next;
                self.jit = Some(jit);
                return (control, partial);
            }
        }
        self.jit = Some(jit);
        // the instructions after the last record
        let control = obs.retired(at, left.saturating_sub(budget - retired));
        (control, partial)
    }

    /// Hands the observer the counts of the blocks compiled code ran to their end since the
    /// last call ([`Observer::counted`]), with those a flush of the block cache kept.
    pub(in crate::machine) fn drain_counts<O: Observer>(&mut self, obs: &mut O) {
        if !O::COUNTS {
            return;
        }
        // (in the order of their starts, so that what the observer hears does not depend on
        // the map's)
        let mut flushed: Vec<_> = std::mem::take(&mut self.blocks.flushed_counts)
            .into_iter()
            .collect();
        flushed.sort_unstable();
        for ((start, lens, classes), count) in flushed {
            let _ = obs.counted(start, &lens, &classes, count);
        }
        let Some(jit) = self.jit.as_deref_mut() else {
            return;
        };
        let mut counts = Vec::new();
        jit.take_counts(|slot, n| counts.push((slot, n)));
        for (slot, n) in counts {
            if let Some(b) = self.blocks.blocks.get(slot as usize) {
                let _ = obs.counted(b.start, self.blocks.block_lens(b), &b.classes, n);
            }
        }
    }
}

/// An FP instruction packed for [`ir::Op::Float`]: its opcode's index in
/// [`crate::inst::TABLE`] and its register and rounding-mode fields, a byte each (an FP
/// CSR access adds the CSR's number in bits 52–63).
pub(crate) fn pack_float(op: Op, rd: u8, rs1: u8, rs2: u8, rs3: u8, rm: u8) -> u64 {
    op as u64
        | u64::from(rd & 31) << 16
        | u64::from(rs1 & 31) << 24
        | u64::from(rs2 & 31) << 32
        | u64::from(rs3 & 31) << 40
        | u64::from(rm & 7) << 48
}

/// A vector instruction packed for [`ir::Op::Float`]: its opcode's index in bits 0–15 (a
/// row whose semantics is [`Sem::Vector`]) and its raw bits in 16–47; the host's memory runs
/// it on the vector unit it holds while compiled code runs ([`packed_vector`]).
pub(crate) fn pack_vector(op: Op, raw: u32) -> u64 {
    op as u64 | u64::from(raw) << 16
}

/// The raw bits of a [`pack_vector`]ed instruction, or `None` for another packed one.
pub(crate) fn packed_vector(inst: u64) -> Option<u32> {
    let &(op, ..) = crate::inst::TABLE.get((inst & 0xffff) as usize)?;
    (op.sem() == Sem::Vector).then_some((inst >> 16) as u32)
}

/// Runs a [`pack_float`]ed instruction on `(x, f)` and `fcsr` (fflags in bits 0–4, frm in
/// bits 5–7) with the machine's one FP definition; false for anything else or an invalid
/// rounding mode.
pub(crate) fn run_float(inst: u64, x: &mut [u64; 32], f: &mut [u64; 32], fcsr: &mut u64) -> bool {
    let Some(&(op, ..)) = crate::inst::TABLE.get((inst & 0xffff) as usize) else {
        return false;
    };
    let field = |at: u32| (inst >> at) as u8;
    let (rd, rs1, rs2, rs3, rm) = (field(16), field(24), field(32), field(40), field(48));
    if op.sem() == Sem::Csr {
        let num = (inst >> 52) as u32;
        if !(1..=3).contains(&num) {
            return false;
        }
        let xs1 = x[usize::from(rs1 & 31)];
        let old = crate::machine::fcsr_access(op, num, (rs1 & 31, xs1), fcsr);
        x[usize::from(rd & 31)] = old;
        return true;
    }
    if op.sem() != Sem::Float {
        return false;
    }
    // the double-precision arithmetic compilers emit most, straight to the soft-float
    // functions as the block engine's specialised micro-ops call them (nbody spent 60% of its
    // run in the general dispatch below)
    let (a, b, c) = (
        f[usize::from(rs1 & 31)],
        f[usize::from(rs2 & 31)],
        f[usize::from(rs3 & 31)],
    );
    let frm = ((*fcsr >> 5) & 7) as u8;
    let mut fl = 0u8;
    let fast = |rm_field: u8| {
        crate::fpu::Rm::from_bits(u32::from(if rm_field == 7 { frm } else { rm_field }))
    };
    let v = match op {
        Op::FaddD
        | Op::FsubD
        | Op::FmulD
        | Op::FdivD
        | Op::FmaddD
        | Op::FmsubD
        | Op::FnmsubD
        | Op::FnmaddD => {
            let Some(r) = fast(rm) else {
                return false;
            };
            Some(match op {
                Op::FaddD => crate::fpu::f64_add(a, b, r, &mut fl),
                Op::FsubD => crate::fpu::f64_sub(a, b, r, &mut fl),
                Op::FmulD => crate::fpu::f64_mul(a, b, r, &mut fl),
                Op::FdivD => crate::fpu::f64_div(a, b, r, &mut fl),
                Op::FmaddD => crate::fpu::f64_madd(a, b, c, r, &mut fl),
                Op::FmsubD => crate::fpu::f64_msub(a, b, c, r, &mut fl),
                Op::FnmsubD => crate::fpu::f64_nmsub(a, b, c, r, &mut fl),
                _ => crate::fpu::f64_nmadd(a, b, c, r, &mut fl),
            })
        }
        _ => None,
    };
    if let Some(v) = v {
        f[usize::from(rd & 31)] = v;
        *fcsr |= u64::from(fl & 0x1f);
        return true;
    }
    let xs1 = x[usize::from(rs1 & 31)];
    let mut fflags = (*fcsr & 0x1f) as u8;
    let frm = ((*fcsr >> 5) & 7) as u8;
    let done =
        crate::machine::float_exec(op, (rd, rs1, rs2, rs3, rm), xs1, (x, f), &mut fflags, frm);
    *fcsr = (*fcsr & !0x1f) | u64::from(fflags & 0x1f);
    done.is_some()
}

/// The kind of the taken branch or jump `u` (a block's last micro-op) as the block engine
/// reports it ([`BranchKind::Cond`] for anything but a jump).
pub(super) fn taken_kind(u: &Uop) -> BranchKind {
    match u.k {
        K::Jal if matches!(u.rd & 31, 1 | 5) => BranchKind::Call,
        K::Jal => BranchKind::Jump,
        K::Jalr => jalr_kind(usize::from(u.rd & 31), u.rs1, u.aux),
        K::AuipcJalr => jalr_kind(usize::from(u.rs2 & 31), u.rd, u.aux),
        _ => BranchKind::Cond,
    }
}

// the ring compiled code writes holds as many branches as an observer of it is promised
const _: () = assert!(outcrop_events::record::RING_ENTRIES == outcrop_jit::RING);
