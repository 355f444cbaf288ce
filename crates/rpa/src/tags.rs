//! Profile tags (§3.1): two bits per instruction that software sets to split a class (the
//! paper's VM adds them to the implementation ISA). Outcrop keeps them beside the program: a
//! table of single instructions (from the `outcrop_tags` ELF section that `outcrop.h`'s
//! macros fill) and of address ranges (from the command line). An instruction not in the
//! table has tag 0.

use std::collections::HashMap;

/// Why a tag table cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    /// A tag outside 0–3.
    #[error("profile tag {0} is out of range: tags are 0 to 3")]
    Range(u64),
    /// Two ranges overlap with different tags.
    #[error("tag ranges {0:#x}..{1:#x} and {2:#x}..{3:#x} overlap")]
    Overlap(u64, u64, u64, u64),
    /// An empty range.
    #[error("tag range {0:#x}..{1:#x} is empty")]
    Empty(u64, u64),
}

/// The profile tag of every instruction.
#[derive(Clone, Debug, Default)]
pub struct Tags {
    pcs: HashMap<u64, u8>,
    /// Sorted, disjoint `(lo, hi, tag)`, `hi` exclusive.
    ranges: Vec<(u64, u64, u8)>,
}

impl Tags {
    /// A table from single instructions and ranges; a single instruction's tag wins over a
    /// range containing it.
    pub fn new(
        pcs: impl IntoIterator<Item = (u64, u64)>,
        ranges: impl IntoIterator<Item = (u64, u64, u64)>,
    ) -> Result<Tags, TagError> {
        let mut t = Tags::default();
        for (pc, tag) in pcs {
            t.pcs.insert(
                pc,
                u8::try_from(tag)
                    .ok()
                    .filter(|&x| x < 4)
                    .ok_or(TagError::Range(tag))?,
            );
        }
        for (lo, hi, tag) in ranges {
            let tag = u8::try_from(tag)
                .ok()
                .filter(|&x| x < 4)
                .ok_or(TagError::Range(tag))?;
            if hi <= lo {
                return Err(TagError::Empty(lo, hi));
            }
            t.ranges.push((lo, hi, tag));
        }
        t.ranges.sort_unstable();
        for w in t.ranges.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(TagError::Overlap(w[0].0, w[0].1, w[1].0, w[1].1));
            }
        }
        Ok(t)
    }

    /// Whether every instruction has tag 0.
    pub fn is_empty(&self) -> bool {
        self.pcs.is_empty() && self.ranges.is_empty()
    }

    /// Tagged single instructions and ranges.
    pub fn len(&self) -> (usize, usize) {
        (self.pcs.len(), self.ranges.len())
    }

    /// The tag of the instruction at `pc`.
    #[inline]
    pub fn get(&self, pc: u64) -> u8 {
        if let Some(&t) = self.pcs.get(&pc) {
            return t;
        }
        let i = self.ranges.partition_point(|r| r.0 <= pc);
        match i.checked_sub(1).map(|i| self.ranges[i]) {
            Some((_, hi, tag)) if pc < hi => tag,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_instructions_win_over_ranges() {
        let t = Tags::new([(0x104, 1)], [(0x100, 0x200, 2), (0x300, 0x304, 3)]).unwrap();
        assert_eq!(
            [0xfc, 0x100, 0x104, 0x1fe, 0x200, 0x302, 0x304].map(|p| t.get(p)),
            [0, 2, 1, 2, 0, 3, 0]
        );
        assert!(Tags::default().is_empty());
    }

    #[test]
    fn bad_tables_are_refused() {
        assert_eq!(Tags::new([(0, 4)], []).unwrap_err(), TagError::Range(4));
        assert!(matches!(
            Tags::new([], [(0, 8, 1), (4, 12, 2)]),
            Err(TagError::Overlap(..))
        ));
        assert!(matches!(
            Tags::new([], [(8, 8, 1)]),
            Err(TagError::Empty(..))
        ));
    }
}
