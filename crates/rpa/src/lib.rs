//! `outcrop-rpa`: the Relational Profiling Architecture (the paper in
//! `../shared/papers/003_*`): a query language that selects and filters per-instruction
//! records, an assembler to the profile control table and 64-bit query instructions, and the
//! query engine that executes them.
//!
//! * [`lang`]: the assembly language of §3.1 (Figure 2 parses verbatim), with diagnostics that
//!   name line and column, show a caret and suggest a fix.
//! * [`names`]: instruction classes (Table 1), events and record items (Table 2).
//! * [`isa`]: the profile control table and the 64-bit query instruction format (§3.4).
//! * [`asm`]: the assembler from queries to PCT entries and query instructions.
//! * [`engine`]: the query engine executing encoded instructions on records.
//! * [`hw`]: the hardware's resources in time: profile networks and buffers, the barrel
//!   engine's slots, the queues' modelled service threads (§4, §6).
//! * [`prefetch`]: Figure 2b's prefetching service closed into the caches: stride and
//!   correlation predictors over L2-miss records.
//! * [`queue`]: message queues in shared memory with the paper's ready-word and read-status
//!   protocol (lock-free, one producer and one consumer).
//! * [`record`]: classes and record words from the retire stream and its timing stamps.
//! * [`services`]: the paper's service threads (edges, CPI, the GC store barrier and a
//!   collector, a log) and the exact references each is checked against.
//! * [`stats`]: every record accounted for (selected, filtered, sent, dropped).
//! * [`tags`]: profile tags per instruction.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod asm;
pub mod engine;
mod error;
pub mod hw;
pub mod isa;
pub mod lang;
pub mod names;
pub mod observe;
pub mod prefetch;
pub mod queue;
pub mod record;
pub mod services;
pub mod stats;
pub mod tags;

pub use asm::{assemble, listing, Assembled};
pub use engine::Engine;
pub use error::Error;
pub use lang::{parse, render, Diagnostic, Program};
