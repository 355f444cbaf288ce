//! Deterministic synthetic value streams for benchmarks, tests and the CLI demo.
//!
//! Each generator is an infinite [`Iterator`] of `u64`s seeded through
//! `rand_pcg::Pcg64::seed_from_u64(seed)`: the same seed gives the same stream (on a given
//! platform; the Zipf samplers use floating-point `powf`, whose last-bit rounding may differ
//! between math libraries).
//!
//! # [`CodeLike`] (`code`): basic-block start addresses of a synthetic program
//!
//! Layout, fixed at construction:
//! - a text segment starting at `0x10000`;
//! - 400 functions, each starting on a 16-byte boundary, laid out back to back;
//! - each function has 4..=60 basic blocks (uniform), laid out contiguously; each block is
//!   2..=24 instructions (uniform) of 4 bytes, so addresses are 4-byte aligned and increase
//!   within a function;
//! - 300 loops, each in a uniformly chosen function: a body of 3..=12 blocks (clamped to the
//!   function's size) starting at a uniform block, mostly consecutive — each step skips one
//!   block (a not-taken `if`) with probability 1/4 when the function has room.
//!
//! Execution, repeated forever:
//! - with probability 0.10, a *cold call path* first: 2..=8 consecutive blocks of a uniformly
//!   chosen function;
//! - then a loop chosen by Zipf popularity (exponent s = 1.1 over the 300 loops, loop 0 the
//!   most popular) runs its body `1 + Geometric(p = 1/40)` times (mean 40 iterations).
//!
//! The stream therefore repeats heavily: a few thousand distinct addresses cover millions of
//! values, with a skewed hot set — the shape of a real block trace.
//!
//! # [`ValueLike`] (`values`): heavy-tailed load values
//!
//! Each value is drawn from one of five sources:
//!
//! | share | source | values |
//! |---|---|---|
//! | 25 % | small integers | Zipf(s = 1.2) over `0..=255`, 0 the most common |
//! | 15 % | medium integers | Zipf(s = 1.0) over `0..=65535`, 0 the most common |
//! | 25 % | heap pointers | `0x4000_0000 + 8 * k`, k Zipf(s = 1.05) over 100 000 objects |
//! | 10 % | stack addresses | `0x3fff_ff00_0000 - 8 * k`, k uniform in `0..4096` |
//! | 25 % | long tail | a bit length b uniform in `1..=64`, then a uniform value in `[2^(b-1), 2^b)` |
//!
//! # [`Uniform`] (`uniform`): uniform random `u64`s
//!
//! `Pcg64::next_u64`, no structure at all: the worst case for any summary.

mod code_like;
mod value_like;

use std::fmt;
use std::str::FromStr;

use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

pub use code_like::CodeLike;
pub use value_like::ValueLike;

use crate::Error;

/// Which synthetic stream to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    /// Basic-block addresses of a synthetic program ([`CodeLike`]); spelled `code`.
    CodeLike,
    /// Heavy-tailed load values ([`ValueLike`]); spelled `values`.
    ValueLike,
    /// Uniform random `u64`s ([`Uniform`]); spelled `uniform`.
    Uniform,
}

impl StreamKind {
    /// Every kind, in the order they are documented.
    pub const ALL: [StreamKind; 3] = [
        StreamKind::CodeLike,
        StreamKind::ValueLike,
        StreamKind::Uniform,
    ];

    /// The name used on the command line: `code`, `values` or `uniform`.
    pub fn name(self) -> &'static str {
        match self {
            StreamKind::CodeLike => "code",
            StreamKind::ValueLike => "values",
            StreamKind::Uniform => "uniform",
        }
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StreamKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StreamKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| Error::UnknownStreamKind {
                name: s.to_string(),
            })
    }
}

/// An infinite, deterministic stream of the given kind.
pub fn stream(kind: StreamKind, seed: u64) -> Box<dyn Iterator<Item = u64> + Send> {
    match kind {
        StreamKind::CodeLike => Box::new(CodeLike::new(seed)),
        StreamKind::ValueLike => Box::new(ValueLike::new(seed)),
        StreamKind::Uniform => Box::new(Uniform::new(seed)),
    }
}

/// Uniform random `u64`s (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Uniform {
    rng: Pcg64,
}

impl Uniform {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Self {
        Uniform {
            rng: Pcg64::seed_from_u64(seed),
        }
    }
}

impl Iterator for Uniform {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        Some(self.rng.next_u64())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in StreamKind::ALL {
            assert_eq!(kind.to_string().parse::<StreamKind>().unwrap(), kind);
        }
        assert_eq!("code".parse::<StreamKind>().unwrap(), StreamKind::CodeLike);
        assert_eq!(
            "values".parse::<StreamKind>().unwrap(),
            StreamKind::ValueLike
        );
        let err = "Code".parse::<StreamKind>().unwrap_err();
        assert!(err.to_string().contains("\"Code\""), "{err}");
    }

    #[test]
    fn uniform_matches_pcg64() {
        let mut rng = Pcg64::seed_from_u64(9);
        let expected: Vec<u64> = (0..10).map(|_| rng.next_u64()).collect();
        assert_eq!(Uniform::new(9).take(10).collect::<Vec<_>>(), expected);
    }
}
