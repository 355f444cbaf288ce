//! The integration tests of `outcrop-paths`, one binary (one link) for all of them: each
//! module is one subject.

mod fuzz_regressions;
mod paper;
mod properties;
mod x86;
