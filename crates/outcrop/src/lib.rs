//! The `outcrop` library: profilers that run on the built-in machine, built from the
//! mechanism crates (`outcrop-rap`, `outcrop-strata`, `outcrop-timing`, `outcrop-rv`). The `outcrop` binary is a
//! command line over it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod capture;
pub mod streams;
