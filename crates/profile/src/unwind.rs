//! The guest's call stack from its DWARF call-frame information, as `gdb`'s `bt` finds it:
//! `.eh_frame` (C++ code, glibc, and code built with unwind tables) and `.debug_frame` (what
//! riscv64 GCC writes for C code built with `-g`).
//!
//! [`CallFrames`] holds the call-frame information of each object (the program, and for a dynamically
//! linked one its dynamic linker and libraries, each at its load bias); [`CallFrames::backtrace`]
//! walks from a stopped guest's registers: at each frame the row of the frame description
//! covering the pc gives the canonical frame address (CFA, a register plus an offset) and
//! where the return address (`ra`, DWARF register 1) and callee-saved registers were saved
//! (CFA + offset). The caller's pc is the saved return address and its `sp` the CFA. A return
//! address is looked up one byte back (the call, not the instruction after it).
//!
//! Where no description covers the pc (hand-written assembly without CFI, a stripped
//! object), the innermost frame falls back to `ra` as a leaf function leaves it; elsewhere the
//! walk stops. It also stops at an undefined return address (`_start`'s), a return address
//! of 0, a frame that does not move the stack up, and after `max` frames.
//!
//! Memory is read through a closure, so this module reads no machine and no file.

use gimli::{CfaRule, DebugFrame, EhFrame, LittleEndian, RegisterRule, UnwindSection};

/// DWARF register numbers of RV64: `x0`–`x31` are 0–31.
const RA: u16 = 1;
const SP: u16 = 2;

/// Largest `.eh_frame` or `.debug_frame` read (bytes, after decompression).
pub const MAX_EH_FRAME: u64 = 64 << 20;

/// One object's call-frame information.
struct Object {
    /// Load bias: an address as loaded minus its link-time address.
    bias: u64,
    /// The loaded range `[lo, hi)`.
    lo: u64,
    hi: u64,
    eh_frame: Vec<u8>,
    /// `.debug_frame` (GCC writes C code's call-frame information there, with `-g`, when it
    /// does not emit unwind tables).
    debug_frame: Vec<u8>,
    bases: gimli::BaseAddresses,
    /// Every frame description of both sections, by link-time start: `(start, end, in
    /// .debug_frame, offset)`. Built in one pass, so a lookup is a binary search: a hostile
    /// object with a million descriptions costs one pass, not one per frame.
    index: Vec<(u64, u64, bool, usize)>,
}

/// Most frame descriptions indexed per object.
pub const MAX_FDES: usize = 1 << 20;

/// The frame descriptions of `section`, as `(start, end, debug, offset)`, at most `room`.
fn index_of<'a, S: UnwindSection<gimli::EndianSlice<'a, LittleEndian>>>(
    section: &S,
    bases: &gimli::BaseAddresses,
    debug: bool,
    room: usize,
    out: &mut Vec<(u64, u64, bool, usize)>,
) {
    let mut entries = section.entries(bases);
    let mut added = 0;
    // a damaged entry ends the pass: what came before it stays usable
    while let Ok(Some(entry)) = entries.next() {
        if added >= room {
            break;
        }
        if let gimli::CieOrFde::Fde(partial) = entry {
            let Ok(fde) = partial.parse(S::cie_from_offset) else {
                continue;
            };
            let start = fde.initial_address();
            let end = start.saturating_add(fde.len());
            out.push((start, end, debug, fde.offset()));
            added += 1;
        }
    }
}

impl Object {
    /// The row of the frame description covering link-time address `addr` (the innermost
    /// of overlapping ones, `.eh_frame` before `.debug_frame` at one start).
    fn row(
        &self,
        ctx: &mut gimli::UnwindContext<usize>,
        addr: u64,
    ) -> Option<gimli::UnwindTableRow<usize>> {
        let n = self.index.partition_point(|e| e.0 <= addr);
        let &(_, end, debug, offset) = self.index[..n].iter().rev().find(|e| addr < e.1)?;
        debug_assert!(addr < end);
        if debug {
            let mut section = DebugFrame::new(&self.debug_frame, LittleEndian);
            section.set_address_size(8);
            let fde = section
                .fde_from_offset(
                    &self.bases,
                    gimli::DebugFrameOffset(offset),
                    DebugFrame::cie_from_offset,
                )
                .ok()?;
            fde.unwind_info_for_address(&section, &self.bases, ctx, addr)
                .ok()
                .cloned()
        } else {
            let section = EhFrame::new(&self.eh_frame, LittleEndian);
            let fde = section
                .fde_from_offset(
                    &self.bases,
                    gimli::EhFrameOffset(offset),
                    EhFrame::cie_from_offset,
                )
                .ok()?;
            fde.unwind_info_for_address(&section, &self.bases, ctx, addr)
                .ok()
                .cloned()
        }
    }
}

/// The call-frame information of the objects of a run, to unwind its stack.
#[derive(Default)]
pub struct CallFrames {
    objects: Vec<Object>,
}

impl CallFrames {
    /// No objects yet.
    pub fn new() -> CallFrames {
        CallFrames::default()
    }

    /// Adds the ELF object `data`, loaded `bias` bytes above its link-time addresses over
    /// `[lo, hi)`. An object without `.eh_frame` or `.debug_frame`, or one that does not
    /// parse, adds nothing
    /// (its frames then end the walk).
    pub fn add_elf(&mut self, data: &[u8], bias: u64, lo: u64, hi: u64) {
        use object::{Object as _, ObjectSection};
        let Ok(file) = object::File::parse(data) else {
            return;
        };
        if !file.is_little_endian() {
            return;
        }
        let read = |name: &str| -> Vec<u8> {
            let Some(section) = file.section_by_name(name) else {
                return Vec::new();
            };
            let size = section
                .compressed_file_range()
                .map_or(u64::MAX, |r| r.uncompressed_size);
            if size > MAX_EH_FRAME {
                return Vec::new();
            }
            section
                .uncompressed_data()
                .map(|d| d.into_owned())
                .unwrap_or_default()
        };
        let (eh_frame, debug_frame) = (read(".eh_frame"), read(".debug_frame"));
        if eh_frame.is_empty() && debug_frame.is_empty() {
            return;
        }
        let eh_address = file.section_by_name(".eh_frame").map_or(0, |s| s.address());
        let mut bases = gimli::BaseAddresses::default().set_eh_frame(eh_address);
        if let Some(text) = file.section_by_name(".text") {
            bases = bases.set_text(text.address());
        }
        if let Some(got) = file.section_by_name(".got") {
            bases = bases.set_got(got.address());
        }
        let mut index = Vec::new();
        let eh = EhFrame::new(&eh_frame, LittleEndian);
        index_of(&eh, &bases, false, MAX_FDES, &mut index);
        let mut debug = DebugFrame::new(&debug_frame, LittleEndian);
        debug.set_address_size(8);
        let room = MAX_FDES - index.len();
        index_of(&debug, &bases, true, room, &mut index);
        index.sort_unstable();
        self.objects.push(Object {
            bias,
            lo,
            hi,
            eh_frame,
            debug_frame,
            bases,
            index,
        });
    }

    /// The pcs of the call stack of a guest stopped at `pc` with registers `regs`: `pc`
    /// first, then each caller's return address, innermost first, at most `max`. `read`
    /// gives the guest's 8-byte little-endian word at an address (`None`: unreadable).
    pub fn backtrace(
        &self,
        pc: u64,
        regs: &[u64; 32],
        read: &mut dyn FnMut(u64) -> Option<u64>,
        max: usize,
    ) -> Vec<u64> {
        let mut regs = *regs;
        let mut pc = pc;
        let mut out = vec![pc];
        let mut ctx = gimli::UnwindContext::new();
        while out.len() < max {
            // a return address is looked up at the call, one byte back
            let at = if out.len() == 1 {
                pc
            } else {
                pc.wrapping_sub(1)
            };
            let Some(next) = self.step(&mut ctx, at, out.len() == 1, &mut regs, read) else {
                if out.len() == 1 && regs[RA as usize] != 0 && regs[RA as usize] != pc {
                    // a leaf without call-frame information: its caller is in `ra`
                    pc = regs[RA as usize];
                    out.push(pc);
                    continue;
                }
                break;
            };
            if next == 0 {
                break;
            }
            pc = next;
            out.push(pc);
        }
        out
    }

    /// Unwinds one frame at `at`: the caller's pc, with `regs` set to the caller's (its
    /// `sp` and the callee-saved registers the frame restored). A return address the row
    /// does not mention is still in `ra` in the `innermost` frame (a leaf, or a prologue
    /// before it saves `ra`); in an outer frame it ends the stack (`_start` marks its return
    /// address undefined, which gimli does not tell from unmentioned).
    fn step(
        &self,
        ctx: &mut gimli::UnwindContext<usize>,
        at: u64,
        innermost: bool,
        regs: &mut [u64; 32],
        read: &mut dyn FnMut(u64) -> Option<u64>,
    ) -> Option<u64> {
        // (an object and its separate debug file cover the same range)
        let row = self
            .objects
            .iter()
            .rev()
            .filter(|o| at >= o.lo && at < o.hi)
            .find_map(|o| o.row(ctx, at.wrapping_sub(o.bias)))?;
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => {
                let base = *regs.get(usize::from(register.0))?;
                base.wrapping_add_signed(*offset)
            }
            CfaRule::Expression(_) => return None,
        };
        let old = *regs;
        let value =
            |rule: &RegisterRule<usize>, reg: u16, read: &mut dyn FnMut(u64) -> Option<u64>| {
                match rule {
                    RegisterRule::Undefined => None,
                    RegisterRule::SameValue => Some(old[usize::from(reg)]),
                    RegisterRule::Offset(n) => read(cfa.wrapping_add_signed(*n)),
                    RegisterRule::ValOffset(n) => Some(cfa.wrapping_add_signed(*n)),
                    RegisterRule::Register(r) => old.get(usize::from(r.0)).copied(),
                    _ => None,
                }
            };
        let ra = match row.register(gimli::Register(RA)) {
            RegisterRule::Undefined if innermost => old[RA as usize],
            rule => value(&rule, RA, read)?,
        };
        for (reg, rule) in row.registers() {
            let i = usize::from(reg.0);
            if i < 32 && reg.0 != SP {
                if let Some(v) = value(rule, reg.0, read) {
                    regs[i] = v;
                }
            }
        }
        // the stack grows down: a caller's frame lies above its callee's, or at it for a leaf
        // that made none (a frame that neither moves the stack nor the pc would loop)
        let sp = old[SP as usize];
        if cfa < sp || (cfa == sp && !innermost) {
            return None;
        }
        regs[SP as usize] = cfa;
        Some(ra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundled workload (static glibc: `.eh_frame` for its C library); copied into a
    /// `Vec` before parsing, for the ELF headers' alignment.
    const HELLO: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../workloads/bin/hello"
    ));

    #[test]
    fn damaged_objects_add_nothing_and_never_panic() {
        let mut f = CallFrames::new();
        f.add_elf(b"not an ELF file", 0, 0, u64::MAX);
        let mut elf = HELLO.to_vec();
        // every byte of the second half flipped: sections, tables and CFI garbage
        let half = elf.len() / 2;
        for b in &mut elf[half..] {
            *b = !*b;
        }
        f.add_elf(&elf, 0, 0, u64::MAX);
        let regs = [0x1000u64; 32];
        let bt = f.backtrace(0x10400, &regs, &mut |a| Some(a ^ 0x5555), 64);
        assert!(!bt.is_empty() && bt.len() <= 64);
    }

    #[test]
    fn every_described_function_of_a_program_has_a_row_by_binary_search() {
        let elf = HELLO.to_vec();
        let mut f = CallFrames::new();
        f.add_elf(&elf, 0, 0, u64::MAX);
        let o = &f.objects[0];
        assert!(o.index.len() > 100, "{}", o.index.len());
        assert!(o.index.windows(2).all(|w| w[0] <= w[1]));
        let mut ctx = gimli::UnwindContext::new();
        for &(start, end, _, _) in o.index.iter().filter(|e| e.1 > e.0) {
            for addr in [start, end - 1] {
                assert!(o.row(&mut ctx, addr).is_some(), "{addr:#x}");
            }
        }
    }

    #[test]
    fn no_information_gives_the_pc_and_a_leafs_caller() {
        let f = CallFrames::new();
        let mut regs = [0u64; 32];
        regs[RA as usize] = 0x2000;
        let bt = f.backtrace(0x1000, &regs, &mut |_| None, 16);
        assert_eq!(bt, vec![0x1000, 0x2000]);
        regs[RA as usize] = 0;
        assert_eq!(f.backtrace(0x1000, &regs, &mut |_| None, 16), vec![0x1000]);
    }
}
