//! x86-64 code for the CFG: instruction lengths and how each ends a block, from `iced-x86`'s
//! flow-control classes (jcc/loop/jrcxz → conditional, `jmp rel` → jump, `call` → call,
//! `ret` → return, `jmp r/m` → indirect, `syscall`/`int` → system call, `ud2` → halt).

use super::{section_at, Insn, Term};
use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, Mnemonic,
};

fn term(i: &Instruction) -> Option<Term> {
    match i.flow_control() {
        FlowControl::Next | FlowControl::XbeginXabortXend => None,
        FlowControl::ConditionalBranch => Some(Term::Cond {
            target: i.near_branch_target(),
        }),
        FlowControl::UnconditionalBranch => match i.near_branch_target() {
            0 => Some(Term::Indirect), // far jumps
            target => Some(Term::Jump { target }),
        },
        FlowControl::IndirectBranch => Some(Term::Indirect),
        FlowControl::Call => Some(Term::Call {
            target: Some(i.near_branch_target()).filter(|&t| t != 0),
        }),
        FlowControl::IndirectCall => Some(Term::Call { target: None }),
        FlowControl::Return => Some(Term::Return),
        FlowControl::Interrupt => Some(Term::Ecall),
        FlowControl::Exception => Some(Term::Halt),
    }
}

fn decoder<'c>(code: &[(u64, &'c [u8])], start: u64, end: u64) -> Option<(Decoder<'c>, u64)> {
    let (base, bytes, end) = section_at(code, start, end)?;
    let slice = &bytes[(start - base) as usize..(end - base) as usize];
    Some((
        Decoder::with_ip(64, slice, start, DecoderOptions::NONE),
        end,
    ))
}

/// Instructions of `start..end`; decoding stops at bytes that are not an instruction.
pub(super) fn decode(code: &[(u64, &[u8])], start: u64, end: u64) -> Vec<Insn> {
    let mut out = Vec::new();
    let Some((mut d, _)) = decoder(code, start, end) else {
        return out;
    };
    let mut i = Instruction::default();
    while d.can_decode() {
        d.decode_out(&mut i);
        if i.is_invalid() {
            out.push(Insn {
                pc: i.ip(),
                len: i.len().max(1) as u64,
                term: Some(Term::Halt),
            });
            break;
        }
        let t = match i.mnemonic() {
            Mnemonic::Syscall | Mnemonic::Sysenter => Some(Term::Ecall),
            Mnemonic::Hlt => Some(Term::Halt),
            _ => term(&i),
        };
        out.push(Insn {
            pc: i.ip(),
            len: i.len() as u64,
            term: t,
        });
    }
    out
}

/// `start..end` as AT&T text: (pc, text, direct target).
pub(super) fn text(code: &[(u64, &[u8])], start: u64, end: u64) -> Vec<(u64, String, Option<u64>)> {
    let mut out = Vec::new();
    let Some((mut d, _)) = decoder(code, start, end) else {
        return out;
    };
    let mut f = GasFormatter::new();
    let o = f.options_mut();
    o.set_uppercase_hex(false);
    o.set_branch_leading_zeros(false);
    o.set_space_after_operand_separator(true);
    let mut i = Instruction::default();
    while d.can_decode() {
        d.decode_out(&mut i);
        let mut s = String::new();
        f.format(&i, &mut s);
        let target = match term(&i) {
            Some(Term::Cond { target } | Term::Jump { target }) => Some(target),
            Some(Term::Call { target }) => target,
            _ => None,
        };
        out.push((i.ip(), s, target));
        if i.is_invalid() {
            break;
        }
    }
    out
}
