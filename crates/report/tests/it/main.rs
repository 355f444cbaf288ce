//! The integration tests of `outcrop-report`, one binary (one link) for all of them: each
//! module is one subject.

mod exports;
mod one_way_up;
