//! `outcrop-timing`: a timing model for the Outcrop machine's retire stream.
//!
//! * [`Config`]: presets (`default`: the branch-on-random paper's 4-wide out-of-order machine;
//!   `inorder`: a scalar in-order core) and TOML files that override them.
//! * [`cache`]: set-associative LRU caches and TLBs; [`predictor`]: bimodal, gshare and
//!   tournament direction predictors, a BTB and a return-address stack.
//! * [`Model`]: per retired instruction, fetch/dispatch/issue/complete/retire cycles, events
//!   (cache/TLB misses, mispredictions) and retire-rate fields ([`Stamp`]); run [`Totals`] with
//!   a CPI stack.
//! * [`Timed`]: the model as a machine observer, feeding stamps to an inner observer.
//! * [`feedback`]: mechanisms that hold instructions at dispatch or ask for cache fills.
//!
//! docs/timing.md describes the model, its sources and its known errors.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod cache;
pub mod config;
pub mod feedback;
mod model;
pub mod predictor;
mod timed;

pub use config::{Config, ConfigError};
pub use feedback::{Feedback, Fills, NoFeedback};
pub use model::{CpiStack, Events, Model, Stamp, Totals};
pub use outcrop_events::record::Observer;
pub use timed::{Timed, Warming};
