//! The integration tests of `outcrop-rv`, one binary (one link) for all of them: each
//! module is one subject.

#[path = "../common/mod.rs"]
mod common;
mod dirs;
mod engines;
mod fpu_golden;
mod fpu_paths;
mod isa;
mod lockstep;
mod roundtrip;
mod streams;
mod symbols;
mod syscall_sequences;
mod threads;
