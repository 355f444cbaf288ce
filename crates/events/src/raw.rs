//! Raw value streams: bare little-endian `u64`s, eight bytes each, no header.
//!
//! The simplest interchange format (`--input-format u64le`): what `numpy.tofile` or a
//! `fwrite` of a `uint64_t` array produces on a little-endian machine. The input length must
//! be a multiple of 8; a trailing partial record is an [`Error::Truncated`] naming its offset.

use std::io::{self, Read};

use crate::{Error, ValueReader};

/// Bytes per record.
const RECORD_BYTES: usize = 8;

/// Size of the internal read buffer.
const BUFFER_BYTES: usize = 64 * 1024;

/// Reads a stream of raw little-endian `u64` values.
#[derive(Debug)]
pub struct U64LeReader<R: Read> {
    inner: R,
    buf: Box<[u8]>,
    /// Start of the unconsumed bytes in `buf`.
    pos: usize,
    /// End of the valid bytes in `buf`.
    filled: usize,
    /// Bytes read from `inner` so far.
    bytes_read: u64,
    /// Bytes turned into values so far (the offset of the next record).
    bytes_decoded: u64,
    eof: bool,
    failed: bool,
}

impl<R: Read> U64LeReader<R> {
    /// Wraps a reader; it is read in 64 KiB blocks, so it need not be buffered.
    pub fn new(r: R) -> Self {
        U64LeReader {
            inner: r,
            buf: vec![0; BUFFER_BYTES].into_boxed_slice(),
            pos: 0,
            filled: 0,
            bytes_read: 0,
            bytes_decoded: 0,
            eof: false,
            failed: false,
        }
    }

    /// Moves the unconsumed tail to the front of the buffer and reads more after it.
    /// Returns the number of bytes read (0 at end of input).
    fn refill(&mut self) -> Result<usize, Error> {
        self.buf.copy_within(self.pos..self.filled, 0);
        self.filled -= self.pos;
        self.pos = 0;
        loop {
            let spare = self.buf.get_mut(self.filled..).unwrap_or_default();
            match self.inner.read(spare) {
                Ok(n) => {
                    self.filled += n;
                    self.bytes_read += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(Error::Io { source }),
            }
        }
    }

    fn read_values_inner(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        let mut appended = 0;
        while appended < max {
            let pending = self.buf.get(self.pos..self.filled).unwrap_or_default();
            if pending.len() >= RECORD_BYTES {
                let records = (pending.len() / RECORD_BYTES).min(max - appended);
                let bytes = records * RECORD_BYTES;
                out.extend(
                    pending
                        .chunks_exact(RECORD_BYTES)
                        .take(records)
                        .map(|record| {
                            let mut le = [0u8; RECORD_BYTES];
                            le.copy_from_slice(record);
                            u64::from_le_bytes(le)
                        }),
                );
                self.pos += bytes;
                self.bytes_decoded += bytes as u64;
                appended += records;
                continue;
            }
            if self.eof || self.refill()? == 0 {
                self.eof = true;
                if !pending_is_empty(self.pos, self.filled) {
                    return Err(Error::Truncated {
                        offset: self.bytes_decoded,
                        what: "a whole 8-byte little-endian u64 value (input ends mid-value)",
                    });
                }
                break;
            }
        }
        Ok(appended)
    }
}

fn pending_is_empty(pos: usize, filled: usize) -> bool {
    pos >= filled
}

impl<R: Read> ValueReader for U64LeReader<R> {
    /// Appends up to `max` values; after an error every later call returns
    /// [`Error::Stopped`].
    fn read_values(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        if self.failed {
            return Err(Error::Stopped {
                offset: self.bytes_decoded,
            });
        }
        let result = self.read_values_inner(out, max);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_all;

    /// A reader that hands out at most `step` bytes per call, to exercise refills.
    struct Dribble<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            let (head, tail) = self.data.split_at(n);
            buf[..n].copy_from_slice(head);
            self.data = tail;
            Ok(n)
        }
    }

    fn encode(values: &[u64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn reads_values() {
        let values = [0, 1, u64::MAX, 0x0102_0304_0506_0708];
        let bytes = encode(&values);
        assert_eq!(read_all(&mut U64LeReader::new(&bytes[..])).unwrap(), values);
        assert_eq!(
            read_all(&mut U64LeReader::new(&[][..])).unwrap(),
            Vec::<u64>::new()
        );
    }

    #[test]
    fn records_split_across_reads() {
        let values: Vec<u64> = (0..50_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let bytes = encode(&values);
        for step in [1, 3, 7, 8, 13, 65_537] {
            let mut reader = U64LeReader::new(Dribble { data: &bytes, step });
            let mut out = Vec::new();
            while reader.read_values(&mut out, 777).unwrap() != 0 {}
            assert_eq!(out, values, "step {step}");
            assert_eq!(reader.bytes_read(), bytes.len() as u64);
        }
    }

    #[test]
    fn partial_tail_is_truncated_with_offset() {
        for tail in 1..8 {
            let mut bytes = encode(&[1, 2, 3]);
            bytes.extend(std::iter::repeat_n(0xAB, tail));
            let mut reader = U64LeReader::new(Dribble {
                data: &bytes,
                step: 5,
            });
            let mut out = Vec::new();
            let err = loop {
                match reader.read_values(&mut out, 2) {
                    Ok(0) => panic!("tail of {tail} bytes accepted"),
                    Ok(_) => {}
                    Err(e) => break e,
                }
            };
            assert!(
                matches!(err, Error::Truncated { offset: 24, .. }),
                "{err:?}"
            );
            assert!(err.to_string().contains("byte offset 24"), "{err}");
            assert_eq!(out, vec![1, 2, 3]);
            assert!(matches!(
                reader.read_values(&mut out, 2),
                Err(Error::Stopped { .. })
            ));
        }
    }
}
