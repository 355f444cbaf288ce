//! The cycle rule every layer shares: the paper's ExtendPath (§III.A) over basic blocks and
//! ExtendStratumLayer (§III.B) over repeated elements of the layer below.
//!
//! A layer sees a stream of dense symbols (`u32`). It grows the cycle under construction until
//! the next symbol already occurs in it (or the cycle reaches the length limit); the cycle is
//! then complete and the symbol starts the next one. A completed cycle that equals the
//! previous one is not a new element: the previous element's trip count goes up. The equality
//! is checked the moment the cycle under construction equals the previous cycle (not only
//! when it completes): that is the rule that turns `A A B A A B A A B` into the paper's
//! `(A)^2 (BA) (AB) (A)^2 (B)`.
//!
//! Completed cycles get dense ids from a [`SeqDict`] in order of first appearance, so ids are
//! deterministic. A dictionary may have a cap: a new cycle met when the dictionary is full
//! gets no id ([`Run::id`] is `None`) and its layer forwards its elements instead.

use rustc_hash::FxHashMap;

/// A dictionary of symbol sequences with dense ids in order of insertion.
#[derive(Debug, Default)]
pub struct SeqDict {
    map: FxHashMap<Box<[u32]>, u32>,
    data: Vec<u32>,
    offsets: Vec<usize>,
}

impl SeqDict {
    /// An empty dictionary.
    pub fn new() -> SeqDict {
        SeqDict {
            map: FxHashMap::default(),
            data: Vec::new(),
            offsets: vec![0],
        }
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when the dictionary holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sequence with id `id` (empty when out of range).
    pub fn get(&self, id: u32) -> &[u32] {
        let i = id as usize;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.data[a..b],
            _ => &[],
        }
    }

    /// The id of `seq`, if it is in the dictionary.
    pub fn lookup(&self, seq: &[u32]) -> Option<u32> {
        self.map.get(seq).copied()
    }

    /// Adds `seq` (which must not be present) and returns its id.
    pub fn insert(&mut self, seq: &[u32]) -> u32 {
        let id = self.len() as u32;
        self.data.extend_from_slice(seq);
        self.offsets.push(self.data.len());
        self.map.insert(seq.into(), id);
        id
    }

    /// Total symbols over all sequences.
    pub fn total_symbols(&self) -> usize {
        self.data.len()
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        // the map keeps a boxed copy of each sequence plus a hash-table slot
        2 * self.data.len() * 4 + self.len() * (8 + 16 + 4 + 8)
    }
}

/// One repeated element leaving a layer: a completed cycle and its trip count.
#[derive(Debug)]
pub struct Run<'a> {
    /// The cycle's id in the layer's dictionary; `None` when the dictionary was full.
    pub id: Option<u32>,
    /// The cycle's symbols.
    pub seq: &'a [u32],
    /// Consecutive executions (≥ 1).
    pub trip: u64,
}

/// The cycle under construction and the previous (repeated) cycle of one layer.
#[derive(Debug)]
pub struct CycleBuilder {
    cur: Vec<u32>,
    /// `seen[s] == epoch` ⇔ symbol `s` occurs in `cur`.
    seen: Vec<u32>,
    epoch: u32,
    max_len: usize,
    cap: usize,
    /// The previous cycle: its id (if it got one), trip count and symbols.
    prev: Option<(Option<u32>, u64)>,
    prev_seq: Vec<u32>,
    /// `cur` is a prefix of `prev_seq`.
    matching: bool,
    /// Completed cycles, by id.
    pub dict: SeqDict,
    /// Cycles cut at the length limit.
    pub limit_cuts: u64,
}

/// The part of a [`CycleBuilder`] that belongs to one input stream (one guest thread): the
/// cycle under construction and the previous cycle. The dictionary is shared.
#[derive(Debug)]
pub struct CycleState {
    cur: Vec<u32>,
    seen: Vec<u32>,
    epoch: u32,
    prev: Option<(Option<u32>, u64)>,
    prev_seq: Vec<u32>,
    matching: bool,
}

impl Default for CycleState {
    fn default() -> Self {
        CycleState {
            cur: Vec::new(),
            seen: Vec::new(),
            epoch: 1,
            prev: None,
            prev_seq: Vec::new(),
            matching: false,
        }
    }
}

impl CycleBuilder {
    /// Exchanges the stream state with `s`: the builder goes on with the stream `s` held, and
    /// `s` keeps the one it had (see [`CycleState`]).
    pub fn swap_state(&mut self, s: &mut CycleState) {
        std::mem::swap(&mut self.cur, &mut s.cur);
        std::mem::swap(&mut self.seen, &mut s.seen);
        std::mem::swap(&mut self.epoch, &mut s.epoch);
        std::mem::swap(&mut self.prev, &mut s.prev);
        std::mem::swap(&mut self.prev_seq, &mut s.prev_seq);
        std::mem::swap(&mut self.matching, &mut s.matching);
    }

    /// A layer whose cycles are at most `max_len` symbols (≥ 1) and whose dictionary holds at
    /// most `cap` cycles.
    pub fn new(max_len: usize, cap: usize) -> CycleBuilder {
        CycleBuilder {
            cur: Vec::new(),
            seen: Vec::new(),
            epoch: 1,
            max_len: max_len.max(1),
            cap,
            prev: None,
            prev_seq: Vec::new(),
            matching: false,
            dict: SeqDict::new(),
            limit_cuts: 0,
        }
    }

    /// Adds one symbol; calls `emit` for every repeated element that is now final.
    #[inline]
    pub fn push(&mut self, sym: u32, emit: &mut impl FnMut(Run<'_>)) {
        let s = sym as usize;
        let seen = self.seen.get(s).is_some_and(|&e| e == self.epoch);
        if seen || self.cur.len() >= self.max_len {
            if !seen {
                self.limit_cuts += 1;
            }
            self.complete(emit);
        }
        if s >= self.seen.len() {
            self.seen.resize((s + 1).max(2 * self.seen.len()), 0);
        }
        self.seen[s] = self.epoch;
        if self.matching {
            self.matching = self.prev_seq.get(self.cur.len()) == Some(&sym);
        }
        self.cur.push(sym);
        if self.matching && self.cur.len() == self.prev_seq.len() {
            // the cycle under construction equals the previous one: one more trip
            if let Some((_, trip)) = &mut self.prev {
                *trip += 1;
            }
            self.reset_cur();
        }
    }

    /// Completes the cycle under construction (if any) and emits the last repeated element.
    pub fn finish(&mut self, emit: &mut impl FnMut(Run<'_>)) {
        if !self.cur.is_empty() {
            self.complete(emit);
        }
        if let Some((id, trip)) = self.prev.take() {
            emit(Run {
                id,
                seq: &self.prev_seq,
                trip,
            });
        }
        self.prev_seq.clear();
        self.matching = false;
    }

    fn complete(&mut self, emit: &mut impl FnMut(Run<'_>)) {
        let id = match self.dict.lookup(&self.cur) {
            Some(id) => Some(id),
            None if self.dict.len() < self.cap => Some(self.dict.insert(&self.cur)),
            None => None,
        };
        if let Some((pid, trip)) = self.prev.take() {
            emit(Run {
                id: pid,
                seq: &self.prev_seq,
                trip,
            });
        }
        self.prev = Some((id, 1));
        std::mem::swap(&mut self.prev_seq, &mut self.cur);
        self.reset_cur();
    }

    fn reset_cur(&mut self) {
        self.cur.clear();
        self.matching = self.prev.is_some();
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.seen.iter_mut().for_each(|e| *e = 0);
            self.epoch = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(seq: &[u32], max_len: usize) -> (Vec<(Vec<u32>, u64)>, CycleBuilder) {
        let mut b = CycleBuilder::new(max_len, usize::MAX);
        let mut out = Vec::new();
        let mut emit = |r: Run<'_>| out.push((r.seq.to_vec(), r.trip));
        for &s in seq {
            b.push(s, &mut emit);
        }
        b.finish(&mut emit);
        (out, b)
    }

    #[test]
    fn paper_example_aabaabaab() {
        // §II.A: "AABAABAAB" → (A^2)(BA)(AB)(A^2)(B); paths A, BA, AB, B
        let (a, b) = (0, 1);
        let (out, builder) = runs(&[a, a, b, a, a, b, a, a, b], 2048);
        assert_eq!(
            out,
            vec![
                (vec![a], 2),
                (vec![b, a], 1),
                (vec![a, b], 1),
                (vec![a], 2),
                (vec![b], 1)
            ]
        );
        assert_eq!(builder.dict.len(), 4);
        assert_eq!(builder.dict.get(0), &[a]);
        assert_eq!(builder.dict.get(1), &[b, a]);
        assert_eq!(builder.dict.get(2), &[a, b]);
        assert_eq!(builder.dict.get(3), &[b]);
    }

    #[test]
    fn paper_stratum_example() {
        // §II.A: repeated paths P0^7 P1^12 P0^5 P1^12 → S0 = P0^7 P1^12 P0^5, S1 = P1^12
        // (symbols: 0 = P0^7, 1 = P1^12, 2 = P0^5)
        let (out, _) = runs(&[0, 1, 2, 1], 2048);
        assert_eq!(out, vec![(vec![0, 1, 2], 1), (vec![1], 1)]);
    }

    #[test]
    fn long_loop_is_one_run() {
        let seq: Vec<u32> = (0..1000).flat_map(|_| [3, 4, 5]).collect();
        let (out, _) = runs(&seq, 2048);
        assert_eq!(out, vec![(vec![3, 4, 5], 1000)]);
    }

    #[test]
    fn length_limit_cuts_but_keeps_everything() {
        let seq: Vec<u32> = (0..10).collect();
        let (out, b) = runs(&seq, 4);
        assert_eq!(
            out,
            vec![
                (vec![0, 1, 2, 3], 1),
                (vec![4, 5, 6, 7], 1),
                (vec![8, 9], 1)
            ]
        );
        assert_eq!(b.limit_cuts, 2);
    }

    #[test]
    fn capped_dictionary_leaves_new_cycles_without_id() {
        let mut b = CycleBuilder::new(2048, 1);
        let mut ids = Vec::new();
        let mut emit = |r: Run<'_>| ids.push((r.id, r.seq.to_vec()));
        for s in [0, 0, 1, 1, 0, 0] {
            b.push(s, &mut emit);
        }
        b.finish(&mut emit);
        assert_eq!(
            ids,
            vec![(Some(0), vec![0]), (None, vec![1]), (Some(0), vec![0])]
        );
    }
}
