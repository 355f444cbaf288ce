//! The integration tests of `outcrop-rap`, one binary (one link) for all of them: each
//! module is one subject.

mod figure1;
mod guarantees;
