//! [`Sampler`]: the decision an instrumentation site makes each time it runs — take a sample
//! or not — for native Rust code, with the schemes the branch-on-random paper compares and
//! the ones its users reach for today:
//!
//! * [`CounterSampler`]: Arnold–Ryder's software counter (the paper's Figure 1): every
//!   `interval`-th decision samples. Cheapest, and it resonates with periodic code: a loop
//!   that runs two sites alternately, sampled every 1024th time, samples only one of them.
//! * [`GeometricSampler`]: a counter whose reset is drawn from a geometric distribution (the
//!   skip counts of jemalloc's, tcmalloc's and Go's heap profilers): each decision samples
//!   independently with probability `1/interval`, at a counter's cost on the common path
//!   (one decrement and compare; the draw happens only when a sample is taken).
//! * [`LfsrSampler`]: branch-on-random in software: the same decision [`crate::BrrUnit`]
//!   makes (AND of LFSR bits), for comparing with the hardware; it shifts a register at every
//!   decision.
//! * [`BurstSampler`]: LLVM's sampled instrumentation (periodic bursts): `burst`
//!   consecutive decisions sample, once every `period`.
//!
//! Samplers are plain values: keep one per thread (a `thread_local!` or a field), not shared.
//! Every sequence depends only on the seed.
//!
//! ```
//! use outcrop_sampling::{sample, sampler::{GeometricSampler, Sampler}};
//!
//! let mut s = GeometricSampler::new(1024, 7).unwrap();
//! let mut samples = 0u64;
//! for _ in 0..1_000_000 {
//!     sample!(s, { samples += 1 });
//! }
//! assert!((800..1200).contains(&samples));
//! ```

use crate::brr::{BrrConfig, BrrUnit};
use crate::error::{Error, Result};
use crate::rng::SplitMix64;

/// Decides, at each execution of a site, whether to take a sample.
pub trait Sampler {
    /// Whether this execution samples.
    fn sample(&mut self) -> bool;
    /// The long-run fraction of executions that sample.
    fn rate(&self) -> f64;
}

/// Runs `$body` when `$sampler` (a [`Sampler`] place) decides to sample; the body is kept
/// out of the common path.
#[macro_export]
macro_rules! sample {
    ($sampler:expr, $body:block) => {
        if $crate::sampler::Sampler::sample(&mut $sampler) {
            $crate::sampler::cold();
            $body
        }
    };
}

/// Marks the sampled path cold (used by [`sample!`]).
#[cold]
#[inline(never)]
pub fn cold() {}

fn check_interval(interval: u64) -> Result<()> {
    if interval == 0 {
        return Err(Error::Config(
            "a sampling interval must be at least 1".into(),
        ));
    }
    Ok(())
}

/// Every `interval`-th decision samples (the first at decision `interval`).
#[derive(Clone, Debug)]
pub struct CounterSampler {
    countdown: u64,
    reset: u64,
}

impl CounterSampler {
    /// A counter sampling one decision in `interval`.
    pub fn new(interval: u64) -> Result<CounterSampler> {
        check_interval(interval)?;
        Ok(CounterSampler {
            countdown: interval - 1,
            reset: interval - 1,
        })
    }
}

impl Sampler for CounterSampler {
    #[inline(always)]
    fn sample(&mut self) -> bool {
        if self.countdown == 0 {
            self.countdown = self.reset;
            true
        } else {
            self.countdown -= 1;
            false
        }
    }

    fn rate(&self) -> f64 {
        1.0 / (self.reset + 1) as f64
    }
}

/// Each decision samples independently with probability `1/interval`: a countdown whose
/// reset is a geometric skip count.
#[derive(Clone, Debug)]
pub struct GeometricSampler {
    countdown: u64,
    log_q: f64,
    interval: u64,
    rng: SplitMix64,
}

impl GeometricSampler {
    /// A sampler of mean interval `interval`, seeded with `seed`.
    pub fn new(interval: u64, seed: u64) -> Result<GeometricSampler> {
        check_interval(interval)?;
        let mut s = GeometricSampler {
            countdown: 0,
            log_q: (1.0 - 1.0 / interval as f64).ln(),
            interval,
            rng: SplitMix64::new(seed),
        };
        s.countdown = s.skip();
        Ok(s)
    }

    /// Decisions to pass before the next sample (geometric on 0, 1, 2, …).
    #[cold]
    fn skip(&mut self) -> u64 {
        if self.interval == 1 {
            return 0;
        }
        let u = 1.0 - self.rng.next_f64(); // in (0, 1]
        let k = (u.ln() / self.log_q).floor();
        if k >= u64::MAX as f64 {
            u64::MAX
        } else {
            k as u64
        }
    }
}

impl Sampler for GeometricSampler {
    #[inline(always)]
    fn sample(&mut self) -> bool {
        if self.countdown == 0 {
            self.countdown = self.skip();
            true
        } else {
            self.countdown -= 1;
            false
        }
    }

    fn rate(&self) -> f64 {
        1.0 / self.interval as f64
    }
}

/// Branch-on-random's decision in software: the decisions the [`BrrUnit`] of `cfg` makes at
/// one level (same register, taps, bits, seed and leap: the same sequence, tested), computed
/// with the feedback as an XOR of at most four shifted bits instead of a population count.
#[derive(Clone, Debug)]
pub struct LfsrSampler {
    state: u64,
    mask: u64,
    /// Shift of each tap bit down to bit 0 (up to 4 taps; more use `taps_mask`).
    shifts: [u32; 4],
    ntaps: usize,
    taps_mask: u64,
    top: u32,
    leap: u8,
    level: u8,
}

impl LfsrSampler {
    /// A sampler of interval `interval` (a power of two, 2 to 65,536) deciding as the
    /// branch-on-random unit `cfg` (its LFSR mode) would.
    pub fn new(interval: u64, cfg: &BrrConfig) -> Result<LfsrSampler> {
        let level = crate::brr::level_of_interval(interval).ok_or_else(|| {
            Error::Config(format!(
                "an LFSR sampler's interval is a power of two from 2 to 65536, not {interval}"
            ))
        })?;
        BrrUnit::new(cfg)?; // validates width, taps, bits, seed and leap
        let lfsr = crate::lfsr::Lfsr::new(cfg.width, &cfg.taps, cfg.seed)?;
        let mask = cfg.bits[..=usize::from(level)]
            .iter()
            .fold(0u64, |m, &b| m | 1 << b);
        let mut shifts = [0u32; 4];
        let mut ntaps = 0;
        for &k in &cfg.taps {
            if ntaps < 4 {
                shifts[ntaps] = u32::from(cfg.width - k);
            }
            ntaps += 1;
        }
        let taps_mask = cfg.taps.iter().fold(0u64, |m, &k| m | 1 << (cfg.width - k));
        Ok(LfsrSampler {
            state: lfsr.state(),
            mask,
            shifts,
            ntaps,
            taps_mask,
            top: u32::from(cfg.width) - 1,
            leap: cfg.leap,
            level,
        })
    }

    #[inline(always)]
    fn step(&mut self) {
        let s = self.state;
        let fb = match self.ntaps {
            2 => (s >> self.shifts[0]) ^ (s >> self.shifts[1]),
            4 => {
                (s >> self.shifts[0])
                    ^ (s >> self.shifts[1])
                    ^ (s >> self.shifts[2])
                    ^ (s >> self.shifts[3])
            }
            _ => u64::from((s & self.taps_mask).count_ones()),
        } & 1;
        self.state = (s >> 1) | (fb << self.top);
    }
}

impl Sampler for LfsrSampler {
    #[inline(always)]
    fn sample(&mut self) -> bool {
        let t = self.state & self.mask == self.mask;
        for _ in 0..self.leap {
            self.step();
        }
        t
    }

    fn rate(&self) -> f64 {
        crate::brr::probability(self.level)
    }
}

/// `burst` consecutive decisions sample, once every `period` decisions (LLVM's sampled
/// instrumentation).
#[derive(Clone, Debug)]
pub struct BurstSampler {
    pos: u64,
    period: u64,
    burst: u64,
}

impl BurstSampler {
    /// Bursts of `burst` sampled decisions every `period` (`1 ≤ burst ≤ period`).
    pub fn new(period: u64, burst: u64) -> Result<BurstSampler> {
        if burst == 0 || burst > period {
            return Err(Error::Config(format!(
                "a burst sampler needs 1 ≤ burst ≤ period, not burst {burst}, period {period}"
            )));
        }
        Ok(BurstSampler {
            pos: 0,
            period,
            burst,
        })
    }
}

impl Sampler for BurstSampler {
    #[inline(always)]
    fn sample(&mut self) -> bool {
        let s = self.pos < self.burst;
        self.pos += 1;
        if self.pos == self.period {
            self.pos = 0;
        }
        s
    }

    fn rate(&self) -> f64 {
        self.burst as f64 / self.period as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples per site of a loop running `sites` sites in turn, `n` decisions.
    fn per_site(s: &mut dyn Sampler, sites: usize, n: usize) -> Vec<u64> {
        let mut c = vec![0u64; sites];
        for i in 0..n {
            if s.sample() {
                c[i % sites] += 1;
            }
        }
        c
    }

    #[test]
    fn every_sampler_has_its_rate() {
        let n = 1 << 22;
        let samplers: Vec<Box<dyn Sampler>> = vec![
            Box::new(CounterSampler::new(1024).unwrap()),
            Box::new(GeometricSampler::new(1024, 3).unwrap()),
            Box::new(LfsrSampler::new(1024, &BrrConfig::default()).unwrap()),
            Box::new(BurstSampler::new(16_384, 16).unwrap()),
        ];
        for mut s in samplers {
            let total: u64 = per_site(s.as_mut(), 1, n).iter().sum();
            let want = n as f64 * s.rate();
            assert!(
                (total as f64 - want).abs() < 0.05 * want,
                "{total} vs {want}"
            );
        }
        let mut c = CounterSampler::new(3).unwrap();
        let v: Vec<bool> = (0..6).map(|_| c.sample()).collect();
        assert_eq!(v, [false, false, true, false, false, true]);
        let mut b = BurstSampler::new(4, 2).unwrap();
        let v: Vec<bool> = (0..8).map(|_| b.sample()).collect();
        assert_eq!(v, [true, true, false, false, true, true, false, false]);
        let mut g = GeometricSampler::new(1, 1).unwrap();
        assert!((0..10).all(|_| g.sample()));
    }

    #[test]
    fn counters_resonate_with_a_two_site_loop_and_random_samplers_do_not() {
        let n = 1 << 22;
        let c = per_site(&mut CounterSampler::new(1024).unwrap(), 2, n);
        assert_eq!(c[0], 0, "{c:?}: every sample on one site");
        for (name, c) in [
            (
                "geometric",
                per_site(&mut GeometricSampler::new(1024, 11).unwrap(), 2, n),
            ),
            (
                "lfsr",
                per_site(
                    &mut LfsrSampler::new(1024, &BrrConfig::default()).unwrap(),
                    2,
                    n,
                ),
            ),
            (
                "lfsr, leap 20",
                per_site(
                    &mut LfsrSampler::new(
                        1024,
                        &BrrConfig {
                            leap: 20,
                            ..BrrConfig::default()
                        },
                    )
                    .unwrap(),
                    2,
                    n,
                ),
            ),
        ] {
            let share = c[0] as f64 / (c[0] + c[1]) as f64;
            assert!((0.45..0.55).contains(&share), "{name}: {c:?}");
        }
    }

    #[test]
    fn same_seed_same_sequence_and_bad_settings_are_errors() {
        let mut a = GeometricSampler::new(100, 5).unwrap();
        let mut b = GeometricSampler::new(100, 5).unwrap();
        assert!((0..10_000).all(|_| a.sample() == b.sample()));
        assert!(CounterSampler::new(0).is_err());
        assert!(GeometricSampler::new(0, 1).is_err());
        assert!(LfsrSampler::new(1000, &BrrConfig::default()).is_err());
        assert!(BurstSampler::new(4, 5).is_err());
        assert!(BurstSampler::new(4, 0).is_err());
    }

    #[test]
    fn the_lfsr_sampler_decides_as_the_brr_unit_does() {
        for cfg in [
            BrrConfig::default(),
            BrrConfig {
                leap: 7,
                seed: 99,
                ..BrrConfig::default()
            },
            BrrConfig {
                width: 32,
                taps: vec![32, 31, 30, 10],
                ..BrrConfig::default()
            },
            BrrConfig {
                width: 32,
                taps: vec![32, 22, 16, 15, 12, 11],
                ..BrrConfig::default()
            },
        ] {
            for level in [0u8, 3, 9] {
                let mut unit = BrrUnit::new(&cfg).unwrap();
                let mut s = LfsrSampler::new(2 << level, &cfg).unwrap();
                for i in 0..50_000 {
                    assert_eq!(unit.decide(level), Some(s.sample()), "{cfg:?} {level} {i}");
                }
            }
        }
    }

    #[test]
    fn the_macro_runs_the_body_only_when_sampling() {
        let mut s = CounterSampler::new(4).unwrap();
        let mut hits = 0;
        for _ in 0..16 {
            crate::sample!(s, { hits += 1 });
        }
        assert_eq!(hits, 4);
    }
}
