//! The integration tests of `outcrop-run`, one binary (one link) for all of them: each
//! module is one subject.

mod brr;
mod paths_workloads;
mod range;
mod rpa;
mod threads;
mod timing_validation;
mod warming;
