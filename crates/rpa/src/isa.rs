//! The RPA's low-level architecture (§3.4): profile control registers and 64-bit query
//! instructions, their encoding, decoding and disassembly.
//!
//! **PCT** (§3.4.1): 35 entries (32 instruction classes = 8 classes × 4 profile tags, then the
//! three events), two 32-bit PCRs each, 280 bytes as the paper's fixed cost says.
//!
//! | PCR | bits | field |
//! |---|---|---|
//! | 0 | 0 | enabled |
//! | 0 | 5:1 | rate: 0 every record, k one in 2^k at random (k ≤ 16) |
//! | 0 | 24:6 | items collected, one bit per Table 2 item in Table 2 order |
//! | 1 | 5:0 | QPC: the query's first instruction |
//!
//! A record holds the collected items in Table 2 order, one 32-bit word each (at most 7).
//!
//! **Query instruction** (Figure 4: two comparisons, one reading an even and one an odd
//! record word, a 16-bit immediate, a branch and an action):
//!
//! | bits | field |
//! |---|---|
//! | 3:0 | comparison A (the even word): see [`CmpOp`] |
//! | 5:4 | A's word: 0, 2, 4 or 6 |
//! | 8:6 | A's part: word, h0, h1, b0–b3 ([`Part`] codes 0–6) |
//! | 12:9 | comparison B (the odd word) |
//! | 14:13 | B's word: 1, 3 or 5 (3 is invalid) |
//! | 17:15 | B's part |
//! | 18 | join: 0 A and B, 1 A or B |
//! | 34:19 | the 16-bit immediate (both comparisons' operand) |
//! | 37:35 | action on match: 0 none, 1 send, 2 count, 3 interrupt (async), 4 interrupt (sync) |
//! | 41:38 | queue of a send |
//! | 42 | stop after the action (on match) |
//! | 43 | branch on match to the target in 49:44 |
//! | 50 | stop on no match |
//! | 51 | branch on no match to the target in 57:52 |
//! | 63:58 | zero |
//!
//! With neither stop nor branch, the engine goes on with the next instruction.

use crate::lang::Part;
use serde::Serialize;

/// Query instructions the engine's array holds (512 bytes, §4).
pub const ARRAY: usize = 64;

/// A comparison's operation (Table 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CmpOp {
    /// Always succeeds.
    True,
    /// Never succeeds.
    False,
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// All bits of the immediate set in the field.
    BitsSet,
    /// All bits of the immediate clear in the field.
    BitsClear,
    /// Succeeds once in N at random (2, 4, 16, 256).
    Filter(u16),
}

impl CmpOp {
    fn code(self) -> u64 {
        match self {
            CmpOp::True => 0,
            CmpOp::False => 1,
            CmpOp::Eq => 2,
            CmpOp::Ne => 3,
            CmpOp::Lt => 4,
            CmpOp::Le => 5,
            CmpOp::Gt => 6,
            CmpOp::Ge => 7,
            CmpOp::BitsSet => 8,
            CmpOp::BitsClear => 9,
            CmpOp::Filter(2) => 10,
            CmpOp::Filter(4) => 11,
            CmpOp::Filter(16) => 12,
            _ => 13,
        }
    }

    fn from_code(c: u64) -> Option<CmpOp> {
        Some(match c {
            0 => CmpOp::True,
            1 => CmpOp::False,
            2 => CmpOp::Eq,
            3 => CmpOp::Ne,
            4 => CmpOp::Lt,
            5 => CmpOp::Le,
            6 => CmpOp::Gt,
            7 => CmpOp::Ge,
            8 => CmpOp::BitsSet,
            9 => CmpOp::BitsClear,
            10 => CmpOp::Filter(2),
            11 => CmpOp::Filter(4),
            12 => CmpOp::Filter(16),
            13 => CmpOp::Filter(256),
            _ => return None,
        })
    }

    /// Whether it reads the record.
    pub fn reads_field(self) -> bool {
        !matches!(self, CmpOp::True | CmpOp::False | CmpOp::Filter(_))
    }
}

fn part_code(p: Part) -> u64 {
    match p {
        Part::Word => 0,
        Part::Half(h) => 1 + u64::from(h & 1),
        Part::Byte(b) => 3 + u64::from(b & 3),
    }
}

fn part_from(c: u64) -> Option<Part> {
    Some(match c {
        0 => Part::Word,
        1 | 2 => Part::Half((c - 1) as u8),
        3..=6 => Part::Byte((c - 3) as u8),
        _ => return None,
    })
}

/// One comparison slot of a query instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slot {
    /// The operation.
    pub op: CmpOp,
    /// The record word it reads (even for slot A, odd for slot B).
    pub word: u8,
    /// Which part of that word.
    pub part: Part,
}

impl Slot {
    /// An always-true slot reading `word`.
    pub fn always(word: u8) -> Slot {
        Slot {
            op: CmpOp::True,
            word,
            part: Part::Word,
        }
    }
}

/// An action on match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Act {
    /// Nothing.
    None,
    /// Copy the record into queue `q`.
    Send(u8),
    /// Increment the instruction's counter.
    Count,
    /// Interrupt the profiled thread (synchronously: it waits for the query).
    Interrupt {
        /// Synchronous.
        sync: bool,
    },
}

/// Where control goes after an instruction, on match or on no match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Next {
    /// The next instruction.
    Fall,
    /// The query is done.
    Stop,
    /// Instruction `i` of the array.
    Goto(u8),
}

/// A decoded query instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QueryInsn {
    /// Comparison A (even word).
    pub a: Slot,
    /// Comparison B (odd word).
    pub b: Slot,
    /// `true`: A or B; `false`: A and B.
    pub or: bool,
    /// The immediate both comparisons use.
    pub imm: u16,
    /// The action on match.
    pub act: Act,
    /// After a match.
    pub on_match: Next,
    /// After no match.
    pub on_miss: Next,
}

/// Why a word is not a valid query instruction.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("query instruction {word:#018x}: {why}")]
pub struct DecodeError {
    /// The word.
    pub word: u64,
    /// What is wrong.
    pub why: &'static str,
}

impl QueryInsn {
    /// The 64-bit encoding.
    pub fn encode(&self) -> u64 {
        let mut w = self.a.op.code()
            | u64::from(self.a.word / 2) << 4
            | part_code(self.a.part) << 6
            | self.b.op.code() << 9
            | u64::from(self.b.word / 2) << 13
            | part_code(self.b.part) << 15
            | u64::from(self.or) << 18
            | u64::from(self.imm) << 19;
        let (act, q) = match self.act {
            Act::None => (0, 0),
            Act::Send(q) => (1, q),
            Act::Count => (2, 0),
            Act::Interrupt { sync: false } => (3, 0),
            Act::Interrupt { sync: true } => (4, 0),
        };
        w |= act << 35 | u64::from(q & 15) << 38;
        w |= match self.on_match {
            Next::Fall => 0,
            Next::Stop => 1 << 42,
            Next::Goto(t) => 1 << 43 | u64::from(t & 63) << 44,
        };
        w |= match self.on_miss {
            Next::Fall => 0,
            Next::Stop => 1 << 50,
            Next::Goto(t) => 1 << 51 | u64::from(t & 63) << 52,
        };
        w
    }

    /// Decodes a word; reserved bits, unknown codes and invalid combinations are errors.
    pub fn decode(w: u64) -> Result<QueryInsn, DecodeError> {
        let err = |why| DecodeError { word: w, why };
        if w >> 58 != 0 {
            return Err(err("reserved bits 63:58 are not zero"));
        }
        let f = |shift: u32, bits: u32| (w >> shift) & ((1 << bits) - 1);
        let a_op = CmpOp::from_code(f(0, 4)).ok_or_else(|| err("unknown comparison A"))?;
        let b_op = CmpOp::from_code(f(9, 4)).ok_or_else(|| err("unknown comparison B"))?;
        let a_part = part_from(f(6, 3)).ok_or_else(|| err("unknown part for A"))?;
        let b_part = part_from(f(15, 3)).ok_or_else(|| err("unknown part for B"))?;
        let b_word = f(13, 2) as u8 * 2 + 1;
        if b_word > 5 {
            return Err(err(
                "comparison B reads word 7 (a record has 7 words, 0 to 6)",
            ));
        }
        let act = match f(35, 3) {
            0 => Act::None,
            1 => Act::Send(f(38, 4) as u8),
            2 => Act::Count,
            3 => Act::Interrupt { sync: false },
            4 => Act::Interrupt { sync: true },
            _ => return Err(err("unknown action")),
        };
        if !matches!(act, Act::Send(_)) && f(38, 4) != 0 {
            return Err(err("a queue number without a send"));
        }
        let next = |stop: u32, go: u32, at: u32| match (f(stop, 1), f(go, 1)) {
            (0, 0) if f(at, 6) == 0 => Ok(Next::Fall),
            (1, 0) if f(at, 6) == 0 => Ok(Next::Stop),
            (0, 1) => Ok(Next::Goto(f(at, 6) as u8)),
            (1, 1) => Err(err("both stop and branch")),
            _ => Err(err("a branch target without a branch")),
        };
        Ok(QueryInsn {
            a: Slot {
                op: a_op,
                word: f(4, 2) as u8 * 2,
                part: a_part,
            },
            b: Slot {
                op: b_op,
                word: b_word,
                part: b_part,
            },
            or: f(18, 1) == 1,
            imm: f(19, 16) as u16,
            act,
            on_match: next(42, 43, 44)?,
            on_miss: next(50, 51, 52)?,
        })
    }
}

fn slot_text(s: &Slot, imm: u16, items: Option<&[u8]>) -> String {
    let field = || {
        let name = items
            .and_then(|it| it.get(usize::from(s.word)))
            .map_or(format!("w{}", s.word), |&i| {
                crate::names::ITEMS[usize::from(i)].to_string()
            });
        match s.part {
            Part::Word => name,
            Part::Half(h) => format!("{name}.h{h}"),
            Part::Byte(b) => format!("{name}.b{b}"),
        }
    };
    match s.op {
        CmpOp::True => "true".into(),
        CmpOp::False => "false".into(),
        CmpOp::Filter(n) => format!("filter {n}"),
        CmpOp::Eq => format!("{} = {imm:#x}", field()),
        CmpOp::Ne => format!("{} <> {imm:#x}", field()),
        CmpOp::Lt => format!("{} < {imm:#x}", field()),
        CmpOp::Le => format!("{} <= {imm:#x}", field()),
        CmpOp::Gt => format!("{} > {imm:#x}", field()),
        CmpOp::Ge => format!("{} >= {imm:#x}", field()),
        CmpOp::BitsSet => format!("{} bset {imm:#x}", field()),
        CmpOp::BitsClear => format!("{} bclr {imm:#x}", field()),
    }
}

impl QueryInsn {
    /// Disassembly; `items` names the record's words (the query's collected items in record
    /// order), or `w0`… without.
    pub fn text(&self, items: Option<&[u8]>) -> String {
        let a = slot_text(&self.a, self.imm, items);
        let b = slot_text(&self.b, self.imm, items);
        let cond = match (self.a.op, self.b.op, self.or) {
            (_, CmpOp::True, false) => a,
            (CmpOp::True, _, false) => b,
            (_, CmpOp::False, true) => a,
            (CmpOp::False, _, true) => b,
            (_, _, or) => format!("{a} {} {b}", if or { "or" } else { "and" }),
        };
        let next = |n: Next| match n {
            Next::Fall => String::new(),
            Next::Stop => " stop".into(),
            Next::Goto(t) => format!(" goto q{t}"),
        };
        let act = match self.act {
            Act::None => String::new(),
            Act::Send(q) => format!(" send {q}"),
            Act::Count => " count".into(),
            Act::Interrupt { sync } => {
                format!(" interrupt {}", if sync { "sync" } else { "async" })
            }
        };
        let then = format!("{act}{}", next(self.on_match));
        let then = if then.is_empty() {
            " (next)".to_string()
        } else {
            then
        };
        let miss = next(self.on_miss);
        if cond == "true" {
            then.trim_start().to_string()
        } else if miss.is_empty() {
            format!("if {cond} then{then}")
        } else {
            format!("if {cond} then{then} else{miss}")
        }
    }
}

/// One PCT entry (a class's two PCRs), decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PctEntry {
    /// Whether the class is profiled.
    pub enabled: bool,
    /// 0: every record; k: one in 2^k.
    pub rate_log2: u8,
    /// Collected items, one bit per Table 2 item.
    pub items: u32,
    /// The query's first instruction.
    pub qpc: u8,
}

impl PctEntry {
    /// The two PCRs.
    pub fn encode(&self) -> [u32; 2] {
        [
            u32::from(self.enabled)
                | u32::from(self.rate_log2 & 31) << 1
                | (self.items & 0x7_ffff) << 6,
            u32::from(self.qpc & 63),
        ]
    }

    /// Decodes two PCRs (reserved bits must be zero).
    pub fn decode(p: [u32; 2]) -> Option<PctEntry> {
        if p[0] >> 25 != 0 || p[1] >> 6 != 0 || (p[0] >> 1) & 31 > 16 {
            return None;
        }
        Some(PctEntry {
            enabled: p[0] & 1 == 1,
            rate_log2: ((p[0] >> 1) & 31) as u8,
            items: (p[0] >> 6) & 0x7_ffff,
            qpc: p[1] as u8,
        })
    }

    /// The collected items in record order (indices in Table 2).
    pub fn record_items(&self) -> Vec<u8> {
        (0..19u8).filter(|i| self.items >> i & 1 == 1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn slot(even: bool) -> impl Strategy<Value = Slot> {
        let ops = prop_oneof![
            Just(CmpOp::True),
            Just(CmpOp::False),
            Just(CmpOp::Eq),
            Just(CmpOp::Ne),
            Just(CmpOp::Lt),
            Just(CmpOp::Le),
            Just(CmpOp::Gt),
            Just(CmpOp::Ge),
            Just(CmpOp::BitsSet),
            Just(CmpOp::BitsClear),
            Just(CmpOp::Filter(2)),
            Just(CmpOp::Filter(4)),
            Just(CmpOp::Filter(16)),
            Just(CmpOp::Filter(256)),
        ];
        let parts = prop_oneof![
            Just(Part::Word),
            Just(Part::Half(0)),
            Just(Part::Half(1)),
            (0u8..4).prop_map(Part::Byte),
        ];
        let words = if even { 0u8..4 } else { 0u8..3 };
        (ops, words, parts).prop_map(move |(op, w, part)| Slot {
            op,
            word: w * 2 + u8::from(!even),
            part,
        })
    }

    fn next() -> impl Strategy<Value = Next> {
        prop_oneof![
            Just(Next::Fall),
            Just(Next::Stop),
            (0u8..64).prop_map(Next::Goto)
        ]
    }

    proptest! {
        #[test]
        fn instructions_round_trip(a in slot(true), b in slot(false), or: bool, imm: u16,
                                   act in prop_oneof![Just(Act::None), (0u8..16).prop_map(Act::Send), Just(Act::Count), any::<bool>().prop_map(|sync| Act::Interrupt { sync })],
                                   on_match in next(), on_miss in next()) {
            let i = QueryInsn { a, b, or, imm, act, on_match, on_miss };
            let w = i.encode();
            prop_assert_eq!(QueryInsn::decode(w), Ok(i));
            prop_assert!(!i.text(None).is_empty());
        }

        #[test]
        fn any_word_decodes_or_is_refused_and_re_encodes_exactly(w: u64) {
            if let Ok(i) = QueryInsn::decode(w) {
                prop_assert_eq!(i.encode(), w);
            }
        }

        #[test]
        fn pct_entries_round_trip(enabled: bool, rate in 0u8..17, items in 0u32..(1 << 19), qpc in 0u8..64) {
            let e = PctEntry { enabled, rate_log2: rate, items, qpc };
            prop_assert_eq!(PctEntry::decode(e.encode()), Some(e));
        }
    }
}
