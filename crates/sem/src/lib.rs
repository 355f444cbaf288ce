//! What each RISC-V instruction computes, written once (docs/architecture.md, "One
//! semantics").
//!
//! Every entry of the machine's opcode table (`outcrop_rv::inst`) names a [`Sem`]: an
//! operation family and, where the family has members, which one. Each family has one function
//! here — [`Alu::eval`] for the integer operations of I, M, Zba, Zbb, Zbc, Zbs and Zicond,
//! [`Cond::eval`] for branch conditions, [`AmoOp::eval`] for atomic memory operations,
//! [`FMove::eval`] for bit-pattern moves between register files, [`extend`] for loaded
//! values — and every engine derives from them: the single-step interpreter calls them, the
//! block engine's micro-ops are chosen by the [`Sem`] and call them, and the compiling tier
//! lowers the same [`Sem`] (its code generator emits each operation inline or calls the same
//! function). Floating-point arithmetic is one family ([`Sem::Float`]) whose function is the
//! machine's soft-float unit; control transfers, memory accesses and system instructions are
//! families whose effect on the machine (pc, memory, the kernel) each engine applies itself.
//!
//! Semantics follow the RISC-V unprivileged specification, RV64 (volume I, 20240411).

/// `v`'s low 32 bits, sign-extended to 64 (the `*w` instructions' results).
#[inline(always)]
pub const fn sext32(v: u64) -> u64 {
    v as u32 as i32 as i64 as u64
}

/// A loaded value of `size` bytes (1, 2, 4 or 8; its high bytes are ignored) sign- or
/// zero-extended to 64 bits.
#[inline(always)]
pub const fn extend(v: u64, size: u8, signed: bool) -> u64 {
    match (size, signed) {
        (1, true) => v as u8 as i8 as i64 as u64,
        (1, false) => v as u8 as u64,
        (2, true) => v as u16 as i16 as i64 as u64,
        (2, false) => v as u16 as u64,
        (4, true) => sext32(v),
        (4, false) => v as u32 as u64,
        _ => v,
    }
}

macro_rules! alu {
    ($( $(#[$doc:meta])* $op:ident => |$a:ident, $b:ident| $e:expr; )*) => {
        /// A two-operand integer operation (`x[rd] = op(x[rs1], b)` with `b` the register
        /// `x[rs2]` or the instruction's immediate; unary operations ignore `b`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Alu { $( $(#[$doc])* $op, )* }

        impl Alu {
            /// Every operation, in discriminant order.
            pub const ALL: &'static [Alu] = &[ $( Alu::$op, )* ];

            /// The result of the operation on `a` (rs1) and `b` (rs2 or the immediate).
            #[inline(always)]
            pub fn eval(self, a: u64, b: u64) -> u64 {
                match self { $( Alu::$op => { let ($a, $b) = (a, b); $e } )* }
            }
        }
    };
}

alu! {
    // RV64I
    /// `a + b`.
    Add => |a, b| a.wrapping_add(b);
    /// `a - b`.
    Sub => |a, b| a.wrapping_sub(b);
    /// `a << (b & 63)`.
    Sll => |a, b| a << (b & 63);
    /// Signed `a < b`.
    Slt => |a, b| u64::from((a as i64) < (b as i64));
    /// Unsigned `a < b`.
    Sltu => |a, b| u64::from(a < b);
    /// `a ^ b`.
    Xor => |a, b| a ^ b;
    /// Logical `a >> (b & 63)`.
    Srl => |a, b| a >> (b & 63);
    /// Arithmetic `a >> (b & 63)`.
    Sra => |a, b| ((a as i64) >> (b & 63)) as u64;
    /// `a | b`.
    Or => |a, b| a | b;
    /// `a & b`.
    And => |a, b| a & b;
    /// 32-bit `a + b`, sign-extended.
    Addw => |a, b| sext32(a.wrapping_add(b));
    /// 32-bit `a - b`, sign-extended.
    Subw => |a, b| sext32(a.wrapping_sub(b));
    /// 32-bit `a << (b & 31)`, sign-extended.
    Sllw => |a, b| sext32(u64::from((a as u32) << (b & 31)));
    /// 32-bit logical `a >> (b & 31)`, sign-extended.
    Srlw => |a, b| sext32(u64::from((a as u32) >> (b & 31)));
    /// 32-bit arithmetic `a >> (b & 31)`, sign-extended.
    Sraw => |a, b| ((a as i32) >> (b & 31)) as i64 as u64;
    // M
    /// Low 64 bits of `a × b`.
    Mul => |a, b| a.wrapping_mul(b);
    /// 32-bit `a × b`, sign-extended.
    Mulw => |a, b| sext32(a.wrapping_mul(b));
    /// High 64 bits of signed × signed.
    Mulh => |a, b| ((i128::from(a as i64) * i128::from(b as i64)) >> 64) as u64;
    /// High 64 bits of unsigned × unsigned.
    Mulhu => |a, b| ((u128::from(a) * u128::from(b)) >> 64) as u64;
    /// High 64 bits of signed `a` × unsigned `b`.
    Mulhsu => |a, b| ((i128::from(a as i64) * (b as i128)) >> 64) as u64;
    /// Signed division: all ones by zero, `a` on overflow.
    Div => |a, b| if b == 0 { u64::MAX } else { (a as i64).wrapping_div(b as i64) as u64 };
    /// Unsigned division: all ones by zero.
    Divu => |a, b| a.checked_div(b).unwrap_or(u64::MAX);
    /// Signed remainder: `a` by zero, 0 on overflow.
    Rem => |a, b| if b == 0 { a } else { (a as i64).wrapping_rem(b as i64) as u64 };
    /// Unsigned remainder: `a` by zero.
    Remu => |a, b| a.checked_rem(b).unwrap_or(a);
    /// 32-bit signed division, sign-extended.
    Divw => |a, b| {
        let (a, b) = (a as i32, b as i32);
        if b == 0 { u64::MAX } else { a.wrapping_div(b) as i64 as u64 }
    };
    /// 32-bit unsigned division, sign-extended.
    Divuw => |a, b| (a as u32).checked_div(b as u32).map_or(u64::MAX, |q| sext32(u64::from(q)));
    /// 32-bit signed remainder, sign-extended.
    Remw => |a, b| {
        let (a, b) = (a as i32, b as i32);
        if b == 0 { a as i64 as u64 } else { a.wrapping_rem(b) as i64 as u64 }
    };
    /// 32-bit unsigned remainder, sign-extended.
    Remuw => |a, b| {
        let (a, b) = (a as u32, b as u32);
        sext32(u64::from(if b == 0 { a } else { a % b }))
    };
    // Zba
    /// `b + zext32(a)`.
    AddUw => |a, b| b.wrapping_add(u64::from(a as u32));
    /// `b + (a << 1)`.
    Sh1add => |a, b| b.wrapping_add(a << 1);
    /// `b + (a << 2)`.
    Sh2add => |a, b| b.wrapping_add(a << 2);
    /// `b + (a << 3)`.
    Sh3add => |a, b| b.wrapping_add(a << 3);
    /// `b + (zext32(a) << 1)`.
    Sh1addUw => |a, b| b.wrapping_add(u64::from(a as u32) << 1);
    /// `b + (zext32(a) << 2)`.
    Sh2addUw => |a, b| b.wrapping_add(u64::from(a as u32) << 2);
    /// `b + (zext32(a) << 3)`.
    Sh3addUw => |a, b| b.wrapping_add(u64::from(a as u32) << 3);
    /// `zext32(a) << (b & 63)`.
    SlliUw => |a, b| u64::from(a as u32) << (b & 63);
    // Zbb
    /// `a & !b`.
    Andn => |a, b| a & !b;
    /// `a | !b`.
    Orn => |a, b| a | !b;
    /// `!(a ^ b)`.
    Xnor => |a, b| !(a ^ b);
    /// Leading zeros of `a`.
    Clz => |a, _b| u64::from(a.leading_zeros());
    /// Trailing zeros of `a`.
    Ctz => |a, _b| u64::from(a.trailing_zeros());
    /// Set bits of `a`.
    Cpop => |a, _b| u64::from(a.count_ones());
    /// Leading zeros of the low word.
    Clzw => |a, _b| u64::from((a as u32).leading_zeros());
    /// Trailing zeros of the low word.
    Ctzw => |a, _b| u64::from((a as u32).trailing_zeros());
    /// Set bits of the low word.
    Cpopw => |a, _b| u64::from((a as u32).count_ones());
    /// Signed maximum.
    Max => |a, b| (a as i64).max(b as i64) as u64;
    /// Unsigned maximum.
    Maxu => |a, b| a.max(b);
    /// Signed minimum.
    Min => |a, b| (a as i64).min(b as i64) as u64;
    /// Unsigned minimum.
    Minu => |a, b| a.min(b);
    /// Sign-extend the low byte.
    SextB => |a, _b| a as i8 as i64 as u64;
    /// Sign-extend the low halfword.
    SextH => |a, _b| a as i16 as i64 as u64;
    /// Zero-extend the low halfword.
    ZextH => |a, _b| a & 0xffff;
    /// Rotate left by `b & 63`.
    Rol => |a, b| a.rotate_left((b & 63) as u32);
    /// Rotate right by `b & 63`.
    Ror => |a, b| a.rotate_right((b & 63) as u32);
    /// 32-bit rotate left by `b & 31`, sign-extended.
    Rolw => |a, b| sext32(u64::from((a as u32).rotate_left((b & 31) as u32)));
    /// 32-bit rotate right by `b & 31`, sign-extended.
    Rorw => |a, b| sext32(u64::from((a as u32).rotate_right((b & 31) as u32)));
    /// Each byte all ones if non-zero.
    OrcB => |a, _b| {
        let mut v = 0u64;
        for i in 0..8 {
            if (a >> (8 * i)) & 0xff != 0 {
                v |= 0xff << (8 * i);
            }
        }
        v
    };
    /// Byte reversal.
    Rev8 => |a, _b| a.swap_bytes();
    // Zbc
    /// Low 64 bits of the carry-less product.
    Clmul => |a, b| (0..64).filter(|i| (b >> i) & 1 != 0).fold(0, |v, i| v ^ (a << i));
    /// High 64 bits of the carry-less product.
    Clmulh => |a, b| (1..64).filter(|i| (b >> i) & 1 != 0).fold(0, |v, i| v ^ (a >> (64 - i)));
    /// Bits 126:63 of the carry-less product.
    Clmulr => |a, b| (0..64).filter(|i| (b >> i) & 1 != 0).fold(0, |v, i| v ^ (a >> (63 - i)));
    // Zbs
    /// Clear bit `b & 63`.
    Bclr => |a, b| a & !(1 << (b & 63));
    /// Bit `b & 63`.
    Bext => |a, b| (a >> (b & 63)) & 1;
    /// Invert bit `b & 63`.
    Binv => |a, b| a ^ (1 << (b & 63));
    /// Set bit `b & 63`.
    Bset => |a, b| a | (1 << (b & 63));
    // Zicond
    /// `b == 0 ? 0 : a`.
    CzeroEqz => |a, b| if b == 0 { 0 } else { a };
    /// `b != 0 ? 0 : a`.
    CzeroNez => |a, b| if b != 0 { 0 } else { a };
}

/// A branch condition on two registers (`x0` for comparisons with zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Cond {
    Eq,
    Ne,
    Lt,
    Ge,
    Ltu,
    Geu,
}

impl Cond {
    /// Whether the branch is taken.
    #[inline(always)]
    pub fn eval(self, a: u64, b: u64) -> bool {
        match self {
            Cond::Eq => a == b,
            Cond::Ne => a != b,
            Cond::Lt => (a as i64) < (b as i64),
            Cond::Ge => (a as i64) >= (b as i64),
            Cond::Ltu => a < b,
            Cond::Geu => a >= b,
        }
    }
}

/// The operation of an atomic memory operation (A extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AmoOp {
    Swap,
    Add,
    Xor,
    And,
    Or,
    Min,
    Max,
    Minu,
    Maxu,
}

impl AmoOp {
    /// The value stored: the operation on `old` (the memory value, zero-extended) and `src`
    /// (rs2) in the access's width (`size` 4 or 8; signed comparisons of words compare their
    /// sign-extended values). Only the low `size` bytes of the result are stored.
    #[inline]
    pub fn eval(self, old: u64, src: u64, size: u8) -> u64 {
        let word = size == 4;
        let (a, b) = if word {
            (sext32(old), sext32(src))
        } else {
            (old, src)
        };
        let (ua, ub) = if word {
            (old & 0xffff_ffff, src & 0xffff_ffff)
        } else {
            (old, src)
        };
        match self {
            AmoOp::Swap => src,
            AmoOp::Add => old.wrapping_add(src),
            AmoOp::Xor => old ^ src,
            AmoOp::And => old & src,
            AmoOp::Or => old | src,
            AmoOp::Min => (a as i64).min(b as i64) as u64,
            AmoOp::Max => (a as i64).max(b as i64) as u64,
            AmoOp::Minu => ua.min(ub),
            AmoOp::Maxu => ua.max(ub),
        }
    }
}

/// A move or sign injection between FP and integer registers (bit patterns only: no rounding,
/// no flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FMove {
    /// `fmv.x.d`: `x[rd] = f[rs1]`.
    XFromD,
    /// `fmv.d.x`: `f[rd] = x[rs1]`.
    DFromX,
    /// `fsgnj.d`: `f[rd]` = `f[rs1]` with the sign of `f[rs2]`.
    SgnjD,
    /// `fsgnjn.d`: with the opposite sign of `f[rs2]`.
    SgnjnD,
    /// `fsgnjx.d`: with the sign of `f[rs1]` xor that of `f[rs2]`.
    SgnjxD,
}

impl FMove {
    /// The bits written, from the source bits `a` (rs1) and `b` (rs2).
    #[inline(always)]
    pub fn eval(self, a: u64, b: u64) -> u64 {
        const SIGN: u64 = 1 << 63;
        match self {
            FMove::XFromD | FMove::DFromX => a,
            FMove::SgnjD => (a & !SIGN) | (b & SIGN),
            FMove::SgnjnD => (a & !SIGN) | (!b & SIGN),
            FMove::SgnjxD => a ^ (b & SIGN),
        }
    }
}

/// What an instruction does: its operation family, and the member for families with members.
/// Sizes are in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sem {
    /// `x[rd] = op(x[rs1], x[rs2])`.
    Alu(Alu),
    /// `x[rd] = op(x[rs1], imm)`.
    AluImm(Alu),
    /// `x[rd] = imm` (`lui`).
    Lui,
    /// `x[rd] = pc + imm` (`auipc`).
    Auipc,
    /// `x[rd] = extend(load(x[rs1] + imm, size), signed)`.
    Load(u8, bool),
    /// `store(x[rs1] + imm, x[rs2], size)`.
    Store(u8),
    /// `f[rd] = load(x[rs1] + imm, size)` (a word NaN-boxed).
    FLoad(u8),
    /// `store(x[rs1] + imm, f[rs2], size)`.
    FStore(u8),
    /// Go to `pc + imm` if the condition holds on `x[rs1]`, `x[rs2]`.
    Branch(Cond),
    /// `x[rd] = pc + len`, go to `pc + imm`.
    Jal,
    /// `x[rd] = pc + len`, go to `(x[rs1] + imm) & !1`.
    Jalr,
    /// Outcrop's branch-on-random: go to `pc + imm` with the probability in `rd`'s field.
    Brr,
    /// Load-reserved of `size` bytes.
    Lr(u8),
    /// Store-conditional of `size` bytes.
    Sc(u8),
    /// An atomic memory operation of `size` bytes.
    Amo(AmoOp, u8),
    /// A bit-pattern FP move or sign injection.
    FMove(FMove),
    /// The rest of F, D and Zfa: rounding, flags and NaNs, through the soft-float unit.
    Float,
    /// A CSR access (Zicsr).
    Csr,
    /// `fence`: nothing on one hart.
    Fence,
    /// `fence.i`: code may have changed.
    FenceI,
    /// A system call.
    Ecall,
    /// A breakpoint trap.
    Ebreak,
    /// `x[rd] = 0` (Zimop's may-be-operations).
    Zero,
    /// No effect (Zawrs on one hart).
    Nop,
    /// `cbo.zero`: zero the 64-byte block holding `x[rs1]`.
    CboZero,
    /// A vector instruction (V, Zvbb, Zvfhmin), run by the machine's vector unit.
    Vector,
    /// An encoding no entry matches.
    Illegal,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edge_values_follow_the_specification() {
        assert_eq!(Alu::Clz.eval(0, 0), 64);
        assert_eq!(Alu::Clzw.eval(0xffff_ffff_0000_0000, 0), 32);
        assert_eq!(Alu::Ctz.eval(0, 0), 64);
        assert_eq!(Alu::Ctzw.eval(1 << 40, 0), 32);
        assert_eq!(Alu::Cpopw.eval(u64::MAX, 0), 32);
        assert_eq!(Alu::Max.eval(u64::MAX, 1), 1); // -1 < 1 signed
        assert_eq!(Alu::Maxu.eval(u64::MAX, 1), u64::MAX);
        assert_eq!(Alu::SextB.eval(0x80, 0), 0xffff_ffff_ffff_ff80);
        assert_eq!(Alu::SextH.eval(0x1_7fff, 0), 0x7fff);
        assert_eq!(Alu::ZextH.eval(u64::MAX, 0), 0xffff);
        assert_eq!(Alu::AddUw.eval(0xffff_ffff_8000_0000, 1), 0x8000_0001);
        assert_eq!(Alu::Sh3addUw.eval(0xffff_ffff_0000_0001, 8), 16);
        assert_eq!(Alu::SlliUw.eval(u64::MAX, 4), 0xf_ffff_fff0);
        assert_eq!(Alu::Rolw.eval(0x8000_0001, 1), 3);
        assert_eq!(Alu::Rorw.eval(1, 1), 0xffff_ffff_8000_0000);
        assert_eq!(Alu::Ror.eval(1, 65), 1 << 63); // shift amount masked to 6 bits
        assert_eq!(
            Alu::OrcB.eval(0x0100_0000_0000_2000, 0),
            0xff00_0000_0000_ff00
        );
        assert_eq!(
            Alu::Rev8.eval(0x0102_0304_0506_0708, 0),
            0x0807_0605_0403_0201
        );
        assert_eq!(Alu::Bext.eval(1 << 63, 127), 1);
        assert_eq!(Alu::Bset.eval(0, 63), 1 << 63);
        assert_eq!(Alu::CzeroEqz.eval(7, 0), 0);
        assert_eq!(Alu::CzeroEqz.eval(7, 1), 7);
        assert_eq!(Alu::CzeroNez.eval(7, 0), 7);
        assert_eq!(Alu::CzeroNez.eval(7, 2), 0);
        assert_eq!(Alu::Sraw.eval(0x8000_0000, 31), u64::MAX);
        assert_eq!(Alu::Sllw.eval(1, 31), 0xffff_ffff_8000_0000);
    }

    #[test]
    fn division_corner_cases_follow_the_specification() {
        let min = i64::MIN as u64;
        let m1 = u64::MAX;
        assert_eq!(Alu::Div.eval(7, 0), m1);
        assert_eq!(Alu::Divu.eval(7, 0), m1);
        assert_eq!(Alu::Rem.eval(7, 0), 7);
        assert_eq!(Alu::Remu.eval(7, 0), 7);
        assert_eq!(Alu::Div.eval(min, m1), min);
        assert_eq!(Alu::Rem.eval(min, m1), 0);
        assert_eq!(Alu::Divw.eval(0x8000_0000, m1), 0xffff_ffff_8000_0000);
        assert_eq!(Alu::Remw.eval(0x8000_0000, m1), 0);
        assert_eq!(Alu::Divuw.eval(5, 0), m1);
        assert_eq!(Alu::Remuw.eval(0xffff_ffff, 0), m1);
        assert_eq!(Alu::Remw.eval(0xffff_fff9, 0), (-7i64) as u64);
        assert_eq!(Alu::Mulhsu.eval(m1, 2), m1);
        assert_eq!(Alu::Mulh.eval(m1, m1), 0);
        assert_eq!(Alu::Mulhu.eval(m1, m1), m1 - 1);
    }

    #[test]
    fn carry_less_products_match_the_specifications_examples() {
        // x^2 + 1 squared is x^4 + 1 with no carries
        assert_eq!(Alu::Clmul.eval(0b101, 0b101), 0b10001);
        assert_eq!(Alu::Clmulh.eval(0b101, 0b101), 0);
        // (x^63)(x^63) = x^126: bit 62 of the high half, bit 63 of the reversed window
        assert_eq!(Alu::Clmulh.eval(1 << 63, 1 << 63), 1 << 62);
        assert_eq!(Alu::Clmulr.eval(1 << 63, 1 << 63), 1 << 63);
        assert_eq!(Alu::Clmul.eval(1 << 63, 1 << 63), 0);
        assert_eq!(Alu::Clmul.eval(u64::MAX, 1), u64::MAX);
    }

    /// The carry-less product in 128 bits, bit by bit.
    fn clmul128(a: u64, b: u64) -> u128 {
        (0..64)
            .filter(|i| (b >> i) & 1 != 0)
            .fold(0u128, |v, i| v ^ (u128::from(a) << i))
    }

    proptest! {
        #[test]
        fn the_three_carry_less_products_are_windows_of_one(a: u64, b: u64) {
            let p = clmul128(a, b);
            prop_assert_eq!(Alu::Clmul.eval(a, b), p as u64);
            prop_assert_eq!(Alu::Clmulh.eval(a, b), (p >> 64) as u64);
            prop_assert_eq!(Alu::Clmulr.eval(a, b), (p >> 63) as u64);
        }

        #[test]
        fn word_operations_sign_extend_their_result(a: u64, b: u64) {
            for op in [Alu::Addw, Alu::Subw, Alu::Sllw, Alu::Srlw, Alu::Sraw, Alu::Mulw,
                       Alu::Divw, Alu::Divuw, Alu::Remw, Alu::Remuw, Alu::Rolw, Alu::Rorw] {
                let v = op.eval(a, b);
                prop_assert_eq!(v, sext32(v), "{:?}", op);
            }
        }

        #[test]
        fn atomics_compute_in_their_width(old: u64, src: u64) {
            let w = |v: u64| v & 0xffff_ffff;
            prop_assert_eq!(w(AmoOp::Minu.eval(w(old), src, 4)), w(old).min(w(src)));
            prop_assert_eq!(
                sext32(AmoOp::Max.eval(w(old), src, 4)) as i64,
                (sext32(old) as i64).max(sext32(src) as i64)
            );
            prop_assert_eq!(AmoOp::Add.eval(old, src, 8), old.wrapping_add(src));
        }
    }
}
