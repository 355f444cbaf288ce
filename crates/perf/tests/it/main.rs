//! The integration tests of `outcrop-perf`, one binary (one link) for all of them: each
//! module is one subject.

mod damaged;
mod fixtures;
mod synthetic;
