//! Errors of the readers: each names where in the input it happened.

/// A reader's error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes at `offset` are not what the format allows (a damaged or truncated file).
    #[error("perf.data byte offset {offset:#x}: {what}")]
    Damaged {
        /// Byte offset in the file.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// A well-formed file that uses something this reader does not read.
    #[error("perf.data byte offset {offset:#x}: {what} is not supported")]
    Unsupported {
        /// Byte offset in the file.
        offset: u64,
        /// What it uses.
        what: String,
    },
    /// Reading the input failed.
    #[error("perf.data byte offset {offset:#x}: {error}")]
    Io {
        /// Byte offset in the file.
        offset: u64,
        /// The I/O error (in the message, not a source: a chain would print it twice).
        error: std::io::Error,
    },
    /// A line of `perf script` text is not `IP FROM/TO/… …`.
    #[error("perf script text line {line}: {what}")]
    Text {
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        what: String,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn damaged(offset: u64, what: impl Into<String>) -> Error {
    Error::Damaged {
        offset,
        what: what.into(),
    }
}
