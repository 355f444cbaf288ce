//! Where a faulting guest was: the function, source line and call stack of the pc it faulted
//! at, from the program's (and its libraries') call-frame information, symbols and line
//! tables, as a debugger's `bt` shows them.

use crate::image::ProgramImage;
use outcrop_profile::lines::LineTable;
use outcrop_profile::unwind::CallFrames;
use outcrop_rv::symbols::Symbols;
use outcrop_rv::Machine;

/// Most frames of a backtrace.
pub const MAX_FRAMES: usize = 64;

/// One frame of a faulting guest's call stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackFrame {
    /// The pc: the faulting instruction's in frame 0, a return address in the others.
    pub pc: u64,
    /// `function+0xoffset` of the pc, when a symbol covers it.
    pub function: Option<String>,
    /// `file:line` of the instruction (of the call, for a return address), when the line
    /// tables cover it.
    pub line: Option<String>,
}

impl std::fmt::Display for StackFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.pc)?;
        if let Some(func) = &self.function {
            write!(f, " in {func}")?;
        }
        if let Some(line) = &self.line {
            write!(f, " at {line}")?;
        }
        Ok(())
    }
}

/// The call stack of the guest `machine` stopped in (at its pc, with its current thread's
/// registers), innermost first, each frame named by `symbols` (the program's and its
/// objects') and the line tables of the program and of each object that has them.
pub fn backtrace(
    machine: &mut Machine,
    image: &ProgramImage,
    symbols: Option<&Symbols>,
) -> Vec<StackFrame> {
    let objects = machine.kernel.mapped_objects().to_vec();
    let mut frames = CallFrames::new();
    let mut lines = image.line_table().ok().flatten();
    let (bias, lo, hi) = match objects.first() {
        Some(p) => (
            outcrop_rv::elf::load_bias(image.bytes(), p.start, p.offset).unwrap_or(0),
            p.start,
            p.start.saturating_add(p.len),
        ),
        None => (program_bias(image.bytes()), 0, u64::MAX),
    };
    frames.add_elf(image.bytes(), bias, lo, hi);
    if let Some(d) = image.debug_file() {
        frames.add_elf(d, bias, lo, hi);
    }
    let naming = image.naming();
    for (i, o) in objects.iter().enumerate().skip(1) {
        let m = o.mapping(i as u32);
        let Some(bytes) = crate::objects::object_bytes(&m) else {
            continue;
        };
        let Some(bias) = outcrop_rv::elf::load_bias(&bytes, m.start, m.offset) else {
            continue;
        };
        let hi = m.start.saturating_add(m.len);
        frames.add_elf(&bytes, bias, m.start, hi);
        if let Some((_, d)) = naming.debug.find(&bytes, m.host_path) {
            frames.add_elf(&d, bias, m.start, hi);
        }
        let Some(line_bytes) = naming.line_bytes(bytes, m.host_path) else {
            continue;
        };
        if let Some(t) = LineTable::from_elf_at(&line_bytes, bias).ok().flatten() {
            match &mut lines {
                Some(l) => l.add_object(t, m.start, hi),
                None => lines = Some(t),
            }
        }
    }
    let regs = machine.x;
    let mem = &mut machine.mem;
    let pcs = frames.backtrace(
        machine.pc,
        &regs,
        &mut |addr| mem.load_u64(addr).ok(),
        MAX_FRAMES,
    );
    pcs.iter()
        .enumerate()
        .map(|(i, &pc)| {
            // a return address names the call, one byte back
            let at = if i == 0 { pc } else { pc.wrapping_sub(1) };
            let function = symbols.and_then(|s| s.lookup(pc)).map(|f| f.to_string());
            let line = lines.as_mut().and_then(|t| {
                let loc = t.locate(at)?;
                Some(format!("{}:{}", t.file_name(loc.file), loc.line))
            });
            StackFrame { pc, function, line }
        })
        .collect()
}

/// The load bias of a program the machine loaded without recording a mapping for it.
fn program_bias(bytes: &[u8]) -> u64 {
    use object::{Object, ObjectKind};
    match object::File::parse(bytes) {
        Ok(f) if f.kind() == ObjectKind::Dynamic => outcrop_rv::elf::PIE_BASE,
        _ => 0,
    }
}
