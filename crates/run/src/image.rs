//! The program, read once: its bytes and every view of them a run and its report need
//! (function symbols, program id, profile tags, source lines, code bytes by address).
//!
//! Every command, the composed run and the studies read a program through
//! [`ProgramImage::read`] and hand the one image to everything that needs it, so that one run
//! opens the file once and parses each view at most once ([`ProgramImage::parses`] counts
//! them; a test holds the composed run to it).

use crate::files::{read_bounded, MAX_PROGRAM_BYTES};
use crate::objects::Naming;
use crate::{Error, Result};
use outcrop_profile::lines::LineTable;
use outcrop_rv::elf::FileSegment;
use outcrop_rv::symbols::{Names, Symbols};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// How many times each view of an image was made from its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseCounts {
    /// Reads of the file (1 for an image read from a path, 0 for one made from bytes).
    pub reads: u32,
    /// Symbol tables built.
    pub symbols: u32,
    /// Program ids computed.
    pub program_id: u32,
    /// Profile-tag sections read.
    pub tags: u32,
    /// DWARF line tables built.
    pub lines: u32,
    /// Machines loaded from the image (one per run).
    pub loads: u32,
    /// Data-symbol lookups (`--gc-heap`).
    pub data_symbols: u32,
}

#[derive(Default)]
struct Counters {
    reads: AtomicU32,
    symbols: AtomicU32,
    program_id: AtomicU32,
    tags: AtomicU32,
    lines: AtomicU32,
    loads: AtomicU32,
    data_symbols: AtomicU32,
}

fn bump(c: &AtomicU32) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A program's bytes and its views, each made once.
pub struct ProgramImage {
    path: PathBuf,
    bytes: Vec<u8>,
    symbols: OnceLock<std::result::Result<Symbols, String>>,
    program_id: OnceLock<std::result::Result<String, String>>,
    segments: Vec<FileSegment>,
    tags: OnceLock<std::result::Result<Vec<(u64, u64)>, String>>,
    naming: Naming,
    /// Its separate debug file, looked for on first use (`None`: none found).
    debug: OnceLock<Option<Vec<u8>>>,
    counts: Counters,
}

impl std::fmt::Debug for ProgramImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramImage")
            .field("path", &self.path)
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

impl ProgramImage {
    /// Reads the program at `path` (bounded by [`MAX_PROGRAM_BYTES`]; FIFOs and devices
    /// refused). Its views are made when first asked for, so a run that needs none (a bare
    /// `exec`) pays for none: no symbol table, no hash of a large program's code.
    pub fn read(path: &Path) -> Result<ProgramImage> {
        let bytes = read_bounded(path, "program", MAX_PROGRAM_BYTES)?;
        let image = ProgramImage::from_bytes(path, bytes)?;
        bump(&image.counts.reads);
        Ok(image)
    }

    /// The image of `bytes`, the program at `path`. A file that is not a loadable ELF
    /// program is refused by the loader (and by each view), with what is wrong.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<ProgramImage> {
        // a malformed segment is the loader's to report, with its own message
        let segments = outcrop_rv::elf::file_segments(&bytes).unwrap_or_default();
        Ok(ProgramImage {
            path: path.to_path_buf(),
            bytes,
            symbols: OnceLock::new(),
            program_id: OnceLock::new(),
            segments,
            tags: OnceLock::new(),
            naming: Naming::default(),
            debug: OnceLock::new(),
            counts: Counters::default(),
        })
    }

    /// Names its functions (and its objects') as `names` says (`--no-demangle`); set before
    /// the first use of [`ProgramImage::symbols`].
    pub fn with_names(mut self, names: Names) -> ProgramImage {
        self.naming.names = names;
        self
    }

    /// Names its code (and its objects') as `naming` says: demangled or not, and with the
    /// debug files found in its directories. Set before the first use of any view.
    pub fn with_naming(mut self, naming: Naming) -> ProgramImage {
        self.naming = naming;
        self
    }

    /// How its functions (and those of the objects it maps) are named.
    pub fn names(&self) -> Names {
        self.naming.names
    }

    /// How its code and its objects' are named.
    pub fn naming(&self) -> &Naming {
        &self.naming
    }

    /// Its separate debug file's bytes (`.gnu_debuglink` or build-id; [`crate::debuginfo`]),
    /// looked for once.
    pub fn debug_file(&self) -> Option<&[u8]> {
        self.debug
            .get_or_init(|| {
                let host = std::path::absolute(&self.path).ok();
                self.naming
                    .debug
                    .find(&self.bytes, host.as_deref())
                    .map(|(_, d)| d)
            })
            .as_deref()
    }

    /// The path it was read from, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as reports print it.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its function symbols, or why there are none (a stripped program: profiles then put
    /// everything in `[unknown]`).
    pub fn symbols(&self) -> std::result::Result<&Symbols, &str> {
        self.symbols
            .get_or_init(|| {
                bump(&self.counts.symbols);
                let own = Symbols::from_elf(&self.bytes).map_err(|e| e.to_string());
                // a stripped program's functions, from its debug file
                let debug = self
                    .debug_file()
                    .and_then(|d| Symbols::from_elf(d).ok())
                    .filter(|d| d.len() > own.as_ref().map_or(0, Symbols::len));
                debug
                    .map_or(own, Ok)
                    .map(|s| s.with_names(self.naming.names))
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// What identifies its code (`build-id:…` or `sha256:…`; `outcrop_rv::elf::program_id`),
    /// computed on first use (a program without a build-id is hashed).
    pub fn program_id(&self) -> Result<&str> {
        self.program_id
            .get_or_init(|| {
                bump(&self.counts.program_id);
                outcrop_rv::elf::program_id(&self.bytes).map_err(|e| e.to_string())
            })
            .as_deref()
            .map_err(|e| Error::Config(format!("{}: program id: {e}", self.path.display())))
    }

    /// The profile tags the program recorded (`outcrop_tags` section; RPA §3.3), read on
    /// first use.
    pub fn tags(&self) -> std::result::Result<&[(u64, u64)], String> {
        self.tags
            .get_or_init(|| {
                bump(&self.counts.tags);
                outcrop_rv::sections::profile_tags(&self.bytes).map_err(|e| e.to_string())
            })
            .as_ref()
            .map(Vec::as_slice)
            .map_err(|e| format!("reading the program's profile tags: {e}"))
    }

    /// The data symbol `name`'s address and size.
    pub fn data_symbol(&self, name: &str) -> std::result::Result<Option<(u64, u64)>, String> {
        bump(&self.counts.data_symbols);
        outcrop_rv::sections::symbol(&self.bytes, name).map_err(|e| e.to_string())
    }

    /// Its DWARF line tables (`None`: built without `-g`). Built on each call: a run's report
    /// asks once.
    pub fn line_table(&self) -> std::result::Result<Option<LineTable>, String> {
        bump(&self.counts.lines);
        if !crate::debuginfo::has_contents(&self.bytes, ".debug_line") {
            if let Some(d) = self.debug_file() {
                return LineTable::from_elf(d).map_err(|e| e.to_string());
            }
        }
        LineTable::from_elf(&self.bytes).map_err(|e| e.to_string())
    }

    /// Records that a machine was loaded from the image ([`crate::program::load_image`]).
    pub(crate) fn count_load(&self) {
        bump(&self.counts.loads);
    }

    /// How many times each view was made so far.
    pub fn parses(&self) -> ParseCounts {
        let c = &self.counts;
        let get = |a: &AtomicU32| a.load(Ordering::Relaxed);
        ParseCounts {
            reads: get(&c.reads),
            symbols: get(&c.symbols),
            program_id: get(&c.program_id),
            tags: get(&c.tags),
            lines: get(&c.lines),
            loads: get(&c.loads),
            data_symbols: get(&c.data_symbols),
        }
    }

    /// Up to `out.len()` bytes of the loaded image at `addr`, from the file (zero-filled
    /// memory and unmapped addresses give fewer): how many were copied.
    pub fn read_code(&self, addr: u64, out: &mut [u8]) -> usize {
        let Some(s) = self
            .segments
            .iter()
            .find(|s| addr >= s.start && addr - s.start < s.file_size)
        else {
            return 0;
        };
        let within = addr - s.start;
        let n = (s.file_size - within).min(out.len() as u64) as usize;
        let from = (s.file_offset + within) as usize;
        match self.bytes.get(from..from + n) {
            Some(b) => {
                out[..n].copy_from_slice(b);
                n
            }
            None => 0,
        }
    }

    /// The instruction at `pc`, decoded (`None`: not in the file's code).
    pub fn instruction(&self, pc: u64) -> Option<outcrop_rv::inst::Inst> {
        // only RISC-V code decodes as RISC-V (an imported x86-64 program has none)
        if self.bytes.get(18..20) != Some(&243u16.to_le_bytes()[..]) {
            return None;
        }
        let mut b = [0u8; 4];
        let n = self.read_code(pc, &mut b);
        if n < 2 {
            return None;
        }
        let lo16 = u16::from_le_bytes([b[0], b[1]]);
        let hi16 = u16::from_le_bytes([b[2], b[3]]);
        let inst = outcrop_rv::inst::decode(lo16, hi16);
        (n >= usize::from(inst.len)).then_some(inst)
    }

    /// The function containing `addr`, if the symbol table says.
    pub fn function(&self, addr: u64) -> Option<String> {
        self.symbols().ok()?.lookup(addr).map(|f| f.to_string())
    }

    /// The taken target and the fall-through address of the conditional branch at `pc`
    /// (`None` if it is not one, or not in the file's code).
    pub fn branch_targets(&self, pc: u64) -> Option<(u64, u64)> {
        let inst = self.instruction(pc)?;
        (inst.class() == outcrop_rv::inst::Class::Branch).then(|| {
            (
                pc.wrapping_add(inst.imm as i64 as u64),
                pc.wrapping_add(u64::from(inst.len)),
            )
        })
    }

    /// `insns` instructions from `addr` (at most 64) as `pc: assembly` lines, direct targets
    /// named by function; an address outside the file's code ends the list with
    /// `<not mapped>`.
    pub fn disassemble(&self, addr: u64, insns: u32) -> Vec<String> {
        let mut dis = Vec::new();
        let mut pc = addr;
        for _ in 0..insns.min(64) {
            let Some(inst) = self.instruction(pc) else {
                dis.push(format!("{pc:#x}: <not mapped>"));
                break;
            };
            let direct = inst.op == outcrop_rv::inst::Op::Jal
                || inst.class() == outcrop_rv::inst::Class::Branch;
            let target = pc.wrapping_add(inst.imm as i64 as u64);
            match self.function(target).filter(|_| direct) {
                Some(f) => dis.push(format!("{pc:#x}: {inst}  <{f}>")),
                None => dis.push(format!("{pc:#x}: {inst}")),
            }
            pc = pc.wrapping_add(u64::from(inst.len));
        }
        dis
    }
}
