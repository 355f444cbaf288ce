//! The integration tests of `outcrop-events`, one binary (one link) for all of them: each
//! module is one subject.

mod fixtures;
mod readers;
mod synth;
mod trace_corruption;
mod trace_roundtrip;
