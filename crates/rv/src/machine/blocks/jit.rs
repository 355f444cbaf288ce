//! The compiling tier's side in the machine (docs/machine.md, "The compiling tier"): which
//! blocks are hot, the units formed from them, their translation into `outcrop_jit::ir`, and
//! the calls into compiled code from the block engine's loop. No `unsafe` here: compiled code
//! runs through `outcrop_jit`'s audited module.

use super::{Block, Uop, K};
use crate::inst::Op;
use crate::machine::{jalr_kind, Machine};
use outcrop_events::record::{BranchKind, Control, Observer};
use outcrop_jit::ir::Record;
use outcrop_jit::ir::{self, Alu, AmoOp, Cond, FMove, Src, Term};
use outcrop_jit::{Exit, Jit};
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
/// A block that ends early for the engine is compiled only if at least this many of its
/// instructions run compiled first (`matmul`, whose loop is two FP loads and an FMA, ran 35%
/// slower compiled than on the block engine without this).
const MIN_PREFIX: u32 = 8;
/// [`Block::jit`]: never compiled here (its first instruction is not compiled).
pub(super) const NEVER: u32 = u32::MAX;

/// The compiling tier of a machine (created on first use).
pub(in crate::machine) type Tier = Jit<crate::memory::Memory>;

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

fn cond(k: K) -> Option<Cond> {
    Some(match k {
        K::Beq | K::Beqz => Cond::Eq,
        K::Bne | K::Bnez => Cond::Ne,
        K::Blt => Cond::Lt,
        K::Bge => Cond::Ge,
        K::Bltu => Cond::Ltu,
        K::Bgeu => Cond::Geu,
        _ => return None,
    })
}

fn alu_imm(k: K) -> Option<Alu> {
    Some(match k {
        K::Addi => Alu::Add,
        K::Slti => Alu::Slt,
        K::Sltiu => Alu::Sltu,
        K::Xori => Alu::Xor,
        K::Ori => Alu::Or,
        K::Andi => Alu::And,
        K::Slli => Alu::Sll,
        K::Srli => Alu::Srl,
        K::Srai => Alu::Sra,
        K::Addiw => Alu::Addw,
        K::Slliw => Alu::Sllw,
        K::Srliw => Alu::Srlw,
        K::Sraiw => Alu::Sraw,
        _ => return None,
    })
}

fn alu_reg(k: K) -> Option<Alu> {
    Some(match k {
        K::Add => Alu::Add,
        K::Sub => Alu::Sub,
        K::Sll => Alu::Sll,
        K::Slt => Alu::Slt,
        K::Sltu => Alu::Sltu,
        K::Xor => Alu::Xor,
        K::Srl => Alu::Srl,
        K::Sra => Alu::Sra,
        K::Or => Alu::Or,
        K::And => Alu::And,
        K::Addw => Alu::Addw,
        K::Subw => Alu::Subw,
        K::Sllw => Alu::Sllw,
        K::Srlw => Alu::Srlw,
        K::Sraw => Alu::Sraw,
        K::Mul => Alu::Mul,
        K::Mulw => Alu::Mulw,
        K::Sh1add => Alu::Sh1add,
        K::Sh2add => Alu::Sh2add,
        K::Sh3add => Alu::Sh3add,
        K::AddUw => Alu::AddUw,
        K::Andn => Alu::Andn,
        K::CzeroEqz => Alu::CzeroEqz,
        K::CzeroNez => Alu::CzeroNez,
        _ => return None,
    })
}

/// The M-extension operations the block engine leaves to `step`, compiled here.
fn alu_generic(op: Op) -> Option<Alu> {
    Some(match op {
        Op::Mulh => Alu::Mulh,
        Op::Mulhu => Alu::Mulhu,
        Op::Mulhsu => Alu::Mulhsu,
        Op::Div => Alu::Div,
        Op::Divu => Alu::Divu,
        Op::Rem => Alu::Rem,
        Op::Remu => Alu::Remu,
        Op::Divw => Alu::Divw,
        Op::Divuw => Alu::Divuw,
        Op::Remw => Alu::Remw,
        Op::Remuw => Alu::Remuw,
        _ => return None,
    })
}

/// Atomic memory operations: the operation and the size.
fn amo(op: Op) -> Option<(AmoOp, u8)> {
    Some(match op {
        Op::AmoswapW => (AmoOp::Swap, 4),
        Op::AmoaddW => (AmoOp::Add, 4),
        Op::AmoxorW => (AmoOp::Xor, 4),
        Op::AmoandW => (AmoOp::And, 4),
        Op::AmoorW => (AmoOp::Or, 4),
        Op::AmominW => (AmoOp::Min, 4),
        Op::AmomaxW => (AmoOp::Max, 4),
        Op::AmominuW => (AmoOp::Minu, 4),
        Op::AmomaxuW => (AmoOp::Maxu, 4),
        Op::AmoswapD => (AmoOp::Swap, 8),
        Op::AmoaddD => (AmoOp::Add, 8),
        Op::AmoxorD => (AmoOp::Xor, 8),
        Op::AmoandD => (AmoOp::And, 8),
        Op::AmoorD => (AmoOp::Or, 8),
        Op::AmominD => (AmoOp::Min, 8),
        Op::AmomaxD => (AmoOp::Max, 8),
        Op::AmominuD => (AmoOp::Minu, 8),
        Op::AmomaxuD => (AmoOp::Maxu, 8),
        _ => return None,
    })
}

fn load_kind(k: K) -> Option<(u8, bool)> {
    Some(match k {
        K::Lb => (1, true),
        K::Lh => (2, true),
        K::Lw => (4, true),
        K::Ld => (8, false),
        K::Lbu => (1, false),
        K::Lhu => (2, false),
        K::Lwu => (4, false),
        _ => return None,
    })
}

fn store_size(k: K) -> Option<u8> {
    Some(match k {
        K::Sb => 1,
        K::Sh => 2,
        K::Sw => 4,
        K::Sd => 8,
        _ => return None,
    })
}

impl Machine {
    /// Block `id` of the cache as a compiled block (compiled up to the first instruction this
    /// tier leaves to the engine).
    fn ir_block(&self, b: &Block, id: u32, uops: &[Uop]) -> ir::Block {
        let (first, count) = (b.first as usize, b.count as usize);
        // basic blocks (an observer reads block-level streams): every run is recorded
        let record = (!self.blocks.extended).then_some(id);
        let mut ops = Vec::new();
        let block = uops.get(first..first + count).unwrap_or_default();
        let meta = self
            .blocks
            .meta
            .get(first..first + count)
            .unwrap_or_default();
        for (k, (u, m)) in block.iter().zip(meta).enumerate() {
            let pc = b.start + u64::from(m.off);
            let engine = |n: u16| {
                (
                    u32::from(n),
                    Term::Engine {
                        pc,
                        n: u32::from(n),
                    },
                )
            };
            let last = k + 1 == count;
            let (rd, rs1, rs2) = (u.rd & 31, u.rs1 & 31, u.rs2 & 31);
            let op = match u.k {
                K::Nop => None,
                K::Li => Some(ir::Op::Li { rd, v: u.imm }),
                K::Mv => Some(ir::Op::Alu {
                    op: Alu::Add,
                    rd,
                    rs1,
                    b: Src::Imm(0),
                }),
                k if alu_imm(k).is_some() => alu_imm(k).map(|op| ir::Op::Alu {
                    op,
                    rd,
                    rs1,
                    b: Src::Imm(u.imm),
                }),
                k if alu_reg(k).is_some() => alu_reg(k).map(|op| ir::Op::Alu {
                    op,
                    rd,
                    rs1,
                    b: Src::Reg(rs2),
                }),
                k if load_kind(k).is_some() => load_kind(k).map(|(size, signed)| ir::Op::Load {
                    rd,
                    rs1,
                    off: u.imm as i64,
                    size,
                    signed,
                    pc,
                    n: u32::from(m.n),
                }),
                k if store_size(k).is_some() => store_size(k).map(|size| ir::Op::Store {
                    rs1,
                    rs2,
                    off: u.imm as i64,
                    size,
                    pc,
                    len: (m.next_off - m.off) as u8,
                    n: u32::from(m.n),
                }),
                K::Flw | K::Fld => Some(ir::Op::FLoad {
                    rd,
                    rs1,
                    off: u.imm as i64,
                    size: if u.k == K::Flw { 4 } else { 8 },
                    pc,
                    n: u32::from(m.n),
                }),
                K::Fsw | K::Fsd => Some(ir::Op::FStore {
                    rs1,
                    rs2,
                    off: u.imm as i64,
                    size: if u.k == K::Fsw { 4 } else { 8 },
                    pc,
                    len: (m.next_off - m.off) as u8,
                    n: u32::from(m.n),
                }),
                K::FmvXD | K::FmvDX | K::FsgnjD | K::FsgnjnD | K::FsgnjxD => {
                    let op = match u.k {
                        K::FmvXD => FMove::XFromD,
                        K::FmvDX => FMove::DFromX,
                        K::FsgnjD => FMove::SgnjD,
                        K::FsgnjnD => FMove::SgnjnD,
                        _ => FMove::SgnjxD,
                    };
                    Some(ir::Op::FMove { op, rd, rs1, rs2 })
                }
                K::Generic => {
                    let inst = self.blocks.generic.get(u.aux as usize).map(|g| g.0);
                    let alu = inst.and_then(|i| alu_generic(i.op).map(|op| (op, i)));
                    let atomic = inst.and_then(|i| amo(i.op).map(|a| (a, i)));
                    match (alu, atomic) {
                        (Some((op, i)), _) if i.rd & 31 != 0 => Some(ir::Op::Alu {
                            op,
                            rd: i.rd & 31,
                            rs1: i.rs1 & 31,
                            b: Src::Reg(i.rs2 & 31),
                        }),
                        (_, Some(((op, size), i))) => Some(ir::Op::Amo {
                            op,
                            rd: i.rd & 31,
                            rs1: i.rs1 & 31,
                            rs2: i.rs2 & 31,
                            size,
                            pc,
                            n: u32::from(m.n),
                        }),
                        _ => {
                            let (insns, term) = engine(m.n);
                            return ir::Block {
                                start: b.start,
                                insns,
                                ops,
                                term,
                                record,
                            };
                        }
                    }
                }
                k if cond(k).is_some() && !last => cond(k).map(|c| ir::Op::Exit {
                    cond: c,
                    rs1,
                    rs2: if matches!(k, K::Beqz | K::Bnez) {
                        0
                    } else {
                        rs2
                    },
                    target: u.imm,
                    n: u.aux as u32,
                }),
                k if cond(k).is_some() => {
                    let c = cond(k).unwrap_or(Cond::Eq);
                    return ir::Block {
                        start: b.start,
                        insns: b.insns,
                        ops,
                        record,
                        term: Term::Branch {
                            cond: c,
                            rs1,
                            rs2: if matches!(k, K::Beqz | K::Bnez) {
                                0
                            } else {
                                rs2
                            },
                            taken: u.imm,
                            fall: b.end,
                        },
                    };
                }
                K::Jal => {
                    return ir::Block {
                        start: b.start,
                        insns: b.insns,
                        ops,
                        record,
                        term: Term::Jal {
                            rd,
                            link: b.end,
                            target: u.imm,
                        },
                    }
                }
                K::Jalr => {
                    return ir::Block {
                        start: b.start,
                        insns: b.insns,
                        ops,
                        record,
                        term: Term::Jalr {
                            rd,
                            rs1,
                            off: u.imm as i64,
                            link: b.end,
                        },
                    }
                }
                K::AuipcJalr => {
                    // auipc rd, hi; jalr rs2, lo(rd): both writes, the link last
                    ops.push(ir::Op::Li { rd, v: u.imm });
                    return ir::Block {
                        start: b.start,
                        insns: b.insns,
                        ops,
                        record,
                        term: Term::Jal {
                            rd: rs2,
                            link: b.end,
                            target: u.imm.wrapping_add(u.aux as i64 as u64) & !1,
                        },
                    };
                }
                // FP, bit manipulation beyond the common forms, brr, system calls: the engine
                _ => {
                    let (insns, term) = engine(m.n);
                    return ir::Block {
                        start: b.start,
                        insns,
                        ops,
                        term,
                        record,
                    };
                }
            };
            ops.extend(op);
        }
        ir::Block {
            start: b.start,
            insns: b.insns,
            ops,
            record,
            term: Term::Fall { next: b.end },
        }
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
    /// reaches by known targets, breadth first, at most [`MAX_UNIT_BLOCKS`].
    pub(super) fn compile_unit(&mut self, id: u32, uops: &[Uop]) {
        let Some(entry) = self.blocks.blocks.get(id as usize) else {
            return;
        };
        let entry_ir = self.ir_block(entry, id, uops);
        let mark = |m: &mut Machine, v: u32| {
            if let Some(b) = m.blocks.blocks.get_mut(id as usize) {
                b.jit = v;
            }
        };
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
                let ir = self.ir_block(nb, nid, uops);
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
        let Some(jit) = self.jit_tier() else {
            mark(self, NEVER);
            return;
        };
        if jit.code_bytes() > max {
            jit.flush();
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
        let budget = self
            .stop_at
            .saturating_sub(self.instret.saturating_add(self.traps));
        let recording = !self.blocks.extended;
        let Some(jit) = self.jit.as_deref_mut() else {
            return After::Engine(pc);
        };
        let regs = (&mut self.x, &mut self.f);
        let (exit, retired) = if recording {
            jit.run_recording(&mut self.mem, regs, pc, budget)
        } else {
            jit.run(&mut self.mem, regs, pc, budget)
        };
        if recording && self.drain(obs) == Control::Stop {
            return After::Stopped;
        }
        self.instret += retired;
        match exit {
            Exit::Miss(next) => After::Go(next),
            Exit::Engine(at) => After::Engine(at),
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
                    let (first, count) = (b.first as usize, b.count as usize);
                    let meta = self
                        .blocks
                        .meta
                        .get(first..first + count)
                        .unwrap_or_default();
                    let done = meta
                        .iter()
                        .take_while(|m| u32::from(m.n) < r.retired())
                        .count();
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
