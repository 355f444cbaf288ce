//! The assembler (§3.4): query headers become PCT entries, query clauses become query
//! instructions ([`crate::isa`]).

use crate::isa::{Act, CmpOp, Next, PctEntry, QueryInsn, Slot, ARRAY};
use crate::lang::{Action, Body, Cmp, Diagnostic, Join, Program, Query, Rate, RelOp, Span};
use crate::names::{self, Class};
use serde::Serialize;
use std::collections::HashMap;

/// One assembled query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AssembledQuery {
    /// Its classes' PCT indices.
    pub classes: Vec<usize>,
    /// The record's items, in record (Table 2) order.
    pub items: Vec<u8>,
    /// Its first instruction.
    pub first: u8,
    /// How many instructions it has.
    pub len: u8,
}

/// An assembled program: the PCT and the query instruction array.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Assembled {
    /// The 35 PCT entries (32 classes, then 3 events).
    pub pct: Vec<PctEntry>,
    /// The query instructions.
    pub insns: Vec<QueryInsn>,
    /// The queries, in source order.
    pub queries: Vec<AssembledQuery>,
}

fn diag(
    message: impl Into<String>,
    span: Span,
    label: impl Into<String>,
    hint: Option<String>,
) -> Diagnostic {
    Diagnostic {
        message: message.into(),
        span,
        label: label.into(),
        hint,
    }
}

/// Assembles a parsed program; semantic errors (a field that is not collected, two
/// comparisons on words of the same parity, a backward `goto`, too many instructions, a class
/// claimed by two queries) come back as diagnostics.
pub fn assemble(p: &Program) -> Result<Assembled, Diagnostic> {
    let mut pct = vec![PctEntry::default(); 35];
    let mut owner: HashMap<usize, Span> = HashMap::new();
    let mut insns: Vec<QueryInsn> = Vec::new();
    let mut queries = Vec::new();
    for q in &p.queries {
        let first = insns.len();
        let items = record_items(q);
        let mut mask = 0u32;
        for &i in &items {
            mask |= 1 << i;
        }
        query(q, &items, &mut insns)?;
        if insns.len() > ARRAY {
            return Err(diag(
                format!(
                    "the query engine holds {ARRAY} instructions; these queries need {}",
                    insns.len()
                ),
                q.header.clone(),
                "this query does not fit",
                Some("each clause is one instruction (two with an `else` that acts); shorten the queries".into()),
            ));
        }
        let rate_log2 = match q.rate {
            Rate::Always => 0,
            Rate::Every(n) => n.trailing_zeros() as u8,
        };
        let mut classes = Vec::new();
        for (c, span) in &q.classes {
            let i = c.pct_index();
            if let Some(prev) = owner.get(&i) {
                return Err(diag(
                    format!("`{c}` is already profiled by an earlier query"),
                    span.clone(),
                    "claimed again here",
                    Some(format!(
                        "each class has one PCT entry (one query); the first claim is at bytes {}..{}",
                        prev.start, prev.end
                    )),
                ));
            }
            if matches!(c, Class::Event(_)) {
                // events carry only the pc, a cycle count and the effective address (§3.4.1)
                for (it, ispan) in &q.items {
                    if !matches!(
                        names::ITEMS[usize::from(*it)],
                        "pc" | "res2" | "rtime" | "thread"
                    ) {
                        return Err(diag(
                            format!(
                                "an event record cannot collect `{}`",
                                names::ITEMS[usize::from(*it)]
                            ),
                            ispan.clone(),
                            "not available when the event is detected",
                            Some("events collect pc, thread, res2 (the effective address) and rtime (§3.4.1)".into()),
                        ));
                    }
                }
            }
            owner.insert(i, span.clone());
            pct[i] = PctEntry {
                enabled: true,
                rate_log2,
                items: mask,
                qpc: first as u8,
            };
            classes.push(i);
        }
        queries.push(AssembledQuery {
            classes,
            items,
            first: first as u8,
            len: (insns.len() - first) as u8,
        });
    }
    Ok(Assembled {
        pct,
        insns,
        queries,
    })
}

/// The query's items in record order (Table 2 order, as the PCR's mask packs them).
fn record_items(q: &Query) -> Vec<u8> {
    let mut v: Vec<u8> = q.items.iter().map(|(i, _)| *i).collect();
    v.sort_unstable();
    v
}

fn slot_of(
    c: &Cmp,
    items: &[u8],
    q: &Query,
) -> Result<(Slot, Option<u16>, Option<Span>), Diagnostic> {
    let field_word = |f: &crate::lang::Field| -> Result<u8, Diagnostic> {
        items
            .iter()
            .position(|&i| i == f.item)
            .map(|w| w as u8)
            .ok_or_else(|| {
                diag(
                    format!(
                        "`{}` is compared but not collected",
                        names::ITEMS[usize::from(f.item)]
                    ),
                    f.span.clone(),
                    "not in this query's record",
                    Some(format!(
                        "add it to the header: `collect {} {}`",
                        q.items
                            .iter()
                            .map(|(i, _)| names::ITEMS[usize::from(*i)])
                            .collect::<Vec<_>>()
                            .join(" "),
                        names::ITEMS[usize::from(f.item)]
                    )),
                )
            })
    };
    Ok(match c {
        Cmp::True => (Slot::always(0), None, None),
        Cmp::False => (
            Slot {
                op: CmpOp::False,
                ..Slot::always(0)
            },
            None,
            None,
        ),
        Cmp::Filter(n) => (
            Slot {
                op: CmpOp::Filter(*n),
                ..Slot::always(0)
            },
            None,
            None,
        ),
        Cmp::Rel(f, op, v) => {
            let op = match op {
                RelOp::Eq => CmpOp::Eq,
                RelOp::Ne => CmpOp::Ne,
                RelOp::Lt => CmpOp::Lt,
                RelOp::Le => CmpOp::Le,
                RelOp::Gt => CmpOp::Gt,
                RelOp::Ge => CmpOp::Ge,
            };
            (
                Slot {
                    op,
                    word: field_word(f)?,
                    part: f.part,
                },
                Some(*v),
                Some(f.span.clone()),
            )
        }
        Cmp::BitsSet(f, m) | Cmp::BitsClear(f, m) => (
            Slot {
                op: if matches!(c, Cmp::BitsSet(..)) {
                    CmpOp::BitsSet
                } else {
                    CmpOp::BitsClear
                },
                word: field_word(f)?,
                part: f.part,
            },
            Some(*m),
            Some(f.span.clone()),
        ),
    })
}

/// The comparisons of a condition placed into the even (A) and odd (B) slots.
fn place(
    cond: Option<&crate::lang::Cond>,
    items: &[u8],
    q: &Query,
    clause: &Span,
) -> Result<(Slot, Slot, bool, u16), Diagnostic> {
    let Some(cond) = cond else {
        return Ok((Slot::always(0), Slot::always(1), false, 0));
    };
    let (sa, ia, spa) = slot_of(&cond.a, items, q)?;
    let Some((join, cb)) = &cond.b else {
        let filler_or = false;
        return Ok(if !sa.op.reads_field() || sa.word % 2 == 0 {
            (sa, Slot::always(1), filler_or, ia.unwrap_or(0))
        } else {
            (Slot::always(0), sa, filler_or, ia.unwrap_or(0))
        });
    };
    let (sb, ib, spb) = slot_of(cb, items, q)?;
    let or = *join == Join::Or;
    if let (Some(x), Some(y)) = (ia, ib) {
        if x != y {
            return Err(diag(
                "the two comparisons of a clause share one 16-bit immediate",
                clause.clone(),
                format!("{x:#x} and {y:#x} differ"),
                Some("split the condition into two clauses joined by `goto` (Figure 4: one immediate per query instruction)".into()),
            ));
        }
    }
    let imm = ia.or(ib).unwrap_or(0);
    let a_even = !sa.op.reads_field() || sa.word % 2 == 0;
    let b_odd = !sb.op.reads_field() || sb.word % 2 == 1;
    let a_odd = !sa.op.reads_field() || sa.word % 2 == 1;
    let b_even = !sb.op.reads_field() || sb.word % 2 == 0;
    let fix = |s: Slot, even: bool| -> Slot {
        if s.op.reads_field() {
            s
        } else {
            Slot {
                word: u8::from(!even),
                ..s
            }
        }
    };
    if a_even && b_odd {
        Ok((fix(sa, true), fix(sb, false), or, imm))
    } else if a_odd && b_even {
        Ok((fix(sb, true), fix(sa, false), or, imm))
    } else {
        let span = spb.or(spa).unwrap_or_else(|| clause.clone());
        let w = |s: &Slot| {
            format!(
                "`{}` (word {})",
                names::ITEMS[usize::from(items[usize::from(s.word)])],
                s.word
            )
        };
        Err(diag(
            "a query instruction compares one even and one odd record word",
            span,
            format!(
                "{} and {} are both {}",
                w(&sa),
                w(&sb),
                if sa.word % 2 == 0 { "even" } else { "odd" }
            ),
            Some("records pack items in Table 2 order; collect an item between them, or split the condition into two clauses joined by `goto`".into()),
        ))
    }
}

struct Pending {
    insn: QueryInsn,
    match_label: Option<(String, Span)>,
    miss_label: Option<(String, Span)>,
    /// Falls through to the clause after the next instruction (a then-path that must skip
    /// the else instruction).
    skip_next_on_match: bool,
}

/// A clause's action, what follows it, and the label of a `goto`.
type Split = (Act, Next, Option<(String, Span)>);

fn split_actions(acts: &[Action]) -> Result<Split, Diagnostic> {
    let mut act = Act::None;
    let mut next = Next::Fall;
    let mut label = None;
    let mut act_span: Option<Span> = None;
    for (k, a) in acts.iter().enumerate() {
        let (this, span) = match a {
            Action::Send(q, s) => (Some(Act::Send(*q)), s),
            Action::Count(s) => (Some(Act::Count), s),
            Action::Interrupt { sync, span } => (Some(Act::Interrupt { sync: *sync }), span),
            Action::Stop(s) | Action::Goto(_, s) => {
                if k + 1 != acts.len() {
                    return Err(diag(
                        "nothing can follow `stop` or `goto` in a clause",
                        acts[k + 1..].first().map_or(s.clone(), action_span),
                        "unreachable",
                        Some("move the action before it".into()),
                    ));
                }
                match a {
                    Action::Stop(_) => next = Next::Stop,
                    Action::Goto(l, s) => {
                        next = Next::Goto(0);
                        label = Some((l.clone(), s.clone()));
                    }
                    _ => {}
                }
                (None, s)
            }
        };
        if let Some(t) = this {
            if let Some(prev) = &act_span {
                return Err(diag(
                    "a clause performs one action (send, count or interrupt)",
                    span.clone(),
                    "a second action",
                    Some(format!(
                        "the first is at bytes {}..{}; put the second in its own clause",
                        prev.start, prev.end
                    )),
                ));
            }
            act = t;
            act_span = Some(span.clone());
        }
    }
    Ok((act, next, label))
}

fn action_span(a: &Action) -> Span {
    match a {
        Action::Send(_, s) | Action::Count(s) | Action::Stop(s) | Action::Goto(_, s) => s.clone(),
        Action::Interrupt { span, .. } => span.clone(),
    }
}

fn query(q: &Query, items: &[u8], insns: &mut Vec<QueryInsn>) -> Result<(), Diagnostic> {
    let base = insns.len();
    let mut pending: Vec<Pending> = Vec::new();
    let mut labels: HashMap<String, usize> = HashMap::new();
    let mut clause_at: Vec<usize> = Vec::new();
    for c in &q.clauses {
        let at = base + pending.len();
        if let Some((l, s)) = &c.label {
            if labels.insert(l.clone(), at).is_some() {
                return Err(diag(
                    format!("label `{l}` is defined twice"),
                    s.clone(),
                    "again here",
                    None,
                ));
            }
        }
        clause_at.push(at);
        match &c.body {
            Body::Do(acts) => {
                let (act, next, label) = split_actions(acts)?;
                let (a, b, or, imm) = place(None, items, q, &c.span)?;
                pending.push(Pending {
                    insn: QueryInsn {
                        a,
                        b,
                        or,
                        imm,
                        act,
                        on_match: next,
                        on_miss: Next::Stop,
                    },
                    match_label: label,
                    miss_label: None,
                    skip_next_on_match: false,
                });
            }
            Body::If { cond, then, els } => {
                let (a, b, or, imm) = place(Some(cond), items, q, &c.span)?;
                let (act, next, label) = split_actions(then)?;
                let mut p = Pending {
                    insn: QueryInsn {
                        a,
                        b,
                        or,
                        imm,
                        act,
                        on_match: next,
                        on_miss: Next::Fall,
                    },
                    match_label: label,
                    miss_label: None,
                    skip_next_on_match: false,
                };
                let mut extra = None;
                if let Some(els) = els {
                    let (eact, enext, elabel) = split_actions(els)?;
                    if eact == Act::None {
                        p.insn.on_miss = enext;
                        p.miss_label = elabel;
                    } else {
                        // the else acts: a second instruction right after, reached on a miss
                        p.insn.on_miss = Next::Goto((at + 1) as u8);
                        if p.insn.on_match == Next::Fall {
                            p.skip_next_on_match = true;
                        }
                        let (a, b, or, imm) = place(None, items, q, &c.span)?;
                        extra = Some(Pending {
                            insn: QueryInsn {
                                a,
                                b,
                                or,
                                imm,
                                act: eact,
                                on_match: enext,
                                on_miss: Next::Stop,
                            },
                            match_label: elabel,
                            miss_label: None,
                            skip_next_on_match: false,
                        });
                    }
                }
                pending.push(p);
                if let Some(e) = extra {
                    pending.push(e);
                }
            }
        }
    }
    let end = base + pending.len();
    let resolve = |label: &Option<(String, Span)>, from: usize| -> Result<Option<u8>, Diagnostic> {
        let Some((l, s)) = label else { return Ok(None) };
        match labels.get(l) {
            None => Err(diag(
                format!("no clause is labelled `{l}` in this query"),
                s.clone(),
                "unknown label",
                labels.keys().next().map(|k| format!("labels here: {k}")),
            )),
            Some(&t) if t <= from => Err(diag(
                format!("`goto {l}` jumps backward"),
                s.clone(),
                "backward",
                Some("the engine runs each record once through a query: a goto may only jump forward".into()),
            )),
            Some(&t) => Ok(Some(t as u8)),
        }
    };
    for (k, p) in pending.iter().enumerate() {
        let at = base + k;
        let mut insn = p.insn;
        if let Some(t) = resolve(&p.match_label, at)? {
            insn.on_match = Next::Goto(t);
        }
        if let Some(t) = resolve(&p.miss_label, at)? {
            insn.on_miss = Next::Goto(t);
        }
        if p.skip_next_on_match {
            insn.on_match = if at + 2 >= end {
                Next::Stop
            } else {
                Next::Goto((at + 2) as u8)
            };
        }
        // falling off the end of the query stops it
        if at + 1 >= end {
            if insn.on_match == Next::Fall {
                insn.on_match = Next::Stop;
            }
            if insn.on_miss == Next::Fall {
                insn.on_miss = Next::Stop;
            }
        }
        insns.push(insn);
    }
    if pending.is_empty() {
        return Err(diag(
            "a query needs at least one clause",
            q.header.clone(),
            "no clause follows this header",
            Some("e.g. `send 1 stop;`".into()),
        ));
    }
    Ok(())
}

/// The assembly listing `outcrop query asm` prints: the PCT's enabled entries with their
/// PCRs, then every query instruction with its encoding and disassembly.
pub fn listing(a: &Assembled) -> String {
    use std::fmt::Write as _;
    let mut o = String::from("# profile control table (enabled entries)\n");
    for (i, e) in a.pct.iter().enumerate() {
        if !e.enabled {
            continue;
        }
        let Some(c) = Class::from_pct_index(i) else {
            continue;
        };
        let [p0, p1] = e.encode();
        let items: Vec<&str> = e
            .record_items()
            .iter()
            .map(|&i| names::ITEMS[usize::from(i)])
            .collect();
        let rate = if e.rate_log2 == 0 {
            "always".to_string()
        } else {
            format!("every {}", 1u32 << e.rate_log2)
        };
        let _ = writeln!(
            o,
            "pct[{i:2}] {:<14} pcr0={p0:#010x} pcr1={p1:#04x}  {rate}, collect {}, qpc q{}",
            c.to_string(),
            items.join(" "),
            e.qpc
        );
    }
    let _ = writeln!(o, "# query instructions");
    for (qi, q) in a.queries.iter().enumerate() {
        let _ = writeln!(o, "# query {qi}");
        for k in 0..q.len {
            let at = usize::from(q.first + k);
            let insn = &a.insns[at];
            let _ = writeln!(
                o,
                "q{at:<2} {:#018x}  {}",
                insn.encode(),
                insn.text(Some(&q.items))
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::parse;

    const FIGURE_2: &str = "for opBRANCH * every 256 collect pc misc ;\nsend 1 stop;\n\
        for evL2DMISS * always collect pc res2 ;\nsend 2 stop;\n\
        for opSTORE 1 always collect op1 op2 op3;\nif op1 <> 0 then send 3 stop else stop;\n\
        for opJMP * opBRANCH * opLOAD *\nopSTORE * opALU * opMULT *\nopFLOAT * opSYS *\n\
        every 1024 collect pc rrate;\nsend 4 stop;\n";

    #[test]
    fn figure_2_without_its_overlap_assembles() {
        // Figure 2 is four alternative queries: d) profiles opBRANCH and opSTORE again, so
        // together they claim those classes twice
        let e = assemble(&parse(FIGURE_2).unwrap()).unwrap_err();
        assert!(e.message.contains("already profiled"), "{e:?}");
        let abc: String = FIGURE_2.split("for opJMP").next().unwrap().to_string();
        let a = assemble(&parse(&abc).unwrap()).unwrap();
        assert_eq!(a.insns.len(), 3);
        // a) every 256: rate 2^8, items pc and misc
        let e = a.pct[Class::Op { class: 1, tag: 2 }.pct_index()];
        assert!(e.enabled && e.rate_log2 == 8 && e.qpc == 0);
        assert_eq!(e.record_items(), vec![0, 10]);
        assert_eq!(a.insns[0].act, Act::Send(1));
        assert_eq!(a.insns[0].on_match, Next::Stop);
        // c) tag 1 only; op1 <> 0 on the even word 0
        assert!(!a.pct[Class::Op { class: 3, tag: 0 }.pct_index()].enabled);
        let c = a.insns[2];
        assert_eq!((c.a.op, c.a.word, c.imm), (CmpOp::Ne, 0, 0));
        assert_eq!(
            (c.act, c.on_match, c.on_miss),
            (Act::Send(3), Next::Stop, Next::Stop)
        );
        // d) alone: 32 classes, one instruction
        let d = format!("for opJMP{}", FIGURE_2.split("for opJMP").nth(1).unwrap());
        let a = assemble(&parse(&d).unwrap()).unwrap();
        assert_eq!(a.pct.iter().filter(|e| e.enabled).count(), 32);
        let listing = listing(&a);
        assert!(listing.contains("send 4 stop"), "{listing}");
    }

    #[test]
    fn else_with_an_action_becomes_a_second_instruction() {
        let a = assemble(
            &parse("for opLOAD * always collect pc res2;\nif res2 > 0x100 then count else send 2;\nsend 3 stop;\n")
                .unwrap(),
        )
        .unwrap();
        assert_eq!(a.insns.len(), 3);
        assert_eq!(a.insns[0].on_miss, Next::Goto(1));
        assert_eq!(a.insns[0].on_match, Next::Goto(2)); // skips the else instruction
        assert_eq!(a.insns[1].act, Act::Send(2));
        assert_eq!(a.insns[1].on_match, Next::Fall);
        assert_eq!(a.insns[2].on_match, Next::Stop);
    }

    #[test]
    fn semantic_errors_are_diagnostics() {
        let e = |s: &str| assemble(&parse(s).unwrap()).unwrap_err();
        assert!(e("for opLOAD * always collect pc; if res2 = 0 then stop;")
            .message
            .contains("not collected"));
        let d = e("for opLOAD * always collect op1 op2 op3; if op1 = 1 and op3 = 1 then stop;");
        assert!(d.label.contains("both even"), "{d:?}");
        assert!(
            e("for opLOAD * always collect op1 op2; if op1 = 1 and op2 = 2 then stop;")
                .message
                .contains("share one 16-bit immediate")
        );
        assert!(e("for opLOAD * always collect pc; a: count; goto a;")
            .message
            .contains("backward"));
        assert!(e("for opLOAD * always collect pc; goto nowhere;")
            .message
            .contains("no clause is labelled"));
        assert!(e("for opLOAD * always collect pc; send 1 send 2;")
            .message
            .contains("one action"));
        assert!(e("for opLOAD * always collect pc; stop send 1;")
            .message
            .contains("nothing can follow"));
        assert!(e("for evL2DMISS always collect pc op1; send 1;")
            .message
            .contains("cannot collect `op1`"));
        let many: String = std::iter::once("for opLOAD * always collect pc;\n".to_string())
            .chain((0..70).map(|_| "count;\n".to_string()))
            .collect();
        assert!(e(&many).message.contains("holds 64 instructions"));
    }
}
