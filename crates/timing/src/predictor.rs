//! Branch prediction: direction predictors (static, bimodal, gshare, tournament), a
//! set-associative branch target buffer, and a return-address stack.
//!
//! Tables of 2-bit saturating counters (0–1 predict not taken, 2–3 taken), initialised weakly
//! not taken. RISC-V instructions are 2-byte aligned, so tables are indexed by `pc >> 1`.

use crate::config::{PredictorConfig, PredictorKind};

#[inline]
fn bump(c: &mut u8, taken: bool) {
    if taken {
        *c = (*c + 1).min(3);
    } else {
        *c = c.saturating_sub(1);
    }
}

/// A conditional-branch direction predictor.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionPredictor {
    kind: PredictorKind,
    bimodal: Vec<u8>,
    gshare: Vec<u8>,
    chooser: Vec<u8>,
    history: u64,
    history_mask: u64,
}

impl DirectionPredictor {
    /// A predictor in its initial state.
    pub fn new(c: &PredictorConfig) -> DirectionPredictor {
        let uses = |k: PredictorKind| c.kind == k || c.kind == PredictorKind::Tournament;
        let size = |on: bool, n: u64| if on { n as usize } else { 1 };
        DirectionPredictor {
            kind: c.kind,
            bimodal: vec![1; size(uses(PredictorKind::Bimodal), c.bimodal_entries.into())],
            gshare: vec![1; size(uses(PredictorKind::Gshare), 1 << c.gshare_history)],
            chooser: vec![
                1;
                size(
                    c.kind == PredictorKind::Tournament,
                    c.chooser_entries.into()
                )
            ],
            history: 0,
            history_mask: (1 << c.gshare_history) - 1,
        }
    }

    /// Predicts the branch at `pc`, then trains on its outcome `taken`. Returns the prediction.
    #[inline]
    pub fn predict_and_train(&mut self, pc: u64, taken: bool) -> bool {
        let i = pc >> 1;
        let predicted = match self.kind {
            PredictorKind::NotTaken => false,
            PredictorKind::Bimodal => {
                let n = self.bimodal.len() - 1;
                let c = &mut self.bimodal[(i as usize) & n];
                let p = *c >= 2;
                bump(c, taken);
                p
            }
            PredictorKind::Gshare => {
                let c = &mut self.gshare[((i ^ self.history) & self.history_mask) as usize];
                let p = *c >= 2;
                bump(c, taken);
                p
            }
            PredictorKind::Tournament => {
                let n = self.bimodal.len() - 1;
                let b = &mut self.bimodal[(i as usize) & n];
                let pb = *b >= 2;
                bump(b, taken);
                let g = &mut self.gshare[((i ^ self.history) & self.history_mask) as usize];
                let pg = *g >= 2;
                bump(g, taken);
                let n = self.chooser.len() - 1;
                let ch = &mut self.chooser[(i as usize) & n];
                let p = if *ch >= 2 { pg } else { pb };
                if pg != pb {
                    // move towards whichever was right
                    bump(ch, pg == taken);
                }
                p
            }
        };
        self.history = ((self.history << 1) | u64::from(taken)) & self.history_mask;
        predicted
    }
}

/// A set-associative branch target buffer with LRU replacement: pc → last target.
#[derive(Clone, Debug, PartialEq)]
pub struct Btb {
    ways: usize,
    set_mask: u64,
    /// (pc, target), MRU first within a set; pc `u64::MAX` is empty.
    entries: Vec<(u64, u64)>,
}

impl Btb {
    /// An empty BTB.
    pub fn new(entries: u32, ways: u32) -> Btb {
        let ways = ways.max(1) as usize;
        let sets = (entries as usize / ways).max(1);
        Btb {
            ways,
            set_mask: sets as u64 - 1,
            entries: vec![(u64::MAX, 0); sets * ways],
        }
    }

    /// The predicted target of the control transfer at `pc`, if the BTB holds it (updates LRU).
    #[inline]
    pub fn lookup(&mut self, pc: u64) -> Option<u64> {
        let set = self.set(pc);
        let k = set.iter().position(|e| e.0 == pc)?;
        set[..=k].rotate_right(1);
        Some(set[0].1)
    }

    /// Records that the transfer at `pc` went to `target`.
    #[inline]
    pub fn update(&mut self, pc: u64, target: u64) {
        let set = self.set(pc);
        match set.iter().position(|e| e.0 == pc) {
            Some(k) => {
                set[..=k].rotate_right(1);
                set[0].1 = target;
            }
            None => {
                set.rotate_right(1);
                set[0] = (pc, target);
            }
        }
    }

    #[inline]
    fn set(&mut self, pc: u64) -> &mut [(u64, u64)] {
        let base = (((pc >> 1) & self.set_mask) as usize) * self.ways;
        &mut self.entries[base..base + self.ways]
    }
}

/// A circular return-address stack: overflow overwrites the oldest entry, underflow predicts
/// nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Ras {
    slots: Vec<u64>,
    top: usize,
    depth: usize,
}

impl Ras {
    /// An empty stack of `entries` slots.
    pub fn new(entries: u32) -> Ras {
        Ras {
            slots: vec![0; entries.max(1) as usize],
            top: 0,
            depth: 0,
        }
    }

    /// A call: push its return address.
    #[inline]
    pub fn push(&mut self, ret: u64) {
        self.top = (self.top + 1) % self.slots.len();
        self.slots[self.top] = ret;
        self.depth = (self.depth + 1).min(self.slots.len());
    }

    /// A return: the predicted return address, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<u64> {
        if self.depth == 0 {
            return None;
        }
        let v = self.slots[self.top];
        self.top = (self.top + self.slots.len() - 1) % self.slots.len();
        self.depth -= 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn cfg(kind: PredictorKind) -> PredictorConfig {
        PredictorConfig {
            kind,
            ..Config::default().predictor
        }
    }

    fn mispredicts(p: &mut DirectionPredictor, stream: &[(u64, bool)]) -> usize {
        stream
            .iter()
            .filter(|&&(pc, t)| p.predict_and_train(pc, t) != t)
            .count()
    }

    #[test]
    fn always_taken_is_learned_by_every_dynamic_predictor() {
        let stream: Vec<_> = (0..10_000).map(|_| (0x1000, true)).collect();
        for k in [
            PredictorKind::Bimodal,
            PredictorKind::Gshare,
            PredictorKind::Tournament,
        ] {
            let mut p = DirectionPredictor::new(&cfg(k));
            // warm-up: the counter and (for gshare) the history must saturate
            assert!(mispredicts(&mut p, &stream) <= 20, "{k:?}");
        }
        let mut p = DirectionPredictor::new(&cfg(PredictorKind::NotTaken));
        assert_eq!(mispredicts(&mut p, &stream), 10_000);
    }

    #[test]
    fn alternating_needs_history() {
        let stream: Vec<_> = (0..10_000).map(|i| (0x1000, i % 2 == 0)).collect();
        let mut b = DirectionPredictor::new(&cfg(PredictorKind::Bimodal));
        assert!(mispredicts(&mut b, &stream) >= 4_900);
        let mut g = DirectionPredictor::new(&cfg(PredictorKind::Gshare));
        assert!(mispredicts(&mut g, &stream) <= 40);
        let mut t = DirectionPredictor::new(&cfg(PredictorKind::Tournament));
        assert!(mispredicts(&mut t, &stream) <= 60);
    }

    #[test]
    fn random_outcomes_are_mispredicted_half_the_time() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let stream: Vec<_> = (0..100_000).map(|_| (0x2000, rng.gen::<bool>())).collect();
        let mut t = DirectionPredictor::new(&cfg(PredictorKind::Tournament));
        let m = mispredicts(&mut t, &stream) as f64 / 1e5;
        assert!((0.45..0.55).contains(&m), "{m}");
    }

    #[test]
    fn btb_and_ras() {
        let mut b = Btb::new(4, 2); // 2 sets of 2 ways
        assert_eq!(b.lookup(0x10), None);
        b.update(0x10, 0x80);
        assert_eq!(b.lookup(0x10), Some(0x80));
        b.update(0x10, 0x90);
        assert_eq!(b.lookup(0x10), Some(0x90));
        // same set (pc>>1 even): 0x10, 0x14, 0x18 → the LRU one goes
        b.update(0x14, 1);
        b.update(0x18, 2);
        assert_eq!(b.lookup(0x10), None);
        assert_eq!(b.lookup(0x14), Some(1));

        let mut r = Ras::new(2);
        assert_eq!(r.pop(), None);
        r.push(1);
        r.push(2);
        r.push(3); // overwrites 1
        assert_eq!(r.pop(), Some(3));
        assert_eq!(r.pop(), Some(2));
        assert_eq!(r.pop(), None);
    }
}
