//! Fuzz target: `LineTable::from_elf` (DWARF line tables, through `object`, `gimli` and
//! `addr2line`) on arbitrary bytes, then source lookups.
//!
//! Reading must return (an error is fine) without panicking or allocating more than a
//! bounded section size. An accepted table answers lookups at addresses taken from the input
//! (and around them) without panicking, and a lookup is repeatable: the same location, whose
//! file id keeps naming the same file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_profile::lines::LineTable;

fuzz_target!(|data: &[u8]| {
    let Ok(Some(mut table)) = LineTable::from_elf(data) else {
        return;
    };
    // addresses: every aligned 8-byte word of the file's first 512 bytes, and a few bytes
    // after each (a line table names addresses the file itself contains, e.g. its entry)
    for chunk in data.chunks_exact(8).take(64) {
        let base = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        for d in [0u64, 2, 4, 64] {
            if let Some(loc) = table.locate(base.wrapping_add(d)) {
                let name = table.file_name(loc.file).to_string();
                assert_eq!(table.locate(base.wrapping_add(d)), Some(loc));
                assert_eq!(table.file_name(loc.file), name);
            }
        }
    }
    assert_eq!(table.file_name(u32::MAX), "");
});
