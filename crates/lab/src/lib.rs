//! `outcrop-lab`: the studies and benchmarks behind docs/studies and docs/BENCHMARKS.md, each
//! declared over [`outcrop_studies`]: which jobs (workloads × configurations), what one job
//! does, and the tables and figures its typed records make. `xtask` only turns its arguments
//! into these configurations and hands the output to the terminal.
//!
//! * The papers' studies: [`study_rap`], [`study_paths`], [`study_strata`], [`study_rpa`],
//!   [`study_brr`] — each a [`outcrop_studies::Study`] (jobs and one job's run) and a
//!   `tables` step from its records to the Markdown and SVG committed under docs/studies.
//! * The benchmarks: [`bench_exec`] (the machine against qemu), [`bench_observed`],
//!   [`bench_threads`], [`bench_layers`], [`bench_timing`], [`cachegrind`] (the timing model's
//!   misses against valgrind), [`bench_wpp`] (capture against zstd and xz), [`bench_rap`]
//!   (RAP against exact hash maps), [`bench_rpa`], [`bench_compose`], [`bench_profile`],
//!   [`bench_hostile`], [`bench_studies`]; [`bench`] holds what they share.
//! * [`real_programs`]: Lua, SQLite and zstd built for riscv64 from the C sources vendored in
//!   crates, the real programs of the tables' rows.
//! * [`sweep`]: one call that runs a study locally, as one Slurm array task or as an array.
//!
//! # Design constraints
//! Tables go to the `out` writer each entry point takes and progress to its `log` writer;
//! the library opens no terminal. It does run processes (the release `outcrop`, qemu,
//! valgrind, compilers) and keeps its records and builds under `target/`: it is the
//! repository's laboratory, not a general library. Allocation counts (`bench_rap`) need the
//! binary to install [`COUNTING`] as its global allocator.
#![forbid(unsafe_code)]

/// An [`Error::Msg`] from a format string.
#[macro_export]
macro_rules! err {
    ($($a:tt)*) => { $crate::Error::Msg(format!($($a)*)) };
}

/// Returns an [`Error::Msg`] from a format string.
#[macro_export]
macro_rules! bail {
    ($($a:tt)*) => { return Err($crate::err!($($a)*)) };
}

/// Returns an [`Error::Msg`] unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($c:expr, $($a:tt)*) => { if !$c { $crate::bail!($($a)*); } };
}

/// A line of a table or report to the `out` writer (`?` on failure).
#[macro_export]
macro_rules! say {
    ($o:expr) => {{
        writeln!($o)?
    }};
    ($o:expr, $($a:tt)*) => {{
        writeln!($o, $($a)*)?
    }};
}

/// A line of progress to the `log` writer, best effort (a closed log stops nothing).
#[macro_export]
macro_rules! note {
    ($l:expr, $($a:tt)*) => {{
        let _ = writeln!($l, $($a)*);
    }};
}

pub mod bench;
pub mod bench_compose;
pub mod bench_exec;
pub mod bench_hostile;
pub mod bench_layers;
pub mod bench_observed;
pub mod bench_profile;
pub mod bench_rap;
pub mod bench_rpa;
pub mod bench_studies;
pub mod bench_threads;
pub mod bench_timing;
pub mod bench_wpp;
pub mod cachegrind;
pub mod paths_bias;
pub mod real_programs;
pub mod study_brr;
pub mod study_paths;
pub mod study_rap;
pub mod study_rpa;
pub mod study_strata;
pub mod sweep;

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// The allocator whose counts `bench-rap` reads (the bytes a structure holds): a binary that
/// runs it installs this as its `#[global_allocator]`, or the counts stay zero.
pub static COUNTING: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// What can go wrong in a study or benchmark; each names what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A sweep, manifest or record of `outcrop-studies`.
    #[error(transparent)]
    Study(#[from] outcrop_studies::Error),
    /// A run of the machine in this process.
    #[error(transparent)]
    Run(#[from] outcrop_run::Error),
    /// Reading or writing a file, or starting a process.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A record or output that is not the JSON expected.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Anything else, with its context (`what: why`).
    #[error("{0}")]
    Msg(String),
}

impl From<std::fmt::Error> for Error {
    fn from(_: std::fmt::Error) -> Error {
        Error::Msg("formatting a table failed".into())
    }
}

/// The mechanisms' own errors, kept as their messages (each names what and where).
macro_rules! from_message {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Msg(e.to_string())
            }
        }
    )*};
}
from_message!(
    outcrop_rap::Error,
    outcrop_paths::Error,
    outcrop_sampling::Error,
    outcrop_instrument::Error,
    outcrop_events::Error,
    outcrop_strata::Error,
    outcrop_rpa::Error,
    outcrop_timing::ConfigError
);

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Context for an error: `what` before the error's own message.
pub trait Context<T> {
    /// The error, or `None`, as an [`Error::Msg`] led by `what`.
    fn context(self, what: impl Display) -> Result<T>;
    /// [`Context::context`] with the message made only on failure.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| Error::Msg(format!("{what}: {e}")))
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| Error::Msg(format!("{}: {e}", what())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.ok_or_else(|| Error::Msg(what.to_string()))
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.ok_or_else(|| Error::Msg(what().to_string()))
    }
}

/// The repository's root (this crate's sources are in `crates/lab`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository root and the release `outcrop` binary (which must be built).
pub fn release_outcrop() -> Result<(PathBuf, PathBuf)> {
    let root = root();
    let outcrop = root.join("target/release/outcrop");
    ensure!(
        outcrop.exists(),
        "build first: cargo build --release -p outcrop"
    );
    Ok((root, outcrop))
}
