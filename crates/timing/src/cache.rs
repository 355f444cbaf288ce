//! Set-associative caches with true LRU replacement, and TLBs built on the same structure
//! (a TLB is a cache of page numbers).
//!
//! Each set keeps its tags ordered most- to least-recently used, so a hit moves one tag to the
//! front and a miss shifts the set and drops the last tag. For the associativities we model
//! (≤ 16 ways; a 64-entry TLB) that is a handful of compares per access, and almost every hit
//! is found at the front.
//!
//! Writes allocate (as cachegrind models them); dirty lines and write-backs are not modelled.

use crate::config::{CacheConfig, TlbConfig};

const EMPTY: u64 = u64::MAX;

/// One cache level (or a TLB).
#[derive(Clone, Debug, PartialEq)]
pub struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    /// `sets × ways` tags (line numbers), MRU first within a set.
    tags: Vec<u64>,
    /// Accesses so far.
    pub accesses: u64,
    /// Misses so far.
    pub misses: u64,
}

impl Cache {
    /// An empty cache of `sets × ways` lines of `line` bytes (both powers of two; validated by
    /// [`crate::Config::validate`]).
    pub fn new(sets: u64, ways: u32, line: u64) -> Cache {
        let sets = sets.max(1);
        Cache {
            line_shift: line.max(1).trailing_zeros(),
            set_mask: sets - 1,
            ways: ways.max(1) as usize,
            tags: vec![EMPTY; (sets as usize) * ways.max(1) as usize],
            accesses: 0,
            misses: 0,
        }
    }

    /// A data or instruction cache.
    pub fn from_config(c: &CacheConfig) -> Cache {
        Cache::new(c.sets(), c.ways, u64::from(c.line))
    }

    /// A TLB.
    pub fn tlb(c: &TlbConfig) -> Cache {
        Cache::new(u64::from(c.entries / c.ways.max(1)), c.ways, c.page)
    }

    /// The line (or page) number of `addr`.
    #[inline]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// Puts the line holding `addr` in the cache (most recently used) without counting an
    /// access: a fill that a prefetch asked for.
    #[inline]
    pub fn fill(&mut self, addr: u64) {
        self.touch(self.line_of(addr));
    }

    /// log2 of the line size.
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    /// Accesses the line holding `addr`: true on a hit. Counts the access and a miss.
    #[inline]
    pub fn access(&mut self, addr: u64) -> bool {
        self.accesses += 1;
        let hit = self.touch(self.line_of(addr));
        self.misses += u64::from(!hit);
        hit
    }

    /// Accesses `size` bytes at `addr`, which may straddle two lines: counted as one access
    /// that misses if either line misses (cachegrind's rule).
    #[inline]
    pub fn access_range(&mut self, addr: u64, size: u64) -> bool {
        let first = self.line_of(addr);
        let last = self.line_of(addr.wrapping_add(size.max(1) - 1));
        self.accesses += 1;
        let mut hit = self.touch(first);
        if last != first {
            hit &= self.touch(last);
        }
        self.misses += u64::from(!hit);
        hit
    }

    /// [`Cache::access`] without counting it (functional warming): true on a hit.
    #[inline]
    pub fn warm(&mut self, addr: u64) -> bool {
        self.touch(self.line_of(addr))
    }

    /// [`Cache::access_range`] without counting it (functional warming).
    #[inline]
    pub fn warm_range(&mut self, addr: u64, size: u64) -> bool {
        let first = self.line_of(addr);
        let last = self.line_of(addr.wrapping_add(size.max(1) - 1));
        let mut hit = self.touch(first);
        if last != first {
            hit &= self.touch(last);
        }
        hit
    }

    /// Looks up and updates LRU for line number `line` without counting.
    #[inline]
    fn touch(&mut self, line: u64) -> bool {
        let base = ((line & self.set_mask) as usize) * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        if set[0] == line {
            return true;
        }
        match set.iter().position(|&t| t == line) {
            Some(k) => {
                set[..=k].rotate_right(1);
                true
            }
            None => {
                set.rotate_right(1);
                set[0] = line;
                false
            }
        }
    }

    /// Whether the line holding `addr` is present (no LRU update, not counted).
    pub fn contains(&self, addr: u64) -> bool {
        let line = self.line_of(addr);
        let base = ((line & self.set_mask) as usize) * self.ways;
        self.tags[base..base + self.ways].contains(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        // one set, two ways, 64-byte lines
        let mut c = Cache::new(1, 2, 64);
        assert!(!c.access(0));
        assert!(!c.access(64));
        assert!(c.access(0)); // 0 is now MRU
        assert!(!c.access(128)); // evicts 64
        assert!(c.contains(0) && c.contains(128) && !c.contains(64));
        assert_eq!((c.accesses, c.misses), (4, 3));
    }

    #[test]
    fn sets_are_independent() {
        let mut c = Cache::new(2, 1, 64);
        assert!(!c.access(0)); // set 0
        assert!(!c.access(64)); // set 1
        assert!(c.access(0) && c.access(64));
        assert!(!c.access(128)); // set 0 again, evicts line 0
        assert!(!c.access(0));
    }

    #[test]
    fn straddling_access_touches_both_lines() {
        let mut c = Cache::new(4, 1, 64);
        assert!(!c.access_range(60, 8));
        assert!(c.contains(0) && c.contains(64));
        assert!(c.access_range(60, 8));
        assert_eq!((c.accesses, c.misses), (2, 1));
    }

    /// Reference: a cache that keeps, per set, the full access order.
    #[test]
    fn matches_a_naive_lru_reference() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let (sets, ways) = (8u64, 4usize);
        let mut c = Cache::new(sets, ways as u32, 64);
        let mut reference: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
        for _ in 0..100_000 {
            let addr = rng.gen_range(0..64 * 64u64);
            let line = addr / 64;
            let set = &mut reference[(line % sets) as usize];
            let want = set.contains(&line);
            set.retain(|&l| l != line);
            set.insert(0, line);
            set.truncate(ways);
            assert_eq!(c.access(addr), want);
        }
    }
}
