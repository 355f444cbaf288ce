//! The integration tests of `outcrop-profile`, one binary (one link) for all of them: each
//! module is one subject.

#[path = "../common/mod.rs"]
mod common;
mod lines;
mod unwinding;
mod workloads;
