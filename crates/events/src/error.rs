//! The one error type of `outcrop-events`.
//!
//! Every variant says what was being read and where: a byte offset into the input for the
//! binary formats (plus the chunk index inside trace files), a 1-based line number for text
//! input. Readers never panic on bad input; they return one of these.

use std::io;

/// Everything that can go wrong while reading or writing an event stream.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying reader or writer failed.
    #[error("I/O error: {source}")]
    Io {
        /// The error reported by the reader or writer.
        source: io::Error,
    },

    /// The input does not start with the trace magic `OUTCROPT`.
    #[error("byte offset {offset}: not an Outcrop trace file (bad magic; expected \"OUTCROPT\")")]
    BadMagic {
        /// Byte offset of the magic (always 0 for a whole file).
        offset: u64,
    },

    /// The trace header names a format version this build cannot read.
    #[error(
        "trace header at byte offset {offset}: unsupported format version {version} \
         (this build reads version {supported})",
        supported = crate::trace::FORMAT_VERSION
    )]
    UnsupportedVersion {
        /// The version found in the file.
        version: u16,
        /// Byte offset of the version field.
        offset: u64,
    },

    /// The trace header names a record kind this build cannot read.
    #[error(
        "trace header at byte offset {offset}: {}",
        crate::trace::describe_unsupported_kind(*kind)
    )]
    UnsupportedRecordKind {
        /// The record-kind code found in the file.
        kind: u16,
        /// Byte offset of the record-kind field.
        offset: u64,
    },

    /// The trace header sets flag bits this build does not know.
    #[error(
        "trace header at byte offset {offset}: unknown flags {flags:#010x} (this build knows none)"
    )]
    UnsupportedFlags {
        /// The flags word found in the file.
        flags: u32,
        /// Byte offset of the flags field.
        offset: u64,
    },

    /// The input ended in the middle of something.
    #[error("input truncated: expected {what} at byte offset {offset}")]
    Truncated {
        /// Byte offset where the incomplete item starts.
        offset: u64,
        /// What was being read, e.g. `"trace chunk header or footer"`.
        what: &'static str,
    },

    /// A trace chunk's decompressed payload does not match its CRC-32.
    #[error("trace chunk {chunk} at byte offset {offset}: checksum mismatch")]
    ChecksumMismatch {
        /// Index of the chunk (0-based).
        chunk: u64,
        /// Byte offset of the chunk header.
        offset: u64,
    },

    /// A fixed-size header (file header, chunk header or footer) does not match its CRC-32.
    #[error("{what}{} at byte offset {offset}: header checksum mismatch", chunk_note(*chunk))]
    HeaderChecksumMismatch {
        /// Which header: `"trace file header"`, `"trace chunk header"` or `"trace footer"`.
        what: &'static str,
        /// Index of the chunk, for a chunk header.
        chunk: Option<u64>,
        /// Byte offset of the header.
        offset: u64,
    },

    /// A length or count field exceeds the format's limit (checked before allocating).
    #[error("trace chunk {chunk} at byte offset {offset}: {what} is {value}, above the limit of {limit}")]
    LimitExceeded {
        /// Index of the chunk (0-based).
        chunk: u64,
        /// Byte offset of the chunk header.
        offset: u64,
        /// The field, e.g. `"compressed length"`.
        what: &'static str,
        /// The value found.
        value: u64,
        /// The largest value allowed.
        limit: u64,
    },

    /// The input is structurally invalid in a way the other variants do not cover.
    #[error("corrupt input at byte offset {offset}: {reason}")]
    Corrupt {
        /// Byte offset of the offending item.
        offset: u64,
        /// What is wrong, naming the item (and chunk index) where there is one.
        reason: String,
    },

    /// A line of text input is not a valid value.
    #[error("line {line}: {reason}: {text:?}")]
    BadLine {
        /// 1-based line number.
        line: u64,
        /// The line (without its line ending), truncated to 80 characters.
        text: String,
        /// What is wrong with it.
        reason: String,
    },

    /// Bytes follow the trace footer.
    #[error("byte offset {offset}: {len} unexpected byte(s) after the trace footer")]
    TrailingBytes {
        /// Byte offset just past the footer.
        offset: u64,
        /// Number of bytes that follow it.
        len: u64,
    },

    /// A reader or writer is used again after it returned an error.
    #[error(
        "byte offset {offset}: stream already failed with an earlier error and cannot continue"
    )]
    Stopped {
        /// Byte offset the stream had reached when it failed.
        offset: u64,
    },

    /// A synthetic stream name is not one of `code`, `values`, `uniform`.
    #[error("unknown synthetic stream kind {name:?} (expected one of: code, values, uniform)")]
    UnknownStreamKind {
        /// The name given.
        name: String,
    },
}

impl Error {
    /// The byte offset this error refers to, if it names one.
    ///
    /// Text-input errors name a line instead; see [`Error::line`].
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::BadMagic { offset }
            | Error::UnsupportedVersion { offset, .. }
            | Error::UnsupportedRecordKind { offset, .. }
            | Error::UnsupportedFlags { offset, .. }
            | Error::Truncated { offset, .. }
            | Error::ChecksumMismatch { offset, .. }
            | Error::HeaderChecksumMismatch { offset, .. }
            | Error::LimitExceeded { offset, .. }
            | Error::Corrupt { offset, .. }
            | Error::TrailingBytes { offset, .. }
            | Error::Stopped { offset } => Some(*offset),
            Error::Io { .. } | Error::BadLine { .. } | Error::UnknownStreamKind { .. } => None,
        }
    }

    /// The 1-based line number this error refers to, for text input.
    pub fn line(&self) -> Option<u64> {
        match self {
            Error::BadLine { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The trace chunk index this error refers to, if any.
    pub fn chunk(&self) -> Option<u64> {
        match self {
            Error::ChecksumMismatch { chunk, .. } | Error::LimitExceeded { chunk, .. } => {
                Some(*chunk)
            }
            Error::HeaderChecksumMismatch { chunk, .. } => *chunk,
            _ => None,
        }
    }
}

/// `" (chunk 3)"`, or nothing.
fn chunk_note(chunk: Option<u64>) -> String {
    chunk.map(|c| format!(" (chunk {c})")).unwrap_or_default()
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Self {
        Error::Io { source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_and_where() {
        let e = Error::ChecksumMismatch {
            chunk: 3,
            offset: 4096,
        };
        assert_eq!(
            e.to_string(),
            "trace chunk 3 at byte offset 4096: checksum mismatch"
        );
        assert_eq!(e.offset(), Some(4096));
        assert_eq!(e.chunk(), Some(3));

        let e = Error::BadLine {
            line: 7,
            text: "12x".into(),
            reason: "invalid decimal digit 'x'".into(),
        };
        assert_eq!(e.to_string(), "line 7: invalid decimal digit 'x': \"12x\"");
        assert_eq!(e.line(), Some(7));
        assert_eq!(e.offset(), None);

        let e = Error::UnsupportedRecordKind {
            kind: 2,
            offset: 10,
        };
        assert!(e.to_string().contains("retire records"), "{e}");
        assert!(e.to_string().contains("byte offset 10"), "{e}");

        let e = Error::HeaderChecksumMismatch {
            what: "trace chunk header",
            chunk: Some(2),
            offset: 300,
        };
        assert_eq!(
            e.to_string(),
            "trace chunk header (chunk 2) at byte offset 300: header checksum mismatch"
        );
        assert_eq!(e.chunk(), Some(2));
    }
}
