//! `outcrop-paths`: path profiles from sampled branch records (Shye et al., "Analysis of
//! Path Profiling Information Generated with Performance Monitoring Hardware"), judged
//! against the exact path profile of the same run.
//!
//! * [`Cfg`]: functions, blocks, edges, back edges and loops of an RV64GC ELF (§3.2–3.3).
//! * [`Regions`]: single-entry acyclic regions by the paper's four rules, Ball–Larus path
//!   numbering, P(e) indexes (§3.3).
//! * [`LbrUnit`]: the branch-record unit that samples the last N branches (§3.1) and
//!   [`Samples`], its aggregated output and file format, re-exported from `outcrop-sampling`.
//! * [`Reconstructor`]: partial paths from samples, extended and split (§3.2).
//! * [`estimate()`]: matching and weighting (§3.4), equal split or edge-frequency weights.
//! * [`ExactCounter`]: the exact path profile of a block stream, over the same regions.
//! * [`accuracy()`]: Wall's weight matching and overlap (§4.5).
//! * [`fdata`]: the sampled edge profile in LLVM BOLT's `.fdata` format.
//!
//! docs/paths.md maps the code to the paper and lists where we differ.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod accuracy;
pub mod analysis;
pub mod cfg;
mod error;
pub mod estimate;
pub mod exact;
pub mod exports;
pub mod fdata;
pub mod partial;
pub mod regions;

pub use accuracy::{accuracy, Accuracy, HOT};
pub use analysis::{analyze, exact_profile, Analysis};
pub use cfg::{Block, BlockId, Cfg, Edge, EdgeKind, Func, Isa, Term};
pub use error::{Error, Result};
pub use estimate::{estimate, Estimate, IndexCache, Weighting};
pub use exact::{ExactCounter, ExactStats};
/// The branch-record unit and its samples file live in `outcrop-sampling`.
pub use outcrop_sampling::{
    BranchRecorder, Filter, LbrConfig, LbrUnit, Meta, PeriodUnit, Record, Samples,
};
pub use partial::{EdgeProfile, Fragment, Options, PartialStats, Reconstruction, Reconstructor};
pub use regions::{PathIndex, PathKey, Region, RegionId, Regions};
