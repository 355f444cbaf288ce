//! Errors of the path-profiling library.

use thiserror::Error;

/// What can go wrong reading a program or a samples file.
#[derive(Debug, Error)]
pub enum Error {
    /// The ELF file could not be read.
    #[error("ELF: {0}")]
    Elf(String),
    /// A samples file or a branch-record unit's configuration is bad.
    #[error(transparent)]
    Sampling(#[from] outcrop_sampling::Error),
    /// A block trace is malformed.
    #[error("block trace at {at}: {detail}")]
    Trace {
        /// Where: a line number or a byte offset, spelled out.
        at: String,
        /// What is wrong there.
        detail: String,
    },
    /// An invalid configuration value.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
