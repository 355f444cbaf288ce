//! The integer operations of Zba, Zbb, Zbs and Zicond as one pure function, shared by the
//! single-step interpreter and the block engine's micro-ops so the two cannot differ
//! (RISC-V unprivileged ISA, chapters "B" and "Zicond", RV64 semantics).

use crate::inst::Op;

fn sext32(v: u64) -> u64 {
    v as u32 as i32 as i64 as u64
}

/// The result of integer operation `op` on `a` (rs1), `b` (rs2) and `imm` (the shift amount
/// of the immediate forms); `None` if `op` is not one of these extensions'.
#[inline]
pub fn eval(op: Op, a: u64, b: u64, imm: u64) -> Option<u64> {
    let sh = (imm & 63) as u32;
    Some(match op {
        // Zba
        Op::AddUw => b.wrapping_add(u64::from(a as u32)),
        Op::Sh1add => b.wrapping_add(a << 1),
        Op::Sh2add => b.wrapping_add(a << 2),
        Op::Sh3add => b.wrapping_add(a << 3),
        Op::Sh1addUw => b.wrapping_add(u64::from(a as u32) << 1),
        Op::Sh2addUw => b.wrapping_add(u64::from(a as u32) << 2),
        Op::Sh3addUw => b.wrapping_add(u64::from(a as u32) << 3),
        Op::SlliUw => u64::from(a as u32) << sh,
        // Zbb
        Op::Andn => a & !b,
        Op::Orn => a | !b,
        Op::Xnor => !(a ^ b),
        Op::Clz => u64::from(a.leading_zeros()),
        Op::Ctz => u64::from(a.trailing_zeros()),
        Op::Cpop => u64::from(a.count_ones()),
        Op::Clzw => u64::from((a as u32).leading_zeros()),
        Op::Ctzw => u64::from((a as u32).trailing_zeros()),
        Op::Cpopw => u64::from((a as u32).count_ones()),
        Op::Max => (a as i64).max(b as i64) as u64,
        Op::Maxu => a.max(b),
        Op::Min => (a as i64).min(b as i64) as u64,
        Op::Minu => a.min(b),
        Op::SextB => a as i8 as i64 as u64,
        Op::SextH => a as i16 as i64 as u64,
        Op::ZextH => a & 0xffff,
        Op::Rol => a.rotate_left((b & 63) as u32),
        Op::Ror => a.rotate_right((b & 63) as u32),
        Op::Rolw => sext32(u64::from((a as u32).rotate_left((b & 31) as u32))),
        Op::Rorw => sext32(u64::from((a as u32).rotate_right((b & 31) as u32))),
        Op::Rori => a.rotate_right(sh),
        Op::Roriw => sext32(u64::from((a as u32).rotate_right(sh & 31))),
        Op::OrcB => {
            let mut v = 0u64;
            for i in 0..8 {
                if (a >> (8 * i)) & 0xff != 0 {
                    v |= 0xff << (8 * i);
                }
            }
            v
        }
        Op::Rev8 => a.swap_bytes(),
        // Zbs
        Op::Bclr => a & !(1 << (b & 63)),
        Op::Bclri => a & !(1 << sh),
        Op::Bext => (a >> (b & 63)) & 1,
        Op::Bexti => (a >> sh) & 1,
        Op::Binv => a ^ (1 << (b & 63)),
        Op::Binvi => a ^ (1 << sh),
        Op::Bset => a | (1 << (b & 63)),
        Op::Bseti => a | (1 << sh),
        // Zicond
        Op::CzeroEqz => {
            if b == 0 {
                0
            } else {
                a
            }
        }
        Op::CzeroNez => {
            if b != 0 {
                0
            } else {
                a
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_values_follow_the_specification() {
        let e = |op, a, b| eval(op, a, b, 0).unwrap();
        let i = |op, a, imm| eval(op, a, 0, imm).unwrap();
        assert_eq!(e(Op::Clz, 0, 0), 64);
        assert_eq!(e(Op::Clzw, 0xffff_ffff_0000_0000, 0), 32);
        assert_eq!(e(Op::Ctz, 0, 0), 64);
        assert_eq!(e(Op::Ctzw, 1 << 40, 0), 32);
        assert_eq!(e(Op::Cpopw, u64::MAX, 0), 32);
        assert_eq!(e(Op::Max, u64::MAX, 1), 1); // -1 < 1 signed
        assert_eq!(e(Op::Maxu, u64::MAX, 1), u64::MAX);
        assert_eq!(e(Op::SextB, 0x80, 0), 0xffff_ffff_ffff_ff80);
        assert_eq!(e(Op::SextH, 0x1_7fff, 0), 0x7fff);
        assert_eq!(e(Op::ZextH, u64::MAX, 0), 0xffff);
        assert_eq!(e(Op::AddUw, 0xffff_ffff_8000_0000, 1), 0x8000_0001);
        assert_eq!(e(Op::Sh3addUw, 0xffff_ffff_0000_0001, 8), 16);
        assert_eq!(i(Op::SlliUw, 0xffff_ffff_ffff_ffff, 4), 0xf_ffff_fff0);
        assert_eq!(e(Op::Rolw, 0x8000_0001, 1), 3);
        assert_eq!(e(Op::Rorw, 1, 1), 0xffff_ffff_8000_0000);
        assert_eq!(i(Op::Roriw, 1, 1), 0xffff_ffff_8000_0000);
        assert_eq!(e(Op::Ror, 1, 65), 1 << 63); // shift amount masked to 6 bits
        assert_eq!(e(Op::OrcB, 0x0100_0000_0000_2000, 0), 0xff00_0000_0000_ff00);
        assert_eq!(e(Op::Rev8, 0x0102_0304_0506_0708, 0), 0x0807_0605_0403_0201);
        assert_eq!(e(Op::Bext, 1 << 63, 127), 1);
        assert_eq!(i(Op::Bseti, 0, 63), 1 << 63);
        assert_eq!(e(Op::CzeroEqz, 7, 0), 0);
        assert_eq!(e(Op::CzeroEqz, 7, 1), 7);
        assert_eq!(e(Op::CzeroNez, 7, 0), 7);
        assert_eq!(e(Op::CzeroNez, 7, 2), 0);
        assert_eq!(eval(Op::Add, 1, 2, 0), None);
    }
}
