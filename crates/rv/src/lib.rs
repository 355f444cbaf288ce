//! `outcrop-rv`: a RISC-V RV64GC Linux user-mode machine that runs unmodified static binaries
//! and reports every retired instruction to an observer.
//!
//! * [`inst`]: the one opcode table (decode, execute dispatch, disassembly); [`compressed`]
//!   expands the C extension; [`fpu`] is IEEE 754 arithmetic with RISC-V F/D semantics.
//! * [`memory`]: sparse paged guest memory with permissions; [`elf`] loads static programs
//!   and builds the initial stack; [`kernel`] emulates Linux system calls; [`sandbox`] resolves
//!   guest paths beneath granted directory handles.
//! * [`symbols`]: function names for code addresses from the ELF symbol table (lookups, range
//!   labels for reports, function boundaries).
//! * [`Machine::run`] interprets and reports to an [`Observer`] (monomorphized: `()` costs
//!   nothing): pre-decoded basic blocks of specialised micro-ops for observers that read no
//!   retire records, a single-step interpreter over pre-decoded pages for those that do and as
//!   the blocks' oracle ([`Engine`]); [`differential`] runs both and compares them.
//!
//! # Design constraints
//! * No `unsafe`. Guest faults and bad input are values ([`Outcome::Fault`], [`Error`]), never
//!   host panics.
//! * The guest sees only host paths granted to the [`kernel::Sandbox`] and the stdio streams
//!   it was given, resolved race-free beneath the grants.
//! * Every guest-controlled size is checked before the host allocates or loops on it; the host
//!   memory a guest can cause is bounded by the memory limit (docs/machine.md, "Security
//!   model": about 2.5 × the limit).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod compressed;
pub mod demangle;
pub mod differential;
pub mod elf;
mod error;
pub mod fpu;
pub mod inst;
pub mod isa;
pub mod kernel;
mod machine;
pub mod memory;
pub mod sandbox;
pub mod sections;
pub mod symbols;
pub mod vector;

pub use error::Error;
pub use machine::{Engine, Fault, FaultKind, Machine, Outcome, ThreadWait};
/// The retire-record vocabulary the machine emits (from `outcrop-events`).
pub use outcrop_events::record::{
    BranchKind, ClassCounter, Control, Observer, RegUse, Retire, Stamp, Unit,
};
