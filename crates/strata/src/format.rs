//! The whole-program-profile file (`.wpp`), version 4: writer and reader (version 2 and 3
//! files, which have no thread or process marks, are still read).
//!
//! ```text
//! header   "OUTCROPW" | version u16 LE | codec u8 (0 zstd, 1 zlib) | 0u8 | 0u32     16 bytes
//! section  tag [u8; 4] | raw_len u64 LE | stored_len u64 LE | crc32 u32 LE | stored bytes
//! ```
//!
//! The stored bytes are the payload compressed with the file's codec (except `STRC`); the
//! CRC-32 covers the stored bytes. Sections, in the order the writer emits them:
//!
//! * `STRM` (any number, written during the run): a chunk of the temporal stream, `n` items
//!   as three columns — `n` level bytes, `n` varint ids, `n` varint trip counts. Level 255
//!   (version 3) is a thread mark: the items after it belong to guest thread `id` (creation
//!   order; before the first mark, thread 0); its trip count is 1. Level 254 (version 4) is a
//!   process mark: the items after it belong to row `id` of the statistics' `run.processes`
//!   (before the first, row 0); its trip count is 1.
//! * `STRC` (instead of a `STRM` when smaller): the same chunk coded by the context model
//!   ([`crate::ppm`]); `raw_len` is the item count.
//! * `BLKS`: the block table sorted by address: count, the start-address deltas, then the
//!   instruction counts.
//! * `PATH`: the path dictionary: count, then per path its length and its block ids, each as
//!   the zigzag difference from the previous id + 1.
//! * `LAYR` (one per stratum layer, in order): layer index, symbol count, per symbol
//!   (level, id, trip); element count, per element its length and symbol ids.
//! * `STAT`: statistics and run information as JSON ([`FileStats`]).
//! * `END `: chunk count, stream items, blocks, layers (varints). A file without it is
//!   truncated.
//!
//! Varints are unsigned LEB128. docs/formats.md describes the format for other readers.

use crate::builder::{BuildStats, Dictionaries, Item};
use crate::error::{Error, Result};
use crate::ppm;
use crate::Codec;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The version this build writes (it reads this one, version 3, the same without process
/// marks, and version 2, without thread marks either).
pub const FORMAT_VERSION: u16 = 4;
/// The oldest version this build reads.
pub const OLDEST_VERSION: u16 = 2;
/// The first eight bytes of every file.
pub const MAGIC: &[u8; 8] = b"OUTCROPW";
const HEADER_LEN: usize = 16;
const SECTION_HEADER_LEN: usize = 24;
/// Largest decompressed section this reader accepts (a guard against hostile lengths).
pub const MAX_SECTION_BYTES: u64 = 1 << 34;
/// Most memory the reader spends on one file, all sections together, counted before each
/// section is decoded: a payload byte as 17 bytes (itself, and at most one 16-byte entry it
/// parses into), a context-coded item as 16. 8 GiB, and never more than 64 MiB plus 4,096
/// times the file's size ([`decode_budget`]). Recorded files stay far below (their sections
/// decode to at most a few dozen times their stored size); a crafted file of a few kilobytes
/// claiming gigabytes is refused before they are allocated.
pub const MAX_DECODED_BYTES: u64 = 1 << 33;

/// The decoding budget of a file of `file_len` bytes (see [`MAX_DECODED_BYTES`]).
pub fn decode_budget(file_len: u64) -> u64 {
    MAX_DECODED_BYTES.min((64 << 20) + file_len.saturating_mul(4096))
}

/// How a run was recorded: written by the capture tool, shown by reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The program as given on the command line.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// How it ended (`exit 0`, `guest fault ...`).
    pub outcome: String,
    /// Seconds from start of the guest to the file's last byte (0 in deterministic mode).
    pub record_seconds: f64,
    /// Seconds for a bare run of the same program, if measured (0 when not measured).
    pub baseline_seconds: f64,
    /// Whether capture ran on separate threads.
    pub threaded: bool,
    /// What identifies the program's code (`build-id:…`, or `sha256:…` of its loaded
    /// segments); empty in files written before it was kept.
    #[serde(default)]
    pub program_id: String,
    /// The objects mapped executable in the run (the program, then its dynamic linker and
    /// shared libraries), for a dynamically linked program; empty for a static one (and in
    /// files written before it was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectInfo>,
    /// When the guest ran more than one process or program: the (process, program) rows the
    /// stream's process marks name, in the order they first ran (row 0 the first process's
    /// first program); empty otherwise (version 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessInfo>,
}

/// A (process, program) row of a run: what a process mark names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// The process id.
    pub pid: u32,
    /// Its parent's (0: none inside the machine).
    pub parent: u32,
    /// Which of its programs: 0 the one it started with, one more per `execve`.
    pub image: u32,
    /// The program's path as the guest named it.
    pub program: String,
}

/// An object mapped executable during a run: what names its code, and where it lay.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectInfo {
    /// The path the guest opened it by.
    pub path: String,
    /// Its GNU build-id in hex (empty if it has none).
    pub build_id: String,
    /// The lowest address mapped.
    pub start: u64,
    /// The mapping's length in bytes.
    pub len: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
}

/// The `STAT` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileStats {
    /// Stratum layers built.
    pub layers: usize,
    /// Path-length limit in blocks.
    pub max_path_len: usize,
    /// Element-length limit of stratum layers.
    pub max_cycle_len: usize,
    /// Dictionary cap of each stratum layer.
    pub layer_cap: usize,
    /// The builder's counters.
    pub build: BuildStats,
    /// The run.
    pub run: RunInfo,
}

// ---------------------------------------------------------------------------------- writing

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn compress(codec: Codec, raw: &[u8]) -> Result<Vec<u8>> {
    match codec {
        Codec::Zstd {
            level, window_log, ..
        } => {
            let mut enc = zstd::stream::Encoder::new(Vec::new(), level)?;
            if window_log > 0 {
                enc.long_distance_matching(true)?;
                enc.window_log(window_log)?;
            }
            enc.set_pledged_src_size(Some(raw.len() as u64))?;
            enc.write_all(raw)?;
            Ok(enc.finish()?)
        }
        Codec::Zlib { level } => {
            let mut enc =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
            enc.write_all(raw)?;
            Ok(enc.finish()?)
        }
    }
}

/// A section ready to write: its tag, payload length and compressed bytes.
#[derive(Debug, Clone)]
pub struct Section {
    tag: [u8; 4],
    raw_len: u64,
    stored: Vec<u8>,
}

impl Section {
    /// Compresses `raw` as a section with `tag`.
    pub fn new(tag: [u8; 4], raw: &[u8], codec: Codec) -> Result<Section> {
        Ok(Section {
            tag,
            raw_len: raw.len() as u64,
            stored: compress(codec, raw)?,
        })
    }

    /// Bytes this section takes in the file.
    pub fn file_bytes(&self) -> u64 {
        (SECTION_HEADER_LEN + self.stored.len()) as u64
    }
}

/// Encodes a chunk of the temporal stream as a `STRM` payload.
pub fn encode_items(items: &[Item], out: &mut Vec<u8>) {
    out.clear();
    put_varint(out, items.len() as u64);
    out.extend(items.iter().map(|i| i.level));
    for i in items {
        put_varint(out, u64::from(i.id));
    }
    for i in items {
        put_varint(out, i.trip);
    }
}

/// Compresses a chunk of the temporal stream (callable on any thread): the columns of
/// [`encode_items`] compressed with `codec` (a `STRM` section), or, when the codec asks for
/// the context model and it is smaller, the items coded by [`ppm::encode`] (an `STRC` section).
pub fn stream_section(items: &[Item], codec: Codec) -> Result<Section> {
    stream_section_joined(items, codec, one_after_another)
}

/// Runs two pieces of work, at once or one after the other: the caller's choice (this library
/// owns no threads; the capture in `outcrop-run` passes one that runs the second on a thread).
/// The results are the same either way.
pub type Join = fn(&mut (dyn FnMut() + Send), &mut (dyn FnMut() + Send));

/// A [`Join`] that runs the two pieces one after the other, on this thread.
pub fn one_after_another(a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
    a();
    b();
}

/// [`stream_section`], the two codings of the context model's codec run through `join`.
pub fn stream_section_joined(items: &[Item], codec: Codec, join: Join) -> Result<Section> {
    let columns = || -> Result<Section> {
        let mut raw = Vec::with_capacity(items.len() * 4 + 8);
        encode_items(items, &mut raw);
        Section::new(*b"STRM", &raw, codec)
    };
    let Codec::Zstd {
        context_model: true,
        ..
    } = codec
    else {
        return columns();
    };
    let (mut zstd, mut coded) = (None, None);
    join(&mut || zstd = Some(columns()), &mut || {
        coded = Some(ppm::encode(items))
    });
    let columns = zstd.unwrap_or_else(columns)?;
    let coded = coded.unwrap_or_else(|| ppm::encode(items));
    if coded.len() < columns.stored.len() {
        return Ok(Section {
            tag: *b"STRC",
            raw_len: items.len() as u64,
            stored: coded,
        });
    }
    Ok(columns)
}

/// Each (tag, payload) compressed with `codec`, in order; the first half and the second run
/// through `join`.
fn compress_all(raws: &[([u8; 4], Vec<u8>)], codec: Codec, join: Join) -> Vec<Result<Section>> {
    let (first, second) = raws.split_at(raws.len() / 2);
    let compress = |part: &[([u8; 4], Vec<u8>)]| -> Vec<Result<Section>> {
        part.iter()
            .map(|(tag, raw)| Section::new(*tag, raw, codec))
            .collect()
    };
    let (mut a, mut b) = (None, None);
    join(&mut || a = Some(compress(first)), &mut || {
        b = Some(compress(second))
    });
    let mut out = a.unwrap_or_else(|| compress(first));
    out.extend(b.unwrap_or_else(|| compress(second)));
    out
}

/// Bytes written per section kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SectionBytes {
    /// Header.
    pub header: u64,
    /// `STRM` sections (the temporal stream).
    pub stream: u64,
    /// `BLKS`.
    pub blocks: u64,
    /// `PATH`.
    pub paths: u64,
    /// `LAYR`, per layer.
    pub layers: Vec<u64>,
    /// `STAT` and `END `.
    pub stats: u64,
}

impl SectionBytes {
    /// The file's size.
    pub fn total(&self) -> u64 {
        self.header
            + self.stream
            + self.blocks
            + self.paths
            + self.layers.iter().sum::<u64>()
            + self.stats
    }
}

/// Writes a `.wpp` file: the header at once, stream chunks as they come, the dictionaries
/// and statistics at the end.
#[derive(Debug)]
pub struct WppWriter<W: Write> {
    w: W,
    codec: Codec,
    chunks: u64,
    items: u64,
    bytes: SectionBytes,
    join: Join,
}

impl<W: Write> WppWriter<W> {
    /// Runs the compression of its sections' independent parts through `join` (by default
    /// [`one_after_another`]): the file's bytes do not change.
    pub fn with_join(mut self, join: Join) -> WppWriter<W> {
        self.join = join;
        self
    }

    /// Writes the header.
    pub fn new(mut w: W, codec: Codec) -> Result<WppWriter<W>> {
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        h.push(match codec {
            Codec::Zstd { .. } => 0,
            Codec::Zlib { .. } => 1,
        });
        h.extend_from_slice(&[0; 5]);
        w.write_all(&h)?;
        Ok(WppWriter {
            w,
            codec,
            chunks: 0,
            items: 0,
            bytes: SectionBytes {
                header: HEADER_LEN as u64,
                ..SectionBytes::default()
            },
            join: one_after_another,
        })
    }

    /// Stream items written so far.
    pub fn items_written(&self) -> u64 {
        self.items
    }

    /// The codec of this file.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    fn write_section(&mut self, s: &Section) -> Result<u64> {
        let mut h = [0u8; SECTION_HEADER_LEN];
        h[0..4].copy_from_slice(&s.tag);
        h[4..12].copy_from_slice(&s.raw_len.to_le_bytes());
        h[12..20].copy_from_slice(&(s.stored.len() as u64).to_le_bytes());
        h[20..24].copy_from_slice(&crc32fast::hash(&s.stored).to_le_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(&s.stored)?;
        Ok(s.file_bytes())
    }

    /// Compresses and writes a chunk of the temporal stream.
    pub fn write_items(&mut self, items: &[Item]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let s = stream_section_joined(items, self.codec, self.join)?;
        self.write_stream_section(&s, items.len() as u64)
    }

    /// Writes a `STRM` section compressed elsewhere ([`stream_section`]) holding `items` items.
    pub fn write_stream_section(&mut self, s: &Section, items: u64) -> Result<()> {
        self.bytes.stream += self.write_section(s)?;
        self.chunks += 1;
        self.items += items;
        Ok(())
    }

    /// Writes the dictionaries, the statistics and the end section; returns the writer and
    /// the bytes per section kind. `stats.build.stream_items` is set to the items written.
    pub fn finish(
        mut self,
        dicts: &Dictionaries,
        mut stats: FileStats,
    ) -> Result<(W, SectionBytes)> {
        let codec = self.codec;
        let dict_codec = match codec {
            // dictionaries are small: always worth the strongest level
            Codec::Zstd { window_log, .. } => Codec::Zstd {
                level: 19,
                window_log,
                context_model: false,
            },
            z => z,
        };
        // The block table in address order (blocks numbered by rank), as two columns: address
        // deltas (small: mostly the previous block's byte length) and instruction counts.
        let blocks = &dicts.blocks;
        let mut order: Vec<u32> = (0..blocks.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (blocks.addrs[i as usize], blocks.insns[i as usize]));
        let mut rank = vec![0u32; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        let mut raw = Vec::new();
        put_varint(&mut raw, blocks.len() as u64);
        let mut last = 0u64;
        for &i in &order {
            let a = blocks.addrs[i as usize];
            put_varint(&mut raw, a - last);
            last = a;
        }
        for &i in &order {
            put_varint(&mut raw, u64::from(blocks.insns[i as usize]));
        }
        let blocks_raw = std::mem::take(&mut raw);

        // Paths: each block id as the zigzag difference from (previous id in the dictionary
        // + 1), so straight-line code in address order costs zeros.
        raw.clear();
        put_varint(&mut raw, dicts.paths.len() as u64);
        let mut prev = -1i64;
        for id in 0..dicts.paths.len() as u32 {
            let p = dicts.paths.get(id);
            put_varint(&mut raw, p.len() as u64);
            for &b in p {
                let b = i64::from(rank[b as usize]);
                put_varint(&mut raw, zigzag(b - prev - 1));
                prev = b;
            }
        }
        let paths_raw = std::mem::take(&mut raw);

        let mut raws = vec![(*b"BLKS", blocks_raw), (*b"PATH", paths_raw)];
        for (k, (syms, elems)) in dicts.layers.iter().enumerate() {
            let mut raw = Vec::new();
            put_varint(&mut raw, k as u64);
            put_varint(&mut raw, syms.len() as u64);
            for s in syms {
                put_varint(&mut raw, u64::from(s.level));
                put_varint(&mut raw, u64::from(s.id));
                put_varint(&mut raw, s.trip);
            }
            put_varint(&mut raw, elems.len() as u64);
            for id in 0..elems.len() as u32 {
                let e = elems.get(id);
                put_varint(&mut raw, e.len() as u64);
                for &s in e {
                    put_varint(&mut raw, u64::from(s));
                }
            }
            raws.push((*b"LAYR", raw));
        }
        // compressed in two halves through `join`, written in order
        for (k, section) in compress_all(&raws, dict_codec, self.join)
            .into_iter()
            .enumerate()
        {
            let n = self.write_section(&section?)?;
            match k {
                0 => self.bytes.blocks = n,
                1 => self.bytes.paths = n,
                _ => self.bytes.layers.push(n),
            }
        }

        stats.build.stream_items = self.items;
        let json = serde_json::to_vec(&stats).map_err(|e| Error::Config(e.to_string()))?;
        self.bytes.stats = self.write_section(&Section::new(*b"STAT", &json, dict_codec)?)?;
        raw.clear();
        put_varint(&mut raw, self.chunks);
        put_varint(&mut raw, self.items);
        put_varint(&mut raw, stats.build.blocks);
        put_varint(&mut raw, dicts.layers.len() as u64);
        self.bytes.stats += self.write_section(&Section::new(*b"END ", &raw, codec)?)?;
        self.w.flush()?;
        Ok((self.w, self.bytes))
    }
}

// ---------------------------------------------------------------------------------- reading

/// A bounds-checked cursor over one decompressed payload.
struct Payload<'a> {
    data: &'a [u8],
    pos: usize,
    tag: &'a str,
    offset: u64,
}

impl Payload<'_> {
    fn err(&self, detail: String) -> Error {
        Error::Corrupt {
            tag: self.tag.to_string(),
            offset: self.offset,
            detail,
        }
    }

    fn varint(&mut self, what: &str) -> Result<u64> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(self.err(format!(
                    "payload byte {start}: {what}: varint runs past the end of the payload"
                )));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(self.err(format!(
                    "payload byte {start}: {what}: varint overflows 64 bits"
                )));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(format!(
            "payload byte {start}: {what}: varint longer than 10 bytes"
        )))
    }

    /// A varint that must be `< limit`.
    fn below(&mut self, limit: u64, what: &str) -> Result<u64> {
        let start = self.pos;
        let v = self.varint(what)?;
        if v >= limit {
            return Err(self.err(format!(
                "payload byte {start}: {what} {v} out of range (< {limit})"
            )));
        }
        Ok(v)
    }

    /// A count of things that each take at least `min_bytes` bytes of what is left.
    fn count(&mut self, min_bytes: usize, what: &str) -> Result<usize> {
        let start = self.pos;
        let n = self.varint(what)?;
        let left = (self.data.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes as u64) > left {
            return Err(self.err(format!(
                "payload byte {start}: {what} {n} does not fit in the {left} bytes left"
            )));
        }
        Ok(n as usize)
    }

    fn end(&self) -> Result<()> {
        if self.pos != self.data.len() {
            return Err(self.err(format!(
                "payload byte {}: {} unexpected trailing bytes",
                self.pos,
                self.data.len() - self.pos
            )));
        }
        Ok(())
    }
}

/// One stratum layer as read from a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layer {
    /// Input symbols: (level, id, trip) of lower levels.
    pub symbols: Vec<Item>,
    /// Element `i` is `data[off[i]..off[i+1]]`, symbol ids.
    pub data: Vec<u32>,
    /// Offsets into `data`.
    pub off: Vec<usize>,
}

impl Layer {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.off.len().saturating_sub(1)
    }

    /// True when the layer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The symbols of element `id`.
    pub fn element(&self, id: u32) -> &[u32] {
        let i = id as usize;
        &self.data[self.off[i]..self.off[i + 1]]
    }
}

/// Where a stream chunk is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChunkInfo {
    /// Byte offset of the section header.
    pub offset: u64,
    /// Items in the chunk.
    pub items: u64,
    /// Stored (compressed) bytes.
    pub stored: u64,
    /// Decompressed payload bytes (for a context-coded `STRC` chunk: its item count).
    pub raw: u64,
    /// Stored by the context model (`STRC`) rather than as zstd/zlib columns (`STRM`).
    pub context_coded: bool,
}

/// A whole-program profile read from a file and checked: every section's checksum, every id
/// in range, the replayed block count equal to the recorded one.
#[derive(Debug, Clone)]
pub struct WppFile {
    /// Codec of the sections.
    pub codec_id: u8,
    /// Start address of block `i`.
    pub block_addrs: Vec<u64>,
    /// Instructions of block `i`.
    pub block_insns: Vec<u32>,
    /// Path `i` is `path_data[path_off[i]..path_off[i+1]]`, block ids.
    pub path_data: Vec<u32>,
    /// Offsets into `path_data`.
    pub path_off: Vec<usize>,
    /// Start addresses along each path (parallel to `path_data`).
    pub path_addrs: Vec<u64>,
    /// Stratum layers 0, 1, ...
    pub layers: Vec<Layer>,
    /// The temporal stream.
    pub items: Vec<Item>,
    /// The `STAT` section.
    pub stats: FileStats,
    /// Stream chunks.
    pub chunks: Vec<ChunkInfo>,
    /// Bytes per section kind.
    pub bytes: SectionBytes,
    /// Blocks the stream expands to.
    pub total_blocks: u64,
}

fn decompress(codec: u8, stored: &[u8], raw_len: u64, tag: &str, offset: u64) -> Result<Vec<u8>> {
    let corrupt = |detail: String| Error::Corrupt {
        tag: tag.to_string(),
        offset,
        detail,
    };
    if raw_len > MAX_SECTION_BYTES {
        return Err(corrupt(format!(
            "payload length {raw_len} exceeds the reader's limit"
        )));
    }
    let mut out =
        Vec::with_capacity((raw_len as usize).min(stored.len().saturating_mul(64) + 1024));
    let res = match codec {
        0 => zstd::stream::Decoder::new(stored).and_then(|mut d| {
            d.window_log_max(31)?;
            d.take(raw_len + 1).read_to_end(&mut out)
        }),
        _ => flate2::read::ZlibDecoder::new(stored)
            .take(raw_len + 1)
            .read_to_end(&mut out),
    };
    res.map_err(|e| corrupt(format!("bad compressed data: {e}")))?;
    if out.len() as u64 != raw_len {
        return Err(corrupt(format!(
            "payload decompresses to {} bytes, header says {raw_len}",
            out.len()
        )));
    }
    Ok(out)
}

/// The sections read so far, for the checks of order and completeness.
#[derive(Default)]
struct Seen {
    blocks: bool,
    paths: bool,
    stats: bool,
    /// The end section's offset and its counts (chunks, items, blocks, layers).
    end: Option<(u64, [u64; 4])>,
}

/// One section's header and stored bytes, checked against the file's length and its CRC.
struct StoredSection<'a> {
    tag_bytes: [u8; 4],
    tag: String,
    offset: u64,
    raw_len: u64,
    stored: &'a [u8],
}

impl<'a> StoredSection<'a> {
    /// The section at `pos` of `bytes`.
    fn read(bytes: &'a [u8], pos: usize) -> Result<StoredSection<'a>> {
        let offset = pos as u64;
        let Some(h) = bytes.get(pos..pos + SECTION_HEADER_LEN) else {
            return Err(Error::Truncated {
                offset,
                what: format!(
                    "section header needs {SECTION_HEADER_LEN} bytes, {} left",
                    bytes.len() - pos
                ),
            });
        };
        let tag_bytes: [u8; 4] = [h[0], h[1], h[2], h[3]];
        let tag = String::from_utf8_lossy(&tag_bytes).into_owned();
        let le64 = |r: &[u8]| r.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        let raw_len = le64(&h[4..12]);
        let stored_len = le64(&h[12..20]);
        let crc = le64(&h[20..24]) as u32;
        let body_start = pos + SECTION_HEADER_LEN;
        let left = (bytes.len() - body_start) as u64;
        if stored_len > left {
            return Err(Error::Truncated {
                offset: body_start as u64,
                what: format!("section {tag} says {stored_len} stored bytes, {left} left"),
            });
        }
        let stored = &bytes[body_start..body_start + stored_len as usize];
        let computed = crc32fast::hash(stored);
        if computed != crc {
            return Err(Error::Checksum {
                tag,
                offset,
                stored: crc,
                computed,
            });
        }
        Ok(StoredSection {
            tag_bytes,
            tag,
            offset,
            raw_len,
            stored,
        })
    }

    /// Bytes of the file the section takes (header included).
    fn file_bytes(&self) -> u64 {
        SECTION_HEADER_LEN as u64 + self.stored.len() as u64
    }

    /// Where the next section starts.
    fn next(&self) -> usize {
        self.offset as usize + SECTION_HEADER_LEN + self.stored.len()
    }

    /// What the section will decode to, counted against the file's budget before decoding.
    fn claim(&self) -> u64 {
        if &self.tag_bytes == b"STRC" {
            self.raw_len.saturating_mul(16)
        } else {
            self.raw_len.saturating_mul(17)
        }
    }

    fn corrupt(&self, detail: String) -> Error {
        Error::Corrupt {
            tag: self.tag.clone(),
            offset: self.offset,
            detail,
        }
    }
}

/// The file header: its version and codec.
fn read_header(bytes: &[u8]) -> Result<(u16, u8)> {
    if bytes.len() < 8 {
        if MAGIC.starts_with(bytes) {
            return Err(Error::Truncated {
                offset: bytes.len() as u64,
                what: "header".into(),
            });
        }
        return Err(Error::BadMagic);
    }
    if &bytes[..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    if bytes.len() < HEADER_LEN {
        return Err(Error::Truncated {
            offset: bytes.len() as u64,
            what: "header".into(),
        });
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion { version });
    }
    let codec_id = bytes[10];
    let header = |offset: u64, detail: String| Error::Corrupt {
        tag: "header".into(),
        offset,
        detail,
    };
    if codec_id > 1 {
        return Err(header(10, format!("unknown codec {codec_id}")));
    }
    if bytes[11] != 0 || bytes[12..16] != [0; 4] {
        return Err(header(11, "reserved header bytes are not zero".into()));
    }
    Ok((version, codec_id))
}

impl WppFile {
    /// Reads and checks a whole file held in memory: the header, then each section in turn
    /// (its CRC, what it decodes to against the file's budget, its contents), then the end
    /// section's counts against what was read.
    pub fn parse(bytes: &[u8]) -> Result<WppFile> {
        let (version, codec_id) = read_header(bytes)?;
        let mut f = WppFile {
            codec_id,
            block_addrs: Vec::new(),
            block_insns: Vec::new(),
            path_data: Vec::new(),
            path_off: vec![0],
            path_addrs: Vec::new(),
            layers: Vec::new(),
            items: Vec::new(),
            stats: FileStats::default(),
            chunks: Vec::new(),
            bytes: SectionBytes {
                header: HEADER_LEN as u64,
                ..SectionBytes::default()
            },
            total_blocks: 0,
        };
        let mut seen = Seen::default();
        let mut pos = HEADER_LEN;
        let budget = decode_budget(bytes.len() as u64);
        let mut decoded = 0u64;
        while pos < bytes.len() {
            if let Some((end_off, _)) = seen.end {
                return Err(Error::Corrupt {
                    tag: "?".into(),
                    offset: pos as u64,
                    detail: format!("data after the end section at byte offset {end_off}"),
                });
            }
            let section = StoredSection::read(bytes, pos)?;
            pos = section.next();
            decoded = decoded.saturating_add(section.claim());
            if decoded > budget {
                return Err(section.corrupt(format!(
                    "the sections so far decode to {decoded} bytes, more than this reader holds for a file of {} bytes ({budget})",
                    bytes.len()
                )));
            }
            f.read_section(&section, &mut seen)?;
        }
        f.finish(version, &seen, bytes.len() as u64)?;
        Ok(f)
    }

    /// Decodes one section into the file.
    fn read_section(&mut self, s: &StoredSection<'_>, seen: &mut Seen) -> Result<()> {
        if &s.tag_bytes == b"STRC" {
            let items = ppm::decode(s.stored, s.raw_len).map_err(|d| s.corrupt(d))?;
            self.chunks.push(ChunkInfo {
                offset: s.offset,
                items: items.len() as u64,
                stored: s.stored.len() as u64,
                raw: s.raw_len,
                context_coded: true,
            });
            self.items.extend(items);
            self.bytes.stream += s.file_bytes();
            return Ok(());
        }
        let raw = decompress(self.codec_id, s.stored, s.raw_len, &s.tag, s.offset)?;
        let mut p = Payload {
            data: &raw,
            pos: 0,
            tag: &s.tag,
            offset: s.offset,
        };
        match &s.tag_bytes {
            b"STRM" => {
                self.read_stream(&mut p, s)?;
                self.bytes.stream += s.file_bytes();
            }
            b"BLKS" => {
                self.read_blocks(&mut p)?;
                seen.blocks = true;
                self.bytes.blocks += s.file_bytes();
            }
            b"PATH" => {
                if !seen.blocks {
                    return Err(p.err("path dictionary before the block table".into()));
                }
                self.read_paths(&mut p)?;
                seen.paths = true;
                self.bytes.paths += s.file_bytes();
            }
            b"LAYR" => {
                if !seen.paths {
                    return Err(p.err("stratum layer before the path dictionary".into()));
                }
                self.read_layer(&mut p)?;
                self.bytes.layers.push(s.file_bytes());
            }
            b"STAT" => {
                self.stats = serde_json::from_slice(&raw)
                    .map_err(|e| p.err(format!("statistics JSON: {e}")))?;
                seen.stats = true;
                self.bytes.stats += s.file_bytes();
            }
            b"END " => {
                let mut v = [0u64; 4];
                for (x, what) in v.iter_mut().zip(["chunks", "items", "blocks", "layers"]) {
                    *x = p.varint(what)?;
                }
                p.end()?;
                seen.end = Some((s.offset, v));
                self.bytes.stats += s.file_bytes();
            }
            t => return Err(p.err(format!("unknown section tag {t:?}"))),
        }
        Ok(())
    }

    /// A stream chunk (`STRM`): levels, ids, trip counts.
    fn read_stream(&mut self, p: &mut Payload<'_>, s: &StoredSection<'_>) -> Result<()> {
        let n = p.count(3, "item count")?;
        let levels = p.data.get(p.pos..p.pos + n).unwrap_or(&[]).to_vec();
        p.pos += n;
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            ids.push(p.below(1 << 32, "id")? as u32);
        }
        let first = self.items.len();
        for (i, (&level, id)) in levels.iter().zip(ids).enumerate() {
            let start = p.pos;
            let trip = p.varint("trip count")?;
            if trip == 0 {
                return Err(p.err(format!("payload byte {start}: item {i}: trip count 0")));
            }
            self.items.push(Item { level, id, trip });
        }
        p.end()?;
        self.chunks.push(ChunkInfo {
            offset: s.offset,
            items: (self.items.len() - first) as u64,
            stored: s.stored.len() as u64,
            raw: s.raw_len,
            context_coded: false,
        });
        Ok(())
    }

    /// The block table (`BLKS`): address deltas, then instruction counts.
    fn read_blocks(&mut self, p: &mut Payload<'_>) -> Result<()> {
        let n = p.count(2, "block count")?;
        let mut last = 0u64;
        for _ in 0..n {
            let start = p.pos;
            let d = p.varint("address delta")?;
            last = last
                .checked_add(d)
                .ok_or_else(|| p.err(format!("payload byte {start}: block address overflows")))?;
            self.block_addrs.push(last);
        }
        for _ in 0..n {
            self.block_insns
                .push(p.below(1 << 32, "instruction count")? as u32);
        }
        p.end()
    }

    /// The path dictionary (`PATH`): each path's blocks as zigzag deltas of block ids.
    fn read_paths(&mut self, p: &mut Payload<'_>) -> Result<()> {
        let n = p.count(2, "path count")?;
        let nb = self.block_addrs.len() as i64;
        let mut prev = -1i64;
        for i in 0..n {
            let len = p.count(1, "path length")?;
            if len == 0 {
                return Err(p.err(format!("path {i} is empty")));
            }
            for _ in 0..len {
                let start = p.pos;
                let d = unzigzag(p.varint("block id delta")?);
                let b = prev.saturating_add(1).saturating_add(d);
                if !(0..nb).contains(&b) {
                    return Err(p.err(format!(
                        "payload byte {start}: block id {b} out of range (< {nb})"
                    )));
                }
                prev = b;
                self.path_data.push(b as u32);
                self.path_addrs.push(self.block_addrs[b as usize]);
            }
            self.path_off.push(self.path_data.len());
        }
        p.end()
    }

    /// A stratum layer (`LAYR`): its symbols, then its elements.
    fn read_layer(&mut self, p: &mut Payload<'_>) -> Result<()> {
        let k = self.layers.len();
        let idx = p.varint("layer index")?;
        if idx != k as u64 {
            return Err(p.err(format!("layer index {idx}, expected {k}")));
        }
        let ns = p.count(3, "symbol count")?;
        let mut layer = Layer {
            symbols: Vec::with_capacity(ns),
            data: Vec::new(),
            off: vec![0],
        };
        for _ in 0..ns {
            let level = p.below(k as u64 + 1, "symbol level")? as u8;
            let limit = self.level_len(level) as u64;
            let id = p.below(limit, "symbol id")? as u32;
            let start = p.pos;
            let trip = p.varint("symbol trip count")?;
            if trip == 0 {
                return Err(p.err(format!("payload byte {start}: symbol trip count 0")));
            }
            layer.symbols.push(Item { level, id, trip });
        }
        let ne = p.count(2, "element count")?;
        for i in 0..ne {
            let len = p.count(1, "element length")?;
            if len == 0 {
                return Err(p.err(format!("element {i} is empty")));
            }
            for _ in 0..len {
                layer.data.push(p.below(ns as u64, "symbol")? as u32);
            }
            layer.off.push(layer.data.len());
        }
        p.end()?;
        self.layers.push(layer);
        Ok(())
    }

    /// The checks once every section is read: an end section whose counts match, every
    /// stream item naming a dictionary entry, the expansion's length as recorded.
    fn finish(&mut self, version: u16, seen: &Seen, file_len: u64) -> Result<()> {
        let Some((end_off, [chunks, items, blocks, layers])) = seen.end else {
            return Err(Error::Truncated {
                offset: file_len,
                what: "no end section (the recording did not finish)".into(),
            });
        };
        let bad_end = |detail: String| Error::Corrupt {
            tag: "END ".into(),
            offset: end_off,
            detail,
        };
        if !seen.paths || !seen.stats {
            return Err(bad_end(
                "the block, path or statistics section is missing".into(),
            ));
        }
        if chunks != self.chunks.len() as u64 || items != self.items.len() as u64 {
            return Err(bad_end(format!(
                "says {chunks} chunks and {items} items, the file holds {} and {}",
                self.chunks.len(),
                self.items.len()
            )));
        }
        if layers != self.layers.len() as u64 {
            return Err(bad_end(format!(
                "says {layers} layers, the file holds {}",
                self.layers.len()
            )));
        }
        self.check_items(version)?;
        self.total_blocks = self
            .expanded_blocks()
            .ok_or_else(|| bad_end("the stream expands to more than 2^64 blocks".into()))?;
        if self.total_blocks != blocks || self.total_blocks != self.stats.build.blocks {
            return Err(bad_end(format!(
                "the stream expands to {} blocks; the file says {blocks} (statistics: {})",
                self.total_blocks, self.stats.build.blocks
            )));
        }
        Ok(())
    }

    /// Every stream item names a dictionary entry, or is a thread mark (from version 3) or
    /// a process mark naming a row of `run.processes` (from version 4).
    fn check_items(&self, version: u16) -> Result<()> {
        let top = self.layers.len();
        let rows = self.stats.run.processes.len();
        for (i, it) in self.items.iter().enumerate() {
            let mark_ok = version >= 3 && it.trip == 1;
            if it.is_thread_mark() && mark_ok {
                continue;
            }
            if it.is_process_mark() && mark_ok && version >= 4 && (it.id as usize) < rows {
                continue;
            }
            if usize::from(it.level) > top || it.id as usize >= self.level_len(it.level) {
                let chunk = self
                    .chunks
                    .iter()
                    .scan(0u64, |acc, c| {
                        *acc += c.items;
                        Some((*acc, c.offset))
                    })
                    .find(|&(acc, _)| acc > i as u64)
                    .map_or(0, |(_, off)| off);
                return Err(Error::Corrupt {
                    tag: "STRM".into(),
                    offset: chunk,
                    detail: format!(
                        "item {i}: level {} id {} does not name a dictionary entry",
                        it.level, it.id
                    ),
                });
            }
        }
        Ok(())
    }

    /// Entries at `level`: paths for 0, elements of stratum layer `level − 1` otherwise.
    pub fn level_len(&self, level: u8) -> usize {
        match level {
            0 => self.path_off.len() - 1,
            l => self.layers.get(usize::from(l) - 1).map_or(0, Layer::len),
        }
    }

    /// Number of paths.
    pub fn path_count(&self) -> usize {
        self.path_off.len() - 1
    }

    /// Block ids of path `id`.
    pub fn path(&self, id: u32) -> &[u32] {
        let i = id as usize;
        &self.path_data[self.path_off[i]..self.path_off[i + 1]]
    }

    /// Start addresses along path `id`.
    pub fn path_addrs(&self, id: u32) -> &[u64] {
        let i = id as usize;
        &self.path_addrs[self.path_off[i]..self.path_off[i + 1]]
    }

    /// Instructions along path `id`.
    pub fn path_insns(&self, id: u32) -> u64 {
        self.path(id)
            .iter()
            .map(|&b| u64::from(self.block_insns[b as usize]))
            .sum()
    }

    /// Blocks each entry of each level expands to, and the stream's total (checked arithmetic:
    /// `None` on overflow).
    fn expanded_blocks(&self) -> Option<u64> {
        let mut lens: Vec<Vec<u64>> = vec![(0..self.path_count() as u32)
            .map(|p| self.path(p).len() as u64)
            .collect()];
        for layer in &self.layers {
            let mut v = Vec::with_capacity(layer.len());
            for e in 0..layer.len() as u32 {
                let mut sum = 0u64;
                for &s in layer.element(e) {
                    let it = layer.symbols[s as usize];
                    let l = lens[usize::from(it.level)][it.id as usize];
                    sum = sum.checked_add(l.checked_mul(it.trip)?)?;
                }
                v.push(sum);
            }
            lens.push(v);
        }
        let mut total = 0u64;
        for it in self.items.iter().filter(|it| !it.is_mark()) {
            let l = lens[usize::from(it.level)][it.id as usize];
            total = total.checked_add(l.checked_mul(it.trip)?)?;
        }
        Some(total)
    }

    /// Executions of every entry of every level over the whole run: `[level][id]`
    /// (paths at level 0). Saturates at `u64::MAX`.
    pub fn executions(&self) -> Vec<Vec<u64>> {
        let mut counts: Vec<Vec<u64>> = vec![vec![0; self.path_count()]];
        counts.extend(self.layers.iter().map(|l| vec![0; l.len()]));
        for it in self.items.iter().filter(|it| !it.is_mark()) {
            let c = &mut counts[usize::from(it.level)][it.id as usize];
            *c = c.saturating_add(it.trip);
        }
        for (k, layer) in self.layers.iter().enumerate().rev() {
            let (lower, upper) = counts.split_at_mut(k + 1);
            for (e, &c) in upper[0].iter().enumerate() {
                if c == 0 {
                    continue;
                }
                for &s in layer.element(e as u32) {
                    let it = layer.symbols[s as usize];
                    let x = &mut lower[usize::from(it.level)][it.id as usize];
                    *x = x.saturating_add(c.saturating_mul(it.trip));
                }
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX, 1 << 63] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut p = Payload {
                data: &b,
                pos: 0,
                tag: "T",
                offset: 0,
            };
            assert_eq!(p.varint("v").unwrap(), v);
            p.end().unwrap();
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        let over = [0xffu8; 10];
        let mut p = Payload {
            data: &over,
            pos: 0,
            tag: "T",
            offset: 0,
        };
        assert!(p.varint("v").is_err());
    }
}
