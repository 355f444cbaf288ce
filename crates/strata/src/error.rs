//! The one error type of `outcrop-strata`.
//!
//! Reading a whole-program-profile file never panics: every problem is one of these, and each
//! says where it is (the byte offset of the section in the file, and the position inside the
//! section's decompressed payload where that matters).

use std::io;

/// Everything that can go wrong while writing or reading a whole-program profile.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying reader or writer failed.
    #[error("I/O error: {source}")]
    Io {
        /// The error reported by the reader or writer.
        #[from]
        source: io::Error,
    },

    /// The input does not start with the magic `OUTCROPW`.
    #[error(
        "byte offset 0: not an Outcrop whole-program profile (bad magic; expected \"OUTCROPW\")"
    )]
    BadMagic,

    /// The header names a format version this build cannot read.
    #[error(
        "header at byte offset 8: unsupported format version {version} (this build reads versions {} to {})",
        crate::format::OLDEST_VERSION,
        crate::format::FORMAT_VERSION
    )]
    UnsupportedVersion {
        /// The version found in the file.
        version: u16,
    },

    /// The file ends before a complete header, section header or section payload, or before
    /// the end section.
    #[error("byte offset {offset}: file truncated: {what}")]
    Truncated {
        /// Byte offset where more data was needed.
        offset: u64,
        /// What was being read.
        what: String,
    },

    /// A section's stored bytes do not match its CRC-32.
    #[error("section {tag} at byte offset {offset}: checksum mismatch (stored {stored:08x}, computed {computed:08x})")]
    Checksum {
        /// The section's tag.
        tag: String,
        /// Byte offset of the section header.
        offset: u64,
        /// The checksum in the file.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },

    /// A section is malformed: bad tag, bad compressed data, a length, id or count out of range.
    #[error("section {tag} at byte offset {offset}: {detail}")]
    Corrupt {
        /// The section's tag (or `?` when the tag itself is bad).
        tag: String,
        /// Byte offset of the section header.
        offset: u64,
        /// What is wrong, with the position inside the payload where it applies.
        detail: String,
    },

    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
