//! Range Adaptive Profiling (RAP): a tree of range counters that splits hot ranges and merges
//! cold ones, summarizing any stream of `u64` events (PCs, load values, addresses) with a hard
//! error bound and bounded memory.
//!
//! This follows Mysore et al., *Profiling over Adaptive Ranges* (CGO 2006): §2 for the tree
//! and its update/split/merge operations, §3.1 for the branching factor and exponentially
//! spaced merge batches, §3.3–3.4 for the pipelined hardware engine ([`HardwareModel`]) and
//! §4.1 for hot ranges. `docs/rap.md` maps each rule to the paper and lists where we differ.
//!
//! # Example
//!
//! ```
//! use outcrop_rap::{Config, RapTree};
//!
//! let config = Config::builder().bits(32).eps(0.01).build()?;
//! let mut tree = RapTree::new(config);
//! for i in 0..100_000u64 {
//!     // 60% of events hit one small loop, the rest are spread out
//!     let pc = if i % 5 < 3 { 0x1000 + (i % 4) * 4 } else { (i * 2_654_435_761) % (1 << 32) };
//!     tree.add(pc)?;
//! }
//! let hot = tree.hot_ranges(0.10)?;
//! assert!(hot.iter().any(|h| h.lo <= 0x1000 && 0x100c <= h.hi && h.share >= 0.59));
//! // Any range gets a guaranteed interval; node-aligned ones are within ε·n.
//! let e = tree.estimate(0x1000, 0x100f)?;
//! assert!(e.lower <= 60_000 && 60_000 <= e.upper);
//! # Ok::<(), outcrop_rap::Error>(())
//! ```
//!
//! # Guarantees
//! * Conservation: node counts sum to `n`.
//! * For a node-aligned range (any node of the aligned `b`-ary subdivision, present or not),
//!   `lower ≤ true ≤ lower + ε·n`; for any `[lo, hi]`, `lower ≤ true ≤ upper`.
//! * Every value whose true share is at least `fraction + ε` lies in a hot range.
//! * The node count never exceeds [`RapTree::node_bound`] (see [`bound`]).
//!
//! # Design constraints
//! * No I/O: the tree takes values and gives back plain data; files, threads and terminals
//!   belong to the caller.
//! * No allocation per event: nodes live in one arena, indexed by `u32`.
//! * Deterministic: the same events in the same order give a byte-identical tree.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod bound;
mod config;
mod counter;
mod dump;
mod error;
mod exact;
mod hardware;
pub mod observe;
mod query;
mod serial;
mod tree;

pub use config::{Config, ConfigBuilder, SplitPolicy, MIN_EPS};
pub use counter::{table_bytes as exact_table_bytes, RapCounter};
pub use error::Error;
pub use exact::{accuracy, AccuracyReport, ExactCounts, ExactRanges, HotRangeAccuracy};
pub use hardware::{HardwareModel, HardwareReport};
pub use query::{Estimate, HotRange, NodeSummary};
pub use serial::{ConfigJson, NodeJson, TreeJson, FORMAT_NAME};
pub use tree::{MergeRecord, RapTree, Stats, COMBINE_WINDOW};
