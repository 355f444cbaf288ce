//! A [`Unit`] to Cranelift IR (safe code: it only builds IR).
//!
//! The function takes one argument, the [`Context`](crate::Context) pointer, and uses
//! Cranelift's `tail` calling convention so that a unit can leave by a tail call into the
//! next (the jump cache). Guest registers a unit touches are loaded into SSA variables at its
//! guest block on first use and written through at once; the instruction budget is a variable.
//!
//! **Memory safety of generated code** (the contract `exec.rs` relies on): every guest load
//! and store goes either through a TLB entry whose tag equals the access's page address and
//! whose page offset leaves room for the access's bytes (so the access lies wholly in that
//! page, and the entry's host frame is 4096 bytes) or through a host helper. No other host
//! address is ever computed from a guest value.

use crate::exec::{layout, Helpers, TLB_ENTRIES};
use crate::ir::{Alu, AmoOp, Block, Cond, Counted, FMove, Op, Record, Src, Term, Unit};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Function, InstBuilder, MemFlags, Signature, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use std::collections::HashMap;

/// Exit reasons written to `Context::reason`.
pub mod reason {
    /// The next pc is not compiled (or not in the jump cache): the engine goes on there.
    pub const MISS: u64 = 0;
    /// The budget does not cover the block at `pc`.
    pub const BUDGET: u64 = 1;
    /// The engine must run the instruction at `pc` (not compiled, or it faults).
    pub const ENGINE: u64 = 2;
    /// A store changed code; `pc` is the instruction after it (the store retired).
    pub const CODE: u64 = 3;
}

/// The integer operations compiled code calls rather than inlines: [`Alu::eval`] of
/// `Alu::ALL[op]` (0 for an index out of range, which the code generator never emits).
pub(crate) extern "C" fn alu_helper(op: u64, a: u64, b: u64) -> u64 {
    Alu::ALL.get(op as usize).map_or(0, |o| o.eval(a, b))
}

/// A unit compiled to position-independent machine code (no relocations: helpers are called
/// through constants, units through the jump cache).
pub(crate) struct Compiled {
    /// Its entry pc.
    pub entry: u64,
    /// Guest blocks in it.
    pub blocks: usize,
    /// Guest instructions in it.
    pub insns: u64,
    /// The machine code.
    pub bytes: Vec<u8>,
    /// Its alignment.
    pub alignment: u64,
}

/// Compiles `unit` for `isa` (on any thread: nothing here touches a module).
/// `counters` are the host addresses of the counters in [`Unit::counter_slots`]' order (0
/// where a block counts nothing), given by the tier from its own counter memory (`exec.rs`).
pub(crate) fn compile(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    fctx: &mut FunctionBuilderContext,
    unit: &Unit,
    helpers: &Helpers,
    counters: &[u64],
) -> Result<Compiled, String> {
    if unit.blocks.is_empty() {
        return Err("empty unit".into());
    }
    if counters.len() != unit.counter_slots().len() {
        return Err("a counter address per counter slot".into());
    }
    let mut ctx = cranelift_codegen::Context::new();
    build(&mut ctx.func, fctx, unit, helpers, counters);
    let mut plane = cranelift_codegen::control::ControlPlane::default();
    let code = ctx
        .compile(isa, &mut plane)
        .map_err(|e| format!("{:?}", e.inner))?;
    if !code.buffer.relocs().is_empty() {
        return Err("compiled code has relocations".into());
    }
    let alignment = u64::from(code.buffer.alignment)
        .max(u64::from(isa.function_alignment().minimum))
        .max(isa.symbol_alignment());
    Ok(Compiled {
        entry: unit.entry(),
        blocks: unit.blocks.len(),
        insns: unit.blocks.iter().map(|b| u64::from(b.insns)).sum(),
        bytes: code.code_buffer().to_vec(),
        alignment,
    })
}

/// The signature of a compiled unit.
pub(crate) fn unit_signature(ptr: types::Type) -> Signature {
    let mut sig = Signature::new(CallConv::Tail);
    sig.params.push(AbiParam::new(ptr));
    sig
}

struct Gen<'a, 'b> {
    b: FunctionBuilder<'a>,
    ctx: Value,
    /// Register values known in the current guest block (loaded from the context on first
    /// use; every write goes through to the context too). Values of one guest block dominate
    /// the rest of it, so no SSA variables (and no block parameters) are needed for them.
    regs: [Option<Value>; 32],
    /// The same for FP registers (raw bits).
    fregs: [Option<Value>; 32],
    budget: Variable,
    helpers: &'b Helpers,
    /// Exit path: (pc, reason) as block parameters.
    exit: cranelift_codegen::ir::Block,
    /// Chain path: pc as a block parameter.
    chain: cranelift_codegen::ir::Block,
    heads: HashMap<u64, cranelift_codegen::ir::Block>,
    tlb_r: Value,
    tlb_w: Value,
    /// The record buffer (loaded at entry when a block of the unit records).
    records: Option<Value>,
    /// The current block's record tag and instruction count.
    tag: Option<u32>,
    insns: u32,
    /// The current block's counting ([`Block::counted`]) and the host address of the
    /// counter of the basic block running now (the block's, then each [`Op::Next`]'s).
    counted: Option<(Counted, u64)>,
    /// Instructions of the current block before its current basic block (the last
    /// [`Op::Next`]'s `n`; 0 before any): records count the instructions retired from there.
    seg: u32,
    /// The ring's base (loaded at entry when a block of the unit writes the ring) and the
    /// current block's final instruction's pc, if it writes it ([`Block::ring`]).
    ring: Option<Value>,
    ring_from: Option<u64>,
    /// The trace's base (loaded at entry when a block of the unit traces) and whether the
    /// current block traces ([`Block::trace`]).
    trace: Option<Value>,
    trace_on: bool,
    /// The address buffer's base (loaded at entry when a block of the unit appends its
    /// accesses' addresses) and whether the current block does ([`Block::addresses`]).
    addrs: Option<Value>,
    addrs_on: bool,
    /// The counter addresses ([`Unit::counter_slots`]) and how many were taken.
    counters: &'b [u64],
    counters_taken: usize,
}

fn flags() -> MemFlags {
    MemFlags::trusted()
}

/// Builds `func`'s body for `unit`.
pub(crate) fn build(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    unit: &Unit,
    helpers: &Helpers,
    counters: &[u64],
) {
    let ptr = types::I64;
    func.signature = unit_signature(ptr);
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let ctx = b.block_params(entry)[0];
    let budget = b.declare_var(types::I64);
    let bv = b
        .ins()
        .load(types::I64, flags(), ctx, layout::BUDGET as i32);
    b.def_var(budget, bv);
    let tlb_r = b.ins().load(ptr, flags(), ctx, layout::TLB_READ as i32);
    let tlb_w = b.ins().load(ptr, flags(), ctx, layout::TLB_WRITE as i32);
    let exit = b.create_block();
    b.append_block_param(exit, types::I64);
    b.append_block_param(exit, types::I64);
    b.set_cold_block(exit);
    let chain = b.create_block();
    b.append_block_param(chain, types::I64);
    let mut heads = HashMap::new();
    for blk in &unit.blocks {
        heads.entry(blk.start).or_insert_with(|| b.create_block());
    }
    let records = unit
        .blocks
        .iter()
        .any(|blk| blk.record.is_some())
        .then(|| b.ins().load(ptr, flags(), ctx, layout::RECORDS as i32));
    let ring = unit
        .blocks
        .iter()
        .any(|blk| blk.ring.is_some())
        .then(|| b.ins().load(ptr, flags(), ctx, layout::RING as i32));
    let trace = unit
        .blocks
        .iter()
        .any(|blk| blk.trace)
        .then(|| b.ins().load(ptr, flags(), ctx, layout::TRACE as i32));
    let addrs = unit
        .blocks
        .iter()
        .any(|blk| blk.addresses)
        .then(|| b.ins().load(ptr, flags(), ctx, layout::ADDRS as i32));
    let mut g = Gen {
        b,
        ctx,
        regs: [None; 32],
        fregs: [None; 32],
        budget,
        helpers,
        exit,
        chain,
        heads,
        tlb_r,
        tlb_w,
        records,
        tag: None,
        insns: 0,
        counted: None,
        seg: 0,
        ring,
        ring_from: None,
        trace,
        trace_on: false,
        addrs,
        addrs_on: false,
        counters,
        counters_taken: 0,
    };
    let first = g.heads[&unit.entry()];
    g.b.ins().jump(first, &[]);
    for blk in &unit.blocks {
        let counter = g.next_counter();
        g.counted = blk.counted.map(|c| (c, counter));
        g.block(blk);
    }
    g.finish_exits();
    g.b.seal_all_blocks();
    g.b.finalize();
}

impl Gen<'_, '_> {
    /// Register `r` of the integer (`fp` false) or FP file: its value known in this guest
    /// block, else loaded from the context on first use.
    fn reg(&mut self, fp: bool, r: usize) -> Value {
        let known = if fp { self.fregs[r] } else { self.regs[r] };
        if let Some(v) = known {
            return v;
        }
        let off = if fp { layout::f(r) } else { layout::x(r) };
        let v = self.b.ins().load(types::I64, flags(), self.ctx, off as i32);
        if fp {
            self.fregs[r] = Some(v);
        } else {
            self.regs[r] = Some(v);
        }
        v
    }

    /// Writes register `r` of a file: into its value for the rest of the block, and through
    /// to the context at once, so that no exit has registers to write back (exits stay small,
    /// and so does the code).
    fn write_reg(&mut self, fp: bool, r: usize, v: Value) {
        let off = if fp {
            self.fregs[r] = Some(v);
            layout::f(r)
        } else {
            self.regs[r] = Some(v);
            layout::x(r)
        };
        self.b.ins().store(flags(), v, self.ctx, off as i32);
    }

    fn get(&mut self, r: u8) -> Value {
        let r = r as usize & 31;
        if r == 0 {
            return self.b.ins().iconst(types::I64, 0);
        }
        self.reg(false, r)
    }

    /// Writes `x[r]` (a write to `x0` is dropped).
    fn set(&mut self, r: u8, v: Value) {
        if r & 31 != 0 {
            self.write_reg(false, r as usize & 31, v);
        }
    }

    fn fget(&mut self, r: u8) -> Value {
        self.reg(true, r as usize & 31)
    }

    fn fset(&mut self, r: u8, v: Value) {
        self.write_reg(true, r as usize & 31, v);
    }

    fn src(&mut self, s: Src) -> Value {
        match s {
            Src::Reg(r) => self.get(r),
            Src::Imm(v) => self.b.ins().iconst(types::I64, v as i64),
        }
    }

    fn konst(&mut self, v: u64) -> Value {
        self.b.ins().iconst(types::I64, v as i64)
    }

    /// The next counter address ([`Unit::counter_slots`]' order; 0 for a block that keeps
    /// none, and past the last, which [`compile`] rules out).
    fn next_counter(&mut self) -> u64 {
        let a = self.counters.get(self.counters_taken).copied().unwrap_or(0);
        self.counters_taken += 1;
        a
    }

    /// Appends a record for the current block (if it records): it goes on at `next` with
    /// `retired` of its instructions retired. Blocks that retired nothing append none, so a
    /// call retiring at most [`crate::exec::RECORDS`] instructions appends at most that many;
    /// a write past them lands in the spare slot (`exec.rs`).
    fn record(&mut self, next: Value, retired: u32, how: u16) {
        self.record_sp(next, retired, how, false);
    }

    /// [`Gen::record_sp`] for a transfer the unit goes on after: a counted block's record
    /// that fills the buffer ends the call there, at `next` (its calls are not capped at
    /// [`crate::exec::RECORDS`] instructions, since its records are sparse).
    fn record_on(&mut self, next: Value, retired: u32, how: u16, sp: bool) {
        let Some(pos) = self.record_sp(next, retired, how, sp) else {
            return;
        };
        if self.counted.is_none() {
            return;
        }
        let full = self.b.ins().icmp_imm(
            IntCC::UnsignedGreaterThanOrEqual,
            pos,
            crate::exec::RECORDS as i64,
        );
        let out = self.b.create_block();
        let on = self.b.create_block();
        self.b.set_cold_block(out);
        self.b.ins().brif(full, out, &[], on, &[]);
        self.b.switch_to_block(out);
        let r = self.konst(reason::MISS);
        self.b.ins().jump(self.exit, &[next.into(), r.into()]);
        self.b.switch_to_block(on);
    }

    /// [`Gen::record`], storing the stack pointer too when `sp` (a block that ends in a call,
    /// a return or an indirect jump: the only records whose `sp` an observer reads; the
    /// others leave the slot's `sp` as it was).
    /// Returns the buffer's new length, if it appended.
    fn record_sp(&mut self, next: Value, retired: u32, how: u16, sp: bool) -> Option<Value> {
        let (Some(tag), Some(base)) = (self.tag, self.records) else {
            return None;
        };
        if retired == 0 {
            return None;
        }
        let pos = self
            .b
            .ins()
            .load(types::I64, flags(), self.ctx, layout::RECORD_POS as i32);
        let cap = self.konst(crate::exec::RECORDS as u64);
        let slot = self.b.ins().umin(pos, cap);
        let off = self
            .b
            .ins()
            .imul_imm(slot, std::mem::size_of::<Record>() as i64);
        let at = self.b.ins().iadd(base, off);
        let word = self.konst(Record::word(tag, retired, how));
        self.b.ins().store(flags(), next, at, 0);
        self.b.ins().store(flags(), word, at, 8);
        // the budget left: sparse records (counted blocks) take their instruction counts
        // from it
        let bv = self.b.use_var(self.budget);
        self.b.ins().store(flags(), bv, at, 24);
        if sp || self.counted.is_some() {
            // x2 as the block knows it, else from the context (registers are written
            // through, so the context holds the current value; the load is not cached: this
            // may be an exit path that later code does not pass through)
            let v = match self.regs[2] {
                Some(v) => v,
                None => self
                    .b
                    .ins()
                    .load(types::I64, flags(), self.ctx, layout::x(2) as i32),
            };
            self.b.ins().store(flags(), v, at, 16);
        }
        let pos = self.b.ins().iadd_imm(pos, 1);
        self.b
            .ins()
            .store(flags(), pos, self.ctx, layout::RECORD_POS as i32);
        Some(pos)
    }

    /// Leaves the unit with `pc` and `reason`, giving back `unretired` instructions of the
    /// budget (those of the current block that did not retire).
    fn leave(&mut self, pc: u64, reason: u64, unretired: u32) {
        if unretired > 0 {
            let bv = self.b.use_var(self.budget);
            let nb = self.b.ins().iadd_imm(bv, i64::from(unretired));
            self.b.def_var(self.budget, nb);
        }
        if reason != reason::BUDGET {
            // a counted block that stops early did not run to its end: its count goes back
            // (the budget check comes before the count, so a budget exit counted nothing)
            self.count(-1);
            let p = self.konst(pc);
            let retired = self.insns.saturating_sub(unretired);
            self.record(p, retired.saturating_sub(self.seg), Record::PARTIAL);
        }
        let p = self.konst(pc);
        let r = self.konst(reason);
        self.b.ins().jump(self.exit, &[p.into(), r.into()]);
    }

    /// Adds `by` to the current block's counter, if it counts (and keeps a counter).
    fn count(&mut self, by: i64) {
        let Some((_, addr)) = self.counted.filter(|&(_, a)| a != 0) else {
            return;
        };
        let a = self.konst(addr);
        let v = self.b.ins().load(types::I64, flags(), a, 0);
        let v = self.b.ins().iadd_imm(v, by);
        self.b.ins().store(flags(), v, a, 0);
    }

    /// The next entry of a buffer of `entries` (a power of two) entries of `1 << shift` bytes
    /// at `base`, whose position the context holds at `pos_at`: the entry's address (the
    /// position masked to the buffer), with the position moved on past it.
    fn append_at(&mut self, base: Value, pos_at: usize, entries: usize, shift: i64) -> Value {
        let pos = self
            .b
            .ins()
            .load(types::I64, flags(), self.ctx, pos_at as i32);
        let idx = self.b.ins().band_imm(pos, (entries - 1) as i64);
        let off = self.b.ins().ishl_imm(idx, shift);
        let at = self.b.ins().iadd(base, off);
        let next = self.b.ins().iadd_imm(pos, 1);
        self.b.ins().store(flags(), next, self.ctx, pos_at as i32);
        at
    }

    /// A taken branch from `from` to `to` into the ring, if the block writes it.
    fn ring_push(&mut self, from: Option<u64>, to: Value) {
        let (Some(base), Some(from)) = (self.ring, from) else {
            return;
        };
        let at = self.append_at(base, layout::RING_POS, crate::exec::RING, 4);
        let f = self.konst(from);
        self.b.ins().store(flags(), f, at, 0);
        self.b.ins().store(flags(), to, at, 8);
    }

    /// The current basic block ran to its end: its tag into the trace, if the block traces.
    fn trace_push(&mut self) {
        let (Some(base), Some(tag), true) = (self.trace, self.tag, self.trace_on) else {
            return;
        };
        let at = self.append_at(base, layout::TRACE_POS, crate::exec::TRACE, 2);
        let t = self.b.ins().iconst(types::I32, i64::from(tag as i32));
        self.b.ins().store(flags(), t, at, 0);
    }

    /// A guest address into the address buffer, if the current block appends its accesses'.
    fn address_push(&mut self, addr: Value) {
        let (Some(base), true) = (self.addrs, self.addrs_on) else {
            return;
        };
        let at = self.append_at(base, layout::ADDR_POS, crate::exec::ADDRS, 3);
        self.b.ins().store(flags(), addr, at, 0);
    }

    /// [`Gen::ring_push`] to a known target.
    fn ring_push_to(&mut self, from: Option<u64>, target: u64) {
        if self.ring.is_some() && from.is_some() {
            let to = self.konst(target);
            self.ring_push(from, to);
        }
    }

    /// The record of a block's transfer to `next`: every one for a recording block; for a
    /// counted one, only a transfer that leaves its function, or its final call or return
    /// (`always`, set only for blocks that end in one).
    fn transfer_record(&mut self, next: u64, how: u16, sp: bool) {
        match self.counted {
            Some((c, _)) if !(c.leaves(next) || c.always) => {}
            _ => {
                let p = self.konst(next);
                self.record_on(p, self.insns - self.seg, how, sp);
            }
        }
    }

    /// Goes to `pc` after a block: a jump within the unit, else the chain path.
    fn goto(&mut self, pc: u64) {
        match self.heads.get(&pc) {
            Some(&h) => {
                self.b.ins().jump(h, &[]);
            }
            None => {
                let p = self.konst(pc);
                self.b.ins().jump(self.chain, &[p.into()]);
            }
        }
    }

    fn cond(&mut self, c: Cond, rs1: u8, rs2: u8) -> Value {
        let a = self.get(rs1);
        let bb = self.get(rs2);
        let cc = match c {
            Cond::Eq => IntCC::Equal,
            Cond::Ne => IntCC::NotEqual,
            Cond::Lt => IntCC::SignedLessThan,
            Cond::Ge => IntCC::SignedGreaterThanOrEqual,
            Cond::Ltu => IntCC::UnsignedLessThan,
            Cond::Geu => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, a, bb)
    }

    fn block(&mut self, blk: &Block) {
        let head = self.heads[&blk.start];
        self.b.switch_to_block(head);
        self.regs = [None; 32];
        self.fregs = [None; 32];
        self.tag = blk.record;
        self.ring_from = blk.ring;
        self.trace_on = blk.trace && blk.counted.is_some();
        self.addrs_on = blk.addresses;
        self.insns = blk.insns;
        self.seg = 0;
        // the budget check: the block runs whole, or the engine takes over before it
        let bv = self.b.use_var(self.budget);
        let enough =
            self.b
                .ins()
                .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, bv, i64::from(blk.insns));
        let body = self.b.create_block();
        let short = self.b.create_block();
        self.b.set_cold_block(short);
        self.b.ins().brif(enough, body, &[], short, &[]);
        self.b.switch_to_block(short);
        self.leave(blk.start, crate::codegen::reason::BUDGET, 0);
        self.b.switch_to_block(body);
        let nb = self.b.ins().iadd_imm(bv, -i64::from(blk.insns));
        self.b.def_var(self.budget, nb);
        self.count(1);
        for op in &blk.ops {
            self.op(op, blk);
        }
        if !matches!(blk.term, Term::Engine { .. }) {
            self.trace_push();
        }
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
                let c = self.cond(cond, rs1, rs2);
                let t = self.b.create_block();
                let f = self.b.create_block();
                self.b.ins().brif(c, t, &[], f, &[]);
                self.b.switch_to_block(t);
                self.ring_push_to(self.ring_from, taken);
                self.transfer_record(taken, Record::TAKEN, false);
                self.goto(taken);
                self.b.switch_to_block(f);
                self.transfer_record(fall, Record::END, false);
                self.goto(fall);
            }
            Term::Jal { rd, link, target } => {
                let l = self.konst(link);
                self.set(rd, l);
                self.ring_push_to(self.ring_from, target);
                // a jal that links is a call: its record carries the stack pointer
                self.transfer_record(target, Record::TAKEN, rd != 0);
                self.goto(target);
            }
            Term::Jalr { rd, rs1, off, link } => {
                let base = self.get(rs1);
                let t = self.b.ins().iadd_imm(base, off);
                let t = self.b.ins().band_imm(t, !1);
                let l = self.konst(link);
                self.set(rd, l);
                self.ring_push(self.ring_from, t);
                match self.counted {
                    // an indirect jump inside its function appends nothing: the range check
                    // inline
                    Some((c, _)) if !c.always => {
                        let below = self
                            .b
                            .ins()
                            .icmp_imm(IntCC::UnsignedLessThan, t, c.lo as i64);
                        let above = self.b.ins().icmp_imm(
                            IntCC::UnsignedGreaterThanOrEqual,
                            t,
                            c.hi as i64,
                        );
                        let out = self.b.ins().bor(below, above);
                        let rec = self.b.create_block();
                        let go = self.b.create_block();
                        self.b.ins().brif(out, rec, &[], go, &[]);
                        self.b.switch_to_block(rec);
                        self.record_on(t, self.insns - self.seg, Record::TAKEN, true);
                        self.b.ins().jump(go, &[]);
                        self.b.switch_to_block(go);
                    }
                    _ => self.record_on(t, self.insns - self.seg, Record::TAKEN, true),
                }
                self.b.ins().jump(self.chain, &[t.into()]);
            }
            Term::Engine { pc, .. } => self.leave(pc, reason::ENGINE, 0),
        }
    }

    fn op(&mut self, op: &Op, blk: &Block) {
        match *op {
            Op::Li { rd, v } => {
                let c = self.konst(v);
                self.set(rd, c);
            }
            Op::Alu { op, rd, rs1, b } => {
                let a = self.get(rs1);
                let bv = self.src(b);
                let v = self.alu(op, a, bv);
                self.set(rd, v);
            }
            Op::Load {
                rd,
                rs1,
                off,
                size,
                signed,
                pc,
                n,
            } => {
                let base = self.get(rs1);
                let addr = self.b.ins().iadd_imm(base, off);
                let v = self.load(addr, size, signed, pc, blk.insns - n);
                self.set(rd, v);
            }
            Op::Store {
                rs1,
                rs2,
                off,
                size,
                pc,
                len,
                n,
            } => {
                let base = self.get(rs1);
                let addr = self.b.ins().iadd_imm(base, off);
                let v = self.get(rs2);
                self.store(addr, v, size, (pc, len), n, blk);
            }
            Op::FLoad {
                rd,
                rs1,
                off,
                size,
                pc,
                n,
            } => {
                let base = self.get(rs1);
                let addr = self.b.ins().iadd_imm(base, off);
                let v = self.load(addr, size, false, pc, blk.insns - n);
                let v = if size == 4 {
                    self.b.ins().bor_imm(v, 0xffff_ffff_0000_0000_u64 as i64)
                } else {
                    v
                };
                self.fset(rd, v);
            }
            Op::FStore {
                rs1,
                rs2,
                off,
                size,
                pc,
                len,
                n,
            } => {
                let base = self.get(rs1);
                let addr = self.b.ins().iadd_imm(base, off);
                let v = self.fget(rs2);
                self.store(addr, v, size, (pc, len), n, blk);
            }
            Op::FMove { op, rd, rs1, rs2 } => {
                const SIGN: i64 = i64::MIN;
                match op {
                    FMove::XFromD => {
                        let v = self.fget(rs1);
                        self.set(rd, v);
                    }
                    FMove::DFromX => {
                        let v = self.get(rs1);
                        self.fset(rd, v);
                    }
                    FMove::SgnjD | FMove::SgnjnD | FMove::SgnjxD => {
                        let a = self.fget(rs1);
                        let b = self.fget(rs2);
                        let v = match op {
                            FMove::SgnjD => {
                                let m = self.b.ins().band_imm(a, !SIGN);
                                let s = self.b.ins().band_imm(b, SIGN);
                                self.b.ins().bor(m, s)
                            }
                            FMove::SgnjnD => {
                                let m = self.b.ins().band_imm(a, !SIGN);
                                let nb = self.b.ins().bnot(b);
                                let s = self.b.ins().band_imm(nb, SIGN);
                                self.b.ins().bor(m, s)
                            }
                            _ => {
                                let s = self.b.ins().band_imm(b, SIGN);
                                self.b.ins().bxor(a, s)
                            }
                        };
                        self.fset(rd, v);
                    }
                }
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
            Op::Float { inst, pc, n } => {
                // registers known in the block are written through: the helper sees the
                // context's, and may write any; forget them
                let sig = self.helper_sig(2, 1);
                let sig = self.b.import_signature(sig);
                let f = self.b.ins().iconst(types::I64, self.helpers.float as i64);
                let k = self.konst(inst);
                let call = self.b.ins().call_indirect(sig, f, &[self.ctx, k]);
                let done = self.b.inst_results(call)[0];
                self.regs = [None; 32];
                self.fregs = [None; 32];
                let ok = self.b.create_block();
                let bad = self.b.create_block();
                self.b.set_cold_block(bad);
                self.b.ins().brif(done, ok, &[], bad, &[]);
                self.b.switch_to_block(bad);
                self.leave(pc, reason::ENGINE, blk.insns - n);
                self.b.switch_to_block(ok);
            }
            Op::Exit {
                cond,
                rs1,
                rs2,
                target,
                n,
                pc,
            } => {
                let from = blk.ring.map(|_| pc);
                self.early_exit((cond, rs1, rs2), target, (blk.insns - n, n), from)
            }
            Op::Next { tag, n, .. } => self.next_basic_block(tag, n),
        }
    }

    /// [`Op::Exit`]: a conditional branch on `(cond, rs1, rs2)` that leaves the block for
    /// `target` with `n` of its instructions retired (`unretired` given back to the budget),
    /// written into the ring from `from` when the block writes it.
    fn early_exit(
        &mut self,
        (cond, rs1, rs2): (Cond, u8, u8),
        target: u64,
        (unretired, n): (u32, u32),
        from: Option<u64>,
    ) {
        // the basic block ends at the branch, taken or not
        self.trace_push();
        let c = self.cond(cond, rs1, rs2);
        let t = self.b.create_block();
        let f = self.b.create_block();
        self.b.ins().brif(c, t, &[], f, &[]);
        self.b.switch_to_block(t);
        if unretired > 0 {
            let bv = self.b.use_var(self.budget);
            let nb = self.b.ins().iadd_imm(bv, i64::from(unretired));
            self.b.def_var(self.budget, nb);
        }
        self.ring_push_to(from, target);
        match self.counted {
            // a counted block's basic block ends at the branch: it ran to its end (its count
            // stays), and it leaves a record only out of its function
            Some((c, _)) => {
                if c.leaves(target) {
                    let p = self.konst(target);
                    self.record_on(p, n - self.seg, Record::EXIT, false);
                }
            }
            None => {
                let p = self.konst(target);
                self.record(p, n, Record::EXIT);
            }
        }
        self.goto(target);
        self.b.switch_to_block(f);
    }

    /// [`Op::Next`]: in a counted block, the basic block from here on (`n` instructions into
    /// the block) counts in the next counter and tags its records `tag`.
    fn next_basic_block(&mut self, tag: u32, n: u32) {
        if let Some((c, _)) = self.counted {
            let addr = self.next_counter();
            self.counted = Some((c, addr));
            self.tag = self.tag.map(|_| tag);
            self.seg = n;
            self.count(1);
        }
    }

    /// The TLB entry for `addr` in `tlb`: (entry address, hit). A hit is a naturally aligned
    /// access inside the entry's page (its tag is the page address, compared with the address
    /// masked to its page and alignment bits); a misaligned one takes the host's path. (Also
    /// letting misaligned accesses inside a page hit, with a second compare, ran all four
    /// real programs slower.)
    fn tlb_probe(&mut self, tlb: Value, addr: Value, size: u8) -> (Value, Value) {
        let ins = self.b.ins();
        let vpn = ins.ushr_imm(addr, 12);
        let idx = self.b.ins().band_imm(vpn, (TLB_ENTRIES - 1) as i64);
        let off = self.b.ins().ishl_imm(idx, 4);
        let entry = self.b.ins().iadd(tlb, off);
        let tag = self.b.ins().load(types::I64, flags(), entry, 0);
        let masked = self
            .b
            .ins()
            .band_imm(addr, !0xfff_i64 | (i64::from(size) - 1));
        let hit = self.b.ins().icmp(IntCC::Equal, tag, masked);
        (entry, hit)
    }

    /// The host address of `addr`, whose page matched `entry`: the address plus the entry's
    /// addend (the frame's address less the page's).
    fn host_addr(&mut self, entry: Value, addr: Value) -> Value {
        let addend = self.b.ins().load(types::I64, flags(), entry, 8);
        self.b.ins().iadd(addr, addend)
    }

    fn mem_type(size: u8) -> types::Type {
        match size {
            1 => types::I8,
            2 => types::I16,
            4 => types::I32,
            _ => types::I64,
        }
    }

    fn load(&mut self, addr: Value, size: u8, signed: bool, pc: u64, unretired: u32) -> Value {
        self.address_push(addr);
        let (entry, hit) = self.tlb_probe(self.tlb_r, addr, size);
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(done, types::I64);
        self.b.set_cold_block(slow);
        self.b.ins().brif(hit, fast, &[], slow, &[]);
        self.b.switch_to_block(fast);
        let host = self.host_addr(entry, addr);
        let ty = Self::mem_type(size);
        // SAFETY (of the generated code): the tag matched, so `host` lies in a live frame
        let v = if size == 8 {
            self.b.ins().load(types::I64, flags(), host, 0)
        } else if signed {
            match size {
                1 => self.b.ins().sload8(types::I64, flags(), host, 0),
                2 => self.b.ins().sload16(types::I64, flags(), host, 0),
                _ => self.b.ins().sload32(flags(), host, 0),
            }
        } else {
            let raw = self.b.ins().load(ty, flags(), host, 0);
            self.b.ins().uextend(types::I64, raw)
        };
        self.b.ins().jump(done, &[v.into()]);
        // slow path: the host performs the access (and fills the TLB)
        self.b.switch_to_block(slow);
        let sig = self.helper_sig(3, 1);
        let sig = self.b.import_signature(sig);
        let f = self.b.ins().iconst(types::I64, self.helpers.load as i64);
        let kind = self.konst(u64::from(size) | if signed { 0x100 } else { 0 });
        let call = self.b.ins().call_indirect(sig, f, &[self.ctx, addr, kind]);
        let v = self.b.inst_results(call)[0];
        let fault = self
            .b
            .ins()
            .load(types::I64, flags(), self.ctx, layout::FAULT as i32);
        let ok = self.b.create_block();
        let bad = self.b.create_block();
        self.b.set_cold_block(bad);
        self.b.ins().brif(fault, bad, &[], ok, &[]);
        self.b.switch_to_block(bad);
        self.leave(pc, reason::ENGINE, unretired);
        self.b.switch_to_block(ok);
        self.b.ins().jump(done, &[v.into()]);
        self.b.switch_to_block(done);
        self.b.block_params(done)[0]
    }

    fn store(&mut self, addr: Value, v: Value, size: u8, at: (u64, u8), n: u32, blk: &Block) {
        let (pc, len) = at;
        self.address_push(addr);
        let (entry, hit) = self.tlb_probe(self.tlb_w, addr, size);
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let done = self.b.create_block();
        self.b.set_cold_block(slow);
        self.b.ins().brif(hit, fast, &[], slow, &[]);
        self.b.switch_to_block(fast);
        let host = self.host_addr(entry, addr);
        match size {
            1 => self.b.ins().istore8(flags(), v, host, 0),
            2 => self.b.ins().istore16(flags(), v, host, 0),
            4 => self.b.ins().istore32(flags(), v, host, 0),
            _ => self.b.ins().store(flags(), v, host, 0),
        };
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(slow);
        let sig = self.helper_sig(4, 1);
        let sig = self.b.import_signature(sig);
        let f = self.b.ins().iconst(types::I64, self.helpers.store as i64);
        let kind = self.konst(u64::from(size));
        let call = self
            .b
            .ins()
            .call_indirect(sig, f, &[self.ctx, addr, kind, v]);
        let status = self.b.inst_results(call)[0];
        let ok = self.b.create_block();
        let bad = self.b.create_block();
        self.b.set_cold_block(bad);
        self.b.ins().brif(status, bad, &[], ok, &[]);
        self.b.switch_to_block(bad);
        // 1: a fault (the engine runs the store); 2: it changed code (resume after it)
        let faulted = self.b.ins().icmp_imm(IntCC::Equal, status, 1);
        let f_blk = self.b.create_block();
        let c_blk = self.b.create_block();
        self.b.ins().brif(faulted, f_blk, &[], c_blk, &[]);
        self.b.switch_to_block(f_blk);
        self.leave(pc, reason::ENGINE, blk.insns - n);
        self.b.switch_to_block(c_blk);
        // the store retired: the engine resumes after it
        self.leave(pc + u64::from(len), reason::CODE, blk.insns - n - 1);
        self.b.switch_to_block(ok);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    fn amo(&mut self, op: AmoOp, regs: (u8, u8, u8), size: u8, pc: u64, unretired: u32) {
        let (rd, rs1, rs2) = regs;
        let addr = self.get(rs1);
        let src = self.get(rs2);
        self.address_push(addr);
        let probe = self.b.create_block();
        self.b.ins().jump(probe, &[]);
        self.b.switch_to_block(probe);
        let (entry, hit) = self.tlb_probe(self.tlb_w, addr, size);
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);
        self.b.ins().brif(hit, fast, &[], slow, &[]);
        // slow: ask the host to lend the frame, then probe again; else the engine runs it
        self.b.switch_to_block(slow);
        let sig = self.helper_sig(3, 1);
        let sig = self.b.import_signature(sig);
        let f = self.b.ins().iconst(types::I64, self.helpers.fill as i64);
        let k = self.konst(u64::from(size));
        let call = self.b.ins().call_indirect(sig, f, &[self.ctx, addr, k]);
        let filled = self.b.inst_results(call)[0];
        let bad = self.b.create_block();
        self.b.set_cold_block(bad);
        self.b.ins().brif(filled, probe, &[], bad, &[]);
        self.b.switch_to_block(bad);
        self.leave(pc, reason::ENGINE, unretired);
        self.b.switch_to_block(fast);
        let host = self.host_addr(entry, addr);
        let ty = if size == 4 { types::I32 } else { types::I64 };
        let old = self.b.ins().load(ty, flags(), host, 0);
        let s = if size == 4 {
            self.b.ins().ireduce(types::I32, src)
        } else {
            src
        };
        let new = match op {
            AmoOp::Swap => s,
            AmoOp::Add => self.b.ins().iadd(old, s),
            AmoOp::Xor => self.b.ins().bxor(old, s),
            AmoOp::And => self.b.ins().band(old, s),
            AmoOp::Or => self.b.ins().bor(old, s),
            AmoOp::Min => self.b.ins().smin(old, s),
            AmoOp::Max => self.b.ins().smax(old, s),
            AmoOp::Minu => self.b.ins().umin(old, s),
            AmoOp::Maxu => self.b.ins().umax(old, s),
        };
        self.b.ins().store(flags(), new, host, 0);
        let v = if size == 4 {
            self.b.ins().sextend(types::I64, old)
        } else {
            old
        };
        self.set(rd, v);
    }

    fn helper_sig(&self, params: usize, rets: usize) -> Signature {
        let mut sig = Signature::new(self.helpers.call_conv);
        for _ in 0..params {
            sig.params.push(AbiParam::new(types::I64));
        }
        for _ in 0..rets {
            sig.returns.push(AbiParam::new(types::I64));
        }
        sig
    }

    fn alu(&mut self, op: Alu, a: Value, b: Value) -> Value {
        let sext32 = |g: &mut Self, v: Value| {
            let n = g.b.ins().ireduce(types::I32, v);
            g.b.ins().sextend(types::I64, n)
        };
        match op {
            Alu::Add => self.b.ins().iadd(a, b),
            Alu::Sub => self.b.ins().isub(a, b),
            Alu::Sll => {
                let s = self.b.ins().band_imm(b, 63);
                self.b.ins().ishl(a, s)
            }
            Alu::Srl => {
                let s = self.b.ins().band_imm(b, 63);
                self.b.ins().ushr(a, s)
            }
            Alu::Sra => {
                let s = self.b.ins().band_imm(b, 63);
                self.b.ins().sshr(a, s)
            }
            Alu::Slt => {
                let c = self.b.ins().icmp(IntCC::SignedLessThan, a, b);
                self.b.ins().uextend(types::I64, c)
            }
            Alu::Sltu => {
                let c = self.b.ins().icmp(IntCC::UnsignedLessThan, a, b);
                self.b.ins().uextend(types::I64, c)
            }
            Alu::Xor => self.b.ins().bxor(a, b),
            Alu::Or => self.b.ins().bor(a, b),
            Alu::And => self.b.ins().band(a, b),
            Alu::Addw => {
                let v = self.b.ins().iadd(a, b);
                sext32(self, v)
            }
            Alu::Subw => {
                let v = self.b.ins().isub(a, b);
                sext32(self, v)
            }
            Alu::Sllw | Alu::Srlw | Alu::Sraw => {
                let a32 = self.b.ins().ireduce(types::I32, a);
                let b32 = self.b.ins().ireduce(types::I32, b);
                let s = self.b.ins().band_imm(b32, 31);
                let v = match op {
                    Alu::Sllw => self.b.ins().ishl(a32, s),
                    Alu::Srlw => self.b.ins().ushr(a32, s),
                    _ => self.b.ins().sshr(a32, s),
                };
                self.b.ins().sextend(types::I64, v)
            }
            Alu::Mul => self.b.ins().imul(a, b),
            Alu::Mulw => {
                let v = self.b.ins().imul(a, b);
                sext32(self, v)
            }
            Alu::Mulh => self.b.ins().smulhi(a, b),
            Alu::Mulhu => self.b.ins().umulhi(a, b),
            Alu::Mulhsu => {
                // signed a × unsigned b: umulhi, less b when a is negative
                let hi = self.b.ins().umulhi(a, b);
                let neg = self.b.ins().sshr_imm(a, 63);
                let corr = self.b.ins().band(neg, b);
                self.b.ins().isub(hi, corr)
            }
            Alu::Div | Alu::Rem | Alu::Divw | Alu::Remw => self.alu_div(op, a, b),
            Alu::Divu | Alu::Remu | Alu::Divuw | Alu::Remuw => self.alu_div(op, a, b),
            Alu::Sh1add | Alu::Sh2add | Alu::Sh3add => {
                let k = match op {
                    Alu::Sh1add => 1,
                    Alu::Sh2add => 2,
                    _ => 3,
                };
                let s = self.b.ins().ishl_imm(a, k);
                self.b.ins().iadd(b, s)
            }
            Alu::AddUw => {
                let lo = self.b.ins().ireduce(types::I32, a);
                let z = self.b.ins().uextend(types::I64, lo);
                self.b.ins().iadd(b, z)
            }
            Alu::Andn => {
                let nb = self.b.ins().bnot(b);
                self.b.ins().band(a, nb)
            }
            Alu::CzeroEqz | Alu::CzeroNez => {
                let zero = self.b.ins().iconst(types::I64, 0);
                let c = self.b.ins().icmp_imm(IntCC::Equal, b, 0);
                if op == Alu::CzeroEqz {
                    self.b.ins().select(c, zero, a)
                } else {
                    self.b.ins().select(c, a, zero)
                }
            }
            _ => self.alu_bits(op, a, b),
        }
    }

    /// Division and remainder with RISC-V's results for a zero divisor and for overflow
    /// (no host trap).
    fn alu_div(&mut self, op: Alu, a: Value, b: Value) -> Value {
        match op {
            Alu::Div | Alu::Rem | Alu::Divw | Alu::Remw => {
                let w = matches!(op, Alu::Divw | Alu::Remw);
                let (a, b, ty, min) = if w {
                    (
                        self.b.ins().ireduce(types::I32, a),
                        self.b.ins().ireduce(types::I32, b),
                        types::I32,
                        i64::from(i32::MIN),
                    )
                } else {
                    (a, b, types::I64, i64::MIN)
                };
                let zero = self.b.ins().icmp_imm(IntCC::Equal, b, 0);
                let a_min = self.b.ins().icmp_imm(IntCC::Equal, a, min);
                let b_m1 = self.b.ins().icmp_imm(IntCC::Equal, b, -1);
                let ovf = self.b.ins().band(a_min, b_m1);
                let bad = self.b.ins().bor(zero, ovf);
                let one = self.b.ins().iconst(ty, 1);
                // a divisor that cannot trap: 1 on zero or overflow (MIN / 1 = MIN, MIN % 1 = 0
                // are the overflow results RISC-V defines)
                let safe = self.b.ins().select(bad, one, b);
                let r = if matches!(op, Alu::Div | Alu::Divw) {
                    let q = self.b.ins().sdiv(a, safe);
                    let m1 = self.b.ins().iconst(ty, -1);
                    self.b.ins().select(zero, m1, q)
                } else {
                    let r = self.b.ins().srem(a, safe);
                    self.b.ins().select(zero, a, r)
                };
                if w {
                    self.b.ins().sextend(types::I64, r)
                } else {
                    r
                }
            }
            _ => {
                let w = matches!(op, Alu::Divuw | Alu::Remuw);
                let (a, b, ty) = if w {
                    (
                        self.b.ins().ireduce(types::I32, a),
                        self.b.ins().ireduce(types::I32, b),
                        types::I32,
                    )
                } else {
                    (a, b, types::I64)
                };
                let zero = self.b.ins().icmp_imm(IntCC::Equal, b, 0);
                let one = self.b.ins().iconst(ty, 1);
                let safe = self.b.ins().select(zero, one, b);
                let r = if matches!(op, Alu::Divu | Alu::Divuw) {
                    let q = self.b.ins().udiv(a, safe);
                    let m1 = self.b.ins().iconst(ty, -1);
                    self.b.ins().select(zero, m1, q)
                } else {
                    let r = self.b.ins().urem(a, safe);
                    self.b.ins().select(zero, a, r)
                };
                if w {
                    self.b.ins().sextend(types::I64, r)
                } else {
                    r
                }
            }
        }
    }

    /// Zbb and Zbs operations Cranelift has instructions for; anything else calls
    /// [`alu_helper`], the one definition of every operation.
    fn alu_bits(&mut self, op: Alu, a: Value, b: Value) -> Value {
        match op {
            Alu::Orn => self.b.ins().bor_not(a, b),
            Alu::Xnor => self.b.ins().bxor_not(a, b),
            Alu::Min => self.b.ins().smin(a, b),
            Alu::Max => self.b.ins().smax(a, b),
            Alu::Minu => self.b.ins().umin(a, b),
            Alu::Maxu => self.b.ins().umax(a, b),
            Alu::Rol => self.b.ins().rotl(a, b),
            Alu::Ror => self.b.ins().rotr(a, b),
            Alu::Clz => self.b.ins().clz(a),
            Alu::Ctz => self.b.ins().ctz(a),
            Alu::Cpop => self.b.ins().popcnt(a),
            Alu::Rev8 => self.b.ins().bswap(a),
            Alu::ZextH => self.b.ins().band_imm(a, 0xffff),
            Alu::SextB | Alu::SextH => {
                let ty = if op == Alu::SextB {
                    types::I8
                } else {
                    types::I16
                };
                let n = self.b.ins().ireduce(ty, a);
                self.b.ins().sextend(types::I64, n)
            }
            Alu::Bset | Alu::Bclr | Alu::Binv | Alu::Bext => {
                let s = self.b.ins().band_imm(b, 63);
                if op == Alu::Bext {
                    let v = self.b.ins().ushr(a, s);
                    return self.b.ins().band_imm(v, 1);
                }
                let one = self.b.ins().iconst(types::I64, 1);
                let bit = self.b.ins().ishl(one, s);
                match op {
                    Alu::Bset => self.b.ins().bor(a, bit),
                    Alu::Bclr => self.b.ins().band_not(a, bit),
                    _ => self.b.ins().bxor(a, bit),
                }
            }
            _ => {
                let sig = self.helper_sig(3, 1);
                let sig = self.b.import_signature(sig);
                let f = self.b.ins().iconst(types::I64, self.helpers.alu as i64);
                let k = self.b.ins().iconst(types::I64, op as i64);
                let call = self.b.ins().call_indirect(sig, f, &[k, a, b]);
                self.b.inst_results(call)[0]
            }
        }
    }

    /// The shared exit and chain paths.
    fn finish_exits(&mut self) {
        // chain: registers and budget back to the context, then the jump cache
        self.b.switch_to_block(self.chain);
        let pc = self.b.block_params(self.chain)[0];
        self.writeback();
        let jc = self
            .b
            .ins()
            .load(types::I64, flags(), self.ctx, layout::JUMP_CACHE as i32);
        // crate::exec::jump_slot
        let lo = self.b.ins().ushr_imm(pc, 1);
        let hi = self.b.ins().ushr_imm(pc, 15);
        let h = self.b.ins().bxor(lo, hi);
        let idx = self
            .b
            .ins()
            .band_imm(h, (crate::exec::JUMP_CACHE_ENTRIES - 1) as i64);
        let off = self.b.ins().ishl_imm(idx, 4);
        let e = self.b.ins().iadd(jc, off);
        let tag = self.b.ins().load(types::I64, flags(), e, 0);
        let hit = self.b.ins().icmp(IntCC::Equal, tag, pc);
        let call = self.b.create_block();
        let miss = self.b.create_block();
        self.b.ins().brif(hit, call, &[], miss, &[]);
        self.b.switch_to_block(call);
        let f = self.b.ins().load(types::I64, flags(), e, 8);
        let sig = unit_signature(types::I64);
        let sig = self.b.import_signature(sig);
        self.b.ins().return_call_indirect(sig, f, &[self.ctx]);
        self.b.switch_to_block(miss);
        self.b.ins().store(flags(), pc, self.ctx, layout::PC as i32);
        let r = self.konst(reason::MISS);
        self.b
            .ins()
            .store(flags(), r, self.ctx, layout::REASON as i32);
        self.b.ins().return_(&[]);
        // exit: registers and budget back, pc and reason
        self.b.switch_to_block(self.exit);
        let pc = self.b.block_params(self.exit)[0];
        let why = self.b.block_params(self.exit)[1];
        self.writeback();
        self.b.ins().store(flags(), pc, self.ctx, layout::PC as i32);
        self.b
            .ins()
            .store(flags(), why, self.ctx, layout::REASON as i32);
        self.b.ins().return_(&[]);
    }

    /// What an exit writes back: the budget (registers were written through).
    fn writeback(&mut self) {
        let bv = self.b.use_var(self.budget);
        self.b
            .ins()
            .store(flags(), bv, self.ctx, layout::BUDGET as i32);
    }
}
