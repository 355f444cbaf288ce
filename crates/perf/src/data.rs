//! The perf.data reader: the file header, event attributes, the data section's records and
//! the build-id feature section, read from any `Read + Seek` source with every size and
//! offset checked before it is used (`tools/perf/Documentation/perf.data-file-format.txt`,
//! `include/uapi/linux/perf_event.h`).
//!
//! Records are returned in file order, one at a time, through a buffer of at most 64 KiB
//! (a record's size is a `u16`): memory does not grow with the file.

use crate::error::{damaged, Error, Result};
use rustc_hash::FxHashMap;
use std::io::{Read, Seek, SeekFrom};

/// `PERFILE2` as a little-endian `u64`.
const MAGIC: u64 = 0x3245_4c49_4652_4550;
/// The same bytes written by a big-endian host.
const MAGIC_SWAPPED: u64 = 0x5045_5246_494c_4532;
/// Size of a file header of a seekable perf.data.
const HEADER_SIZE: u64 = 104;
/// Size of a pipe-mode header (`perf record -o -`).
const PIPE_HEADER_SIZE: u64 = 16;
/// Most event attributes a file may declare.
pub const MAX_ATTRS: u64 = 4096;
/// Most event ids over all attributes.
pub const MAX_IDS: u64 = 1 << 20;
/// Largest build-id feature section read.
pub const MAX_FEATURE_BYTES: u64 = 16 << 20;
/// Most entries one branch stack may have (hardware has 8–64).
pub const MAX_BRANCHES: u64 = 1024;

// sample_type bits (perf_event.h)
const S_IP: u64 = 1 << 0;
const S_TID: u64 = 1 << 1;
const S_TIME: u64 = 1 << 2;
const S_ADDR: u64 = 1 << 3;
const S_READ: u64 = 1 << 4;
const S_CALLCHAIN: u64 = 1 << 5;
const S_ID: u64 = 1 << 6;
const S_CPU: u64 = 1 << 7;
const S_PERIOD: u64 = 1 << 8;
const S_STREAM_ID: u64 = 1 << 9;
const S_RAW: u64 = 1 << 10;
const S_BRANCH_STACK: u64 = 1 << 11;
const S_REGS_USER: u64 = 1 << 12;
const S_STACK_USER: u64 = 1 << 13;
const S_WEIGHT: u64 = 1 << 14;
const S_DATA_SRC: u64 = 1 << 15;
const S_IDENTIFIER: u64 = 1 << 16;
const S_TRANSACTION: u64 = 1 << 17;
const S_REGS_INTR: u64 = 1 << 18;
const S_PHYS_ADDR: u64 = 1 << 19;
const S_AUX: u64 = 1 << 20;
const S_CGROUP: u64 = 1 << 21;
const S_DATA_PAGE_SIZE: u64 = 1 << 22;
const S_CODE_PAGE_SIZE: u64 = 1 << 23;
const S_WEIGHT_STRUCT: u64 = 1 << 24;
const S_KNOWN: u64 = (1 << 25) - 1;

// read_format bits
const R_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const R_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const R_ID: u64 = 1 << 2;
const R_GROUP: u64 = 1 << 3;
const R_LOST: u64 = 1 << 4;

// branch_sample_type bits
const B_HW_INDEX: u64 = 1 << 17;
const B_COUNTERS: u64 = 1 << 19;

// record types
const REC_MMAP: u32 = 1;
const REC_LOST: u32 = 2;
const REC_COMM: u32 = 3;
const REC_EXIT: u32 = 4;
const REC_FORK: u32 = 7;
const REC_SAMPLE: u32 = 9;
const REC_MMAP2: u32 = 10;
const REC_HEADER_ATTR: u32 = 64;
const REC_HEADER_BUILD_ID: u32 = 67;
const REC_AUXTRACE: u32 = 71;
const REC_COMPRESSED: u32 = 81;

// misc bits
const MISC_CPUMODE_MASK: u16 = 7;
const MISC_MMAP_DATA: u16 = 1 << 13;
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// Feature bit of the build-id table.
const FEAT_BUILD_ID: u32 = 2;

/// One event attribute (`perf_event_attr`, the fields this reader uses).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    /// `type` (0 hardware, 1 software, 4 raw, …).
    pub kind: u32,
    /// `config`: which event.
    pub config: u64,
    /// Sample period, or frequency when `freq` is set.
    pub period: u64,
    /// Whether `period` is a frequency.
    pub freq: bool,
    /// Which fields each sample has.
    pub sample_type: u64,
    /// Layout of the `READ` field.
    pub read_format: u64,
    /// Whether non-sample records carry a sample-id trailer.
    pub sample_id_all: bool,
    /// What the branch stack holds (`HW_INDEX`, `COUNTERS` change its layout).
    pub branch_sample_type: u64,
    /// Registers in `REGS_USER`.
    pub sample_regs_user: u64,
    /// Registers in `REGS_INTR`.
    pub sample_regs_intr: u64,
    /// Event ids that belong to this attribute.
    pub ids: Vec<u64>,
}

impl Attr {
    /// Whether samples carry branch stacks.
    pub fn has_branch_stack(&self) -> bool {
        self.sample_type & S_BRANCH_STACK != 0
    }
}

/// Privilege of a sample or mapping (`misc & PERF_RECORD_MISC_CPUMODE_MASK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuMode {
    /// The kernel.
    Kernel,
    /// User space.
    User,
    /// A hypervisor, a guest, or unknown.
    Other,
}

impl CpuMode {
    fn of(misc: u16) -> CpuMode {
        match misc & MISC_CPUMODE_MASK {
            1 => CpuMode::Kernel,
            2 => CpuMode::User,
            _ => CpuMode::Other,
        }
    }
}

/// One branch-stack entry (`perf_branch_entry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Branch {
    /// Address of the branch.
    pub from: u64,
    /// Its target.
    pub to: u64,
    /// The hardware flagged it mispredicted.
    pub mispred: bool,
    /// The hardware flagged it predicted.
    pub predicted: bool,
    /// Cycles since the previous entry (0 when the hardware does not count them).
    pub cycles: u16,
    /// Branch type (`PERF_BR_*`, 0 unknown).
    pub kind: u8,
    /// Speculation outcome (`PERF_BR_SPEC_*`; 1 is the wrong path).
    pub spec: u8,
    /// The branch counters of kernel 6.8+ (`PERF_SAMPLE_BRANCH_COUNTERS`), when recorded.
    pub counters: Option<u64>,
}

/// One sample.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Index of its attribute in [`Reader::attrs`].
    pub attr: usize,
    /// Privilege it was taken in.
    pub mode: Option<CpuMode>,
    /// Instruction pointer.
    pub ip: Option<u64>,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time stamp.
    pub time: Option<u64>,
    /// Data address (`ADDR`, e.g. of a memory-access event).
    pub addr: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
    /// Period.
    pub period: Option<u64>,
    /// The LBR's hardware index, when recorded (`PERF_SAMPLE_BRANCH_HW_INDEX`).
    pub hw_idx: Option<u64>,
    /// The branch stack, newest first (as the hardware and `perf script` list it).
    pub branches: Vec<Branch>,
    /// The call chain (`perf record -g`), innermost first, as the kernel wrote it: its
    /// entries at or above [`CONTEXT_MAX`] are context markers (`PERF_CONTEXT_KERNEL`,
    /// `PERF_CONTEXT_USER`, …) saying whose addresses follow. Empty when not recorded.
    pub callchain: Vec<u64>,
}

/// The smallest context marker of a call chain (`PERF_CONTEXT_MAX`, -4095): entries at or
/// above it are markers, not addresses.
pub const CONTEXT_MAX: u64 = -4095i64 as u64;
/// Kernel addresses follow (`PERF_CONTEXT_KERNEL`).
pub const CONTEXT_KERNEL: u64 = -128i64 as u64;
/// User addresses follow (`PERF_CONTEXT_USER`).
pub const CONTEXT_USER: u64 = -512i64 as u64;
/// Most call-chain entries kept from one sample (the kernel's own limit,
/// `kernel.perf_event_max_stack`, defaults to 127); deeper chains keep their innermost.
pub const MAX_CALLCHAIN: usize = 1024;

/// A memory mapping (`MMAP` or `MMAP2`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mmap {
    /// Process id (`u32::MAX` for the kernel's).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// First address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Whether it maps code (not a data mapping; `PROT_EXEC` for `MMAP2`).
    pub exec: bool,
    /// The build-id carried in the record (`MMAP2` with `PERF_RECORD_MISC_MMAP_BUILD_ID`).
    pub build_id: Option<Vec<u8>>,
    /// The file (or `[vdso]`, `[kernel.kallsyms]…`).
    pub path: String,
}

/// A build-id from the file's build-id table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildId {
    /// Process id (-1 for the kernel).
    pub pid: i32,
    /// The id's bytes.
    pub id: Vec<u8>,
    /// The file it belongs to.
    pub path: String,
}

/// One record of the data section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A sample.
    Sample(Sample),
    /// A mapping.
    Mmap(Mmap),
    /// A process (or thread) named itself.
    Comm {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The name.
        name: String,
    },
    /// A thread or process started (`fork: true`) or ended.
    Task {
        /// Whether it started.
        fork: bool,
        /// Process id.
        pid: u32,
        /// Parent's process id.
        ppid: u32,
        /// Thread id.
        tid: u32,
    },
    /// The kernel lost `count` records.
    Lost {
        /// How many.
        count: u64,
    },
    /// A record this reader skips (its type).
    Other(u32),
}

/// Bounded little-endian field reads over one record's bytes; errors name the file offset.
struct Fields<'a> {
    b: &'a [u8],
    at: usize,
    base: u64,
}

impl<'a> Fields<'a> {
    fn new(b: &'a [u8], base: u64) -> Fields<'a> {
        Fields { b, at: 0, base }
    }
    fn offset(&self) -> u64 {
        self.base + self.at as u64
    }
    fn bytes(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            return Err(damaged(
                self.offset(),
                format!("{what} needs {n} bytes, the record has {left} left"),
            ));
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    /// A count of `size`-byte items that must fit in what is left and under `max`.
    fn count(&mut self, size: u64, max: u64, what: &str) -> Result<u64> {
        let at = self.offset();
        let n = self.u64(what)?;
        let left = (self.b.len() - self.at) as u64;
        if n > max || n.saturating_mul(size) > left {
            return Err(damaged(
                at,
                format!("{what} is {n}, more than the record holds ({left} bytes left)"),
            ));
        }
        Ok(n)
    }
    /// A NUL-terminated string (the rest of the record if there is no NUL).
    fn string(&mut self) -> String {
        let rest = &self.b[self.at..];
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.at = self.b.len();
        s
    }
}

/// Reads `n` bytes at `offset` of `src` (bounded by the caller).
fn read_at<R: Read + Seek>(src: &mut R, offset: u64, n: u64, buf: &mut Vec<u8>) -> Result<()> {
    src.seek(SeekFrom::Start(offset))
        .map_err(|error| Error::Io { offset, error })?;
    buf.clear();
    buf.resize(n as usize, 0);
    src.read_exact(buf).map_err(|source| match source.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            damaged(offset, format!("the file ends within {n} bytes read here"))
        }
        _ => Error::Io {
            offset,
            error: source,
        },
    })
}

fn section(f: &mut Fields<'_>, len: u64, what: &str) -> Result<(u64, u64)> {
    let at = f.offset();
    let offset = f.u64(what)?;
    let size = f.u64(what)?;
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok((offset, size)),
        _ => Err(damaged(
            at,
            format!("{what} section {offset:#x}+{size:#x} lies beyond the end of the file ({len:#x} bytes)"),
        )),
    }
}

/// A perf.data file being read.
pub struct Reader<R> {
    src: R,
    /// The attributes, in file order.
    pub attrs: Vec<Attr>,
    /// The build-id table (the feature section, or pipe mode's build-id records so far).
    pub build_ids: Vec<BuildId>,
    /// Whether the file is in pipe mode (`perf record -o -`).
    pub pipe: bool,
    by_id: FxHashMap<u64, usize>,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    /// Where `src` is now (`u64::MAX` when unknown): sequential records need no seek.
    cursor: u64,
    /// The time stamp of the last record returned, if it has one.
    time: Option<u64>,
}

impl<R: Read + Seek> Reader<R> {
    /// Reads the header, attributes and build-id table of a perf.data file of `len` bytes.
    pub fn new(mut src: R, len: u64) -> Result<Reader<R>> {
        let mut buf = Vec::new();
        if len < PIPE_HEADER_SIZE {
            return Err(damaged(
                0,
                format!("a perf.data file has at least 16 bytes, this has {len}"),
            ));
        }
        read_at(&mut src, 0, PIPE_HEADER_SIZE, &mut buf)?;
        let mut f = Fields::new(&buf, 0);
        let magic = f.u64("magic")?;
        let size = f.u64("header size")?;
        if magic == MAGIC_SWAPPED {
            return Err(Error::Unsupported {
                offset: 0,
                what: "a big-endian perf.data".into(),
            });
        }
        if magic != MAGIC {
            return Err(damaged(0, "not a perf.data file (no PERFILE2 magic)"));
        }
        let mut r = Reader {
            src,
            attrs: Vec::new(),
            build_ids: Vec::new(),
            pipe: false,
            by_id: FxHashMap::default(),
            pos: PIPE_HEADER_SIZE,
            end: len,
            buf: Vec::new(),
            cursor: u64::MAX,
            time: None,
        };
        if size == PIPE_HEADER_SIZE {
            r.pipe = true;
            return Ok(r);
        }
        if size != HEADER_SIZE {
            return Err(damaged(
                8,
                format!("header size {size}, expected 104 or 16"),
            ));
        }
        if len < HEADER_SIZE {
            return Err(damaged(16, "the file ends inside its header"));
        }
        read_at(&mut r.src, 0, HEADER_SIZE, &mut buf)?;
        let mut f = Fields::new(&buf, 0);
        f.bytes(16, "magic")?;
        let attr_size = f.u64("attribute size")?;
        let (attrs_off, attrs_size) = section(&mut f, len, "attributes")?;
        let (data_off, data_size) = section(&mut f, len, "data")?;
        section(&mut f, len, "event types")?;
        let mut features = [0u64; 4];
        for w in &mut features {
            *w = f.u64("feature bits")?;
        }
        if !(16 + 64..=16 + 4096).contains(&attr_size) {
            return Err(damaged(
                16,
                format!("attribute size {attr_size} is out of range"),
            ));
        }
        let n = attrs_size / attr_size;
        if n > MAX_ATTRS || attrs_size % attr_size != 0 {
            return Err(damaged(
                24,
                format!("attributes section of {attrs_size} bytes is not a whole number (≤ {MAX_ATTRS}) of {attr_size}-byte entries"),
            ));
        }
        let mut all = Vec::new();
        read_at(&mut r.src, attrs_off, attrs_size, &mut all)?;
        let mut total_ids = 0u64;
        for i in 0..n {
            let at = attrs_off + i * attr_size;
            let entry = &all[(i * attr_size) as usize..((i + 1) * attr_size) as usize];
            let mut attr = parse_attr(&entry[..(attr_size - 16) as usize], at)?;
            let mut f = Fields::new(&entry[(attr_size - 16) as usize..], at + attr_size - 16);
            let (ids_off, ids_size) = section(&mut f, len, "event ids")?;
            total_ids += ids_size / 8;
            if total_ids > MAX_IDS {
                return Err(damaged(at, format!("more than {MAX_IDS} event ids")));
            }
            read_at(&mut r.src, ids_off, ids_size / 8 * 8, &mut buf)?;
            attr.ids = buf
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            r.add_attr(attr);
        }
        r.pos = data_off;
        r.end = data_off + data_size;
        r.cursor = u64::MAX;
        // the feature sections follow the data section, one per set bit in order
        if features[0] & (1 << FEAT_BUILD_ID) != 0 {
            let index = u64::from((features[0] & ((1 << FEAT_BUILD_ID) - 1)).count_ones());
            let table = r.end;
            let at = table + index * 16;
            if at + 16 <= len {
                read_at(&mut r.src, at, 16, &mut buf)?;
                let mut f = Fields::new(&buf, at);
                let (off, size) = section(&mut f, len, "build-id feature")?;
                if size > MAX_FEATURE_BYTES {
                    return Err(damaged(at, format!("build-id section of {size} bytes")));
                }
                let mut bytes = Vec::new();
                read_at(&mut r.src, off, size, &mut bytes)?;
                let mut p = 0usize;
                while p + 8 <= bytes.len() {
                    let h = &bytes[p..];
                    let misc = u16::from_le_bytes([h[4], h[5]]);
                    let rsize = usize::from(u16::from_le_bytes([h[6], h[7]]));
                    if rsize < 8 || p + rsize > bytes.len() {
                        return Err(damaged(
                            off + p as u64,
                            format!("build-id record of {rsize} bytes"),
                        ));
                    }
                    r.build_ids.push(parse_build_id(
                        &bytes[p + 8..p + rsize],
                        misc,
                        off + p as u64 + 8,
                    )?);
                    p += rsize;
                }
            }
        }
        if r.attrs.is_empty() {
            return Err(damaged(24, "the file declares no event attributes"));
        }
        Ok(r)
    }

    fn add_attr(&mut self, attr: Attr) {
        let i = self.attrs.len();
        for &id in &attr.ids {
            self.by_id.insert(id, i);
        }
        self.attrs.push(attr);
    }

    /// The next record and its byte offset, or `None` at the end of the data section.
    pub fn next_event(&mut self) -> Result<Option<(u64, Event)>> {
        loop {
            if self.pos + 8 > self.end {
                if self.pos < self.end {
                    return Err(damaged(
                        self.pos,
                        "the data section ends inside a record header",
                    ));
                }
                return Ok(None);
            }
            let at = self.pos;
            let mut head = [0u8; 8];
            if self.cursor != at {
                self.src
                    .seek(SeekFrom::Start(at))
                    .map_err(|error| Error::Io { offset: at, error })?;
            }
            self.src
                .read_exact(&mut head)
                .map_err(|error| Error::Io { offset: at, error })?;
            self.cursor = at + 8;
            let kind = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let misc = u16::from_le_bytes([head[4], head[5]]);
            let size = u64::from(u16::from_le_bytes([head[6], head[7]]));
            if size < 8 {
                return Err(damaged(
                    at,
                    format!("record of type {kind} has size {size}"),
                ));
            }
            if at + size > self.end {
                return Err(damaged(
                    at,
                    format!("record of type {kind} and {size} bytes runs past the end of the data ({:#x})", self.end),
                ));
            }
            let mut body = std::mem::take(&mut self.buf);
            body.clear();
            body.resize((size - 8) as usize, 0);
            self.src.read_exact(&mut body).map_err(|error| Error::Io {
                offset: at + 8,
                error,
            })?;
            self.cursor = at + size;
            self.pos = at + size;
            let ev = self.parse(kind, misc, &body, at + 8);
            self.time = match &ev {
                Ok(Some(Event::Sample(s))) => s.time,
                _ => self.trailer_time(kind, &body),
            };
            self.buf = body;
            match ev? {
                Some(e) => return Ok(Some((at, e))),
                None => continue,
            }
        }
    }

    /// The time stamp of the last record [`Reader::next_event`] returned: a sample's, or
    /// the `sample_id` trailer's of another record (`sample_id_all`), if it has one.
    pub fn last_time(&self) -> Option<u64> {
        self.time
    }

    /// The time in the `sample_id` trailer of a non-sample record (kernel records only; perf's
    /// own records, type 64 and up, have none).
    fn trailer_time(&self, kind: u32, body: &[u8]) -> Option<u64> {
        let a = self.attrs.first()?;
        let st = a.sample_type;
        if !a.sample_id_all || st & S_TIME == 0 || kind == REC_SAMPLE || kind >= 64 {
            return None;
        }
        let words = [S_TID, S_TIME, S_ID, S_STREAM_ID, S_CPU, S_IDENTIFIER]
            .iter()
            .filter(|&&b| st & b != 0)
            .count();
        let at = body.len().checked_sub(words * 8)? + if st & S_TID != 0 { 8 } else { 0 };
        body.get(at..at + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
    }

    fn parse(&mut self, kind: u32, misc: u16, body: &[u8], base: u64) -> Result<Option<Event>> {
        let mut f = Fields::new(body, base);
        Ok(Some(match kind {
            REC_SAMPLE => Event::Sample(self.sample(&mut f, misc)?),
            REC_MMAP | REC_MMAP2 => {
                let mut m = Mmap {
                    pid: f.u32("pid")?,
                    tid: f.u32("tid")?,
                    start: f.u64("address")?,
                    len: f.u64("length")?,
                    pgoff: f.u64("file offset")?,
                    exec: misc & MISC_MMAP_DATA == 0,
                    ..Mmap::default()
                };
                if kind == REC_MMAP2 {
                    if misc & MISC_MMAP_BUILD_ID != 0 {
                        let n = f.bytes(4, "build-id size")?[0];
                        let id = f.bytes(20, "build-id")?;
                        m.build_id = Some(id[..usize::from(n.min(20))].to_vec());
                    } else {
                        f.bytes(24, "device and inode")?;
                    }
                    let prot = f.u32("protection")?;
                    f.u32("flags")?;
                    m.exec &= prot & 4 != 0;
                }
                m.path = f.string();
                Event::Mmap(m)
            }
            REC_COMM => Event::Comm {
                pid: f.u32("pid")?,
                tid: f.u32("tid")?,
                name: f.string(),
            },
            REC_FORK | REC_EXIT => {
                let pid = f.u32("pid")?;
                let ppid = f.u32("ppid")?;
                let tid = f.u32("tid")?;
                Event::Task {
                    fork: kind == REC_FORK,
                    pid,
                    ppid,
                    tid,
                }
            }
            REC_LOST => {
                f.u64("id")?;
                Event::Lost {
                    count: f.u64("lost")?,
                }
            }
            REC_HEADER_ATTR => {
                let at = f.offset();
                if body.len() < 8 {
                    return Err(damaged(at, "attribute record too short"));
                }
                let size = u64::from(u32::from_le_bytes(body[4..8].try_into().expect("4 bytes")));
                let size = if size == 0 { 64 } else { size };
                let raw = f.bytes(size, "attribute")?;
                let mut attr = parse_attr(raw, at)?;
                let rest = &body[size as usize..];
                if (self.by_id.len() + rest.len() / 8) as u64 > MAX_IDS
                    || self.attrs.len() as u64 >= MAX_ATTRS
                {
                    return Err(damaged(at, "too many event attributes or ids"));
                }
                attr.ids = rest
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                self.add_attr(attr);
                return Ok(None);
            }
            REC_HEADER_BUILD_ID => {
                if self.build_ids.len() < 1 << 16 {
                    self.build_ids.push(parse_build_id(body, misc, base)?);
                }
                return Ok(None);
            }
            REC_AUXTRACE => {
                // the trace data follows the record; skip it
                let n = f.u64("aux size")?;
                match self.pos.checked_add(n) {
                    Some(p) if p <= self.end => self.pos = p,
                    _ => {
                        return Err(damaged(
                            base,
                            format!("AUX trace of {n} bytes runs past the end of the data"),
                        ))
                    }
                }
                Event::Other(kind)
            }
            REC_COMPRESSED => return Err(Error::Unsupported {
                offset: base - 8,
                what:
                    "a compressed record (perf record -z; convert with `perf inject -i IN -o OUT`)"
                        .into(),
            }),
            k => Event::Other(k),
        }))
    }

    fn sample(&self, f: &mut Fields<'_>, misc: u16) -> Result<Sample> {
        let attr = self.attr_of(f)?;
        let a = &self.attrs[attr];
        let st = a.sample_type;
        if st & !S_KNOWN != 0 {
            return Err(Error::Unsupported {
                offset: f.offset(),
                what: format!("sample_type {st:#x} (fields after WEIGHT_STRUCT)"),
            });
        }
        let mut s = Sample {
            attr,
            mode: Some(CpuMode::of(misc)),
            ..Sample::default()
        };
        if st & S_IDENTIFIER != 0 {
            f.u64("identifier")?;
        }
        if st & S_IP != 0 {
            s.ip = Some(f.u64("ip")?);
        }
        if st & S_TID != 0 {
            s.pid = f.u32("pid")?;
            s.tid = f.u32("tid")?;
        }
        if st & S_TIME != 0 {
            s.time = Some(f.u64("time")?);
        }
        if st & S_ADDR != 0 {
            s.addr = Some(f.u64("addr")?);
        }
        if st & S_ID != 0 {
            f.u64("id")?;
        }
        if st & S_STREAM_ID != 0 {
            f.u64("stream id")?;
        }
        if st & S_CPU != 0 {
            s.cpu = Some(f.u32("cpu")?);
            f.u32("reserved")?;
        }
        if st & S_PERIOD != 0 {
            s.period = Some(f.u64("period")?);
        }
        if st & S_READ != 0 {
            skip_read(f, a.read_format)?;
        }
        if st & S_CALLCHAIN != 0 {
            let n = f.count(8, 1 << 16, "call chain length")?;
            let chain = f.bytes(n * 8, "call chain")?;
            s.callchain = chain
                .chunks_exact(8)
                .take(MAX_CALLCHAIN)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect();
        }
        if st & S_RAW != 0 {
            let n = u64::from(f.u32("raw size")?);
            f.bytes(n, "raw data")?;
        }
        if st & S_BRANCH_STACK != 0 {
            branch_stack(f, a, &mut s)?;
        }
        skip_tail(f, a, st)?;
        Ok(s)
    }

    /// Which event attribute a sample belongs to: the only one, or the one its id names.
    fn attr_of(&self, f: &Fields<'_>) -> Result<usize> {
        let first = self
            .attrs
            .first()
            .ok_or_else(|| damaged(f.offset(), "a sample before any event attribute"))?;
        let st = first.sample_type;
        let attr = if self.attrs.len() == 1 {
            0
        } else {
            let id = sample_id(f.b, st).ok_or_else(|| {
                damaged(
                    f.offset(),
                    "several event attributes but samples carry no id (ID or IDENTIFIER)",
                )
            })?;
            *self.by_id.get(&id).ok_or_else(|| {
                damaged(
                    f.offset(),
                    format!("sample of event id {id}, which no attribute declares"),
                )
            })?
        };
        Ok(attr)
    }
}

/// Skips a sample's counter values (`READ`), as `read_format` lays them out.
fn skip_read(f: &mut Fields<'_>, rf: u64) -> Result<()> {
    let per = 1 + u64::from(rf & R_ID != 0) + u64::from(rf & R_LOST != 0);
    let times =
        u64::from(rf & R_TOTAL_TIME_ENABLED != 0) + u64::from(rf & R_TOTAL_TIME_RUNNING != 0);
    if rf & R_GROUP != 0 {
        let at = f.offset();
        let nr = f.u64("read group size")?;
        f.bytes(times * 8, "read times")?;
        if nr > 4096 {
            return Err(damaged(at, format!("read group of {nr} events")));
        }
        f.bytes(nr * per * 8, "read values")?;
    } else {
        f.bytes((per + times) * 8, "read value")?;
    }
    Ok(())
}

/// A sample's branch stack (LBR, BRBE): each entry's from, to and flags, with counters when
/// the attribute asks for them.
fn branch_stack(f: &mut Fields<'_>, a: &Attr, s: &mut Sample) -> Result<()> {
    let nr = f.count(24, MAX_BRANCHES, "branch stack size")?;
    if a.branch_sample_type & B_HW_INDEX != 0 {
        s.hw_idx = Some(f.u64("hw_idx")?);
    }
    s.branches.reserve(nr as usize);
    for _ in 0..nr {
        let from = f.u64("branch from")?;
        let to = f.u64("branch to")?;
        let flags = f.u64("branch flags")?;
        s.branches.push(Branch {
            from,
            to,
            mispred: flags & 1 != 0,
            predicted: flags & 2 != 0,
            cycles: ((flags >> 4) & 0xffff) as u16,
            kind: ((flags >> 20) & 0xf) as u8,
            spec: ((flags >> 24) & 0x3) as u8,
            counters: None,
        });
    }
    if a.branch_sample_type & B_COUNTERS != 0 {
        for b in &mut s.branches {
            b.counters = Some(f.u64("branch counters")?);
        }
    }
    Ok(())
}

/// Skips the fields after the branch stack that the importer does not read, as
/// `sample_type` lays them out.
fn skip_tail(f: &mut Fields<'_>, a: &Attr, st: u64) -> Result<()> {
    if st & S_REGS_USER != 0 {
        let abi = f.u64("user regs abi")?;
        if abi != 0 {
            f.bytes(u64::from(a.sample_regs_user.count_ones()) * 8, "user regs")?;
        }
    }
    if st & S_STACK_USER != 0 {
        let n = f.u64("user stack size")?;
        f.bytes(n, "user stack")?;
        if n != 0 {
            f.u64("user stack dynamic size")?;
        }
    }
    if st & (S_WEIGHT | S_WEIGHT_STRUCT) != 0 {
        f.u64("weight")?;
    }
    if st & S_DATA_SRC != 0 {
        f.u64("data source")?;
    }
    if st & S_TRANSACTION != 0 {
        f.u64("transaction")?;
    }
    if st & S_REGS_INTR != 0 {
        let abi = f.u64("interrupt regs abi")?;
        if abi != 0 {
            f.bytes(
                u64::from(a.sample_regs_intr.count_ones()) * 8,
                "interrupt regs",
            )?;
        }
    }
    if st & S_PHYS_ADDR != 0 {
        f.u64("physical address")?;
    }
    if st & S_CGROUP != 0 {
        f.u64("cgroup")?;
    }
    if st & S_DATA_PAGE_SIZE != 0 {
        f.u64("data page size")?;
    }
    if st & S_CODE_PAGE_SIZE != 0 {
        f.u64("code page size")?;
    }
    if st & S_AUX != 0 {
        let n = f.u64("aux size")?;
        f.bytes(n, "aux data")?;
    }
    Ok(())
}

/// The event id of a sample record's body, if its layout has one.
fn sample_id(b: &[u8], st: u64) -> Option<u64> {
    let word = |i: usize| {
        b.get(i * 8..i * 8 + 8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
    };
    if st & S_IDENTIFIER != 0 {
        return word(0);
    }
    if st & S_ID == 0 {
        return None;
    }
    let before = [S_IP, S_TID, S_TIME, S_ADDR]
        .iter()
        .filter(|&&bit| st & bit != 0)
        .count();
    word(before)
}

fn parse_attr(raw: &[u8], at: u64) -> Result<Attr> {
    let mut f = Fields::new(raw, at);
    let kind = f.u32("attribute type")?;
    f.u32("attribute size")?;
    let config = f.u64("config")?;
    let period = f.u64("sample period")?;
    let sample_type = f.u64("sample type")?;
    let read_format = f.u64("read format")?;
    let flags = f.u64("attribute flags")?;
    let field = |off: usize| {
        raw.get(off..off + 8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .unwrap_or(0)
    };
    Ok(Attr {
        kind,
        config,
        period,
        freq: flags & (1 << 10) != 0,
        sample_type,
        read_format,
        sample_id_all: flags & (1 << 18) != 0,
        branch_sample_type: field(72),
        sample_regs_user: field(80),
        sample_regs_intr: field(96),
        ids: Vec::new(),
    })
}

fn parse_build_id(body: &[u8], misc: u16, at: u64) -> Result<BuildId> {
    let mut f = Fields::new(body, at);
    let pid = f.u32("build-id pid")? as i32;
    let raw = f.bytes(24, "build-id")?;
    let n = if misc & MISC_BUILD_ID_SIZE != 0 {
        usize::from(raw[20].min(20))
    } else {
        20
    };
    Ok(BuildId {
        pid,
        id: raw[..n].to_vec(),
        path: f.string(),
    })
}
