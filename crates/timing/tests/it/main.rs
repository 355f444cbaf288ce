//! The integration tests of `outcrop-timing`, one binary (one link) for all of them: each
//! module is one subject.

mod brr;
mod feedback;
mod invariants;
