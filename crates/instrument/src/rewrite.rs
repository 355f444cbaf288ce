//! The rewriter: finds functions, reads their registers, labels and loops, and emits the
//! instrumented text (see the crate documentation for the scheme).

use crate::asm::{self, Line, Stmt};
use crate::{Config, Error, Instrumented, Result, Sampling, Sites};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Scratch candidates, in order of preference: t6, t5, t4, t3, t0 (x31, x30, x29, x28, x5).
/// t1 and t2 are left alone: `tail` expands through t1 (or t2), and t2 is GCC's static chain.
const SCRATCH: [(u8, &str); 5] = [(31, "t6"), (30, "t5"), (29, "t4"), (28, "t3"), (5, "t0")];
/// Then argument registers that are never results (a2–a7), in functions that make no tail
/// call (which could pass an unnamed argument register on to its callee).
const SCRATCH_ARGS: [(u8, &str); 6] = [
    (17, "a7"),
    (16, "a6"),
    (15, "a5"),
    (14, "a4"),
    (13, "a3"),
    (12, "a2"),
];

/// Conditional branches with one register operand, then with two.
const COND2: [&str; 8] = [
    "beqz", "bnez", "blez", "bgez", "bltz", "bgtz", "c.beqz", "c.bnez",
];
const COND3: [&str; 10] = [
    "beq", "bne", "blt", "bge", "bltu", "bgeu", "bgt", "ble", "bgtu", "bleu",
];
/// Directives that put data where the rewriter would need to read instructions.
const DATA: [&str; 13] = [
    ".word", ".half", ".hword", ".byte", ".2byte", ".4byte", ".8byte", ".dword", ".quad", ".long",
    ".short", ".insn", ".inst",
];

fn int_reg(tok: &str) -> Option<u8> {
    if let Some(n) = tok.strip_prefix('x') {
        return n
            .parse::<u8>()
            .ok()
            .filter(|&n| n < 32 && !n.to_string().is_empty());
    }
    Some(match tok {
        "zero" => 0,
        "ra" => 1,
        "sp" => 2,
        "gp" => 3,
        "tp" => 4,
        "t0" => 5,
        "t1" => 6,
        "t2" => 7,
        "s0" | "fp" => 8,
        "s1" => 9,
        "a0" => 10,
        "a1" => 11,
        "a2" => 12,
        "a3" => 13,
        "a4" => 14,
        "a5" => 15,
        "a6" => 16,
        "a7" => 17,
        "s2" => 18,
        "s3" => 19,
        "s4" => 20,
        "s5" => 21,
        "s6" => 22,
        "s7" => 23,
        "s8" => 24,
        "s9" => 25,
        "s10" => 26,
        "s11" => 27,
        "t3" => 28,
        "t4" => 29,
        "t5" => 30,
        "t6" => 31,
        _ => return None,
    })
}

fn is_cond(m: &str) -> Option<usize> {
    if COND2.contains(&m) {
        Some(2)
    } else if COND3.contains(&m) {
        Some(3)
    } else {
        None
    }
}

/// The label a branch or jump goes to, if it is one (conditional branches, `j`, `jal x0`).
fn branch_target<'a>(m: &str, ops: &[&'a str]) -> Option<&'a str> {
    if is_cond(m).is_some() {
        return ops.last().copied();
    }
    match (m, ops) {
        ("j" | "c.j", [t]) => Some(t),
        ("jal", [rd, t]) if int_reg(rd) == Some(0) => Some(t),
        ("jump", [t, _]) => Some(t),
        _ => None,
    }
}

/// Does control never continue to the next statement after `m`?
fn unconditional(m: &str, ops: &[&str]) -> bool {
    match m {
        "j" | "jr" | "ret" | "tail" | "c.j" | "c.jr" | "jump" | "mret" | "sret" => true,
        "jal" | "jalr" => ops.len() >= 2 && int_reg(ops[0]) == Some(0),
        _ => false,
    }
}

/// A line GCC wrote as one sequence that must stay as it is: an LR/SC loop (its branches
/// use numeric labels, and nothing may come between `lr` and `sc`).
fn atomic_sequence(line: &Line) -> bool {
    line.stmts
        .iter()
        .any(|s| matches!(s, Stmt::Insn { mnemonic, .. } if mnemonic.starts_with("lr.")))
}

/// Refuses a function whose instructions name an address relative to the location counter
/// (`.+8`, `. - 4`) or a label plus an offset as a branch target (`.L3+4`): instrumenting
/// inserts code, which would move what they point at (the program would jump into the
/// inserted code). Labels — named or numeric (`1f`) — move with their code and are fine.
fn position_independent(lines: &[Line], f: &Func) -> Result<()> {
    for line in lines.iter().take(f.end + 1).skip(f.start.0) {
        for st in &line.stmts {
            let Stmt::Insn { mnemonic, ops } = st else {
                continue;
            };
            for op in ops {
                if asm::tokens(op).any(|(_, t)| t == ".") {
                    return Err(err(
                        line,
                        format!(
                            "`{op}` is relative to the location counter `.`: instrumenting inserts code, which would move its target; write a label (e.g. `1:` and `1f`) instead"
                        ),
                    ));
                }
            }
            if let Some(t) = branch_target(mnemonic, ops) {
                if t.contains(['+', '-']) {
                    return Err(err(
                        line,
                        format!(
                            "branch target `{t}` is an offset from a label: instrumenting inserts code, which would move it; branch to a label of its own instead"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Is `t` a numeric local label reference (`1f`, `2b`)?
fn numeric_ref(t: &str) -> bool {
    t.len() >= 2 && t.ends_with(['f', 'b']) && t[..t.len() - 1].bytes().all(|b| b.is_ascii_digit())
}

fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

fn err(line: &Line, detail: impl Into<String>) -> Error {
    Error::Asm {
        line: line.no,
        text: truncate(line.text),
        detail: detail.into(),
    }
}

/// Section tracking as GNU as does it: `.text`, `.data`, `.bss`, `.section`,
/// `.pushsection`/`.popsection`, `.previous`.
#[derive(Default)]
struct Sections {
    cur: String,
    prev: String,
    stack: Vec<(String, String)>,
}

impl Sections {
    fn new() -> Sections {
        Sections {
            cur: ".text".into(),
            prev: ".text".into(),
            stack: Vec::new(),
        }
    }

    /// Applies a directive; true if it changes (or may change) the section.
    fn apply(&mut self, name: &str, args: &str) -> bool {
        let first = || {
            args.split(',')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"')
                .to_string()
        };
        let next = match name {
            ".text" | ".data" | ".bss" => name.to_string(),
            ".section" => first(),
            ".pushsection" => {
                self.stack.push((self.cur.clone(), self.prev.clone()));
                let n = first();
                self.prev = std::mem::replace(&mut self.cur, n);
                return true;
            }
            ".popsection" => {
                if let Some((c, p)) = self.stack.pop() {
                    self.cur = c;
                    self.prev = p;
                }
                return true;
            }
            ".previous" => {
                std::mem::swap(&mut self.cur, &mut self.prev);
                return true;
            }
            _ => return false,
        };
        self.prev = std::mem::replace(&mut self.cur, next);
        true
    }
}

/// Where a statement is: line index and statement index.
type Pos = (usize, usize);

/// One function: from its label to its `.size`.
struct Func<'a> {
    name: &'a str,
    qual: String,
    /// Position of the function's label.
    start: Pos,
    /// Line index of `.size name, …`.
    end: usize,
    /// The section the function's label is in.
    section: String,
    /// Section of every statement in the function, by position.
    sec: HashMap<Pos, String>,
    /// Inside `#APP … #NO_APP`, by line index.
    app: HashSet<usize>,
}

impl Func<'_> {
    fn main(&self, p: Pos) -> bool {
        self.sec.get(&p).is_some_and(|s| *s == self.section)
    }
}

/// Registers and labels of one function.
struct Facts<'a> {
    /// Scratch registers (first holds addresses, second values) and whether they are spilled.
    a: &'static str,
    b: &'static str,
    spill: bool,
    /// Labels defined in the function's own section (renamed in the duplicate).
    local: HashSet<&'a str>,
    /// Labels named by some instruction operand.
    referenced: HashSet<&'a str>,
    /// Labels a later branch jumps back to.
    loop_heads: HashSet<&'a str>,
}

fn facts<'a>(lines: &[Line<'a>], f: &Func<'a>, types: &HashSet<&str>) -> Facts<'a> {
    let mut used = [false; 32];
    let mut opaque = false;
    let mut tail_calls = false;
    let mut local = HashSet::new();
    let mut referenced = HashSet::new();
    let mut defs: HashMap<&str, Pos> = HashMap::new();
    let mut heads = HashSet::new();
    for (li, line) in lines.iter().enumerate().take(f.end + 1).skip(f.start.0) {
        if f.app.contains(&li) {
            opaque = true;
        }
        for (si, st) in line.stmts.iter().enumerate() {
            let p = (li, si);
            if p < f.start {
                continue;
            }
            match st {
                Stmt::Label(l) => {
                    let numeric = l.starts_with(|c: char| c.is_ascii_digit());
                    if f.main(p) && *l != f.name && !types.contains(l) && !numeric {
                        local.insert(*l);
                    }
                    defs.insert(*l, p);
                }
                Stmt::Directive { name, args } => {
                    if DATA.contains(name) && f.main(p) {
                        opaque = true;
                    }
                    for (_, t) in asm::tokens(args) {
                        if let Some(r) = int_reg(t) {
                            used[r as usize] = true;
                        }
                    }
                }
                Stmt::Insn { mnemonic, ops } => {
                    match *mnemonic {
                        "tail" => {
                            used[6] = true;
                            used[7] = true;
                            tail_calls = true;
                        }
                        "call" => used[1] = true,
                        "jr" | "c.jr" | "jalr"
                            if ops.first().and_then(|r| int_reg(r)) != Some(1) =>
                        {
                            tail_calls = true; // an indirect jump: maybe a sibling call
                        }
                        _ => {}
                    }
                    for op in ops {
                        for (_, t) in asm::tokens(op) {
                            if let Some(r) = int_reg(t) {
                                used[r as usize] = true;
                            } else {
                                referenced.insert(t);
                            }
                        }
                    }
                    if let Some(t) = branch_target(mnemonic, ops) {
                        if defs.get(t).is_some_and(|&d| d <= p) && f.main(p) {
                            heads.insert(t);
                        }
                    }
                }
            }
        }
    }
    // a direct jump out of the function is a tail call too
    let jumps_out = lines
        .iter()
        .take(f.end + 1)
        .skip(f.start.0)
        .flat_map(|l| &l.stmts)
        .any(|s| match s {
            Stmt::Insn { mnemonic, ops } => branch_target(mnemonic, ops)
                .is_some_and(|t| !defs.contains_key(t) && !numeric_ref(t)),
            _ => false,
        });
    let args_ok = !tail_calls && !jumps_out;
    let free: Vec<&'static str> = SCRATCH
        .iter()
        .chain(SCRATCH_ARGS.iter().filter(|_| args_ok))
        .filter(|(r, _)| !used[*r as usize])
        .map(|(_, n)| *n)
        .collect();
    let (a, b, spill) = if !opaque && free.len() >= 2 {
        (free[0], free[1], false)
    } else {
        ("t6", "t5", true)
    };
    heads.retain(|h| local.contains(h));
    Facts {
        a,
        b,
        spill,
        local,
        referenced,
        loop_heads: heads,
    }
}

/// The output being built and the state shared by every function of a file.
struct Emitter<'c> {
    cfg: &'c Config,
    level: u8,
    out: String,
    /// Out-of-line code waiting for the end of the current section run.
    pending: Vec<String>,
    /// Could control reach the next statement emitted?
    fallthrough: bool,
    next_label: usize,
    sites: Vec<String>,
}

impl Emitter<'_> {
    fn line(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn fresh(&mut self, kind: &str) -> String {
        self.next_label += 1;
        format!(".Loutcrop_{kind}{}", self.next_label)
    }

    fn site(&mut self, name: String) -> usize {
        self.sites.push(name);
        self.sites.len() - 1
    }

    /// Emits the out-of-line code gathered so far, behind a jump if control could fall into
    /// it.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let skip = self.fallthrough.then(|| self.fresh("skip"));
        if let Some(s) = &skip {
            let j = format!("\tj\t{s}");
            self.line(&j);
        }
        for l in std::mem::take(&mut self.pending) {
            self.out.push_str(&l);
            self.out.push('\n');
        }
        if let Some(s) = skip {
            let l = format!("{s}:");
            self.line(&l);
        }
    }
}

/// The code of one site or check, for a function's scratch registers.
struct Code<'f> {
    a: &'f str,
    b: &'f str,
    spill: bool,
    count: bool,
}

impl Code<'_> {
    fn spill(&self, v: &mut Vec<String>) {
        if self.spill {
            v.push("\taddi\tsp,sp,-16".into());
            v.push(format!("\tsd\t{},0(sp)", self.a));
            v.push(format!("\tsd\t{},8(sp)", self.b));
        }
    }

    fn unspill(&self, v: &mut Vec<String>) {
        if self.spill {
            v.push(format!("\tld\t{},0(sp)", self.a));
            v.push(format!("\tld\t{},8(sp)", self.b));
            v.push("\taddi\tsp,sp,16".into());
        }
    }

    /// counts[site] += 1 (registers must be free or spilled).
    fn incr(&self, site: usize, v: &mut Vec<String>) {
        if !self.count {
            return;
        }
        let (a, b) = (self.a, self.b);
        v.push(format!("\tlla\t{a},.Loutcrop_counts+{}", site * 8));
        v.push(format!("\tld\t{b},0({a})"));
        v.push(format!("\taddi\t{b},{b},1"));
        v.push(format!("\tsd\t{b},0({a})"));
    }

    /// Full instrumentation of `site`, inline.
    fn full(&self, site: usize) -> Vec<String> {
        let mut v = Vec::new();
        if !self.count {
            return v;
        }
        self.spill(&mut v);
        self.incr(site, &mut v);
        self.unspill(&mut v);
        v
    }

    /// The software counter's fast path; `sample` gets control when it reaches zero, with
    /// `a` holding `&__outcrop_counter` and the registers still spilled. Returns the inline
    /// lines and the label the sample path returns to (before the registers are restored).
    fn counter(&self, em: &mut Emitter, sample: &str) -> (Vec<String>, String) {
        let (a, b) = (self.a, self.b);
        let back = em.fresh("r");
        let mut v = Vec::new();
        self.spill(&mut v);
        v.push(format!("\tlla\t{a},__outcrop_counter"));
        v.push(format!("\tld\t{b},0({a})"));
        v.push(format!("\tbeqz\t{b},{sample}"));
        v.push(format!("\taddi\t{b},{b},-1"));
        v.push(format!("\tsd\t{b},0({a})"));
        v.push(format!("{back}:"));
        self.unspill(&mut v);
        (v, back)
    }

    /// The counter's reset on the sample path: countdown = reset.
    fn reset(&self, v: &mut Vec<String>) {
        v.push(format!("\tld\t{},8({})", self.b, self.a));
        v.push(format!("\tsd\t{},0({})", self.b, self.a));
    }

    /// A site sampled by `sampling` (counter or brr; full is inline): inline lines, with the
    /// out-of-line sample path added to the emitter's pending code.
    fn sampled(&self, em: &mut Emitter, site: usize) -> Vec<String> {
        let out = em.fresh("s");
        match em.cfg.sampling {
            Sampling::Full => self.full(site),
            Sampling::Counter => {
                let (v, back) = self.counter(em, &out);
                let mut o = vec![format!("{out}:")];
                self.reset(&mut o);
                self.incr(site, &mut o);
                o.push(format!("\tj\t{back}"));
                em.pending.extend(o);
                v
            }
            Sampling::Brr => {
                let back = em.fresh("r");
                let v = vec![
                    format!("\t.insn j 0x0b, x{}, {out}", em.level),
                    format!("{back}:"),
                ];
                let mut o = vec![format!("{out}:")];
                o.extend(self.full(site));
                o.push(format!("\tj\t{back}"));
                em.pending.extend(o);
                v
            }
        }
    }

    /// A Full-Duplication check: enter `dup` when it samples.
    fn check(&self, em: &mut Emitter, dup: &str) -> Vec<String> {
        match em.cfg.sampling {
            Sampling::Brr => vec![format!("\t.insn j 0x0b, x{}, {dup}", em.level)],
            _ => {
                let out = em.fresh("s");
                let (v, _) = self.counter(em, &out);
                let mut o = vec![format!("{out}:")];
                self.reset(&mut o);
                self.unspill(&mut o);
                o.push(format!("\tj\t{dup}"));
                em.pending.extend(o);
                v
            }
        }
    }
}

fn dup_name(fid: usize, label: &str) -> String {
    format!(".Loutcrop_d{fid}_{}", label.trim_start_matches('.'))
}

/// Rewrites `op`'s symbol tokens through `map`.
fn rename(op: &str, map: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(op.len());
    let mut last = 0;
    for (i, t) in asm::tokens(op) {
        if let Some(n) = map(t) {
            out.push_str(&op[last..i]);
            out.push_str(&n);
            last = i + t.len();
        }
    }
    out.push_str(&op[last..]);
    out
}

fn insn_text(m: &str, ops: &[String]) -> String {
    if ops.is_empty() {
        format!("\t{m}")
    } else {
        format!("\t{m}\t{}", ops.join(","))
    }
}

fn stmt_text(st: &Stmt) -> String {
    match st {
        Stmt::Label(l) => format!("{l}:"),
        Stmt::Directive { name, args: "" } => format!("\t{name}"),
        Stmt::Directive { name, args } => format!("\t{name}\t{args}"),
        Stmt::Insn { mnemonic, ops } => {
            let ops: Vec<String> = ops.iter().map(|s| s.to_string()).collect();
            insn_text(mnemonic, &ops)
        }
    }
}

/// Finds the functions of `lines`.
fn functions<'a>(
    lines: &[Line<'a>],
    types: &HashSet<&'a str>,
    globals: &HashSet<&'a str>,
    unit: &str,
) -> Result<Vec<Func<'a>>> {
    let mut funcs: Vec<Func> = Vec::new();
    let mut sections = Sections::new();
    let mut open: Option<Func> = None;
    let mut in_app = false;
    for (li, line) in lines.iter().enumerate() {
        if let Some(a) = line.app {
            in_app = a;
        }
        if in_app {
            if let Some(f) = open.as_mut() {
                f.app.insert(li);
            }
        }
        for (si, st) in line.stmts.iter().enumerate() {
            if let Stmt::Directive { name, args } = st {
                sections.apply(name, args);
                if *name == ".size" {
                    let sym = args.split(',').next().unwrap_or("").trim();
                    if open.as_ref().is_some_and(|f| f.name == sym) {
                        if si + 1 != line.stmts.len() || si != 0 {
                            return Err(err(line, "put `.size` on a line of its own"));
                        }
                        if let Some(mut f) = open.take() {
                            f.end = li;
                            funcs.push(f);
                        }
                        continue;
                    }
                }
            }
            if let Some(f) = open.as_mut() {
                f.sec.insert((li, si), sections.cur.clone());
                continue;
            }
            if let Stmt::Label(l) = st {
                if types.contains(l) {
                    if in_app {
                        return Err(err(
                            line,
                            format!("function `{l}` defined inside inline assembly"),
                        ));
                    }
                    let qual = if globals.contains(l) || unit.is_empty() {
                        l.to_string()
                    } else {
                        format!("{l}@{unit}")
                    };
                    let mut sec = HashMap::new();
                    sec.insert((li, si), sections.cur.clone());
                    open = Some(Func {
                        name: l,
                        qual,
                        start: (li, si),
                        end: 0,
                        section: sections.cur.clone(),
                        sec,
                        app: HashSet::new(),
                    });
                }
            }
        }
    }
    if let Some(f) = open {
        let line = &lines[f.start.0];
        return Err(err(
            line,
            format!(
                "function `{}` has no `.size {0}, .-{0}`: cannot tell where it ends",
                f.name
            ),
        ));
    }
    Ok(funcs)
}

pub fn rewrite(src: &str, cfg: &Config, level: u8) -> Result<Instrumented> {
    let lines = asm::parse(src);
    let mut types = HashSet::new();
    let mut globals = HashSet::new();
    for line in &lines {
        for st in &line.stmts {
            match st {
                Stmt::Directive {
                    name: ".type",
                    args,
                } => {
                    let mut it = args.split(',');
                    let sym = it.next().unwrap_or("").trim();
                    let ty = it.next().unwrap_or("").trim();
                    if ty
                        .trim_start_matches(['@', '%', '"'])
                        .starts_with("function")
                    {
                        types.insert(sym);
                    }
                }
                Stmt::Directive {
                    name: ".globl" | ".global",
                    args,
                } => {
                    for s in args.split(',') {
                        globals.insert(s.trim());
                    }
                }
                Stmt::Label(l) if l.starts_with(".Loutcrop") || l.starts_with("__outcrop") => {
                    return Err(err(
                        line,
                        format!("`{l}` is Outcrop's own label: is this file already instrumented?"),
                    ));
                }
                _ => {}
            }
        }
    }
    let funcs = functions(&lines, &types, &globals, &cfg.unit)?;
    let mut em = Emitter {
        cfg,
        level,
        out: String::with_capacity(src.len() * 2),
        pending: Vec::new(),
        fallthrough: true,
        next_label: 0,
        sites: Vec::new(),
    };
    let mut result = Instrumented::default();
    let mut li = 0;
    for (fid, f) in funcs.iter().enumerate() {
        while li < f.start.0 {
            em.line(lines[li].text);
            li += 1;
        }
        position_independent(&lines, f)?;
        let facts = facts(&lines, f, &types);
        if facts.spill {
            result.spilled.push(f.qual.clone());
        }
        result.functions += 1;
        function(&mut em, &lines, f, fid, &facts, &types, &mut result)?;
        li = f.end + 1;
    }
    while li < lines.len() {
        em.line(lines[li].text);
        li += 1;
    }
    trailer(&mut em, cfg);
    result.sites = em.sites;
    result.text = em.out;
    Ok(result)
}

/// Emits one function, from its label's line to its `.size` line.
fn function<'a>(
    em: &mut Emitter,
    lines: &[Line<'a>],
    f: &Func<'a>,
    fid: usize,
    facts: &Facts<'a>,
    types: &HashSet<&str>,
    result: &mut Instrumented,
) -> Result<()> {
    let code = Code {
        a: facts.a,
        b: facts.b,
        spill: facts.spill,
        count: em.cfg.count,
    };
    let dup = em.cfg.full_duplication;
    let edges = em.cfg.sites == Sites::Edges;
    let entry_dup = format!(".Loutcrop_e{fid}");
    let mut entry_pending = false;
    em.fallthrough = true;
    for (li, line) in lines.iter().enumerate().take(f.end).skip(f.start.0) {
        // statements before the function's label (same line) pass through
        let first = if li == f.start.0 { f.start.1 } else { 0 };
        if first > 0 {
            for st in &line.stmts[..first] {
                em.line(&stmt_text(st));
            }
        }
        let in_app = f.app.contains(&li) || atomic_sequence(line);
        let verbatim = line.stmts.len() <= 1 && first == 0;
        if in_app || line.stmts.is_empty() {
            // inline assembly and comment-only lines are copied; inline assembly may fall
            // through or jump anywhere
            if in_app && !line.stmts.is_empty() {
                if entry_pending {
                    entry(em, &code, f, dup, &entry_dup);
                    entry_pending = false;
                }
                em.fallthrough = true;
                for st in &line.stmts {
                    if let Stmt::Insn { mnemonic, .. } = st {
                        if is_cond(mnemonic).is_some() && em.cfg.sites == Sites::Edges {
                            result.skipped_branches += 1;
                        }
                    }
                }
            }
            em.line(line.text);
            continue;
        }
        for (si, st) in line.stmts.iter().enumerate().skip(first) {
            let p = (li, si);
            let text = if verbatim {
                line.text.to_string()
            } else {
                stmt_text(st)
            };
            match st {
                Stmt::Directive { name, .. } => {
                    if matches!(
                        *name,
                        ".text"
                            | ".data"
                            | ".bss"
                            | ".section"
                            | ".pushsection"
                            | ".popsection"
                            | ".previous"
                    ) {
                        em.flush();
                    }
                    em.line(&text);
                }
                Stmt::Label(l) => {
                    if entry_pending && facts.referenced.contains(l) {
                        entry(em, &code, f, dup, &entry_dup);
                        entry_pending = false;
                    }
                    em.line(&text);
                    em.fallthrough = true;
                    if p == f.start {
                        entry_pending = dup || em.cfg.sites == Sites::Entries;
                    } else if dup && facts.loop_heads.contains(l) {
                        let v = code.check(em, &dup_name(fid, l));
                        for s in v {
                            em.line(&s);
                        }
                        result.loop_heads += 1;
                    }
                }
                Stmt::Insn { mnemonic, ops } => {
                    if entry_pending {
                        entry(em, &code, f, dup, &entry_dup);
                        entry_pending = false;
                    }
                    let arity = is_cond(mnemonic).filter(|_| {
                        let numeric = ops.last().is_some_and(|t| numeric_ref(t));
                        result.skipped_branches += usize::from(numeric && edges && !dup);
                        !numeric
                    });
                    if let (Some(n), true, false) = (arity, edges, dup) {
                        if ops.len() != n {
                            return Err(err(
                                line,
                                format!("`{mnemonic}` takes {n} operands, here {}", ops.len()),
                            ));
                        }
                        edge(
                            em,
                            &code,
                            f,
                            line,
                            mnemonic,
                            ops,
                            ops[n - 1].to_string(),
                            false,
                        );
                    } else {
                        em.line(&text);
                        em.fallthrough = !unconditional(mnemonic, ops);
                    }
                }
            }
        }
    }
    if entry_pending {
        entry(em, &code, f, dup, &entry_dup);
    }
    em.flush();
    if dup {
        duplicate(em, &code, lines, f, fid, facts, &entry_dup, types)?;
        em.flush();
    }
    em.line(lines[f.end].text);
    Ok(())
}

/// The code at a function's entry: its site (entries, No-Duplication) or its check
/// (Full-Duplication).
fn entry(em: &mut Emitter, code: &Code, f: &Func, dup: bool, entry_dup: &str) {
    let v = if dup {
        code.check(em, entry_dup)
    } else {
        let site = em.site(f.qual.clone());
        code.sampled(em, site)
    };
    for s in v {
        em.line(&s);
    }
}

/// A conditional branch with both edges instrumented: the taken edge through an out-of-line
/// trampoline, the fall-through edge right after. `full` forces full instrumentation (the
/// duplicate's).
#[allow(clippy::too_many_arguments)]
fn edge(
    em: &mut Emitter,
    code: &Code,
    f: &Func,
    line: &Line,
    mnemonic: &str,
    ops: &[&str],
    target: String,
    full: bool,
) {
    let n = ops.len();
    let tramp = em.fresh("t");
    let taken = em.site(format!("{}:{}:taken", f.qual, line.no));
    let fall = em.site(format!("{}:{}:fall", f.qual, line.no));
    let m = mnemonic.strip_prefix("c.").unwrap_or(mnemonic);
    let mut new_ops: Vec<String> = ops[..n - 1].iter().map(|s| s.to_string()).collect();
    new_ops.push(tramp.clone());
    em.line(&insn_text(m, &new_ops));
    // the trampoline (its site, then on to the branch's target), then its sample path
    let saved = std::mem::take(&mut em.pending);
    let body = if full {
        code.full(taken)
    } else {
        code.sampled(em, taken)
    };
    let sample_path = std::mem::replace(&mut em.pending, saved);
    em.pending.push(format!("{tramp}:"));
    em.pending.extend(body);
    em.pending.push(format!("\tj\t{target}"));
    em.pending.extend(sample_path);
    let v = if full {
        code.full(fall)
    } else {
        code.sampled(em, fall)
    };
    for s in v {
        em.line(&s);
    }
    em.fallthrough = true;
}

/// Full-Duplication: the function's body again, fully instrumented, with its labels renamed
/// and its loop back edges returning to the original.
#[allow(clippy::too_many_arguments)]
fn duplicate<'a>(
    em: &mut Emitter,
    code: &Code,
    lines: &[Line<'a>],
    f: &Func<'a>,
    fid: usize,
    facts: &Facts<'a>,
    entry_dup: &str,
    types: &HashSet<&str>,
) -> Result<()> {
    let edges = em.cfg.sites == Sites::Edges;
    let label_map = |t: &str| facts.local.contains(t).then(|| dup_name(fid, t));
    let target_map = |t: &str| {
        (facts.local.contains(t) && !facts.loop_heads.contains(t)).then(|| dup_name(fid, t))
    };
    em.line(&format!("{entry_dup}:"));
    em.fallthrough = true;
    if em.cfg.sites == Sites::Entries {
        let site = em.site(f.qual.clone());
        for s in code.full(site) {
            em.line(&s);
        }
    }
    for (li, line) in lines.iter().enumerate().take(f.end).skip(f.start.0) {
        let in_app = f.app.contains(&li) || atomic_sequence(line);
        for (si, st) in line.stmts.iter().enumerate() {
            let p = (li, si);
            if p <= f.start || !f.main(p) {
                continue;
            }
            match st {
                Stmt::Label(l) if types.contains(l) => {}
                Stmt::Label(l) => {
                    let n = label_map(l).unwrap_or_else(|| l.to_string());
                    em.line(&format!("{n}:"));
                    em.fallthrough = true;
                }
                Stmt::Directive { name, args } => {
                    if name.starts_with(".cfi_")
                        || name.starts_with(".loc")
                        || matches!(
                            *name,
                            ".text"
                                | ".data"
                                | ".bss"
                                | ".section"
                                | ".pushsection"
                                | ".popsection"
                                | ".previous"
                        )
                    {
                        continue;
                    }
                    let args = rename(args, &label_map);
                    em.line(&stmt_text(&Stmt::Directive { name, args: &args }));
                }
                Stmt::Insn { mnemonic, ops } => {
                    let target = branch_target(mnemonic, ops);
                    let new_ops: Vec<String> = ops
                        .iter()
                        .map(|op| {
                            if Some(*op) == target {
                                rename(op, &target_map)
                            } else {
                                rename(op, &label_map)
                            }
                        })
                        .collect();
                    let numeric = ops.last().is_some_and(|t| numeric_ref(t));
                    match is_cond(mnemonic) {
                        Some(n) if edges && !in_app && !numeric => {
                            if ops.len() != n {
                                return Err(err(
                                    line,
                                    format!("`{mnemonic}` takes {n} operands, here {}", ops.len()),
                                ));
                            }
                            let refs: Vec<&str> = new_ops.iter().map(|s| s.as_str()).collect();
                            let tgt = new_ops[n - 1].clone();
                            edge(em, code, f, line, mnemonic, &refs, tgt, true);
                        }
                        _ => {
                            em.line(&insn_text(mnemonic, &new_ops));
                            em.fallthrough = !unconditional(mnemonic, ops);
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The per-file data: counters, names, the descriptor, and the shared software counter.
fn trailer(em: &mut Emitter, cfg: &Config) {
    let n = em.sites.len();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# outcrop instrument: --sites {} --sampling {}{}{}, {n} sites",
        cfg.sites.name(),
        cfg.sampling.name(),
        if cfg.sampling == Sampling::Full {
            String::new()
        } else {
            format!(" --interval {}", cfg.interval)
        },
        if cfg.full_duplication {
            " --full-duplication"
        } else {
            ""
        }
    );
    let _ = writeln!(t, "\t.section\t.bss.outcrop_counts,\"aw\",@nobits");
    let _ = writeln!(
        t,
        "\t.align\t3\n.Loutcrop_counts:\n\t.zero\t{}",
        8 * n.max(1)
    );
    let _ = writeln!(t, "\t.section\t.rodata.outcrop_names,\"a\",@progbits");
    let _ = writeln!(t, ".Loutcrop_names:");
    for s in &em.sites {
        let esc: String = s
            .chars()
            .flat_map(|c| match c {
                '"' => vec!['\\', '"'],
                '\\' => vec!['\\', '\\'],
                c => vec![c],
            })
            .collect();
        let _ = writeln!(t, "\t.string\t\"{esc}\"");
    }
    let kind = match cfg.sampling {
        Sampling::Full => 0,
        Sampling::Counter => 1,
        Sampling::Brr => 2,
    } + if cfg.full_duplication { 16 } else { 0 }
        + if cfg.sites == Sites::Edges { 256 } else { 0 };
    let interval = if cfg.sampling == Sampling::Full {
        1
    } else {
        cfg.interval
    };
    let _ = writeln!(t, "\t.section\toutcrop_sites,\"aw\",@progbits\n\t.align\t3");
    let _ = writeln!(
        t,
        "\t.dword\t.Loutcrop_counts\n\t.dword\t.Loutcrop_names\n\t.dword\t{n}\n\t.dword\t{interval}\n\t.dword\t{kind}"
    );
    if cfg.sampling == Sampling::Counter {
        let _ = writeln!(
            t,
            "\t.section\t.sdata.__outcrop_counter,\"awG\",@progbits,__outcrop_counter,comdat\n\
             \t.align\t3\n\t.globl\t__outcrop_counter\n\t.hidden\t__outcrop_counter\n\
             \t.type\t__outcrop_counter, @object\n\t.size\t__outcrop_counter, 16\n\
             __outcrop_counter:\n\t.dword\t{0}\n\t.dword\t{0}",
            cfg.interval - 1
        );
    }
    em.out.push_str(&t);
}

/// Names of the sites in `text` (for tests): the `.string` lines after `.Loutcrop_names`.
#[cfg(test)]
pub fn names(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .skip_while(|l| *l != ".Loutcrop_names:")
        .skip(1)
        .take_while(|l| l.starts_with("\t.string"))
        .map(|l| {
            l.trim_start_matches("\t.string\t")
                .trim_matches('"')
                .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::names;
    use crate::{instrument, Config, Error, Sampling, Sites};

    const LOOP: &str = "\t.text\n\t.align\t1\n\t.globl\tsum\n\t.type\tsum, @function\nsum:\n\
        \tli\ta5,0\n\tbeq\ta1,zero,.L4\n.L3:\n\tlw\ta4,0(a0)\n\taddi\ta0,a0,4\n\
        \taddw\ta5,a5,a4\n\taddi\ta1,a1,-1\n\tbne\ta1,zero,.L3\n.L4:\n\tmv\ta0,a5\n\tret\n\
        \t.size\tsum, .-sum\n\t.align\t1\n\t.type\thelper, @function\nhelper:\n\tret\n\
        \t.size\thelper, .-helper\n";

    fn cfg(sites: Sites, sampling: Sampling, dup: bool) -> Config {
        Config {
            sites,
            sampling,
            interval: 64,
            full_duplication: dup,
            count: true,
            unit: "u".into(),
        }
    }

    #[test]
    fn entries_name_global_and_local_functions() {
        let out = instrument(LOOP, &cfg(Sites::Entries, Sampling::Full, false)).unwrap();
        assert_eq!(out.sites, vec!["sum", "helper@u"]);
        assert_eq!(out.functions, 2);
        assert!(out.spilled.is_empty());
        // the site is the function's first instruction, and uses the two free scratch
        // registers
        let text = &out.text;
        let at = text.find("sum:\n").unwrap();
        assert!(text[at..].starts_with("sum:\n\tlla\tt6,.Loutcrop_counts+0\n\tld\tt5,0(t6)"));
        assert_eq!(names(text).len(), 2);
    }

    #[test]
    fn edges_get_a_trampoline_for_taken_and_a_site_after_the_branch() {
        let out = instrument(LOOP, &cfg(Sites::Edges, Sampling::Counter, false)).unwrap();
        assert_eq!(
            out.sites,
            vec!["sum:7:taken", "sum:7:fall", "sum:13:taken", "sum:13:fall"]
        );
        let t = &out.text;
        assert!(t.contains("\tbeq\ta1,zero,.Loutcrop_t1\n"), "{t}");
        assert!(t.contains("\tj\t.L4\n") && t.contains("\tj\t.L3\n"), "{t}");
        // the counter framework: countdown at __outcrop_counter, reset on the sample path
        assert!(t.contains("\tlla\tt6,__outcrop_counter\n\tld\tt5,0(t6)\n\tbeqz\tt5,"));
        assert!(t.contains("\tld\tt5,8(t6)\n\tsd\tt5,0(t6)\n"));
        assert!(t.contains("__outcrop_counter:\n\t.dword\t63\n\t.dword\t63"));
        // out-of-line code sits after `ret`, so nothing falls into it
        let ret = t.find("\tret\n").unwrap();
        assert!(t.find(".Loutcrop_t1:").unwrap() > ret);
        assert!(!t.contains(".Loutcrop_skip"));
    }

    #[test]
    fn brr_levels_follow_the_interval() {
        for (interval, level) in [(2, 0), (1024, 9), (65_536, 15)] {
            let c = Config {
                interval,
                ..cfg(Sites::Entries, Sampling::Brr, false)
            };
            let out = instrument(LOOP, &c).unwrap();
            assert!(out.text.contains(&format!(".insn j 0x0b, x{level}, ")));
        }
        for bad in [0, 1, 3, 1000, 131_072] {
            let c = Config {
                interval: bad,
                ..cfg(Sites::Entries, Sampling::Brr, false)
            };
            assert!(
                matches!(instrument(LOOP, &c), Err(Error::Config(_))),
                "{bad}"
            );
        }
        let c = cfg(Sites::Entries, Sampling::Full, true);
        assert!(matches!(instrument(LOOP, &c), Err(Error::Config(_))));
    }

    #[test]
    fn full_duplication_checks_entry_and_loop_heads_and_returns_on_back_edges() {
        let out = instrument(LOOP, &cfg(Sites::Edges, Sampling::Brr, true)).unwrap();
        assert_eq!(out.loop_heads, 1);
        let t = &out.text;
        // checks: at sum's entry and after .L3, entering the copy
        assert!(
            t.contains("sum:\n\t.insn j 0x0b, x5, .Loutcrop_e0\n"),
            "{t}"
        );
        assert!(
            t.contains(".L3:\n\t.insn j 0x0b, x5, .Loutcrop_d0_L3\n"),
            "{t}"
        );
        // the copy: renamed labels, the back edge's trampoline goes to the original .L3, the
        // forward edge's to the copy's .L4
        let copy = &t[t.find(".Loutcrop_e0:").unwrap()..];
        assert!(copy.contains(".Loutcrop_d0_L3:") && copy.contains(".Loutcrop_d0_L4:"));
        assert!(copy.contains("\tj\t.L3\n"), "{copy}");
        assert!(copy.contains("\tj\t.Loutcrop_d0_L4\n"), "{copy}");
        // the original body has no sites, the copy counts fully (no brr inside it)
        let body = &copy[..copy.find(".size").unwrap()];
        assert!(!body.contains(".insn"));
        assert_eq!(out.sites.len(), 4);
    }

    #[test]
    fn a_function_naming_every_scratch_register_spills() {
        let busy = "\tli\ta5,0\n\tmv\tt0,t3\n\tmv\tt4,t5\n\tmv\tt6,zero\n";
        // with every t register named, two unnamed argument registers a2-a7 serve
        let src = LOOP.replace("\tli\ta5,0\n", busy);
        let out = instrument(&src, &cfg(Sites::Entries, Sampling::Full, false)).unwrap();
        assert!(out.spilled.is_empty());
        assert!(out
            .text
            .contains("sum:\n\tlla\ta7,.Loutcrop_counts+0\n\tld\ta6,0(a7)"));
        // but not in a function that makes a tail call (it could pass them on)
        let src = LOOP.replace("\tli\ta5,0\n", &format!("{busy}\ttail\tg\n"));
        let out = instrument(&src, &cfg(Sites::Entries, Sampling::Counter, false)).unwrap();
        assert_eq!(out.spilled, vec!["sum"]);
        assert!(out
            .text
            .contains("sum:\n\taddi\tsp,sp,-16\n\tsd\tt6,0(sp)\n\tsd\tt5,8(sp)\n"));
        // nor with an indirect jump (a sibling call through a pointer)
        let src = LOOP.replace("\tli\ta5,0\n", &format!("{busy}\tjr\ta0\n"));
        let out = instrument(&src, &cfg(Sites::Entries, Sampling::Full, false)).unwrap();
        assert_eq!(out.spilled, vec!["sum"]);
        // inline assembly makes registers unknowable
        let src = LOOP.replace("\tli\ta5,0\n", "#APP\n\tnop\n#NO_APP\n\tli\ta5,0\n");
        let out = instrument(&src, &cfg(Sites::Entries, Sampling::Full, false)).unwrap();
        assert_eq!(out.spilled, vec!["sum"]);
    }

    #[test]
    fn framework_only_leaves_the_sample_path_empty() {
        let c = Config {
            count: false,
            ..cfg(Sites::Edges, Sampling::Brr, false)
        };
        let out = instrument(LOOP, &c).unwrap();
        assert!(!out.text.contains("lla\tt6,.Loutcrop_counts"));
        assert_eq!(out.text.matches(".insn j 0x0b").count(), 4);
        let c = Config {
            count: false,
            ..cfg(Sites::Edges, Sampling::Full, false)
        };
        assert!(matches!(instrument(LOOP, &c), Err(Error::Config(_))));
    }

    #[test]
    fn atomic_sequences_and_inline_assembly_are_left_alone() {
        let src = LOOP.replace(
            "\tli\ta5,0\n",
            "\tli\ta5,0\n\t 1: lr.w a3,0(a0); bne a3,a5,1f; sc.w a1,a4,0(a0); bnez a1,1b; 1:\n\
             #APP\n\tbeqz\ta0,9f\n9:\n#NO_APP\n",
        );
        let out = instrument(&src, &cfg(Sites::Edges, Sampling::Full, false)).unwrap();
        assert_eq!(out.skipped_branches, 3);
        assert_eq!(out.sites.len(), 4);
        assert!(out.text.contains("\t 1: lr.w a3,0(a0); bne a3,a5,1f;"));
    }

    #[test]
    fn bad_input_names_the_line() {
        let src = "\t.text\n\t.type\tf, @function\nf:\n\tret\n";
        match instrument(src, &Config::default()) {
            Err(Error::Asm { line, detail, .. }) => {
                assert_eq!(line, 3);
                assert!(detail.contains("no `.size f"), "{detail}");
            }
            r => panic!("{r:?}"),
        }
        let once = instrument(LOOP, &Config::default()).unwrap().text;
        match instrument(&once, &Config::default()) {
            Err(Error::Asm { detail, .. }) => assert!(detail.contains("already instrumented")),
            r => panic!("{r:?}"),
        }
        let src = LOOP.replace("\tbeq\ta1,zero,.L4", "\tbeq\ta1,.L4");
        match instrument(&src, &cfg(Sites::Edges, Sampling::Full, false)) {
            Err(e @ Error::Asm { line: 7, .. }) => {
                assert!(e.to_string().contains("`beq` takes 3 operands, here 2"))
            }
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn code_that_could_fall_into_out_of_line_blocks_jumps_over_them() {
        // a section switch after a label: something may jump to .L9 and fall through
        let src = "\t.text\n\t.type\tf, @function\nf:\n\tbnez\ta0,.L9\n\tret\n.L9:\n\
                   \t.section\t.rodata\n\t.word\t1\n\t.text\n\tli\ta0,2\n\tret\n\t.size\tf, .-f\n";
        let out = instrument(src, &cfg(Sites::Edges, Sampling::Brr, false)).unwrap();
        let t = &out.text;
        let l9 = t.find(".L9:\n").unwrap();
        assert!(t[l9..].starts_with(".L9:\n\tj\t.Loutcrop_skip"), "{t}");
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_rewritten_or_refused_never_a_panic(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("\t.type\tf, @function".to_string()),
                    proptest::strategy::Just("f:".to_string()),
                    proptest::strategy::Just("\t.size\tf, .-f".to_string()),
                    proptest::strategy::Just(".L3:".to_string()),
                    proptest::strategy::Just("\tbne\ta0,zero,.L3".to_string()),
                    proptest::strategy::Just("\tj\t.L3".to_string()),
                    proptest::strategy::Just("\t.section\t.rodata".to_string()),
                    proptest::strategy::Just("\t.text".to_string()),
                    proptest::strategy::Just("#APP".to_string()),
                    proptest::strategy::Just("#NO_APP".to_string()),
                    "[ -~]{0,30}",
                ],
                0..40,
            ),
            sites in proptest::prop_oneof![proptest::strategy::Just(Sites::Entries), proptest::strategy::Just(Sites::Edges)],
            dup in proptest::bool::ANY,
        ) {
            let src = lines.join("\n");
            let _ = instrument(&src, &cfg(sites, Sampling::Brr, dup));
        }
    }
}
