//! [`ValueLike`]: heavy-tailed load values, a mix of small integers, pointers and noise.
//!
//! Parameters are documented in the [parent module](super); they are the constants below.

use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_pcg::Pcg64;

/// Percent shares of the five sources, as cumulative thresholds out of 100.
const SMALL_BELOW: u32 = 25;
const MEDIUM_BELOW: u32 = SMALL_BELOW + 15;
const HEAP_BELOW: u32 = MEDIUM_BELOW + 25;
const STACK_BELOW: u32 = HEAP_BELOW + 10;
// The remaining 25 % are the long tail.

/// Small integers: Zipf over `0..=255`.
const SMALL_VALUES: u64 = 256;
const SMALL_EXPONENT: f64 = 1.2;
/// Medium integers: Zipf over `0..=65535`.
const MEDIUM_VALUES: u64 = 65_536;
const MEDIUM_EXPONENT: f64 = 1.0;
/// Heap pointers: `HEAP_BASE + 8 * Zipf(HEAP_OBJECTS)`.
const HEAP_BASE: u64 = 0x4000_0000;
const HEAP_OBJECTS: u64 = 100_000;
const HEAP_EXPONENT: f64 = 1.05;
/// Stack addresses: `STACK_TOP - 8 * uniform(0..STACK_SLOTS)`.
const STACK_TOP: u64 = 0x3fff_ff00_0000;
const STACK_SLOTS: u64 = 4096;
/// Pointer and stack slot size.
const WORD_BYTES: u64 = 8;

/// Heavy-tailed load values (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct ValueLike {
    rng: Pcg64,
    small: Zipf<f64>,
    medium: Zipf<f64>,
    heap: Zipf<f64>,
}

/// A Zipf distribution over `1..=n` from constant, valid parameters.
fn zipf(n: u64, exponent: f64) -> Zipf<f64> {
    match Zipf::new(n, exponent) {
        Ok(zipf) => zipf,
        Err(_) => unreachable!("constant Zipf parameters are valid"),
    }
}

/// A Zipf sample shifted to start at 0 (rank 1 → 0).
fn rank_from_zero(distribution: &Zipf<f64>, rng: &mut Pcg64) -> u64 {
    (distribution.sample(rng) as u64).saturating_sub(1)
}

impl ValueLike {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Self {
        ValueLike {
            rng: Pcg64::seed_from_u64(seed),
            small: zipf(SMALL_VALUES, SMALL_EXPONENT),
            medium: zipf(MEDIUM_VALUES, MEDIUM_EXPONENT),
            heap: zipf(HEAP_OBJECTS, HEAP_EXPONENT),
        }
    }
}

impl Iterator for ValueLike {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let source = self.rng.gen_range(0..100u32);
        let value = if source < SMALL_BELOW {
            rank_from_zero(&self.small, &mut self.rng).min(SMALL_VALUES - 1)
        } else if source < MEDIUM_BELOW {
            rank_from_zero(&self.medium, &mut self.rng).min(MEDIUM_VALUES - 1)
        } else if source < HEAP_BELOW {
            let object = rank_from_zero(&self.heap, &mut self.rng).min(HEAP_OBJECTS - 1);
            HEAP_BASE + WORD_BYTES * object
        } else if source < STACK_BELOW {
            STACK_TOP - WORD_BYTES * self.rng.gen_range(0..STACK_SLOTS)
        } else {
            // A value whose highest set bit is bit `bits - 1`.
            let bits = self.rng.gen_range(1..=64u32);
            let top = 1u64 << (bits - 1);
            top | (self.rng.next_u64() & (top - 1))
        };
        Some(value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_roughly_as_documented() {
        let n = 200_000;
        let (mut small, mut heap, mut stack, mut huge) = (0, 0, 0, 0);
        for v in ValueLike::new(3).take(n) {
            if v < SMALL_VALUES {
                small += 1;
            }
            if (HEAP_BASE..HEAP_BASE + WORD_BYTES * HEAP_OBJECTS).contains(&v) {
                heap += 1;
            }
            if (STACK_TOP - WORD_BYTES * STACK_SLOTS..=STACK_TOP).contains(&v) {
                stack += 1;
            }
            if v >= 1 << 48 {
                huge += 1;
            }
        }
        let share = |count: usize| count as f64 / n as f64;
        // Small values also come from the medium source and the long tail.
        assert!((0.25..0.40).contains(&share(small)), "{}", share(small));
        assert!((0.23..0.28).contains(&share(heap)), "{}", share(heap));
        assert!((0.09..0.11).contains(&share(stack)), "{}", share(stack));
        // 16 of 64 bit lengths in the long tail are above 48 bits: 25 % * 16/64 ≈ 6 %.
        assert!((0.05..0.08).contains(&share(huge)), "{}", share(huge));
    }

    #[test]
    fn zero_is_the_most_common_value() {
        let mut counts = std::collections::HashMap::new();
        for v in ValueLike::new(11).take(100_000) {
            *counts.entry(v).or_insert(0u32) += 1;
        }
        let top = counts
            .iter()
            .max_by_key(|&(v, c)| (*c, std::cmp::Reverse(*v)))
            .map(|(v, _)| *v);
        assert_eq!(top, Some(0));
    }
}
