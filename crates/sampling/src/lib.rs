//! `outcrop-sampling`: the random sources and samplers Outcrop's mechanisms share.
//!
//! * [`SplitMix64`]: the one pseudo-random generator (seeded, reproducible forever).
//! * [`Lfsr`]: linear feedback shift registers, the branch-on-random paper's random bits, and
//!   [`BrrUnit`], branch-on-random's decision unit built on one.
//! * [`PeriodSampler`], [`GeometricSampler`]: when to take a sample.
//! * [`sampler::Sampler`] and [`sample!`]: per-site sampling decisions for native code
//!   (counter, geometric skip count, software LFSR, bursts).
//! * [`LbrUnit`]: the branch-record unit that samples the last N branches (path-profiling
//!   paper §3.1), [`BranchRecorder`] to attach units to a retire stream, and [`Samples`], their
//!   aggregated output and its file format (docs/formats.md).
//!
//! # Design constraints
//! No threads, no files, no machine: samplers take events and return decisions; the samples
//! file is parsed from and written to strings. Every sequence depends only on its seed.
//!
//! # Example
//!
//! ```
//! use outcrop_sampling::{LbrConfig, LbrUnit};
//!
//! # fn main() -> Result<(), outcrop_sampling::Error> {
//! let mut unit = LbrUnit::new(LbrConfig { entries: 2, period: 3, ..LbrConfig::default() })?;
//! for i in 1..=9u64 {
//!     unit.branch(0x100 + i, 0x200, true); // a taken branch per instruction
//!     unit.tick(i, 0);
//! }
//! assert_eq!(unit.samples(), 3);
//! let samples = unit.into_samples("demo", 9, 0);
//! let text = samples.to_text();
//! assert_eq!(outcrop_sampling::Samples::parse(&text)?.traces.len(), 3);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod brr;
pub mod cost;
mod error;
pub mod lbr;
pub mod lfsr;
pub mod observe;
pub mod overlap;
pub mod period;
pub mod rng;
pub mod sampler;
pub mod samples;

pub use brr::{BrrConfig, BrrMode, BrrUnit};
pub use cost::CostModel;
pub use error::{Error, Result};
pub use lbr::{Filter, LbrConfig, LbrUnit, PeriodUnit, Record};
pub use lfsr::Lfsr;
pub use observe::{BranchFeed, BranchRecorder};
pub use overlap::{overlap, Overlap, SiteProfile};
pub use period::{GeometricSampler, PeriodSampler};
pub use rng::SplitMix64;
pub use samples::{Meta, SampledObject, Samples};
