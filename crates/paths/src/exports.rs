//! Branch records in the formats of the tools that consume LBR profiles:
//!
//! * BOLT's pre-aggregated profile (`perf2bolt --pa`, `llvm-bolt -pa -p FILE`;
//!   `bolt/include/bolt/Profile/DataAggregator.h`): `B FROM TO COUNT MISPREDS` per taken
//!   branch and `F START END COUNT` per fall-through range (from one branch's target to the
//!   next branch's source), addresses in hex.
//! * llvm-profgen's unsymbolized profile (`llvm-profgen --unsymbolized-profile`): the number
//!   of ranges, `START-END:COUNT` lines, the number of branches, `FROM->TO:COUNT` lines, as
//!   hex offsets from the program's base (its first loadable segment's page).
//!
//! Both come from the same pairs a trace holds: record *i* is a branch, and record *i*'s
//! target to record *i+1*'s source is straight-line code that ran. Records with an end
//! outside the program (`0` lost, or `u64::MAX` from an import) are left out, as are
//! ranges that run backwards (a record the hardware or a skew got wrong).

use outcrop_sampling::Samples;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Branches and fall-through ranges with their counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LbrCounts {
    /// (from, to) → times taken.
    pub branches: BTreeMap<(u64, u64), u64>,
    /// (start, end) → times run; `end` is the next branch's own address (inclusive).
    pub ranges: BTreeMap<(u64, u64), u64>,
}

/// Longest range kept (1 MiB, as AutoFDO's reader): longer ones are records gone wrong.
pub const MAX_RANGE: u64 = 1 << 20;

/// Counts the branches and ranges of `samples`' traces.
pub fn lbr_counts(samples: &Samples) -> LbrCounts {
    let ok = |a: u64| a != 0 && a != u64::MAX;
    let mut c = LbrCounts::default();
    for (t, n) in samples.sorted() {
        for (i, r) in t.iter().enumerate() {
            if ok(r.from) && ok(r.to) {
                *c.branches.entry((r.from, r.to)).or_default() += n;
            }
            if let Some(next) = t.get(i + 1) {
                let (s, e) = (r.to, next.from);
                if ok(s) && ok(e) && s <= e && e - s <= MAX_RANGE {
                    *c.ranges.entry((s, e)).or_default() += n;
                }
            }
        }
    }
    c
}

/// BOLT's pre-aggregated text. Mispredictions are not in Outcrop's samples, so each `B`
/// line says 0.
pub fn bolt_preaggregated(c: &LbrCounts) -> String {
    let mut s = String::new();
    for (&(f, t), n) in &c.branches {
        let _ = writeln!(s, "B {f:x} {t:x} {n} 0");
    }
    for (&(a, b), n) in &c.ranges {
        let _ = writeln!(s, "F {a:x} {b:x} {n}");
    }
    s
}

/// llvm-profgen's unsymbolized profile, addresses as offsets from `base`.
pub fn profgen_unsymbolized(c: &LbrCounts, base: u64) -> String {
    let mut s = String::new();
    let ranges: Vec<_> = c.ranges.iter().filter(|((a, _), _)| *a >= base).collect();
    let _ = writeln!(s, "{}", ranges.len());
    for (&(a, b), n) in ranges {
        let _ = writeln!(s, "{:x}-{:x}:{n}", a - base, b - base);
    }
    let branches: Vec<_> = c
        .branches
        .iter()
        .filter(|((f, t), _)| *f >= base && *t >= base)
        .collect();
    let _ = writeln!(s, "{}", branches.len());
    for (&(f, t), n) in branches {
        let _ = writeln!(s, "{:x}->{:x}:{n}", f - base, t - base);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcrop_sampling::Record;

    fn samples(traces: &[(&[(u64, u64)], u64)]) -> Samples {
        let mut s = Samples {
            meta: outcrop_sampling::Meta {
                program: String::new(),
                program_id: String::new(),
                objects: Vec::new(),
                config: Default::default(),
                instructions: 0,
                cycles: 0,
                samples: 0,
                recorded: 0,
            },
            traces: Default::default(),
        };
        for (t, n) in traces {
            let v = t.iter().map(|&(from, to)| Record { from, to }).collect();
            s.traces.insert(v, *n);
        }
        s
    }

    #[test]
    fn pairs_ranges_and_skips_outside() {
        let s = samples(&[
            (&[(0x100, 0x200), (0x210, 0x100), (0x108, u64::MAX)], 3),
            (&[(0x100, 0x200), (0x1f0, 0x300)], 2), // backwards range left out
        ]);
        let c = lbr_counts(&s);
        assert_eq!(c.branches[&(0x100, 0x200)], 5);
        assert_eq!(c.branches[&(0x210, 0x100)], 3);
        assert_eq!(c.branches.len(), 3);
        assert_eq!(c.ranges[&(0x200, 0x210)], 3);
        assert_eq!(c.ranges[&(0x100, 0x108)], 3);
        assert_eq!(c.ranges.len(), 2);
        let b = bolt_preaggregated(&c);
        assert!(
            b.contains("B 100 200 5 0\n") && b.contains("F 200 210 3\n"),
            "{b}"
        );
        let p = profgen_unsymbolized(&c, 0x100);
        assert_eq!(p, "2\n0-8:3\n100-110:3\n3\n0->100:5\nf0->200:2\n110->0:3\n");
    }
}
