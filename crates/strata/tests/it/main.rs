//! The integration tests of `outcrop-strata`, one binary (one link) for all of them: each
//! module is one subject.

mod corruption;
mod lossless;
