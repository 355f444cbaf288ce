//! Control-flow graphs of a program (paper §3.2–3.3 work on the CFG): RV64GC, as the machine
//! runs it, or x86-64 (decoded with `iced-x86`), for branch records from real hardware.
//!
//! * Functions come from the ELF symbol table ([`outcrop_rv::symbols::Symbols`]); each is
//!   disassembled linearly over its extent (compressed instructions included).
//! * Leaders: the function entry, every direct branch or jump target inside the function,
//!   and the instruction after every branch, jump or `ecall`. So a block ends where the
//!   machine's dynamic blocks end ([`outcrop_rv::Observer::block`]), or earlier at a leader.
//! * Edges are intraprocedural: fall-through, taken, jump, and the call's return edge (call
//!   block → return site). Calls, returns, tail calls (jumps out of the function) and
//!   indirect jumps have no static edges; their targets are known only at run time.
//! * Back edges are the retreating edges of a depth-first search from the entry (for a
//!   reducible graph exactly the edges whose target dominates their source); natural loops
//!   come from them, and every block knows its innermost loop.

use crate::error::{Error, Result};
use object::{Object, ObjectSection, SectionKind};
use outcrop_rv::inst::{decode, Inst, Op};
use outcrop_rv::symbols::Symbols;
use rustc_hash::FxHashMap;

mod x86;

/// Index of a block in [`Cfg::blocks`].
pub type BlockId = u32;

/// "No block" / "no loop".
pub const NONE: u32 = u32::MAX;

/// How a block ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    /// It runs into the next block (which is a leader).
    Fall,
    /// A conditional branch to `target`.
    Cond {
        /// Branch target.
        target: u64,
    },
    /// A direct jump (`jal` not linking) to `target`.
    Jump {
        /// Jump target.
        target: u64,
    },
    /// A call (`jal`/`jalr` linking `ra` or `t0`); `target` when direct.
    Call {
        /// Direct call target.
        target: Option<u64>,
    },
    /// A return (`jalr x0, 0(ra|t0)`).
    Return,
    /// Any other indirect jump.
    Indirect,
    /// A system call; execution continues at the next block.
    Ecall,
    /// Undecodable bytes or the end of the function: no successor.
    Halt,
}

impl Term {
    /// Whether the block's last instruction is a branch or jump.
    pub fn is_transfer(self) -> bool {
        !matches!(self, Term::Fall | Term::Ecall | Term::Halt)
    }
}

/// One basic block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Address of the first instruction.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Address of the last instruction.
    pub last: u64,
    /// Instructions in the block.
    pub insns: u32,
    /// Index of its function in [`Cfg::funcs`].
    pub func: u32,
    /// How it ends.
    pub term: Term,
}

/// Kinds of intraprocedural edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Fall-through (not-taken branch, or running into a leader, or after `ecall`).
    Fall,
    /// A taken conditional branch.
    Taken,
    /// A direct jump inside the function.
    Jump,
    /// From a call block to its return site.
    CallReturn,
}

/// One intraprocedural edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Target block.
    pub to: BlockId,
    /// Kind.
    pub kind: EdgeKind,
    /// Whether it is a back (retreating) edge.
    pub back: bool,
}

/// One function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Func {
    /// Symbol name.
    pub name: String,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Its blocks: `first_block .. first_block + block_count` (address order; the entry
    /// block is the first when the function has any).
    pub first_block: BlockId,
    /// Number of blocks.
    pub block_count: u32,
}

/// The control-flow graph of a whole program.
#[derive(Clone, Debug, Default)]
pub struct Cfg {
    /// Functions in address order.
    pub funcs: Vec<Func>,
    /// Blocks in address order.
    pub blocks: Vec<Block>,
    /// Successors per block.
    pub succs: Vec<Vec<Edge>>,
    /// Predecessors per block (sources of non-back and back edges alike).
    pub preds: Vec<Vec<BlockId>>,
    /// Per block: the header block of its innermost natural loop, or [`NONE`].
    pub loop_of: Vec<u32>,
    /// Retreating edges whose target does not dominate their source (irreducible cycles):
    /// they end paths like back edges but form no natural loop.
    pub irreducible_edges: u64,
    /// The instruction set.
    pub isa: Isa,
    /// The code sections (address, bytes), for disassembly.
    code: Vec<(u64, Vec<u8>)>,
    by_start: FxHashMap<u64, BlockId>,
}

/// The instruction set of a program's code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Isa {
    /// RV64GC (the machine's).
    #[default]
    RiscV,
    /// x86-64.
    X86_64,
}

impl Isa {
    /// The instruction set of an ELF file's machine, or `None` if neither.
    pub fn of_elf(data: &[u8]) -> Result<Isa> {
        let file = object::File::parse(data).map_err(|e| Error::Elf(e.to_string()))?;
        match file.architecture() {
            object::Architecture::Riscv64 => Ok(Isa::RiscV),
            object::Architecture::X86_64 => Ok(Isa::X86_64),
            a => Err(Error::Elf(format!(
                "{a:?} code: Outcrop builds CFGs of RISC-V (RV64) and x86-64 programs"
            ))),
        }
    }
}

/// One decoded instruction: where, how long, how it ends a block.
#[derive(Clone, Copy, Debug)]
struct Insn {
    pc: u64,
    len: u64,
    term: Option<Term>,
}

/// The code section holding `start`, cut to `end`.
fn section_at<'c>(code: &[(u64, &'c [u8])], start: u64, end: u64) -> Option<(u64, &'c [u8], u64)> {
    let &(base, bytes) = code
        .iter()
        .find(|(a, b)| start >= *a && start < *a + b.len() as u64)?;
    Some((base, bytes, end.min(base + bytes.len() as u64)))
}

/// Instructions of one function.
fn decode_range(isa: Isa, code: &[(u64, &[u8])], start: u64, end: u64) -> Vec<Insn> {
    match isa {
        Isa::RiscV => disassemble(code, start, end)
            .iter()
            .map(|(pc, i)| Insn {
                pc: *pc,
                len: u64::from(i.len.max(2)),
                term: terminator(*pc, i),
            })
            .collect(),
        Isa::X86_64 => x86::decode(code, start, end),
    }
}

/// Instructions of one function: (pc, decoded).
fn disassemble(code: &[(u64, &[u8])], start: u64, end: u64) -> Vec<(u64, Inst)> {
    let mut out = Vec::new();
    let Some((base, bytes, end)) = section_at(code, start, end) else {
        return out;
    };
    let mut pc = start;
    while pc + 2 <= end {
        let off = (pc - base) as usize;
        let lo = u16::from_le_bytes([bytes[off], bytes[off + 1]]);
        let hi = if off + 4 <= bytes.len() {
            u16::from_le_bytes([bytes[off + 2], bytes[off + 3]])
        } else {
            0
        };
        let inst = decode(lo, hi);
        let len = u64::from(inst.len.max(2));
        if pc + len > end {
            break;
        }
        out.push((pc, inst));
        pc += len;
    }
    out
}

/// How an instruction ends a block, or `None` if it does not.
fn terminator(pc: u64, inst: &Inst) -> Option<Term> {
    let link = |r: u8| r == 1 || r == 5;
    match inst.op {
        Op::Jal => {
            let target = pc.wrapping_add(inst.imm as i64 as u64);
            Some(if link(inst.rd) {
                Term::Call {
                    target: Some(target),
                }
            } else {
                Term::Jump { target }
            })
        }
        Op::Jalr => Some(if link(inst.rd) {
            Term::Call { target: None }
        } else if inst.rd == 0 && link(inst.rs1) && inst.imm == 0 {
            Term::Return
        } else {
            Term::Indirect
        }),
        Op::Beq | Op::Bne | Op::Blt | Op::Bge | Op::Bltu | Op::Bgeu | Op::Brr => Some(Term::Cond {
            target: pc.wrapping_add(inst.imm as i64 as u64),
        }),
        Op::Ecall => Some(Term::Ecall),
        Op::Illegal => Some(Term::Halt),
        _ => None,
    }
}

impl Cfg {
    /// The CFG of every function in an ELF executable, where the machine loads it (a PIE at
    /// `outcrop_rv::elf::PIE_BASE`).
    pub fn from_elf(data: &[u8]) -> Result<Cfg> {
        let file = object::File::parse(data).map_err(|e| Error::Elf(e.to_string()))?;
        let bias = match file.kind() {
            object::ObjectKind::Dynamic if Isa::of_elf(data)? == Isa::RiscV => {
                outcrop_rv::elf::PIE_BASE
            }
            _ => 0,
        };
        Cfg::from_objects(&[(data, bias, "")])
    }

    /// The CFG of every function of several objects loaded at once (a dynamically linked
    /// program and its shared libraries): `(ELF bytes, load bias, suffix)` each, the suffix
    /// appended to its function names (`@libc.so.6`). All must be of one instruction set.
    pub fn from_objects(parts: &[(&[u8], u64, &str)]) -> Result<Cfg> {
        let mut code: Vec<(u64, &[u8])> = Vec::new();
        let mut funcs: Vec<(String, u64, u64)> = Vec::new();
        let isa = match parts.first() {
            Some((data, _, _)) => Isa::of_elf(data)?,
            None => Isa::RiscV,
        };
        for &(data, bias, suffix) in parts {
            if Isa::of_elf(data)? != isa {
                return Err(Error::Elf(format!(
                    "object{suffix} is not {isa:?} code like the program"
                )));
            }
            let symbols =
                Symbols::from_elf_at(data, bias).map_err(|e| Error::Elf(e.to_string()))?;
            let file = object::File::parse(data).map_err(|e| Error::Elf(e.to_string()))?;
            for s in file.sections() {
                if s.kind() == SectionKind::Text {
                    let d = s.data().map_err(|e| Error::Elf(e.to_string()))?;
                    if !d.is_empty() {
                        code.push((s.address().wrapping_add(bias), d));
                    }
                }
            }
            funcs.extend(
                symbols
                    .functions()
                    .map(|f| (format!("{}{suffix}", f.name), f.start, f.end())),
            );
        }
        funcs.sort_by_key(|f| f.1);
        Ok(Cfg::from_code_of(isa, &code, &funcs))
    }

    /// The CFG of `funcs` (name, start, end; address order) over RISC-V code sections
    /// (address, bytes). Overlapping functions are cut at the next one's start.
    pub fn from_code(code: &[(u64, &[u8])], funcs: &[(String, u64, u64)]) -> Cfg {
        Cfg::from_code_of(Isa::RiscV, code, funcs)
    }

    /// [`Cfg::from_code`] for code of instruction set `isa`.
    pub fn from_code_of(isa: Isa, code: &[(u64, &[u8])], funcs: &[(String, u64, u64)]) -> Cfg {
        let mut cfg = Cfg {
            isa,
            ..Cfg::default()
        };
        for (i, (name, start, end)) in funcs.iter().enumerate() {
            let end = match funcs.get(i + 1) {
                Some(next) => (*end).min(next.1),
                None => *end,
            };
            if end <= *start || cfg.funcs.last().is_some_and(|f| f.end > *start) {
                continue;
            }
            let insts = decode_range(isa, code, *start, end);
            let fid = cfg.funcs.len() as u32;
            let first = cfg.blocks.len() as u32;
            cfg.add_blocks(fid, &insts, *start, end);
            cfg.funcs.push(Func {
                name: name.clone(),
                start: *start,
                end,
                first_block: first,
                block_count: cfg.blocks.len() as u32 - first,
            });
        }
        cfg.finish();
        cfg.code = code.iter().map(|(a, b)| (*a, b.to_vec())).collect();
        cfg
    }

    /// The instructions of block `b`, disassembled (`addr: text` per instruction).
    pub fn disassemble(&self, b: BlockId) -> Vec<String> {
        let Some(blk) = self.blocks.get(b as usize) else {
            return Vec::new();
        };
        let code: Vec<(u64, &[u8])> = self.code.iter().map(|(a, v)| (*a, v.as_slice())).collect();
        if self.isa == Isa::X86_64 {
            return x86::text(&code, blk.start, blk.end)
                .into_iter()
                .map(|(pc, t, target)| match target {
                    Some(a) => format!("{pc:#x}: {t}  <{}>", self.describe(a)),
                    None => format!("{pc:#x}: {t}"),
                })
                .collect();
        }
        disassemble(&code, blk.start, blk.end)
            .iter()
            .map(|(pc, i)| {
                // name the target of a direct branch, jump or call
                let target = match terminator(*pc, i) {
                    Some(Term::Cond { target } | Term::Jump { target }) => Some(target),
                    Some(Term::Call { target }) => target,
                    _ => None,
                };
                match target {
                    Some(t) => format!("{pc:#x}: {i}  <{}>", self.describe(t)),
                    None => format!("{pc:#x}: {i}"),
                }
            })
            .collect()
    }

    fn add_blocks(&mut self, func: u32, insts: &[Insn], start: u64, end: u64) {
        if insts.is_empty() {
            return;
        }
        let mut leaders = rustc_hash::FxHashSet::default();
        leaders.insert(start);
        for (i, ins) in insts.iter().enumerate() {
            if let Some(t) = ins.term {
                if let Some(next) = insts.get(i + 1) {
                    leaders.insert(next.pc);
                }
                match t {
                    Term::Cond { target } | Term::Jump { target }
                        if target >= start && target < end =>
                    {
                        leaders.insert(target);
                    }
                    _ => {}
                }
            }
        }
        let mut b: Option<Block> = None;
        for (i, ins) in insts.iter().enumerate() {
            let (pc, len) = (&ins.pc, ins.len);
            let blk = b.get_or_insert(Block {
                start: *pc,
                end: *pc,
                last: *pc,
                insns: 0,
                func,
                term: Term::Fall,
            });
            blk.end = pc + len;
            blk.last = *pc;
            blk.insns += 1;
            let term = ins.term;
            let next_leader = insts.get(i + 1).is_none_or(|n| leaders.contains(&n.pc));
            if term.is_some() || next_leader {
                let mut done = b.take().unwrap_or_else(|| unreachable_block(func));
                done.term = match term {
                    Some(t) => t,
                    None if insts.get(i + 1).is_none() => Term::Halt,
                    None => Term::Fall,
                };
                self.blocks.push(done);
            }
        }
    }

    /// Builds the index, edges, back edges and loops after the blocks are in place.
    fn finish(&mut self) {
        self.index();
        self.derive_edges();
        self.preds_and_loops();
    }

    fn index(&mut self) {
        self.by_start = self
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (b.start, i as u32))
            .collect();
    }

    fn derive_edges(&mut self) {
        let n = self.blocks.len();
        self.succs = vec![Vec::new(); n];
        for i in 0..n {
            let b = &self.blocks[i];
            let f = &self.funcs[b.func as usize];
            let in_func = |a: u64| a >= f.start && a < f.end;
            let next = (i + 1 < n
                && self.blocks[i + 1].start == b.end
                && self.blocks[i + 1].func == b.func)
                .then_some((i + 1) as u32);
            let mut out = Vec::new();
            let mut add = |to: Option<u32>, kind| {
                if let Some(to) = to {
                    if !out.iter().any(|e: &Edge| e.to == to) {
                        out.push(Edge {
                            to,
                            kind,
                            back: false,
                        });
                    }
                }
            };
            match b.term {
                Term::Fall | Term::Ecall => add(next, EdgeKind::Fall),
                Term::Cond { target } => {
                    add(next, EdgeKind::Fall);
                    if in_func(target) {
                        add(self.by_start.get(&target).copied(), EdgeKind::Taken);
                    }
                }
                Term::Jump { target } => {
                    if in_func(target) {
                        add(self.by_start.get(&target).copied(), EdgeKind::Jump);
                    }
                }
                Term::Call { .. } => add(next, EdgeKind::CallReturn),
                Term::Return | Term::Indirect | Term::Halt => {}
            }
            self.succs[i] = out;
        }
    }

    fn preds_and_loops(&mut self) {
        let n = self.blocks.len();
        self.preds = vec![Vec::new(); n];
        for (i, s) in self.succs.iter().enumerate() {
            for e in s {
                self.preds[e.to as usize].push(i as u32);
            }
        }
        self.loop_of = vec![NONE; n];
        for f in 0..self.funcs.len() {
            self.analyze_loops(f);
        }
    }

    /// Back edges (DFS retreating edges), dominators and natural loops of one function.
    fn analyze_loops(&mut self, f: usize) {
        let first = self.funcs[f].first_block as usize;
        let count = self.funcs[f].block_count as usize;
        if count == 0 {
            return;
        }
        let local = |b: u32| b as usize - first;
        let (post, roots) = self.mark_back_edges(first, count);
        let vroot = count;
        let idom = self.dominators(first, count, &post, &roots);
        // Dominance in O(1): pre/post numbers of a DFS over the dominator tree (blocks the
        // DFS never reached have no idom and dominate nothing).
        let mut children = vec![Vec::new(); count + 1];
        for v in 0..count {
            if idom[v] != usize::MAX {
                children[idom[v]].push(v);
            }
        }
        let (mut pre, mut postn) = (vec![usize::MAX; count + 1], vec![0usize; count + 1]);
        let mut clock = 0;
        let mut stack = vec![(vroot, 0usize)];
        pre[vroot] = clock;
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if let Some(&c) = children[v].get(*k) {
                *k += 1;
                clock += 1;
                pre[c] = clock;
                stack.push((c, 0));
            } else {
                clock += 1;
                postn[v] = clock;
                stack.pop();
            }
        }
        let dominates = |h: usize, v: usize| {
            pre[h] != usize::MAX && pre[v] != usize::MAX && pre[h] <= pre[v] && postn[v] <= postn[h]
        };
        // natural loops of back edges (retreating edges whose target dominates their source):
        // one backward walk per header from all its back edges' sources, so the work is the
        // loops' sizes, not back edges × blocks
        let mut sources: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        let mut irreducible = 0;
        for v in 0..count {
            for e in &self.succs[first + v] {
                if !e.back {
                    continue;
                }
                let h = local(e.to);
                if dominates(h, v) {
                    sources.entry(h).or_default().push(v);
                } else {
                    // a retreating edge into an irreducible cycle: it still ends paths
                    irreducible += 1;
                }
            }
        }
        let mut loops: Vec<(usize, Vec<usize>)> = Vec::with_capacity(sources.len());
        let mut stamp = vec![usize::MAX; count];
        for (h, mut work) in sources {
            stamp[h] = h;
            let mut body = vec![h];
            while let Some(x) = work.pop() {
                if stamp[x] == h {
                    continue;
                }
                stamp[x] = h;
                body.push(x);
                work.extend(self.preds[first + x].iter().map(|&p| local(p)));
            }
            loops.push((h, body));
        }
        self.irreducible_edges += irreducible;
        loops.sort_by_key(|(h, b)| (std::cmp::Reverse(b.len()), *h));
        for (h, body) in &loops {
            for &x in body {
                self.loop_of[first + x] = (first + h) as u32;
            }
        }
    }

    /// An iterative DFS of function blocks `[first, first + count)` from the entry, then from
    /// every block not reached yet, marking retreating edges `back`: the postorder and the
    /// DFS roots (local block numbers).
    fn mark_back_edges(&mut self, first: usize, count: usize) -> (Vec<usize>, Vec<usize>) {
        let local = |b: u32| b as usize - first;
        // iterative DFS from the entry, then from every block not reached yet
        let mut state = vec![0u8; count]; // 0 new, 1 on stack, 2 done
        let mut post = Vec::with_capacity(count);
        let mut roots = Vec::new();
        for root in 0..count {
            if state[root] != 0 {
                continue;
            }
            roots.push(root);
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some(&mut (v, ref mut k)) = stack.last_mut() {
                let succs = &mut self.succs[first + v];
                if *k < succs.len() {
                    let e = &mut succs[*k];
                    *k += 1;
                    let w = local(e.to);
                    match state[w] {
                        0 => {
                            state[w] = 1;
                            stack.push((w, 0));
                        }
                        1 => e.back = true,
                        _ => {}
                    }
                } else {
                    state[v] = 2;
                    post.push(v);
                    stack.pop();
                }
            }
        }
        (post, roots)
    }

    /// Immediate dominators (Cooper, Harvey, Kennedy) of the function's blocks, local
    /// numbers, with a virtual root (`count`) above every DFS root; `usize::MAX` for a block
    /// the DFS never reached.
    fn dominators(
        &self,
        first: usize,
        count: usize,
        post: &[usize],
        roots: &[usize],
    ) -> Vec<usize> {
        let local = |b: u32| b as usize - first;
        // dominators (Cooper, Harvey, Kennedy) over reverse postorder, with a virtual root
        // above every DFS root
        let rpo: Vec<usize> = post.iter().rev().copied().collect();
        let mut order = vec![0usize; count];
        for (i, &v) in rpo.iter().enumerate() {
            order[v] = i + 1; // 0 is the virtual root
        }
        let mut idom = vec![usize::MAX; count + 1];
        let vroot = count;
        idom[vroot] = vroot;
        let num = |v: usize| if v == vroot { 0 } else { order[v] };
        let mut is_root = vec![false; count];
        for &r in roots {
            idom[r] = vroot;
            is_root[r] = true;
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &v in &rpo {
                if is_root[v] {
                    continue;
                }
                let mut new = usize::MAX;
                for &p in &self.preds[first + v] {
                    let p = local(p);
                    if idom[p] == usize::MAX {
                        continue;
                    }
                    new = if new == usize::MAX {
                        p
                    } else {
                        let (mut a, mut b) = (p, new);
                        while a != b {
                            while num(a) > num(b) {
                                a = idom[a];
                            }
                            while num(b) > num(a) {
                                b = idom[b];
                            }
                        }
                        a
                    };
                }
                if new != usize::MAX && idom[v] != new {
                    idom[v] = new;
                    changed = true;
                }
            }
        }
        idom
    }

    /// A synthetic single-function CFG for tests and examples: `n` blocks at addresses
    /// `0x1000 + 0x100·i`, with exactly the given intraprocedural edges (`(from, to)`; an
    /// edge to the next block is a fall-through, any other a taken branch). Blocks without
    /// successors end in a return; the others are treated as multiway branches whose every
    /// target is an edge.
    pub fn synthetic(n: u32, edges: &[(u32, u32)]) -> Cfg {
        let addr = |i: u32| 0x1000 + 0x100 * u64::from(i);
        let mut cfg = Cfg::default();
        for i in 0..n {
            let term = if edges.iter().any(|e| e.0 == i) {
                Term::Fall
            } else {
                Term::Return
            };
            cfg.blocks.push(Block {
                start: addr(i),
                end: addr(i) + 0x100,
                last: addr(i) + 0xfc,
                insns: 64,
                func: 0,
                term,
            });
        }
        cfg.funcs.push(Func {
            name: "synthetic".into(),
            start: addr(0),
            end: addr(n),
            first_block: 0,
            block_count: n,
        });
        cfg.index();
        cfg.succs = (0..n)
            .map(|i| {
                edges
                    .iter()
                    .filter(|e| e.0 == i && e.1 < n)
                    .map(|e| Edge {
                        to: e.1,
                        kind: if e.1 == i + 1 {
                            EdgeKind::Fall
                        } else {
                            EdgeKind::Taken
                        },
                        back: false,
                    })
                    .collect()
            })
            .collect();
        cfg.preds_and_loops();
        cfg
    }

    /// The block starting at `addr`.
    #[inline]
    pub fn block_at(&self, addr: u64) -> Option<BlockId> {
        self.by_start.get(&addr).copied()
    }

    /// The block containing `addr`.
    pub fn block_containing(&self, addr: u64) -> Option<BlockId> {
        let i = self.blocks.partition_point(|b| b.start <= addr);
        let b = self.blocks.get(i.checked_sub(1)?)?;
        (addr < b.end).then_some((i - 1) as u32)
    }

    /// The intraprocedural edge `from → to`, if there is one.
    #[inline]
    pub fn edge(&self, from: BlockId, to: BlockId) -> Option<&Edge> {
        self.succs.get(from as usize)?.iter().find(|e| e.to == to)
    }

    /// The block after `b` in its function by fall-through (for [`Term::Fall`],
    /// [`Term::Ecall`] and not-taken [`Term::Cond`]).
    pub fn fall(&self, b: BlockId) -> Option<BlockId> {
        self.succs
            .get(b as usize)?
            .iter()
            .find(|e| e.kind == EdgeKind::Fall)
            .map(|e| e.to)
    }

    /// The function entry block of function `f`.
    pub fn entry(&self, f: u32) -> Option<BlockId> {
        let f = self.funcs.get(f as usize)?;
        (f.block_count > 0).then_some(f.first_block)
    }

    /// Whether block `b` starts its function.
    pub fn is_entry(&self, b: BlockId) -> bool {
        self.blocks
            .get(b as usize)
            .is_some_and(|x| self.funcs[x.func as usize].start == x.start)
    }

    /// Name of `b`'s function and its offset, `name+0x1c`.
    pub fn describe(&self, addr: u64) -> String {
        match self.block_containing(addr) {
            Some(b) => {
                let f = &self.funcs[self.blocks[b as usize].func as usize];
                if addr == f.start {
                    f.name.clone()
                } else {
                    format!("{}+{:#x}", f.name, addr - f.start)
                }
            }
            None => format!("{addr:#x}"),
        }
    }
}

fn unreachable_block(func: u32) -> Block {
    Block {
        start: 0,
        end: 0,
        last: 0,
        insns: 0,
        func,
        term: Term::Halt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_and_back_edges() {
        // 0 → 1 → 2 → 1 (loop), 2 → 3
        let cfg = Cfg::synthetic(4, &[(0, 1), (1, 2), (2, 1), (2, 3)]);
        assert!(cfg.edge(2, 1).is_some_and(|e| e.back));
        assert!(!cfg.edge(0, 1).is_some_and(|e| e.back));
        assert_eq!(cfg.loop_of, vec![NONE, 1, 1, NONE]);
    }

    #[test]
    fn nested_loops_get_the_innermost_header() {
        // 0 → 1 → 2 → 3 → 2 (inner), 3 → 4 → 1 (outer), 4 → 5
        let cfg = Cfg::synthetic(6, &[(0, 1), (1, 2), (2, 3), (3, 2), (3, 4), (4, 1), (4, 5)]);
        assert_eq!(cfg.loop_of, vec![NONE, 1, 2, 2, 1, NONE]);
    }

    #[test]
    fn block_lookup() {
        let cfg = Cfg::synthetic(3, &[(0, 1), (1, 2)]);
        assert_eq!(cfg.block_at(0x1100), Some(1));
        assert_eq!(cfg.block_containing(0x11fc), Some(1));
        assert_eq!(cfg.block_containing(0x1300), None);
        assert_eq!(cfg.block_containing(0x10), None);
    }
}
