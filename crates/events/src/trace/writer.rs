//! [`TraceWriter`]: encodes values into chunks and writes a trace file.

use std::fmt;
use std::io::Write;

use zstd::zstd_safe::{compress_bound, CParameter};

use super::codec::{put_value, MAX_VARINT_BYTES};
use super::{
    RecordKind, CHUNK_HEADER_BYTES, CHUNK_TAG, DEFAULT_CHUNK_VALUES, FILE_HEADER_BYTES,
    FOOTER_BYTES, FOOTER_TAG, FORMAT_VERSION, MAGIC, MAX_CHUNK_VALUES, MAX_COMPRESSED_BYTES,
    MAX_UNCOMPRESSED_BYTES, ZSTD_LEVEL,
};
use crate::Error;

/// Writes a trace file: the header on [`new`](Self::new), a chunk whenever enough values
/// have arrived, and the footer on [`finish`](Self::finish).
///
/// A writer dropped without `finish` leaves a file with no footer, which readers reject as
/// truncated. After any error the writer is stopped: later calls return
/// [`Error::Stopped`].
pub struct TraceWriter<W: Write> {
    inner: W,
    kind: RecordKind,
    chunk_values: usize,
    compressor: zstd::bulk::Compressor<'static>,
    /// Varint bytes of the chunk being built.
    encoded: Vec<u8>,
    /// Values in the chunk being built.
    pending_values: usize,
    /// Last value of the chunk being built, the base of the next delta.
    previous: Option<u64>,
    /// Reused output buffer for zstd.
    compressed: Vec<u8>,
    chunks_written: u64,
    values_written: u64,
    bytes_written: u64,
    failed: bool,
}

impl<W: Write> fmt::Debug for TraceWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceWriter")
            .field("kind", &self.kind)
            .field("chunk_values", &self.chunk_values)
            .field("pending_values", &self.pending_values)
            .field("chunks_written", &self.chunks_written)
            .field("values_written", &self.values_written)
            .field("bytes_written", &self.bytes_written)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace file of `kind` records: writes the file header to `w`.
    pub fn new(mut w: W, kind: RecordKind) -> Result<Self, Error> {
        let mut compressor = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
        // Spelled out rather than left to zstd's defaults: one frame per chunk that records
        // its content size, no zstd checksum (the chunk header has a CRC-32), no threads.
        for parameter in [
            CParameter::ContentSizeFlag(true),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
            CParameter::NbWorkers(0),
        ] {
            compressor.set_parameter(parameter)?;
        }
        w.write_all(&file_header(kind))?;
        Ok(TraceWriter {
            inner: w,
            kind,
            chunk_values: DEFAULT_CHUNK_VALUES,
            compressor,
            encoded: Vec::new(),
            pending_values: 0,
            previous: None,
            compressed: Vec::new(),
            chunks_written: 0,
            values_written: 0,
            bytes_written: FILE_HEADER_BYTES as u64,
            failed: false,
        })
    }

    /// Sets the number of values per chunk (default [`DEFAULT_CHUNK_VALUES`]), clamped to
    /// `1..=MAX_CHUNK_VALUES`; takes effect from the next value written.
    ///
    /// A chunk is also closed early if its encoded size would otherwise pass
    /// [`MAX_UNCOMPRESSED_BYTES`] (only possible above about 1.6 million values per chunk).
    #[must_use]
    pub fn with_chunk_values(mut self, n: usize) -> Self {
        self.chunk_values = n.clamp(1, MAX_CHUNK_VALUES as usize);
        self
    }

    /// The record kind written in the header.
    pub fn kind(&self) -> RecordKind {
        self.kind
    }

    /// Values accepted so far (written or pending).
    pub fn values_written(&self) -> u64 {
        self.values_written
    }

    /// Bytes handed to the underlying writer so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Appends values to the stream, writing out every chunk that fills up.
    pub fn write_values(&mut self, values: &[u64]) -> Result<(), Error> {
        self.check_not_failed()?;
        for &value in values {
            put_value(&mut self.encoded, self.previous, value);
            self.previous = Some(value);
            self.pending_values += 1;
            self.values_written += 1;
            if self.pending_values >= self.chunk_values
                || self.encoded.len() + MAX_VARINT_BYTES > MAX_UNCOMPRESSED_BYTES as usize
            {
                self.flush_chunk()?;
            }
        }
        Ok(())
    }

    /// Appends one value; see [`write_values`](Self::write_values).
    pub fn write_value(&mut self, value: u64) -> Result<(), Error> {
        self.write_values(std::slice::from_ref(&value))
    }

    /// Writes the last partial chunk and the footer, flushes, and returns the writer.
    pub fn finish(mut self) -> Result<W, Error> {
        self.check_not_failed()?;
        if self.pending_values > 0 {
            self.flush_chunk()?;
        }
        let footer = footer(self.chunks_written, self.values_written);
        self.inner.write_all(&footer)?;
        self.inner.flush()?;
        Ok(self.inner)
    }

    fn check_not_failed(&self) -> Result<(), Error> {
        if self.failed {
            return Err(Error::Stopped {
                offset: self.bytes_written,
            });
        }
        Ok(())
    }

    /// Compresses and writes the pending chunk (which must hold at least one value).
    fn flush_chunk(&mut self) -> Result<(), Error> {
        let result = self.try_flush_chunk();
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn try_flush_chunk(&mut self) -> Result<(), Error> {
        self.compressed.clear();
        self.compressed
            .reserve(compress_bound(self.encoded.len()).max(64));
        self.compressor
            .compress_to_buffer(&self.encoded, &mut self.compressed)?;
        if self.compressed.len() > MAX_COMPRESSED_BYTES as usize {
            // Cannot happen with zstd (raw blocks bound the output), but never write a chunk
            // that readers would refuse.
            return Err(Error::Corrupt {
                offset: self.bytes_written,
                reason: format!(
                    "trace chunk {}: compressed size {} exceeds the format limit {}",
                    self.chunks_written,
                    self.compressed.len(),
                    MAX_COMPRESSED_BYTES
                ),
            });
        }
        let header = chunk_header(
            self.compressed.len() as u32,
            self.encoded.len() as u32,
            self.pending_values as u32,
            crc32fast::hash(&self.encoded),
        );
        self.inner.write_all(&header)?;
        self.inner.write_all(&self.compressed)?;
        self.bytes_written += (CHUNK_HEADER_BYTES + self.compressed.len()) as u64;
        self.chunks_written += 1;
        self.encoded.clear();
        self.pending_values = 0;
        self.previous = None;
        Ok(())
    }
}

/// The 20-byte file header.
pub(super) fn file_header(kind: RecordKind) -> [u8; FILE_HEADER_BYTES] {
    let mut h = [0u8; FILE_HEADER_BYTES];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&kind.code().to_le_bytes());
    h[12..16].copy_from_slice(&0u32.to_le_bytes());
    let crc = crc32fast::hash(&h[..16]);
    h[16..20].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The 24-byte chunk header.
fn chunk_header(
    compressed_len: u32,
    uncompressed_len: u32,
    value_count: u32,
    payload_crc: u32,
) -> [u8; CHUNK_HEADER_BYTES] {
    let mut h = [0u8; CHUNK_HEADER_BYTES];
    h[0..4].copy_from_slice(&CHUNK_TAG);
    h[4..8].copy_from_slice(&compressed_len.to_le_bytes());
    h[8..12].copy_from_slice(&uncompressed_len.to_le_bytes());
    h[12..16].copy_from_slice(&value_count.to_le_bytes());
    h[16..20].copy_from_slice(&payload_crc.to_le_bytes());
    let crc = crc32fast::hash(&h[..20]);
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The 24-byte footer.
fn footer(chunks: u64, values: u64) -> [u8; FOOTER_BYTES] {
    let mut h = [0u8; FOOTER_BYTES];
    h[0..4].copy_from_slice(&FOOTER_TAG);
    h[4..12].copy_from_slice(&chunks.to_le_bytes());
    h[12..20].copy_from_slice(&values.to_le_bytes());
    let crc = crc32fast::hash(&h[..20]);
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_layout() {
        let bytes = TraceWriter::new(Vec::new(), RecordKind::U64)
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(&bytes[..8], b"OUTCROPT");
        assert_eq!(&bytes[8..16], &[1, 0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[20..24], b"END!");
        assert_eq!(&bytes[24..40], &[0; 16][..]); // 0 chunks, 0 values
        assert_eq!(bytes.len(), 44);
    }

    #[test]
    fn chunk_values_are_clamped() {
        let w = TraceWriter::new(Vec::new(), RecordKind::U64).unwrap();
        assert_eq!(w.with_chunk_values(0).chunk_values, 1);
        let w = TraceWriter::new(Vec::new(), RecordKind::U64).unwrap();
        assert_eq!(
            w.with_chunk_values(usize::MAX).chunk_values,
            MAX_CHUNK_VALUES as usize
        );
    }

    #[test]
    fn io_errors_stop_the_writer() {
        /// Accepts `room` bytes, then fails.
        struct Full {
            room: usize,
        }
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.room == 0 {
                    return Err(std::io::Error::other("disk full"));
                }
                let n = buf.len().min(self.room);
                self.room -= n;
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = TraceWriter::new(Full { room: 30 }, RecordKind::U64)
            .unwrap()
            .with_chunk_values(2);
        let err = w.write_values(&[1, 2, 3]).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err:?}");
        assert!(matches!(
            w.write_values(&[4]),
            Err(Error::Stopped { offset: 20 })
        ));
        assert!(matches!(w.finish(), Err(Error::Stopped { .. })));
    }
}
