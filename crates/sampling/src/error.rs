//! Errors of the sampling library.

use thiserror::Error;

/// What can go wrong configuring a sampler or reading a samples file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A samples file is malformed at `line` (1-based).
    #[error("samples file, line {line}: {detail}")]
    Samples {
        /// 1-based line number.
        line: usize,
        /// What is wrong there.
        detail: String,
    },
    /// A site profile (`COUNT NAME` lines) is malformed at `line` (1-based).
    #[error("site profile, line {line}: {detail}")]
    SiteProfile {
        /// 1-based line number.
        line: usize,
        /// What is wrong there.
        detail: String,
    },
    /// An invalid configuration value.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
