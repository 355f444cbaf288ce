//! The objects a dynamically linked program maps (its dynamic linker and shared libraries):
//! their symbols, read from the host file each came from when the machine reports the mapping
//! ([`outcrop_events::Mapping`]), placed at the address it was mapped at.
//!
//! A file is read with a bound, and used only when its GNU build-id equals the one read when
//! it was mapped (a file replaced on the host since is not mistaken for the one that ran).

use crate::files::{read_bounded, MAX_PROGRAM_BYTES};
use outcrop_events::Mapping;
use outcrop_rv::symbols::Symbols;

/// The function symbols of mapped object `m`, at its load address; `None` when its file
/// cannot be read, is not the file that was mapped, or has no symbols.
pub fn symbols_of(m: &Mapping<'_>) -> Option<Symbols> {
    let bytes = object_bytes(m)?;
    let bias = outcrop_rv::elf::load_bias(&bytes, m.start, m.offset)?;
    Symbols::from_elf_at(&bytes, bias).ok()
}

/// The bytes of the file `m` was mapped from, when it is still that file.
pub fn object_bytes(m: &Mapping<'_>) -> Option<Vec<u8>> {
    let path = m.host_path?;
    let bytes = read_bounded(path, "shared object", MAX_PROGRAM_BYTES).ok()?;
    let id = outcrop_rv::elf::build_id_in_prefix(&bytes);
    if m.build_id.is_some() && id.as_deref() != m.build_id {
        return None;
    }
    Some(bytes)
}

/// The resolver the exact profiler names shared-library code with.
pub fn profile_resolver() -> outcrop_profile::ObjectSymbols {
    Box::new(symbols_of)
}
