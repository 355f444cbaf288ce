//! Function names for code addresses, read from an ELF symbol table.
//!
//! The bundled workloads are static RV64 programs stripped of debug information but with
//! `.symtab` kept, so the symbol table is all there is: [`Symbols::from_elf`] turns it into a
//! sorted list of functions, [`Symbols::lookup`] names an address, [`Symbols::describe_range`]
//! labels a hot code range for a report, and [`Symbols::functions`] gives the function
//! boundaries a control-flow-graph builder starts from.
//!
//! # Which symbols become functions
//! * Only symbols defined in an allocated, executable section (`SHF_ALLOC | SHF_EXECINSTR`),
//!   whose address lies inside that section, are read. `.symtab` is used; `.dynsym` only when
//!   there is no `.symtab`. A file with neither gives an empty [`Symbols`], not an error.
//! * `STT_FUNC` and `STT_GNU_IFUNC` symbols are functions.
//! * `STT_NOTYPE` symbols are kept only as entry points of hand-written assembly (glibc's
//!   `load_gp` after `_start` is one): not RISC-V mapping symbols (`$x…`, `$d…`), not
//!   assembler-local labels (`.L…`), not unnamed, and not strictly inside a sized function
//!   (there they are labels within it). At the start of a function they become aliases.
//! * Symbols at the same address are one function with several names (see [`Sym::aliases`]).
//!   The preferred name is, in order: from a `STT_FUNC` symbol over a `STT_NOTYPE` one; with
//!   fewer leading underscores (glibc's `malloc` over `__libc_malloc`, `puts` over
//!   `_IO_puts`: the name a programmer called); global over weak over local; shorter; then
//!   the byte-wise smaller.
//! * The size is the largest `st_size` among the aliases. When all are zero (crt's
//!   `frame_dummy`, assembly entry points) the size is inferred: up to the next function's
//!   start, but not past the end of the symbol's section ([`Sym::size_inferred`]).
//! * Starts strictly increase. Extents may still overlap when the symbol table says so (none
//!   of the bundled workloads do); [`Symbols::lookup`] then picks the innermost function,
//!   the one with the greatest start that contains the address.
//!
//! Addresses are where [`crate::elf::load`] maps the program: link-time addresses for
//! `ET_EXEC`, plus [`crate::elf::PIE_BASE`] for a RISC-V `ET_DYN` (static-pie).
//!
//! # Example
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use outcrop_rv::symbols::Symbols;
//! let elf = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../workloads/bin/hello"))?;
//! let symbols = Symbols::from_elf(&elf)?;
//! let main = symbols.named("main").ok_or("no main")?;
//! let inside = symbols.lookup(main.start + 2).ok_or("no symbol")?;
//! assert_eq!(inside.to_string(), "main+0x2");
//! assert_eq!(symbols.describe_range(main.start, main.end() - 1), "main");
//! assert_eq!(symbols.describe_range(main.start + 4, main.start + 9), "main+0x4..main+0x9");
//! # Ok(())
//! # }
//! ```

use crate::elf::PIE_BASE;
use crate::Error;
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym as _};
use std::fmt;

/// Index of a function in a [`Symbols`], in address order (`FunctionId(0)` starts lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FunctionId(pub u32);

/// One function, as [`Symbols::lookup`] and friends report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sym<'a> {
    /// Its index in [`Symbols::functions`].
    pub id: FunctionId,
    /// The preferred name (see the module docs for the order), demangled
    /// ([`crate::demangle`]).
    pub name: &'a str,
    /// The preferred name as the symbol table spells it, when demangling changed it
    /// (`_ZL6workerii` for `worker(int, int)`).
    pub mangled: Option<&'a str>,
    /// The other names at the same address, best first.
    pub aliases: &'a [Box<str>],
    /// First byte.
    pub start: u64,
    /// Length in bytes (at least 1).
    pub size: u64,
    /// Whether `size` was inferred from the next symbol because the table said 0.
    pub size_inferred: bool,
    /// For [`Symbols::lookup`], the looked-up address minus `start`; for
    /// [`Symbols::functions_in`], the offset of the first byte inside the range; otherwise 0.
    pub offset: u64,
}

impl Sym<'_> {
    /// The indices of its names in `symbols.names`.
    fn id_names(&self, symbols: &Symbols) -> std::ops::Range<usize> {
        let f = &symbols.functions[self.id.0 as usize];
        f.first_name as usize..(f.first_name + f.name_count) as usize
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        // from_elf checked that start + size does not overflow
        self.start.saturating_add(self.size)
    }

    /// Whether `addr` lies in `[start, end)`.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr < self.end()
    }
}

/// `name`, or `name+0x1c` when the offset is not 0.
impl fmt::Display for Sym<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.offset == 0 {
            f.write_str(self.name)
        } else {
            write!(f, "{}+{:#x}", self.name, self.offset)
        }
    }
}

/// How function names are shown: demangled (`worker(int, int)`, the default) or as the
/// symbol table spells them (`_ZL6workerii`; `--no-demangle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Names {
    /// C++ and Rust names demangled ([`crate::demangle`]).
    #[default]
    Demangled,
    /// Every name as the symbol table spells it.
    Mangled,
}

/// A function overlapping a range, and how many of its bytes lie inside it
/// ([`Symbols::functions_in`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionShare<'a> {
    /// The function; its `offset` is that of its first byte inside the range.
    pub function: Sym<'a>,
    /// Its bytes inside the range (at least 1).
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug)]
struct Function {
    start: u64,
    size: u64,
    size_inferred: bool,
    /// `names[first_name..first_name + name_count]`, preferred first.
    first_name: u32,
    name_count: u32,
}

/// The functions of one program, sorted by address (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    functions: Vec<Function>,
    names: Vec<Box<str>>,
    /// `mangled[i]`: `names[i]` as the symbol table spells it, when demangling changed it.
    mangled: Vec<Option<Box<str>>>,
    /// `max_end[i]` = the greatest end among `functions[..=i]`, so searches for functions
    /// containing an address can stop early even when extents overlap.
    max_end: Vec<u64>,
}

fn elf_err(what: impl Into<String>) -> Error {
    Error::Elf(what.into())
}

/// A symbol that passed the filters, before aliases are merged.
struct Candidate {
    start: u64,
    size: u64,
    /// End of the symbol's section (bias applied).
    section_end: u64,
    preference: Preference,
    name: Box<str>,
    /// The name as the table spells it, when `name` is its demangled form.
    mangled: Option<Box<str>>,
}

/// Sorts best first: see "preferred name" in the module docs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Preference {
    is_notype: bool,
    leading_underscores: usize,
    binding: u8,
    len: usize,
}

impl Preference {
    fn new(kind: u8, binding: u8, name: &[u8]) -> Self {
        Preference {
            is_notype: kind == elf::STT_NOTYPE,
            leading_underscores: name.iter().take_while(|&&b| b == b'_').count(),
            binding: match binding {
                elf::STB_GLOBAL => 0,
                elf::STB_WEAK => 1,
                elf::STB_LOCAL => 2,
                _ => 3,
            },
            len: name.len(),
        }
    }
}

impl Symbols {
    /// Reads the function symbols of a 64-bit ELF executable (`ET_EXEC` or `ET_DYN`).
    ///
    /// Errors on a malformed file: bad header, section headers or symbol table outside the
    /// file, a symbol naming a missing section, names outside the string table, or a
    /// function whose extent overflows the address space.
    pub fn from_elf(data: &[u8]) -> Result<Symbols, Error> {
        let (header, endian) = crate::elf::parse_header(data)?;
        let bias = match header.e_type(endian) {
            elf::ET_EXEC => 0,
            // only the machine loads programs, and only RISC-V ones, at PIE_BASE; a
            // position-independent program of another ISA (a perf.data import's) keeps its
            // link-time addresses
            elf::ET_DYN if header.e_machine(endian) == elf::EM_RISCV => PIE_BASE,
            elf::ET_DYN => 0,
            t => {
                return Err(elf_err(format!(
                    "ELF type {t} is not an executable; cannot read its function addresses"
                )))
            }
        };
        Symbols::from_elf_at(data, bias)
    }

    /// [`Symbols::from_elf`] for an object loaded `bias` bytes above its link-time addresses
    /// (a shared library or dynamic linker where the machine mapped it:
    /// [`crate::elf::load_bias`]).
    pub fn from_elf_at(data: &[u8], bias: u64) -> Result<Symbols, Error> {
        let (header, endian) = crate::elf::parse_header(data)?;
        let sections = header
            .sections(endian, data)
            .map_err(|e| elf_err(format!("section headers: {e}")))?;
        let mut table = sections
            .symbols(endian, data, elf::SHT_SYMTAB)
            .map_err(|e| elf_err(format!("symbol table (.symtab): {e}")))?;
        if table.is_empty() {
            table = sections
                .symbols(endian, data, elf::SHT_DYNSYM)
                .map_err(|e| elf_err(format!("symbol table (.dynsym): {e}")))?;
        }

        let mut functions = Vec::new();
        let mut labels = Vec::new();
        for (index, sym) in table.enumerate() {
            let kind = sym.st_type();
            let is_function = kind == elf::STT_FUNC || kind == elf::STT_GNU_IFUNC;
            if !is_function && kind != elf::STT_NOTYPE {
                continue;
            }
            let bad = |what: String| elf_err(format!("symbol {}: {what}", index.0));
            let section_index = match table.symbol_section(endian, sym, index) {
                Ok(Some(s)) => s,
                Ok(None) => continue, // undefined, absolute or common
                Err(e) => return Err(bad(e.to_string())),
            };
            let section = sections
                .section(section_index)
                .map_err(|e| bad(format!("section {}: {e}", section_index.0)))?;
            let exec = u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR);
            if section.sh_flags(endian) & exec != exec {
                continue;
            }
            let name = table
                .symbol_name(endian, sym)
                .map_err(|e| bad(format!("name: {e}")))?;
            if name.is_empty()
                || (!is_function && (name.starts_with(b"$") || name.starts_with(b".L")))
            {
                continue;
            }
            let section_start = section.sh_addr(endian);
            let section_end = section_start
                .checked_add(section.sh_size(endian))
                .and_then(|end| end.checked_add(bias))
                .ok_or_else(|| {
                    bad(format!(
                        "section {} extends past the address space",
                        section_index.0
                    ))
                })?;
            let value = sym.st_value(endian);
            let size = sym.st_size(endian);
            let start = value.wrapping_add(bias);
            if value < section_start || start >= section_end {
                continue; // e.g. an end-of-section marker
            }
            if start.checked_add(size).is_none() {
                return Err(bad(format!(
                    "function at {start:#x} of size {size:#x} extends past the address space"
                )));
            }
            // a name is text for people and line-based formats: control characters (a
            // newline, an escape sequence) are kept escaped, in every output
            let escaped = |s: &str| Box::<str>::from(outcrop_events::escape::terminal(s));
            let raw = escaped(&String::from_utf8_lossy(name));
            let (name_shown, mangled) = match crate::demangle::demangle(name) {
                Some(d) => (escaped(&d), Some(raw)),
                None => (raw, None),
            };
            let candidate = Candidate {
                start,
                size,
                section_end,
                preference: Preference::new(kind, sym.st_bind(), name),
                name: name_shown,
                mangled,
            };
            if is_function {
                functions.push(candidate);
            } else {
                labels.push(candidate);
            }
        }
        drop_inner_labels(&functions, &mut labels);
        functions.append(&mut labels);
        Self::from_candidates(functions)
    }

    fn from_candidates(mut candidates: Vec<Candidate>) -> Result<Symbols, Error> {
        // by address, then best name first; duplicates of a name then sit together after the
        // name sort below
        candidates.sort_unstable_by(|a, b| {
            (a.start, a.preference, &a.name).cmp(&(b.start, b.preference, &b.name))
        });
        let mut group_starts = Vec::new();
        let mut i = 0;
        while i < candidates.len() {
            group_starts.push(i);
            let start = candidates[i].start;
            while i < candidates.len() && candidates[i].start == start {
                i += 1;
            }
        }
        group_starts.push(candidates.len());

        let too_many = || elf_err("more than 2^32 function names");
        let mut out = Symbols::default();
        for (g, bounds) in group_starts.windows(2).enumerate() {
            let group = &candidates[bounds[0]..bounds[1]];
            let Some(best) = group.first() else { continue };
            let next_start = group_starts
                .get(g + 1)
                .and_then(|&n| candidates.get(n))
                .map_or(u64::MAX, |c| c.start);
            let listed = group.iter().map(|c| c.size).max().unwrap_or(0);
            let (size, size_inferred) = if listed > 0 {
                (listed, false)
            } else {
                (next_start.min(best.section_end) - best.start, true)
            };
            let first_name = u32::try_from(out.names.len()).map_err(|_| too_many())?;
            // the group is sorted best first; keep each name's first (best) copy, in order
            // (two mangled names can demangle alike: a constructor's C1 and C2 variants)
            let mut unique: Vec<(usize, &Candidate)> = group.iter().enumerate().collect();
            unique.sort_by(|a, b| (&a.1.name, a.0).cmp(&(&b.1.name, b.0)));
            unique.dedup_by(|later, first| later.1.name == first.1.name);
            unique.sort_unstable_by_key(|&(rank, _)| rank);
            for (_, c) in unique {
                out.names.push(c.name.clone());
                out.mangled.push(c.mangled.clone());
            }
            let name_count =
                u32::try_from(out.names.len() - first_name as usize).map_err(|_| too_many())?;
            let end = best.start + size;
            let max_end = out.max_end.last().map_or(end, |&m| m.max(end));
            out.functions.push(Function {
                start: best.start,
                size,
                size_inferred,
                first_name,
                name_count,
            });
            out.max_end.push(max_end);
        }
        u32::try_from(out.functions.len()).map_err(|_| elf_err("more than 2^32 functions"))?;
        Ok(out)
    }

    /// One table of the functions of several objects loaded at once (a dynamically linked
    /// program, its dynamic linker and its shared libraries, each already placed at its load
    /// address): every name of a part with a suffix gets it (`memcpy` → `memcpy@libc.so.6`).
    /// Functions keep their extents; lookups in overlapping parts pick the innermost.
    pub fn merged(parts: &[(&Symbols, &str)]) -> Symbols {
        type Names = Vec<(Box<str>, Option<Box<str>>)>;
        let mut all: Vec<(Function, Names)> = Vec::new();
        for (sym, suffix) in parts {
            for f in &sym.functions {
                let range = f.first_name as usize..(f.first_name + f.name_count) as usize;
                let names = sym.names[range.clone()]
                    .iter()
                    .zip(&sym.mangled[range])
                    .map(|(n, m)| {
                        let m = m.as_ref().map(|m| Box::from(format!("{m}{suffix}")));
                        (Box::from(format!("{n}{suffix}")), m)
                    })
                    .collect();
                all.push((*f, names));
            }
        }
        all.sort_by_key(|(f, _)| f.start);
        all.dedup_by_key(|(f, _)| f.start); // two parts at one address: the first stays
        let mut out = Symbols::default();
        for (mut f, names) in all {
            f.first_name = out.names.len() as u32;
            f.name_count = names.len() as u32;
            for (n, m) in names {
                out.names.push(n);
                out.mangled.push(m);
            }
            let end = f.start.saturating_add(f.size);
            let max_end = out.max_end.last().map_or(end, |&m| m.max(end));
            out.functions.push(f);
            out.max_end.push(max_end);
        }
        out
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// Whether there are no functions (e.g. a fully stripped program).
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    fn sym(&self, index: usize, offset: u64) -> Option<Sym<'_>> {
        let f = self.functions.get(index)?;
        let names = self
            .names
            .get(f.first_name as usize..f.first_name as usize + f.name_count as usize)?;
        let (name, aliases) = names.split_first()?;
        let mangled = self.mangled.get(f.first_name as usize)?.as_deref();
        Some(Sym {
            id: FunctionId(index as u32),
            name,
            mangled,
            aliases,
            start: f.start,
            size: f.size,
            size_inferred: f.size_inferred,
            offset,
        })
    }

    /// The function with this id.
    pub fn function(&self, id: FunctionId) -> Option<Sym<'_>> {
        self.sym(id.0 as usize, 0)
    }

    /// All functions, by increasing start (offsets 0).
    pub fn functions(&self) -> impl Iterator<Item = Sym<'_>> + '_ {
        (0..self.functions.len()).filter_map(|i| self.sym(i, 0))
    }

    /// The first function (by address) with `name` as its preferred name or an alias,
    /// demangled or as the symbol table spells it. A linear search.
    pub fn named(&self, name: &str) -> Option<Sym<'_>> {
        self.functions().find(|f| {
            let range = f.id_names(self);
            self.names[range.clone()].iter().any(|n| &**n == name)
                || self.mangled[range]
                    .iter()
                    .any(|m| m.as_deref() == Some(name))
        })
    }

    /// The same functions with their names as `names` says.
    pub fn with_names(self, names: Names) -> Symbols {
        match names {
            Names::Demangled => self,
            Names::Mangled => self.mangled_names(),
        }
    }

    /// The same functions with every name as the symbol table spells it (what
    /// `--no-demangle` shows).
    pub fn mangled_names(mut self) -> Symbols {
        for (name, mangled) in self.names.iter_mut().zip(&mut self.mangled) {
            if let Some(m) = mangled.take() {
                *name = m;
            }
        }
        self
    }

    /// The function containing `addr` (the innermost if extents overlap), with `offset` set
    /// to `addr - start`; `None` between functions and outside all of them.
    pub fn lookup(&self, addr: u64) -> Option<Sym<'_>> {
        let candidates = self.functions.partition_point(|f| f.start <= addr);
        for i in (0..candidates).rev() {
            if self.max_end[i] <= addr {
                return None;
            }
            let f = &self.functions[i];
            if addr - f.start < f.size {
                return self.sym(i, addr - f.start);
            }
        }
        None
    }

    /// The range `[lo, hi)` around `addr` that no function covers (`addr` itself not in a
    /// function): from the end of the functions before it to the start of the next one.
    /// `(addr, addr + 1)` if `addr` lies in a function.
    pub fn gap(&self, addr: u64) -> (u64, u64) {
        let i = self.functions.partition_point(|f| f.start <= addr);
        let lo = if i == 0 { 0 } else { self.max_end[i - 1] };
        if lo > addr {
            return (addr, addr.saturating_add(1));
        }
        let hi = self.functions.get(i).map_or(u64::MAX, |f| f.start);
        (lo, hi)
    }

    /// The range `[lo, hi)` around `addr` over which [`Symbols::lookup`] names the same
    /// function (or none): between the nearest function boundaries (starts and ends) on
    /// either side. A source that counts code by function keeps a block inside one such
    /// range.
    pub fn steady_range(&self, addr: u64) -> (u64, u64) {
        let candidates = self.functions.partition_point(|f| f.start <= addr);
        let mut lo = candidates
            .checked_sub(1)
            .map_or(0, |i| self.functions[i].start);
        let mut hi = self.functions.get(candidates).map_or(u64::MAX, |f| f.start);
        // the ends around `addr` of the functions starting at or before it
        for i in (0..candidates).rev() {
            if self.max_end[i] <= addr {
                // every function up to `i` ends at or before `addr`
                lo = lo.max(self.max_end[i]);
                break;
            }
            let end = self.functions[i]
                .start
                .saturating_add(self.functions[i].size);
            if end <= addr {
                lo = lo.max(end);
            } else {
                hi = hi.min(end);
            }
        }
        (lo, hi)
    }

    /// Indices of the functions overlapping `[lo, hi]`, by increasing start.
    fn overlapping(&self, lo: u64, hi: u64) -> Vec<usize> {
        let candidates = self.functions.partition_point(|f| f.start <= hi);
        let mut out = Vec::new();
        for i in (0..candidates).rev() {
            if self.max_end[i] <= lo {
                break;
            }
            let f = &self.functions[i];
            if f.start + f.size > lo {
                out.push(i);
            }
        }
        out.reverse();
        out
    }

    /// The functions overlapping the code range `[lo, hi]` (inclusive; swapped if
    /// `lo > hi`), each with the number of its bytes inside the range, most bytes first
    /// (ties by address). Overlapping functions each count their shared bytes.
    pub fn functions_in(&self, lo: u64, hi: u64) -> Vec<FunctionShare<'_>> {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let mut out: Vec<FunctionShare<'_>> = self
            .overlapping(lo, hi)
            .into_iter()
            .filter_map(|i| {
                let f = &self.functions[i];
                let first = lo.max(f.start);
                let last = hi.min(f.start + f.size - 1);
                let function = self.sym(i, first - f.start)?;
                Some(FunctionShare {
                    function,
                    bytes: last - first + 1,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.bytes
                .cmp(&a.bytes)
                .then(a.function.start.cmp(&b.function.start))
        });
        out
    }

    /// A short label for the code range `[lo, hi]` (inclusive; swapped if `lo > hi`):
    ///
    /// | the range                                  | label                          |
    /// |--------------------------------------------|--------------------------------|
    /// | exactly one function                       | `main`                         |
    /// | inside one function                        | `main+0x10..main+0x48`         |
    /// | one byte inside a function                 | `main+0x10`                    |
    /// | overlaps several functions                 | `memcpy .. strlen (5 functions)` |
    /// | overlaps none                              | `?0x10400..0x107ff` (`?0x10400` for one byte) |
    ///
    /// With one function the offsets are clipped to it. Several functions are named by the
    /// lowest- and highest-starting ones and counted. A trailing ` +?` means some bytes of
    /// the range lie in no function (padding, or code without a symbol): `main +?`,
    /// `main+0x20..main+0x23 +?`, `f .. g (2 functions) +?`.
    pub fn describe_range(&self, lo: u64, hi: u64) -> String {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let ids = self.overlapping(lo, hi);
        let unsymbolized = if self.has_gap(&ids, lo, hi) {
            " +?"
        } else {
            ""
        };
        let syms: Vec<Sym<'_>> = ids.iter().filter_map(|&i| self.sym(i, 0)).collect();
        match syms.as_slice() {
            [] if lo == hi => format!("?{lo:#x}"),
            [] => format!("?{lo:#x}..{hi:#x}"),
            [f] => {
                let first = lo.max(f.start) - f.start;
                let last = hi.min(f.end() - 1) - f.start;
                let name = f.name;
                if first == 0 && last == f.size - 1 {
                    format!("{name}{unsymbolized}")
                } else if first == last {
                    format!("{name}+{first:#x}{unsymbolized}")
                } else {
                    format!("{name}+{first:#x}..{name}+{last:#x}{unsymbolized}")
                }
            }
            [first, .., last] => format!(
                "{} .. {} ({} functions){unsymbolized}",
                first.name,
                last.name,
                syms.len()
            ),
        }
    }

    /// Whether some byte of `[lo, hi]` lies in none of the functions `ids` (sorted by start).
    fn has_gap(&self, ids: &[usize], lo: u64, hi: u64) -> bool {
        // the first byte not yet known to be covered; u128 so that hi = u64::MAX works
        let mut next = u128::from(lo);
        for &i in ids {
            let f = &self.functions[i];
            if u128::from(f.start) > next {
                return true;
            }
            next = next.max(u128::from(f.start) + u128::from(f.size));
        }
        next <= u128::from(hi)
    }
}

/// Removes the `STT_NOTYPE` labels that lie strictly inside a sized function.
fn drop_inner_labels(functions: &[Candidate], labels: &mut Vec<Candidate>) {
    let mut extents: Vec<(u64, u64)> = functions
        .iter()
        .filter(|f| f.size > 0)
        .map(|f| (f.start, f.start + f.size))
        .collect();
    extents.sort_unstable();
    let mut max_end = Vec::with_capacity(extents.len());
    let mut running = 0;
    for &(_, end) in &extents {
        running = running.max(end);
        max_end.push(running);
    }
    labels.retain(|label| {
        let before = extents.partition_point(|&(start, _)| start < label.start);
        before == 0 || max_end[before - 1] <= label.start
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny ELF writer for hand-made symbol tables: `.text` at 0x1000..0x1100, `.data` at
    /// 0x2000..0x2100, then `.symtab`, `.strtab` and `.shstrtab`.
    struct TestElf {
        e_type: u16,
        text: (u64, u64),
        /// (name, value, size, type, binding, section index)
        symbols: Vec<(&'static str, u64, u64, u8, u8, u16)>,
    }

    /// The fields of an `Elf64_Shdr` the tests set (`sh_addralign` is always 8).
    #[derive(Default)]
    struct TestSection {
        name: u32,
        kind: u32,
        flags: u64,
        addr: u64,
        offset: u64,
        size: u64,
        link: u32,
        info: u32,
        entsize: u64,
    }

    const TEXT: u16 = 1;
    const DATA: u16 = 2;

    impl TestElf {
        fn new() -> Self {
            TestElf {
                e_type: elf::ET_EXEC,
                text: (0x1000, 0x100),
                symbols: Vec::new(),
            }
        }

        fn sym(mut self, name: &'static str, value: u64, size: u64, kind: u8, bind: u8) -> Self {
            self.symbols.push((name, value, size, kind, bind, TEXT));
            self
        }

        fn func(self, name: &'static str, value: u64, size: u64) -> Self {
            self.sym(name, value, size, elf::STT_FUNC, elf::STB_GLOBAL)
        }

        fn bytes(&self) -> Vec<u8> {
            let mut strtab = vec![0u8];
            let mut symtab = vec![0u8; 24];
            for &(name, value, size, kind, bind, shndx) in &self.symbols {
                symtab.extend_from_slice(&(strtab.len() as u32).to_le_bytes());
                strtab.extend_from_slice(name.as_bytes());
                strtab.push(0);
                symtab.push(bind << 4 | kind);
                symtab.push(0);
                symtab.extend_from_slice(&shndx.to_le_bytes());
                symtab.extend_from_slice(&value.to_le_bytes());
                symtab.extend_from_slice(&size.to_le_bytes());
            }
            let shstrtab = b"\0.text\0.data\0.symtab\0.strtab\0.shstrtab\0".to_vec();
            let mut file = vec![0u8; 64];
            let symtab_off = file.len() as u64;
            file.extend_from_slice(&symtab);
            let strtab_off = file.len() as u64;
            file.extend_from_slice(&strtab);
            let shstrtab_off = file.len() as u64;
            file.extend_from_slice(&shstrtab);
            while file.len() % 8 != 0 {
                file.push(0);
            }
            let shoff = file.len() as u64;
            let alloc = u64::from(elf::SHF_ALLOC);
            let headers = [
                TestSection::default(),
                TestSection {
                    name: 1,
                    kind: elf::SHT_NOBITS,
                    flags: alloc | u64::from(elf::SHF_EXECINSTR),
                    addr: self.text.0,
                    size: self.text.1,
                    ..TestSection::default()
                },
                TestSection {
                    name: 7,
                    kind: elf::SHT_NOBITS,
                    flags: alloc | u64::from(elf::SHF_WRITE),
                    addr: 0x2000,
                    size: 0x100,
                    ..TestSection::default()
                },
                TestSection {
                    name: 13,
                    kind: elf::SHT_SYMTAB,
                    offset: symtab_off,
                    size: symtab.len() as u64,
                    link: 4,
                    info: 1,
                    entsize: 24,
                    ..TestSection::default()
                },
                TestSection {
                    name: 21,
                    kind: elf::SHT_STRTAB,
                    offset: strtab_off,
                    size: strtab.len() as u64,
                    ..TestSection::default()
                },
                TestSection {
                    name: 29,
                    kind: elf::SHT_STRTAB,
                    offset: shstrtab_off,
                    size: shstrtab.len() as u64,
                    ..TestSection::default()
                },
            ];
            for s in &headers {
                file.extend_from_slice(&s.name.to_le_bytes());
                file.extend_from_slice(&s.kind.to_le_bytes());
                file.extend_from_slice(&s.flags.to_le_bytes());
                file.extend_from_slice(&s.addr.to_le_bytes());
                file.extend_from_slice(&s.offset.to_le_bytes());
                file.extend_from_slice(&s.size.to_le_bytes());
                file.extend_from_slice(&s.link.to_le_bytes());
                file.extend_from_slice(&s.info.to_le_bytes());
                file.extend_from_slice(&8u64.to_le_bytes()); // sh_addralign
                file.extend_from_slice(&s.entsize.to_le_bytes());
            }
            let mut h = Vec::new();
            h.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
            h.extend_from_slice(&[0; 8]);
            h.extend_from_slice(&self.e_type.to_le_bytes());
            h.extend_from_slice(&elf::EM_RISCV.to_le_bytes());
            h.extend_from_slice(&1u32.to_le_bytes());
            h.extend_from_slice(&self.text.0.to_le_bytes()); // e_entry
            h.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
            h.extend_from_slice(&shoff.to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes()); // e_flags
            h.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
            h.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
            h.extend_from_slice(&0u16.to_le_bytes()); // e_phnum
            h.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
            h.extend_from_slice(&(headers.len() as u16).to_le_bytes());
            h.extend_from_slice(&5u16.to_le_bytes()); // e_shstrndx
            file[..64].copy_from_slice(&h);
            file
        }

        fn symbols(&self) -> Symbols {
            Symbols::from_elf(&self.bytes()).unwrap()
        }
    }

    fn names(s: &Symbols) -> Vec<(String, u64, u64)> {
        s.functions()
            .map(|f| (f.name.to_string(), f.start, f.size))
            .collect()
    }

    #[test]
    fn zero_sizes_reach_the_next_function_or_the_section_end() {
        let s = TestElf::new()
            .func("a", 0x1000, 0x10)
            .func("z", 0x1020, 0)
            .func("b", 0x1040, 0x20)
            .func("last", 0x10f0, 0)
            .symbols();
        assert_eq!(
            names(&s),
            [
                ("a".into(), 0x1000, 0x10),
                ("z".into(), 0x1020, 0x20),
                ("b".into(), 0x1040, 0x20),
                ("last".into(), 0x10f0, 0x10),
            ]
        );
        let flags: Vec<bool> = s.functions().map(|f| f.size_inferred).collect();
        assert_eq!(flags, [false, true, false, true]);
        assert_eq!(s.lookup(0x1010), None); // between a and z
        assert_eq!(
            s.lookup(0x103f).map(|f| f.to_string()),
            Some("z+0x1f".into())
        );
        assert_eq!(
            s.lookup(0x10ff).map(|f| f.to_string()),
            Some("last+0xf".into())
        );
        assert_eq!(s.lookup(0x1100), None);
        assert_eq!(s.lookup(0xfff), None);
    }

    #[test]
    fn aliases_pick_a_preferred_name_deterministically() {
        let build = |order: &[usize]| {
            let all = [
                ("__b", elf::STB_GLOBAL),
                ("b_alias", elf::STB_GLOBAL),
                ("b", elf::STB_WEAK),
                ("bb", elf::STB_GLOBAL),
                ("b", elf::STB_LOCAL),
                ("c", elf::STB_LOCAL),
            ];
            let mut t = TestElf::new();
            for &i in order {
                let (name, bind) = all[i];
                t = t.sym(name, 0x1040, 0x20, elf::STT_FUNC, bind);
            }
            t.symbols()
        };
        let s = build(&[0, 1, 2, 3, 4, 5]);
        let f = s.lookup(0x1040).unwrap();
        // fewest underscores, then global > weak > local, then shortest, then bytes
        assert_eq!(f.name, "bb");
        let aliases: Vec<&str> = f.aliases.iter().map(|a| &**a).collect();
        assert_eq!(aliases, ["b_alias", "b", "c", "__b"]);
        let again = build(&[5, 4, 3, 2, 1, 0]);
        assert_eq!(names(&again), names(&s));
        assert_eq!(again.lookup(0x1040).unwrap().aliases, f.aliases);
        assert_eq!(s.len(), 1);
        assert_eq!(s.named("__b").map(|f| f.name), Some("bb"));
    }

    #[test]
    fn func_names_beat_notype_and_sizes_merge() {
        let s = TestElf::new()
            .sym("a", 0x1000, 0, elf::STT_NOTYPE, elf::STB_GLOBAL)
            .sym("entry", 0x1000, 0, elf::STT_FUNC, elf::STB_LOCAL)
            .func("__entry_sized", 0x1000, 0x30)
            .symbols();
        let f = s.lookup(0x1000).unwrap();
        assert_eq!((f.name, f.size, f.size_inferred), ("entry", 0x30, false));
        assert_eq!(f.aliases.len(), 2);
        assert_eq!(&*f.aliases[1], "a");
    }

    #[test]
    fn notype_labels_are_entry_points_only_outside_functions() {
        let s = TestElf::new()
            .func("a", 0x1000, 0x10)
            .sym("inner", 0x1004, 0, elf::STT_NOTYPE, elf::STB_LOCAL)
            .sym("$xrv64i2p1", 0x1010, 0, elf::STT_NOTYPE, elf::STB_LOCAL)
            .sym(".L42", 0x1012, 0, elf::STT_NOTYPE, elf::STB_LOCAL)
            .sym("load_gp", 0x1010, 0, elf::STT_NOTYPE, elf::STB_LOCAL)
            .func("b", 0x1018, 8)
            .sym("data", 0x2000, 8, elf::STT_OBJECT, elf::STB_GLOBAL)
            .sym("tls", 0x1020, 8, elf::STT_TLS, elf::STB_GLOBAL)
            .sym("sect", 0x1000, 0, elf::STT_SECTION, elf::STB_LOCAL)
            .sym("end_marker", 0x1100, 0, elf::STT_NOTYPE, elf::STB_GLOBAL)
            .symbols();
        assert_eq!(
            names(&s),
            [
                ("a".into(), 0x1000, 0x10),
                ("load_gp".into(), 0x1010, 8),
                ("b".into(), 0x1018, 8),
            ]
        );
    }

    #[test]
    fn functions_outside_executable_sections_are_ignored() {
        let mut t = TestElf::new().func("code", 0x1000, 4);
        t.symbols
            .push(("in_data", 0x2000, 4, elf::STT_FUNC, elf::STB_GLOBAL, DATA));
        t.symbols
            .push(("undefined", 0, 0, elf::STT_FUNC, elf::STB_GLOBAL, 0));
        t.symbols.push((
            "absolute",
            0x1000,
            4,
            elf::STT_FUNC,
            elf::STB_GLOBAL,
            elf::SHN_ABS,
        ));
        let s = t.func("outside_its_section", 0x3000, 4).symbols();
        assert_eq!(names(&s), [("code".into(), 0x1000, 4)]);
    }

    #[test]
    fn overlapping_functions_resolve_to_the_innermost() {
        let s = TestElf::new()
            .func("outer", 0x1080, 0x40)
            .func("inner", 0x1090, 0x10)
            .func("after", 0x10c0, 0x10)
            .symbols();
        let at = |a| s.lookup(a).map(|f| f.to_string());
        assert_eq!(at(0x1080).as_deref(), Some("outer"));
        assert_eq!(at(0x1094).as_deref(), Some("inner+0x4"));
        assert_eq!(at(0x10a0).as_deref(), Some("outer+0x20"));
        assert_eq!(at(0x10bf).as_deref(), Some("outer+0x3f"));
        assert_eq!(at(0x10c0).as_deref(), Some("after"));
        assert_eq!(s.describe_range(0x10a0, 0x10a7), "outer+0x20..outer+0x27");
        assert_eq!(
            s.describe_range(0x1094, 0x1095),
            "outer .. inner (2 functions)"
        );
        let shares: Vec<(&str, u64, u64)> = s
            .functions_in(0x1088, 0x10c3)
            .iter()
            .map(|s| (s.function.name, s.function.offset, s.bytes))
            .collect();
        assert_eq!(
            shares,
            [("outer", 8, 0x38), ("inner", 0, 0x10), ("after", 0, 4)]
        );
    }

    #[test]
    fn lookups_are_the_same_across_each_steady_range() {
        let s = TestElf::new()
            .func("outer", 0x1080, 0x40)
            .func("inner", 0x1090, 0x10)
            .func("twin", 0x1090, 0x8)
            .func("after", 0x10c0, 0x10)
            .func("first", 0x1000, 0x20)
            .symbols();
        let name = |a| s.lookup(a).map(|f| f.name.to_string());
        for addr in 0xff0..0x1110u64 {
            let (lo, hi) = s.steady_range(addr);
            assert!(lo <= addr && addr < hi, "{addr:#x} in [{lo:#x}, {hi:#x})");
            for a in lo.max(0xf00)..hi.min(0x1200) {
                assert_eq!(name(a), name(addr), "{a:#x} and {addr:#x}");
            }
            // the range stops at a change (or at a boundary that may be one)
            if lo > 0xf00 {
                assert!(name(lo - 1) != name(addr) || s.steady_range(lo - 1).1 == lo);
            }
        }
        assert_eq!(s.steady_range(0x10a0), (0x10a0, 0x10c0));
        assert_eq!(s.steady_range(0x1050), (0x1020, 0x1080));
    }

    #[test]
    fn describe_range_formats() {
        let s = TestElf::new()
            .func("a", 0x1000, 0x10)
            .func("b", 0x1010, 0x10)
            .func("c", 0x1020, 0x10)
            .func("d", 0x1040, 0x10)
            .symbols();
        assert_eq!(s.describe_range(0x1000, 0x100f), "a");
        assert_eq!(s.describe_range(0x100f, 0x1000), "a");
        assert_eq!(s.describe_range(0x1004, 0x100b), "a+0x4..a+0xb");
        assert_eq!(s.describe_range(0x1000, 0x100b), "a+0x0..a+0xb");
        assert_eq!(s.describe_range(0x1004, 0x1004), "a+0x4");
        assert_eq!(s.describe_range(0x1004, 0x1017), "a .. b (2 functions)");
        assert_eq!(s.describe_range(0x1000, 0x102f), "a .. c (3 functions)");
        assert_eq!(s.describe_range(0x1000, 0x1040), "a .. d (4 functions) +?");
        assert_eq!(s.describe_range(0x1020, 0x103f), "c +?");
        assert_eq!(s.describe_range(0x1028, 0x1033), "c+0x8..c+0xf +?");
        assert_eq!(s.describe_range(0x1030, 0x103f), "?0x1030..0x103f");
        assert_eq!(s.describe_range(0x1030, 0x1030), "?0x1030");
        assert_eq!(s.describe_range(0, u64::MAX), "a .. d (4 functions) +?");
        assert_eq!(
            s.describe_range(0x1050, u64::MAX),
            "?0x1050..0xffffffffffffffff"
        );
        let shares: Vec<(&str, u64)> = s
            .functions_in(0, u64::MAX)
            .iter()
            .map(|s| (s.function.name, s.bytes))
            .collect();
        assert_eq!(shares, [("a", 16), ("b", 16), ("c", 16), ("d", 16)]);
        assert!(s.functions_in(0x1030, 0x103f).is_empty());
    }

    #[test]
    fn pie_programs_get_the_loader_bias() {
        let mut t = TestElf::new().func("f", 0x1000, 4);
        t.e_type = elf::ET_DYN;
        let s = t.symbols();
        assert_eq!(s.lookup(PIE_BASE + 0x1002).map(|f| f.offset), Some(2));
        assert_eq!(s.lookup(0x1002), None);
    }

    #[test]
    fn no_symbol_table_is_empty_not_an_error() {
        let s = TestElf::new().symbols();
        assert!(s.is_empty());
        assert_eq!(s.lookup(0x1000), None);
        assert_eq!(s.describe_range(0x1000, 0x10ff), "?0x1000..0x10ff");
    }

    #[test]
    fn malformed_input_is_an_error() {
        let good = TestElf::new().func("f", 0x1000, 4).bytes();
        assert!(Symbols::from_elf(&good).is_ok());
        for len in 0..good.len() {
            // everything the reader needs lies in the file, so every truncation fails
            assert!(
                Symbols::from_elf(&good[..len]).is_err(),
                "truncated to {len}"
            );
        }
        // an LCG's bytes, and the same after a valid ELF identification
        let mut x = 1u64;
        let mut noise = vec![0u8; 4096];
        for b in &mut noise {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (x >> 56) as u8;
        }
        assert!(Symbols::from_elf(&noise).is_err());
        let mut fake = good[..16].to_vec();
        fake.extend_from_slice(&noise);
        assert!(Symbols::from_elf(&fake).is_err());

        let mut relocatable = TestElf::new().func("f", 0x1000, 4);
        relocatable.e_type = elf::ET_REL;
        assert!(Symbols::from_elf(&relocatable.bytes()).is_err());

        let mut huge = TestElf::new().func("huge", 0xffff_ffff_ffff_0000, u64::MAX);
        huge.text = (0xffff_ffff_ffff_0000, 0x100);
        let err = Symbols::from_elf(&huge.bytes()).unwrap_err().to_string();
        assert!(err.contains("symbol 1"), "{err}");

        let mut bad_name = TestElf::new().func("f", 0x1000, 4).bytes();
        // st_name of symbol 1 points far past .strtab
        bad_name[64 + 24..64 + 28].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
        assert!(Symbols::from_elf(&bad_name).is_err());
    }
}
