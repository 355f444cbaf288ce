//! Reading what a program says about itself beyond its functions: the profile tags its
//! `outcrop.h` macros recorded (section `outcrop_tags`), and data objects by name.

use crate::elf::parse_header;
use crate::Error;
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};

/// The section `outcrop.h`'s `OUTCROP_TAG_NEXT` fills: pairs of little-endian u64s, the
/// tagged instruction's address and its tag.
pub const TAG_SECTION: &str = "outcrop_tags";

/// Most entries read from the tag section.
pub const MAX_TAGS: usize = 1 << 22;

fn elf_err(what: impl Into<String>) -> Error {
    Error::Elf(what.into())
}

/// The `(pc, tag)` pairs of `data`'s `outcrop_tags` section (none without one). Tags are
/// read as written; the caller checks their range.
pub fn profile_tags(data: &[u8]) -> Result<Vec<(u64, u64)>, Error> {
    let (header, endian) = parse_header(data)?;
    let sections = header
        .sections(endian, data)
        .map_err(|e| elf_err(format!("section headers: {e}")))?;
    let Some((_, s)) = sections.section_by_name(endian, TAG_SECTION.as_bytes()) else {
        return Ok(Vec::new());
    };
    if header.e_type(endian) != elf::ET_EXEC {
        return Err(elf_err(format!(
            "{TAG_SECTION}: profile tags are read from static, non-PIE executables only (link with -static -no-pie)"
        )));
    }
    let bytes = s
        .data(endian, data)
        .map_err(|e| elf_err(format!("{TAG_SECTION}: {e}")))?;
    if bytes.len() % 16 != 0 {
        return Err(elf_err(format!(
            "{TAG_SECTION}: {} bytes is not a whole number of 16-byte (pc, tag) entries",
            bytes.len()
        )));
    }
    if bytes.len() / 16 > MAX_TAGS {
        return Err(elf_err(format!(
            "{TAG_SECTION}: {} entries, more than the {MAX_TAGS} Outcrop reads",
            bytes.len() / 16
        )));
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| {
            let w = |i: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&c[i..i + 8]);
                u64::from_le_bytes(b)
            };
            (w(0), w(8))
        })
        .collect())
}

/// The address and size of the data object (or any symbol) named `name`.
pub fn symbol(data: &[u8], name: &str) -> Result<Option<(u64, u64)>, Error> {
    let (header, endian) = parse_header(data)?;
    let sections = header
        .sections(endian, data)
        .map_err(|e| elf_err(format!("section headers: {e}")))?;
    let table = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(|e| elf_err(format!("symbol table (.symtab): {e}")))?;
    for sym in table.iter() {
        if sym.st_shndx(endian) == elf::SHN_UNDEF {
            continue;
        }
        if table.symbol_name(endian, sym).ok() == Some(name.as_bytes()) {
            return Ok(Some((sym.st_value(endian), sym.st_size(endian))));
        }
    }
    Ok(None)
}
