//! [`BrrUnit`]: the decision logic of branch-on-random (`brr`), the branch-on-random paper's
//! §3.2–3.4: a branch whose condition is a frequency, taken with probability
//! `(1/2)^(freq+1)` for a 4-bit `freq` (50% down to 1/65,536).
//!
//! In [`BrrMode::Lfsr`] (the paper's design) the unit holds an [`Lfsr`] that is clocked only
//! when a `brr` executes. A `brr` of level `freq` is taken when the `freq + 1` register bits
//! chosen for that level are all 1 (Figure 7: one AND gate per level, a multiplexer on the
//! field). The bits are chosen non-contiguous with varied spacing, as §3.3 recommends:
//! level `k` ANDs the first `k + 1` positions of [`BrrConfig::bits`], by default
//! [`SPACED_BITS`] (`0, 2, 5, 9, …`; the paper's own example for 6.25% is bits 0, 2, 5 and
//! 9). ANDing adjacent bits ([`CONTIGUOUS_BITS`]) gives the right frequency but correlated
//! outcomes: after a taken 25% branch the next is taken with probability 1/2, not 1/4
//! (tested below).
//!
//! The other modes are what the paper compares against or needs for testing:
//! [`BrrMode::Counter`] is §4.1's "hardware counter" (every `2^(freq+1)`-th execution of a
//! `brr` is taken: one counter of `brr` executions), [`BrrMode::Always`] and
//! [`BrrMode::Never`] fix the outcome, and [`BrrMode::Trap`] makes `brr` an illegal
//! instruction, so that software emulates it (§3.4, the paper's accuracy runs).

use crate::error::{Error, Result};
use crate::lfsr::Lfsr;

/// Frequency levels a `brr` encodes (a 4-bit field).
pub const LEVELS: usize = 16;

/// Default bit selection: non-contiguous positions with varied spacing, all below 20. Level
/// `k` uses the first `k + 1`.
pub const SPACED_BITS: [u8; 20] = [
    0, 2, 5, 9, 14, 1, 7, 12, 18, 4, 11, 17, 3, 10, 16, 6, 13, 19, 8, 15,
];

/// Adjacent bits (level `k` ANDs bits `0..=k`): the selection §3.3 warns against, kept for
/// the sensitivity study.
pub const CONTIGUOUS_BITS: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// How `brr` outcomes are decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrrMode {
    /// The paper's design: AND of LFSR bits (the default).
    Lfsr,
    /// §4.1's hardware counter: every `2^(freq+1)`-th `brr` execution is taken.
    Counter,
    /// Every `brr` is taken.
    Always,
    /// No `brr` is taken.
    Never,
    /// `brr` is an illegal instruction (the guest's SIGILL handler emulates it).
    Trap,
}

impl BrrMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [BrrMode; 5] = [
        BrrMode::Lfsr,
        BrrMode::Counter,
        BrrMode::Always,
        BrrMode::Never,
        BrrMode::Trap,
    ];

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            BrrMode::Lfsr => "lfsr",
            BrrMode::Counter => "counter",
            BrrMode::Always => "always",
            BrrMode::Never => "never",
            BrrMode::Trap => "trap",
        }
    }

    /// The mode named `s`.
    pub fn parse(s: &str) -> Result<BrrMode> {
        BrrMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = BrrMode::ALL.iter().map(|m| m.name()).collect();
                Error::Config(format!(
                    "unknown brr mode `{s}` (modes: {})",
                    names.join(", ")
                ))
            })
    }
}

/// Configuration of a [`BrrUnit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrrConfig {
    /// How outcomes are decided.
    pub mode: BrrMode,
    /// LFSR width in bits (at least 16, so that level 15 can AND 16 distinct bits).
    pub width: u8,
    /// LFSR feedback taps, as polynomial exponents (see [`Lfsr::new`]).
    pub taps: Vec<u8>,
    /// Bit positions ANDed, in order: level `k` uses the first `k + 1` (at least 16
    /// distinct positions, each below `width`).
    pub bits: Vec<u8>,
    /// Initial LFSR state (non-zero in the low `width` bits).
    pub seed: u64,
    /// LFSR steps per decision, 1 to 64: 1 is the paper's register, shifted once per `brr`;
    /// more is a leap-forward register (still one clock in hardware: each new bit is an XOR
    /// of old ones). It changes which consecutive decisions are correlated, not whether: on
    /// 20 bits a leap of 20 turns clustered takes into excluded ones; a wider register is
    /// what approaches independence (docs/studies/brr.md, "The LFSR's correlation").
    pub leap: u8,
}

impl Default for BrrConfig {
    /// The paper's suggested design point: a 20-bit maximal LFSR, spaced bits, a fixed seed.
    fn default() -> BrrConfig {
        BrrConfig {
            mode: BrrMode::Lfsr,
            width: 20,
            taps: vec![20, 17],
            bits: SPACED_BITS.to_vec(),
            seed: 0x5_a5a5,
            leap: 1,
        }
    }
}

/// The probability that a `brr` of level `freq` is taken: `(1/2)^(freq+1)`.
pub fn probability(freq: u8) -> f64 {
    0.5f64.powi(i32::from(freq.min(15)) + 1)
}

/// The sampling interval a level stands for: `2^(freq+1)`.
pub fn interval(freq: u8) -> u64 {
    1 << (u32::from(freq.min(15)) + 1)
}

/// The level whose interval is `interval` (a power of two from 2 to 65,536).
pub fn level_of_interval(interval: u64) -> Option<u8> {
    (interval.is_power_of_two() && (2..=1 << 16).contains(&interval))
        .then(|| interval.trailing_zeros() as u8 - 1)
}

impl Default for BrrUnit {
    /// The unit of [`BrrConfig::default`].
    fn default() -> BrrUnit {
        let mut masks = [0u64; LEVELS];
        let mut acc = 0u64;
        for (level, &bit) in SPACED_BITS.iter().take(LEVELS).enumerate() {
            acc |= 1 << bit;
            masks[level] = acc;
        }
        BrrUnit {
            mode: BrrMode::Lfsr,
            // 20 bits, taps 20 and 17 (bits 0 and 3), the default seed
            lfsr: Lfsr::from_parts(20, 1 | 1 << 3, 0x5_a5a5),
            masks,
            leap: 1,
            executed: 0,
            taken: 0,
        }
    }
}

/// Branch-on-random's decision unit: one per hardware thread (see the module docs).
#[derive(Clone, Debug)]
pub struct BrrUnit {
    mode: BrrMode,
    lfsr: Lfsr,
    /// Per level, the LFSR bits that must all be 1.
    masks: [u64; LEVELS],
    /// LFSR steps per decision.
    leap: u8,
    /// `brr` executions (counter mode's counter).
    executed: u64,
    taken: u64,
}

impl BrrUnit {
    /// A unit configured by `cfg`; a bad width, tap, bit selection or seed is an error.
    pub fn new(cfg: &BrrConfig) -> Result<BrrUnit> {
        if cfg.width < 16 {
            return Err(Error::Config(format!(
                "a brr LFSR needs at least 16 bits (level 15 ANDs 16 of them), not {}",
                cfg.width
            )));
        }
        if !(1..=64).contains(&cfg.leap) {
            return Err(Error::Config(format!(
                "brr LFSR steps per decision (leap) must be 1 to 64, not {}",
                cfg.leap
            )));
        }
        let lfsr = Lfsr::new(cfg.width, &cfg.taps, cfg.seed)?;
        let mut masks = [0u64; LEVELS];
        let mut acc = 0u64;
        for (level, mask) in masks.iter_mut().enumerate() {
            let Some(&bit) = cfg.bits.get(level) else {
                return Err(Error::Config(format!(
                    "a brr bit selection needs {LEVELS} positions, {} given",
                    cfg.bits.len()
                )));
            };
            if bit >= cfg.width || acc & (1 << bit) != 0 {
                return Err(Error::Config(format!(
                    "brr bit {bit} is repeated or outside the {}-bit LFSR",
                    cfg.width
                )));
            }
            acc |= 1 << bit;
            *mask = acc;
        }
        Ok(BrrUnit {
            mode: cfg.mode,
            lfsr,
            masks,
            leap: cfg.leap,
            executed: 0,
            taken: 0,
        })
    }

    /// The mode.
    pub fn mode(&self) -> BrrMode {
        self.mode
    }

    /// Decides one `brr` of level `freq` (its low 4 bits): whether it is taken, or `None` in
    /// [`BrrMode::Trap`] (the instruction is illegal, nothing changes).
    #[inline]
    pub fn decide(&mut self, freq: u8) -> Option<bool> {
        let level = usize::from(freq & 15);
        let taken = match self.mode {
            BrrMode::Lfsr => {
                let m = self.masks[level];
                let t = self.lfsr.state() & m == m;
                // clocked only when a brr executes
                for _ in 0..self.leap {
                    self.lfsr.step();
                }
                t
            }
            BrrMode::Counter => (self.executed + 1) % interval(freq) == 0,
            BrrMode::Always => true,
            BrrMode::Never => false,
            BrrMode::Trap => return None,
        };
        self.executed += 1;
        self.taken += u64::from(taken);
        Some(taken)
    }

    /// `brr` instructions decided so far.
    pub fn executed(&self) -> u64 {
        self.executed
    }

    /// How many of them were taken.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// The LFSR's current state (for checkpoints and tests).
    pub fn lfsr_state(&self) -> u64 {
        self.lfsr.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(mode: BrrMode, bits: &[u8]) -> BrrUnit {
        BrrUnit::new(&BrrConfig {
            mode,
            bits: bits.to_vec(),
            ..BrrConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn each_level_is_taken_at_its_frequency_over_a_full_period() {
        // over the 2^20 - 1 states of the maximal register, k given bits are all 1 in
        // 2^(20-k) states: the frequency is (1/2)^k to within 1 part in 2^20
        for level in [0u8, 1, 3, 9, 12] {
            let mut u = unit(BrrMode::Lfsr, &SPACED_BITS);
            let n = (1u64 << 20) - 1;
            let taken = (0..n).filter(|_| u.decide(level) == Some(true)).count() as u64;
            assert_eq!(taken, 1 << (20 - (level as u32 + 1)), "level {level}");
            assert_eq!(u.taken(), taken);
            assert_eq!(u.executed(), n);
        }
    }

    #[test]
    fn spaced_bits_decorrelate_consecutive_outcomes_and_adjacent_bits_do_not() {
        // §3.3: with two adjacent bits, a taken 25% branch is followed by a taken one half
        // of the time (one of the two bits is known to be 1); with spaced bits, a quarter
        let cond = |bits: &[u8]| {
            let mut u = unit(BrrMode::Lfsr, bits);
            let (mut prev, mut both, mut first) = (false, 0u64, 0u64);
            for _ in 0..(1u64 << 20) - 1 {
                let t = u.decide(1) == Some(true);
                if prev {
                    first += 1;
                    both += u64::from(t);
                }
                prev = t;
            }
            both as f64 / first as f64
        };
        let adjacent = cond(&CONTIGUOUS_BITS);
        let spaced = cond(&SPACED_BITS);
        assert!((adjacent - 0.5).abs() < 0.01, "adjacent: {adjacent}");
        assert!((spaced - 0.25).abs() < 0.01, "spaced: {spaced}");
    }

    #[test]
    fn the_counter_takes_every_interval_th_execution() {
        let mut u = unit(BrrMode::Counter, &SPACED_BITS);
        let outcomes: Vec<bool> = (0..16).map(|_| u.decide(2) == Some(true)).collect();
        let taken: Vec<usize> = (0..16).filter(|&i| outcomes[i]).collect();
        assert_eq!(taken, vec![7, 15]);
    }

    #[test]
    fn the_default_unit_is_the_default_configuration() {
        let mut a = BrrUnit::default();
        let mut b = BrrUnit::new(&BrrConfig::default()).unwrap();
        assert_eq!(a.masks, b.masks);
        for _ in 0..10_000 {
            assert_eq!(a.decide(2), b.decide(2));
        }
        assert_eq!(a.lfsr_state(), b.lfsr_state());
    }

    #[test]
    fn fixed_modes_and_trap() {
        let mut u = unit(BrrMode::Always, &SPACED_BITS);
        assert_eq!(u.decide(15), Some(true));
        let mut u = unit(BrrMode::Never, &SPACED_BITS);
        assert_eq!(u.decide(0), Some(false));
        let mut u = unit(BrrMode::Trap, &SPACED_BITS);
        assert_eq!(u.decide(0), None);
        assert_eq!(u.executed(), 0);
    }

    #[test]
    fn the_lfsr_is_clocked_only_by_brr() {
        let mut u = unit(BrrMode::Lfsr, &SPACED_BITS);
        let s0 = u.lfsr_state();
        assert_eq!(u.lfsr_state(), s0);
        u.decide(3);
        assert_ne!(u.lfsr_state(), s0);
    }

    #[test]
    fn a_leap_changes_how_consecutive_decisions_are_correlated() {
        // level 9 (1/1024): with one step per decision, a take makes a take 5 decisions
        // later 32 times likelier (the spaced bits overlap under a shift of 5); leaping 20
        // steps maps the register linearly onto new bits: no clustering at that lag
        let after_take = |leap: u8| {
            let mut u = BrrUnit::new(&BrrConfig {
                leap,
                ..BrrConfig::default()
            })
            .unwrap();
            let t: Vec<bool> = (0..1 << 21).map(|_| u.decide(9) == Some(true)).collect();
            let taken = t.iter().filter(|&&x| x).count() as f64;
            let both = (0..t.len() - 5).filter(|&i| t[i] && t[i + 5]).count() as f64;
            (taken / t.len() as f64, both / taken)
        };
        let (p1, c1) = after_take(1);
        let (p20, c20) = after_take(20);
        for p in [p1, p20] {
            assert!((p * 1024.0 - 1.0).abs() < 0.1, "{p}");
        }
        assert!(c1 > 16.0 / 1024.0, "{c1}");
        assert!(c20 < 3.0 / 1024.0, "{c20}");
        let bad = BrrUnit::new(&BrrConfig {
            leap: 0,
            ..BrrConfig::default()
        });
        assert!(bad.is_err());
    }

    #[test]
    fn the_papers_32_bit_tap_sets_are_accepted() {
        for taps in [
            &[32u8, 31, 30, 10][..],
            &[32, 19, 18, 13],
            &[32, 31, 30, 29, 28, 22],
            &[32, 22, 16, 15, 12, 11],
        ] {
            let mut u = BrrUnit::new(&BrrConfig {
                width: 32,
                taps: taps.to_vec(),
                ..BrrConfig::default()
            })
            .unwrap();
            // a 1/2 branch is taken about half the time
            let taken = (0..100_000).filter(|_| u.decide(0) == Some(true)).count();
            assert!((45_000..55_000).contains(&taken), "{taps:?}: {taken}");
        }
    }

    #[test]
    fn bad_configurations_are_errors_that_say_why() {
        let bad = |cfg: BrrConfig| BrrUnit::new(&cfg).unwrap_err().to_string();
        let d = BrrConfig::default;
        assert!(bad(BrrConfig { width: 12, ..d() }).contains("at least 16 bits"));
        assert!(bad(BrrConfig {
            bits: vec![0, 1, 2],
            ..d()
        })
        .contains("16 positions"));
        assert!(bad(BrrConfig {
            bits: [0u8; 16].to_vec(),
            ..d()
        })
        .contains("repeated"));
        assert!(bad(BrrConfig { seed: 0, ..d() }).contains("non-zero"));
        assert!(BrrMode::parse("sometimes")
            .unwrap_err()
            .to_string()
            .contains("lfsr, counter, always, never, trap"));
    }

    #[test]
    fn levels_and_intervals() {
        assert_eq!(probability(0), 0.5);
        assert_eq!(interval(9), 1024);
        assert_eq!(level_of_interval(1024), Some(9));
        assert_eq!(level_of_interval(65_536), Some(15));
        assert_eq!(level_of_interval(3), None);
        assert_eq!(level_of_interval(1), None);
        assert_eq!(level_of_interval(1 << 17), None);
    }
}
