//! Loading a riscv64 ELF program and its interpreter (the `object` crate parses, every size
//! and offset is checked) and building the Linux initial stack: argc, argv, envp and the auxiliary vector
//! with AT_RANDOM, AT_PAGESZ, AT_HWCAP (the enabled single-letter extensions), AT_PHDR/PHENT/PHNUM, AT_ENTRY, AT_CLKTCK,
//! AT_EXECFN, as qemu-user does (see `shared/notes/riscv-linux.md`).

use crate::inst::Isa;
use crate::kernel::{Kernel, KernelConfig};
use crate::machine::Machine;
use crate::memory::{perm, Memory, PAGE_SIZE};
use crate::Error;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::Endianness;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// One past the highest stack address.
pub const STACK_TOP: u64 = 0x40_0000_0000;
/// Stack size mapped at start.
pub const STACK_SIZE: u64 = 8 << 20;
/// Load bias for position-independent (static-pie) programs.
pub const PIE_BASE: u64 = 0x4000_0000;
/// Where a signal handler returns to: one read-only executable page above the stack holding
/// `li a7, 139; ecall` (rt_sigreturn), the role of Linux's vDSO trampoline.
pub const SIGRETURN_TRAMPOLINE: u64 = STACK_TOP;

/// What to run and with what limits.
pub struct Program<'a> {
    /// The ELF file's bytes.
    pub elf: &'a [u8],
    /// argv (`argv[0]` first); bytes, as Linux passes them.
    pub args: Vec<OsString>,
    /// Environment strings (`KEY=value`).
    pub env: Vec<OsString>,
    /// Most bytes the guest may map (ELF segments, stack, heap, mmap).
    pub memory_limit: u64,
    /// The extensions the machine runs (what `AT_HWCAP` tells the program).
    pub isa: Isa,
}

fn elf_err(what: impl Into<String>) -> Error {
    Error::Elf(what.into())
}

/// The ELF file header of `data` and its byte order (errors name what is wrong).
pub(crate) fn parse_header(
    data: &[u8],
) -> Result<(&elf::FileHeader64<Endianness>, Endianness), Error> {
    let header = elf::FileHeader64::<Endianness>::parse(data).map_err(|e| not_elf64(data, e))?;
    let endian = header
        .endian()
        .map_err(|e| elf_err(format!("bad ELF byte order: {e}")))?;
    Ok((header, endian))
}

/// Why `data` is not a 64-bit ELF file, said as a person would: a script, text, a 32-bit
/// program, a truncated file; the parser's own words otherwise.
fn not_elf64(data: &[u8], e: object::read::Error) -> Error {
    let head = &data[..data.len().min(16)];
    let what = if let Some(line) = data.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
        format!(
            "a script (`#!{}`), not an ELF program: run its interpreter (a riscv64 build of it) \
             with the script as its argument",
            outcrop_events::escape::terminal(line.trim())
        )
    } else if data.is_empty() {
        "an empty file, not an ELF program".to_string()
    } else if !data.starts_with(b"\x7fELF") {
        let text = !head.is_empty()
            && head
                .iter()
                .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace());
        let hex: Vec<String> = head.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!(
            "not an ELF file: it starts with {}{} where an ELF file starts with 7f 45 4c 46",
            hex.join(" "),
            if text { " (text)" } else { "" }
        )
    } else if data.get(4) == Some(&elf::ELFCLASS32) {
        "a 32-bit ELF file: the machine runs 64-bit (riscv64) programs".to_string()
    } else if data.len() < std::mem::size_of::<elf::FileHeader64<Endianness>>() {
        format!(
            "a truncated ELF file: {} bytes, shorter than the 64-byte ELF header",
            data.len()
        )
    } else {
        format!("not a 64-bit ELF file: {e}")
    };
    elf_err(what)
}

/// Where the dynamic linker (the program's `PT_INTERP`) is loaded.
pub const INTERP_BASE: u64 = 0x1f_0000_0000;

/// The interpreter a dynamically linked program names (its `PT_INTERP`, e.g.
/// `/lib/ld-linux-riscv64-lp64d.so.1`), or `None` for a static program.
pub fn interpreter(data: &[u8]) -> Result<Option<String>, Error> {
    let (header, endian) = parse_header(data)?;
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| elf_err(format!("program headers: {e}")))?;
    for (i, p) in phdrs.iter().enumerate() {
        if p.p_type(endian) != elf::PT_INTERP {
            continue;
        }
        let bytes = p.data(endian, data).map_err(|_| {
            elf_err(format!(
                "program header {i} (PT_INTERP) lies outside the file"
            ))
        })?;
        let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
        if bytes.is_empty() || bytes.len() > 4096 {
            return Err(elf_err(format!(
                "program header {i} (PT_INTERP): empty or overlong interpreter path"
            )));
        }
        return Ok(Some(String::from_utf8_lossy(bytes).into_owned()));
    }
    Ok(None)
}

/// Whether the program asks for an executable stack: a `PT_GNU_STACK` header with `PF_X`
/// (`-z execstack`, or GCC's nested-function trampolines), as Linux maps the stack for it.
fn wants_exec_stack(data: &[u8]) -> bool {
    let Ok((header, endian)) = parse_header(data) else {
        return false;
    };
    let Ok(phdrs) = header.program_headers(endian, data) else {
        return false;
    };
    phdrs
        .iter()
        .any(|p| p.p_type(endian) == elf::PT_GNU_STACK && p.p_flags(endian) & elf::PF_X != 0)
}

/// The dynamic linker of a dynamically linked program, read by the caller (from beneath the
/// sysroot).
pub struct Interp<'a> {
    /// The path the program names (`PT_INTERP`).
    pub path: std::path::PathBuf,
    /// The host file it was read from.
    pub host_path: Option<std::path::PathBuf>,
    /// Its bytes.
    pub elf: &'a [u8],
}

/// An ELF image placed in memory.
struct Placed {
    entry: u64,
    phdr: u64,
    phnum: u64,
    /// Lowest and one-past-highest mapped address.
    low: u64,
    end: u64,
    /// File offset of the lowest segment (page-aligned down).
    offset: u64,
}

/// Checks that `data` is a little-endian RISC-V ELF of an executable type; the header.
pub(crate) fn riscv_header<'d>(
    data: &'d [u8],
    what: &str,
) -> Result<(&'d elf::FileHeader64<Endianness>, Endianness), Error> {
    // the error already says "cannot load ELF program" after the program's path: name only
    // another object (the dynamic linker)
    let what = if what == "the program" {
        String::new()
    } else {
        format!("{what}: ")
    };
    let (header, endian) = parse_header(data).map_err(|e| elf_err(format!("{what}{e}")))?;
    if endian != Endianness::Little {
        return Err(elf_err(format!(
            "{what}big-endian ELF; RISC-V Linux programs are little-endian"
        )));
    }
    if header.e_machine(endian) != elf::EM_RISCV {
        let m = header.e_machine(endian);
        // a program for a real machine: its own hardware's samples are what Outcrop can read
        let hint = match m {
            elf::EM_X86_64 | elf::EM_AARCH64 => {
                "; the machine runs RISC-V programs only. To profile this one, record it on its own hardware (`perf record -b -- PROG`) and read that with `outcrop import perf.data --binary PROG`"
            }
            _ => "",
        };
        return Err(elf_err(format!(
            "{what}ELF machine {m} ({}) is not RISC-V ({}){hint}",
            machine_name(m),
            elf::EM_RISCV
        )));
    }
    Ok((header, endian))
}

/// A name for common ELF machine numbers (for errors about programs for other machines).
fn machine_name(m: u16) -> &'static str {
    match m {
        elf::EM_X86_64 => "x86-64",
        elf::EM_386 => "i386",
        elf::EM_AARCH64 => "AArch64",
        elf::EM_ARM => "Arm",
        elf::EM_PPC64 => "PowerPC 64",
        elf::EM_S390 => "s390",
        elf::EM_MIPS => "MIPS",
        elf::EM_LOONGARCH => "LoongArch",
        _ => "another architecture",
    }
}

/// Maps the loadable segments of `data` at `bias` (every size and offset checked; the
/// page-rounded union checked against the memory left before anything is mapped).
fn place(
    mem: &mut Memory,
    data: &[u8],
    bias: u64,
    limit: u64,
    reserve: u64,
    what: &str,
) -> Result<Placed, Error> {
    let (header, endian) = riscv_header(data, what)?;
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| elf_err(format!("{what}: program headers: {e}")))?;
    // page ranges [first, end) with their permissions; the union is mapped once
    let mut segments: Vec<(u64, u64, u8)> = Vec::new();
    let mut end = 0u64;
    let mut low = u64::MAX;
    let mut low_offset = 0u64;
    let mut phdr_addr = None;
    let e_phoff = header.e_phoff(endian);
    let mut loads = Vec::new();
    for (i, p) in phdrs.iter().enumerate() {
        let kind = p.p_type(endian);
        if kind == elf::PT_PHDR {
            phdr_addr = Some(p.p_vaddr(endian).wrapping_add(bias));
        }
        if kind != elf::PT_LOAD {
            continue;
        }
        let (vaddr, memsz, filesz, offset) = (
            p.p_vaddr(endian),
            p.p_memsz(endian),
            p.p_filesz(endian),
            p.p_offset(endian),
        );
        let bad = |what2: &str| elf_err(format!("{what}: program header {i} (PT_LOAD): {what2}"));
        if filesz > memsz {
            return Err(bad("file size exceeds memory size"));
        }
        if offset
            .checked_add(filesz)
            .is_none_or(|e| e > data.len() as u64)
        {
            return Err(bad("file range lies outside the file (a truncated file?)"));
        }
        let start = vaddr
            .checked_add(bias)
            .ok_or_else(|| bad("address overflows"))?;
        let seg_end = start
            .checked_add(memsz)
            .ok_or_else(|| bad("address overflows"))?;
        if seg_end > STACK_TOP - STACK_SIZE || memsz > limit {
            return Err(bad(
                "segment lies outside the user address space or exceeds the memory limit",
            ));
        }
        if memsz == 0 {
            continue;
        }
        let flags = p.p_flags(endian);
        let mut pm = 0;
        if flags & elf::PF_R != 0 {
            pm |= perm::R;
        }
        if flags & elf::PF_W != 0 {
            pm |= perm::W;
        }
        if flags & elf::PF_X != 0 {
            pm |= perm::X;
        }
        segments.push((start / PAGE_SIZE, seg_end.div_ceil(PAGE_SIZE), pm));
        if phdr_addr.is_none() && e_phoff >= offset && e_phoff < offset + filesz {
            phdr_addr = Some(start + (e_phoff - offset));
        }
        if start < low {
            low = start;
            low_offset = offset;
        }
        end = end.max(seg_end);
        loads.push((start, offset as usize, filesz as usize));
    }
    if loads.is_empty() {
        return Err(elf_err(format!("{what}: no loadable segments")));
    }
    // Check the page-rounded union of the segments (and what must stay free for the rest)
    // against the limit before mapping anything: overlapping segments count once, and a
    // crafted file fails at once.
    let ranges = permission_ranges(&segments);
    let pages: u64 = ranges.iter().map(|(s, e, _)| e - s).sum();
    let left = (limit / PAGE_SIZE).saturating_sub(mem.mapped_pages());
    if pages.saturating_add(reserve / PAGE_SIZE) > left {
        return Err(Error::OutOfMemory(format!(
            "{what}: the segments need {} MiB and the stack {} MiB; the memory limit is {} MiB",
            (pages * PAGE_SIZE) >> 20,
            STACK_SIZE >> 20,
            limit >> 20
        )));
    }
    for (first, end, pm) in ranges {
        if !mem.is_free(first * PAGE_SIZE, (end - first) * PAGE_SIZE) {
            return Err(elf_err(format!(
                "{what}: segments overlap memory already mapped at {:#x}",
                first * PAGE_SIZE
            )));
        }
        mem.map(first * PAGE_SIZE, (end - first) * PAGE_SIZE, pm)
            .map_err(|_| Error::OutOfMemory(format!("{what}: loading the segments")))?;
    }
    for (start, offset, filesz) in loads {
        mem.poke_bytes(start, &data[offset..offset + filesz])
            .map_err(|_| elf_err(format!("{what}: segment does not fit its mapping")))?;
    }
    let entry = header.e_entry(endian).wrapping_add(bias);
    if mem.perm_at(entry) & perm::X == 0 {
        return Err(elf_err(format!(
            "{what}: entry point {entry:#x} is not in an executable segment"
        )));
    }
    Ok(Placed {
        entry,
        phdr: phdr_addr.unwrap_or(0),
        phnum: phdrs.len() as u64,
        low: low & !(PAGE_SIZE - 1),
        end,
        offset: low_offset & !(PAGE_SIZE - 1),
    })
}

/// Loads `program` (and, for a dynamically linked one, its interpreter `interp`) and returns
/// a machine ready to run it.
pub fn load(program: Program<'_>, kernel: KernelConfig) -> Result<Machine, Error> {
    load_with(program, None, kernel)
}

/// [`load`] with the dynamic linker of a dynamically linked program: it is loaded at
/// [`INTERP_BASE`] and started with `AT_BASE`, `AT_PHDR` and `AT_ENTRY` describing the
/// program, as Linux does. A dynamically linked program without `interp` is an error naming
/// the interpreter it asks for.
pub fn load_with(
    program: Program<'_>,
    interp: Option<Interp<'_>>,
    kernel: KernelConfig,
) -> Result<Machine, Error> {
    let exe = kernel.exe_path.clone();
    // AT_EXECFN is the path as given to execve (argv[0] here), not the canonical one
    let execfn = program.args.first().cloned().unwrap_or_default();
    let mut kernel = Kernel::new(kernel, 0, program.memory_limit);
    let isa = program.isa;
    let image = exec_image(program, interp, &exe, &execfn, &mut kernel)?;
    kernel.set_brk_start(image.brk_start);
    for o in image.objects {
        kernel.record_object(o);
    }
    let mut machine = Machine::new(image.mem, kernel, image.pc, image.sp);
    machine.set_isa(isa);
    Ok(machine)
}

/// A program loaded into a new address space, ready to start.
pub(crate) struct Image {
    /// The address space.
    pub mem: Memory,
    /// Where it starts (the interpreter's entry for a dynamically linked program).
    pub pc: u64,
    /// Its stack pointer (argc, argv, envp, auxv).
    pub sp: u64,
    /// Where its program break starts.
    pub brk_start: u64,
    /// The program and interpreter as mapped objects.
    pub objects: Vec<crate::kernel::MappedObject>,
}

/// Loads `program` (and its interpreter) into a new address space of at most
/// `program.memory_limit` bytes, as the first program of a run or an `execve` does; `exe` is
/// the program's path for its mapped object, `execfn` what `AT_EXECFN` names; `kernel` gives
/// `AT_RANDOM`'s bytes.
pub(crate) fn exec_image(
    program: Program<'_>,
    interp: Option<Interp<'_>>,
    exe: &std::path::Path,
    execfn: &OsStr,
    kernel: &mut Kernel,
) -> Result<Image, Error> {
    let data = program.elf;
    let (header, endian) = riscv_header(data, "the program")?;
    let e_type = header.e_type(endian);
    let bias = match e_type {
        elf::ET_EXEC => 0,
        elf::ET_DYN => PIE_BASE,
        t => return Err(elf_err(format!("ELF type {t} is not an executable"))),
    };
    let wants = interpreter(data)?;
    let interp = match (wants, interp) {
        (None, _) => None,
        (Some(path), None) => {
            return Err(elf_err(format!(
                "dynamically linked program: it needs the interpreter {path}; give the \
                 directory its libraries live under with --sysroot (for Debian's cross \
                 toolchain: --sysroot /usr/riscv64-linux-gnu, as qemu's -L), or link with \
                 -static"
            )))
        }
        (Some(_), Some(i)) => Some(i),
    };
    let mut mem = Memory::new(program.memory_limit);
    let main = place(
        &mut mem,
        data,
        bias,
        program.memory_limit,
        STACK_SIZE,
        "the program",
    )?;
    let placed_interp = match &interp {
        Some(i) => Some(place(
            &mut mem,
            i.elf,
            INTERP_BASE,
            program.memory_limit,
            STACK_SIZE,
            &format!("the interpreter {}", i.path.display()),
        )?),
        None => None,
    };
    let stack_perm = if wants_exec_stack(data) {
        perm::R | perm::W | perm::X
    } else {
        perm::R | perm::W
    };
    mem.map(STACK_TOP - STACK_SIZE, STACK_SIZE, stack_perm)
        .map_err(|_| Error::OutOfMemory("mapping the stack".into()))?;
    // the signal trampoline (Linux puts it in the vDSO): `li a7, 139; ecall`, rt_sigreturn
    mem.map(SIGRETURN_TRAMPOLINE, PAGE_SIZE, perm::R | perm::X)
        .map_err(|_| Error::OutOfMemory("mapping the signal trampoline".into()))?;
    let tramp = [0x08b0_0893u32.to_le_bytes(), 0x0000_0073u32.to_le_bytes()].concat();
    mem.poke_bytes(SIGRETURN_TRAMPOLINE, &tramp)
        .map_err(|_| Error::OutOfMemory("writing the signal trampoline".into()))?;
    let brk_start = main.end.next_multiple_of(PAGE_SIZE);
    let mut objects = vec![crate::kernel::MappedObject {
        guest_path: exe.to_path_buf(),
        host_path: Some(exe.to_path_buf()),
        start: main.low,
        len: main.end - main.low,
        offset: main.offset,
        build_id: build_id_in_prefix(data),
    }];
    if let (Some(i), Some(p)) = (&interp, &placed_interp) {
        objects.push(crate::kernel::MappedObject {
            guest_path: i.path.clone(),
            host_path: i.host_path.clone(),
            start: p.low,
            len: p.end - p.low,
            offset: p.offset,
            build_id: build_id_in_prefix(i.elf),
        });
    }
    let aux = Auxv {
        phdr: main.phdr,
        phnum: main.phnum,
        entry: main.entry,
        base: placed_interp.as_ref().map_or(0, |p| p.low),
        hwcap: program.isa.hwcap(),
    };
    let sp = build_stack(&mut mem, kernel, &program.args, &program.env, execfn, &aux)?;
    let pc = placed_interp.as_ref().map_or(main.entry, |p| p.entry);
    Ok(Image {
        mem,
        pc,
        sp,
        brk_start,
        objects,
    })
}

/// The union of page ranges `[first, end)`, split where the permissions (the OR of the
/// segments covering a page) change, in order and merged: O(n log n) in the segments, whatever
/// their sizes or overlaps.
fn permission_ranges(segments: &[(u64, u64, u8)]) -> Vec<(u64, u64, u8)> {
    // sweep over the boundaries, counting open segments in all and per permission bit
    let mut events: Vec<(u64, i64, u8)> = Vec::with_capacity(segments.len() * 2);
    for &(first, end, pm) in segments {
        events.push((first, 1, pm));
        events.push((end, -1, pm));
    }
    events.sort_unstable();
    let mut depth = 0i64;
    let mut bits = [0i64; 3];
    let mut out: Vec<(u64, u64, u8)> = Vec::new();
    let mut at = 0u64;
    let mut i = 0;
    while i < events.len() {
        let x = events[i].0;
        if x > at && depth > 0 {
            let pm = (0..3).filter(|&b| bits[b] > 0).fold(0u8, |p, b| p | 1 << b);
            match out.last_mut() {
                Some(last) if last.1 == at && last.2 == pm => last.1 = x,
                _ => out.push((at, x, pm)),
            }
        }
        while i < events.len() && events[i].0 == x {
            let (_, d, pm) = events[i];
            depth += d;
            for (b, n) in bits.iter_mut().enumerate() {
                if pm & (1 << b) != 0 {
                    *n += d;
                }
            }
            i += 1;
        }
        at = x;
    }
    out
}

struct Auxv {
    phdr: u64,
    phnum: u64,
    entry: u64,
    /// Where the interpreter is loaded (0 for a static program).
    base: u64,
    hwcap: u64,
}

fn build_stack(
    mem: &mut Memory,
    kernel: &mut Kernel,
    args: &[OsString],
    env: &[OsString],
    execfn: &OsStr,
    aux: &Auxv,
) -> Result<u64, Error> {
    let too_big = || Error::OutOfMemory("arguments and environment do not fit the stack".into());
    let mut top = STACK_TOP - 16;
    let mut push_bytes = |mem: &mut Memory, bytes: &[u8]| -> Result<u64, Error> {
        top = top.checked_sub(bytes.len() as u64).ok_or_else(too_big)?;
        if top < STACK_TOP - STACK_SIZE / 2 {
            return Err(too_big());
        }
        mem.poke_bytes(top, bytes).map_err(|_| too_big())?;
        Ok(top)
    };
    let cstr = |s: &OsStr| {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    };
    let execfn_addr = push_bytes(mem, &cstr(execfn))?;
    let mut argv = Vec::new();
    for a in args {
        argv.push(push_bytes(mem, &cstr(a))?);
    }
    let mut envp = Vec::new();
    for e in env {
        envp.push(push_bytes(mem, &cstr(e))?);
    }
    let mut random = [0u8; 16];
    kernel.random_bytes(&mut random);
    let random_addr = push_bytes(mem, &random)?;
    // the entries qemu-user passes, in its order (see shared/notes/riscv-linux.md)
    let auxv: [(u64, u64); 16] = [
        (3, aux.phdr),     // AT_PHDR
        (4, 56),           // AT_PHENT
        (5, aux.phnum),    // AT_PHNUM
        (6, PAGE_SIZE),    // AT_PAGESZ
        (7, aux.base),     // AT_BASE
        (8, 0),            // AT_FLAGS
        (9, aux.entry),    // AT_ENTRY
        (11, 0),           // AT_UID
        (12, 0),           // AT_EUID
        (13, 0),           // AT_GID
        (14, 0),           // AT_EGID
        (16, aux.hwcap),   // AT_HWCAP
        (17, 100),         // AT_CLKTCK
        (23, 0),           // AT_SECURE
        (25, random_addr), // AT_RANDOM
        (31, execfn_addr), // AT_EXECFN
    ];
    let words = 1 + argv.len() + 1 + envp.len() + 1 + 2 * (auxv.len() + 1);
    let sp = (top - 8 * words as u64) & !15;
    let mut out = Vec::with_capacity(words * 8);
    out.extend_from_slice(&(argv.len() as u64).to_le_bytes());
    for a in argv.iter().chain([&0]).chain(envp.iter()).chain([&0]) {
        out.extend_from_slice(&a.to_le_bytes());
    }
    for (k, v) in auxv.iter().chain([&(0, 0)]) {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    mem.poke_bytes(sp, &out).map_err(|_| too_big())?;
    Ok(sp)
}

/// A loadable segment's file-backed bytes, where the loader places them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSegment {
    /// The address its first byte is loaded at (the PIE base added for a PIE).
    pub start: u64,
    /// Where its bytes begin in the file.
    pub file_offset: u64,
    /// How many of its bytes come from the file (the rest is zero-filled).
    pub file_size: u64,
}

/// The file-backed part of each `PT_LOAD` segment of `data`, placed as [`load`] places it
/// (for reading a program's code without loading it). Errors name the header.
pub fn file_segments(data: &[u8]) -> Result<Vec<FileSegment>, Error> {
    let (header, endian) = parse_header(data)?;
    let bias = match header.e_type(endian) {
        // only RISC-V programs are loaded (at PIE_BASE when position-independent)
        elf::ET_DYN if header.e_machine(endian) == elf::EM_RISCV => PIE_BASE,
        _ => 0,
    };
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| elf_err(format!("program headers: {e}")))?;
    let mut out = Vec::new();
    for (i, p) in phdrs.iter().enumerate() {
        if p.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let (offset, size) = (p.p_offset(endian), p.p_filesz(endian));
        let start = p.p_vaddr(endian).checked_add(bias);
        match (start, offset.checked_add(size)) {
            (Some(start), Some(end)) if end <= data.len() as u64 => out.push(FileSegment {
                start,
                file_offset: offset,
                file_size: size,
            }),
            _ => {
                return Err(elf_err(format!(
                    "program header {i} (PT_LOAD): file range or address out of bounds"
                )))
            }
        }
    }
    Ok(out)
}

/// What identifies a program's code: `build-id:<hex>` from its GNU build-id note, or, for a
/// program linked without one, `sha256:<hex>` of its loadable segments (addresses, sizes and
/// file bytes). Profiles record it so that reading one against a different binary is caught.
pub fn program_id(data: &[u8]) -> Result<String, Error> {
    let (header, endian) = parse_header(data)?;
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| elf_err(format!("program headers: {e}")))?;
    for p in phdrs {
        let Ok(Some(mut notes)) = p.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                return Ok(format!("build-id:{}", hex(note.desc())));
            }
        }
    }
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for p in phdrs.iter().filter(|p| p.p_type(endian) == elf::PT_LOAD) {
        let bytes = p
            .data(endian, data)
            .map_err(|_| elf_err("a PT_LOAD segment lies outside the file"))?;
        h.update(p.p_vaddr(endian).to_le_bytes());
        h.update(p.p_memsz(endian).to_le_bytes());
        h.update(bytes);
    }
    Ok(format!("sha256:{}", hex(&h.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The GNU build-id in the notes of an ELF file whose first bytes are `prefix` (`None` if the
/// program headers or the note lie beyond it, or there is none). Every offset is checked.
pub fn build_id_in_prefix(prefix: &[u8]) -> Option<Vec<u8>> {
    let (header, endian) = parse_header(prefix).ok()?;
    let phdrs = header.program_headers(endian, prefix).ok()?;
    for p in phdrs {
        if p.p_type(endian) != elf::PT_NOTE {
            continue;
        }
        let Ok(Some(mut notes)) = p.notes(endian, prefix) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.n_type(endian) == elf::NT_GNU_BUILD_ID && note.name() == b"GNU" {
                return Some(note.desc().to_vec());
            }
        }
    }
    None
}

/// The load bias of the ELF file `data` mapped with file offset `offset` at `start` (a
/// [`crate::kernel::MappedObject`]): `start` minus the page-aligned link-time address of the
/// loadable segment that begins at that offset. `None` if no segment does.
pub fn load_bias(data: &[u8], start: u64, offset: u64) -> Option<u64> {
    let (header, endian) = parse_header(data).ok()?;
    let phdrs = header.program_headers(endian, data).ok()?;
    phdrs
        .iter()
        .filter(|p| p.p_type(endian) == elf::PT_LOAD)
        .find(|p| p.p_offset(endian) & !(PAGE_SIZE - 1) == offset)
        .and_then(|p| start.checked_sub(p.p_vaddr(endian) & !(PAGE_SIZE - 1)))
}

/// Whether the ELF file `data` has a section named `name` (`.debug_line`), from its section
/// headers alone (nothing else is parsed).
pub fn has_section(data: &[u8], name: &str) -> bool {
    let Ok((header, endian)) = parse_header(data) else {
        return false;
    };
    let Ok(sections) = header.sections(endian, data) else {
        return false;
    };
    sections.iter().any(|s| {
        sections
            .section_name(endian, s)
            .is_ok_and(|n| n == name.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::permission_ranges;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn permission_ranges_are_the_per_page_union(segs in proptest::collection::vec((0u64..40, 1u64..10, 0u8..8), 1..12)) {
            let segs: Vec<(u64, u64, u8)> = segs.into_iter().map(|(f, l, p)| (f, f + l, p)).collect();
            let mut want = std::collections::BTreeMap::new();
            for &(f, e, p) in &segs {
                for v in f..e {
                    *want.entry(v).or_insert(0u8) |= p;
                }
            }
            let got = permission_ranges(&segs);
            let mut pages = std::collections::BTreeMap::new();
            for w in got.windows(2) {
                prop_assert!(w[0].1 <= w[1].0);
                prop_assert!(w[0].1 < w[1].0 || w[0].2 != w[1].2, "not merged");
            }
            for (f, e, p) in got {
                prop_assert!(f < e);
                for v in f..e {
                    pages.insert(v, p);
                }
            }
            prop_assert_eq!(pages, want);
        }
    }
}
