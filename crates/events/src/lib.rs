//! Event streams for Outcrop: where the `u64` values that profilers summarise come from.
//!
//! A *value stream* is a sequence of `u64`s — basic-block addresses, load values, any
//! field of a retire record. This crate reads and writes such streams in three formats and
//! generates synthetic ones:
//!
//! - [`text`]: one integer per line (decimal or `0x` hex, `#` comments);
//! - [`raw`]: bare little-endian `u64`s;
//! - [`trace`]: Outcrop trace files (`.otr`): chunked, delta + varint + zstd compressed,
//!   CRC-checked; the byte layout is in `docs/formats.md`;
//! - [`synth`]: deterministic synthetic streams (code-like, value-like, uniform) for
//!   benchmarks and demos.
//!
//! All readers implement [`ValueReader`], so consumers do not care where values come from.
//!
//! # Design constraints
//!
//! - No file or terminal I/O of its own: readers take `impl Read`/`impl BufRead`, writers
//!   take `impl Write`; the binary owns files, threads and progress bars.
//! - Input is untrusted: every read is bounds-checked, every length is checked against a
//!   limit before anything is allocated, and every failure is an [`Error`] that names the
//!   byte offset (or line) and, in trace files, the chunk. No `unsafe`.
//! - Deterministic output: the same values and chunk size give a byte-identical trace file
//!   (for a given zstd library version), and a synthetic stream depends only on its seed.
//!
//! # Example
//!
//! ```
//! use outcrop_events::trace::{RecordKind, TraceReader, TraceWriter};
//! use outcrop_events::ValueReader;
//!
//! # fn main() -> Result<(), outcrop_events::Error> {
//! let values = [0x10000_u64, 0x10010, 0x10020, 0x10000, 7];
//! let mut writer = TraceWriter::new(Vec::new(), RecordKind::U64)?.with_chunk_values(2);
//! writer.write_values(&values)?;
//! let bytes = writer.finish()?;
//!
//! let mut reader = TraceReader::new(&bytes[..])?;
//! let mut out = Vec::new();
//! while reader.read_values(&mut out, 1024)? != 0 {}
//! assert_eq!(out, values);
//! assert_eq!(reader.total_values(), Some(5));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod escape;
pub mod processes;
pub mod raw;
pub mod record;
pub mod synth;
pub mod text;
pub mod trace;

pub use error::Error;
pub use record::{
    BranchKind, Class, ClassCounter, Control, Mapping, Observer, ProcessSwitch, RegUse, Retire,
    Stamp, TimingEvents, Unit,
};

/// Anything that yields a stream of `u64` values in chunks.
pub trait ValueReader {
    /// Appends up to `max` values to `out`; returns how many were appended; 0 means end of stream.
    ///
    /// Pass `max > 0`: with `max == 0` nothing is read and `Ok(0)` is returned, which is
    /// indistinguishable from the end of the stream.
    fn read_values(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error>;

    /// Bytes consumed from the underlying input so far (for progress bars).
    fn bytes_read(&self) -> u64;
}

impl<T: ValueReader + ?Sized> ValueReader for &mut T {
    fn read_values(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        (**self).read_values(out, max)
    }

    fn bytes_read(&self) -> u64 {
        (**self).bytes_read()
    }
}

impl<T: ValueReader + ?Sized> ValueReader for Box<T> {
    fn read_values(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        (**self).read_values(out, max)
    }

    fn bytes_read(&self) -> u64 {
        (**self).bytes_read()
    }
}

/// Reads every remaining value of `reader` into a vector.
///
/// Convenient for tests and small inputs; streaming consumers should call
/// [`ValueReader::read_values`] in a loop instead.
pub fn read_all<R: ValueReader + ?Sized>(reader: &mut R) -> Result<Vec<u64>, Error> {
    const BATCH: usize = 64 * 1024;
    let mut out = Vec::new();
    while reader.read_values(&mut out, BATCH)? != 0 {}
    Ok(out)
}
