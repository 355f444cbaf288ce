//! The baseline tier: a [`Unit`] straight to x86-64 machine code from fixed templates, one
//! pass, no IR and no register allocator (safe code: it only produces bytes).
//!
//! Cranelift compiles a unit in about 250 µs, which is why a block had to run 256 times on
//! the block engine before it was worth compiling (docs/machine.md, "The compiling tier").
//! This tier compiles the same unit in a few microseconds (the instructions are encoded by
//! `x64.rs`, no general assembler), so every block that runs a few
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
use crate::ir::{Alu, AmoOp, Block, Cond, Counted, FMove, Op, Record, Src, Term, Unit};
use crate::x64::{mem, Arith, Asm, Cc, Label, Mem, Reg, Rm, Shift, W};
use crate::x64::{R8, R9, RAX, RBX, RCX, RDI, RDX, RSI};

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

/// Whether this tier compiles `unit` (every unit, on an x86-64 host).
pub(crate) fn supports(_unit: &Unit) -> bool {
    cfg!(target_arch = "x86_64")
}

/// What the code generator knows of the block being compiled, which a cold path emitted
/// after the unit needs as it was.
#[derive(Clone, Copy)]
struct Snap {
    /// The current basic block's record tag ([`Block::record`], then each [`Op::Next`]'s).
    tag: Option<u32>,
    /// The block's instructions.
    insns: u32,
    /// Its counting and the host address of the current basic block's counter (0: none).
    counted: Option<(Counted, u64)>,
    /// Instructions of the block before its current basic block.
    seg: u32,
    /// The pc its final instruction writes into the ring from, if it writes the ring.
    ring_from: Option<u64>,
    /// Whether it appends its basic blocks to the trace.
    trace_on: bool,
    /// Whether it appends its accesses' addresses ([`Block::addresses`]).
    addresses: bool,
}

/// A path emitted after the unit's straight-line code (at its label, with the block's
/// [`Snap`] as it was where the path leaves: [`Gen::defer`]).
enum Cold {
    /// The budget does not cover the block at `pc`.
    Budget { pc: u64 },
    /// A load the TLB missed: the host performs it; a fault leaves at `pc`.
    Load {
        done: Label,
        kind: u32,
        pc: u64,
        unretired: u32,
    },
    /// A store the TLB missed.
    Store {
        done: Label,
        size: u8,
        value: (bool, u8),
        pc: u64,
        len: u8,
        unretired: u32,
    },
    /// An AMO whose page is not in the write TLB: the host lends it, or the engine runs it.
    Amo {
        again: Label,
        size: u8,
        pc: u64,
        unretired: u32,
    },
    /// A conditional branch out of the middle of a block.
    Taken {
        target: u64,
        /// Instructions retired (`n`) and given back.
        n: u32,
        unretired: u32,
        /// The pc it writes into the ring from.
        from: Option<u64>,
    },
    /// A counted block's record filled the buffer: the call ends (the next pc in `rax`).
    Full,
    /// The engine runs the instruction at `pc` (a helper declined it).
    Engine { pc: u64, unretired: u32 },
}

struct Gen {
    a: Asm,
    heads: Vec<(u64, Label)>,
    cold: Vec<(Label, Snap, Cold)>,
    /// Chain sites: the offset of each `jmp rel32` and its target.
    sites: Vec<(u32, u64)>,
    /// Shared tails: the jump-cache lookup (`rdi` the context, `rax` the pc) and the exit
    /// (`rbx` the context, `rax` the pc, `rcx` the reason).
    chain: Label,
    exit: Label,
    snap: Snap,
    /// The counter addresses ([`Unit::counter_slots`]) and how many were taken.
    counters: Vec<u64>,
    counters_taken: usize,
}

/// The context's field at `off`.
fn ctx(off: usize) -> Mem {
    mem(RBX, off as i32)
}
/// The context's integer register `r`.
fn xreg(r: u8) -> Mem {
    ctx(layout::x(usize::from(r & 31)))
}
/// The context's FP register `r`.
fn freg(r: u8) -> Mem {
    ctx(layout::f(usize::from(r & 31)))
}

/// Whether `v` is a sign-extended 32-bit immediate.
fn imm32(v: u64) -> Option<i32> {
    i32::try_from(v as i64).ok()
}

/// Compiles `unit` (which [`supports`] accepts). `counters`: the host addresses of its
/// counters in [`Unit::counter_slots`]' order (0 where a block counts nothing), as for
/// Cranelift (`codegen::compile`).
pub(crate) fn compile(unit: &Unit, counters: &[u64]) -> Result<Compiled, String> {
    if unit.blocks.is_empty() {
        return Err("empty unit".into());
    }
    if counters.len() != unit.counter_slots().len() {
        return Err("a counter address per counter slot".into());
    }
    let mut a = Asm::default();
    a.code
        .reserve(256 + 96 * unit.blocks.iter().map(|b| b.ops.len()).sum::<usize>());
    let (chain, exit) = (a.label(), a.label());
    let mut g = Gen {
        heads: Vec::with_capacity(unit.blocks.len()),
        cold: Vec::new(),
        sites: Vec::new(),
        chain,
        exit,
        a,
        snap: Snap {
            tag: None,
            insns: 0,
            counted: None,
            seg: 0,
            ring_from: None,
            trace_on: false,
            addresses: false,
        },
        counters: counters.to_vec(),
        counters_taken: 0,
    };
    for blk in &unit.blocks {
        if g.head(blk.start).is_none() {
            let l = g.a.label();
            g.heads.push((blk.start, l));
        }
    }
    g.unit(unit);
    let Gen { a, sites, .. } = g;
    Ok(Compiled {
        entry: unit.entry(),
        insns: unit.blocks.iter().map(|b| u64::from(b.insns)).sum(),
        bytes: a.finish()?,
        sites,
    })
}

impl Gen {
    fn head(&self, pc: u64) -> Option<Label> {
        self.heads.iter().find(|h| h.0 == pc).map(|h| h.1)
    }

    fn unit(&mut self, unit: &Unit) {
        // the context lives in rbx (callee-saved, so helper calls keep it); pushing it also
        // aligns the stack for those calls
        self.a.push(RBX);
        self.a.mov(W::B64, RBX, Rm::R(RDI));
        for blk in &unit.blocks {
            self.block(blk);
        }
        // (a cold path may add another: a record that fills the buffer)
        while !self.cold.is_empty() {
            for c in std::mem::take(&mut self.cold) {
                self.cold(c);
            }
        }
        self.tails();
    }

    /// Integer register `r` into `dst` (x0 reads 0).
    fn get(&mut self, dst: Reg, r: u8) {
        if r & 31 == 0 {
            self.a.mov_u32(dst, 0);
        } else {
            self.a.mov(W::B64, dst, Rm::M(xreg(r)));
        }
    }

    /// `src` into integer register `r` (a write to x0 is dropped).
    fn set(&mut self, r: u8, src: Reg) {
        if r & 31 != 0 {
            self.a.store(W::B64, xreg(r), src);
        }
    }

    /// A constant into integer register `r`.
    fn set_const(&mut self, r: u8, v: u64) {
        if r & 31 == 0 {
            return;
        }
        match imm32(v) {
            Some(i) => self.a.mov_imm32(Rm::M(xreg(r)), i),
            None => {
                self.a.mov_const(RAX, v);
                self.a.store(W::B64, xreg(r), RAX);
            }
        }
    }

    fn block(&mut self, blk: &Block) {
        if let Some(h) = self.head(blk.start) {
            self.a.bind(h);
        }
        let counter = self.next_counter();
        self.snap = Snap {
            tag: blk.record,
            insns: blk.insns,
            counted: blk.counted.map(|c| (c, counter)),
            seg: 0,
            ring_from: blk.ring,
            trace_on: blk.trace && blk.counted.is_some(),
            addresses: blk.addresses,
        };
        // the budget check: the block runs whole, or the engine takes over before it
        let short = self.a.label();
        let insns = blk.insns as i32;
        self.a
            .arith_imm(W::B64, Arith::Cmp, Rm::M(ctx(layout::BUDGET)), insns);
        self.a.jcc(Cc::B, short);
        self.defer(short, Cold::Budget { pc: blk.start });
        self.a
            .arith_imm(W::B64, Arith::Sub, Rm::M(ctx(layout::BUDGET)), insns);
        self.count(1);
        for op in &blk.ops {
            self.op(op, blk);
        }
        if !matches!(blk.term, Term::Engine { .. }) {
            self.trace_push();
        }
        let (insns, seg) = (self.snap.insns, self.snap.seg);
        match blk.term {
            Term::Fall { next } => {
                self.transfer_record(next, Record::END, false);
                self.goto(next)
            }
            Term::Branch {
                cond,
                rs1,
                rs2,
                taken,
                fall,
            } => {
                let t = self.a.label();
                self.compare(cond, rs1, rs2, t);
                self.transfer_record(fall, Record::END, false);
                self.goto(fall);
                self.a.bind(t);
                self.ring_push_to(self.snap.ring_from, taken);
                self.transfer_record(taken, Record::TAKEN, false);
                self.goto(taken)
            }
            Term::Jal { rd, link, target } => {
                self.set_const(rd, link);
                self.ring_push_to(self.snap.ring_from, target);
                // a jal that links is a call: its record carries the stack pointer
                self.transfer_record(target, Record::TAKEN, rd != 0);
                self.goto(target)
            }
            Term::Jalr { rd, rs1, off, link } => {
                // the target before the link (rd may be rs1)
                self.get(RAX, rs1);
                if off != 0 {
                    self.a.arith_imm(W::B64, Arith::Add, Rm::R(RAX), off as i32);
                }
                self.a.arith_imm(W::B64, Arith::And, Rm::R(RAX), -2);
                if rd & 31 != 0 {
                    match imm32(link) {
                        Some(i) => self.a.mov_imm32(Rm::M(xreg(rd)), i),
                        None => {
                            self.a.mov_const(RCX, link);
                            self.a.store(W::B64, xreg(rd), RCX);
                        }
                    }
                }
                // (rax holds the target from here on)
                self.ring_push(self.snap.ring_from);
                match self.snap.counted {
                    // an indirect jump inside its function appends nothing: the range check
                    // inline
                    Some((c, _)) if !c.always => {
                        let (rec, go) = (self.a.label(), self.a.label());
                        self.a.mov_const(RCX, c.lo);
                        self.a.arith(W::B64, Arith::Cmp, Rm::R(RAX), RCX);
                        self.a.jcc(Cc::B, rec);
                        self.a.mov_const(RCX, c.hi);
                        self.a.arith(W::B64, Arith::Cmp, Rm::R(RAX), RCX);
                        self.a.jcc(Cc::B, go);
                        self.a.bind(rec);
                        self.record_on(insns - seg, Record::TAKEN, true);
                        self.a.bind(go);
                    }
                    _ => self.record_on(insns - seg, Record::TAKEN, true),
                }
                self.a.mov(W::B64, RDI, Rm::R(RBX));
                self.a.pop(RBX);
                self.a.jmp(self.chain)
            }
            Term::Engine { pc, .. } => self.leave(pc, reason::ENGINE, 0),
        }
    }

    /// Compares (rs1, rs2) and jumps to `to` if `cond` holds.
    fn compare(&mut self, cond: Cond, rs1: u8, rs2: u8, to: Label) {
        self.get(RAX, rs1);
        if rs2 & 31 == 0 {
            self.a.test(W::B64, RAX, RAX);
        } else {
            self.a.arith_load(W::B64, Arith::Cmp, RAX, xreg(rs2));
        }
        let cc = match cond {
            Cond::Eq => Cc::E,
            Cond::Ne => Cc::Ne,
            Cond::Lt => Cc::L,
            Cond::Ge => Cc::Ge,
            Cond::Ltu => Cc::B,
            Cond::Geu => Cc::Ae,
        };
        self.a.jcc(cc, to);
    }

    /// Goes to `pc`: a jump within the unit, else a chain site.
    fn goto(&mut self, pc: u64) {
        if let Some(h) = self.head(pc) {
            return self.a.jmp(h);
        }
        self.a.mov(W::B64, RDI, Rm::R(RBX));
        self.a.pop(RBX);
        // jmp rel32 to the next instruction until the tier patches it
        let site = self.a.site();
        self.sites.push((site, pc));
        self.a.mov_const(RAX, pc);
        self.a.jmp(self.chain);
    }

    /// Leaves with `pc` and `reason`, giving back `unretired` instructions of the budget.
    fn leave(&mut self, pc: u64, why: u64, unretired: u32) {
        if unretired > 0 {
            self.a.arith_imm(
                W::B64,
                Arith::Add,
                Rm::M(ctx(layout::BUDGET)),
                unretired as i32,
            );
        }
        if why != reason::BUDGET {
            // a counted block that stops early did not run to its end: its count goes back
            // (the budget check comes before the count, so a budget exit counted nothing)
            self.count(-1);
            self.a.mov_const(RAX, pc);
            let retired = self.snap.insns.saturating_sub(unretired);
            self.record_sp(
                retired.saturating_sub(self.snap.seg),
                Record::PARTIAL,
                false,
            );
        }
        self.a.mov_const(RAX, pc);
        self.a.mov_u32(RCX, why as u32);
        self.a.jmp(self.exit);
    }

    /// `rdx` ← the host address of the `size`-byte access at the address in `rax`, if the TLB
    /// (`tlb`: the context's offset of the read or write TLB) holds its page and it is
    /// aligned; else jumps to `miss`. Clobbers `rcx`.
    fn probe(&mut self, tlb: usize, size: u8, miss: Label) {
        let a = &mut self.a;
        // rcx ← the entry: ((addr >> 12) & (TLB_ENTRIES - 1)) * 16, from the low 32 bits
        const _: () = assert!(TLB_ENTRIES <= 1 << 20);
        a.mov(W::B32, RCX, Rm::R(RAX));
        a.shift_imm(W::B32, Shift::Shr, RCX, 8);
        a.arith_imm(
            W::B32,
            Arith::And,
            Rm::R(RCX),
            ((TLB_ENTRIES - 1) << 4) as i32,
        );
        a.arith_load(W::B64, Arith::Add, RCX, ctx(tlb));
        a.mov(W::B64, RDX, Rm::R(RAX));
        a.arith_imm(
            W::B64,
            Arith::And,
            Rm::R(RDX),
            -4096 | (i32::from(size) - 1),
        );
        a.arith_load(W::B64, Arith::Cmp, RDX, mem(RCX, 0));
        a.jcc(Cc::Ne, miss);
        // the host address: the guest address plus the entry's addend
        a.mov(W::B64, RDX, Rm::M(mem(RCX, 8)));
        a.arith(W::B64, Arith::Add, Rm::R(RDX), RAX);
    }

    /// `rax` ← x[rs1] + off.
    fn address(&mut self, rs1: u8, off: i64) {
        self.get(RAX, rs1);
        if off != 0 {
            self.a.arith_imm(W::B64, Arith::Add, Rm::R(RAX), off as i32);
        }
    }

    fn op(&mut self, op: &Op, blk: &Block) {
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
                self.load(rs1, off, (size, signed), pc, blk.insns - n);
                self.set(rd, RAX)
            }
            Op::FLoad {
                rd,
                rs1,
                off,
                size,
                pc,
                n,
            } => {
                self.load(rs1, off, (size, false), pc, blk.insns - n);
                if size == 4 {
                    // NaN-boxed
                    self.a.mov_const(RCX, 0xffff_ffff_0000_0000);
                    self.a.arith(W::B64, Arith::Or, Rm::R(RAX), RCX);
                }
                self.a.store(W::B64, freg(rd), RAX)
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
            Op::Float { inst, pc, n } => {
                let bad = self.a.label();
                self.a.mov(W::B64, RDI, Rm::R(RBX));
                self.a.mov_const(RSI, inst);
                self.a.call_mem(ctx(layout::HELPER_FLOAT));
                self.a.test(W::B64, RAX, RAX);
                self.a.jcc(Cc::E, bad);
                self.defer(
                    bad,
                    Cold::Engine {
                        pc,
                        unretired: blk.insns - n,
                    },
                );
            }
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
                pc,
            } => {
                // the basic block ends at the branch, taken or not
                self.trace_push();
                let t = self.a.label();
                self.compare(cond, rs1, rs2, t);
                self.defer(
                    t,
                    Cold::Taken {
                        target,
                        n,
                        unretired: blk.insns - n,
                        from: blk.ring.map(|_| pc),
                    },
                );
            }
            Op::Next { tag, n, .. } => {
                // in a counted block, the basic block from here on counts in the next
                // counter and tags its records `tag`
                if let Some((c, _)) = self.snap.counted {
                    let addr = self.next_counter();
                    self.snap.counted = Some((c, addr));
                    self.snap.tag = self.snap.tag.map(|_| tag);
                    self.snap.seg = n;
                    self.count(1);
                }
            }
        }
    }

    fn load(&mut self, rs1: u8, off: i64, (size, signed): (u8, bool), pc: u64, un: u32) {
        self.address(rs1, off);
        self.address_push();
        let (slow, done) = (self.a.label(), self.a.label());
        self.probe(layout::TLB_READ, size, slow);
        let at = Rm::M(mem(RDX, 0));
        match (size, signed) {
            (1, false) => self.a.movzx(W::B8, RAX, at),
            (1, true) => self.a.movsx(W::B8, RAX, at),
            (2, false) => self.a.movzx(W::B16, RAX, at),
            (2, true) => self.a.movsx(W::B16, RAX, at),
            (4, false) => self.a.mov(W::B32, RAX, at),
            (4, true) => self.a.movsx(W::B32, RAX, at),
            _ => self.a.mov(W::B64, RAX, at),
        }
        self.a.bind(done);
        self.defer(
            slow,
            Cold::Load {
                done,
                kind: u32::from(size) | if signed { 0x100 } else { 0 },
                pc,
                unretired: un,
            },
        );
    }

    fn store(
        &mut self,
        rs1: u8,
        off: i64,
        size: u8,
        (fp, rs2): (bool, u8),
        (pc, len): (u64, u8),
        un: u32,
    ) {
        self.address(rs1, off);
        self.address_push();
        let (slow, done) = (self.a.label(), self.a.label());
        self.probe(layout::TLB_WRITE, size, slow);
        if fp {
            self.a.mov(W::B64, RSI, Rm::M(freg(rs2)));
        } else {
            self.get(RSI, rs2);
        }
        self.a.store(width(size), mem(RDX, 0), RSI);
        self.a.bind(done);
        self.defer(
            slow,
            Cold::Store {
                done,
                size,
                value: (fp, rs2),
                pc,
                len,
                unretired: un,
            },
        );
    }

    fn amo(&mut self, op: AmoOp, (rd, rs1, rs2): (u8, u8, u8), size: u8, pc: u64, un: u32) {
        let (again, slow) = (self.a.label(), self.a.label());
        if self.snap.addresses {
            // once, not again after the host lends the frame
            self.get(RAX, rs1);
            self.address_push();
        }
        self.a.bind(again);
        self.get(RAX, rs1);
        self.probe(layout::TLB_WRITE, size, slow);
        self.get(RSI, rs2);
        let w = if size == 4 { W::B32 } else { W::B64 };
        let a = &mut self.a;
        // r8 ← old, r9 ← new
        a.mov(w, R8, Rm::M(mem(RDX, 0)));
        a.mov(w, R9, Rm::R(RSI));
        match op {
            AmoOp::Swap => {}
            AmoOp::Add => a.arith(w, Arith::Add, Rm::R(R9), R8),
            AmoOp::Xor => a.arith(w, Arith::Xor, Rm::R(R9), R8),
            AmoOp::And => a.arith(w, Arith::And, Rm::R(R9), R8),
            AmoOp::Or => a.arith(w, Arith::Or, Rm::R(R9), R8),
            // r9 ← old where old is the one kept
            AmoOp::Min | AmoOp::Max | AmoOp::Minu | AmoOp::Maxu => {
                a.arith(w, Arith::Cmp, Rm::R(R8), RSI);
                let cc = match op {
                    AmoOp::Min => Cc::L,
                    AmoOp::Max => Cc::G,
                    AmoOp::Minu => Cc::B,
                    _ => Cc::A,
                };
                a.cmov(w, cc, R9, R8);
            }
        }
        a.store(w, mem(RDX, 0), R9);
        if size == 4 {
            a.movsx(W::B32, R8, Rm::R(R8));
        }
        self.set(rd, R8);
        self.defer(
            slow,
            Cold::Amo {
                again,
                size,
                pc,
                unretired: un,
            },
        );
    }

    fn fmove(&mut self, op: FMove, rd: u8, rs1: u8, rs2: u8) {
        match op {
            FMove::XFromD => {
                self.a.mov(W::B64, RAX, Rm::M(freg(rs1)));
                self.set(rd, RAX)
            }
            FMove::DFromX => {
                self.get(RAX, rs1);
                self.a.store(W::B64, freg(rd), RAX)
            }
            FMove::SgnjD | FMove::SgnjnD | FMove::SgnjxD => {
                let a = &mut self.a;
                a.mov(W::B64, RAX, Rm::M(freg(rs1)));
                a.mov(W::B64, RCX, Rm::M(freg(rs2)));
                a.mov_const(RDX, i64::MAX as u64);
                if op == FMove::SgnjxD {
                    a.not(RDX);
                    a.arith(W::B64, Arith::And, Rm::R(RCX), RDX);
                    a.arith(W::B64, Arith::Xor, Rm::R(RAX), RCX);
                } else {
                    if op == FMove::SgnjnD {
                        a.not(RCX);
                    }
                    a.arith(W::B64, Arith::And, Rm::R(RAX), RDX);
                    a.not(RDX);
                    a.arith(W::B64, Arith::And, Rm::R(RCX), RDX);
                    a.arith(W::B64, Arith::Or, Rm::R(RAX), RCX);
                }
                a.store(W::B64, freg(rd), RAX)
            }
        }
    }

    /// The forms with a 32-bit immediate operand, `rax` holding the first; false if `op`
    /// has none here.
    fn alu_imm(&mut self, op: Alu, v: u64) -> bool {
        let a = &mut self.a;
        let rax = Rm::R(RAX);
        match (op, imm32(v)) {
            (Alu::Add, Some(i)) => a.arith_imm(W::B64, Arith::Add, rax, i),
            (Alu::And, Some(i)) => a.arith_imm(W::B64, Arith::And, rax, i),
            (Alu::Or, Some(i)) => a.arith_imm(W::B64, Arith::Or, rax, i),
            (Alu::Xor, Some(i)) => a.arith_imm(W::B64, Arith::Xor, rax, i),
            (Alu::Sll, _) => a.shift_imm(W::B64, Shift::Shl, RAX, (v & 63) as u8),
            (Alu::Srl, _) => a.shift_imm(W::B64, Shift::Shr, RAX, (v & 63) as u8),
            (Alu::Sra, _) => a.shift_imm(W::B64, Shift::Sar, RAX, (v & 63) as u8),
            (Alu::Addw, Some(i)) => {
                a.arith_imm(W::B32, Arith::Add, rax, i);
                a.movsx(W::B32, RAX, rax);
            }
            (Alu::Sllw | Alu::Srlw | Alu::Sraw, _) => {
                let s = match op {
                    Alu::Sllw => Shift::Shl,
                    Alu::Srlw => Shift::Shr,
                    _ => Shift::Sar,
                };
                a.shift_imm(W::B32, s, RAX, (v & 31) as u8);
                a.movsx(W::B32, RAX, rax);
            }
            _ => return false,
        }
        true
    }

    /// `x[rd] = op(x[rs1], b)`.
    fn alu(&mut self, op: Alu, rd: u8, rs1: u8, b: Src) {
        if rd & 31 == 0 {
            // no effect
            return;
        }
        self.get(RAX, rs1);
        if let Src::Imm(v) = b {
            if self.alu_imm(op, v) {
                return self.set(rd, RAX);
            }
        }
        match b {
            Src::Reg(r) => self.get(RCX, r),
            Src::Imm(v) => self.a.mov_const(RCX, v),
        }
        let a = &mut self.a;
        let (rax, rcx) = (Rm::R(RAX), Rm::R(RCX));
        match op {
            Alu::Add => a.arith(W::B64, Arith::Add, rax, RCX),
            Alu::Sub => a.arith(W::B64, Arith::Sub, rax, RCX),
            Alu::Xor => a.arith(W::B64, Arith::Xor, rax, RCX),
            Alu::Or => a.arith(W::B64, Arith::Or, rax, RCX),
            Alu::And => a.arith(W::B64, Arith::And, rax, RCX),
            // x86 masks a 64-bit shift count to 6 bits, a 32-bit one to 5: RISC-V's rule
            Alu::Sll => a.shift_cl(W::B64, Shift::Shl, RAX),
            Alu::Srl => a.shift_cl(W::B64, Shift::Shr, RAX),
            Alu::Sra => a.shift_cl(W::B64, Shift::Sar, RAX),
            Alu::Slt | Alu::Sltu => {
                a.arith(W::B64, Arith::Cmp, rax, RCX);
                a.set_bool(if op == Alu::Slt { Cc::L } else { Cc::B }, RAX);
            }
            Alu::Addw | Alu::Subw | Alu::Sllw | Alu::Srlw | Alu::Sraw | Alu::Mulw => {
                match op {
                    Alu::Addw => a.arith(W::B32, Arith::Add, rax, RCX),
                    Alu::Subw => a.arith(W::B32, Arith::Sub, rax, RCX),
                    Alu::Sllw => a.shift_cl(W::B32, Shift::Shl, RAX),
                    Alu::Srlw => a.shift_cl(W::B32, Shift::Shr, RAX),
                    Alu::Sraw => a.shift_cl(W::B32, Shift::Sar, RAX),
                    _ => a.imul(W::B32, RAX, RCX),
                }
                a.movsx(W::B32, RAX, rax);
            }
            Alu::Mul => a.imul(W::B64, RAX, RCX),
            Alu::Mulh | Alu::Mulhu => {
                a.mul_wide(op == Alu::Mulh, RCX);
                a.mov(W::B64, RAX, Rm::R(RDX));
            }
            Alu::Sh1add | Alu::Sh2add | Alu::Sh3add => {
                let k = match op {
                    Alu::Sh1add => 2,
                    Alu::Sh2add => 4,
                    _ => 8,
                };
                a.lea(
                    RAX,
                    Mem {
                        base: RCX,
                        index: Some((RAX, k)),
                        disp: 0,
                    },
                );
            }
            Alu::AddUw => {
                a.mov(W::B32, RAX, rax);
                a.arith(W::B64, Arith::Add, rax, RCX);
            }
            Alu::Andn | Alu::Orn => {
                a.not(RCX);
                let o = if op == Alu::Andn {
                    Arith::And
                } else {
                    Arith::Or
                };
                a.arith(W::B64, o, rax, RCX);
            }
            Alu::Xnor => {
                a.arith(W::B64, Arith::Xor, rax, RCX);
                a.not(RAX);
            }
            Alu::Min | Alu::Max | Alu::Minu | Alu::Maxu => {
                a.arith(W::B64, Arith::Cmp, rax, RCX);
                let cc = match op {
                    Alu::Min => Cc::G,
                    Alu::Max => Cc::L,
                    Alu::Minu => Cc::A,
                    _ => Cc::B,
                };
                a.cmov(W::B64, cc, RAX, RCX);
            }
            Alu::Rev8 => a.bswap(RAX),
            Alu::ZextH => a.movzx(W::B16, RAX, rax),
            Alu::SextB => a.movsx(W::B8, RAX, rax),
            Alu::SextH => a.movsx(W::B16, RAX, rax),
            Alu::CzeroEqz => {
                // (b == 0) ? 0 : a, with rcx the zero
                a.test(W::B64, RCX, RCX);
                a.cmov(W::B64, Cc::E, RAX, RCX);
            }
            Alu::CzeroNez => {
                a.mov_u32(RDX, 0);
                a.test(W::B64, RCX, RCX);
                a.cmov(W::B64, Cc::Ne, RAX, RDX);
            }
            _ => {
                // the one definition of every other operation (division, Zbb/Zbs, …)
                a.mov(W::B64, RSI, rax);
                a.mov(W::B64, RDX, rcx);
                a.mov_u32(RDI, op as u32);
                a.call_mem(ctx(layout::HELPER_ALU));
            }
        }
        self.set(rd, RAX)
    }

    /// Emits `c` after the unit's straight-line code, at `at`, with the block as it is here.
    fn defer(&mut self, at: Label, c: Cold) {
        self.cold.push((at, self.snap, c));
    }

    fn cold(&mut self, (at, snap, c): (Label, Snap, Cold)) {
        self.snap = snap;
        self.a.bind(at);
        match c {
            Cold::Budget { pc } => self.leave(pc, reason::BUDGET, 0),
            Cold::Load {
                done,
                kind,
                pc,
                unretired,
            } => {
                self.helper_args(kind);
                self.a.call_mem(ctx(layout::HELPER_LOAD));
                self.a
                    .arith_imm(W::B64, Arith::Cmp, Rm::M(ctx(layout::FAULT)), 0);
                self.a.jcc(Cc::E, done);
                self.leave(pc, reason::ENGINE, unretired)
            }
            Cold::Store {
                done,
                size,
                value: (fp, rs2),
                pc,
                len,
                unretired,
            } => {
                if fp {
                    self.a.mov(W::B64, RCX, Rm::M(freg(rs2)));
                } else {
                    self.get(RCX, rs2);
                }
                self.helper_args(u32::from(size));
                self.a.call_mem(ctx(layout::HELPER_STORE));
                self.a.test(W::B64, RAX, RAX);
                self.a.jcc(Cc::E, done);
                // 1: a fault (the engine runs the store); 2: it changed code (resume after)
                let fault = self.a.label();
                self.a.arith_imm(W::B64, Arith::Cmp, Rm::R(RAX), 1);
                self.a.jcc(Cc::E, fault);
                self.leave(
                    pc + u64::from(len),
                    reason::CODE,
                    unretired.saturating_sub(1),
                );
                self.a.bind(fault);
                self.leave(pc, reason::ENGINE, unretired)
            }
            Cold::Amo {
                again,
                size,
                pc,
                unretired,
            } => {
                self.helper_args(u32::from(size));
                self.a.call_mem(ctx(layout::HELPER_FILL));
                self.a.test(W::B64, RAX, RAX);
                self.a.jcc(Cc::Ne, again);
                self.leave(pc, reason::ENGINE, unretired)
            }
            Cold::Taken {
                target,
                n,
                unretired,
                from,
            } => {
                if unretired > 0 {
                    self.a.arith_imm(
                        W::B64,
                        Arith::Add,
                        Rm::M(ctx(layout::BUDGET)),
                        unretired as i32,
                    );
                }
                self.ring_push_to(from, target);
                match self.snap.counted {
                    // a counted block's basic block ends at the branch: it ran to its end (its
                    // count stays), and it leaves a record only out of its function
                    Some((c, _)) => {
                        if c.leaves(target) {
                            self.a.mov_const(RAX, target);
                            self.record_on(n - self.snap.seg, Record::EXIT, false);
                        }
                    }
                    None => {
                        self.a.mov_const(RAX, target);
                        self.record_sp(n, Record::EXIT, false);
                    }
                }
                self.goto(target)
            }
            Cold::Engine { pc, unretired } => self.leave(pc, reason::ENGINE, unretired),
            Cold::Full => {
                self.a.mov_u32(RCX, reason::MISS as u32);
                self.a.jmp(self.exit)
            }
        }
    }

    /// The next counter address ([`Unit::counter_slots`]' order; 0 for a block that keeps
    /// none).
    fn next_counter(&mut self) -> u64 {
        let a = self.counters.get(self.counters_taken).copied().unwrap_or(0);
        self.counters_taken += 1;
        a
    }

    /// Adds `by` to the current basic block's counter, if it counts (and keeps a counter).
    fn count(&mut self, by: i32) {
        let Some((_, addr)) = self.snap.counted.filter(|&(_, a)| a != 0) else {
            return;
        };
        self.a.mov_const(RCX, addr);
        self.a.arith_imm(W::B64, Arith::Add, Rm::M(mem(RCX, 0)), by);
    }

    /// Appends a record for the current block (if it records) going on at the pc in `rax`,
    /// with `retired` of its instructions retired (none if 0), the budget left and, when
    /// `sp` or the block is counted, x2, as `codegen.rs` does. Keeps `rax`; leaves the
    /// buffer's new length in `r8`. Returns whether it appended.
    fn record_sp(&mut self, retired: u32, how: u16, sp: bool) -> bool {
        let Some(tag) = self.snap.tag else {
            return false;
        };
        if retired == 0 {
            return false;
        }
        let a = &mut self.a;
        // rcx ← the slot: records + min(pos, RECORDS) * 32
        a.mov(W::B64, R8, Rm::M(ctx(layout::RECORD_POS)));
        a.mov_u32(RCX, crate::exec::RECORDS as u32);
        a.arith(W::B64, Arith::Cmp, Rm::R(R8), RCX);
        a.cmov(W::B64, Cc::B, RCX, R8);
        a.shift_imm(W::B64, Shift::Shl, RCX, 5);
        a.arith_load(W::B64, Arith::Add, RCX, ctx(layout::RECORDS));
        a.store(W::B64, mem(RCX, 0), RAX);
        a.mov_const(RDX, Record::word(tag, retired, how));
        a.store(W::B64, mem(RCX, 8), RDX);
        // the budget left: sparse records (counted blocks) take their instruction counts
        // from it
        a.mov(W::B64, RDX, Rm::M(ctx(layout::BUDGET)));
        a.store(W::B64, mem(RCX, 24), RDX);
        if sp || self.snap.counted.is_some() {
            a.mov(W::B64, RDX, Rm::M(xreg(2)));
            a.store(W::B64, mem(RCX, 16), RDX);
        }
        a.arith_imm(W::B64, Arith::Add, Rm::R(R8), 1);
        a.store(W::B64, ctx(layout::RECORD_POS), R8);
        true
    }

    /// [`Gen::record_sp`] for a transfer the unit goes on after: a counted block's record
    /// that fills the buffer ends the call there, at the pc in `rax`.
    fn record_on(&mut self, retired: u32, how: u16, sp: bool) {
        if !self.record_sp(retired, how, sp) || self.snap.counted.is_none() {
            return;
        }
        let full = self.a.label();
        self.a
            .arith_imm(W::B64, Arith::Cmp, Rm::R(R8), crate::exec::RECORDS as i32);
        self.a.jcc(Cc::Ae, full);
        self.defer(full, Cold::Full);
    }

    /// The record of a block's transfer to `next`: every one for a recording block; for a
    /// counted one, only a transfer that leaves its function, or its final call or return.
    fn transfer_record(&mut self, next: u64, how: u16, sp: bool) {
        if let Some((c, _)) = self.snap.counted {
            if !(c.leaves(next) || c.always) {
                return;
            }
        }
        if self.snap.tag.is_some() {
            self.a.mov_const(RAX, next);
            self.record_on(self.snap.insns - self.snap.seg, how, sp);
        }
    }

    /// `rcx` ← the next entry of a buffer of `entries` (a power of two) entries of
    /// `1 << shift` bytes whose base the context holds at `base_at` and position at `pos_at`
    /// (the position masked to the buffer), with the position moved on past it. Clobbers `rdx`.
    fn append_at(&mut self, (base_at, pos_at): (usize, usize), entries: usize, shift: u8) {
        let a = &mut self.a;
        a.mov(W::B64, RCX, Rm::M(ctx(pos_at)));
        a.lea(RDX, mem(RCX, 1));
        a.store(W::B64, ctx(pos_at), RDX);
        a.arith_imm(W::B32, Arith::And, Rm::R(RCX), (entries - 1) as i32);
        a.shift_imm(W::B32, Shift::Shl, RCX, shift);
        a.arith_load(W::B64, Arith::Add, RCX, ctx(base_at));
    }

    /// A taken branch from `from` to the pc in `rax` into the ring, if the block writes it.
    /// Keeps `rax`.
    fn ring_push(&mut self, from: Option<u64>) {
        let (Some(_), Some(from)) = (self.snap.ring_from, from) else {
            return;
        };
        let at = (layout::RING, layout::RING_POS);
        self.append_at(at, crate::exec::RING, 4);
        self.a.mov_const(RDX, from);
        self.a.store(W::B64, mem(RCX, 0), RDX);
        self.a.store(W::B64, mem(RCX, 8), RAX);
    }

    /// [`Gen::ring_push`] to a known target.
    fn ring_push_to(&mut self, from: Option<u64>, target: u64) {
        if self.snap.ring_from.is_some() && from.is_some() {
            self.a.mov_const(RAX, target);
            self.ring_push(from);
        }
    }

    /// The current basic block ran to its end: its tag into the trace, if the block traces.
    fn trace_push(&mut self) {
        let (Some(tag), true) = (self.snap.tag, self.snap.trace_on) else {
            return;
        };
        let at = (layout::TRACE, layout::TRACE_POS);
        self.append_at(at, crate::exec::TRACE, 2);
        self.a.store_u32(mem(RCX, 0), tag);
    }

    /// The guest address in `rax` into the address buffer, if the block appends its
    /// accesses' addresses. Keeps `rax`.
    fn address_push(&mut self) {
        if !self.snap.addresses {
            return;
        }
        let at = (layout::ADDRS, layout::ADDR_POS);
        self.append_at(at, crate::exec::ADDRS, 3);
        self.a.store(W::B64, mem(RCX, 0), RAX);
    }

    /// A memory helper's arguments: the context, the address (in `rax`), `k`.
    fn helper_args(&mut self, k: u32) {
        self.a.mov(W::B64, RDI, Rm::R(RBX));
        self.a.mov(W::B64, RSI, Rm::R(RAX));
        self.a.mov_u32(RDX, k);
    }

    /// The shared tails: the jump-cache lookup and the exit.
    fn tails(&mut self) {
        let a = &mut self.a;
        // chain: rdi the context, rax the pc (rbx already restored); crate::exec::jump_slot
        a.bind(self.chain);
        a.mov(W::B64, RCX, Rm::R(RAX));
        a.shift_imm(W::B64, Shift::Shr, RCX, 1);
        a.mov(W::B64, RDX, Rm::R(RAX));
        a.shift_imm(W::B64, Shift::Shr, RDX, 15);
        a.arith(W::B64, Arith::Xor, Rm::R(RCX), RDX);
        a.arith_imm(
            W::B32,
            Arith::And,
            Rm::R(RCX),
            (JUMP_CACHE_ENTRIES - 1) as i32,
        );
        a.shift_imm(W::B64, Shift::Shl, RCX, 4);
        a.arith_load(W::B64, Arith::Add, RCX, mem(RDI, layout::JUMP_CACHE as i32));
        let miss = a.label();
        a.arith(W::B64, Arith::Cmp, Rm::M(mem(RCX, 0)), RAX);
        a.jcc(Cc::Ne, miss);
        a.jmp_mem(mem(RCX, 8));
        a.bind(miss);
        a.store(W::B64, mem(RDI, layout::PC as i32), RAX);
        a.mov_imm32(Rm::M(mem(RDI, layout::REASON as i32)), reason::MISS as i32);
        a.ret();
        // exit: rbx the context, rax the pc, rcx the reason
        a.bind(self.exit);
        a.store(W::B64, ctx(layout::PC), RAX);
        a.store(W::B64, ctx(layout::REASON), RCX);
        a.pop(RBX);
        a.ret();
    }
}

/// The operand width of a `size`-byte access.
fn width(size: u8) -> W {
    match size {
        1 => W::B8,
        2 => W::B16,
        4 => W::B32,
        _ => W::B64,
    }
}
