//! `outcrop-jit`: Outcrop's compiling tier. Hot guest code, given as [`ir::Unit`]s of blocks,
//! is compiled to host code with Cranelift and run against a [`Host`] (the machine's memory)
//! with guest registers in a context struct (docs/machine.md, "The compiling tier").
//!
//! * [`ir`]: what a unit is (blocks of integer, memory and branch operations; anything else is
//!   left to the engine at the exact instruction).
//! * `codegen`: a unit to Cranelift IR (safe code).
//! * `exec`: the one audited `unsafe` module: code memory, the context, the TLB and jump
//!   cache compiled code reads, the helpers it calls, and the calls into it. Every guest
//!   memory access in compiled code is checked against a TLB tag (page and alignment) or goes
//!   through the host, so no guest value ever becomes a host address unchecked.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod baseline;
mod codegen;
mod exec;
pub mod ir;
mod x64;

/// Whether this host has the baseline tier (x86-64), which compiles a unit in microseconds.
pub const BASELINE: bool = cfg!(target_arch = "x86_64");

pub use exec::{CompileError, Context, Exit, Host, Jit, Stats, Stored, PAGE, RECORDS, RING, TRACE};
