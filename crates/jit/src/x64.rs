//! The x86-64 instructions the baseline tier emits, encoded straight into a byte buffer
//! (safe code).
//!
//! A general assembler (iced-x86's `CodeAssembler`, which the first baseline tier used) builds
//! an instruction list and resolves branch sizes in passes; on SQLite that and its allocations
//! cost 30% of the run. The baseline tier needs some forty fixed forms, every branch is a
//! `rel32` resolved once at the end, and nothing is allocated per instruction. Every form here
//! is checked against iced-x86's decoder (`tests`).

/// A general-purpose register (its hardware number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reg(pub u8);

pub(crate) const RAX: Reg = Reg(0);
pub(crate) const RCX: Reg = Reg(1);
pub(crate) const RDX: Reg = Reg(2);
pub(crate) const RBX: Reg = Reg(3);
pub(crate) const RSI: Reg = Reg(6);
pub(crate) const RDI: Reg = Reg(7);
pub(crate) const R8: Reg = Reg(8);
pub(crate) const R9: Reg = Reg(9);

/// A memory operand `[base + index * scale + disp]` (base never rsp, rbp, r12 or r13, which
/// need other encodings; the tier never uses them as a base).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mem {
    pub base: Reg,
    pub index: Option<(Reg, u8)>,
    pub disp: i32,
}

/// `[base + disp]`.
pub(crate) fn mem(base: Reg, disp: i32) -> Mem {
    Mem {
        base,
        index: None,
        disp,
    }
}

/// An operand in the ModRM's r/m field.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rm {
    R(Reg),
    M(Mem),
}

/// Operand width: 8, 16, 32 or 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum W {
    B8,
    B16,
    B32,
    B64,
}

/// Integer operations of the `01 /r`, `03 /r`, `81 /digit` family (the digit).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arith {
    Add = 0,
    Or = 1,
    And = 4,
    Sub = 5,
    Xor = 6,
    Cmp = 7,
}

/// Shifts (`C1 /digit`, `D3 /digit`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shift {
    Shl = 4,
    Shr = 5,
    Sar = 7,
}

/// Condition codes (the low nibble of `Jcc`, `SETcc`, `CMOVcc`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cc {
    B = 0x2,
    Ae = 0x3,
    E = 0x4,
    Ne = 0x5,
    A = 0x7,
    L = 0xc,
    Ge = 0xd,
    G = 0xf,
}

/// A branch target: bound to an offset once emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Label(u32);

/// An x86-64 code buffer.
#[derive(Default)]
pub(crate) struct Asm {
    pub code: Vec<u8>,
    labels: Vec<u32>,
    /// `rel32` fields to resolve: (offset of the field, label).
    fixups: Vec<(u32, Label)>,
}

const UNBOUND: u32 = u32::MAX;

impl Asm {
    pub fn label(&mut self) -> Label {
        self.labels.push(UNBOUND);
        Label(self.labels.len() as u32 - 1)
    }

    /// Binds `l` here.
    pub fn bind(&mut self, l: Label) {
        self.labels[l.0 as usize] = self.code.len() as u32;
    }

    pub fn offset(&self) -> u32 {
        self.code.len() as u32
    }

    /// Resolves every branch; `Err` names a label used and never bound.
    pub fn finish(mut self) -> Result<Vec<u8>, String> {
        for &(at, l) in &self.fixups {
            let to = self.labels[l.0 as usize];
            if to == UNBOUND {
                return Err(format!("label {} never bound", l.0));
            }
            let rel = (i64::from(to) - i64::from(at) - 4) as i32;
            self.code[at as usize..at as usize + 4].copy_from_slice(&rel.to_le_bytes());
        }
        Ok(self.code)
    }

    fn byte(&mut self, b: u8) {
        self.code.push(b);
    }

    fn rel32(&mut self, l: Label) {
        self.fixups.push((self.offset(), l));
        self.code.extend_from_slice(&[0; 4]);
    }

    /// Prefixes, REX, `op` and the ModRM (with SIB and displacement) for `reg` (a register
    /// number or an opcode digit) and `rm`. `byte_regs`: the instruction names 8-bit registers
    /// (sil, dil need a REX to be told from dh, bh).
    fn modrm(&mut self, w: W, op: &[u8], reg: u8, rm: Rm) {
        if w == W::B16 {
            self.byte(0x66);
        }
        let (b, x) = match rm {
            Rm::R(r) => (r.0, 0),
            Rm::M(m) => (m.base.0, m.index.map_or(0, |(i, _)| i.0)),
        };
        let mut rex = 0x40;
        if w == W::B64 {
            rex |= 8;
        }
        if reg & 8 != 0 {
            rex |= 4;
        }
        if x & 8 != 0 {
            rex |= 2;
        }
        if b & 8 != 0 {
            rex |= 1;
        }
        let byte_reg = w == W::B8 && (matches!(rm, Rm::R(r) if r.0 >= 4) || reg >= 4);
        if rex != 0x40 || byte_reg {
            self.byte(rex);
        }
        self.code.extend_from_slice(op);
        match rm {
            Rm::R(r) => self.byte(0xc0 | (reg & 7) << 3 | (r.0 & 7)),
            Rm::M(m) => {
                let (md, disp8) = if m.disp == 0 {
                    (0u8, false)
                } else if i8::try_from(m.disp).is_ok() {
                    (1, true)
                } else {
                    (2, false)
                };
                match m.index {
                    None => self.byte(md << 6 | (reg & 7) << 3 | (m.base.0 & 7)),
                    Some((i, scale)) => {
                        let ss = match scale {
                            1 => 0,
                            2 => 1,
                            4 => 2,
                            _ => 3,
                        };
                        self.byte(md << 6 | (reg & 7) << 3 | 4);
                        self.byte(ss << 6 | (i.0 & 7) << 3 | (m.base.0 & 7));
                    }
                }
                match md {
                    0 => {}
                    1 if disp8 => self.byte(m.disp as i8 as u8),
                    _ => self.code.extend_from_slice(&m.disp.to_le_bytes()),
                }
            }
        }
    }

    /// `mov dst, src` (register from register or memory).
    pub fn mov(&mut self, w: W, dst: Reg, src: Rm) {
        let op = if w == W::B8 { 0x8a } else { 0x8b };
        self.modrm(w, &[op], dst.0, src);
    }

    /// `mov [m], src`.
    pub fn store(&mut self, w: W, m: Mem, src: Reg) {
        let op = if w == W::B8 { 0x88 } else { 0x89 };
        self.modrm(w, &[op], src.0, Rm::M(m));
    }

    /// `mov r/m64, imm32` (sign-extended).
    pub fn mov_imm32(&mut self, dst: Rm, v: i32) {
        self.modrm(W::B64, &[0xc7], 0, dst);
        self.code.extend_from_slice(&v.to_le_bytes());
    }

    /// `mov dword [m], imm32`.
    pub fn store_u32(&mut self, m: Mem, v: u32) {
        self.modrm(W::B32, &[0xc7], 0, Rm::M(m));
        self.code.extend_from_slice(&v.to_le_bytes());
    }

    /// `mov r32, imm32` (zero-extended to 64 bits).
    pub fn mov_u32(&mut self, dst: Reg, v: u32) {
        if dst.0 & 8 != 0 {
            self.byte(0x41);
        }
        self.byte(0xb8 + (dst.0 & 7));
        self.code.extend_from_slice(&v.to_le_bytes());
    }

    /// A 64-bit constant into `dst`, in the shortest form.
    pub fn mov_const(&mut self, dst: Reg, v: u64) {
        if let Ok(u) = u32::try_from(v) {
            self.mov_u32(dst, u);
        } else if let Ok(i) = i32::try_from(v as i64) {
            self.mov_imm32(Rm::R(dst), i);
        } else {
            self.byte(0x48 | (dst.0 >> 3));
            self.byte(0xb8 + (dst.0 & 7));
            self.code.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// `op r/m, reg`.
    pub fn arith(&mut self, w: W, op: Arith, dst: Rm, src: Reg) {
        self.modrm(w, &[(op as u8) << 3 | 1], src.0, dst);
    }

    /// `op reg, [m]`.
    pub fn arith_load(&mut self, w: W, op: Arith, dst: Reg, src: Mem) {
        self.modrm(w, &[(op as u8) << 3 | 3], dst.0, Rm::M(src));
    }

    /// `op r/m, imm` (imm8 when it fits).
    pub fn arith_imm(&mut self, w: W, op: Arith, dst: Rm, v: i32) {
        if let Ok(b) = i8::try_from(v) {
            self.modrm(w, &[0x83], op as u8, dst);
            self.byte(b as u8);
        } else {
            self.modrm(w, &[0x81], op as u8, dst);
            self.code.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// `test a, b`.
    pub fn test(&mut self, w: W, a: Reg, b: Reg) {
        self.modrm(w, &[0x85], b.0, Rm::R(a));
    }

    /// `shl/shr/sar r, imm8`.
    pub fn shift_imm(&mut self, w: W, op: Shift, r: Reg, n: u8) {
        self.modrm(w, &[0xc1], op as u8, Rm::R(r));
        self.byte(n);
    }

    /// `shl/shr/sar r, cl`.
    pub fn shift_cl(&mut self, w: W, op: Shift, r: Reg) {
        self.modrm(w, &[0xd3], op as u8, Rm::R(r));
    }

    /// `setcc r8; movzx r32, r8`: 0 or 1 by a condition.
    pub fn set_bool(&mut self, cc: Cc, r: Reg) {
        self.modrm(W::B8, &[0x0f, 0x90 | cc as u8], 0, Rm::R(r));
        self.movzx(W::B8, r, Rm::R(r));
    }

    /// `cmovcc dst, src`.
    pub fn cmov(&mut self, w: W, cc: Cc, dst: Reg, src: Reg) {
        self.modrm(w, &[0x0f, 0x40 | cc as u8], dst.0, Rm::R(src));
    }

    /// `movzx r32, r/m8` or `r/m16`.
    pub fn movzx(&mut self, from: W, dst: Reg, src: Rm) {
        let op = if from == W::B8 { 0xb6 } else { 0xb7 };
        // (a byte register as the source: REX for sil/dil, none needed for al)
        let w = if from == W::B8 && matches!(src, Rm::R(r) if r.0 >= 4) {
            W::B8
        } else {
            W::B32
        };
        self.modrm(w, &[0x0f, op], dst.0, src);
    }

    /// `movsx r64, r/m8` or `r/m16`, or `movsxd r64, r/m32`.
    pub fn movsx(&mut self, from: W, dst: Reg, src: Rm) {
        match from {
            W::B8 => self.modrm(W::B64, &[0x0f, 0xbe], dst.0, src),
            W::B16 => self.modrm(W::B64, &[0x0f, 0xbf], dst.0, src),
            _ => self.modrm(W::B64, &[0x63], dst.0, src),
        }
    }

    /// `imul dst, src` (the low half).
    pub fn imul(&mut self, w: W, dst: Reg, src: Reg) {
        self.modrm(w, &[0x0f, 0xaf], dst.0, Rm::R(src));
    }

    /// `imul r64` / `mul r64`: rdx:rax = rax × r, signed or not.
    pub fn mul_wide(&mut self, signed: bool, r: Reg) {
        self.modrm(W::B64, &[0xf7], if signed { 5 } else { 4 }, Rm::R(r));
    }

    /// `not r64`.
    pub fn not(&mut self, r: Reg) {
        self.modrm(W::B64, &[0xf7], 2, Rm::R(r));
    }

    /// `bswap r64`.
    pub fn bswap(&mut self, r: Reg) {
        self.byte(0x48 | (r.0 >> 3));
        self.byte(0x0f);
        self.byte(0xc8 + (r.0 & 7));
    }

    /// `lea dst, [m]`.
    pub fn lea(&mut self, dst: Reg, m: Mem) {
        self.modrm(W::B64, &[0x8d], dst.0, Rm::M(m));
    }

    pub fn push(&mut self, r: Reg) {
        if r.0 & 8 != 0 {
            self.byte(0x41);
        }
        self.byte(0x50 + (r.0 & 7));
    }

    pub fn pop(&mut self, r: Reg) {
        if r.0 & 8 != 0 {
            self.byte(0x41);
        }
        self.byte(0x58 + (r.0 & 7));
    }

    pub fn ret(&mut self) {
        self.byte(0xc3);
    }

    /// `call [m]`.
    pub fn call_mem(&mut self, m: Mem) {
        self.modrm(W::B32, &[0xff], 2, Rm::M(m));
    }

    /// `jmp [m]`.
    pub fn jmp_mem(&mut self, m: Mem) {
        self.modrm(W::B32, &[0xff], 4, Rm::M(m));
    }

    /// `jmp rel32` to `l`.
    pub fn jmp(&mut self, l: Label) {
        self.byte(0xe9);
        self.rel32(l);
    }

    /// `jcc rel32` to `l`.
    pub fn jcc(&mut self, cc: Cc, l: Label) {
        self.byte(0x0f);
        self.byte(0x80 | cc as u8);
        self.rel32(l);
    }

    /// A `jmp rel32` to the next instruction (a chain site, patched later); returns its
    /// offset.
    pub fn site(&mut self) -> u32 {
        let at = self.offset();
        self.code.extend_from_slice(&[0xe9, 0, 0, 0, 0]);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};

    /// The Intel syntax of the one instruction `f` emits, decoded by iced-x86 (which must
    /// consume every byte).
    fn decoded(f: impl FnOnce(&mut Asm)) -> String {
        let mut a = Asm::default();
        f(&mut a);
        let code = a.code;
        let mut d = Decoder::with_ip(64, &code, 0, DecoderOptions::NONE);
        let i = d.decode();
        assert!(!i.is_invalid(), "{code:02x?}");
        assert_eq!(i.len(), code.len(), "{code:02x?}: one instruction");
        let mut out = String::new();
        IntelFormatter::new().format(&i, &mut out);
        out
    }

    /// Emits one instruction.
    type Emit = Box<dyn Fn(&mut Asm)>;

    #[test]
    fn every_form_decodes_to_the_instruction_meant() {
        let m = |b, d| Rm::M(mem(b, d));
        let cases: Vec<(Emit, &str)> = vec![
            (
                Box::new(move |a| a.mov(W::B64, RAX, m(RBX, 8))),
                "mov rax,[rbx+8]",
            ),
            (
                Box::new(move |a| a.mov(W::B64, R8, m(RBX, 0x208))),
                "mov r8,[rbx+208h]",
            ),
            (
                Box::new(move |a| a.mov(W::B32, RAX, m(RDX, 0))),
                "mov eax,[rdx]",
            ),
            (Box::new(|a| a.mov(W::B32, R9, Rm::R(RSI))), "mov r9d,esi"),
            (Box::new(|a| a.mov(W::B32, RAX, Rm::R(RAX))), "mov eax,eax"),
            (
                Box::new(|a| a.store(W::B64, mem(RBX, 0x100), RAX)),
                "mov [rbx+100h],rax",
            ),
            (
                Box::new(|a| a.store(W::B8, mem(RDX, 0), RSI)),
                "mov [rdx],sil",
            ),
            (
                Box::new(|a| a.store(W::B16, mem(RDX, 0), RSI)),
                "mov [rdx],si",
            ),
            (
                Box::new(|a| a.store(W::B32, mem(RDX, 0), R9)),
                "mov [rdx],r9d",
            ),
            (
                Box::new(|a| a.mov_imm32(Rm::M(mem(RBX, 16)), -5)),
                "mov qword ptr [rbx+10h],0FFFFFFFFFFFFFFFBh",
            ),
            (Box::new(|a| a.mov_const(RCX, 7)), "mov ecx,7"),
            (
                Box::new(|a| a.store_u32(mem(RCX, 0), 0x1234)),
                "mov dword ptr [rcx],1234h",
            ),
            (Box::new(|a| a.mov_const(R8, 7)), "mov r8d,7"),
            (
                Box::new(|a| a.mov_const(RAX, u64::MAX)),
                "mov rax,0FFFFFFFFFFFFFFFFh",
            ),
            (
                Box::new(|a| a.mov_const(RCX, 0xffff_ffff_0000_0000)),
                "mov rcx,0FFFFFFFF00000000h",
            ),
            (
                Box::new(|a| a.arith(W::B64, Arith::Add, Rm::R(RAX), RCX)),
                "add rax,rcx",
            ),
            (
                Box::new(|a| a.arith(W::B32, Arith::Sub, Rm::R(RAX), RCX)),
                "sub eax,ecx",
            ),
            (
                Box::new(|a| a.arith(W::B64, Arith::Cmp, Rm::M(mem(RCX, 0)), RAX)),
                "cmp [rcx],rax",
            ),
            (
                Box::new(|a| a.arith(W::B32, Arith::Add, Rm::R(R9), R8)),
                "add r9d,r8d",
            ),
            (
                Box::new(|a| a.arith_load(W::B64, Arith::Cmp, RAX, mem(RBX, 0x48))),
                "cmp rax,[rbx+48h]",
            ),
            (
                Box::new(|a| a.arith_load(W::B64, Arith::Add, RCX, mem(RDI, 0x228))),
                "add rcx,[rdi+228h]",
            ),
            (
                Box::new(|a| a.arith_imm(W::B64, Arith::And, Rm::R(RDX), -4096 | 7)),
                "and rdx,0FFFFFFFFFFFFF007h",
            ),
            (
                Box::new(|a| a.arith_imm(W::B64, Arith::Add, Rm::R(RAX), 3)),
                "add rax,3",
            ),
            (
                Box::new(|a| a.arith_imm(W::B64, Arith::Cmp, Rm::M(mem(RBX, 0x200)), 300)),
                "cmp qword ptr [rbx+200h],12Ch",
            ),
            (
                Box::new(|a| a.arith_imm(W::B32, Arith::And, Rm::R(RCX), 511)),
                "and ecx,1FFh",
            ),
            (Box::new(|a| a.test(W::B64, RCX, RCX)), "test rcx,rcx"),
            (
                Box::new(|a| a.shift_imm(W::B64, Shift::Shr, RCX, 12)),
                "shr rcx,0Ch",
            ),
            (
                Box::new(|a| a.shift_cl(W::B32, Shift::Sar, RAX)),
                "sar eax,cl",
            ),
            (
                Box::new(|a| a.shift_cl(W::B64, Shift::Shl, RAX)),
                "shl rax,cl",
            ),
            (
                Box::new(|a| a.cmov(W::B64, Cc::G, RAX, RCX)),
                "cmovg rax,rcx",
            ),
            (Box::new(|a| a.cmov(W::B32, Cc::B, R9, R8)), "cmovb r9d,r8d"),
            (
                Box::new(|a| a.movzx(W::B8, RAX, Rm::R(RAX))),
                "movzx eax,al",
            ),
            (
                Box::new(|a| a.movzx(W::B16, RAX, Rm::R(RAX))),
                "movzx eax,ax",
            ),
            (
                Box::new(|a| a.movzx(W::B8, RAX, Rm::M(mem(RDX, 0)))),
                "movzx eax,byte ptr [rdx]",
            ),
            (
                Box::new(|a| a.movsx(W::B8, RAX, Rm::M(mem(RDX, 0)))),
                "movsx rax,byte ptr [rdx]",
            ),
            (
                Box::new(|a| a.movsx(W::B16, RAX, Rm::R(RAX))),
                "movsx rax,ax",
            ),
            (
                Box::new(|a| a.movsx(W::B32, RAX, Rm::M(mem(RDX, 0)))),
                "movsxd rax,[rdx]",
            ),
            (
                Box::new(|a| a.movsx(W::B32, R8, Rm::R(R8))),
                "movsxd r8,r8d",
            ),
            (Box::new(|a| a.imul(W::B64, RAX, RCX)), "imul rax,rcx"),
            (Box::new(|a| a.imul(W::B32, RAX, RCX)), "imul eax,ecx"),
            (Box::new(|a| a.mul_wide(true, RCX)), "imul rcx"),
            (Box::new(|a| a.mul_wide(false, RCX)), "mul rcx"),
            (Box::new(|a| a.not(RCX)), "not rcx"),
            (Box::new(|a| a.bswap(RAX)), "bswap rax"),
            (
                Box::new(|a| {
                    a.lea(
                        RAX,
                        Mem {
                            base: RCX,
                            index: Some((RAX, 8)),
                            disp: 0,
                        },
                    )
                }),
                "lea rax,[rcx+rax*8]",
            ),
            (Box::new(|a| a.push(RBX)), "push rbx"),
            (Box::new(|a| a.pop(RBX)), "pop rbx"),
            (Box::new(|a| a.ret()), "ret"),
            (
                Box::new(|a| a.call_mem(mem(RBX, 0x2a0))),
                "call qword ptr [rbx+2A0h]",
            ),
            (
                Box::new(|a| a.jmp_mem(mem(RCX, 8))),
                "jmp qword ptr [rcx+8]",
            ),
            (
                Box::new(|a| {
                    a.site();
                }),
                "jmp 5",
            ),
        ];
        let wrong: Vec<_> = cases
            .into_iter()
            .map(|(emit, want)| (decoded(emit), want))
            .filter(|(got, want)| got != want)
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn branches_resolve_to_their_labels() {
        let mut a = Asm::default();
        let back = a.label();
        a.bind(back);
        a.ret();
        let fwd = a.label();
        a.jcc(Cc::Ne, fwd);
        a.jmp(back);
        a.bind(fwd);
        a.ret();
        let code = a.finish().unwrap();
        let mut d = Decoder::with_ip(64, &code, 0, DecoderOptions::NONE);
        let mut out = Vec::new();
        for i in d.iter() {
            let mut s = String::new();
            IntelFormatter::new().format(&i, &mut s);
            out.push(s);
        }
        assert_eq!(out, ["ret", "jne 000000000000000Ch", "jmp 0", "ret"]);
        let mut a = Asm::default();
        let never = a.label();
        a.jmp(never);
        assert!(a.finish().is_err());
    }
}
