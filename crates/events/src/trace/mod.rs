//! Outcrop trace files (`.otr`): a compact, checksummed, streamable container for value streams.
//!
//! A trace file is a 20-byte header, a sequence of chunks, and a 24-byte footer. Each chunk
//! holds up to [`DEFAULT_CHUNK_VALUES`] values (configurable per file), delta + zigzag +
//! LEB128 encoded and compressed as one zstd frame, with a CRC-32 over its header and
//! another over its decompressed payload. The footer repeats the chunk and value totals, so
//! a file cut short anywhere is detected. Every byte is documented in `docs/formats.md`,
//! section "Trace files (`.otr`)".
//!
//! Reading is streaming ([`TraceReader`] holds one chunk at a time) and defensive: every
//! length is checked against [`MAX_CHUNK_VALUES`], [`MAX_UNCOMPRESSED_BYTES`] and
//! [`MAX_COMPRESSED_BYTES`] before anything is allocated, and every error names a byte offset
//! and, where relevant, a chunk index.
//!
//! Writing is deterministic: the same values and chunk size produce a byte-identical file
//! (zstd level [`ZSTD_LEVEL`], single-threaded, no timestamps), given the same zstd version.

mod codec;
mod reader;
mod writer;

use std::fmt;
use std::io::Read;

pub use reader::TraceReader;
pub use writer::TraceWriter;

use crate::Error;

/// The eight bytes every trace file starts with.
pub const MAGIC: [u8; 8] = *b"OUTCROPT";

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// Size of the file header: magic, version, record kind, flags, CRC-32.
pub const FILE_HEADER_BYTES: usize = 20;

/// Size of a chunk header: tag, compressed length, uncompressed length, value count, payload
/// CRC-32, header CRC-32.
pub const CHUNK_HEADER_BYTES: usize = 24;

/// Size of the footer: tag, chunk count, value count, CRC-32.
pub const FOOTER_BYTES: usize = 24;

/// Tag that starts every chunk header.
pub const CHUNK_TAG: [u8; 4] = *b"CHNK";

/// Tag that starts the footer.
pub const FOOTER_TAG: [u8; 4] = *b"END!";

/// Values per chunk unless [`TraceWriter::with_chunk_values`] says otherwise.
pub const DEFAULT_CHUNK_VALUES: usize = 65_536;

/// Most values one chunk may hold.
pub const MAX_CHUNK_VALUES: u32 = 1 << 21;

/// Most bytes a chunk's payload may decompress to.
pub const MAX_UNCOMPRESSED_BYTES: u32 = 16 << 20;

/// Most bytes a chunk's compressed payload may take (zstd's worst case for
/// [`MAX_UNCOMPRESSED_BYTES`] of incompressible input is a few hundred bytes more).
pub const MAX_COMPRESSED_BYTES: u32 = (16 << 20) + 1024;

/// The zstd compression level the writer uses (fixed, so output is reproducible).
pub const ZSTD_LEVEL: i32 = 3;

/// What one record of a trace file is.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum RecordKind {
    /// A bare `u64` value (an address, a load value, any field).
    U64 = 1,
}

/// Record-kind code reserved for full retire records (not yet supported).
pub const RESERVED_RETIRE_RECORD_KIND: u16 = 2;

impl RecordKind {
    /// The code stored in the file header.
    pub fn code(self) -> u16 {
        self as u16
    }

    /// The kind with this header code, if this build supports it.
    pub fn from_code(code: u16) -> Option<RecordKind> {
        match code {
            1 => Some(RecordKind::U64),
            _ => None,
        }
    }

    /// Short lowercase name (`"u64"`).
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::U64 => "u64",
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The message for a record-kind code this build cannot read.
pub(crate) fn describe_unsupported_kind(kind: u16) -> String {
    if kind == RESERVED_RETIRE_RECORD_KIND {
        format!(
            "record kind {kind} (retire records) is reserved for a later version of Outcrop \
             and cannot be read by this build"
        )
    } else {
        format!("unknown record kind {kind} (this build reads kind 1, u64 values)")
    }
}

/// Summary of a whole trace file, from [`read_info`].
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceInfo {
    /// What the records are.
    pub kind: RecordKind,
    /// Format version from the header.
    pub version: u16,
    /// Number of chunks.
    pub chunks: u64,
    /// Number of values.
    pub values: u64,
    /// Sum of the chunks' compressed payload sizes (zstd frames only, no headers).
    pub compressed_bytes: u64,
    /// Sum of the chunks' decompressed payload sizes (the varint bytes).
    pub uncompressed_bytes: u64,
    /// Size of the whole file: header, chunk headers, payloads and footer.
    pub file_bytes: u64,
}

/// Reads and validates a whole trace file — header, every chunk (decompressed, checksummed
/// and decoded), footer, nothing after it — and summarises it.
pub fn read_info<R: Read>(r: R) -> Result<TraceInfo, Error> {
    let mut reader = TraceReader::new(r)?;
    reader.skip_to_end()?;
    Ok(TraceInfo {
        kind: reader.kind(),
        version: reader.version(),
        chunks: reader.chunks_read(),
        values: reader.values_read(),
        compressed_bytes: reader.compressed_bytes(),
        uncompressed_bytes: reader.uncompressed_bytes(),
        file_bytes: reader.offset(),
    })
}

/// Reads little-endian integers out of fixed-size headers whose length is already checked.
fn le_u16(bytes: &[u8], at: usize) -> u16 {
    let mut le = [0u8; 2];
    if let Some(field) = bytes.get(at..at + 2) {
        le.copy_from_slice(field);
    }
    u16::from_le_bytes(le)
}

/// See [`le_u16`].
fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut le = [0u8; 4];
    if let Some(field) = bytes.get(at..at + 4) {
        le.copy_from_slice(field);
    }
    u32::from_le_bytes(le)
}

/// See [`le_u16`].
fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut le = [0u8; 8];
    if let Some(field) = bytes.get(at..at + 8) {
        le.copy_from_slice(field);
    }
    u64::from_le_bytes(le)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_all, ValueReader};

    fn write(values: &[u64], chunk_values: usize) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
            .unwrap()
            .with_chunk_values(chunk_values);
        w.write_values(values).unwrap();
        w.finish().unwrap()
    }

    fn read(bytes: &[u8]) -> Result<Vec<u64>, Error> {
        read_all(&mut TraceReader::new(bytes)?)
    }

    #[test]
    fn empty_stream() {
        let bytes = write(&[], 10);
        assert_eq!(bytes.len(), FILE_HEADER_BYTES + FOOTER_BYTES);
        assert_eq!(read(&bytes).unwrap(), Vec::<u64>::new());
        let info = read_info(&bytes[..]).unwrap();
        assert_eq!((info.chunks, info.values), (0, 0));
        assert_eq!(info.file_bytes, bytes.len() as u64);
    }

    #[test]
    fn one_value() {
        let bytes = write(&[42], 10);
        assert_eq!(read(&bytes).unwrap(), vec![42]);
        let info = read_info(&bytes[..]).unwrap();
        assert_eq!((info.chunks, info.values), (1, 1));
        assert_eq!(info.uncompressed_bytes, 1);
    }

    #[test]
    fn exactly_one_chunk_and_one_more() {
        let values: Vec<u64> = (0..100).map(|i| 0x10000 + 4 * i).collect();
        let bytes = write(&values, 100);
        assert_eq!(read_info(&bytes[..]).unwrap().chunks, 1);
        assert_eq!(read(&bytes).unwrap(), values);
        let bytes = write(&values, 99);
        assert_eq!(read_info(&bytes[..]).unwrap().chunks, 2);
        assert_eq!(read(&bytes).unwrap(), values);
    }

    #[test]
    fn many_chunks_and_extreme_deltas() {
        let mut values = Vec::new();
        for i in 0..10_000u64 {
            values.extend([0, u64::MAX, i, u64::MAX - i, 1 << 63]);
        }
        for chunk in [1, 2, 3, 7, 1000, DEFAULT_CHUNK_VALUES] {
            let bytes = write(&values, chunk);
            assert_eq!(read(&bytes).unwrap(), values, "chunk size {chunk}");
            let info = read_info(&bytes[..]).unwrap();
            assert_eq!(info.chunks, values.len().div_ceil(chunk) as u64);
            assert_eq!(info.values, values.len() as u64);
            assert_eq!(info.file_bytes, bytes.len() as u64);
        }
    }

    #[test]
    fn total_values_known_after_footer() {
        let bytes = write(&[1, 2, 3, 4, 5], 2);
        let mut reader = TraceReader::new(&bytes[..]).unwrap();
        assert_eq!(reader.kind(), RecordKind::U64);
        assert_eq!(reader.total_values(), None);
        let mut out = Vec::new();
        assert_eq!(reader.read_values(&mut out, 3).unwrap(), 3);
        assert_eq!(reader.total_values(), None);
        while reader.read_values(&mut out, 3).unwrap() != 0 {}
        assert_eq!(reader.total_values(), Some(5));
        assert_eq!(reader.bytes_read(), bytes.len() as u64);
        assert_eq!(out, vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn output_is_deterministic() {
        let values: Vec<u64> = (0..300_000u64).map(|i| i * i % 7919).collect();
        assert_eq!(write(&values, 4096), write(&values, 4096));
        // Splitting the writes differently does not change the file.
        let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
            .unwrap()
            .with_chunk_values(4096);
        for piece in values.chunks(1000) {
            w.write_values(piece).unwrap();
        }
        assert_eq!(w.finish().unwrap(), write(&values, 4096));
    }

    #[test]
    fn record_kind_codes() {
        assert_eq!(RecordKind::U64.code(), 1);
        assert_eq!(RecordKind::from_code(1), Some(RecordKind::U64));
        assert_eq!(RecordKind::from_code(2), None);
        assert_eq!(RecordKind::U64.to_string(), "u64");
        assert!(describe_unsupported_kind(2).contains("retire records"));
        assert!(describe_unsupported_kind(9).contains("unknown record kind 9"));
    }
}
