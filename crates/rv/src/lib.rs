//! `outcrop-rv`: a RISC-V RV64GC Linux user-mode machine that runs unmodified static binaries
//! and reports every retired instruction to an observer.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod compressed;
pub mod fpu;
pub mod inst;
