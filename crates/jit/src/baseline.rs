//! The baseline tier: a [`Unit`] straight to x86-64 machine code from fixed templates, one
//! pass, no IR and no register allocator (safe code: it only produces bytes).
//!
//! Cranelift compiles a unit in about 250 µs, which is why a block had to run 256 times on
//! the block engine before it was worth compiling (docs/machine.md, "The compiling tier").
//! This tier compiles the same unit in a few microseconds, so every block that runs a few
//! times runs compiled. Its code keeps guest registers in the [`Context`](crate::Context)
//! (each operation loads its sources and stores its result, as the engine does) and reaches
//! the host only through the context: helper addresses, the TLBs and the jump cache are read
//! from it, so the bytes of a unit depend on the unit alone and can be kept across runs.
//!
//! A unit here follows Cranelift's `tail` convention for units (the context in `rdi`, `rbx`
//! restored, the stack as on entry when it leaves), so baseline and Cranelift units chain
//! into each other through the jump cache and are entered by the same trampoline.
//!
//! **Leaving a unit.** A transfer to a known pc outside the unit is a *chain site*: a
//! `jmp rel32` that first falls through to a stub (the pc into `rax`, then the jump cache) and
//! is patched to the target's code once the target is compiled ([`Compiled::sites`]; the
//! tier patches, `exec.rs`). An indirect jump looks its target up in the jump cache inline;
//! a miss returns to the engine with [`reason::MISS`].
//!
//! **Memory safety of generated code** (the contract `exec.rs` relies on), as in
//! `codegen.rs`: every guest load and store goes through a TLB entry whose tag equals the
//! access's page address with its alignment bits (so it lies wholly in the entry's 4096-byte
//! frame) or through a host helper; no other host address is computed from a guest value.

use crate::codegen::reason;
use crate::exec::{layout, JUMP_CACHE_ENTRIES, TLB_ENTRIES};
use crate::ir::{Alu, AmoOp, Block, Cond, FMove, Op, Src, Term, Unit};
use iced_x86::code_asm::*;
use iced_x86::{BlockEncoderOptions, Code, Instruction};
use std::collections::HashMap;

/// A unit compiled by this tier.
pub(crate) struct Compiled {
    /// Its entry pc.
    pub entry: u64,
    /// Guest instructions in it (each block's count once).
    pub insns: u64,
    /// The machine code (position-independent: no absolute address in it).
    pub bytes: Vec<u8>,
    /// Chain sites: the offset of each `jmp rel32` (its opcode byte) and the guest pc it
    /// goes to.
    pub sites: Vec<(u32, u64)>,
}

/// Whether this tier compiles `unit`: one with no observer's records, counters, ring or
/// trace (those are Cranelift's), on an x86-64 host.
pub(crate) fn supports(unit: &Unit) -> bool {
    cfg!(target_arch = "x86_64")
        && unit.blocks.iter().all(|b| {
            b.record.is_none()
                && b.counted.is_none()
                && b.ring.is_none()
                && !b.trace
                && !b.ops.iter().any(|op| matches!(op, Op::Next { .. }))
        })
}

/// A path emitted after the unit's straight-line code.
enum Cold {
    /// The budget does not cover the block at `pc`.
    Budget { at: CodeLabel, pc: u64 },
    /// A load the TLB missed: the host performs it; a fault leaves at `pc`.
    Load {
        at: CodeLabel,
        done: CodeLabel,
        kind: u32,
        pc: u64,
        unretired: u32,
    },
    /// A store the TLB missed.
    Store {
        at: CodeLabel,
        done: CodeLabel,
        size: u8,
        value: (bool, u8),
        pc: u64,
        len: u8,
        unretired: u32,
    },
    /// An AMO whose page is not in the write TLB: the host lends it, or the engine runs it.
    Amo {
        at: CodeLabel,
        again: CodeLabel,
        size: u8,
        pc: u64,
        unretired: u32,
    },
    /// A conditional branch out of the middle of a block.
    Taken {
        at: CodeLabel,
        target: u64,
        unretired: u32,
    },
}

struct Gen {
    a: CodeAssembler,
    heads: HashMap<u64, CodeLabel>,
    cold: Vec<Cold>,
    /// Chain sites: the label of each `jmp rel32` and its target.
    sites: Vec<(CodeLabel, u64)>,
    /// Shared tails: the jump-cache lookup (`rdi` the context, `rax` the pc) and the exit
    /// (`rbx` the context, `rax` the pc, `rcx` the reason).
    chain: CodeLabel,
    exit: CodeLabel,
}

type R = Result<(), IcedError>;

/// The context's register `r` (integer or FP file).
fn xreg(r: u8) -> AsmMemoryOperand {
    qword_ptr(rbx + layout::x(usize::from(r & 31)) as i32)
}
fn freg(r: u8) -> AsmMemoryOperand {
    qword_ptr(rbx + layout::f(usize::from(r & 31)) as i32)
}
fn ctx(off: usize) -> AsmMemoryOperand {
    qword_ptr(rbx + off as i32)
}

/// Whether `v` is a sign-extended 32-bit immediate.
fn imm32(v: u64) -> Option<i32> {
    i32::try_from(v as i64).ok()
}

/// Compiles `unit` (which [`supports`] accepts).
pub(crate) fn compile(unit: &Unit) -> Result<Compiled, String> {
    if unit.blocks.is_empty() {
        return Err("empty unit".into());
    }
    let mut g = Gen {
        a: CodeAssembler::new(64).map_err(|e| e.to_string())?,
        heads: HashMap::new(),
        cold: Vec::new(),
        sites: Vec::new(),
        chain: CodeLabel::default(),
        exit: CodeLabel::default(),
    };
    g.chain = g.a.create_label();
    g.exit = g.a.create_label();
    for blk in &unit.blocks {
        let l = g.a.create_label();
        g.heads.entry(blk.start).or_insert(l);
    }
    g.unit(unit).map_err(|e| e.to_string())?;
    let result =
        g.a.assemble_options(0, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
            .map_err(|e| e.to_string())?;
    let mut sites = Vec::with_capacity(g.sites.len());
    for (label, target) in &g.sites {
        let at = result.label_ip(label).map_err(|e| e.to_string())?;
        sites.push((at as u32, *target));
    }
    Ok(Compiled {
        entry: unit.entry(),
        insns: unit.blocks.iter().map(|b| u64::from(b.insns)).sum(),
        bytes: result.inner.code_buffer,
        sites,
    })
}

impl Gen {
    fn unit(&mut self, unit: &Unit) -> R {
        // the context lives in rbx (callee-saved, so helper calls keep it); pushing it also
        // aligns the stack for those calls
        self.a.push(rbx)?;
        self.a.mov(rbx, rdi)?;
        for blk in &unit.blocks {
            self.block(blk)?;
        }
        let cold = std::mem::take(&mut self.cold);
        for c in cold {
            self.cold(c)?;
        }
        self.tails()
    }

    /// Integer register `r` into `dst` (x0 reads 0).
    fn get(&mut self, dst: AsmRegister64, r: u8) -> R {
        if r & 31 == 0 {
            self.konst(dst, 0)
        } else {
            self.a.mov(dst, xreg(r))
        }
    }

    /// `src` into integer register `r` (a write to x0 is dropped).
    fn set(&mut self, r: u8, src: AsmRegister64) -> R {
        if r & 31 == 0 {
            return Ok(());
        }
        self.a.mov(xreg(r), src)
    }

    /// A constant into integer register `r`.
    fn set_const(&mut self, r: u8, v: u64) -> R {
        if r & 31 == 0 {
            return Ok(());
        }
        match imm32(v) {
            Some(i) => self.a.mov(xreg(r), i),
            None => {
                self.a.mov(rax, v)?;
                self.a.mov(xreg(r), rax)
            }
        }
    }

    fn konst(&mut self, dst: AsmRegister64, v: u64) -> R {
        match imm32(v) {
            // mov r/m64, imm32 (sign-extended): 7 bytes where imm64 takes 10
            Some(i) => self.a.add_instruction(Instruction::with2(
                Code::Mov_rm64_imm32,
                iced_x86::Register::from(dst),
                i,
            )?),
            None => self.a.mov(dst, v),
        }
    }

    fn block(&mut self, blk: &Block) -> R {
        let mut head = self.heads[&blk.start];
        self.a.set_label(&mut head)?;
        self.a.zero_bytes()?;
        // the budget check: the block runs whole, or the engine takes over before it
        let short = self.a.create_label();
        self.a.cmp(ctx(layout::BUDGET), blk.insns as i32)?;
        self.a.jb(short)?;
        self.cold.push(Cold::Budget {
            at: short,
            pc: blk.start,
        });
        self.a.sub(ctx(layout::BUDGET), blk.insns as i32)?;
        for op in &blk.ops {
            self.op(op, blk)?;
        }
        match blk.term {
            Term::Fall { next } => self.goto(next),
            Term::Branch {
                cond,
                rs1,
                rs2,
                taken,
                fall,
            } => {
                let t = self.a.create_label();
                self.compare(cond, rs1, rs2, t)?;
                self.goto(fall)?;
                let mut t = t;
                self.a.set_label(&mut t)?;
                self.a.zero_bytes()?;
                self.goto(taken)
            }
            Term::Jal { rd, link, target } => {
                self.set_const(rd, link)?;
                self.goto(target)
            }
            Term::Jalr { rd, rs1, off, link } => {
                // the target before the link (rd may be rs1)
                self.get(rax, rs1)?;
                if off != 0 {
                    self.a.add(rax, off as i32)?;
                }
                self.a.and(rax, -2)?;
                if rd & 31 != 0 {
                    match imm32(link) {
                        Some(i) => self.a.mov(xreg(rd), i)?,
                        None => {
                            self.a.mov(rcx, link)?;
                            self.a.mov(xreg(rd), rcx)?;
                        }
                    }
                }
                self.a.mov(rdi, rbx)?;
                self.a.pop(rbx)?;
                self.a.jmp(self.chain)
            }
            Term::Engine { pc, .. } => self.leave(pc, reason::ENGINE, 0),
        }
    }

    /// Compares (rs1, rs2) and jumps to `to` if `cond` holds.
    fn compare(&mut self, cond: Cond, rs1: u8, rs2: u8, to: CodeLabel) -> R {
        self.get(rax, rs1)?;
        if rs2 & 31 == 0 {
            self.a.test(rax, rax)?;
        } else {
            self.a.cmp(rax, xreg(rs2))?;
        }
        match cond {
            Cond::Eq => self.a.je(to),
            Cond::Ne => self.a.jne(to),
            Cond::Lt => self.a.jl(to),
            Cond::Ge => self.a.jge(to),
            Cond::Ltu => self.a.jb(to),
            Cond::Geu => self.a.jae(to),
        }
    }

    /// Goes to `pc`: a jump within the unit, else a chain site.
    fn goto(&mut self, pc: u64) -> R {
        if let Some(&h) = self.heads.get(&pc) {
            return self.a.jmp(h);
        }
        self.a.mov(rdi, rbx)?;
        self.a.pop(rbx)?;
        let mut site = self.a.create_label();
        self.a.set_label(&mut site)?;
        self.a.zero_bytes()?;
        // jmp rel32 to the next instruction until the tier patches it
        self.a.db(&[0xe9, 0, 0, 0, 0])?;
        self.sites.push((site, pc));
        self.konst(rax, pc)?;
        self.a.jmp(self.chain)
    }

    /// Leaves with `pc` and `reason`, giving back `unretired` instructions of the budget.
    fn leave(&mut self, pc: u64, why: u64, unretired: u32) -> R {
        if unretired > 0 {
            self.a.add(ctx(layout::BUDGET), unretired as i32)?;
        }
        self.konst(rax, pc)?;
        self.a.mov(ecx, why as u32)?;
        self.a.jmp(self.exit)
    }

    /// `rcx` ← the TLB entry for the address in `rax` (`tlb`: the context's offset of the read
    /// or write TLB); jumps to `miss` unless it holds an aligned `size`-byte access there.
    /// Clobbers `rdx`.
    fn probe(&mut self, tlb: usize, size: u8, miss: CodeLabel) -> R {
        self.a.mov(rcx, rax)?;
        self.a.shr(rcx, 12)?;
        self.a.and(ecx, (TLB_ENTRIES - 1) as u32)?;
        self.a.shl(ecx, 4)?;
        self.a.add(rcx, ctx(tlb))?;
        self.a.mov(rdx, rax)?;
        self.a.and(rdx, -4096 | (i32::from(size) - 1))?;
        self.a.cmp(rdx, qword_ptr(rcx))?;
        self.a.jne(miss)?;
        // rdx ← the host address
        self.a.mov(edx, eax)?;
        self.a.and(edx, 0xfff)?;
        self.a.add(rdx, qword_ptr(rcx + 8))
    }

    /// `rax` ← x[rs1] + off.
    fn address(&mut self, rs1: u8, off: i64) -> R {
        self.get(rax, rs1)?;
        if off != 0 {
            self.a.add(rax, off as i32)?;
        }
        Ok(())
    }

    fn op(&mut self, op: &Op, blk: &Block) -> R {
        match *op {
            Op::Li { rd, v } => self.set_const(rd, v),
            Op::Alu { op, rd, rs1, b } => self.alu(op, rd, rs1, b),
            Op::Load {
                rd,
                rs1,
                off,
                size,
                signed,
                pc,
                n,
            } => {
                self.load(rs1, off, (size, signed), pc, blk.insns - n)?;
                self.set(rd, rax)
            }
            Op::FLoad {
                rd,
                rs1,
                off,
                size,
                pc,
                n,
            } => {
                self.load(rs1, off, (size, false), pc, blk.insns - n)?;
                if size == 4 {
                    // NaN-boxed
                    self.a.mov(rcx, 0xffff_ffff_0000_0000_u64)?;
                    self.a.or(rax, rcx)?;
                }
                self.a.mov(freg(rd), rax)
            }
            Op::Store {
                rs1,
                rs2,
                off,
                size,
                pc,
                len,
                n,
            } => self.store(rs1, off, size, (false, rs2), (pc, len), blk.insns - n),
            Op::FStore {
                rs1,
                rs2,
                off,
                size,
                pc,
                len,
                n,
            } => self.store(rs1, off, size, (true, rs2), (pc, len), blk.insns - n),
            Op::FMove { op, rd, rs1, rs2 } => self.fmove(op, rd, rs1, rs2),
            Op::Amo {
                op,
                rd,
                rs1,
                rs2,
                size,
                pc,
                n,
            } => self.amo(op, (rd, rs1, rs2), size, pc, blk.insns - n),
            Op::Exit {
                cond,
                rs1,
                rs2,
                target,
                n,
                ..
            } => {
                let t = self.a.create_label();
                self.compare(cond, rs1, rs2, t)?;
                self.cold.push(Cold::Taken {
                    at: t,
                    target,
                    unretired: blk.insns - n,
                });
                Ok(())
            }
            // (counted blocks only, which this tier does not compile)
            Op::Next { .. } => self.a.ud2(),
        }
    }

    fn load(&mut self, rs1: u8, off: i64, (size, signed): (u8, bool), pc: u64, un: u32) -> R {
        self.address(rs1, off)?;
        let slow = self.a.create_label();
        let mut done = self.a.create_label();
        self.probe(layout::TLB_READ, size, slow)?;
        match (size, signed) {
            (1, false) => self.a.movzx(eax, byte_ptr(rdx))?,
            (1, true) => self.a.movsx(rax, byte_ptr(rdx))?,
            (2, false) => self.a.movzx(eax, word_ptr(rdx))?,
            (2, true) => self.a.movsx(rax, word_ptr(rdx))?,
            (4, false) => self.a.mov(eax, dword_ptr(rdx))?,
            (4, true) => self.a.movsxd(rax, dword_ptr(rdx))?,
            _ => self.a.mov(rax, qword_ptr(rdx))?,
        }
        // (the label goes to the next instruction emitted, whichever it is)
        self.a.set_label(&mut done)?;
        self.a.zero_bytes()?;
        self.cold.push(Cold::Load {
            at: slow,
            done,
            kind: u32::from(size) | if signed { 0x100 } else { 0 },
            pc,
            unretired: un,
        });
        Ok(())
    }

    fn store(
        &mut self,
        rs1: u8,
        off: i64,
        size: u8,
        (fp, rs2): (bool, u8),
        (pc, len): (u64, u8),
        un: u32,
    ) -> R {
        self.address(rs1, off)?;
        let slow = self.a.create_label();
        let mut done = self.a.create_label();
        self.probe(layout::TLB_WRITE, size, slow)?;
        if fp {
            self.a.mov(rsi, freg(rs2))?;
        } else {
            self.get(rsi, rs2)?;
        }
        match size {
            1 => self.a.mov(byte_ptr(rdx), sil)?,
            2 => self.a.mov(word_ptr(rdx), si)?,
            4 => self.a.mov(dword_ptr(rdx), esi)?,
            _ => self.a.mov(qword_ptr(rdx), rsi)?,
        }
        // (the label goes to the next instruction emitted, whichever it is)
        self.a.set_label(&mut done)?;
        self.a.zero_bytes()?;
        self.cold.push(Cold::Store {
            at: slow,
            done,
            size,
            value: (fp, rs2),
            pc,
            len,
            unretired: un,
        });
        Ok(())
    }

    fn amo(&mut self, op: AmoOp, (rd, rs1, rs2): (u8, u8, u8), size: u8, pc: u64, un: u32) -> R {
        let mut again = self.a.create_label();
        let slow = self.a.create_label();
        self.a.set_label(&mut again)?;
        self.a.zero_bytes()?;
        self.get(rax, rs1)?;
        self.probe(layout::TLB_WRITE, size, slow)?;
        self.get(rsi, rs2)?;
        if size == 4 {
            self.a.mov(r8d, dword_ptr(rdx))?;
            self.a.mov(r9d, esi)?;
            match op {
                AmoOp::Swap => {}
                AmoOp::Add => self.a.add(r9d, r8d)?,
                AmoOp::Xor => self.a.xor(r9d, r8d)?,
                AmoOp::And => self.a.and(r9d, r8d)?,
                AmoOp::Or => self.a.or(r9d, r8d)?,
                // r9 ← old where old is the one kept
                AmoOp::Min | AmoOp::Max | AmoOp::Minu | AmoOp::Maxu => {
                    self.a.cmp(r8d, esi)?;
                    match op {
                        AmoOp::Min => self.a.cmovl(r9d, r8d)?,
                        AmoOp::Max => self.a.cmovg(r9d, r8d)?,
                        AmoOp::Minu => self.a.cmovb(r9d, r8d)?,
                        _ => self.a.cmova(r9d, r8d)?,
                    }
                }
            }
            self.a.mov(dword_ptr(rdx), r9d)?;
            self.a.movsxd(r8, r8d)?;
        } else {
            self.a.mov(r8, qword_ptr(rdx))?;
            self.a.mov(r9, rsi)?;
            match op {
                AmoOp::Swap => {}
                AmoOp::Add => self.a.add(r9, r8)?,
                AmoOp::Xor => self.a.xor(r9, r8)?,
                AmoOp::And => self.a.and(r9, r8)?,
                AmoOp::Or => self.a.or(r9, r8)?,
                AmoOp::Min | AmoOp::Max | AmoOp::Minu | AmoOp::Maxu => {
                    self.a.cmp(r8, rsi)?;
                    match op {
                        AmoOp::Min => self.a.cmovl(r9, r8)?,
                        AmoOp::Max => self.a.cmovg(r9, r8)?,
                        AmoOp::Minu => self.a.cmovb(r9, r8)?,
                        _ => self.a.cmova(r9, r8)?,
                    }
                }
            }
            self.a.mov(qword_ptr(rdx), r9)?;
        }
        self.set(rd, r8)?;
        self.cold.push(Cold::Amo {
            at: slow,
            again,
            size,
            pc,
            unretired: un,
        });
        Ok(())
    }

    fn fmove(&mut self, op: FMove, rd: u8, rs1: u8, rs2: u8) -> R {
        match op {
            FMove::XFromD => {
                self.a.mov(rax, freg(rs1))?;
                self.set(rd, rax)
            }
            FMove::DFromX => {
                self.get(rax, rs1)?;
                self.a.mov(freg(rd), rax)
            }
            FMove::SgnjD | FMove::SgnjnD | FMove::SgnjxD => {
                self.a.mov(rax, freg(rs1))?;
                self.a.mov(rcx, freg(rs2))?;
                self.a.mov(rdx, i64::MAX as u64)?;
                match op {
                    FMove::SgnjxD => {
                        self.a.not(rdx)?;
                        self.a.and(rcx, rdx)?;
                        self.a.xor(rax, rcx)?;
                    }
                    _ => {
                        if op == FMove::SgnjnD {
                            self.a.not(rcx)?;
                        }
                        self.a.and(rax, rdx)?;
                        self.a.not(rdx)?;
                        self.a.and(rcx, rdx)?;
                        self.a.or(rax, rcx)?;
                    }
                }
                self.a.mov(freg(rd), rax)
            }
        }
    }

    /// `x[rd] = op(x[rs1], b)`.
    fn alu(&mut self, op: Alu, rd: u8, rs1: u8, b: Src) -> R {
        if rd & 31 == 0 {
            // no effect
            return Ok(());
        }
        self.get(rax, rs1)?;
        // the forms with an immediate operand
        if let Src::Imm(v) = b {
            let done = match (op, imm32(v)) {
                (Alu::Add, Some(i)) => self.a.add(rax, i).map(|_| true)?,
                (Alu::And, Some(i)) => self.a.and(rax, i).map(|_| true)?,
                (Alu::Or, Some(i)) => self.a.or(rax, i).map(|_| true)?,
                (Alu::Xor, Some(i)) => self.a.xor(rax, i).map(|_| true)?,
                (Alu::Sll, _) => self.a.shl(rax, (v & 63) as u32).map(|_| true)?,
                (Alu::Srl, _) => self.a.shr(rax, (v & 63) as u32).map(|_| true)?,
                (Alu::Sra, _) => self.a.sar(rax, (v & 63) as u32).map(|_| true)?,
                (Alu::Addw, Some(i)) => {
                    self.a.add(eax, i)?;
                    self.a.movsxd(rax, eax).map(|_| true)?
                }
                (Alu::Sllw | Alu::Srlw | Alu::Sraw, _) => {
                    let s = (v & 31) as u32;
                    match op {
                        Alu::Sllw => self.a.shl(eax, s)?,
                        Alu::Srlw => self.a.shr(eax, s)?,
                        _ => self.a.sar(eax, s)?,
                    }
                    self.a.movsxd(rax, eax).map(|_| true)?
                }
                _ => false,
            };
            if done {
                return self.set(rd, rax);
            }
        }
        match b {
            Src::Reg(r) => self.get(rcx, r)?,
            Src::Imm(v) => self.konst(rcx, v)?,
        }
        match op {
            Alu::Add => self.a.add(rax, rcx)?,
            Alu::Sub => self.a.sub(rax, rcx)?,
            Alu::Xor => self.a.xor(rax, rcx)?,
            Alu::Or => self.a.or(rax, rcx)?,
            Alu::And => self.a.and(rax, rcx)?,
            // x86 masks a 64-bit shift count to 6 bits, a 32-bit one to 5: RISC-V's rule
            Alu::Sll => self.a.shl(rax, cl)?,
            Alu::Srl => self.a.shr(rax, cl)?,
            Alu::Sra => self.a.sar(rax, cl)?,
            Alu::Slt | Alu::Sltu => {
                self.a.cmp(rax, rcx)?;
                if op == Alu::Slt {
                    self.a.setl(al)?;
                } else {
                    self.a.setb(al)?;
                }
                self.a.movzx(eax, al)?;
            }
            Alu::Addw | Alu::Subw | Alu::Sllw | Alu::Srlw | Alu::Sraw | Alu::Mulw => {
                match op {
                    Alu::Addw => self.a.add(eax, ecx)?,
                    Alu::Subw => self.a.sub(eax, ecx)?,
                    Alu::Sllw => self.a.shl(eax, cl)?,
                    Alu::Srlw => self.a.shr(eax, cl)?,
                    Alu::Sraw => self.a.sar(eax, cl)?,
                    _ => self.a.imul_2(eax, ecx)?,
                }
                self.a.movsxd(rax, eax)?;
            }
            Alu::Mul => self.a.imul_2(rax, rcx)?,
            Alu::Mulh => {
                self.a.imul(rcx)?;
                self.a.mov(rax, rdx)?;
            }
            Alu::Mulhu => {
                self.a.mul(rcx)?;
                self.a.mov(rax, rdx)?;
            }
            Alu::Sh1add | Alu::Sh2add | Alu::Sh3add => {
                let k = match op {
                    Alu::Sh1add => 2,
                    Alu::Sh2add => 4,
                    _ => 8,
                };
                self.a.lea(rax, qword_ptr(rcx + rax * k))?;
            }
            Alu::AddUw => {
                self.a.mov(eax, eax)?;
                self.a.add(rax, rcx)?;
            }
            Alu::Andn => {
                self.a.not(rcx)?;
                self.a.and(rax, rcx)?;
            }
            Alu::Orn => {
                self.a.not(rcx)?;
                self.a.or(rax, rcx)?;
            }
            Alu::Xnor => {
                self.a.xor(rax, rcx)?;
                self.a.not(rax)?;
            }
            Alu::Min | Alu::Max | Alu::Minu | Alu::Maxu => {
                self.a.cmp(rax, rcx)?;
                match op {
                    Alu::Min => self.a.cmovg(rax, rcx)?,
                    Alu::Max => self.a.cmovl(rax, rcx)?,
                    Alu::Minu => self.a.cmova(rax, rcx)?,
                    _ => self.a.cmovb(rax, rcx)?,
                }
            }
            Alu::Rev8 => self.a.bswap(rax)?,
            Alu::ZextH => self.a.movzx(eax, ax)?,
            Alu::SextB => self.a.movsx(rax, al)?,
            Alu::SextH => self.a.movsx(rax, ax)?,
            Alu::CzeroEqz => {
                // (b == 0) ? 0 : a
                self.a.test(rcx, rcx)?;
                self.a.cmovz(rax, rcx)?;
            }
            Alu::CzeroNez => {
                self.a.xor(edx, edx)?;
                self.a.test(rcx, rcx)?;
                self.a.cmovnz(rax, rdx)?;
            }
            _ => {
                // the one definition of every other operation (division, Zbb/Zbs, …)
                self.a.mov(rsi, rax)?;
                self.a.mov(rdx, rcx)?;
                self.a.mov(edi, op as u32)?;
                self.a.call(ctx(layout::HELPER_ALU))?;
            }
        }
        self.set(rd, rax)
    }

    fn cold(&mut self, c: Cold) -> R {
        match c {
            Cold::Budget { mut at, pc } => {
                self.a.set_label(&mut at)?;
                self.a.zero_bytes()?;
                self.leave(pc, reason::BUDGET, 0)
            }
            Cold::Load {
                mut at,
                done,
                kind,
                pc,
                unretired,
            } => {
                self.a.set_label(&mut at)?;
                self.a.zero_bytes()?;
                self.a.mov(rdi, rbx)?;
                self.a.mov(rsi, rax)?;
                self.a.mov(edx, kind)?;
                self.a.call(ctx(layout::HELPER_LOAD))?;
                self.a.cmp(ctx(layout::FAULT), 0i32)?;
                self.a.je(done)?;
                self.leave(pc, reason::ENGINE, unretired)
            }
            Cold::Store {
                mut at,
                done,
                size,
                value: (fp, rs2),
                pc,
                len,
                unretired,
            } => {
                self.a.set_label(&mut at)?;
                self.a.zero_bytes()?;
                if fp {
                    self.a.mov(rcx, freg(rs2))?;
                } else {
                    self.get(rcx, rs2)?;
                }
                self.a.mov(rdi, rbx)?;
                self.a.mov(rsi, rax)?;
                self.a.mov(edx, u32::from(size))?;
                self.a.call(ctx(layout::HELPER_STORE))?;
                self.a.test(rax, rax)?;
                self.a.je(done)?;
                // 1: a fault (the engine runs the store); 2: it changed code (resume after)
                let fault = self.a.create_label();
                self.a.cmp(rax, 1)?;
                self.a.je(fault)?;
                self.leave(
                    pc + u64::from(len),
                    reason::CODE,
                    unretired.saturating_sub(1),
                )?;
                let mut fault = fault;
                self.a.set_label(&mut fault)?;
                self.a.zero_bytes()?;
                self.leave(pc, reason::ENGINE, unretired)
            }
            Cold::Amo {
                mut at,
                again,
                size,
                pc,
                unretired,
            } => {
                self.a.set_label(&mut at)?;
                self.a.zero_bytes()?;
                self.a.mov(rdi, rbx)?;
                self.a.mov(rsi, rax)?;
                self.a.mov(edx, u32::from(size))?;
                self.a.call(ctx(layout::HELPER_FILL))?;
                self.a.test(rax, rax)?;
                self.a.jne(again)?;
                self.leave(pc, reason::ENGINE, unretired)
            }
            Cold::Taken {
                mut at,
                target,
                unretired,
            } => {
                self.a.set_label(&mut at)?;
                self.a.zero_bytes()?;
                if unretired > 0 {
                    self.a.add(ctx(layout::BUDGET), unretired as i32)?;
                }
                self.goto(target)
            }
        }
    }

    /// The shared tails: the jump-cache lookup and the exit.
    fn tails(&mut self) -> R {
        // chain: rdi the context, rax the pc (rbx already restored)
        let mut chain = self.chain;
        self.a.set_label(&mut chain)?;
        self.a.zero_bytes()?;
        // crate::exec::jump_slot
        self.a.mov(rcx, rax)?;
        self.a.shr(rcx, 1)?;
        self.a.mov(rdx, rax)?;
        self.a.shr(rdx, 15)?;
        self.a.xor(rcx, rdx)?;
        self.a.and(ecx, (JUMP_CACHE_ENTRIES - 1) as u32)?;
        self.a.shl(rcx, 4)?;
        self.a
            .add(rcx, qword_ptr(rdi + layout::JUMP_CACHE as i32))?;
        let miss = self.a.create_label();
        self.a.cmp(qword_ptr(rcx), rax)?;
        self.a.jne(miss)?;
        self.a.jmp(qword_ptr(rcx + 8))?;
        let mut miss = miss;
        self.a.set_label(&mut miss)?;
        self.a.zero_bytes()?;
        self.a.mov(qword_ptr(rdi + layout::PC as i32), rax)?;
        self.a
            .mov(qword_ptr(rdi + layout::REASON as i32), reason::MISS as i32)?;
        self.a.ret()?;
        // exit: rbx the context, rax the pc, rcx the reason
        let mut exit = self.exit;
        self.a.set_label(&mut exit)?;
        self.a.zero_bytes()?;
        self.a.mov(ctx(layout::PC), rax)?;
        self.a.mov(ctx(layout::REASON), rcx)?;
        self.a.pop(rbx)?;
        self.a.ret()
    }
}
