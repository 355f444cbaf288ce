//! Errors of a composed run.

use std::path::PathBuf;

/// What can go wrong setting up or finishing a run. Each variant names what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read, or is not one Outcrop reads (a device, too large).
    #[error("{detail}")]
    Read {
        /// What the file was to be (`program`, `timing config`, ...).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// The whole message, naming `what` and `path`.
        detail: String,
    },
    /// A sandbox grant names a path that cannot be opened. (The reason is part of the
    /// message, not a `source()`: a chain printer would print it twice.)
    #[error("{flag} {}: {reason}", path.display())]
    Grant {
        /// `--allow` or `--allow-rw`.
        flag: &'static str,
        /// The path as given.
        path: PathBuf,
        /// Why it cannot be granted.
        reason: std::io::Error,
    },
    /// The program could not be loaded (the reason is part of the message, as above).
    #[error("{}: {reason}", path.display())]
    Program {
        /// The program's path.
        path: PathBuf,
        /// Why.
        reason: outcrop_rv::Error,
    },
    /// An invalid run configuration (a profiler that needs timing without it, bad values).
    #[error("{0}")]
    Config(String),
    /// An input of a comparison (`outcrop diff`) that cannot be read as one.
    #[error("{}: {detail}", path.display())]
    Input {
        /// The input.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A timing configuration is invalid.
    #[error("timing config: {0}")]
    Timing(#[from] outcrop_timing::ConfigError),
    /// A RAP tree failed (its configuration or an update).
    #[error("RAP: {0}")]
    Rap(#[from] outcrop_rap::Error),
    /// The whole-program capture failed (its configuration, or writing the file).
    #[error("whole-program capture: {0}")]
    Wpp(#[from] outcrop_strata::Error),
    /// The RPA's queries, services or hardware model cannot run as configured.
    #[error("{0}")]
    Rpa(#[from] outcrop_rpa::Error),
    /// A perf.data file or `perf script` text could not be imported (the reader's message
    /// names the byte offset or line).
    // (the reader's error is part of this message, not its source: a chain would print it
    // twice)
    #[error("{}: {detail}", path.display())]
    Import {
        /// The input's path.
        path: PathBuf,
        /// What the reader found.
        detail: outcrop_perf::Error,
    },
    /// A branch-record unit's configuration is invalid.
    #[error("branch records: {0}")]
    Sampling(#[from] outcrop_sampling::Error),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
