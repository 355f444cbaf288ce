//! The names of the RPA assembly language: instruction classes (Table 1), events, and the
//! items a record can collect (Table 2).

use serde::Serialize;

/// Instruction classes (the paper's Table 1), in PCT order.
pub const OP_CLASSES: [&str; 8] = [
    "opJMP", "opBRANCH", "opLOAD", "opSTORE", "opALU", "opMULT", "opFLOAT", "opSYS",
];

/// Profiled events (§3.4.1), in PCT order after the 32 class entries.
pub const EVENTS: [&str; 3] = ["evL2DMISS", "evDTLBMISS", "evITLBMISS"];

/// Record items (Table 2), in the order a record packs them (one 32-bit word each).
pub const ITEMS: [&str; 19] = [
    "pc", "thread", "op1", "op1up", "op2", "op2up", "op3", "res1", "res1u", "res2", "misc",
    "ftime", "frate", "drate", "irate", "wlat", "elat", "rtime", "rrate",
];

/// What each item holds (for `--help`, diagnostics and docs/rpa.md).
pub const ITEM_HELP: [&str; 19] = [
    "instruction pc (low 32 bits)",
    "thread id",
    "first source operand (low 32 bits; for a store, the value written)",
    "first source operand, upper 32 bits",
    "second source operand (low 32 bits; for a load or store, the base address register)",
    "second source operand, upper 32 bits",
    "third operand (for a load or store, the offset)",
    "result 1 (low 32 bits: the value written to the destination register)",
    "result 1, upper 32 bits",
    "result 2 (the effective address of a load or store, low 32 bits)",
    "exceptions and branch outcome (bit 0 taken, bit 1 mispredicted, bit 2 exception)",
    "cycle the instruction was fetched (low 32 bits)",
    "fetch rate: instructions fetched in its fetch cycle",
    "dispatch rate: instructions dispatched in its dispatch cycle",
    "issue rate: instructions issued in its issue cycle",
    "execution window latency: cycles from dispatch to retire",
    "execution latency: cycles from issue to completion",
    "cycle the instruction retired (low 32 bits)",
    "retire rate: n (instructions retired in its cycle, low 16 bits) and c (stall cycles before it when it was the head, high 16 bits)",
];

/// Items only the pipeline knows before retirement (fetch, dispatch and issue times, rates
/// and latencies): a record collecting any of them is an *expensive* profile (§6.3) that
/// holds a profile network for its instruction's whole flight.
pub const PIPELINE_ITEMS: [&str; 6] = ["ftime", "frate", "drate", "irate", "wlat", "elat"];

/// Items that exist only with a timing model (implementation information).
pub const TIMING_ITEMS: [&str; 8] = [
    "ftime", "frate", "drate", "irate", "wlat", "elat", "rtime", "rrate",
];

/// A class of profiled instructions: an instruction class with a profile tag, or an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Class {
    /// Instruction class `0..8` (Table 1) with profile tag `0..4`.
    Op {
        /// Index in [`OP_CLASSES`].
        class: u8,
        /// Profile tag, 0 to 3.
        tag: u8,
    },
    /// Event `0..3` ([`EVENTS`]).
    Event(u8),
}

impl Class {
    /// Index of its PCT entry: `class * 4 + tag` for the 32 instruction classes, then 32, 33,
    /// 34 for the events.
    pub fn pct_index(self) -> usize {
        match self {
            Class::Op { class, tag } => usize::from(class) * 4 + usize::from(tag),
            Class::Event(e) => 32 + usize::from(e),
        }
    }

    /// The class of PCT entry `i` (0 to 34).
    pub fn from_pct_index(i: usize) -> Option<Class> {
        match i {
            0..=31 => Some(Class::Op {
                class: (i / 4) as u8,
                tag: (i % 4) as u8,
            }),
            32..=34 => Some(Class::Event((i - 32) as u8)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Class::Op { class, tag } => write!(f, "{} {tag}", OP_CLASSES[usize::from(class)]),
            Class::Event(e) => write!(f, "{}", EVENTS[usize::from(e)]),
        }
    }
}

/// The index of item `name` in [`ITEMS`].
pub fn item(name: &str) -> Option<u8> {
    ITEMS.iter().position(|n| *n == name).map(|i| i as u8)
}

/// The closest known name to `s` among `names` (for "did you mean" hints).
pub fn closest<'a>(s: &str, names: &[&'a str]) -> Option<&'a str> {
    let lower = s.to_ascii_lowercase();
    names
        .iter()
        .map(|n| (edit_distance(&lower, &n.to_ascii_lowercase()), *n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pct_indices_round_trip_and_hints_find_near_names() {
        for i in 0..35 {
            assert_eq!(Class::from_pct_index(i).unwrap().pct_index(), i);
        }
        assert_eq!(Class::from_pct_index(35), None);
        assert_eq!(closest("opBRANCHES", &OP_CLASSES), Some("opBRANCH"));
        assert_eq!(closest("rrat", &ITEMS), Some("rrate"));
        assert_eq!(closest("zzzzzz", &ITEMS), None);
    }
}
