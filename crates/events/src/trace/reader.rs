//! [`TraceReader`]: validates and decodes a trace file one chunk at a time.
//!
//! Order of checks for each chunk, so that nothing is allocated or decompressed on the word
//! of an unchecked field: tag → header CRC-32 → counts and lengths against the format
//! limits → payload read (growing only as bytes actually arrive) → exactly one zstd frame of
//! exactly the declared size → decompress into a buffer of exactly the declared length →
//! payload CRC-32 → varint decode of exactly the declared number of values.

use std::fmt;
use std::io::{self, Read};

use super::codec::{decode_chunk, MAX_VARINT_BYTES};
use super::{
    le_u16, le_u32, le_u64, RecordKind, CHUNK_HEADER_BYTES, CHUNK_TAG, FILE_HEADER_BYTES,
    FOOTER_BYTES, FOOTER_TAG, FORMAT_VERSION, MAGIC, MAX_CHUNK_VALUES, MAX_COMPRESSED_BYTES,
    MAX_UNCOMPRESSED_BYTES,
};
use crate::{Error, ValueReader};

/// Where the reader is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between chunks or inside one: more values may follow.
    Reading,
    /// The footer was read and checked; nothing follows it.
    Done,
    /// An error was returned; the reader cannot continue.
    Failed,
}

/// Reads a trace file as a stream of values.
///
/// [`new`](Self::new) reads and checks the file header; values are then decoded one chunk
/// at a time by [`ValueReader::read_values`]. The end of the stream (`Ok(0)`) is reported only
/// after the footer has been checked against the chunks read and the input is known to end
/// right after it. After any error the reader is stopped: later calls return
/// [`Error::Stopped`].
pub struct TraceReader<R: Read> {
    inner: R,
    kind: RecordKind,
    version: u16,
    state: State,
    /// Bytes consumed from `inner`.
    offset: u64,
    chunks_read: u64,
    /// Values decoded from the chunks read so far.
    values_read: u64,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
    total_values: Option<u64>,
    decompressor: zstd::bulk::Decompressor<'static>,
    compressed: Vec<u8>,
    uncompressed: Vec<u8>,
    /// Values of the current chunk, and how many of them were handed out.
    values: Vec<u64>,
    next_value: usize,
}

impl<R: Read> fmt::Debug for TraceReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceReader")
            .field("kind", &self.kind)
            .field("version", &self.version)
            .field("state", &self.state)
            .field("offset", &self.offset)
            .field("chunks_read", &self.chunks_read)
            .field("values_read", &self.values_read)
            .field("total_values", &self.total_values)
            .finish_non_exhaustive()
    }
}

/// A fixed-size header of a chunk, parsed but not yet trusted beyond its CRC-32.
struct ChunkHeader {
    compressed_len: u32,
    uncompressed_len: u32,
    value_count: u32,
    payload_crc: u32,
}

impl<R: Read> TraceReader<R> {
    /// Reads and validates the file header: magic, version, record kind, flags, CRC-32.
    pub fn new(mut r: R) -> Result<Self, Error> {
        let mut header = [0u8; FILE_HEADER_BYTES];
        let got = read_fully(&mut r, &mut header)?;
        let read = header.get(..got).unwrap_or_default();
        // A short input that is not even a prefix of the magic is "not a trace file";
        // a prefix of a real header is a truncated one.
        if !read.iter().zip(MAGIC.iter()).all(|(a, b)| a == b) {
            return Err(Error::BadMagic { offset: 0 });
        }
        if got < FILE_HEADER_BYTES {
            return Err(Error::Truncated {
                offset: 0,
                what: "a 20-byte trace file header",
            });
        }
        let version = le_u16(&header, 8);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion { version, offset: 8 });
        }
        if le_u32(&header, 16) != crc32fast::hash(&header[..16]) {
            return Err(Error::HeaderChecksumMismatch {
                what: "trace file header",
                chunk: None,
                offset: 0,
            });
        }
        let kind_code = le_u16(&header, 10);
        let kind = RecordKind::from_code(kind_code).ok_or(Error::UnsupportedRecordKind {
            kind: kind_code,
            offset: 10,
        })?;
        let flags = le_u32(&header, 12);
        if flags != 0 {
            return Err(Error::UnsupportedFlags { flags, offset: 12 });
        }
        Ok(TraceReader {
            inner: r,
            kind,
            version,
            state: State::Reading,
            offset: FILE_HEADER_BYTES as u64,
            chunks_read: 0,
            values_read: 0,
            compressed_bytes: 0,
            uncompressed_bytes: 0,
            total_values: None,
            decompressor: zstd::bulk::Decompressor::new()?,
            compressed: Vec::new(),
            uncompressed: Vec::new(),
            values: Vec::new(),
            next_value: 0,
        })
    }

    /// What the records are.
    pub fn kind(&self) -> RecordKind {
        self.kind
    }

    /// Format version from the header.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Total number of values in the file, known once the footer has been reached
    /// (that is, once `read_values` has returned 0).
    pub fn total_values(&self) -> Option<u64> {
        self.total_values
    }

    /// Chunks decoded so far.
    pub fn chunks_read(&self) -> u64 {
        self.chunks_read
    }

    /// Values decoded so far (including any not yet handed out by `read_values`).
    pub fn values_read(&self) -> u64 {
        self.values_read
    }

    /// Compressed payload bytes of the chunks decoded so far.
    pub fn compressed_bytes(&self) -> u64 {
        self.compressed_bytes
    }

    /// Decompressed payload bytes of the chunks decoded so far.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.uncompressed_bytes
    }

    /// Byte offset of the next unread byte (the same as `bytes_read`).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads and validates the rest of the file without handing out values.
    pub(super) fn skip_to_end(&mut self) -> Result<(), Error> {
        self.guard(|r| {
            while r.state == State::Reading {
                r.next_value = r.values.len();
                r.advance()?;
            }
            Ok(())
        })
    }

    /// Runs `f`, stopping the reader if it fails.
    fn guard<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Error>) -> Result<T, Error> {
        if self.state == State::Failed {
            return Err(Error::Stopped {
                offset: self.offset,
            });
        }
        let result = f(self);
        if result.is_err() {
            self.state = State::Failed;
        }
        result
    }

    /// Reads the next chunk (replacing the current one) or the footer.
    fn advance(&mut self) -> Result<(), Error> {
        let start = self.offset;
        let chunk = self.chunks_read;
        let mut header = [0u8; CHUNK_HEADER_BYTES];
        let got = self.read_fully(&mut header)?;
        let tag = header.get(..4).unwrap_or_default();
        if got < 4 {
            return Err(Error::Truncated {
                offset: start,
                what: "a trace chunk header or the trace footer",
            });
        }
        if tag == FOOTER_TAG {
            // Footer and chunk header are the same size.
            return self.finish_footer(start, got, &header);
        }
        if tag != CHUNK_TAG {
            return Err(Error::Corrupt {
                offset: start,
                reason: format!(
                    "expected trace chunk {chunk} (tag \"CHNK\") or the footer (tag \"END!\"), \
                     found tag {}",
                    tag.escape_ascii()
                ),
            });
        }
        if got < CHUNK_HEADER_BYTES {
            return Err(Error::Truncated {
                offset: start,
                what: "a 24-byte trace chunk header",
            });
        }
        if le_u32(&header, 20) != crc32fast::hash(&header[..20]) {
            return Err(Error::HeaderChecksumMismatch {
                what: "trace chunk header",
                chunk: Some(chunk),
                offset: start,
            });
        }
        let h = ChunkHeader {
            compressed_len: le_u32(&header, 4),
            uncompressed_len: le_u32(&header, 8),
            value_count: le_u32(&header, 12),
            payload_crc: le_u32(&header, 16),
        };
        check_limits(&h, chunk, start)?;

        // The payload: read what is there, up to the declared length, without trusting the
        // declared length for the allocation.
        let payload_start = self.offset;
        self.compressed.clear();
        let got = (&mut self.inner)
            .take(u64::from(h.compressed_len))
            .read_to_end(&mut self.compressed)
            .map_err(|source| Error::Io { source })?;
        self.offset += got as u64;
        if got < h.compressed_len as usize {
            return Err(Error::Truncated {
                offset: payload_start,
                what: "a trace chunk payload (zstd frame) of the declared length",
            });
        }
        self.decode_payload(&h, chunk, start)?;

        self.chunks_read += 1;
        self.values_read += u64::from(h.value_count);
        self.compressed_bytes += u64::from(h.compressed_len);
        self.uncompressed_bytes += u64::from(h.uncompressed_len);
        Ok(())
    }

    /// Decompresses, checks and decodes the payload in `self.compressed` into `self.values`.
    fn decode_payload(&mut self, h: &ChunkHeader, chunk: u64, start: u64) -> Result<(), Error> {
        let corrupt = |reason: String| Error::Corrupt {
            offset: start,
            reason: format!("trace chunk {chunk}: {reason}"),
        };
        match zstd::zstd_safe::find_frame_compressed_size(&self.compressed) {
            Ok(n) if n == self.compressed.len() => {}
            Ok(n) => {
                return Err(corrupt(format!(
                    "payload is not exactly one zstd frame (the first frame is {n} of {} bytes)",
                    self.compressed.len()
                )))
            }
            Err(code) => {
                return Err(corrupt(format!(
                    "payload is not a zstd frame: {}",
                    zstd::zstd_safe::get_error_name(code)
                )))
            }
        }
        let expected = h.uncompressed_len as usize;
        // A frame that records its content size must agree with the chunk header; checking
        // it here avoids allocating the output buffer for a frame that cannot fit it.
        if let Ok(Some(content)) = zstd::zstd_safe::get_frame_content_size(&self.compressed) {
            if content != u64::from(h.uncompressed_len) {
                return Err(corrupt(format!(
                    "zstd frame content size {content} differs from the header's \
                     uncompressed length {expected}"
                )));
            }
        }
        self.uncompressed.clear();
        self.uncompressed.resize(expected, 0);
        let decompressed = self
            .decompressor
            .decompress_to_buffer(&self.compressed, &mut self.uncompressed[..])
            .map_err(|e| corrupt(format!("zstd decompression failed: {e}")))?;
        if decompressed != expected {
            return Err(corrupt(format!(
                "payload decompresses to {decompressed} bytes, the header says {expected}"
            )));
        }
        if crc32fast::hash(&self.uncompressed) != h.payload_crc {
            return Err(Error::ChecksumMismatch {
                chunk,
                offset: start,
            });
        }
        self.values.clear();
        self.next_value = 0;
        self.values.reserve(h.value_count as usize);
        decode_chunk(&self.uncompressed, h.value_count as usize, &mut self.values).map_err(corrupt)
    }

    /// Checks the footer (whose first `got` bytes are in `bytes`) and that the input ends.
    fn finish_footer(&mut self, start: u64, got: usize, bytes: &[u8]) -> Result<(), Error> {
        if got < FOOTER_BYTES {
            return Err(Error::Truncated {
                offset: start,
                what: "a 24-byte trace footer",
            });
        }
        if le_u32(bytes, 20) != crc32fast::hash(bytes.get(..20).unwrap_or_default()) {
            return Err(Error::HeaderChecksumMismatch {
                what: "trace footer",
                chunk: None,
                offset: start,
            });
        }
        let chunks = le_u64(bytes, 4);
        let values = le_u64(bytes, 12);
        if chunks != self.chunks_read || values != self.values_read {
            return Err(Error::Corrupt {
                offset: start,
                reason: format!(
                    "trace footer says {chunks} chunks and {values} values, but the file holds \
                     {} chunks and {} values",
                    self.chunks_read, self.values_read
                ),
            });
        }
        let trailing = io::copy(&mut (&mut self.inner).take(u64::MAX), &mut io::sink())
            .map_err(|source| Error::Io { source })?;
        if trailing > 0 {
            return Err(Error::TrailingBytes {
                offset: self.offset,
                len: trailing,
            });
        }
        self.values.clear();
        self.next_value = 0;
        self.total_values = Some(values);
        self.state = State::Done;
        Ok(())
    }

    fn read_fully(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let got = read_fully(&mut self.inner, buf)?;
        self.offset += got as u64;
        Ok(got)
    }
}

/// Checks a chunk header's counts and lengths against the format limits and each other.
fn check_limits(h: &ChunkHeader, chunk: u64, offset: u64) -> Result<(), Error> {
    let limit = |what, value: u32, limit: u32| {
        if value > limit {
            Err(Error::LimitExceeded {
                chunk,
                offset,
                what,
                value: u64::from(value),
                limit: u64::from(limit),
            })
        } else {
            Ok(())
        }
    };
    limit("value count", h.value_count, MAX_CHUNK_VALUES)?;
    limit(
        "uncompressed length",
        h.uncompressed_len,
        MAX_UNCOMPRESSED_BYTES,
    )?;
    limit("compressed length", h.compressed_len, MAX_COMPRESSED_BYTES)?;
    let corrupt = |reason: String| Error::Corrupt {
        offset,
        reason: format!("trace chunk {chunk}: {reason}"),
    };
    if h.value_count == 0 {
        return Err(corrupt(
            "header declares 0 values (empty chunks are not allowed)".into(),
        ));
    }
    let count = u64::from(h.value_count);
    let len = u64::from(h.uncompressed_len);
    // Every value takes 1 to 10 varint bytes.
    if len < count || len > count * MAX_VARINT_BYTES as u64 {
        return Err(corrupt(format!(
            "uncompressed length {len} cannot hold {count} varint-encoded values \
             (needs {count} to {} bytes)",
            count * MAX_VARINT_BYTES as u64
        )));
    }
    if h.compressed_len == 0 {
        return Err(corrupt(
            "header declares an empty compressed payload".into(),
        ));
    }
    Ok(())
}

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
fn read_fully<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, Error> {
    let mut filled = 0;
    while filled < buf.len() {
        let spare = buf.get_mut(filled..).unwrap_or_default();
        match r.read(spare) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => return Err(Error::Io { source }),
        }
    }
    Ok(filled)
}

impl<R: Read> ValueReader for TraceReader<R> {
    fn read_values(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        self.guard(|r| {
            let mut appended = 0;
            while appended < max {
                let available = r.values.get(r.next_value..).unwrap_or_default();
                if !available.is_empty() {
                    let n = available.len().min(max - appended);
                    out.extend_from_slice(available.get(..n).unwrap_or_default());
                    r.next_value += n;
                    appended += n;
                    continue;
                }
                if r.state == State::Done {
                    break;
                }
                r.advance()?;
            }
            Ok(appended)
        })
    }

    fn bytes_read(&self) -> u64 {
        self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_all;
    use crate::trace::TraceWriter;

    fn sample() -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
            .unwrap()
            .with_chunk_values(3);
        w.write_values(&[10, 20, 30, 40, 50]).unwrap();
        w.finish().unwrap()
    }

    fn open_err(bytes: &[u8]) -> Error {
        match TraceReader::new(bytes) {
            Ok(mut r) => read_all(&mut r).unwrap_err(),
            Err(e) => e,
        }
    }

    /// Rewrites a chunk header's fields (and its CRC) at `at`.
    fn patch_chunk_header(bytes: &mut [u8], at: usize, field: usize, value: u32) {
        bytes[at + field..at + field + 4].copy_from_slice(&value.to_le_bytes());
        let crc = crc32fast::hash(&bytes[at..at + 20]);
        bytes[at + 20..at + 24].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn header_errors() {
        let good = sample();
        assert!(matches!(
            open_err(b"hello world, not a trace"),
            Error::BadMagic { offset: 0 }
        ));
        assert!(matches!(open_err(b""), Error::Truncated { offset: 0, .. }));
        assert!(matches!(
            open_err(b"OUTC"),
            Error::Truncated { offset: 0, .. }
        ));
        assert!(matches!(open_err(b"OUTx"), Error::BadMagic { offset: 0 }));

        let mut bad = good.clone();
        bad[8] = 2;
        assert!(matches!(
            open_err(&bad),
            Error::UnsupportedVersion {
                version: 2,
                offset: 8
            }
        ));

        let mut bad = good.clone();
        bad[3] ^= 0x20; // "OUTcROPT"
        assert!(matches!(open_err(&bad), Error::BadMagic { .. }));

        let mut bad = good.clone();
        bad[13] = 1;
        assert!(matches!(
            open_err(&bad),
            Error::HeaderChecksumMismatch { offset: 0, .. }
        ));

        // Valid CRCs but a reserved kind / unknown flags.
        for (at, value, check) in [
            (10usize, 2u16, "retire records"),
            (10, 7, "unknown record kind 7"),
            (12, 1, "unknown flags"),
        ] {
            let mut bad = good.clone();
            bad[at..at + 2].copy_from_slice(&value.to_le_bytes());
            let crc = crc32fast::hash(&bad[..16]);
            bad[16..20].copy_from_slice(&crc.to_le_bytes());
            let err = open_err(&bad);
            assert!(err.to_string().contains(check), "{err}");
            assert_eq!(err.offset(), Some(at as u64));
        }
    }

    #[test]
    fn limits_are_checked_before_reading_the_payload() {
        let good = sample();
        for (field, value, what) in [
            (12, MAX_CHUNK_VALUES + 1, "value count"),
            (8, MAX_UNCOMPRESSED_BYTES + 1, "uncompressed length"),
            (4, MAX_COMPRESSED_BYTES + 1, "compressed length"),
        ] {
            let mut bad = good.clone();
            patch_chunk_header(&mut bad, 20, field, value);
            match open_err(&bad) {
                Error::LimitExceeded {
                    chunk: 0,
                    offset: 20,
                    what: w,
                    ..
                } => assert_eq!(w, what),
                other => panic!("{other:?}"),
            }
        }
        for (field, value, needle) in [(12, 0, "0 values"), (8, 2, "cannot hold"), (4, 0, "empty")]
        {
            let mut bad = good.clone();
            patch_chunk_header(&mut bad, 20, field, value);
            let err = open_err(&bad);
            assert!(err.to_string().contains(needle), "{err}");
            assert!(err.to_string().contains("trace chunk 0"), "{err}");
        }
    }

    /// A one-chunk file around a hand-made payload, with every CRC and total right.
    fn crafted(payload: &[u8], uncompressed: &[u8], count: u32) -> Vec<u8> {
        let mut bytes = super::super::writer::file_header(RecordKind::U64).to_vec();
        let mut h = Vec::new();
        h.extend_from_slice(b"CHNK");
        h.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        h.extend_from_slice(&(uncompressed.len() as u32).to_le_bytes());
        h.extend_from_slice(&count.to_le_bytes());
        h.extend_from_slice(&crc32fast::hash(uncompressed).to_le_bytes());
        h.extend_from_slice(&crc32fast::hash(&h).to_le_bytes());
        bytes.extend_from_slice(&h);
        bytes.extend_from_slice(payload);
        let mut f = Vec::new();
        f.extend_from_slice(b"END!");
        f.extend_from_slice(&1u64.to_le_bytes());
        f.extend_from_slice(&u64::from(count).to_le_bytes());
        f.extend_from_slice(&crc32fast::hash(&f).to_le_bytes());
        bytes.extend_from_slice(&f);
        bytes
    }

    fn zstd_frame(data: &[u8], content_size: bool) -> Vec<u8> {
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(content_size))
            .unwrap();
        c.compress(data).unwrap()
    }

    #[test]
    fn crafted_payloads() {
        let varints = [5u8, 2, 1]; // 5, 6, 5
        let good = crafted(&zstd_frame(&varints, true), &varints, 3);
        assert_eq!(
            read_all(&mut TraceReader::new(&good[..]).unwrap()).unwrap(),
            vec![5, 6, 5]
        );
        // A frame without a content size is fine too.
        let good = crafted(&zstd_frame(&varints, false), &varints, 3);
        assert_eq!(
            read_all(&mut TraceReader::new(&good[..]).unwrap()).unwrap(),
            vec![5, 6, 5]
        );

        let mut two_frames = zstd_frame(&varints[..1], true);
        two_frames.extend(zstd_frame(&varints[1..], true));
        // No content size recorded, so only decompression shows it holds 2 bytes, not 3.
        let short = zstd_frame(&varints[..2], false);
        for (payload, uncompressed, count, needle) in [
            (two_frames, &varints[..], 3, "not exactly one zstd frame"),
            (
                b"not zstd at all".to_vec(),
                &varints[..],
                3,
                "not a zstd frame",
            ),
            (
                zstd_frame(&varints[..2], true),
                &varints[..],
                3,
                "content size 2",
            ),
            (short, &varints[..], 3, "decompresses to 2 bytes"),
            (
                zstd_frame(&[0x80, 0x00], true),
                &[0x80, 0x00][..],
                1,
                "canonical",
            ),
            (zstd_frame(&varints, true), &varints[..], 2, "left over"),
        ] {
            let err = open_err(&crafted(&payload, uncompressed, count));
            assert!(matches!(err, Error::Corrupt { offset: 20, .. }), "{err:?}");
            assert!(err.to_string().contains(needle), "{needle}: {err}");
            assert!(err.to_string().contains("trace chunk 0"), "{err}");
        }
    }

    #[test]
    fn trailing_bytes() {
        let mut bad = sample();
        let end = bad.len() as u64;
        bad.extend_from_slice(b"xyz");
        assert!(matches!(
            open_err(&bad),
            Error::TrailingBytes { offset, len: 3 } if offset == end
        ));
        assert!(read_info_err(&bad)
            .to_string()
            .contains("3 unexpected byte(s)"));
    }

    fn read_info_err(bytes: &[u8]) -> Error {
        crate::trace::read_info(bytes).unwrap_err()
    }

    #[test]
    fn missing_footer_is_truncated_at_the_next_header() {
        let good = sample();
        let cut = good.len() - FOOTER_BYTES;
        let err = open_err(&good[..cut]);
        assert!(
            matches!(err, Error::Truncated { offset, .. } if offset == cut as u64),
            "{err:?}"
        );
    }

    #[test]
    fn footer_totals_must_match() {
        let mut bad = sample();
        let at = bad.len() - FOOTER_BYTES;
        bad[at + 12] = 4; // 4 values instead of 5
        let crc = crc32fast::hash(&bad[at..at + 20]);
        bad[at + 20..at + 24].copy_from_slice(&crc.to_le_bytes());
        let err = open_err(&bad);
        assert!(
            err.to_string()
                .contains("footer says 2 chunks and 4 values"),
            "{err}"
        );
    }

    #[test]
    fn stopped_after_error() {
        let good = sample();
        let mut r = TraceReader::new(&good[..good.len() - 1]).unwrap();
        let mut out = Vec::new();
        let err = loop {
            match r.read_values(&mut out, 1) {
                Ok(0) => panic!("truncated file read to the end"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(matches!(err, Error::Truncated { .. }));
        assert!(matches!(
            r.read_values(&mut out, 1),
            Err(Error::Stopped { .. })
        ));
        assert_eq!(out, vec![10, 20, 30, 40, 50]);
    }
}
