//! Source lines for code addresses, from the DWARF line tables of an ELF file (via the
//! `addr2line` crate).
//!
//! A program built with `-g` (any level that emits `.debug_line`) gets its instructions
//! attributed to file and line; code without line information (a libc built without `-g`)
//! stays unattributed. Compressed debug sections (`SHF_COMPRESSED`) are read when their
//! declared size is at most [`MAX_SECTION`]; larger sections are refused before anything is
//! allocated.

use object::{Object, ObjectSection};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::rc::Rc;

/// Most inlined calls kept around one instruction (a deeper chain keeps its innermost).
pub const MAX_INLINE_DEPTH: usize = 64;

/// Largest debug section read (after decompression): 256 MiB.
pub const MAX_SECTION: u64 = 256 << 20;

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// A source location: an interned file (see [`LineTable::file_name`]) and a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    /// File index.
    pub file: u32,
    /// Line (0 when the line table gives none).
    pub line: u32,
}

/// Why a file's line table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not an ELF file object can parse.
    #[error("not a readable ELF file: {0}")]
    Elf(String),
    /// A debug section is larger than [`MAX_SECTION`].
    #[error("debug section {name} is {size} bytes (at most {max} are read)")]
    TooLarge {
        /// Section name.
        name: String,
        /// Its declared (uncompressed) size.
        size: u64,
        /// [`MAX_SECTION`].
        max: u64,
    },
    /// The DWARF data is malformed.
    #[error("malformed DWARF: {0}")]
    Dwarf(String),
}

/// The line tables of one program.
pub struct LineTable {
    ctx: addr2line::Context<Reader>,
    /// Subtracted from an address of the program as loaded to get its link-time address
    /// (the load base of a position-independent program, 0 otherwise).
    base: u64,
    /// Other objects loaded with the program (shared libraries with DWARF): `[lo, hi)`, their
    /// lines and their load bias. Looked up first, newest first.
    parts: Vec<(u64, u64, addr2line::Context<Reader>, u64)>,
    files: Vec<String>,
    file_ids: FxHashMap<String, u32>,
}

impl LineTable {
    /// The line tables of the ELF file `data`, or `None` when it has no `.debug_line`.
    /// Addresses passed to [`LineTable::locate`] are where the machine loads the program
    /// (link-time addresses, plus [`outcrop_rv::elf::PIE_BASE`] for a RISC-V `ET_DYN`; other
    /// ISAs' programs are never loaded and keep their link-time addresses).
    pub fn from_elf(data: &[u8]) -> Result<Option<LineTable>, Error> {
        let file = object::File::parse(data).map_err(|e| Error::Elf(e.to_string()))?;
        let base = if file.kind() == object::ObjectKind::Dynamic
            && file.architecture() == object::Architecture::Riscv64
        {
            outcrop_rv::elf::PIE_BASE
        } else {
            0
        };
        LineTable::from_elf_at(data, base)
    }

    /// The line table of an object loaded `base` bytes above its link-time addresses (a
    /// shared library where the machine mapped it); `None` without `.debug_line`.
    pub fn from_elf_at(data: &[u8], base: u64) -> Result<Option<LineTable>, Error> {
        let file = object::File::parse(data).map_err(|e| Error::Elf(e.to_string()))?;
        if file.section_by_name(".debug_line").is_none() {
            return Ok(None);
        }
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let mut too_large = None;
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let bytes: Cow<[u8]> = match file.section_by_name(id.name()) {
                Some(s) => {
                    let size = s
                        .compressed_file_range()
                        .map(|r| r.uncompressed_size)
                        .unwrap_or(u64::MAX);
                    if size > MAX_SECTION {
                        too_large.get_or_insert((id.name().to_string(), size));
                        Cow::Borrowed(&[])
                    } else {
                        s.uncompressed_data().unwrap_or(Cow::Borrowed(&[]))
                    }
                }
                None => Cow::Borrowed(&[]),
            };
            Ok(gimli::EndianRcSlice::new(Rc::from(&*bytes), endian))
        };
        let dwarf = gimli::Dwarf::load(load).map_err(|e| Error::Dwarf(e.to_string()))?;
        if let Some((name, size)) = too_large {
            return Err(Error::TooLarge {
                name,
                size,
                max: MAX_SECTION,
            });
        }
        let ctx = addr2line::Context::from_dwarf(dwarf).map_err(|e| Error::Dwarf(e.to_string()))?;
        Ok(Some(LineTable {
            ctx,
            base,
            parts: Vec::new(),
            files: Vec::new(),
            file_ids: FxHashMap::default(),
        }))
    }

    /// Adds the lines of another object loaded at `[lo, hi)` (a shared library's table, made
    /// with [`LineTable::from_elf_at`] at its load bias): addresses there are looked up in it.
    pub fn add_object(&mut self, other: LineTable, lo: u64, hi: u64) {
        self.parts.push((lo, hi, other.ctx, other.base));
        self.parts.extend(other.parts);
    }

    /// The source location of the instruction at `pc`, if the line tables cover it.
    pub fn locate(&mut self, pc: u64) -> Option<Loc> {
        // a shared object's lines where it lies
        let (ctx, base) = match self.parts.iter().rev().find(|p| pc >= p.0 && pc < p.1) {
            Some(p) => (&p.2, p.3),
            None => (&self.ctx, self.base),
        };
        // below a position-independent program's base is not the program (and would wrap);
        // the last address cannot start an instruction, and addr2line's lookup of it
        // overflows (`probe + 1`; found by fuzzing, `tests/it/lines.rs`)
        let addr = pc.checked_sub(base).filter(|&a| a < u64::MAX)?;
        let loc = ctx.find_location(addr).ok()??;
        let file = loc.file?;
        let id = match self.file_ids.get(file) {
            Some(&id) => id,
            None => {
                let id = self.files.len() as u32;
                // shown to people and written to exports: control characters kept escaped
                self.files
                    .push(outcrop_events::escape::terminal(file).into_owned());
                self.file_ids.insert(file.to_string(), id);
                id
            }
        };
        Some(Loc {
            file: id,
            line: loc.line.unwrap_or(0),
        })
    }

    /// The inlined calls the instruction at `pc` lies in (DWARF's
    /// `DW_TAG_inlined_subroutine`), outermost first, by name (demangled unless `mangled`);
    /// empty when it lies in none. At most [`MAX_INLINE_DEPTH`] are kept (the innermost).
    pub fn inlined_at(&mut self, pc: u64, mangled: bool) -> Vec<String> {
        let (ctx, base) = match self.parts.iter().rev().find(|p| pc >= p.0 && pc < p.1) {
            Some(p) => (&p.2, p.3),
            None => (&self.ctx, self.base),
        };
        let Some(addr) = pc.checked_sub(base).filter(|&a| a < u64::MAX) else {
            return Vec::new();
        };
        let Ok(mut frames) = ctx.find_frames(addr).skip_all_loads() else {
            return Vec::new();
        };
        let mut names = Vec::new();
        // innermost first; the last frame is the function itself, not an inlined call
        while let Ok(Some(f)) = frames.next() {
            let name = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok().map(|r| r.into_owned()))
                .unwrap_or_else(|| "[unknown]".into());
            let shown = if mangled {
                name
            } else {
                outcrop_rv::demangle::demangle(name.as_bytes()).unwrap_or(name)
            };
            names.push(outcrop_events::escape::terminal(&shown).into_owned());
            if names.len() > MAX_INLINE_DEPTH {
                break;
            }
        }
        names.pop();
        names.truncate(MAX_INLINE_DEPTH);
        names.reverse();
        names
    }

    /// The name of interned file `id` (empty for an unknown id).
    pub fn file_name(&self, id: u32) -> &str {
        self.files.get(id as usize).map_or("", |s| s.as_str())
    }
}
