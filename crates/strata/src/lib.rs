//! `outcrop-strata`: whole-program profiles (Gorton, "Dynamic Whole Program Profiling"):
//! lossless capture of a basic-block stream as cyclic paths and strata, compression, and
//! exact replay.
//!
//! * [`WppBuilder`]: blocks in ([`WppBuilder::push_block`]), repeated top-layer elements out
//!   ([`Item`]). Layer 0 is paths (§III.A), then stratum layers 0..N (§III.B and beyond);
//!   every layer applies the same cycle rule ([`cycle`]).
//! * [`WppWriter`]: the `.wpp` file: header, compressed stream chunks written while the run
//!   goes on, dictionaries and statistics at the end ([`format`] documents every byte).
//! * [`WppFile`]: reads and checks a file; [`Replay`] expands it back to the exact block
//!   sequence.
//!
//! ```
//! use outcrop_strata::{Config, WppBuilder, WppFile, WppWriter, FileStats, Replay};
//! let blocks = [0x100u64, 0x100, 0x140, 0x100, 0x100, 0x140];
//! let mut b = WppBuilder::new(Config::default());
//! for &a in &blocks {
//!     b.push_block(a, 4);
//! }
//! let (items, dicts, build) = b.finish();
//! let mut w = WppWriter::new(Vec::new(), Config::default().codec)?;
//! w.write_items(&items)?;
//! let (bytes, _sizes) = w.finish(&dicts, FileStats { build, ..FileStats::default() })?;
//! let file = WppFile::parse(&bytes)?;
//! assert_eq!(Replay::new(&file).collect::<Vec<_>>(), blocks);
//! # Ok::<(), outcrop_strata::Error>(())
//! ```
//!
//! Design constraints: no file or terminal I/O (writers take `impl Write`, the reader takes
//! bytes), no threads (the capture pipeline in the `outcrop` binary runs the stages on threads
//! of its own), no panics on any input. docs/strata.md maps the code to the paper.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod builder;
pub mod cycle;
mod error;
pub mod format;
pub mod ppm;
mod replay;
pub mod report;

pub use builder::{
    BlockTable, BuildStats, Dictionaries, Item, LayerStats, WppBuilder, PROCESS_LEVEL, THREAD_LEVEL,
};
pub use error::{Error, Result};
pub use format::{
    decode_budget, FileStats, ObjectInfo, ProcessInfo, RunInfo, SectionBytes, WppFile, WppWriter,
    MAX_DECODED_BYTES,
};
pub use replay::Replay;

/// How sections are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// zstd at `level`; `window_log > 0` turns on long-distance matching with that window.
    Zstd {
        /// Compression level (1–22).
        level: i32,
        /// log2 of the match window for long-distance matching; 0: off.
        window_log: u32,
        /// Also code every stream chunk with the context model ([`ppm`]) and keep whichever
        /// is smaller.
        context_model: bool,
    },
    /// zlib (DEFLATE) at `level` (0–9): the paper's compressor, for comparison.
    Zlib {
        /// Compression level.
        level: u32,
    },
}

/// Builder and file settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Path-length limit in blocks (paper: 2048). A path that reaches it is cut; nothing is
    /// lost.
    pub max_path_len: usize,
    /// Stratum layers above the paths (paper: 1, layer 0 only).
    pub layers: usize,
    /// Element-length limit of every stratum layer.
    pub max_cycle_len: usize,
    /// Most elements a stratum layer's dictionary may hold; new elements met after that are
    /// forwarded to the layer above element by element (lossless, bounded memory).
    pub layer_cap: usize,
    /// Items per stream chunk.
    pub chunk_items: usize,
    /// Stream items a capture keeps in memory before writing them; items still held at the
    /// end take part in pruning.
    pub hold_items: usize,
    /// Inline stratum elements used only once at the end (see [`WppBuilder::finish`]).
    pub prune: bool,
    /// Compression of the stream (zstd dictionaries are always compressed at level 19: they
    /// are small).
    pub codec: Codec,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_path_len: 2048,
            layers: 1,
            max_cycle_len: 2048,
            layer_cap: 1 << 20,
            chunk_items: 1 << 22,
            hold_items: 1 << 26,
            prune: true,
            codec: Codec::Zstd {
                level: 12,
                window_log: 27,
                context_model: true,
            },
        }
    }
}

impl Config {
    /// Checks the ranges: limits ≥ 1, at most 250 layers, codec levels in range.
    pub fn validate(&self) -> Result<()> {
        if self.max_path_len == 0 || self.max_cycle_len == 0 || self.chunk_items == 0 {
            return Err(Error::Config(
                "path length limit, element length limit and chunk size must be ≥ 1".into(),
            ));
        }
        if self.layers > 250 {
            return Err(Error::Config(format!(
                "{} stratum layers: at most 250",
                self.layers
            )));
        }
        match self.codec {
            Codec::Zstd {
                level, window_log, ..
            } => {
                if !(1..=22).contains(&level) {
                    return Err(Error::Config(format!("zstd level {level}: must be 1–22")));
                }
                if window_log != 0 && !(10..=31).contains(&window_log) {
                    return Err(Error::Config(format!(
                        "zstd window log {window_log}: must be 0 (off) or 10–31"
                    )));
                }
            }
            Codec::Zlib { level } => {
                if level > 9 {
                    return Err(Error::Config(format!("zlib level {level}: must be 0–9")));
                }
            }
        }
        Ok(())
    }
}
