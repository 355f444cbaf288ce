//! Crafted ELF files for the hostile-input tests (tests/hostile.rs) and `xtask bench-hostile`.

/// A static RISC-V ELF: one executable page with `ecall`-free code at 0x10000 and the given
/// extra PT_LOAD segments `(vaddr, memsz, flags)` (no file bytes).
pub fn crafted_elf(extra: &[(u64, u64, u32)]) -> Vec<u8> {
    let phnum = 1 + extra.len();
    let code_off = 64 + 56 * phnum as u64;
    let mut f = Vec::new();
    f.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f.extend_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&(0x10000 + code_off).to_le_bytes()); // entry
    f.extend_from_slice(&64u64.to_le_bytes()); // phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // shoff
    f.extend_from_slice(&0u32.to_le_bytes()); // flags
    for v in [64u16, 56, phnum as u16, 64, 0, 0] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    let mut phdr = |vaddr: u64, off: u64, filesz: u64, memsz: u64, flags: u32| {
        f.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        f.extend_from_slice(&flags.to_le_bytes());
        for v in [off, vaddr, vaddr, filesz, memsz, 4096] {
            f.extend_from_slice(&v.to_le_bytes());
        }
    };
    phdr(0x10000, 0, code_off + 4, code_off + 4, 5);
    for &(vaddr, memsz, flags) in extra {
        phdr(vaddr, 0, 0, memsz, flags);
    }
    f.extend_from_slice(&0x0000_006fu32.to_le_bytes()); // j .
    f
}
