//! `outcrop-cli`: the command line's plumbing, kept out of the binary so that the binary only
//! turns arguments into configurations and results into files (ripgrep's `grep-cli` plays the
//! same part).
//!
//! * [`files`]: outputs written atomically (a temporary file renamed onto the name), never
//!   over one of the command's inputs, through symlinks but not into directories; the
//!   standard streams, devices and FIFOs written directly; report directories staged and
//!   swapped in whole; partial files removed on SIGINT, SIGTERM and SIGHUP; the memory check
//!   before a large read.
//! * [`outputs`] and [`console`]: where one run's results go (the console report, the
//!   capture, the samples file, `.fdata`, the report directory) and what it says on stderr.
//! * [`input`]: value streams for `rap` and `trace`: a file or stdin in a format given or
//!   detected, or a generated demo stream, read in batches with a progress bar on a terminal.
//!
//! # Design constraints
//! This crate does file and terminal I/O: that is its job. It decides nothing about what is
//! measured or how it is reported (that is `run`'s and `report`'s); every error names the file
//! and the step that failed, with the cause as its source.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod annotate;
pub mod console;
pub mod files;
pub mod input;
pub mod outputs;

/// What can go wrong writing an output or opening an input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A step on a file failed: `what` names the step and the file, `error` is why.
    #[error("{what}")]
    Context {
        /// The step and the file (`cannot create a file in DIR for OUT`).
        what: String,
        /// The cause.
        #[source]
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An output or input refused before anything was written or read: why, naming it.
    #[error("{0}")]
    Refused(String),
    /// A file Outcrop reads with a bound could not be read, or the run failed.
    #[error(transparent)]
    Run(#[from] outcrop_run::Error),
    /// The workload manifest of a suite.
    #[error(transparent)]
    Manifest(#[from] outcrop_studies::Error),
    /// The run's reports could not be made.
    #[error(transparent)]
    Report(#[from] outcrop_rap::Error),
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The step a failure happened in, as an [`Error::Context`] around the cause.
pub(crate) trait Doing<T> {
    /// `Err(e)` as the step `what` failed because of `e`.
    fn doing(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Doing<T> for std::result::Result<T, E> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::Context {
            what: what(),
            error: Box::new(e),
        })
    }
}

/// Returns an [`Error::Refused`] from a format string.
macro_rules! refuse {
    ($($a:tt)*) => { return Err($crate::Error::Refused(format!($($a)*)).into()) };
}
pub(crate) use refuse;
